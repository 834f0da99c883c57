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
//! of one client per server pays a test per datagram. For those, what each entity's last tick carried is kept, per
//! conversation (at most [`MAX_COMPARED`]), for at most [`MAX_FOLLOWED`] entities; past it the
//! table starts over (later comparisons only are made). Buffers are reused from one tick to the
//! next, so steady traffic allocates nothing.
//!
//! Every report judges it ([`Clients`]): the pipeline walks the messages of the conversations
//! that share their server once more, into a [`Gather`] of its own, and raises
//! `session.clients-disagree` as a session finding at the frame where the second value shows;
//! the `world` command's [`World`](super::World) keeps the details (both values) for its view.

use std::net::SocketAddr;

use crate::message::{Detail, Finding};
use crate::proto::schema::{Field, Quantity, Ty};
use crate::proto::Rule;
use crate::session::entities::IdMap;
use crate::session::event::{DatagramEvent, Decoded, EntityEvent, LooseFinding};
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

/// `session.clients-disagree` for every report (see the module's documentation).
#[derive(Debug, Default)]
pub struct Clients {
    gather: Gather,
    agreement: Agreement,
    /// The findings of the walk once more, which the datagram's own walk reported already.
    ignored: Vec<Finding>,
    /// The datagram being reported was walked into [`Clients::fields`].
    walked: bool,
}

impl Clients {
    /// The visitor to walk the message of a conversation that shares its server into, once the
    /// pipeline knows it names updated entities, and where that walk's findings go (ignored).
    pub fn fields(&mut self) -> (&mut Gather, &mut Vec<Finding>) {
        self.gather.clear();
        self.ignored.clear();
        self.walked = true;
        (&mut self.gather, &mut self.ignored)
    }

    /// Compares what the datagram `e` carried (walked into [`Clients::fields`], or an rtnp
    /// snapshot's JSON) with what the other conversations of its server held at its tick; each
    /// pair of conversations' first disagreement goes to `raise`, at this datagram's frame.
    pub fn judge(
        &mut self,
        e: &DatagramEvent<'_>,
        conversations: &Conversations,
        mut raise: impl FnMut(LooseFinding),
    ) {
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
        for (block, r) in self.gather.named(e.entities) {
            if r.event != EntityEvent::Update {
                continue;
            }
            let before = self.agreement.found.len();
            let values = self.gather.values_of(block);
            self.agreement
                .updated(c.server, e.conversation, r.id, values, tick, e.frame);
            for d in &self.agreement.found[before..] {
                let detail = Detail::Disagree {
                    entity: d.id,
                    tick: d.tick,
                    field: d.field,
                    with: d.first.conversation,
                    with_frame: d.first.frame,
                };
                raise(LooseFinding {
                    frame: e.frame,
                    conversation: e.conversation,
                    finding: Finding::new(Rule::SessionClientsDisagree, r.at, detail),
                });
            }
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
}
