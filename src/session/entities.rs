//! Entity lifecycles: which entities each conversation spawned, updated and destroyed, the
//! findings only that shows (an update after ENTITY_DESTROYED, a second spawn of a live id, an
//! update of an entity the client was never given, a ghost the server's full state left out,
//! entities never destroyed), and per entity how often it was updated.
//!
//! A full state ([`full_state`]: a complete SERVER_SNAPSHOT_CHUNK set, an rtnp snapshot) names
//! every entity the server holds: an entity the client holds that it leaves out is a ghost. An
//! update of an id neither spawned nor in a full state is of an unknown entity; it is judged
//! once the conversation has a baseline (a spawn or a full state), so that a capture begun in the
//! middle of a game does not report every entity the client already held.
//!
//! The analysis feeds every datagram's [`EntityRef`]s in order ([`Entities::observe`]). State is
//! one record per entity id of a conversation, [`MAX_ENTITIES`] at most over the capture: a
//! destroyed entity is kept [`RETIRE_AFTER_NANOS`] of capture time (to catch late updates), then
//! retired into its conversation's totals ([`Lives`]), so memory follows the entities alive, not
//! the capture's length. Entities past the cap get no record, no lifecycle findings and no
//! per-entity figures (reported once as `session.entity-limit`).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::datagram::{rt, rtype, Dialect};
use crate::message::{Detail, Finding};
use crate::proto::schema::{Message, MessageRole};
use crate::proto::Rule;
use crate::session::event::{DatagramEvent, EntityEvent, EntityRef, LooseFinding};

/// Entity records kept at once, over all conversations (about 100 bytes each).
pub const MAX_ENTITIES: usize = 1 << 16;
/// How long a destroyed entity is remembered, in capture time, to catch updates that follow it.
pub const RETIRE_AFTER_NANOS: i64 = 10_000_000_000;
/// A conversation's records are swept for retired ones when they reach this many, then whenever
/// they double.
const FIRST_SWEEP: usize = 256;
/// Entities of a snapshot remembered in their order (where to look for each in the next one, and
/// the steady list): a snapshot naming more is followed by id alone and leaves nothing, so that
/// these lists take at most 4 KiB per conversation (16 MiB at the conversations' cap) whatever a
/// datagram lists.
const MAX_REMEMBERED: usize = 256;

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
struct Hot {
    updates: u64,
    ticks: u64,
    last_tick: u64,
    last_frame: u64,
    last_ts: i64,
    gap: i64,
}

