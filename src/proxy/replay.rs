//! `replay`: re-sends the client side of a recorded session to a live server with the original
//! timing (scaled by `--speed`), each client of the capture from a socket of its own, and reports
//! what the server answered as the summary of a capture: the exchange is recorded (`-w`, or a
//! temporary file) and read back by the pipeline like any capture.
//!
//! With `--side server` it stands in for the capture's server instead: it listens, and once a
//! live client has sent to it, sends that client what the capture's server sent its first client
//! (the second live client to send gets what the second captured client got, and so on), with the
//! original timing from the first live client's datagram.
//!
//! Datagrams are sent as captured: no field changes, so no CRC is recomputed. The capture is
//! decoded on a thread of its own and handed over through a bounded channel, so memory does not
//! grow with the capture; clients (sockets) are bounded by [`MAX_CLIENTS`].

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::ready::Ready;
use super::record::{Record, Side as Interface};
use super::relay::route_to;
use crate::app::{read_capture, write_stdout, Format, ReadOpts, Term};
use crate::message::NoFields;
use crate::pipeline::{RunEnd, Sink};
use crate::proto::schema::Direction;
use crate::session::event::{DatagramEvent, LooseFinding};
use crate::tally::summary::Summary;

/// Clients a replay stands for at most (client side: sockets; server side: the captured clients
/// and the live ones); datagrams of further clients are skipped.
pub const MAX_CLIENTS: usize = 4096;
/// Datagrams decoded ahead of the one being sent.
const AHEAD: usize = 1024;
/// How long before a datagram's time the sender stops sleeping and spins.
const SPIN: Duration = Duration::from_micros(200);

/// Arguments of `rtype-inspect replay`.
#[derive(clap::Args)]
#[command(mut_arg("threads", |a| a.hide(true)))]
pub struct ReplayArgs {
    /// The capture to replay.
    file: PathBuf,
    /// The live server's address (the client side).
    #[arg(long, value_name = "ADDR", required_unless_present = "listen")]
    to: Option<SocketAddr>,
    /// The address the live clients send to (the server side).
    #[arg(long, value_name = "ADDR", conflicts_with = "to")]
    listen: Option<SocketAddr>,
    /// Only this conversation (as `stats` numbers them).
    #[arg(long, value_name = "N")]
    conversation: Option<u32>,
    /// The side replayed: the clients' datagrams to a live server (--to), or the server's to
    /// live clients (--listen).
    #[arg(long, value_enum, default_value = "client")]
    side: Side,
    /// Time scale: 2 sends twice as fast, 0.5 at half speed.
    #[arg(long, default_value_t = 1.0, value_parser = speed)]
    speed: f64,
    /// How long to wait for answers after the last datagram, in seconds.
    #[arg(long, value_name = "SECS", default_value = "1", value_parser = crate::report::live::seconds)]
    linger: Duration,
    /// Write the exchange (what was sent, what the server answered) to this pcapng.
    #[arg(short = 'w', long = "write", value_name = "FILE")]
    write: Option<PathBuf>,
    /// Output form of the report on the answers: text, or json (the summary's document).
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    #[command(flatten)]
    read: ReadOpts,
}

/// Which side of the capture is replayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Side {
    Client,
    Server,
}

/// How long the server side waits for a live client's first datagram.
const FIRST_CLIENT_WAIT: Duration = Duration::from_secs(60);

fn speed(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && (0.001..=1000.0).contains(&s) => Ok(s),
        _ => Err(format!("`{text}` is not a speed from 0.001 to 1000")),
    }
}

/// A datagram to send: when it was captured, the captured client that sent or received it, its
/// bytes, its frame.
struct Outgoing {
    ts_nanos: i64,
    client: SocketAddr,
    bytes: Vec<u8>,
    frame: u64,
}

/// The sink that hands the client datagrams over to the sending thread.
struct Collect {
    fields: NoFields,
    tx: mpsc::SyncSender<Outgoing>,
    /// The direction replayed.
    direction: Direction,
    conversation: Option<u32>,
    closed: bool,
}

