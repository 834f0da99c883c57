//! The entities' table: each conversation's records in an arena (an id map beside them), the
//! figures kept beside the records when a report asks, and the lives retired into their
//! conversation's totals ([`Lives`]) so that memory stays bounded ([`MAX_ENTITIES`],
//! [`RETIRE_AFTER_NANOS`]). What a message does to the records is in `lifecycle`.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Entity records kept at once, over all conversations (about 100 bytes each).
pub const MAX_ENTITIES: usize = 1 << 16;
/// How long a destroyed entity is remembered, in capture time, to catch updates that follow it.
pub const RETIRE_AFTER_NANOS: i64 = 10_000_000_000;
/// A conversation's records are swept for retired ones when they reach this many, then whenever
/// they double.
pub(super) const FIRST_SWEEP: usize = 256;

/// Updates per second of an entity over its life: the upper edges of [`Lives::rates`]' buckets
/// (the last bucket is open). A 60 Hz stream puts an entity updated every tick in `[55, 65)`.
pub const RATE_EDGES: [f64; 9] = [1.0, 5.0, 10.0, 20.0, 30.0, 45.0, 55.0, 65.0, 125.0];
/// The share of the conversation's snapshot ticks an entity was updated in, over its life: the
/// lower edges of [`Lives::tick_shares`]' buckets, from every tick down.
pub const SHARE_EDGES: [f64; 5] = [1.0, 0.5, 0.25, 0.1, 0.0];

/// A hasher for small integer keys (entity ids, conversation and id pairs): one multiply, as
/// the keys are not chosen to collide by anyone who gains from it (a crafted capture can only
/// slow its own reading, within the cap).
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }
    fn write_u8(&mut self, n: u8) {
        self.write_u64(n.into());
    }
    fn write_u16(&mut self, n: u16) {
        self.write_u64(n.into());
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(n.into());
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// A hash map keyed by small integers, with [`IdHasher`].
pub type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// Where an entity is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// ENTITY_SPAWN announced it.
    Spawned,
    /// Updated without a spawn seen (spawned before the capture, or implicitly, as rtnp does).
    Seen,
    Destroyed,
}

/// A frame and its capture time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct At {
    pub frame: u64,
    pub ts_nanos: i64,
}

/// The longest time an entity went without an update, between two frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gap {
    pub nanos: i64,
    pub from: u64,
    pub to: u64,
}

/// One entity id's current life in a conversation.
#[derive(Clone, Debug)]
pub struct Entity {
    pub id: u32,
    pub type_id: Option<u16>,
    pub state: State,
    pub spawned: Option<At>,
    pub destroyed: Option<At>,
    /// The first and last updates of this life.
    pub first: Option<At>,
    pub last: Option<At>,
    pub updates: u64,
    /// Distinct snapshot ticks of the conversation the entity was updated in.
    pub ticks: u64,
    /// The conversation's snapshot tick count at the first and the last update.
    first_tick: u64,
    last_tick: u64,
    pub longest_gap: Gap,
    /// Updates after its destruction (reported once).
    pub after_destroy: u64,
}

impl Entity {
    fn new(id: u32, state: State) -> Entity {
        Entity {
            id,
            type_id: None,
            state,
            spawned: None,
            destroyed: None,
            first: None,
            last: None,
            updates: 0,
            ticks: 0,
            first_tick: 0,
            last_tick: 0,
            longest_gap: Gap::default(),
            after_destroy: 0,
        }
    }

    /// Updates per second between the first and the last update (`None` for a life of one
    /// update, or of updates all at one instant).
    pub fn rate_hz(&self) -> Option<f64> {
        let (first, last) = (self.first?, self.last?);
        let seconds = last.ts_nanos.saturating_sub(first.ts_nanos) as f64 / 1e9;
        (seconds > 0.0).then(|| (self.updates - 1) as f64 / seconds)
    }

    /// Seconds between the first and the last update.
    pub fn span_s(&self) -> f64 {
        match (self.first, self.last) {
            (Some(f), Some(l)) => l.ts_nanos.saturating_sub(f.ts_nanos) as f64 / 1e9,
            _ => 0.0,
        }
    }

