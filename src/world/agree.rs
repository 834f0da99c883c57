//! Whether the clients of one server agree: two conversations with the same server that hold
//! the same entity at the same server tick with values further apart than their layouts'
//! quantisation disagree. Each pair of conversations reports its first disagreement: the tick,
//! the entity, the field, and each side's value and frame.
//!
//! What is compared is what the snapshots of one tick carried (a tick comes as several messages
//! in rt: transform, health, weapon), quantity by quantity (position, velocity, health): a
//! client's own spawn (rt's `is_playable`) is not the game's state.
//!
//! Only servers with two conversations or more are followed
//! ([`Conversation::shares_server`](crate::session::Conversation::shares_server)), so a capture
//! of one client per server pays a test per datagram. For those, what each entity's last tick
//! carried is kept, per conversation (at most [`MAX_COMPARED`]), for at most [`MAX_FOLLOWED`]
//! entities; past it the table starts over (later comparisons only are made). Buffers are reused
//! from one tick to the next, so steady traffic allocates nothing.
//!
//! `check` judges it too ([`Clients`]): the pipeline walks once more, into a [`Gather`] of its
//! own, the messages of a shared server's conversations that are not byte for byte what another
//! conversation was sent at the tick (the first of each waits for one that differs), and raises
//! `session.clients-disagree` as a session finding at the frame where the second value shows.
//! The `world` command's [`World`](super::World) compares on its own, and keeps both values
//! for its view. The other reports, which read a capture once for speed, do not compare.

use std::net::SocketAddr;

use crate::finding::{Detail, Finding};
use crate::pipeline::Walked;
use crate::proto::schema::{Field, Quantity, Ty};
use crate::proto::Rule;
use crate::session::entities::IdMap;
use crate::session::event::{DatagramEvent, Decoded, EntityEvent, EntityRef, LooseFinding};
use crate::session::Conversations;

use super::gather::Gather;
use super::life::Num;

/// Entities followed at once over all servers shared by several clients: what their last tick
/// carried takes at most 168 bytes per conversation compared, 11 MiB in all.
pub const MAX_FOLLOWED: usize = 4096;
/// Pairs of conversations that disagreed, reported at most.
pub const MAX_REPORTED: usize = 1024;

/// One pair of conversations' first disagreement.
#[derive(Clone, Debug, PartialEq)]
pub struct Disagreement {
    pub server: SocketAddr,
    pub id: u32,
    pub tick: u32,
    pub field: &'static str,
    /// The conversation that held the value first, and the one that held another.
    pub first: Held,
    pub second: Held,
}

/// What one conversation held of the entity at the tick.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Held {
    pub conversation: u32,
    pub frame: u64,
    pub value: f64,
}

