//! The analysis of one conversation: fed one datagram at a time, fixed size.

use super::dist::Durations;
use super::recent::Recent;
use super::role::{self, Role, Step};
use super::seq::{Arrival, Sequence};
use super::Config;
use crate::datagram::Dialect;
use crate::finding::{Detail, Finding};
use crate::proto::{Direction, Rule};
use crate::session::event::{DatagramEvent, Decoded, LooseFinding};

mod timing;

pub use timing::Stream;

/// Pings awaiting their pong, at most: past it the oldest is forgotten (its pong then counts as
/// unmatched). Enough for pings at 60 Hz through a 4 s round trip, beyond what the proxy's
/// presets add (edge and gprs: 650 ± 100 ms each way); 16 lost pairs under a 500 ms delay.
/// 4 KiB at most, held only while that many are in flight.
pub const PENDING_PINGS: usize = 256;
/// Datagrams still in flight when a peer disconnects: traffic this soon after is not flagged.
pub const DISCONNECT_GRACE_NANOS: i64 = 100_000_000;
/// LevelInit's acknowledgement is only judged once the conversation went on this long after it.
pub const LEVELINIT_JUDGED_AFTER_NANOS: i64 = 1_000_000_000;
/// The snapshot rate is only judged from this many snapshot ticks.
pub const MIN_RATE_TICKS: u64 = 20;
/// CLIENT_ACKNOWLEDGE's messageType for LevelInit (spec-notes A).
const LEVEL_INIT_CODE: u8 = 0x30;
/// Periodic streams tracked per conversation (rt has three component snapshot streams).
pub const MAX_STREAMS: usize = 4;
/// A stream that falls silent for longer than this (and 10 of its periods) before its
/// conversation ends has stopped.
pub const STREAM_STOPPED_NANOS: i64 = 1_000_000_000;

/// Datagrams and bytes (UDP payload) sent one way.
#[derive(Clone, Copy, Debug, Default)]
pub struct Traffic {
    pub datagrams: u64,
    pub bytes: u64,
    /// Byte-identical repeats within the duplicate window.
    pub duplicates: u64,
}

/// Compressed datagrams: payload bytes on the wire and once decompressed.
#[derive(Clone, Copy, Debug, Default)]
pub struct Compression {
    pub datagrams: u64,
    pub wire_bytes: u64,
    pub decompressed_bytes: u64,
}

impl Compression {
    /// Decompressed size over wire size (2.0 means the wire carries half the bytes).
    pub fn ratio(&self) -> Option<f64> {
        (self.wire_bytes > 0).then(|| self.decompressed_bytes as f64 / self.wire_bytes as f64)
    }
}

/// What one datagram did to its conversation's analysis, for reports that follow the session
/// over time (the profile's time buckets).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    /// The datagram was judged: its header passed its integrity check and its message is known.
    pub judged: bool,
    /// A byte-identical repeat of a datagram within the duplicate window.
    pub duplicate: bool,
    /// The round trip its pong closed, in microseconds.
    pub rtt_micros: Option<u32>,
    /// It brought a new snapshot tick (or, for dialects without ticks, a snapshot).
    pub snapshot: bool,
    /// The time since the previous new snapshot tick, in microseconds.
    pub snapshot_gap_micros: Option<u32>,
    /// Sequence numbers or snapshot ticks it showed skipped (estimated losses).
    pub lost: u64,
    /// The time since the previous datagram of its direction (its stream), in nanoseconds.
    pub stream_delta_nanos: Option<i64>,
}

/// When a step was first seen, and how often.
#[derive(Clone, Copy, Debug)]
pub struct StepSeen {
    pub step: Step,
    /// The dialect's message that played it (CLIENT_HELLO, CLIENT_CONNECT, assign_id...).
    pub name: &'static str,
    pub frame: u64,
    pub ts_nanos: i64,
    pub count: u64,
}

/// LevelInit's delivery (001 §9: sent reliably, retried until acknowledged).
#[derive(Clone, Copy, Debug, Default)]
pub struct LevelInit {
    pub sent: u64,
    pub first: Option<(u64, i64)>,
    /// The first CLIENT_ACKNOWLEDGE of messageType 0x30 after a LevelInit: frame and time.
    pub acknowledged: Option<(u64, i64)>,
}

/// How the conversation's handshake went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Accepted,
    Denied,
    /// JOIN_REQUEST without an answer.
    Unanswered,
    /// HELLO but no JOIN_REQUEST.
    NoJoinRequest,
    /// The capture starts after the handshake.
    MidSession,
    /// No handshake message at all.
    None,
}