    /// The share of the conversation's snapshot ticks, from its first update to its last, that
    /// updated it.
    pub fn tick_share(&self) -> Option<f64> {
        (self.updates > 0).then(|| {
            let span = self.last_tick.saturating_sub(self.first_tick) + 1;
            (self.ticks as f64 / span as f64).min(1.0)
        })
    }
}

/// The figures an update changes, kept small beside the rest of an [`Entity`] (written on the
/// first update and on a new longest gap only).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Hot {
    updates: u64,
    ticks: u64,
    last_tick: u64,
    last_frame: u64,
    last_ts: i64,
    gap: i64,
}

/// One update of the entity whose figures are `hot` and `cold`.
pub(super) fn update(hot: &mut Hot, cold: &mut Entity, at: At, tick: u64) {
    if hot.updates == 0 {
        cold.first = Some(at);
        cold.first_tick = tick;
    } else {
        let gap = at.ts_nanos.saturating_sub(hot.last_ts);
        if gap > hot.gap {
            hot.gap = gap;
            cold.longest_gap = Gap {
                nanos: gap,
                from: hot.last_frame,
                to: at.frame,
            };
        }
    }
    if hot.updates == 0 || tick != hot.last_tick {
        hot.ticks += 1;
    }
    hot.last_frame = at.frame;
    hot.last_ts = at.ts_nanos;
    hot.last_tick = tick;
    hot.updates += 1;
}

/// The lives of a conversation's entities, ended or not: counts and distributions.
#[derive(Clone, Debug, Default)]
pub struct Lives {
    /// Lives with at least one update.
    pub count: u64,
    pub updates: u64,
    /// Lives by updates per second ([`RATE_EDGES`]); lives of one instant are not in it.
    pub rates: [u64; RATE_EDGES.len() + 1],
    /// Lives by the share of snapshot ticks that updated them ([`SHARE_EDGES`]).
    pub tick_shares: [u64; SHARE_EDGES.len()],
    /// The longest gap of any life, and whose.
    pub longest_gap: Option<(u32, Gap)>,
    /// The lowest update rate of a life at least 1 s long: entity, rate, first and last update.
    pub slowest: Option<(u32, f64, At, At)>,
}

impl Lives {
    fn add(&mut self, e: &Entity) {
        if e.updates == 0 {
            return;
        }
        self.count += 1;
        self.updates += e.updates;
        if let Some(rate) = e.rate_hz() {
            let bucket = RATE_EDGES.iter().position(|edge| rate < *edge);
            self.rates[bucket.unwrap_or(RATE_EDGES.len())] += 1;
        }
        if let Some(share) = e.tick_share() {
            let bucket = SHARE_EDGES.iter().position(|edge| share >= *edge);
            self.tick_shares[bucket.unwrap_or(SHARE_EDGES.len() - 1)] += 1;
        }
        if self
            .longest_gap
            .is_none_or(|(_, g)| e.longest_gap.nanos > g.nanos)
            && e.updates > 1
        {
            self.longest_gap = Some((e.id, e.longest_gap));
        }
        if let (Some(rate), Some(first), Some(last)) = (e.rate_hz(), e.first, e.last) {
            if e.span_s() >= 1.0 && self.slowest.is_none_or(|s| rate < s.1) {
                self.slowest = Some((e.id, rate, first, last));
            }
        }
    }

    /// Adds another set of lives (of another conversation, for the capture's totals).
    pub fn merge(&mut self, other: &Lives) {
        self.count += other.count;
        self.updates += other.updates;
        for (a, b) in self.rates.iter_mut().zip(other.rates) {
            *a += b;
        }
        for (a, b) in self.tick_shares.iter_mut().zip(other.tick_shares) {
            *a += b;
        }
        if let Some((id, g)) = other.longest_gap {
            if self
                .longest_gap
                .is_none_or(|(_, mine)| g.nanos > mine.nanos)
            {
                self.longest_gap = Some((id, g));
            }
        }
        if let Some(s) = other.slowest {
            if self.slowest.is_none_or(|mine| s.1 < mine.1) {
                self.slowest = Some(s);
            }
        }
    }
}

/// What the analysis made of one [`EntityRef`](crate::session::event::EntityRef) of the last
/// datagram.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    /// The entity's type: the message's, else the one its life last had.
    pub type_id: Option<u16>,
    /// The first update of the entity's life, or one that changed its type.
    pub changed: bool,
}