/// A quantity's value as a tick's snapshots carried it: its field, value and frame.
type Value = (&'static Field, Num, u64);

/// What one conversation's snapshots carried of an entity at one tick: each quantity once (the
/// last), at its place in [`Quantity::NAMED`].
#[derive(Debug, Default)]
struct Carried {
    conversation: u32,
    values: [Option<Value>; Quantity::NAMED.len()],
}

/// The place of `quantity` in [`Carried::values`] (none for [`Quantity::None`]).
fn place(quantity: Quantity) -> Option<usize> {
    Quantity::NAMED.iter().position(|(q, _)| *q == quantity)
}

/// The snapshots of one tick of an entity of a shared server, by conversation.
#[derive(Debug, Default)]
struct Tick {
    tick: u32,
    /// The conversations' buffers; the first `used` are this tick's.
    seen: Vec<Carried>,
    used: usize,
}

/// Conversations compared per entity and tick, at most.
const MAX_COMPARED: usize = 16;

/// The servers' conversations, and what their entities' snapshots carried at their last tick.
#[derive(Debug, Default)]
pub struct Agreement {
    ticks: IdMap<(SocketAddr, u32), Tick>,
    reported: Vec<(u32, u32)>,
    found: Vec<Disagreement>,
}

impl Agreement {
    /// The values `values` a snapshot of server tick `tick` carried at `frame` for entity `id`
    /// of conversation `conversation` of the shared `server`: compared with what the other
    /// conversations' snapshots of the same tick carried of it. A tick comes as several
    /// messages in some dialects (rt's component snapshots): only what both carried is compared.
    pub fn updated(
        &mut self,
        server: SocketAddr,
        conversation: u32,
        id: u32,
        values: &[(&'static Field, Num)],
        tick: u32,
        frame: u64,
    ) {
        if self.ticks.len() >= MAX_FOLLOWED && !self.ticks.contains_key(&(server, id)) {
            self.ticks.clear();
        }
        let t = self.ticks.entry((server, id)).or_default();
        if t.tick != tick || t.used == 0 {
            t.tick = tick;
            t.used = 0;
        }
        for other in &t.seen[..t.used] {
            if other.conversation == conversation {
                continue;
            }
            let pair = (
                other.conversation.min(conversation),
                other.conversation.max(conversation),
            );
            if self.reported.contains(&pair) || self.found.len() >= MAX_REPORTED {
                continue;
            }
            if let Some((field, (a, at), b)) = differing(&other.values, values) {
                self.reported.push(pair);
                self.found.push(Disagreement {
                    server,
                    id,
                    tick,
                    field,
                    first: Held {
                        conversation: other.conversation,
                        frame: at,
                        value: a,
                    },
                    second: Held {
                        conversation,
                        frame,
                        value: b,
                    },
                });
            }
        }
        let mine = match t.seen[..t.used]
            .iter()
            .position(|c| c.conversation == conversation)
        {
            Some(i) => i,
            None if t.used < MAX_COMPARED => {
                if t.seen.len() == t.used {
                    t.seen.push(Carried::default());
                }
                let c = &mut t.seen[t.used];
                c.conversation = conversation;
                c.values = Default::default();
                t.used += 1;
                t.used - 1
            }
            None => return,
        };
        let carried = &mut t.seen[mine].values;
        for &(field, value) in values {
            if let Some(i) = place(field.quantity) {
                carried[i] = Some((field, value, frame));
            }
        }
    }

    /// The disagreements found, in the order they were.
    pub fn found(&self) -> &[Disagreement] {
        &self.found
    }
}

/// `session.clients-disagree`, for `check` (see the module's documentation).
#[derive(Debug, Default)]
pub struct Clients {
    gather: Gather,
    agreement: Agreement,
    /// The findings of the walk once more, which the datagram's own walk reported already.
    ignored: Vec<Finding>,
    /// The datagram being reported was walked into the comparison.
    walked: bool,
    /// The run compares clients ([`Clients::on`]).
    on: bool,
    /// Per server, the first message of each code its conversations were sent at its last tick.
    sent: IdMap<SocketAddr, SentTick>,
    /// Disagreements found when a message that waited was walked, raised with the datagram.
    pending: Vec<Finding>,
}

/// A message a conversation of a shared server was sent, as the pipeline walked it.
pub struct Sent<'a> {
    pub server: SocketAddr,
    pub conversation: u32,
    pub frame: u64,
    pub tick: u32,
    pub bytes: &'a [u8],
    pub how: Walked,
}

/// The first message of one code a server's conversations were sent at one tick: walked only
/// once another conversation is sent other bytes. Its buffers are kept from tick to tick.
#[derive(Debug)]
struct First {
    conversation: u32,
    frame: u64,
    how: Walked,
    bytes: Vec<u8>,
    entities: Vec<EntityRef>,
    /// Walked into the comparison already.
    walked: bool,
}

/// The first messages of a server's last tick.
#[derive(Debug, Default)]
struct SentTick {
    tick: u32,
    firsts: Vec<First>,
    /// Messages of the tick kept (the rest of `firsts` are buffers to reuse).
    kept: usize,
}

/// Messages of one tick kept per server (rt sends a tick as a few messages), for at most
/// [`MAX_SENT_SERVERS`] servers, of at most [`MAX_SENT_BYTES`] each (a larger one is walked at
/// once): 8 MiB at most, with the entities they name.
const MAX_SENT_PER_TICK: usize = 8;
pub const MAX_SENT_SERVERS: usize = 256;
pub const MAX_SENT_BYTES: usize = 4096;

impl Clients {
    /// Whether the run compares clients.
    pub fn compares(&self) -> bool {
        self.on
    }

    /// Clients compared, or not (`analysis::Config::compare_clients`).
    pub fn on(on: bool) -> Clients {
        Clients {
            on,
            ..Clients::default()
        }
    }

    /// A conversation of a shared server was sent `message`, which names `entities`. The first
    /// message of its code at its tick waits; one with the same bytes carried the same values and
    /// is passed over; one with other bytes is walked (`walk`, into the comparison's visitor),
    /// with the first if it waited, and compared when the datagram is judged. Past
    /// [`MAX_SENT_SERVERS`] servers the table starts over.
    pub fn sent(
        &mut self,
        message: Sent<'_>,
        entities: &[EntityRef],
        mut walk: impl FnMut(&Walked, &[u8], &mut Gather, &mut Vec<Finding>),
    ) {
        let Sent {
            server,
            conversation,
            tick,
            bytes,
            how,
            ..
        } = message;
        let code = how.message.code;
        if bytes.len() <= MAX_SENT_BYTES {
            if self.sent.len() >= MAX_SENT_SERVERS && !self.sent.contains_key(&server) {
                self.sent.clear();
            }
            let sent = self.sent.entry(server).or_default();
            if sent.tick != tick {
                sent.tick = tick;
                sent.kept = 0;
            }
            let kept = &mut sent.firsts[..sent.kept];
            match kept.iter_mut().find(|f| f.how.message.code == code) {
                Some(f) if f.conversation != conversation && f.bytes == bytes => return,
                Some(f) if !f.walked => {
                    f.walked = true;
                    self.gather.clear();
                    self.ignored.clear();
                    walk(&f.how, &f.bytes, &mut self.gather, &mut self.ignored);
                    let (at, pending) =
                        ((server, f.conversation, f.frame, tick), &mut self.pending);
                    compare(&self.gather, &mut self.agreement, at, &f.entities, |f| {
                        pending.push(f)
                    });
                }
                Some(_) => {}
                None if sent.kept < MAX_SENT_PER_TICK => {
                    keep(sent, message, entities);
                    return;
                }
                None => {}
            }
        }
        self.gather.clear();
        self.ignored.clear();
        walk(&how, bytes, &mut self.gather, &mut self.ignored);
        self.walked = true;
    }

    /// Compares what the datagram `e` carried (walked by [`Clients::sent`], or an rtnp
    /// snapshot's JSON) with what the other conversations of its server held at its tick; each
    /// pair of conversations' first disagreement goes to `raise`, at this datagram's frame. A
    /// run that does not compare clients pays a test.
    #[inline]
    pub fn judge(
        &mut self,
        e: &DatagramEvent<'_>,
        conversations: &Conversations,
        raise: impl FnMut(LooseFinding),
    ) {
        if self.on {
            self.judge_compared(e, conversations, raise);
        }
    }

    #[inline(never)]
    fn judge_compared(
        &mut self,
        e: &DatagramEvent<'_>,
        conversations: &Conversations,
        mut raise: impl FnMut(LooseFinding),
    ) {
        let (frame, conversation) = (e.frame, e.conversation);
        let mut raise = |finding| {
            raise(LooseFinding {
                frame,
                conversation,
                finding,
            })
        };
        self.pending.drain(..).for_each(&mut raise);
        let walked = std::mem::take(&mut self.walked);
        let json = match e.decoded {
            Some(Decoded::Rtnp { json, .. }) => json,
            _ => None,
        };
        if !walked && json.is_none() {
            return;
        }
        let shared = conversations
            .get(e.conversation)
            .filter(|c| c.shares_server);
        let (Some(c), Some(tick)) = (shared, e.tick.or(e.sequence)) else {
            return;
        };
        if let Some(json) = json.filter(|_| !e.entities.is_empty()) {
            self.gather.clear();
            self.gather.json_entities(json);
        }
        let at = (c.server, conversation, frame, tick);
        compare(&self.gather, &mut self.agreement, at, e.entities, raise);
    }
}

/// Keeps `message` as the first of its code at its tick.
fn keep(sent: &mut SentTick, message: Sent<'_>, entities: &[EntityRef]) {
    if sent.kept == sent.firsts.len() {
        sent.firsts.push(First {
            conversation: 0,
            frame: 0,
            how: message.how,
            bytes: Vec::new(),
            entities: Vec::new(),
            walked: false,
        });
    }
    let f = &mut sent.firsts[sent.kept];
    (f.conversation, f.frame, f.how, f.walked) =
        (message.conversation, message.frame, message.how, false);
    f.bytes.clear();
    f.bytes.extend_from_slice(message.bytes);
    f.entities.clear();
    f.entities.extend_from_slice(entities);
    sent.kept += 1;
}

/// Compares the updates of `entities` that `gather` holds, which conversation `conversation` of
/// `server` was sent at `frame` for server tick `tick`, with what the others held at that tick;
/// each pair of conversations' first disagreement goes to `raise`.
fn compare(
    gather: &Gather,
    agreement: &mut Agreement,
    (server, conversation, frame, tick): (SocketAddr, u32, u64, u32),
    entities: &[EntityRef],
    mut raise: impl FnMut(Finding),
) {
    for (block, r) in gather.named(entities) {
        if r.event != EntityEvent::Update {
            continue;
        }
        let before = agreement.found.len();
        let values = gather.values_of(block);
        agreement.updated(server, conversation, r.id, values, tick, frame);
        for d in &agreement.found[before..] {
            let detail = Detail::Disagree {
                entity: d.id,
                tick: d.tick,
                field: d.field,
                with: d.first.conversation,
                with_frame: d.first.frame,
            };
            raise(Finding::new(Rule::SessionClientsDisagree, r.at, detail));
        }
    }
}

/// The first quantity (position, velocity, health: the game's state, not what a spawn tells
/// each client of itself) `values` carries that `other` carried too with another value: of one
/// layout, any other value; of two (a build that sends f32 to one client, i16 × 10 to another),
/// further apart than the coarser one's quantum. Its name, the other's value and frame, and
/// this one's value.
fn differing(
    other: &[Option<Value>],
    values: &[(&'static Field, Num)],
) -> Option<(&'static str, (f64, u64), f64)> {
    values.iter().find_map(|&(field, value)| {
        let (theirs, their_value, at) = other[place(field.quantity)?]?;
        let (a, b) = (their_value.as_f64(), value.as_f64());
        let tolerance = match std::ptr::eq(theirs, field) {
            true => 0.0,
            false => quantum(theirs, a).max(quantum(field, b)),
        };
        ((a - b).abs() > tolerance).then_some((field.name, (a, at), b))
    })
}

/// The smallest step `field` tells values near `value` apart by: 1 / its divisor for a fixed
/// point, an f32's precision at that value, none for a whole number.
fn quantum(field: &Field, value: f64) -> f64 {
    match field.ty {
        Ty::F32 => value.abs() * f64::from(f32::EPSILON),
        _ if field.divisor > 1 => 1.0 / f64::from(field.divisor),
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static POS_X: Field = Field::new("pos_x", "Position X", Ty::F32).quantity(Quantity::PosX);
    static POS_X_FIXED: Field = Field {
        divisor: 10,
        ..Field::new("pos_x", "Position X", Ty::I16).quantity(Quantity::PosX)
    };
    static SPRITE: Field = Field::new("is_playable", "Is Playable", Ty::U8);

    fn server() -> SocketAddr {
        "127.0.0.1:50010".parse().unwrap()
    }

    /// Quantities of one layout are compared exactly; of two, within the coarser quantum; other
    /// fields not at all. Each pair of conversations is reported once.
    #[test]
    fn what_two_clients_were_sent_at_one_tick_is_compared() {
        let mut a = Agreement::default();
        let x = |v: f64| [(&POS_X, Num::F(v)), (&SPRITE, Num::U(0))];
        a.updated(server(), 1, 7, &x(10.0), 100, 1);
        a.updated(server(), 2, 7, &[(&SPRITE, Num::U(1))], 100, 2); // not a quantity
        a.updated(server(), 2, 7, &[(&POS_X_FIXED, Num::F(10.04))], 100, 3); // within 0.1
        a.updated(server(), 3, 7, &x(10.0), 101, 4); // another tick
        a.updated(server(), 1, 7, &x(10.0), 101, 5);
        a.updated(server(), 2, 7, &x(10.5), 101, 6); // 2 disagrees with 3 and 1
        a.updated(server(), 3, 7, &x(11.0), 102, 7);
        a.updated(server(), 2, 7, &x(12.0), 102, 8); // reported once per pair
        let found: Vec<_> = a
            .found()
            .iter()
            .map(|d| {
                (
                    d.first.conversation,
                    d.second.conversation,
                    d.tick,
                    d.second.frame,
                )
            })
            .collect();
        assert_eq!(found, [(3, 2, 101, 6), (1, 2, 101, 6)]);
    }

    /// The entities followed, the conversations compared per tick and the pairs reported stay
    /// within their bounds (SECURITY.md).
    #[test]
    fn the_tables_are_bounded() {
        let mut a = Agreement::default();
        for id in 0..=MAX_FOLLOWED as u32 {
            a.updated(server(), 1, id, &[(&POS_X, Num::F(1.0))], 5, 1);
        }
        assert!(a.ticks.len() <= MAX_FOLLOWED, "{}", a.ticks.len());
        for c in 1..=100 {
            a.updated(server(), c, 0, &[(&POS_X, Num::F(f64::from(c)))], 6, 2);
        }
        assert_eq!(a.ticks[&(server(), 0)].seen.len(), MAX_COMPARED);
        for tick in 7..200 {
            for c in 1..=100 {
                a.updated(server(), c, 0, &[(&POS_X, Num::F(f64::from(c)))], tick, 3);
            }
        }
        // Each of the 100 against the 16 compared: past the reported pairs' bound.
        assert_eq!(a.found().len(), MAX_REPORTED);
        assert!(a.reported.len() <= MAX_REPORTED);
    }

    /// Walks `bytes` as message `code` of conversation `conversation` at `tick`, through
    /// [`Clients::sent`]; returns the conversations walked ("the first that waited" first).
    fn send(c: &mut Clients, at: (SocketAddr, u32, u32), code: u8, bytes: &[u8]) -> Vec<u32> {
        let (server, conversation, tick) = at;
        let how = Walked {
            message: crate::proto::rtype::message(code).unwrap(),
            variant: None,
            base: 0,
            endian: crate::proto::schema::Endian::Little,
            layout: crate::session::SnapshotLayout::default(),
            rules: &crate::datagram::rtype::MESSAGE_RULES,
        };
        let message = Sent {
            server,
            conversation,
            frame: u64::from(conversation),
            tick,
            bytes,
            how,
        };
        let mut walked = Vec::new();
        let entity = EntityRef {
            id: 1,
            event: EntityEvent::Update,
            type_id: None,
            at: 0,
        };
        c.sent(message, &[entity], |_, b, _, _| walked.push(b[0].into()));
        walked
    }

    /// The first conversation's message waits; one sent the same bytes is passed over; one sent
    /// other bytes is walked, after the first; another tick, code or server starts again, and a
    /// message too large is walked at once.
    #[test]
    fn a_message_waits_for_one_that_differs() {
        let mut c = Clients::on(true);
        let other: SocketAddr = "127.0.0.1:50011".parse().unwrap();
        // The bytes' first byte names the conversation (what the walk records).
        assert_eq!(send(&mut c, (server(), 1, 100), 0x14, &[1, 0]), [0u32; 0]);
        assert_eq!(send(&mut c, (server(), 2, 100), 0x14, &[1, 0]), [0u32; 0]);
        assert_eq!(send(&mut c, (server(), 3, 100), 0x14, &[3, 9]), [1, 3]);
        assert_eq!(send(&mut c, (server(), 4, 100), 0x14, &[4, 9]), [4]);
        assert_eq!(send(&mut c, (server(), 1, 100), 0x14, &[1, 0]), [1]);
        assert_eq!(send(&mut c, (server(), 2, 100), 0x21, &[1, 0]), [0u32; 0]);
        assert_eq!(send(&mut c, (other, 2, 100), 0x14, &[1, 0]), [0u32; 0]);
        assert_eq!(send(&mut c, (server(), 2, 101), 0x14, &[1, 0]), [0u32; 0]);
        let mut big = vec![5; MAX_SENT_BYTES + 1];
        assert_eq!(send(&mut c, (server(), 5, 102), 0x14, &big), [5]);
        big[0] = 6;
        assert_eq!(send(&mut c, (server(), 6, 102), 0x14, &big), [6]);
    }

    /// The kept messages are bounded: per tick (past it, each is walked at once), and in
    /// servers.
    #[test]
    fn the_messages_kept_are_bounded() {
        let mut c = Clients::on(true);
        let codes = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x10, 0x11, 0x12];
        assert_eq!(codes.len(), MAX_SENT_PER_TICK + 1);
        for code in &codes[..MAX_SENT_PER_TICK] {
            assert_eq!(send(&mut c, (server(), 1, 5), *code, &[1]), [0u32; 0]);
        }
        assert_eq!(
            send(&mut c, (server(), 1, 5), codes[MAX_SENT_PER_TICK], &[1]),
            [1]
        );
        let kept = &c.sent[&server()];
        assert_eq!(
            (kept.kept, kept.firsts.len()),
            (MAX_SENT_PER_TICK, MAX_SENT_PER_TICK)
        );
        for port in 0..MAX_SENT_SERVERS as u16 {
            let at = SocketAddr::new(server().ip(), 1000 + port);
            send(&mut c, (at, 1, 5), 0x14, &[1]);
        }
        assert_eq!(c.sent.len(), 1); // 256 kept, then the 257th server started over
    }
}
