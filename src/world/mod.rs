//! The world: each conversation's entities as its client received them, rebuilt from the wire,
//! for the views that follow an entity (`entity`) or show the world at a time (`world`).
//!
//! The reports' fields visitor ([`Gather`]) collects each datagram's entity blocks; once the
//! pipeline's event says what the message does to each entity (spawn, update, destroy),
//! [`World::apply`] applies them. A snapshot's update mask is a delta, as the real servers use
//! it (spec-notes B): a field it leaves out keeps its last value. Each field knows the frame
//! and tick it last changed. The real servers reuse ids after a destroy, so each life of an id
//! is its own: a spawn starts a new one; an update after the destroy belongs to the destroyed
//! life (the client holds no entity any more), and after [`RETIRE_AFTER_NANOS`] the life is
//! forgotten, so that a later update starts a life of its own, without a spawn. In rtnp, whose
//! snapshots create entities by their appearance (004 §8.4), an update after a destroy starts
//! a new life at once. rtnp's snapshots are JSON, which no walk visits: their entities are read
//! from it ([`Gather::json_entities`]).
//!
//! Memory follows the entities held, not the capture's length: destroyed lives are retired,
//! and at most [`MAX_HELD`] lives are held at once over all conversations; past it, new lives
//! are not followed and [`World::refused`] says from which frame.

mod agree;
mod columns;
mod gather;
mod life;

pub use agree::{Clients, Disagreement, Held as HeldValue, Sent, MAX_FOLLOWED, MAX_REPORTED};
pub use columns::{StateColumn, StateColumns};
pub use gather::Gather;
pub use life::{Life, Num, Slot, Stamp};

use std::net::SocketAddr;

use crate::datagram::Dialect;
use crate::proto::schema::Field;
use crate::session::entities::IdMap;
use crate::session::event::{DatagramEvent, Decoded, EntityEvent};
use crate::session::{Archetypes, Conversations};

/// Lives held at once, over all conversations (a few hundred bytes each).
pub const MAX_HELD: usize = 1 << 16;
/// How long a destroyed life is kept, in capture time, for the updates and destroys that
/// follow it (as the session layer's lifecycle findings keep it).
pub const RETIRE_AFTER_NANOS: i64 = crate::session::entities::RETIRE_AFTER_NANOS;
/// A conversation's lives are swept for retired ones when they reach this many, then whenever
/// they double.
const FIRST_SWEEP: usize = 256;
/// Field buffers of retired lives kept for the next ones.
const SPARE_SLOTS: usize = 1024;

/// What a datagram did to one life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Happened {
    /// A spawn; `replaced` when the id was held and not destroyed.
    Spawn { replaced: bool },
    /// An update: `after_destroy` of a destroyed life; `unseen` when it starts a life no spawn
    /// announced.
    Update { after_destroy: bool, unseen: bool },
    /// A destroy; `again` when the life was destroyed already.
    Destroy { again: bool },
    /// A destroy of an id the world does not hold (never seen, retired, or not followed).
    DestroyUnknown,
}

impl Happened {
    /// Its name, in the reports (`entity`'s event column, the dataset's `entity_states`).
    pub fn name(self) -> &'static str {
        match self {
            Happened::Spawn { replaced: false } => "spawn",
            Happened::Spawn { replaced: true } => "spawn-over-live",
            Happened::Update {
                after_destroy: true,
                ..
            } => "update-after-destroy",
            Happened::Update { unseen: true, .. } => "update-unspawned",
            Happened::Update { .. } => "update",
            Happened::Destroy { again: false } => "destroy",
            Happened::Destroy { again: true } => "destroy-again",
            Happened::DestroyUnknown => "destroy-unknown",
        }
    }

    /// Whether it starts a life: a spawn, or an update no spawn announced.
    pub fn starts_life(self) -> bool {
        matches!(
            self,
            Happened::Spawn { .. } | Happened::Update { unseen: true, .. }
        )
    }
}

/// One entity's change, as [`World::apply`] reports it.
#[derive(Debug)]
pub struct Change<'a> {
    pub conversation: u32,
    pub id: u32,
    pub happened: Happened,
    pub at: Stamp,
    /// Since the life's last spawn or update, for a spawn or update that follows one.
    pub gap_nanos: Option<i64>,
    /// The fields whose value changed, with the new value (the entity type first when it
    /// changed).
    pub changed: &'a [(&'static Field, Num)],
    /// The life after the change (none for [`Happened::DestroyUnknown`]).
    pub life: Option<&'a Life>,
    /// The conversation's LevelInit archetypes.
    pub archetypes: &'a Archetypes,
}