impl Sink for Collect {
    type Fields = NoFields;
    fn fields(&mut self) -> &mut NoFields {
        &mut self.fields
    }
    fn datagram(&mut self, e: &DatagramEvent<'_>) {
        if e.direction != Some(self.direction)
            || self.conversation.is_some_and(|c| c != e.conversation)
        {
            return;
        }
        let out = Outgoing {
            ts_nanos: e.ts_nanos,
            client: match self.direction {
                Direction::ClientToServer => e.src,
                Direction::ServerToClient => e.dst,
            },
            bytes: e.bytes.to_vec(),
            frame: e.frame,
        };
        self.closed |= self.tx.send(out).is_err();
    }
    fn loose(&mut self, _: &LooseFinding) {}
    fn end(&mut self, _: &RunEnd<'_>) {}
    fn done(&self) -> bool {
        self.closed
    }
}

/// The sockets standing in for the capture's clients (or its server), and the record of the
/// exchange.
struct Replayer {
    side: Side,
    /// The live server (client side).
    to: Option<SocketAddr>,
    bind: IpAddr,
    /// A socket per captured client (client side), or the one listening (server side).
    sockets: Vec<(UdpSocket, SocketAddr)>,
    /// Which sockets have answers waiting (a socket's token is its index).
    ready: Ready,
    /// Each captured client's socket (client side), or its live client in `live` (server side).
    by_client: HashMap<SocketAddr, usize>,
    /// The live clients, in the order they first sent (server side).
    live: Vec<SocketAddr>,
    record: Record,
    buf: Vec<u8>,
    sent: u64,
    answers: u64,
    skipped: u64,
}

impl Replayer {
    /// The interface of the record where this replay's sockets are.
    fn interface(&self) -> Interface {
        match self.side {
            Side::Client => Interface::Server,
            Side::Server => Interface::Client,
        }
    }

    /// Where a datagram of captured client `client` goes: the socket that sends it and the live
    /// address; `None` when no socket or live client stands for it.
    fn route(&mut self, client: SocketAddr) -> Result<Option<(usize, SocketAddr)>, String> {
        match (self.side, self.to) {
            (Side::Client, Some(to)) => Ok(self.socket(client)?.map(|i| (i, to))),
            _ => {
                let j = match self.by_client.get(&client) {
                    Some(&j) => j,
                    None if self.by_client.len() >= MAX_CLIENTS => return Ok(None),
                    None => {
                        let j = self.by_client.len();
                        self.by_client.insert(client, j);
                        j
                    }
                };
                Ok(self.live.get(j).map(|&live| (0, live)))
            }
        }
    }

    fn socket(&mut self, client: SocketAddr) -> Result<Option<usize>, String> {
        if let Some(&i) = self.by_client.get(&client) {
            return Ok(Some(i));
        }
        if self.sockets.len() >= MAX_CLIENTS {
            return Ok(None);
        }
        let socket = UdpSocket::bind(SocketAddr::new(self.bind, 0))
            .and_then(|s| s.set_nonblocking(true).map(|_| s))
            .map_err(|e| format!("replay: {e}"))?;
        let local = socket.local_addr().map_err(|e| e.to_string())?;
        self.ready
            .add(socket.as_raw_fd())
            .map_err(|e| format!("replay: {e}"))?;
        self.sockets.push((socket, local));
        self.by_client.insert(client, self.sockets.len() - 1);
        Ok(Some(self.sockets.len() - 1))
    }