impl Outcome {
    pub const fn name(self) -> &'static str {
        match self {
            Outcome::Accepted => "accepted",
            Outcome::Denied => "denied",
            Outcome::Unanswered => "unanswered",
            Outcome::NoJoinRequest => "no join request",
            Outcome::MidSession => "mid-session",
            Outcome::None => "none",
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Ping {
    sequence: Option<u32>,
    ts_nanos: i64,
}

/// Who ended the session, and when.
#[derive(Clone, Copy, Debug)]
struct End {
    by: Direction,
    frame: u64,
    ts_nanos: i64,
}

/// Everything analysed about one conversation.
#[derive(Clone, Debug)]
pub struct Session {
    pub id: u32,
    pub dialect: Dialect,
    pub first_frame: u64,
    pub last_frame: u64,
    pub first_ts: i64,
    pub last_ts: i64,
    /// Client to server, server to client, direction unknown.
    pub traffic: [Traffic; 3],
    /// The client's player id, from its first input carrying one.
    pub player_id: Option<u32>,
    /// Inputs whose player id differs from the first one.
    pub player_id_changes: u64,
    steps: [Option<StepSeen>; Step::ALL.len()],
    /// The first datagram seen was HELLO: the whole handshake is in the capture.
    from_start: bool,
    /// Handshake-order kinds already reported (one finding per kind and conversation).
    order_reported: u32,
    /// All client messages share one monotonic header sequence.
    pub client_sequence: Sequence,
    /// Snapshot ticks: SERVER_SNAPSHOT's, and each SNAPSHOT_CHUNK set's once.
    pub snapshot_ticks: Sequence,
    chunk_tick: Option<u32>,
    chunk_indices: u64,
    last_snapshot_tick: Option<u32>,
    first_tick: Option<u32>,
    /// Time between the arrivals of successive snapshot ticks.
    pub snapshot_gaps: Durations,
    streams: [Option<Stream>; MAX_STREAMS],
    first_arrival: Option<(u64, i64)>,
    last_arrival: i64,
    /// The tick of the last new snapshot tick's arrival (none for dialects without ticks).
    last_arrival_tick: Option<u32>,
    pub rtt: Durations,
    /// The pings awaiting their pong, oldest first: it grows with the pings in flight, up to
    /// [`PENDING_PINGS`], so a session that pings and is answered at once holds a few.
    pending: Vec<Ping>,
    pub pings: u64,
    pub pongs: u64,
    pub unmatched_pongs: u64,
    pub level_init: LevelInit,
    pub compression: Compression,
    recent: [Recent; 2],
    /// The time of the last datagram of each stream (client to server, server to client).
    last_in: [Option<i64>; 2],
    ended: Option<End>,
    /// Datagrams after a DISCONNECT (or KICK, BAN, SERVER_DISCONNECT), and those of them flagged:
    /// the ender's own, and the peer's once the grace for datagrams in flight is over.
    pub after_disconnect: u64,
    pub after_disconnect_flagged: u64,
    /// HELLOs after a DISCONNECT: the client came back from the same address.
    pub reconnects: u64,
    /// What the last datagram did.
    pub last: Observed,
}

fn slot(direction: Option<Direction>) -> usize {
    match direction {
        Some(Direction::ClientToServer) => 0,
        Some(Direction::ServerToClient) => 1,
        None => 2,
    }
}

/// One handshake-order check: the kind (for reporting once), and the step that must come first,
/// by the dialect's document: rtype's HELLO … GAME_START (002 §5); rt's CLIENT_CONNECT →
/// SERVER_ACCEPT/REJECT before inputs and snapshots (003); rtnp's assign_id before inputs and
/// snapshots (004 §7.1).
fn prerequisite(dialect: Dialect, role: Role) -> Option<(u32, Step)> {
    let check = |kind: u32, needs| Some((1 << kind, needs));
    if dialect != Dialect::Rtype {
        return match role {
            Role::Step(s @ (Step::JoinAccept | Step::JoinDeny)) if dialect == Dialect::Rt => {
                check(s as u32, Step::Hello)
            }
            Role::Input => check(20, Step::JoinAccept),
            Role::Snapshot => check(21, Step::JoinAccept),
            _ => None,
        };
    }
    match role {
        Role::Step(s @ Step::ServerHello) => check(s as u32, Step::Hello),
        Role::Step(s @ Step::JoinRequest) => check(s as u32, Step::ServerHello),
        Role::Step(s @ (Step::JoinAccept | Step::JoinDeny)) => check(s as u32, Step::JoinRequest),
        Role::Step(
            s
            @ (Step::Ready | Step::AllReady | Step::Countdown | Step::GameStart | Step::LevelInit),
        ) => check(s as u32, Step::JoinAccept),
        Role::Input => check(20, Step::JoinAccept),
        Role::Snapshot => check(21, Step::GameStart),
        Role::SnapshotChunk => check(22, Step::GameStart),
        Role::GameState => check(23, Step::GameStart),
        _ => None,
    }
}

/// Whether a conversation's first datagram is its beginning, by its dialect's document: rtype's
/// and rt's HELLO / CLIENT_CONNECT, rtnp's any client message (004 §7.1: the server assigns an id
/// to whatever a new client sends first).
fn starts_the_session(event: &DatagramEvent<'_>) -> bool {
    match event.dialect {
        Dialect::Rtnp | Dialect::Described(_) => event.direction == Some(Direction::ClientToServer),
        Dialect::Rtype | Dialect::Rt => {
            !event.crc_failed() && Role::of(event) == Role::Step(Step::Hello)
        }
    }
}

impl Session {
    pub(super) fn new(event: &DatagramEvent<'_>) -> Session {
        // rtype's header sequence is a u16; other dialects' are taken as u32.
        let bits = if event.dialect == Dialect::Rtype {
            16
        } else {
            32
        };
        Session {
            id: event.conversation,
            dialect: event.dialect,
            first_frame: event.frame,
            last_frame: event.frame,
            first_ts: event.ts_nanos,
            last_ts: event.ts_nanos,
            traffic: [Traffic::default(); 3],
            player_id: None,
            player_id_changes: 0,
            steps: [None; Step::ALL.len()],
            from_start: starts_the_session(event),
            order_reported: 0,
            client_sequence: Sequence::new(bits),
            snapshot_ticks: Sequence::new(32),
            chunk_tick: None,
            chunk_indices: 0,
            last_snapshot_tick: None,
            first_tick: None,
            snapshot_gaps: Durations::default(),
            streams: [None; MAX_STREAMS],
            first_arrival: None,
            last_arrival: 0,
            last_arrival_tick: None,
            rtt: Durations::default(),
            pending: Vec::new(),
            pings: 0,
            pongs: 0,
            unmatched_pongs: 0,
            level_init: LevelInit::default(),
            compression: Compression::default(),
            recent: [Recent::default(), Recent::default()],
            last_in: [None; 2],
            ended: None,
            after_disconnect: 0,
            after_disconnect_flagged: 0,
            reconnects: 0,
            last: Observed::default(),
        }
    }

    /// Analyses one datagram; [`Session::last`] says what it did.
    pub(super) fn observe<F: FnMut(LooseFinding)>(
        &mut self,
        event: &DatagramEvent<'_>,
        config: &Config,
        emit: &mut F,
    ) {
        self.last = Observed::default();
        let before = self.client_sequence.lost + self.snapshot_ticks.lost;
        self.judge(event, config, emit);
        let after = self.client_sequence.lost + self.snapshot_ticks.lost;
        self.last.lost = after.saturating_sub(before);
    }

    fn judge<F: FnMut(LooseFinding)>(
        &mut self,
        event: &DatagramEvent<'_>,
        config: &Config,
        emit: &mut F,
    ) {
        let (frame, ts) = (event.frame, event.ts_nanos);
        let conversation = self.id;
        let mut report = |rule, detail| {
            emit(LooseFinding {
                frame,
                conversation,
                finding: Finding::new(rule, 0, detail),
            })
        };
        self.last_frame = frame;
        self.last_ts = self.last_ts.max(ts);
        let dir = slot(event.direction);
        // A datagram of unknown direction is in the stream its ports suggest (the lower port is
        // the server's), as the dissector counts it.
        let stream = match dir {
            2 => usize::from(event.src.port() <= event.dst.port()),
            _ => dir,
        };
        self.last.stream_delta_nanos = self.last_in[stream].map(|t| ts.saturating_sub(t));
        self.last_in[stream] = Some(ts);
        self.count(event, dir, &mut report);
        // A header that fails its integrity check says nothing reliable about the session.
        if event.crc_failed() || event.message.is_none() && event.dialect == Dialect::Rtype {
            return;
        }
        self.last.judged = true;
        let role = Role::of(event);
        // rtnp's first client message, whatever it is, opens the session (004 §7.1).
        if self.dialect == Dialect::Rtnp && self.from_start && frame == self.first_frame {
            self.record_step(Step::Hello, event);
        }
        self.after_end(role, event, &mut report);
        if self.from_start {
            self.handshake_order(role, event, &mut report);
        }
        if event.direction == Some(Direction::ClientToServer) {
            if let Some(seq) = event.sequence {
                self.client_sequence.push(seq);
            }
        }
        if matches!(role, Role::Snapshot | Role::Periodic) {
            // Snapshots stall as a stream of ticks (below); other periodic streams on their own.
            let judged = (role == Role::Periodic).then_some(config);
            self.stream(event, judged, &mut report);
        }
        match role {
            Role::Step(step) => self.record_step(step, event),
            Role::Ping => self.ping(event),
            Role::Pong => self.pong(event),
            Role::Input => {
                if let Some(id) = event.facts.player_id {
                    match self.player_id {
                        None => self.player_id = Some(id),
                        Some(first) if first != id => self.player_id_changes += 1,
                        Some(_) => {}
                    }
                }
            }
            Role::Ack => {
                if event.facts.ack_msg_type == Some(LEVEL_INIT_CODE) && self.level_init.sent > 0 {
                    self.level_init.acknowledged.get_or_insert((frame, ts));
                }
            }
            Role::Snapshot => match event.tick.or(event.sequence) {
                Some(tick) => {
                    // A delta snapshot of the tick a full-state chunk set just carried is the same
                    // tick, not a duplicate.
                    if self.chunk_tick != Some(tick) {
                        self.snapshot_tick(tick, event, config, &mut report);
                    }
                    self.last_snapshot_tick = Some(tick);
                }
                // Dialects whose snapshots carry no tick (rtnp without `epoch`): rate and jitter
                // still come from the arrivals.
                None => self.snapshot_arrival(event, None, config, &mut report),
            },
            Role::SnapshotChunk => {
                if let Some(tick) = event.tick {
                    let bit = 1u64 << (event.facts.chunk_index.unwrap_or(0) % 64);
                    if self.chunk_tick != Some(tick) {
                        self.chunk_tick = Some(tick);
                        self.chunk_indices = bit;
                        if self.last_snapshot_tick != Some(tick) {
                            self.snapshot_tick(tick, event, config, &mut report);
                        }
                    } else if self.chunk_indices & bit == 0 {
                        // Another chunk of the set whose tick was counted.
                        self.chunk_indices |= bit;
                    } else {
                        // The same chunk again: a duplicate of its tick.
                        self.snapshot_tick(tick, event, config, &mut report);
                    }
                }
            }
            Role::GameState | Role::Periodic | Role::Other => {}
        }
    }

    /// Counts a datagram's traffic in its direction's slot `dir`, a duplicate of a recent one
    /// (reported), and its compression.
    fn count(
        &mut self,
        event: &DatagramEvent<'_>,
        dir: usize,
        report: &mut impl FnMut(Rule, Detail),
    ) {
        let (frame, ts) = (event.frame, event.ts_nanos);
        let t = &mut self.traffic[dir];
        t.datagrams += 1;
        t.bytes += event.bytes.len() as u64;
        if dir < 2 {
            let window = role::duplicate_window(event);
            if let Some(original) = self.recent[dir].push(event.hash, frame, ts, window) {
                t.duplicates += 1;
                self.last.duplicate = true;
                report(
                    Rule::SessionDuplicateDatagram,
                    Detail::Frames { first: original },
                );
            }
        }
        if event.compressed() {
            if let (Some(Decoded::Rtype(d)), Some(p)) = (event.decoded, event.payload) {
                self.compression.datagrams += 1;
                self.compression.wire_bytes += d.wire_payload.len() as u64;
                self.compression.decompressed_bytes += p.len() as u64;
            }
        }
    }

    /// Reports a message that comes before the step its dialect's handshake puts first, once per
    /// kind and conversation.
    fn handshake_order(
        &mut self,
        role: Role,
        event: &DatagramEvent<'_>,
        report: &mut impl FnMut(Rule, Detail),
    ) {
        if let Some((kind, needs)) = prerequisite(self.dialect, role) {
            if self.steps[needs as usize].is_none() && self.order_reported & kind == 0 {
                self.order_reported |= kind;
                let message = event.message.map_or("this message", |m| m.name);
                let missing = needs.name();
                report(
                    Rule::SessionHandshakeOrder,
                    Detail::Before { missing, message },
                );
            }
        }
    }

    fn record_step(&mut self, step: Step, event: &DatagramEvent<'_>) {
        let seen = &mut self.steps[step as usize];
        match seen {
            Some(s) => s.count += 1,
            None => {
                *seen = Some(StepSeen {
                    step,
                    name: role::static_name(event).unwrap_or(step.name()),
                    frame: event.frame,
                    ts_nanos: event.ts_nanos,
                    count: 1,
                })
            }
        }
        match step {
            Step::LevelInit => {
                self.level_init.sent += 1;
                self.level_init
                    .first
                    .get_or_insert((event.frame, event.ts_nanos));
            }
            Step::Disconnect | Step::ServerEnd if self.ended.is_none() => {
                let by = if step == Step::Disconnect {
                    Direction::ClientToServer
                } else {
                    Direction::ServerToClient
                };
                self.ended = Some(End {
                    by,
                    frame: event.frame,
                    ts_nanos: event.ts_nanos,
                });
            }
            _ => {}
        }
    }

    /// Traffic after the session ended. A new HELLO starts the session again.
    fn after_end(
        &mut self,
        role: Role,
        event: &DatagramEvent<'_>,
        report: &mut impl FnMut(Rule, Detail),
    ) {
        let Some(end) = self.ended else { return };
        match role {
            Role::Step(Step::Hello) => {
                self.ended = None;
                self.reconnects += 1;
            }
            // Repeating the goodbye is not more traffic.
            Role::Step(Step::Disconnect | Step::ServerEnd) => {}
            _ => {
                self.after_disconnect += 1;
                let own = event.direction == Some(end.by);
                if own || event.ts_nanos.saturating_sub(end.ts_nanos) > DISCONNECT_GRACE_NANOS {
                    self.after_disconnect_flagged += 1;
                    report(
                        Rule::SessionAfterDisconnect,
                        Detail::Frames { first: end.frame },
                    );
                }
            }
        }
    }

    fn ping(&mut self, event: &DatagramEvent<'_>) {
        self.pings += 1;
        if self.pending.len() == PENDING_PINGS {
            self.pending.remove(0);
        }
        self.pending.push(Ping {
            sequence: event.sequence,
            ts_nanos: event.ts_nanos,
        });
    }

    /// Pairs a pong with its ping: the one whose sequence it acknowledges (a described header's
    /// `ack`) or echoes (the reference rtype server echoes the ping's sequence and tick in the
    /// header), else the oldest one waiting.
    fn pong(&mut self, event: &DatagramEvent<'_>) {
        self.pongs += 1;
        let waiting = self.pending.iter().copied().enumerate();
        let found = match event.ack.or(event.sequence) {
            Some(seq) => waiting
                .filter(|(_, p)| p.sequence == Some(seq))
                .max_by_key(|(_, p)| p.ts_nanos),
            None => waiting.min_by_key(|(_, p)| p.ts_nanos),
        };
        match found {
            Some((i, ping)) => {
                self.pending.remove(i);
                let rtt = super::dist::micros(event.ts_nanos.saturating_sub(ping.ts_nanos));
                self.rtt.add(rtt);
                self.last.rtt_micros = Some(rtt);
            }
            None => self.unmatched_pongs += 1,
        }
    }

    pub(super) fn finish<F: FnMut(LooseFinding)>(&self, config: &Config, emit: &mut F) {
        let conversation = self.id;
        let mut report = |frame, rule, detail| {
            emit(LooseFinding {
                frame,
                conversation,
                finding: Finding::new(rule, 0, detail),
            })
        };
        if let (Some((frame, ts)), None) = (self.level_init.first, self.level_init.acknowledged) {
            if self.last_ts.saturating_sub(ts) >= LEVELINIT_JUDGED_AFTER_NANOS {
                report(frame, Rule::SessionLevelInitUnacknowledged, Detail::None);
                if self.level_init.sent == 1 {
                    report(frame, Rule::SessionLevelInitNotRetried, Detail::None);
                }
            }
        }
        let streams: Vec<&Stream> = self.streams.iter().flatten().collect();
        if streams.len() > 1 {
            // Several streams (rt's component snapshots): each is judged on its own.
            for s in streams.iter().filter(|s| s.count >= MIN_RATE_TICKS) {
                if let Some(rate) = s.rate_hz().filter(|r| !config.rate_ok(*r)) {
                    let detail = Detail::Rate {
                        stream: s.name,
                        nominal: config.snapshot_hz.round() as u32,
                        found: rate.round() as u32,
                    };
                    report(s.first.0, Rule::SessionSnapshotRate, detail);
                }
            }
        } else if let (Some(rate), Some((frame, _))) = (self.snapshot_rate_hz(), self.first_arrival)
        {
            if self.rate_judged() && !config.rate_ok(rate) {
                let detail = Detail::Sizes {
                    expected: config.snapshot_hz.round() as u64,
                    found: rate.round() as u64,
                };
                report(frame, Rule::SessionSnapshotRate, detail);
            }
        }
        let end = self.play_end();
        for s in &streams {
            if let Some(silent) = s.stopped_before(end) {
                let detail = Detail::Stopped {
                    stream: s.name,
                    before_ms: (silent / 1_000_000) as u64,
                };
                report(s.last.0, Rule::SessionStreamStopped, detail);
            }
        }
    }

    /// Until when the game runs, for streams that stop while it goes on: the conversation's last
    /// datagram, its goodbye, or GAME_END, after which snapshots stop by design.
    pub fn play_end(&self) -> i64 {
        [
            self.ended.map(|e| e.ts_nanos),
            self.steps[Step::GameEnd as usize].map(|s| s.ts_nanos),
        ]
        .into_iter()
        .flatten()
        .fold(self.last_ts, i64::min)
    }

    /// The periodic streams, in the order they started.
    pub fn streams(&self) -> impl Iterator<Item = &Stream> {
        self.streams.iter().flatten()
    }

    // Read by the reports.

    /// Steps seen, in the order they were first seen.
    pub fn steps(&self) -> Vec<StepSeen> {
        let mut v: Vec<StepSeen> = self.steps.iter().flatten().copied().collect();
        v.sort_by_key(|s| (s.frame, s.step as u8));
        v
    }

    pub fn step(&self, step: Step) -> Option<StepSeen> {
        self.steps[step as usize]
    }

    pub fn outcome(&self) -> Outcome {
        let seen = |s: Step| self.steps[s as usize].is_some();
        if seen(Step::JoinAccept) {
            Outcome::Accepted
        } else if seen(Step::JoinDeny) {
            Outcome::Denied
        } else if seen(Step::JoinRequest) {
            Outcome::Unanswered
        } else if seen(Step::Hello) {
            Outcome::NoJoinRequest
        } else if self.traffic.iter().any(|t| t.datagrams > 0)
            && self.pings + self.snapshot_ticks.received > 0
        {
            Outcome::MidSession
        } else {
            Outcome::None
        }
    }

    /// Whether the handshake order was judged (the capture holds the conversation's HELLO).
    pub fn from_start(&self) -> bool {
        self.from_start
    }

    /// Distinct snapshot ticks that arrived.
    pub fn snapshot_tick_count(&self) -> u64 {
        self.first_arrival
            .map_or(0, |_| self.snapshot_gaps.count() + 1)
    }

    /// Snapshot ticks arriving per second.
    pub fn snapshot_rate_hz(&self) -> Option<f64> {
        let (_, first) = self.first_arrival?;
        let seconds = (self.last_arrival - first) as f64 / 1e9;
        (seconds > 0.0).then(|| self.snapshot_gaps.count() as f64 / seconds)
    }

    /// The server's tick advancing per second, over the same span (no resets).
    pub fn tick_rate_hz(&self) -> Option<f64> {
        let (_, first) = self.first_arrival?;
        let seconds = (self.last_arrival - first) as f64 / 1e9;
        let ticks = self
            .snapshot_ticks
            .highest()?
            .checked_sub(self.first_tick?)?;
        (seconds > 0.0 && self.snapshot_ticks.resets == 0).then(|| f64::from(ticks) / seconds)
    }

    /// Enough snapshot ticks to judge the rate.
    pub fn rate_judged(&self) -> bool {
        self.snapshot_tick_count() >= MIN_RATE_TICKS
    }

    /// Pings that got no pong (in the capture).
    pub fn unanswered_pings(&self) -> u64 {
        self.pings.saturating_sub(self.rtt.count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pings awaiting their pong hold 4 KiB at most (SECURITY.md); the behaviour at the
    /// bound is in `analysis::tests`.
    #[test]
    fn the_pending_pings_hold_4_kib_at_most() {
        assert_eq!(std::mem::size_of::<Ping>() * PENDING_PINGS, 4096);
    }
}