/// One conversation's entities.
#[derive(Debug, Default)]
pub struct Held {
    lives: IdMap<u32, Life>,
    pub archetypes: Archetypes,
    next_sweep: usize,
}

impl Held {
    /// The lives the client holds (spawned or updated, not destroyed), by id.
    pub fn alive(&self) -> Vec<&Life> {
        let mut alive: Vec<&Life> = self
            .lives
            .values()
            .filter(|l| l.destroyed.is_none())
            .collect();
        alive.sort_unstable_by_key(|l| l.id);
        alive
    }

    /// The name `life`'s type has in this conversation ([`Life::type_name`] with its LevelInit
    /// sprites), as `world` and the report's world view show it.
    pub fn type_name(&self, life: &Life) -> Option<&str> {
        life.type_name(|t| self.archetypes.sprite(t))
    }
}

/// Lives not followed for want of room: how many, and from which frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refused {
    pub first_frame: u64,
    pub lives: u64,
}

/// Every conversation's entities (see the module's documentation).
#[derive(Debug, Default)]
pub struct World {
    gather: Gather,
    conversations: IdMap<u32, Held>,
    held: usize,
    refused: Option<Refused>,
    spare: Vec<Vec<Slot>>,
    changed: Vec<(&'static Field, Num)>,
    agreement: agree::Agreement,
    /// The server of the datagram being applied, when another conversation shares it.
    shared: Option<SocketAddr>,
}

impl World {
    /// A world of every entity, or of entity `follow` alone (the others' fields are not kept).
    pub fn new(follow: Option<u32>) -> World {
        let mut world = World::default();
        world.gather.follow = follow;
        world
    }

    /// The visitor to walk each datagram's fields into (the sink's fields).
    pub fn fields(&mut self) -> &mut Gather {
        &mut self.gather
    }

    /// Before a datagram's walk (the sink's `begin`): forgets the last one's fields.
    pub fn begin(&mut self) {
        self.gather.clear();
        self.shared = None;
    }

    /// Before a datagram's walk, after [`World::begin`], for the reports that compare clients:
    /// notes whether the server of its conversation has other clients to compare it with.
    pub fn compare(&mut self, conversations: &Conversations, conversation: u32) {
        self.shared = conversations
            .get(conversation)
            .filter(|c| c.shares_server)
            .map(|c| c.server);
    }

    /// The first disagreement of each pair of conversations of one server.
    pub fn disagreements(&self) -> &[Disagreement] {
        self.agreement.found()
    }