/// What the lifecycle needs of an entity, kept small (24 bytes) so that following every update
/// stays in the cache; the figures ([`Entity`]) are kept beside it only when a report asks.
#[derive(Clone, Copy, Debug)]
pub(super) struct Record {
    pub(super) id: u32,
    pub(super) type_id: u16,
    pub(super) state: State,
    pub(super) flags: u8,
    /// The frame its life began: its spawn, or its first update.
    pub(super) begun: u64,
    pub(super) destroyed_ts: i64,
}

/// [`Record::flags`].
pub(super) const HELD: u8 = 1;
pub(super) const TYPED: u8 = 2;
pub(super) const UPDATED: u8 = 4;
pub(super) const SPAWNED: u8 = 8;
pub(super) const DESTROYED: u8 = 16;
pub(super) const REPORTED: u8 = 32;
/// Reported as a ghost (once per life).
pub(super) const GHOSTED: u8 = 64;

impl Record {
    pub(super) fn new(id: u32, state: State) -> Record {
        Record {
            id,
            type_id: 0,
            state,
            flags: HELD,
            begun: 0,
            destroyed_ts: 0,
        }
    }
    pub(super) fn type_id(&self) -> Option<u16> {
        (self.flags & TYPED != 0).then_some(self.type_id)
    }
}

/// One conversation's entities: records in an arena, found by id through a map, or by their
/// place in the previous snapshot (snapshots list mostly the same entities in the same order,
/// so most updates need no hashing).
#[derive(Debug, Default)]
pub(super) struct Conversation {
    pub(super) index: IdMap<u32, u32>,
    pub(super) records: Vec<Record>,
    /// Beside each record when figures are kept.
    pub(super) figures: Vec<Entity>,
    pub(super) hot: Vec<Hot>,
    /// Arena slots no record holds.
    pub(super) free: Vec<u32>,
    /// The arena slots of the last snapshot's entities, in its order; the next one's so far.
    pub(super) order: Vec<u32>,
    pub(super) next_order: Vec<u32>,
    /// The last snapshot's entities ([`steady_key`](super::lifecycle::steady_key), in the order
    /// of [`Conversation::order`])
    /// when following them again would change no record: each was alive and had been updated,
    /// and nothing has touched their records since. Empty otherwise. Most snapshots repeat the
    /// one before, or add an entity at its end, so most need few records looked at.
    pub(super) steady: Vec<u64>,
    pub(super) retired: Lives,
    pub(super) sweep_at: usize,
    /// A spawn or a full state was seen: updates of entities never given are judged from here.
    pub(super) baseline: bool,
    /// The full state being gathered, and the ids it named so far.
    pub(super) full: Option<FullState>,
    pub(super) full_ids: Vec<u32>,
}

/// A full-state set being gathered: its tick, its chunks (a bit each) and its first frame; a set
/// that cannot be judged (chunks that disagree, too many ids) stays, `spoilt`, so that its later
/// chunks do not start it again.
#[derive(Clone, Copy, Debug)]
pub(super) struct FullState {
    pub(super) tick: Option<u32>,
    pub(super) total: u16,
    pub(super) have: u64,
    pub(super) first_frame: u64,
    pub(super) spoilt: bool,
}

/// The entities of every analysed conversation.
#[derive(Debug, Default)]
pub struct Entities {
    /// Indexed by conversation id − 1, like the analysis' sessions.
    pub(super) conversations: Vec<Option<Box<Conversation>>>,
    pub(super) records: usize,
    /// Whether per-entity figures (updates, rates, gaps) are kept, for the reports that show
    /// them; the lifecycle findings need none.
    pub(super) figures: bool,
    /// The first frame with an entity that got no record.
    pub overflow: Option<u64>,
    pub(super) last: Vec<Resolved>,
}

impl Entities {
    /// Entities whose figures are kept when `figures` (the profile's), else only their
    /// lifecycles.
    pub fn new(figures: bool) -> Entities {
        Entities {
            figures,
            ..Entities::default()
        }
    }

