//! `replay`: re-sends the client side of a recorded session to a live server with the original
//! timing (scaled by `--speed`), each client of the capture from a socket of its own, and reports
//! what the server answered as the summary of a capture: the exchange is recorded (`-w`, or a
//! temporary file) and read back by the pipeline like any capture.
//!
//! Datagrams are sent as captured: no field changes, so no CRC is recomputed. The capture is
//! decoded on a thread of its own and handed over through a bounded channel, so memory does not
//! grow with the capture; clients (sockets) are bounded by [`MAX_CLIENTS`].

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::record::{Record, Side};
use crate::app::{read_capture, write_stdout, Format, ReadOpts, Term};
use crate::message::NoFields;
use crate::pipeline::{RunEnd, Sink};
use crate::proto::schema::Direction;
use crate::report;
use crate::session::event::{DatagramEvent, LooseFinding};

/// Clients (sockets) a replay opens at most; datagrams of further clients are skipped.
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
    /// The live server's address.
    #[arg(long, value_name = "ADDR")]
    to: SocketAddr,
    /// Only this conversation (as `stats` numbers them).
    #[arg(long, value_name = "N")]
    conversation: Option<u32>,
    /// The side replayed: the clients' datagrams.
    #[arg(long, value_parser = ["client"], default_value = "client")]
    side: String,
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

fn speed(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && (0.001..=1000.0).contains(&s) => Ok(s),
        _ => Err(format!("`{text}` is not a speed from 0.001 to 1000")),
    }
}

/// A client datagram to send: when it was captured, its sender, its bytes, its frame.
struct Outgoing {
    ts_nanos: i64,
    src: SocketAddr,
    bytes: Vec<u8>,
    frame: u64,
}

/// The sink that hands the client datagrams over to the sending thread.
struct Collect {
    fields: NoFields,
    tx: mpsc::SyncSender<Outgoing>,
    conversation: Option<u32>,
    closed: bool,
}

impl Sink for Collect {
    type Fields = NoFields;
    fn fields(&mut self) -> &mut NoFields {
        &mut self.fields
    }
    fn datagram(&mut self, e: &DatagramEvent<'_>) {
        if e.direction != Some(Direction::ClientToServer)
            || self.conversation.is_some_and(|c| c != e.conversation)
        {
            return;
        }
        let out = Outgoing {
            ts_nanos: e.ts_nanos,
            src: e.src,
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

/// The sockets standing in for the capture's clients, and the record of the exchange.
struct Replayer {
    to: SocketAddr,
    bind: IpAddr,
    sockets: Vec<(UdpSocket, SocketAddr)>,
    by_client: HashMap<SocketAddr, usize>,
    record: Record,
    buf: Vec<u8>,
    sent: u64,
    answers: u64,
    skipped: u64,
}

impl Replayer {
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
        self.sockets.push((socket, local));
        self.by_client.insert(client, self.sockets.len() - 1);
        Ok(Some(self.sockets.len() - 1))
    }

    /// Reads the answers waiting on every socket into the record.
    fn answers(&mut self) -> Result<(), String> {
        for (socket, local) in &self.sockets {
            while let Ok((n, from)) = socket.recv_from(&mut self.buf) {
                self.answers += 1;
                self.record
                    .frame(Side::Server, epoch_ns(), from, *local, &self.buf[..n], "")
                    .map_err(|e| e.to_string())?;
            }
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
                let mut fds: Vec<libc::pollfd> = self
                    .sockets
                    .iter()
                    .map(|(s, _)| libc::pollfd {
                        fd: s.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    })
                    .collect();
                let ms = ((left - SPIN).as_millis() as u64 - 1).min(200) as libc::c_int;
                // SAFETY: fds is a valid array of fds.len() pollfd structures.
                unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
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

pub fn run(args: ReplayArgs, term: Term) -> Result<ExitCode, String> {
    let reading = args.read.reading()?.for_file(&args.file)?;
    let temp = std::env::temp_dir().join(format!("rtype-replay-{}.pcapng", std::process::id()));
    let path = args.write.clone().unwrap_or_else(|| temp.clone());
    let bind: IpAddr = match args.to {
        SocketAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    let bind = UdpSocket::bind(SocketAddr::new(bind, 0))
        .and_then(|s| s.connect(args.to).map(|_| s))
        .and_then(|s| s.local_addr())
        .map_err(|e| format!("--to {}: {e}", args.to))?
        .ip();
    let mut replayer = Replayer {
        to: args.to,
        bind,
        sockets: Vec::new(),
        by_client: HashMap::new(),
        record: Record::create(&path)?,
        buf: vec![0; 65_535],
        sent: 0,
        answers: 0,
        skipped: 0,
    };
    let (tx, rx) = mpsc::sync_channel(AHEAD);
    let file = args.file.clone();
    let conversation = args.conversation;
    let decoder = std::thread::spawn(move || {
        let mut sink = Collect {
            fields: NoFields,
            tx,
            conversation,
            closed: false,
        };
        read_capture(&file, &reading, &mut sink)
    });
    // The clock starts with the first datagram: (when it was sent, its capture time).
    let mut clock = None;
    let mut comment = String::new();
    for out in rx {
        let (start, first) = *clock.get_or_insert((Instant::now(), out.ts_nanos));
        let offset = (out.ts_nanos.saturating_sub(first).max(0) as f64 / args.speed) as u64;
        replayer.wait_until(start + Duration::from_nanos(offset))?;
        let Some(i) = replayer.socket(out.src)? else {
            replayer.skipped += 1;
            continue;
        };
        let (socket, local) = &replayer.sockets[i];
        if socket.send_to(&out.bytes, replayer.to).is_err() {
            replayer.skipped += 1;
            continue;
        }
        let local = *local;
        replayer.sent += 1;
        comment.clear();
        use std::fmt::Write as _;
        let _ = write!(comment, "replay: frame {} from {}", out.frame, out.src);
        replayer
            .record
            .frame(
                Side::Server,
                epoch_ns(),
                local,
                replayer.to,
                &out.bytes,
                &comment,
            )
            .map_err(|e| e.to_string())?;
        replayer.answers()?;
    }
    decoder
        .join()
        .map_err(|_| "replay: the decoding thread failed".to_string())??;
    replayer.wait_until(Instant::now() + args.linger)?;
    replayer.answers()?;
    eprintln!(
        "rtype-inspect replay: {} datagrams sent from {} client socket(s), {} answers{}",
        replayer.sent,
        replayer.sockets.len(),
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
    let mut summary = report::summary::Summary::default();
    let read = read_capture(&path, &reading.for_file(&path)?, &mut summary);
    if args.write.is_none() {
        let _ = std::fs::remove_file(&temp);
    }
    read?;
    let shown = path.display().to_string();
    match args.format {
        Format::Json => {
            let mut document = summary.json().clone();
            report::stamp(&mut document, report::summary::SCHEMA);
            document["file"] = shown.into();
            let text = serde_json::to_string_pretty(&document).unwrap_or_default() + "\n";
            write_stdout(text.as_bytes())
        }
        Format::Text => write_stdout(summary.text(&shown, term).as_bytes()),
    }
}