    /// Applies the datagram whose fields were just walked, as `e` says what its message does
    /// to each entity it names; each life it changes goes to `on`.
    pub fn apply(&mut self, e: &DatagramEvent<'_>, mut on: impl FnMut(&Change<'_>)) {
        let held = self.conversations.entry(e.conversation).or_default();
        if let Some(archetypes) = &self.gather.archetypes {
            held.archetypes.clone_from(archetypes);
        }
        let at = Stamp {
            frame: e.frame,
            ts_nanos: e.ts_nanos,
            tick: e.tick,
        };
        if let (
            Some(Decoded::Rtnp {
                json: Some(json), ..
            }),
            false,
        ) = (e.decoded, e.entities.is_empty())
        {
            self.gather.json_entities(json);
        }
        let appears = e.dialect == Dialect::Rtnp;
        for (block, r) in self.gather.named(e.entities) {
            self.changed.clear();
            let existing = held.lives.get(&r.id);
            let (happened, gap) = match (r.event, existing) {
                // rtnp creates an entity by its appearance in a snapshot (004 §8.4), as the
                // session layer reads it: a new life.
                (EntityEvent::Update, Some(l)) if l.destroyed.is_some() && appears => {
                    let update = Happened::Update {
                        after_destroy: false,
                        unseen: true,
                    };
                    (update, None)
                }
                (EntityEvent::Spawn, l) => {
                    let replaced = l.is_some_and(|l| l.destroyed.is_none());
                    (Happened::Spawn { replaced }, None)
                }
                (EntityEvent::Update, Some(l)) => {
                    let after_destroy = l.destroyed.is_some();
                    let gap = at.ts_nanos.saturating_sub(l.last.ts_nanos);
                    let update = Happened::Update {
                        after_destroy,
                        unseen: false,
                    };
                    (update, Some(gap))
                }
                (EntityEvent::Update, None) => {
                    let update = Happened::Update {
                        after_destroy: false,
                        unseen: true,
                    };
                    (update, None)
                }
                (EntityEvent::Destroy, Some(l)) => (
                    Happened::Destroy {
                        again: l.destroyed.is_some(),
                    },
                    None,
                ),
                (EntityEvent::Destroy, None) => (Happened::DestroyUnknown, None),
            };
            if happened.starts_life() {
                if !held.lives.contains_key(&r.id) && self.held >= MAX_HELD {
                    let refused = self.refused.get_or_insert(Refused {
                        first_frame: e.frame,
                        lives: 0,
                    });
                    refused.lives += 1;
                    continue;
                }
                let slots = self.spare.pop().unwrap_or_default();
                let spawned = matches!(happened, Happened::Spawn { .. });
                let life = Life::new(r.id, at, spawned, slots);
                if let Some(old) = held.lives.insert(r.id, life) {
                    recycle(&mut self.spare, old);
                } else {
                    self.held += 1;
                }
            }
            let Some(life) = held.lives.get_mut(&r.id) else {
                on(&Change {
                    conversation: e.conversation,
                    id: r.id,
                    happened,
                    at,
                    gap_nanos: None,
                    changed: &[],
                    life: None,
                    archetypes: &held.archetypes,
                });
                continue;
            };
            match happened {
                Happened::Destroy { again: false } => life.destroyed = Some(at),
                Happened::Destroy { again: true } | Happened::DestroyUnknown => {}
                Happened::Spawn { .. } | Happened::Update { .. } => {
                    let values = self.gather.values_of(block);
                    life.take(block.type_id, values, at, &mut self.changed);
                    // A snapshot's server tick: its header's tick, else its sequence number
                    // (rt's component snapshots, as the session analysis reads them).
                    let tick = e.tick.or(e.sequence);
                    if let (Some(server), Some(tick), Happened::Update { .. }) =
                        (self.shared, tick, happened)
                    {
                        let (conversation, id) = (e.conversation, r.id);
                        self.agreement
                            .updated(server, conversation, id, values, tick, at.frame);
                    }
                }
            }
            on(&Change {
                conversation: e.conversation,
                id: r.id,
                happened,
                at,
                gap_nanos: gap,
                changed: &self.changed,
                life: Some(life),
                archetypes: &held.archetypes,
            });
        }
        if held.lives.len() >= held.next_sweep.max(FIRST_SWEEP) {
            sweep(held, at.ts_nanos, &mut self.held, &mut self.spare);
            held.next_sweep = 2 * held.lives.len().max(FIRST_SWEEP / 2);
        }
    }

    /// Conversation `id`'s entities, when the world saw it.
    pub fn held(&self, id: u32) -> Option<&Held> {
        self.conversations.get(&id)
    }

    /// The lives not followed because [`MAX_HELD`] were held.
    pub fn refused(&self) -> Option<Refused> {
        self.refused
    }
}

/// Retires the lives of `held` destroyed more than [`RETIRE_AFTER_NANOS`] before `now`.
fn sweep(held: &mut Held, now: i64, count: &mut usize, spare: &mut Vec<Vec<Slot>>) {
    let retired: Vec<u32> = held
        .lives
        .values()
        .filter(|l| {
            l.destroyed
                .is_some_and(|d| now.saturating_sub(d.ts_nanos) > RETIRE_AFTER_NANOS)
        })
        .map(|l| l.id)
        .collect();
    for id in retired {
        if let Some(life) = held.lives.remove(&id) {
            *count -= 1;
            recycle(spare, life);
        }
    }
}

/// Keeps a retired life's field buffer for a later life.
fn recycle(spare: &mut Vec<Vec<Slot>>, life: Life) {
    if spare.len() < SPARE_SLOTS {
        let mut slots = life.slots;
        slots.clear();
        spare.push(slots);
    }
}