    /// Reads the answers waiting on every socket into the record (server side: the live
    /// clients' datagrams, each new client taking the next captured one's place).
    fn answers(&mut self) -> Result<(), String> {
        let interface = self.interface();
        for (socket, local) in &self.sockets {
            while let Ok((n, from)) = socket.recv_from(&mut self.buf) {
                self.answers += 1;
                let new = self.side == Side::Server && !self.live.contains(&from);
                if new && self.live.len() < MAX_CLIENTS {
                    self.live.push(from);
                }
                self.record
                    .frame(interface, epoch_ns(), from, *local, &self.buf[..n], "")
                    .map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }

    /// Waits for the first live client's datagram (server side), at most [`FIRST_CLIENT_WAIT`].
    fn wait_for_client(&mut self) -> Result<(), String> {
        let until = Instant::now() + FIRST_CLIENT_WAIT;
        while self.live.is_empty() {
            if Instant::now() >= until {
                return Err(format!(
                    "replay: no client sent to {} within {} s",
                    self.sockets[0].1,
                    FIRST_CLIENT_WAIT.as_secs()
                ));
            }
            self.wait_until(Instant::now() + Duration::from_millis(50))?;
        }
        Ok(())
    }

    /// Waits until `due`, reading answers meanwhile; the last stretch sleeps finely, then spins
    /// for [`SPIN`]. (Spinning longer does not help on a busy machine: a thread that runs long
    /// is preempted for whole time slices, worse than the wake-up latency of one that sleeps.)
    fn wait_until(&mut self, due: Instant) -> Result<(), String> {
        loop {
            let now = Instant::now();
            if now >= due {
                return Ok(());
            }
            let left = due - now;
            if left > SPIN + Duration::from_millis(2) {
                let ms = ((left - SPIN).as_millis() as u64 - 1).min(200) as libc::c_int;
                self.ready.wait(ms).map_err(|e| format!("replay: {e}"))?;
                self.answers()?;
            } else if left > SPIN {
                std::thread::sleep(left - SPIN);
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

fn epoch_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The server side's socket, listening on `listen`.
fn listening(listen: SocketAddr) -> Result<(UdpSocket, SocketAddr), String> {
    let socket = UdpSocket::bind(listen)
        .and_then(|s| s.set_nonblocking(true).map(|_| s))
        .map_err(|e| format!("--listen {listen}: {e}"))?;
    let local = socket.local_addr().map_err(|e| e.to_string())?;
    Ok((socket, local))
}

pub fn run(args: ReplayArgs, term: Term) -> Result<ExitCode, String> {
    let reading = args.read.reading()?.for_file(&args.file)?;
    let temp = std::env::temp_dir().join(format!("rtype-replay-{}.pcapng", std::process::id()));
    let path = args.write.clone().unwrap_or_else(|| temp.clone());
    let mut ready = Ready::new().map_err(|e| format!("replay: {e}"))?;
    let (sockets, bind) = match (args.side, args.to, args.listen) {
        (Side::Client, Some(to), None) => (Vec::new(), route_to(to)?),
        (Side::Server, None, Some(listen)) => {
            let (socket, local) = listening(listen)?;
            ready
                .add(socket.as_raw_fd())
                .map_err(|e| format!("replay: {e}"))?;
            eprintln!("rtype-inspect replay: listening on {local}");
            (vec![(socket, local)], local.ip())
        }
        (Side::Client, ..) => {
            return Err("replay --side client sends to a server: give --to ADDR".into())
        }
        (Side::Server, ..) => {
            return Err("replay --side server waits for clients: give --listen ADDR".into())
        }
    };
    let mut replayer = Replayer {
        side: args.side,
        to: args.to,
        bind,
        sockets,
        ready,
        by_client: HashMap::new(),
        live: Vec::new(),
        record: Record::create(&path)?,
        buf: vec![0; 65_535],
        sent: 0,
        answers: 0,
        skipped: 0,
    };
    let (tx, rx) = mpsc::sync_channel(AHEAD);
    let file = args.file.clone();
    let conversation = args.conversation;
    let direction = match args.side {
        Side::Client => Direction::ClientToServer,
        Side::Server => Direction::ServerToClient,
    };
    let decoder = std::thread::spawn(move || {
        let mut sink = Collect {
            fields: NoFields,
            tx,
            direction,
            conversation,
            closed: false,
        };
        read_capture(&file, &reading, &mut sink)
    });
    if args.side == Side::Server {
        replayer.wait_for_client()?;
    }
    // The clock starts with the first datagram: (when it was sent, its capture time).
    let mut clock = None;
    let mut comment = String::new();
    for out in rx {
        let (start, first) = *clock.get_or_insert((Instant::now(), out.ts_nanos));
        let offset = (out.ts_nanos.saturating_sub(first).max(0) as f64 / args.speed) as u64;
        replayer.wait_until(start + Duration::from_nanos(offset))?;
        let Some((i, to)) = replayer.route(out.client)? else {
            replayer.skipped += 1;
            continue;
        };
        let (socket, local) = &replayer.sockets[i];
        if socket.send_to(&out.bytes, to).is_err() {
            replayer.skipped += 1;
            continue;
        }
        let local = *local;
        replayer.sent += 1;
        comment.clear();
        use std::fmt::Write as _;
        let _ = match args.side {
            Side::Client => write!(comment, "replay: frame {} from {}", out.frame, out.client),
            Side::Server => write!(comment, "replay: frame {} to {}", out.frame, out.client),
        };
        let interface = replayer.interface();
        replayer
            .record
            .frame(interface, epoch_ns(), local, to, &out.bytes, &comment)
            .map_err(|e| e.to_string())?;
        replayer.answers()?;
    }
    decoder
        .join()
        .map_err(|_| "replay: the decoding thread failed".to_string())??;
    replayer.wait_until(Instant::now() + args.linger)?;
    replayer.answers()?;
    let from = match args.side {
        Side::Client => format!("from {} client socket(s)", replayer.sockets.len()),
        Side::Server => format!("to {} live client(s)", replayer.live.len()),
    };
    eprintln!(
        "rtype-inspect replay: {} datagrams sent {from}, {} answers{}",
        replayer.sent,
        replayer.answers,
        if replayer.skipped > 0 {
            format!(", {} not sent", replayer.skipped)
        } else {
            String::new()
        }
    );
    replayer.record.commit()?;
    let mut reading = args.read.reading()?;
    reading.quiet = true;
    let mut summary = Summary::default();
    let read = read_capture(&path, &reading.for_file(&path)?, &mut summary);
    if args.write.is_none() {
        let _ = std::fs::remove_file(&temp);
    }
    read?;
    let shown = path.display().to_string();
    match args.format {
        Format::Json => {
            let text =
                serde_json::to_string_pretty(&summary.document(&shown)).unwrap_or_default() + "\n";
            write_stdout(text.as_bytes())
        }
        Format::Text => write_stdout(summary.text(&shown, term).as_bytes()),
    }
}
