//! The relay: one listening socket for the clients, one upstream socket per client (so the
//! server sees distinct clients, and whatever arrives on a client's upstream socket is that
//! client's, whichever server socket it came from), a delay queue, and a loop that waits for
//! the sockets or the next delivery.
//!
//! Bounds: at most `max_clients` clients (datagrams from more addresses are dropped and counted),
//! and at most `queue_bytes` waiting per client and direction, counting each datagram's buffer
//! and [`ENTRY_BYTES`] (past that a datagram is dropped as `queue full`: a flood from one address
//! fills only its own queue). Buffers of delivered datagrams are kept for reuse (at most
//! [`POOLED`] of [`POOLED_CAPACITY`] bytes): steady traffic allocates nothing.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fmt::Write as _;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::decode::Ends;
use super::impair::{Cause, Fate, Impairer, Ms, Settings};
use super::prng::SplitMix64;
use super::ready::Ready;
use super::record::Side;
use super::select::{Dir, Selector};
use super::tap::Tap;

/// The largest UDP payload.
const MAX_DATAGRAM: usize = 65_535;
/// Datagrams read from one socket before the others get their turn.
const BURST: usize = 64;
/// What a waiting datagram costs beyond its buffer: its slot, its heap entry, allocator slack.
const ENTRY_BYTES: usize = 64;
/// Buffers kept for reuse: at most this many, of at most [`POOLED_CAPACITY`] bytes each.
const POOLED: usize = 4096;
const POOLED_CAPACITY: usize = 2048;

/// What one direction of one client went through.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    pub received: u64,
    pub delivered: u64,
    pub duplicated: u64,
    pub reordered: u64,
    /// Dropped, by [`Cause`] (in its order).
    pub dropped: [u64; 5],
    /// Sum of the delays of the delivered datagrams (ns), for the mean.
    pub delay_ns: u128,
}

impl Counts {
    pub fn dropped_total(&self) -> u64 {
        self.dropped.iter().sum()
    }
}

pub struct Client {
    pub addr: SocketAddr,
    socket: UdpSocket,
    local: SocketAddr,
    impair: [Impairer; 2],
    /// Its settings, client to server first.
    pub settings: [Settings; 2],
    queued: [usize; 2],
    pub counts: [Counts; 2],
}

/// A datagram waiting in the delay queue.
struct Waiting {
    client: usize,
    dir: Dir,
    data: Vec<u8>,
    received_ns: u64,
    copy: bool,
}

/// The relay's configuration.
pub struct Config {
    /// Everyone's settings, client to server first.
    pub settings: [Settings; 2],
    /// The settings of clients by their order of arrival (`--client`); the last given wins.
    pub per_client: Vec<(usize, [Settings; 2])>,
    pub seed: u64,
    pub max_clients: usize,
    pub queue_bytes: usize,
}

pub struct Relay {
    listen: UdpSocket,
    listen_addr: SocketAddr,
    server: SocketAddr,
    upstream_ip: IpAddr,
    config: Config,
    pub clients: Vec<Client>,
    by_addr: HashMap<SocketAddr, usize>,
    queue: BinaryHeap<Reverse<(u64, u64, usize)>>,
    slots: Vec<Option<Waiting>>,
    free_slots: Vec<usize>,
    pool: Vec<Vec<u8>>,
    order: u64,
    buf: Vec<u8>,
    /// What the step waits on: the listening socket (token 0), then each client's upstream
    /// socket (token 1 + its index).
    ready: Ready,
    pub selector: Selector,
    /// Where what the proxy saw goes: the decoding, the record.
    pub tap: Tap,
    start: Instant,
    epoch_ns: u64,
    /// Datagrams from addresses past `max_clients`.
    pub refused: u64,
    /// Errors sending (the server or a client gone): counted, the relay goes on.
    pub send_errors: u64,
}

impl Relay {
    pub fn new(listen: SocketAddr, server: SocketAddr, config: Config) -> Result<Relay, String> {
        let socket = UdpSocket::bind(listen).map_err(|e| format!("--listen {listen}: {e}"))?;
        socket.set_nonblocking(true).map_err(|e| e.to_string())?;
        let listen_addr = socket.local_addr().map_err(|e| e.to_string())?;
        let mut ready = Ready::new().map_err(|e| e.to_string())?;
        ready.add(socket.as_raw_fd()).map_err(|e| e.to_string())?;
        Ok(Relay {
            listen: socket,
            listen_addr,
            server,
            upstream_ip: route_to(server)?,
            config,
            clients: Vec::new(),
            by_addr: HashMap::new(),
            queue: BinaryHeap::new(),
            slots: Vec::new(),
            free_slots: Vec::new(),
            pool: Vec::new(),
            order: 0,
            buf: vec![0; MAX_DATAGRAM],
            ready,
            selector: Selector::new(
                super::select::Directions::Both,
                None,
                crate::proto::profile::Profile::document(),
                Vec::new(),
            ),
            tap: Tap::default(),
            start: Instant::now(),
            epoch_ns: now_epoch_ns(),
            refused: 0,
            send_errors: 0,
        })
    }