    /// What the last datagram's entities resolved to, one per
    /// [`EntityRef`](crate::session::event::EntityRef) of its event (kept with the figures).
    pub fn last(&self) -> &[Resolved] {
        &self.last
    }

    /// The lives of a conversation's entities, retired and current (with figures kept).
    pub fn lives(&self, conversation: u32) -> Lives {
        let mut lives = Lives::default();
        if let Some(c) = self.conversation(conversation) {
            lives.merge(&c.retired);
            for e in c.held() {
                lives.add(&e);
            }
        }
        lives
    }

    /// A conversation's entities (current lives, and destroyed ones not yet retired), in id
    /// order; their figures when they are kept.
    pub fn records(&self, conversation: u32) -> Vec<Entity> {
        let mut v: Vec<Entity> = self
            .conversation(conversation)
            .map(|c| c.held().collect())
            .unwrap_or_default();
        v.sort_unstable_by_key(|e| e.id);
        v
    }

    /// One entity's current life.
    pub fn get(&self, conversation: u32, id: u32) -> Option<Entity> {
        let c = self.conversation(conversation)?;
        c.index.get(&id).map(|k| c.view(*k as usize))
    }

    /// Records held now, over all conversations.
    pub fn tracked(&self) -> usize {
        self.records
    }

    fn conversation(&self, conversation: u32) -> Option<&Conversation> {
        self.conversations
            .get((conversation as usize).checked_sub(1)?)?
            .as_deref()
    }
}

impl Conversation {
    /// Puts a record in the arena (with empty figures when they are kept); returns its slot.
    pub(super) fn hold(&mut self, record: Record, figures: bool) -> u32 {
        let id = record.id;
        let entity = || Entity::new(id, record.state);
        let k = match self.free.pop() {
            Some(k) => {
                self.records[k as usize] = record;
                if figures {
                    self.figures[k as usize] = entity();
                    self.hot[k as usize] = Hot::default();
                }
                k
            }
            None => {
                self.records.push(record);
                if figures {
                    self.figures.push(entity());
                    self.hot.push(Hot::default());
                }
                self.records.len() as u32 - 1
            }
        };
        self.index.insert(id, k);
        k
    }

    /// The entity in slot `k`: its figures when kept, its lifecycle always.
    fn view(&self, k: usize) -> Entity {
        let r = &self.records[k];
        let mut e = self
            .figures
            .get(k)
            .cloned()
            .unwrap_or_else(|| Entity::new(r.id, r.state));
        (e.type_id, e.state) = (r.type_id(), r.state);
        if let Some(h) = self.hot.get(k) {
            (e.updates, e.ticks, e.last_tick) = (h.updates, h.ticks, h.last_tick);
            e.last = (h.updates > 0).then_some(At {
                frame: h.last_frame,
                ts_nanos: h.last_ts,
            });
        }
        e
    }

    /// The entities held.
    fn held(&self) -> impl Iterator<Item = Entity> + '_ {
        (0..self.records.len())
            .filter(|k| self.records[*k].flags & HELD != 0)
            .map(|k| self.view(k))
    }

    /// Ends the life in slot `k` and begins another in `state`.
    pub(super) fn renew(&mut self, k: usize, state: State, figures: bool) {
        if figures {
            let old = self.view(k);
            self.retired.add(&old);
            self.figures[k] = Entity::new(old.id, state);
            self.hot[k] = Hot::default();
        }
        let r = &mut self.records[k];
        *r = Record::new(r.id, state);
    }

    /// Retires entities destroyed over [`RETIRE_AFTER_NANOS`] before `now`; returns how many.
    pub(super) fn sweep(&mut self, now: i64) -> usize {
        let before = self.index.len();
        let mut gone = Vec::new();
        let records = &self.records;
        self.index.retain(|_, k| {
            let e = &records[*k as usize];
            let old = e.state == State::Destroyed
                && now.saturating_sub(e.destroyed_ts) > RETIRE_AFTER_NANOS;
            if old {
                gone.push(*k);
            }
            !old
        });
        for k in gone {
            if !self.figures.is_empty() {
                let e = self.view(k as usize);
                self.retired.add(&e);
            }
            self.records[k as usize].flags &= !HELD;
            self.free.push(k);
        }
        before - self.index.len()
    }
}