/// One update of the entity whose figures are `hot` and `cold`.
fn update(hot: &mut Hot, cold: &mut Entity, at: At, tick: u64) {
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

/// What the analysis made of one [`EntityRef`] of the last datagram.
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
struct Record {
    id: u32,
    type_id: u16,
    state: State,
    flags: u8,
    /// The frame its life began: its spawn, or its first update.
    begun: u64,
    destroyed_ts: i64,
}

/// [`Record::flags`].
const HELD: u8 = 1;
const TYPED: u8 = 2;
const UPDATED: u8 = 4;
const SPAWNED: u8 = 8;
const DESTROYED: u8 = 16;
const REPORTED: u8 = 32;
/// Reported as a ghost (once per life).
const GHOSTED: u8 = 64;

/// Entity ids of one full state judged at most: a set naming more is not judged for ghosts, so
/// that the ids kept take at most 16 KiB per conversation (64 MiB at the conversations' cap).
pub const MAX_FULL_STATE_IDS: usize = 4096;
/// Chunks of one full-state set judged at most (the chunk layer's own limit is higher).
const MAX_FULL_STATE_CHUNKS: u16 = 64;

impl Record {
    fn new(id: u32, state: State) -> Record {
        Record {
            id,
            type_id: 0,
            state,
            flags: HELD,
            begun: 0,
            destroyed_ts: 0,
        }
    }
    fn type_id(&self) -> Option<u16> {
        (self.flags & TYPED != 0).then_some(self.type_id)
    }
}

/// One conversation's entities: records in an arena, found by id through a map, or by their
/// place in the previous snapshot (snapshots list mostly the same entities in the same order,
/// so most updates need no hashing).
#[derive(Debug, Default)]
struct Conversation {
    index: IdMap<u32, u32>,
    records: Vec<Record>,
    /// Beside each record when figures are kept.
    figures: Vec<Entity>,
    hot: Vec<Hot>,
    /// Arena slots no record holds.
    free: Vec<u32>,
    /// The arena slots of the last snapshot's entities, in its order; the next one's so far.
    order: Vec<u32>,
    next_order: Vec<u32>,
    /// The last snapshot's entities ([`steady_key`], in the order of [`Conversation::order`])
    /// when following them again would change no record: each was alive and had been updated,
    /// and nothing has touched their records since. Empty otherwise. Most snapshots repeat the
    /// one before, or add an entity at its end, so most need few records looked at.
    steady: Vec<u64>,
    retired: Lives,
    sweep_at: usize,
    /// A spawn or a full state was seen: updates of entities never given are judged from here.
    baseline: bool,
    /// The full state being gathered, and the ids it named so far.
    full: Option<FullState>,
    full_ids: Vec<u32>,
}

/// A full-state set being gathered: its tick, its chunks (a bit each) and its first frame; a set
/// that cannot be judged (chunks that disagree, too many ids) stays, `spoilt`, so that its later
/// chunks do not start it again.
#[derive(Clone, Copy, Debug)]
struct FullState {
    tick: Option<u32>,
    total: u16,
    have: u64,
    first_frame: u64,
    spoilt: bool,
}

/// The entities of every analysed conversation.
#[derive(Debug, Default)]
pub struct Entities {
    /// Indexed by conversation id − 1, like the analysis' sessions.
    conversations: Vec<Option<Box<Conversation>>>,
    records: usize,
    /// Whether per-entity figures (updates, rates, gaps) are kept, for the reports that show
    /// them; the lifecycle findings need none.
    figures: bool,
    /// The first frame with an entity that got no record.
    pub overflow: Option<u64>,
    last: Vec<Resolved>,
}

/// Whether a datagram's message was misread: a layout finding (a field cut short, bytes left
/// over, a mask bit its layout does not define) says the ids its walk found past the misfit are
/// not to be believed for what a full state holds or which entity the client was never given.
fn misread(event: &DatagramEvent<'_>) -> bool {
    event
        .findings
        .iter()
        .any(|f| rtype::MESSAGE_RULES.misfit(f.rule) || rt::MESSAGE_RULES.misfit(f.rule))
}

/// Whether a message names every entity the server holds (a chunk of them when chunked): its
/// description says so (`full-state`).
pub fn full_state(message: Option<&Message>) -> bool {
    message.is_some_and(|m| m.full_state)
}

/// What a message does to its entities, by its role; `None` for messages that name entities
/// without changing their life (rt COMPONENT_ADD, ENTITY_FULL_STATE…).
pub fn lifecycle(role: Option<MessageRole>) -> Option<EntityEvent> {
    match role? {
        MessageRole::Spawn => Some(EntityEvent::Spawn),
        MessageRole::Destroy => Some(EntityEvent::Destroy),
        MessageRole::Snapshot
        | MessageRole::Chunk
        | MessageRole::Periodic
        | MessageRole::Update => Some(EntityEvent::Update),
        _ => None,
    }
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

    /// Follows the entities `refs` of one datagram (its event's; `None` when they are not to be
    /// believed); `ticks` is the conversation's snapshot tick count once the datagram is
    /// counted. Lifecycle findings go to `emit`.
    pub fn observe<F: FnMut(LooseFinding)>(
        &mut self,
        event: &DatagramEvent<'_>,
        refs: Option<&[EntityRef]>,
        ticks: u64,
        emit: &mut F,
    ) {
        self.last.clear();
        let Some(refs) = refs else { return };
        let full = full_state(event.message);
        if refs.is_empty() && !full {
            return;
        }
        let Some(index) = (event.conversation as usize).checked_sub(1) else {
            return;
        };
        if self.conversations.len() <= index {
            self.conversations.resize_with(index + 1, || None);
        }
        let c = self.conversations[index].get_or_insert_with(|| {
            Box::new(Conversation {
                sweep_at: FIRST_SWEEP,
                ..Conversation::default()
            })
        });
        let completed = if full {
            c.gather(event, refs, misread(event))
        } else {
            None
        };
        if !refs.is_empty() {
            self.follow(index, event, refs, ticks, full, emit);
        }
        if let (Some(first_frame), Some(c)) = (completed, self.conversations[index].as_deref_mut())
        {
            c.baseline = true;
            c.ghosts(first_frame, |id| {
                emit(LooseFinding {
                    frame: event.frame,
                    conversation: event.conversation,
                    finding: Finding::new(Rule::SessionEntityGhost, 0, Detail::Value(id.into())),
                })
            });
        }
    }

    /// Follows `refs` in conversation slot `index` (see [`Entities::observe`]); `full` when the
    /// message is a full state.
    fn follow<F: FnMut(LooseFinding)>(
        &mut self,
        index: usize,
        event: &DatagramEvent<'_>,
        refs: &[EntityRef],
        ticks: u64,
        full: bool,
        emit: &mut F,
    ) {
        let Some(c) = self.conversations[index].as_deref_mut() else {
            return;
        };
        let at = At {
            frame: event.frame,
            ts_nanos: event.ts_nanos,
        };
        let figures = self.figures;
        // The start that repeats the last snapshot, steady, changes no record: only the
        // figures count its updates.
        let repeated = c.steady_start(refs);
        if figures {
            self.last.extend(c.order[..repeated].iter().map(|&k| {
                let k = k as usize;
                update(&mut c.hot[k], &mut c.figures[k], at, ticks);
                Resolved {
                    type_id: c.records[k].type_id(),
                    changed: false,
                }
            }));
        }
        if repeated == refs.len() && repeated == c.steady.len() {
            return;
        }
        // Whether each reference is a plain update of an entity alive (whose record is then
        // steady), and whether one changed a record held before.
        let (mut steady, mut touched) = (true, false);
        let remember = refs.len() <= MAX_REMEMBERED;
        let implicit = event.dialect == Dialect::Rtnp;
        c.next_order.clear();
        if remember {
            c.next_order.extend_from_slice(&c.order[..repeated]);
        }
        for (i, r) in refs.iter().enumerate().skip(repeated) {
            // Most references update an entity alive and known, found at its place in the last
            // snapshot, else by its id.
            if r.event == EntityEvent::Update {
                let slot = c
                    .order
                    .get(i)
                    .copied()
                    .filter(|k| {
                        let e = &c.records[*k as usize];
                        e.id == r.id && e.flags & HELD != 0
                    })
                    .or_else(|| c.index.get(&r.id).copied());
                if let Some(k) = slot {
                    let e = &mut c.records[k as usize];
                    if e.state != State::Destroyed {
                        let mut changed = e.flags & UPDATED == 0;
                        if e.flags & UPDATED == 0 {
                            e.flags |= UPDATED;
                            if e.flags & SPAWNED == 0 {
                                e.begun = at.frame;
                            }
                        }
                        if let Some(t) = r.type_id.filter(|t| e.type_id() != Some(*t)) {
                            changed = true;
                            e.type_id = t;
                            e.flags |= TYPED;
                        }
                        if figures {
                            let k = k as usize;
                            update(&mut c.hot[k], &mut c.figures[k], at, ticks);
                            self.last.push(Resolved {
                                type_id: e.type_id(),
                                changed,
                            });
                        }
                        if remember {
                            c.next_order.push(k);
                        }
                        continue;
                    }
                }
            }
            steady = false;
            let k = match c.index.get(&r.id) {
                Some(k) => {
                    touched = true;
                    *k
                }
                None => {
                    if self.records >= MAX_ENTITIES {
                        self.records -= c.sweep(at.ts_nanos);
                    }
                    if self.records >= MAX_ENTITIES {
                        self.overflow.get_or_insert(event.frame);
                        if figures {
                            self.last.push(Resolved {
                                type_id: r.type_id,
                                changed: false,
                            });
                        }
                        continue;
                    }
                    if c.index.len() >= c.sweep_at {
                        self.records -= c.sweep(at.ts_nanos);
                        c.sweep_at = (2 * c.index.len()).max(FIRST_SWEEP);
                    }
                    self.records += 1;
                    if r.event == EntityEvent::Update
                        && c.baseline
                        && !implicit
                        && !full
                        && !misread(event)
                    {
                        emit(LooseFinding {
                            frame: event.frame,
                            conversation: event.conversation,
                            finding: Finding::new(
                                Rule::SessionEntityUnknown,
                                r.at,
                                Detail::Value(r.id.into()),
                            ),
                        });
                    }
                    let state = match r.event {
                        EntityEvent::Spawn => State::Spawned,
                        EntityEvent::Update => State::Seen,
                        EntityEvent::Destroy => State::Destroyed,
                    };
                    c.hold(Record::new(r.id, state), figures)
                }
            };
            if remember && r.event == EntityEvent::Update {
                c.next_order.push(k);
            }
            c.baseline |= r.event == EntityEvent::Spawn;
            let resolved = c.change(k, r, at, ticks, implicit, figures, &mut |rule| {
                emit(LooseFinding {
                    frame: event.frame,
                    conversation: event.conversation,
                    finding: Finding::new(rule, r.at, Detail::Value(r.id.into())),
                })
            });
            if figures {
                self.last.push(resolved);
            }
        }
        let reordered = !c.next_order.is_empty();
        if reordered {
            std::mem::swap(&mut c.order, &mut c.next_order);
        }
        // A message that only made new records (a spawn) leaves the last snapshot steady.
        if steady && remember {
            c.steady.clear();
            c.steady.extend(refs.iter().map(steady_key));
        } else if touched || reordered || !remember {
            c.steady.clear();
        }
    }

    /// What the last datagram's entities resolved to, one per [`EntityRef`] of its event (kept
    /// with the figures).
    pub fn last(&self) -> &[Resolved] {
        &self.last
    }

    /// At the end: one `session.entity-never-destroyed` per conversation with entities alive,
    /// and `session.entity-limit` when the cap was reached.
    pub fn finish<F: FnMut(LooseFinding)>(&self, emit: &mut F) {
        for (index, c) in self.conversations.iter().enumerate() {
            let Some(c) = c else { continue };
            let alive = c
                .records
                .iter()
                .filter(|e| e.flags & HELD != 0 && e.state != State::Destroyed);
            let (count, first) = alive.fold((0u64, u64::MAX), |(n, first), e| {
                (n + 1, first.min(e.begun))
            });
            if count > 0 {
                emit(LooseFinding {
                    frame: first,
                    conversation: index as u32 + 1,
                    finding: Finding::new(
                        Rule::SessionEntityNeverDestroyed,
                        0,
                        Detail::Value(count),
                    ),
                });
            }
        }
        if let Some(frame) = self.overflow {
            emit(LooseFinding {
                frame,
                conversation: 0,
                finding: Finding::new(
                    Rule::SessionEntityLimit,
                    0,
                    Detail::Value(MAX_ENTITIES as u64),
                ),
            });
        }
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

/// An updated entity's id and type, as [`Conversation::steady`] keeps them.
fn steady_key(r: &EntityRef) -> u64 {
    u64::from(r.id) | r.type_id.map_or(0, |t| u64::from(t) + 1) << 32
}

impl Conversation {
    /// Gathers the ids a full-state message names (`refs`: its chunk's, chunk and total from its
    /// facts, one of one when it has none); returns the set's first frame when it completes. A
    /// chunk `misread` spoils its set.
    fn gather(
        &mut self,
        event: &DatagramEvent<'_>,
        refs: &[EntityRef],
        misread: bool,
    ) -> Option<u64> {
        let index = event.facts.chunk_index.unwrap_or(0);
        let total = event.facts.total_chunks.unwrap_or(1);
        let set = match &mut self.full {
            Some(set) if set.tick == event.tick => set,
            _ => {
                self.full_ids.clear();
                self.full.insert(FullState {
                    tick: event.tick,
                    total,
                    have: 0,
                    first_frame: event.frame,
                    spoilt: total == 0 || total > MAX_FULL_STATE_CHUNKS,
                })
            }
        };
        let updated = refs.iter().filter(|r| r.event == EntityEvent::Update);
        set.spoilt |= misread
            || set.total != total
            || index >= total
            || self.full_ids.len() + updated.clone().count() > MAX_FULL_STATE_IDS;
        if set.spoilt {
            self.full_ids.clear();
            return None;
        }
        set.have |= 1 << index;
        self.full_ids.extend(updated.map(|r| r.id));
        if set.have.count_ones() < u32::from(total) {
            return None;
        }
        let first_frame = set.first_frame;
        self.full = None;
        Some(first_frame)
    }

    /// Reports, through `report`, each entity held (alive, its life begun before the full state
    /// gathered in [`Conversation::full_ids`], which began at `first_frame`) that the full state
    /// left out, once per life.
    fn ghosts(&mut self, first_frame: u64, mut report: impl FnMut(u32)) {
        self.full_ids.sort_unstable();
        for rec in &mut self.records {
            let held = rec.flags & HELD != 0
                && rec.flags & GHOSTED == 0
                && rec.flags & (SPAWNED | UPDATED) != 0
                && rec.state != State::Destroyed
                && rec.begun < first_frame;
            if held && self.full_ids.binary_search(&rec.id).is_err() {
                rec.flags |= GHOSTED;
                report(rec.id);
            }
        }
        self.full_ids.clear();
    }

    /// How many of `refs`, from the first, update the entities of the last snapshot, steady, in
    /// the same order and with the same types: those change nothing.
    fn steady_start(&self, refs: &[EntityRef]) -> usize {
        refs.iter()
            .zip(&self.steady)
            .zip(&self.order)
            .take_while(|((r, key), _)| r.event == EntityEvent::Update && steady_key(r) == **key)
            .count()
    }

    /// Puts a record in the arena (with empty figures when they are kept); returns its slot.
    fn hold(&mut self, record: Record, figures: bool) -> u32 {
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
    fn renew(&mut self, k: usize, state: State, figures: bool) {
        if figures {
            let old = self.view(k);
            self.retired.add(&old);
            self.figures[k] = Entity::new(old.id, state);
            self.hot[k] = Hot::default();
        }
        let r = &mut self.records[k];
        *r = Record::new(r.id, state);
    }

    /// What a reference does to the entity in slot `k` beyond a plain update: a spawn, a
    /// destroy, an update after a destroy; lifecycle findings go to `report`.
    #[allow(clippy::too_many_arguments)]
    fn change(
        &mut self,
        k: u32,
        r: &EntityRef,
        at: At,
        ticks: u64,
        implicit: bool,
        figures: bool,
        report: &mut impl FnMut(Rule),
    ) -> Resolved {
        let k = k as usize;
        let e = self.records[k];
        let new = e.flags & (UPDATED | SPAWNED | DESTROYED) == 0;
        match (r.event, e.state) {
            (EntityEvent::Spawn, State::Spawned) if !new => {
                report(Rule::SessionEntitySpawnedTwice);
                self.renew(k, State::Spawned, figures);
            }
            (EntityEvent::Spawn, State::Destroyed) => self.renew(k, State::Spawned, figures),
            (EntityEvent::Spawn, _) => self.records[k].state = State::Spawned,
            (EntityEvent::Update, State::Destroyed) if implicit => {
                // rtnp creates an entity by its appearance in a snapshot (004 §8.4).
                self.renew(k, State::Seen, figures);
            }
            (EntityEvent::Update, State::Destroyed) => {
                if e.flags & REPORTED == 0 {
                    report(Rule::SessionEntityAfterDestroy);
                    self.records[k].flags |= REPORTED;
                }
                if figures {
                    self.figures[k].after_destroy += 1;
                }
            }
            (EntityEvent::Update, _) => {}
            (EntityEvent::Destroy, State::Destroyed) => {}
            (EntityEvent::Destroy, _) => {
                self.records[k].state = State::Destroyed;
                self.records[k].flags |= DESTROYED;
                self.records[k].destroyed_ts = at.ts_nanos;
                if figures {
                    self.figures[k].destroyed = Some(at);
                }
            }
        }
        let rec = &mut self.records[k];
        let mut changed = false;
        match r.event {
            EntityEvent::Spawn => {
                if rec.flags & SPAWNED == 0 {
                    rec.flags |= SPAWNED;
                    rec.begun = at.frame;
                    if figures {
                        self.figures[k].spawned = Some(at);
                    }
                }
            }
            EntityEvent::Update => {
                changed = rec.flags & UPDATED == 0;
                if changed && rec.flags & SPAWNED == 0 {
                    rec.begun = at.frame;
                }
                rec.flags |= UPDATED;
                if figures {
                    update(&mut self.hot[k], &mut self.figures[k], at, ticks);
                }
            }
            EntityEvent::Destroy if new => {
                rec.flags |= DESTROYED;
                rec.destroyed_ts = at.ts_nanos;
                if figures {
                    self.figures[k].destroyed = Some(at);
                }
            }
            EntityEvent::Destroy => {}
        }
        if let Some(t) = r.type_id.filter(|t| rec.type_id() != Some(*t)) {
            changed = true;
            rec.type_id = t;
            rec.flags |= TYPED;
        }
        Resolved {
            type_id: rec.type_id(),
            changed,
        }
    }

    /// Retires entities destroyed over [`RETIRE_AFTER_NANOS`] before `now`; returns how many.
    fn sweep(&mut self, now: i64) -> usize {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Facts;

    /// The description's message of that name, as the pipeline hands it on.
    fn described(dialect: Dialect, name: &str) -> Option<&'static Message> {
        match dialect {
            Dialect::Rtype => crate::proto::rtype::MESSAGES
                .iter()
                .find(|m| m.name == name),
            Dialect::Rt => crate::proto::rt::MESSAGES.iter().find(|m| m.name == name),
            Dialect::Rtnp => crate::proto::rtnp::message(name).map(|m| &m.message),
            Dialect::Described(_) => None,
        }
    }

    const MS: i64 = 1_000_000;

    /// Feeds entity references as datagrams of one rtype (or rtnp) conversation.
    struct Feed {
        entities: Entities,
        dialect: Dialect,
        frame: u64,
        findings: Vec<(Rule, u64, u64)>,
    }

    impl Feed {
        fn new(dialect: Dialect) -> Feed {
            Feed {
                entities: Entities::new(true),
                dialect,
                frame: 0,
                findings: Vec::new(),
            }
        }

        /// A feed that keeps the lifecycles only, as the summary and `check` do.
        fn lifecycles(dialect: Dialect) -> Feed {
            Feed {
                entities: Entities::new(false),
                ..Feed::new(dialect)
            }
        }

        fn send(&mut self, ms: i64, refs: &[(EntityEvent, u32, Option<u16>)]) -> Vec<Resolved> {
            self.send_as("", None, Facts::default(), ms, refs)
        }

        /// A datagram of message `name`, tick `tick` and `facts` (a chunk's index and total).
        fn send_as(
            &mut self,
            name: &str,
            tick: Option<u32>,
            facts: Facts,
            ms: i64,
            refs: &[(EntityEvent, u32, Option<u16>)],
        ) -> Vec<Resolved> {
            self.frame += 1;
            let refs: Vec<EntityRef> = refs
                .iter()
                .map(|(event, id, type_id)| EntityRef {
                    id: *id,
                    event: *event,
                    type_id: *type_id,
                    at: 21,
                })
                .collect();
            let event = DatagramEvent {
                frame: self.frame,
                ts_nanos: ms * MS,
                src: "10.0.0.1:49316".parse().unwrap(),
                dst: "10.0.0.2:41000".parse().unwrap(),
                bytes: &[],
                hash: 0,
                dialect: self.dialect,
                conversation: 1,
                direction: None,
                decoded: None,
                code: None,
                sequence: None,
                tick,
                message: described(self.dialect, name),
                name,
                payload: None,
                facts,
                findings: &[],
                session: &[],
                entities: &refs,
            };
            let findings = &mut self.findings;
            self.entities
                .observe(&event, Some(&refs), self.frame, &mut |f| {
                    findings.push((
                        f.finding.rule,
                        f.frame,
                        match f.finding.detail {
                            Detail::Value(v) => v,
                            _ => u64::MAX,
                        },
                    ))
                });
            self.entities.last().to_vec()
        }

        fn finish(&mut self) -> Vec<(Rule, u64, u64)> {
            let findings = &mut self.findings;
            self.entities.finish(&mut |f| {
                findings.push((
                    f.finding.rule,
                    f.frame,
                    match f.finding.detail {
                        Detail::Value(v) => v,
                        _ => u64::MAX,
                    },
                ))
            });
            std::mem::take(&mut self.findings)
        }
    }

    use EntityEvent::{Destroy, Spawn, Update};

    #[test]
    fn lifecycle_findings() {
        let mut f = Feed::new(Dialect::Rtype);
        f.send(0, &[(Spawn, 7, Some(2))]);
        // A delta block without a type takes the spawn's.
        let r = f.send(16, &[(Update, 7, None), (Update, 8, Some(1))]);
        assert_eq!(
            r,
            [
                Resolved {
                    type_id: Some(2),
                    changed: true
                },
                Resolved {
                    type_id: Some(1),
                    changed: true
                }
            ]
        );
        let r = f.send(20, &[(Update, 7, None)]);
        assert_eq!(
            r[0],
            Resolved {
                type_id: Some(2),
                changed: false
            }
        );
        f.send(33, &[(Destroy, 7, None)]);
        f.send(34, &[(Destroy, 7, None)]); // sent twice: no finding
        f.send(50, &[(Update, 7, None), (Update, 8, None)]); // 7 after its destruction
        f.send(66, &[(Update, 7, None)]); // reported once per destruction
        f.send(70, &[(Spawn, 8, Some(1))]); // 8 was only seen: now spawned, no finding
        f.send(80, &[(Spawn, 8, Some(1))]); // spawned twice
        f.send(90, &[(Spawn, 7, Some(3))]); // a new life for 7
        let r = f.send(95, &[(Update, 7, None)]);
        assert_eq!(
            r[0],
            Resolved {
                type_id: Some(3),
                changed: true
            }
        );
        assert_eq!(
            f.finish(),
            [
                // 8 was neither spawned nor in a full state, after 7's spawn.
                (Rule::SessionEntityUnknown, 2, 8),
                (Rule::SessionEntityAfterDestroy, 6, 7),
                (Rule::SessionEntitySpawnedTwice, 9, 8),
                // 7 and 8 are alive; 8's life began with its second spawn at frame 9.
                (Rule::SessionEntityNeverDestroyed, 9, 2),
            ]
        );
    }

    /// The start of a snapshot that repeats a steady one changes nothing and is passed over;
    /// anything that touched its entities in between, or a different type or order, is followed.
    #[test]
    fn repeated_snapshots_change_nothing_but_are_still_judged() {
        let script: &[&[(EntityEvent, u32, Option<u16>)]] = &[
            &[(Spawn, 7, Some(2))],
            &[(Update, 7, Some(2)), (Update, 8, Some(1))], // 8 seen: its life begins at 2
            &[(Update, 7, Some(2)), (Update, 8, Some(1))], // steady from here
            &[(Update, 7, Some(2)), (Update, 8, Some(1))],
            &[(Destroy, 8, None)],
            &[(Update, 7, Some(2)), (Update, 8, Some(1))], // 8 after its destruction
            &[(Update, 7, Some(2)), (Update, 8, Some(1))], // reported once
            &[(Spawn, 8, Some(1))],                        // a new life for 8
            &[(Update, 7, Some(2)), (Update, 8, Some(1))],
            &[(Update, 7, Some(3)), (Update, 8, Some(1))], // 7 changes type
            &[(Update, 8, Some(1)), (Update, 7, Some(3))], // another order
            &[(Update, 8, Some(1))],
            &[(Destroy, 7, None)],
            &[(Update, 8, Some(1))],
            &[(Update, 8, Some(1)), (Update, 7, Some(3))], // 7 after its destruction
            &[(Update, 8, Some(1))],
            &[(Update, 8, Some(1))],
            &[(Spawn, 9, Some(4))], // a new record: 8 stays steady
            &[(Update, 8, Some(1)), (Update, 9, Some(4))],
            &[(Update, 8, Some(1)), (Update, 9, Some(5))], // 9 changes type
            &[(Destroy, 30, None)],                        // a new record, destroyed
            &[
                (Update, 8, Some(1)),
                (Update, 9, Some(5)),
                (Update, 30, None),
            ],
            &[(Update, 8, Some(1)), (Update, 9, Some(5))],
            &[(Update, 8, Some(1))], // 9 left out: the list is shorter
            &[(Destroy, 9, None)],
            &[(Update, 8, Some(1)), (Update, 9, Some(5))], // 9 after its destruction
        ];
        let expected = [
            (Rule::SessionEntityUnknown, 2, 8),
            (Rule::SessionEntityAfterDestroy, 6, 8),
            (Rule::SessionEntityAfterDestroy, 15, 7),
            (Rule::SessionEntityAfterDestroy, 22, 30),
            (Rule::SessionEntityAfterDestroy, 26, 9),
            // 8 is alive, its life begun by its spawn at frame 8.
            (Rule::SessionEntityNeverDestroyed, 8, 1),
        ];
        for mut f in [Feed::lifecycles(Dialect::Rtype), Feed::new(Dialect::Rtype)] {
            for (i, refs) in script.iter().enumerate() {
                f.send(16 * i as i64, refs);
            }
            assert_eq!(f.finish(), expected);
        }
    }

    /// With figures, a snapshot that repeats a steady one counts its updates without looking its
    /// entities up: the same script sent with every other datagram's entities in reverse order
    /// (so that none repeats the one before) gives the same figures and resolutions.
    #[test]
    fn steady_snapshots_count_their_figures_as_any_other() {
        let steady = [
            (Update, 7, Some(2)),
            (Update, 8, Some(1)),
            (Update, 9, None),
        ];
        let mut script: Vec<Vec<(EntityEvent, u32, Option<u16>)>> = vec![
            vec![(Spawn, 7, Some(2))],
            steady.to_vec(),
            steady.to_vec(),
            steady.to_vec(),
            steady[..2].to_vec(),
            vec![(Update, 9, Some(4)), (Update, 8, Some(1))],
            steady.to_vec(),
            steady.to_vec(),
            vec![(Destroy, 8, None)],
            steady.to_vec(),
            steady.to_vec(),
        ];
        script.extend(std::iter::repeat_n(steady.to_vec(), 6));
        let (mut plain, mut reversed) = (Feed::new(Dialect::Rtype), Feed::new(Dialect::Rtype));
        let mut steady_starts = 0;
        for (i, refs) in script.iter().enumerate() {
            // Snapshot ticks 16 to 33 ms apart, so that the longest gaps differ by entity.
            let ms = 16 * i as i64 + (i as i64 % 3) * 17;
            let c = plain
                .entities
                .conversations
                .first()
                .and_then(|c| c.as_deref());
            if c.is_some_and(|c| !c.steady.is_empty()) {
                steady_starts += 1;
            }
            let a = plain.send(ms, refs);
            let flip = i % 2 == 1;
            let mut refs = refs.clone();
            if flip {
                refs.reverse();
            }
            let mut b = reversed.send(ms, &refs);
            if flip {
                b.reverse();
            }
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "datagram {i}");
        }
        assert_eq!(steady_starts, 6);
        let figures = |f: &Feed| format!("{:?} {:?}", f.entities.records(1), f.entities.lives(1));
        assert_eq!(figures(&plain), figures(&reversed));
        let seven = plain.entities.get(1, 7).unwrap();
        assert_eq!((seven.updates, seven.ticks), (14, 14));
        // The same findings; those of one datagram in its entities' order.
        let (mut a, mut b) = (plain.finish(), reversed.finish());
        a.sort_by_key(|f| (f.1, f.2));
        b.sort_by_key(|f| (f.1, f.2));
        assert_eq!(a, b);
    }

    /// A snapshot naming more entities than are remembered is followed by id, judged the same,
    /// and leaves the conversation's lists no longer than the limit.
    #[test]
    fn long_snapshots_are_followed_by_id_and_leave_short_lists() {
        let long: Vec<(EntityEvent, u32, Option<u16>)> = (0..10_000)
            .map(|i| (Update, 1 + i % 300, Some(1)))
            .collect();
        for mut f in [Feed::lifecycles(Dialect::Rtype), Feed::new(Dialect::Rtype)] {
            f.send(0, &long);
            f.send(16, &long);
            f.send(33, &[(Destroy, 299, None)]);
            f.send(50, &long); // 299 after its destruction, 33 times in the list: reported once
            f.send(66, &long[..200]);
            f.send(83, &long[..200]); // steady, and remembered
            let c = f.entities.conversations[0].as_deref().unwrap();
            for list in [
                c.order.capacity(),
                c.next_order.capacity(),
                c.steady.capacity(),
            ] {
                assert!(list <= MAX_REMEMBERED, "{list}");
            }
            assert_eq!(c.steady.len(), 200);
            assert_eq!(
                f.finish(),
                [
                    (Rule::SessionEntityAfterDestroy, 4, 299),
                    (Rule::SessionEntityNeverDestroyed, 1, 299),
                ]
            );
        }
    }

    /// A chunk of full-state set `tick` (`index` of `total`) naming `ids`.
    fn chunk(f: &mut Feed, ms: i64, tick: u32, index: u16, total: u16, ids: &[u32]) {
        let facts = Facts {
            chunk_index: Some(index),
            total_chunks: Some(total),
            ..Facts::default()
        };
        let refs: Vec<_> = ids.iter().map(|id| (Update, *id, Some(1))).collect();
        f.send_as("SERVER_SNAPSHOT_CHUNK", Some(tick), facts, ms, &refs);
    }

    /// An entity held that a complete full-state set leaves out is a ghost, once per life; sets
    /// not complete, or whose chunks disagree, judge nothing.
    #[test]
    fn ghosts_are_what_a_full_state_leaves_out() {
        let mut f = Feed::lifecycles(Dialect::Rtype);
        f.send(
            0,
            &[
                (Spawn, 1, Some(1)),
                (Spawn, 2, Some(1)),
                (Spawn, 3, Some(1)),
            ],
        );
        chunk(&mut f, 16, 100, 0, 2, &[1]); // 2: a set without 2 or 3
        chunk(&mut f, 17, 100, 1, 2, &[3]); // 3: complete, 2 is a ghost
        chunk(&mut f, 33, 101, 0, 2, &[1]); // 4: incomplete, never judged
        chunk(&mut f, 50, 102, 0, 3, &[1]); // 5: totals disagree
        chunk(&mut f, 51, 102, 1, 2, &[1]); // 6
        chunk(&mut f, 52, 102, 2, 3, &[1]); // 7: all three chunks, but spoilt
        f.send(60, &[(Destroy, 3, None)]); // 8
        f.send(70, &[(Spawn, 4, Some(1))]); // 9: spawned in the set's middle
        chunk(&mut f, 71, 103, 0, 1, &[1]); // 10: 2 reported already, 3 destroyed, 4 new
        chunk(&mut f, 80, 104, 0, 1, &[1]); // 11: 4 is a ghost now
        f.send(90, &[(Update, 5, Some(1))]); // 12: never given
        chunk(&mut f, 100, 105, 0, 1, &[1, 5, 2]); // 13: 2 is back, but reported once
        assert_eq!(
            f.finish(),
            [
                (Rule::SessionEntityGhost, 3, 2),
                (Rule::SessionEntityGhost, 10, 4),
                (Rule::SessionEntityUnknown, 12, 5),
                (Rule::SessionEntityNeverDestroyed, 1, 4),
            ]
        );
    }

    /// A full state naming more ids than are gathered is not judged, and what was gathered of
    /// it is let go: nothing is reported and the buffer stays within its bound.
    #[test]
    fn a_full_state_too_long_is_not_judged() {
        let mut f = Feed::lifecycles(Dialect::Rtype);
        f.send(0, &[(Spawn, 1, Some(1)), (Spawn, 2, Some(1))]);
        let many: Vec<u32> = (10..10 + MAX_FULL_STATE_IDS as u32).collect();
        chunk(&mut f, 16, 100, 0, 2, &many[..MAX_FULL_STATE_IDS / 2]);
        chunk(&mut f, 17, 100, 1, 2, &many); // past the bound: 1 and 2 are not judged
        let c = f.entities.conversations[0].as_deref().unwrap();
        assert!(c.full_ids.is_empty());
        assert!(
            c.full_ids.capacity() <= MAX_FULL_STATE_IDS,
            "{}",
            c.full_ids.capacity()
        );
        chunk(&mut f, 33, 101, 0, 65, &[1]); // more chunks than are judged
        for index in 1..65 {
            chunk(&mut f, 34, 101, index, 65, &[1]);
        }
        chunk(&mut f, 50, 102, 0, 1, &many[..MAX_FULL_STATE_IDS]); // at the bound: judged
        assert_eq!(
            f.finish(),
            [
                (Rule::SessionEntityGhost, 69, 1),
                (Rule::SessionEntityGhost, 69, 2),
                (
                    Rule::SessionEntityNeverDestroyed,
                    1,
                    MAX_FULL_STATE_IDS as u64 + 2
                ),
            ]
        );
    }

    /// Before any spawn or full state the client's world is not known (a capture begun in a
    /// game): updates of unspawned entities are judged only after one.
    #[test]
    fn unknown_entities_are_judged_from_a_baseline() {
        let mut f = Feed::lifecycles(Dialect::Rtype);
        f.send(0, &[(Update, 1, Some(1))]);
        chunk(&mut f, 16, 10, 0, 1, &[1, 2]); // the baseline; 2 given by the full state
        f.send(33, &[(Update, 2, None), (Update, 3, Some(1))]); // 3 never given
        f.send(50, &[(Update, 3, None)]); // once per life
        let mut rt = Feed::lifecycles(Dialect::Rt);
        rt.send(0, &[(Spawn, 10, Some(1))]);
        rt.send(16, &[(Update, 10, None), (Update, 11, None)]);
        assert_eq!(
            [f.finish(), rt.finish()],
            [
                vec![
                    (Rule::SessionEntityUnknown, 3, 3),
                    (Rule::SessionEntityNeverDestroyed, 1, 3),
                ],
                vec![
                    (Rule::SessionEntityUnknown, 2, 11),
                    (Rule::SessionEntityNeverDestroyed, 1, 2),
                ],
            ]
        );
    }

    /// Each rtnp snapshot is a full state (004 D.3): an entity it leaves out, not in its
    /// `destroyed` list, is a ghost; appearing is never unknown.
    #[test]
    fn rtnp_snapshots_are_full_states() {
        let mut f = Feed::lifecycles(Dialect::Rtnp);
        let snapshot = |f: &mut Feed, ms, refs: &[(EntityEvent, u32, Option<u16>)]| {
            f.send_as("snapshot", None, Facts::default(), ms, refs);
        };
        snapshot(&mut f, 0, &[(Update, 1, None), (Update, 2, None)]);
        snapshot(&mut f, 16, &[(Update, 1, None), (Destroy, 2, None)]);
        snapshot(&mut f, 33, &[(Update, 3, None)]); // 1 left out, not destroyed
        assert_eq!(
            f.finish(),
            [
                (Rule::SessionEntityGhost, 3, 1),
                (Rule::SessionEntityNeverDestroyed, 1, 2),
            ]
        );
    }

    #[test]
    fn rtnp_entities_come_back_by_appearing() {
        let mut f = Feed::new(Dialect::Rtnp);
        f.send(0, &[(Update, 1, None)]);
        f.send(16, &[(Destroy, 1, None)]);
        let r = f.send(33, &[(Update, 1, None)]);
        assert!(r[0].changed);
        f.send(50, &[(Destroy, 1, None)]);
        assert_eq!(f.finish(), []);
        let lives = f.entities.lives(1);
        assert_eq!((lives.count, lives.updates), (2, 2));
    }

    #[test]
    fn rates_gaps_and_tick_shares() {
        let mut f = Feed::new(Dialect::Rtype);
        // Entity 1 every tick for 2 s at 60 Hz (ticks = frames here); entity 2 every 4th tick
        // with one gap of 500 ms.
        for i in 0..=120 {
            let ms = i * 1000 / 60;
            let mut refs = vec![(Update, 1, Some(1))];
            if i % 4 == 0 && !(40..70).contains(&i) {
                refs.push((Update, 2, Some(2)));
            }
            f.send(ms, &refs);
        }
        let one = f.entities.get(1, 1).unwrap();
        assert_eq!((one.updates, one.ticks), (121, 121));
        assert!((one.rate_hz().unwrap() - 60.0).abs() < 0.1);
        assert_eq!(one.tick_share(), Some(1.0));
        let two = f.entities.get(1, 2).unwrap();
        assert_eq!(two.longest_gap.nanos, (72 - 36) * 1000 / 60 * MS);
        assert_eq!((two.longest_gap.from, two.longest_gap.to), (37, 73));
        let lives = f.entities.lives(1);
        assert_eq!(lives.count, 2);
        // 60 Hz in [55, 65), about 12 Hz in [10, 20).
        assert_eq!(lives.rates[7], 1);
        assert_eq!(lives.rates[3], 1);
        assert_eq!(lives.tick_shares, [1, 0, 0, 1, 0]);
        assert_eq!(lives.longest_gap.unwrap().0, 2);
        assert_eq!(lives.slowest.unwrap().0, 2);
    }

    #[test]
    fn destroyed_entities_retire_and_the_cap_is_reported() {
        let mut f = Feed::new(Dialect::Rtype);
        // Short lives, each destroyed at once: they retire after 10 s and make room.
        for id in 0..(3 * FIRST_SWEEP as u32) {
            let ms = i64::from(id) * 100;
            f.send(
                ms,
                &[
                    (Spawn, id, Some(1)),
                    (Update, id, None),
                    (Destroy, id, None),
                ],
            );
        }
        assert!(
            f.entities.tracked() < 2 * FIRST_SWEEP,
            "{}",
            f.entities.tracked()
        );
        assert_eq!(f.entities.lives(1).count, 3 * FIRST_SWEEP as u64);
        assert_eq!(f.finish(), []);
        // Entities that stay alive fill the table; the first one past it is reported.
        let mut f = Feed::new(Dialect::Rtype);
        for id in 0..=(MAX_ENTITIES as u32) {
            f.send(0, &[(Update, id, None)]);
        }
        assert_eq!(f.entities.tracked(), MAX_ENTITIES);
        assert_eq!(
            f.finish(),
            [
                (Rule::SessionEntityNeverDestroyed, 1, MAX_ENTITIES as u64),
                (
                    Rule::SessionEntityLimit,
                    MAX_ENTITIES as u64 + 1,
                    MAX_ENTITIES as u64
                )
            ]
        );
    }
}