    pub fn listen_addr(&self) -> SocketAddr {
        self.listen_addr
    }

    /// Nanoseconds since the relay started.
    pub fn elapsed_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Now on the record's clock: nanoseconds since the epoch, as the frames are stamped.
    pub fn now_ns(&self) -> u64 {
        self.epoch_ns + self.elapsed_ns()
    }

    /// Where each client's conversations are, in the record and its decoding.
    pub fn ends(&self) -> Vec<Ends> {
        self.clients.iter().map(|c| self.ends_of(c)).collect()
    }

    pub fn ends_of(&self, c: &Client) -> Ends {
        Ends {
            client_side: (c.addr, self.listen_addr),
            server_side: (c.local, self.server),
        }
    }

    /// Datagrams waiting in the delay queue.
    pub fn waiting(&self) -> usize {
        self.queue.len()
    }

    /// Waits for traffic or the next delivery, at most `limit`; relays what came and delivers
    /// what is due. Returns the datagrams received.
    pub fn step(&mut self, limit: Duration) -> io::Result<u64> {
        let now = self.elapsed_ns();
        let mut wait = limit.as_nanos() as u64;
        if let Some(Reverse((due, _, _))) = self.queue.peek() {
            wait = wait.min(due.saturating_sub(now));
        }
        // Round up to the next millisecond: the wait would end early and spin otherwise.
        let ms = wait.div_ceil(1_000_000).min(i32::MAX as u64) as libc::c_int;
        let mut received = 0;
        for i in 0..self.ready.wait(ms)? {
            received += match self.ready.token(i) {
                0 => self.read_clients(),
                token => self.read_server(token - 1),
            };
        }
        self.deliver_due();
        Ok(received)
    }

    /// Reads what the clients sent to the listening socket.
    fn read_clients(&mut self) -> u64 {
        let mut n = 0;
        for _ in 0..BURST {
            let (len, from) = match self.listen.recv_from(&mut self.buf) {
                Ok(got) => got,
                Err(_) => break,
            };
            n += 1;
            let Some(client) = self.client(from) else {
                self.refused += 1;
                continue;
            };
            let to = self.server;
            self.arrive(client, Dir::Up, from, to, len);
        }
        n
    }

    /// Reads what the server sent to one client's upstream socket.
    fn read_server(&mut self, client: usize) -> u64 {
        let mut n = 0;
        for _ in 0..BURST {
            let (len, from) = match self.clients[client].socket.recv_from(&mut self.buf) {
                Ok(got) => got,
                Err(_) => break,
            };
            n += 1;
            let to = self.clients[client].local;
            self.arrive(client, Dir::Down, from, to, len);
        }
        n
    }

    /// The client of address `from`, made on its first datagram.
    fn client(&mut self, from: SocketAddr) -> Option<usize> {
        if let Some(&i) = self.by_addr.get(&from) {
            return Some(i);
        }
        if self.clients.len() >= self.config.max_clients {
            return None;
        }
        let socket = UdpSocket::bind(SocketAddr::new(self.upstream_ip, 0)).ok()?;
        socket.set_nonblocking(true).ok()?;
        let local = socket.local_addr().ok()?;
        // Its token is 1 + its index: added last, once nothing else can fail.
        self.ready.add(socket.as_raw_fd()).ok()?;
        let i = self.clients.len();
        let stream = |dir: u64| Impairer::new(SplitMix64::stream(self.config.seed, i as u64, dir));
        self.clients.push(Client {
            addr: from,
            socket,
            local,
            impair: [stream(0), stream(1)],
            settings: self
                .config
                .per_client
                .iter()
                .rev()
                .find(|(n, _)| *n == i)
                .map_or_else(|| self.config.settings.clone(), |(_, s)| s.clone()),
            queued: [0, 0],
            counts: [Counts::default(), Counts::default()],
        });
        self.by_addr.insert(from, i);
        Some(i)
    }

