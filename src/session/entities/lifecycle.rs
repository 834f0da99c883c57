//! What each message does to its entities' records: spawns, updates, destroys and full states
//! followed in order ([`Entities::observe`]), and the lifecycle findings they raise. The records
//! themselves, and the bounds on their memory, are in `storage`.

use crate::datagram::{rt, rtype, Dialect};
use crate::finding::{Detail, Finding};
use crate::proto::schema::{Message, MessageRole};
use crate::proto::Rule;
use crate::session::event::{DatagramEvent, EntityEvent, EntityRef, LooseFinding};

use super::storage::{
    update, At, Conversation, Entities, FullState, Record, Resolved, State, DESTROYED, FIRST_SWEEP,
    GHOSTED, HELD, MAX_ENTITIES, REPORTED, SPAWNED, TYPED, UPDATED,
};

/// Entities of a snapshot remembered in their order (where to look for each in the next one, and
/// the steady list): a snapshot naming more is followed by id alone and leaves nothing, so that
/// these lists take at most 4 KiB per conversation (16 MiB at the conversations' cap) whatever a
/// datagram lists.
pub(super) const MAX_REMEMBERED: usize = 256;

/// Entity ids of one full state judged at most: a set naming more is not judged for ghosts, so
/// that the ids kept take at most 16 KiB per conversation (64 MiB at the conversations' cap).
pub const MAX_FULL_STATE_IDS: usize = 4096;
/// Chunks of one full-state set judged at most (the chunk layer's own limit is higher).
const MAX_FULL_STATE_CHUNKS: u16 = 64;

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
}