    /// A datagram of `len` bytes (in the receive buffer) came from `from` to `to`: decide its
    /// fate, record it, queue it.
    fn arrive(&mut self, client: usize, dir: Dir, from: SocketAddr, to: SocketAddr, len: usize) {
        let now = self.elapsed_ns();
        let ts = self.epoch_ns + now;
        let c = &self.clients[client];
        let data = &self.buf[..len];
        let selected = self.selector.selects(dir, c.addr, self.server, ts, data);
        let fate = if !selected {
            Fate::Delivered {
                delay_ns: 0,
                duplicate_ns: None,
                reordered: false,
            }
        } else if self.selector.scheduled_drop(now) {
            Fate::Dropped(Cause::Schedule)
        } else {
            let c = &mut self.clients[client];
            c.impair[dir as usize].decide(&c.settings[dir as usize], now, len)
        };
        let c = &mut self.clients[client];
        let fate = match fate {
            Fate::Delivered { duplicate_ns, .. }
                if c.queued[dir as usize]
                    + (len + ENTRY_BYTES) * (1 + duplicate_ns.is_some() as usize)
                    > self.config.queue_bytes =>
            {
                Fate::Dropped(Cause::Queue)
            }
            f => f,
        };
        let counts = &mut c.counts[dir as usize];
        counts.received += 1;
        let side = match dir {
            Dir::Up => Side::Client,
            Dir::Down => Side::Server,
        };
        let comment = |s: &mut String| match selected {
            false => s.write_str("proxy: passed (not selected)"),
            true => write!(s, "{fate}"),
        };
        if self.tap.seen(side, ts, (from, to), data, comment).is_err() {
            self.send_errors += 1;
        }
        match fate {
            Fate::Dropped(cause) => counts.dropped[cause as usize] += 1,
            Fate::Delivered {
                delay_ns,
                duplicate_ns,
                reordered,
            } => {
                counts.reordered += reordered as u64;
                self.enqueue(client, dir, len, now, now + delay_ns, false);
                if let Some(d) = duplicate_ns {
                    self.clients[client].counts[dir as usize].duplicated += 1;
                    self.enqueue(client, dir, len, now, now + d, true);
                }
            }
        }
    }

    /// Queues the first `len` bytes of the receive buffer for delivery at `due`.
    fn enqueue(&mut self, client: usize, dir: Dir, len: usize, now: u64, due: u64, copy: bool) {
        let mut data = self.pool.pop().unwrap_or_default();
        data.clear();
        data.extend_from_slice(&self.buf[..len]);
        self.clients[client].queued[dir as usize] += data.capacity() + ENTRY_BYTES;
        let waiting = Waiting {
            client,
            dir,
            data,
            received_ns: now,
            copy,
        };
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.slots[s] = Some(waiting);
                s
            }
            None => {
                self.slots.push(Some(waiting));
                self.slots.len() - 1
            }
        };
        self.order += 1;
        self.queue.push(Reverse((due, self.order, slot)));
    }

    /// Delivers what is still waiting, each at its time, reading nothing more; gives up on what
    /// is due after `deadline`.
    pub fn drain(&mut self, deadline: Instant) {
        while let Some(&Reverse((due, _, _))) = self.queue.peek() {
            let now = self.elapsed_ns();
            let at = self.start + Duration::from_nanos(due);
            if at > deadline {
                break;
            }
            std::thread::sleep(Duration::from_nanos(due.saturating_sub(now)));
            self.deliver_due();
        }
    }

    /// Sends every datagram whose time has come, in order of time (then of arrival).
    fn deliver_due(&mut self) {
        let now = self.elapsed_ns();
        while let Some(&Reverse((due, _, slot))) = self.queue.peek() {
            if due > now {
                break;
            }
            self.queue.pop();
            let Some(w) = self.slots[slot].take() else {
                continue;
            };
            self.free_slots.push(slot);
            self.send(&w, now);
            if self.pool.len() < POOLED && w.data.capacity() <= POOLED_CAPACITY {
                self.pool.push(w.data);
            }
        }
    }

    /// Sends one waiting datagram on, and records its delivery.
    fn send(&mut self, w: &Waiting, now: u64) {
        let c = &mut self.clients[w.client];
        c.queued[w.dir as usize] -= w.data.capacity() + ENTRY_BYTES;
        let (socket, from, to) = match w.dir {
            Dir::Up => (&c.socket, c.local, self.server),
            Dir::Down => (&self.listen, self.listen_addr, c.addr),
        };
        if socket.send_to(&w.data, to).is_err() {
            self.send_errors += 1;
            return;
        }
        let counts = &mut c.counts[w.dir as usize];
        counts.delivered += 1;
        let delay = now - w.received_ns;
        counts.delay_ns += delay as u128;
        let side = match w.dir {
            Dir::Up => Side::Server,
            Dir::Down => Side::Client,
        };
        let what = if w.copy {
            "duplicate delivered"
        } else {
            "delivered"
        };
        let comment = |s: &mut String| write!(s, "proxy: {what} after {}", Ms(delay));
        let ts = self.epoch_ns + now;
        if self
            .tap
            .seen(side, ts, (from, to), &w.data, comment)
            .is_err()
        {
            self.send_errors += 1;
        }
    }
}

/// The local address the system routes to `server` from, for the sockets that send to it (a
/// socket bound to it shows a real address in the record, not 0.0.0.0).
pub(super) fn route_to(server: SocketAddr) -> Result<IpAddr, String> {
    let any: IpAddr = match server {
        SocketAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    let probe = UdpSocket::bind(SocketAddr::new(any, 0))
        .and_then(|s| s.connect(server).map(|_| s))
        .and_then(|s| s.local_addr())
        .map_err(|e| format!("--to {server}: {e}"))?;
    Ok(probe.ip())
}

/// Nanoseconds since the Unix epoch, for the record's timestamps.
fn now_epoch_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}
