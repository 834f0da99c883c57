//! The report's world view: per conversation, the entities each client held at keyframes every
//! [`step_nanos`] of capture time, each entity's first events (as `entity` lists
//! them) and the findings to mark on the time slider, taken from one reading of the capture
//! with the same [`World`] that `world --at` rebuilds. Keyframe `k` is the world at
//! `k × step` seconds, as `world --at` shows it: every datagram up to that time taken, none
//! after. Everything is bounded: [`MAX_KEYFRAMES`] a conversation, [`ENTITIES_PER_KEYFRAME`],
//! [`MAX_WORLD_ROWS`] entities over all keyframes of a capture (past it the keyframes stop,
//! and the page says when), [`MAX_TIMELINES`] entities followed a conversation with
//! [`EVENTS_PER_TIMELINE`] events each ([`UPDATES_PER_LIFE`] plain updates a life, so that
//! every life shows) and [`MAX_TIMELINE_EVENTS`] a capture, and
//! [`FINDINGS_MARKED`] a conversation.

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;

use super::super::entity::ENTITY_RULES;
use super::super::profile::MAX_DETAILED;
use super::super::render::text_value;
use crate::finding::Detail;
use crate::pipeline::{RunEnd, Sink};
use crate::proto::schema::Quantity;
use crate::session::entities::IdMap;
use crate::session::event::{DatagramEvent, LooseFinding};
use crate::session::Conversations;
use crate::world::{Change, Gather, Happened, Life, World};

/// Keyframes a conversation (the slider's positions).
pub const MAX_KEYFRAMES: usize = 600;
/// Entities kept a keyframe (the first by id); a keyframe holding more says how many.
pub const ENTITIES_PER_KEYFRAME: usize = 256;
/// Entities kept over every keyframe of a capture's conversations (about 25 bytes each in the
/// page); past it no more keyframes are kept.
pub const MAX_WORLD_ROWS: usize = 100_000;
/// Entity type names a conversation (later ones share the last, `(other types)`).
pub const MAX_TYPE_NAMES: usize = 64;
/// Entity ids whose timeline a conversation keeps (the first seen).
pub const MAX_TIMELINES: usize = 256;
/// Events kept of each timeline (the first ones; `entity` lists them all).
pub const EVENTS_PER_TIMELINE: usize = 200;
/// Plain updates kept of each life, so that the later lives' spawns and destroys fit.
pub const UPDATES_PER_LIFE: u32 = 12;
/// Timeline events kept over a capture.
pub const MAX_TIMELINE_EVENTS: usize = 10_000;
/// Findings marked on a conversation's slider (the first ones).
pub const FINDINGS_MARKED: usize = 256;
/// The shortest keyframe step: 10 ms, the finest a slider can be moved by.
const MIN_STEP_NANOS: i64 = 10_000_000;

/// The keyframe step for a capture of `duration_nanos`: the smallest of 1, 2, 5 × 10ⁿ ms, from
/// [`MIN_STEP_NANOS`], that covers it in [`MAX_KEYFRAMES`] (the last one past its end), so that
/// the times a slider stops at are round.
pub fn step_nanos(duration_nanos: i64) -> i64 {
    let least = duration_nanos.max(0) / (MAX_KEYFRAMES as i64 - 2) + 1;
    let mut decade = MIN_STEP_NANOS;
    loop {
        for m in [1, 2, 5] {
            let step = decade.saturating_mul(m);
            if step >= least || step == i64::MAX {
                return step;
            }
        }
        decade = decade.saturating_mul(10);
    }
}

/// An entity at a keyframe.
struct Row {
    id: u32,
    type_index: usize,
    x: Option<f64>,
    y: Option<f64>,
}

/// The keyframes' entities, each keyframe's flat: id, type index, x, y.
fn flat_keyframes<S: Serializer>(keyframes: &[Vec<Row>], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(keyframes.iter().map(|rows| Flat(rows)))
}

/// A keyframe's entities, flat.
struct Flat<'a>(&'a [Row]);

impl Serialize for Flat<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(4 * self.0.len()))?;
        for row in self.0 {
            seq.serialize_element(&row.id)?;
            seq.serialize_element(&row.type_index)?;
            seq.serialize_element(&row.x)?;
            seq.serialize_element(&row.y)?;
        }
        seq.end()
    }
}

/// Seconds since the first datagram, to the millisecond.
fn secs(rel_nanos: i64) -> f64 {
    (rel_nanos as f64 / 1e6).round() / 1e3
}

/// One event of an entity's timeline.
#[derive(Serialize, JsonSchema)]
struct TimelineEvent(
    /// The frame.
    #[schemars(range(min = 1))]
    u64,
    /// Seconds since the first datagram, to the millisecond.
    f64,
    /// The header's tick.
    Option<u32>,
    /// The change's name (`spawn`, `update`…) or the finding's rule.
    &'static str,
    /// Which life of the id (1 for the first; 0 before any).
    u32,
    /// Milliseconds since the life's previous spawn or update (to the microsecond).
    Option<f64>,
    /// The fields that changed, `name=value` as `entity` writes them.
    String,
);

/// An entity's lives and first events.
#[derive(Default, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct EntityTimeline {
    events: Vec<TimelineEvent>,
    lives: u32,
    /// The events not kept.
    more: u64,
    /// Plain updates of the current life.
    #[serde(skip)]
    updates: u32,
}

/// A finding marked on the slider: [seconds, frame, rule].
#[derive(Serialize, JsonSchema)]
struct FindingMark(f64, #[schemars(range(min = 1))] u64, &'static str);

/// One conversation's part of the view.
#[derive(Default)]
struct Conv {
    types: Vec<String>,
    type_index: HashMap<String, usize>,
    keyframes: Vec<Vec<Row>>,
    /// Per keyframe past [`ENTITIES_PER_KEYFRAME`]: its index and the entities held.
    clipped: Vec<(usize, usize)>,
    findings: Vec<FindingMark>,
    findings_more: u64,
    timelines: IdMap<u32, EntityTimeline>,
    /// Ids seen past [`MAX_TIMELINES`] (counted once per event).
    untracked_events: u64,
}

impl Conv {
    /// The index of `name` in the type table.
    fn type_index(&mut self, name: &str) -> usize {
        if let Some(&i) = self.type_index.get(name) {
            return i;
        }
        if self.types.len() + 1 >= MAX_TYPE_NAMES {
            let other = "(other types)";
            if self.types.last().map(String::as_str) != Some(other) {
                self.types.push(other.to_owned());
            }
            return self.types.len() - 1;
        }
        self.types.push(name.to_owned());
        self.type_index
            .insert(name.to_owned(), self.types.len() - 1);
        self.types.len() - 1
    }

    fn finding(&mut self, rel_nanos: i64, frame: u64, rule: &'static str) {
        if self.findings.len() < FINDINGS_MARKED {
            self.findings
                .push(FindingMark(secs(rel_nanos), frame, rule));
        } else {
            self.findings_more += 1;
        }
    }
}

/// The sink that builds the view (see the module's documentation).
pub struct WorldView {
    world: World,
    step_nanos: i64,
    first_ts: Option<i64>,
    /// The time of the last datagram, since the first.
    last_rel: i64,
    /// Keyframes taken so far.
    keyframes: usize,
    rows: usize,
    /// The keyframe at which [`MAX_WORLD_ROWS`] stopped them.
    cut: Option<usize>,
    /// Indexed by conversation id − 1, for the conversations with an IO graph.
    conversations: Vec<Conv>,
    events: usize,
    /// The last datagram's tick, for the findings that follow it (as `entity` stamps them).
    last_tick: Option<u32>,
}

impl WorldView {
    /// A view with keyframes every `step_nanos` ([`step_nanos`] of the capture's duration).
    pub fn new(step_nanos: i64) -> WorldView {
        WorldView {
            world: World::new(None),
            step_nanos: step_nanos.max(1),
            first_ts: None,
            last_rel: 0,
            keyframes: 0,
            rows: 0,
            cut: None,
            conversations: Vec::new(),
            events: 0,
            last_tick: None,
        }
    }

    /// The time of `e` since the first datagram.
    fn rel(&mut self, e: &DatagramEvent<'_>) -> i64 {
        e.ts_nanos
            .saturating_sub(*self.first_ts.get_or_insert(e.ts_nanos))
    }

    /// Takes the keyframes whose time comes before `rel`: the world as it stands before the
    /// datagram at `rel` is taken.
    fn advance(&mut self, rel: i64) {
        while self.keyframes < MAX_KEYFRAMES
            && self.cut.is_none()
            && (self.keyframes as i64).saturating_mul(self.step_nanos) < rel
        {
            self.keyframe();
        }
    }

    fn keyframe(&mut self) {
        let index = self.keyframes;
        for (i, conv) in self.conversations.iter_mut().enumerate() {
            let mut rows = Vec::new();
            if let Some(held) = self.world.held(i as u32 + 1) {
                let alive = held.alive();
                if alive.len() > ENTITIES_PER_KEYFRAME {
                    conv.clipped.push((index, alive.len()));
                }
                for life in alive.into_iter().take(ENTITIES_PER_KEYFRAME) {
                    let type_index = conv.type_index(&type_label(held.type_name(life), life));
                    rows.push(Row {
                        id: life.id,
                        type_index,
                        x: position(life, Quantity::PosX),
                        y: position(life, Quantity::PosY),
                    });
                }
            }
            self.rows += rows.len();
            conv.keyframes.push(rows);
        }
        self.keyframes += 1;
        if self.rows >= MAX_WORLD_ROWS {
            self.cut = Some(self.keyframes);
        }
    }

    /// Conversation `id`'s part, made on its first datagram (none past [`MAX_DETAILED`]).
    fn conv(&mut self, id: u32) -> Option<&mut Conv> {
        let index = (id as usize).checked_sub(1).filter(|i| *i < MAX_DETAILED)?;
        if self.conversations.len() <= index {
            let keyframes = self.keyframes;
            self.conversations.resize_with(index + 1, || Conv {
                keyframes: std::iter::repeat_with(Vec::new).take(keyframes).collect(),
                ..Conv::default()
            });
        }
        self.conversations.get_mut(index)
    }

    /// The view, as the page's `world` member: the keyframes and timelines moved, not copied.
    pub fn into_data(self) -> WorldData {
        let conversations = (self.conversations.into_iter().enumerate())
            .filter(|(_, c)| !c.keyframes.iter().all(Vec::is_empty) || !c.timelines.is_empty())
            .map(|(i, c)| ConversationWorld {
                clipped: c.clipped,
                findings: c.findings,
                findings_more: c.findings_more,
                id: i + 1,
                keyframes: c.keyframes,
                // By the id's text, as a JSON object's keys sort.
                timelines: (c.timelines.into_iter())
                    .map(|(id, t)| (id.to_string(), t))
                    .collect(),
                types: c.types,
                untracked_events: c.untracked_events,
            })
            .collect();
        WorldData {
            bounds: WorldBounds::THESE,
            conversations,
            cut: self.cut,
            keyframes: self.keyframes,
            step_ms: self.step_nanos as f64 / 1e6,
        }
    }
}

/// The world view (the HTML page only): per conversation with an IO graph, the entities its
/// client held at keyframes every `step_ms` (keyframe k is `world --at k×step_ms/1000`), entity
/// timelines as `entity` lists them, and the findings marked on the slider. Bounded by the named
/// constants in `bounds` (SECURITY.md).
// The fields of each struct are in the order serde_json's sorted maps wrote them before.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct WorldData {
    bounds: WorldBounds,
    conversations: Vec<ConversationWorld>,
    /// The keyframes kept when the bound of entities over every keyframe (`bounds.max_rows`)
    /// stopped them; null when it did not.
    #[schemars(range(min = 1))]
    cut: Option<usize>,
    keyframes: usize,
    /// Capture time between keyframes: 1, 2 or 5 × 10ⁿ ms, from 10 ms.
    #[schemars(extend("exclusiveMinimum" = 0))]
    step_ms: f64,
}

/// The bounds the view was built with: [`MAX_KEYFRAMES`], [`ENTITIES_PER_KEYFRAME`],
/// [`MAX_WORLD_ROWS`] (`max_rows`) and the others of the same names.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct WorldBounds {
    #[schemars(extend("const" = ENTITIES_PER_KEYFRAME))]
    entities_per_keyframe: usize,
    #[schemars(extend("const" = EVENTS_PER_TIMELINE))]
    events_per_timeline: usize,
    #[schemars(extend("const" = FINDINGS_MARKED))]
    findings_marked: usize,
    #[schemars(extend("const" = MAX_KEYFRAMES))]
    max_keyframes: usize,
    #[schemars(extend("const" = MAX_WORLD_ROWS))]
    max_rows: usize,
    #[schemars(extend("const" = MAX_TIMELINE_EVENTS))]
    max_timeline_events: usize,
    #[schemars(extend("const" = MAX_TIMELINES))]
    max_timelines: usize,
    #[schemars(extend("const" = UPDATES_PER_LIFE))]
    updates_per_life: u32,
}

impl WorldBounds {
    const THESE: WorldBounds = WorldBounds {
        entities_per_keyframe: ENTITIES_PER_KEYFRAME,
        events_per_timeline: EVENTS_PER_TIMELINE,
        findings_marked: FINDINGS_MARKED,
        max_keyframes: MAX_KEYFRAMES,
        max_rows: MAX_WORLD_ROWS,
        max_timeline_events: MAX_TIMELINE_EVENTS,
        max_timelines: MAX_TIMELINES,
        updates_per_life: UPDATES_PER_LIFE,
    };
}

/// One conversation's world view.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct ConversationWorld {
    /// [keyframe, entities held] of the keyframes that held more than
    /// `bounds.entities_per_keyframe`.
    clipped: Vec<(usize, usize)>,
    /// [seconds, frame, rule] of the first findings.
    findings: Vec<FindingMark>,
    findings_more: u64,
    #[schemars(range(min = 1))]
    id: usize,
    /// Per keyframe, its entities by id, flat: id, type index, x, y (to the hundredth; null when
    /// unknown).
    #[serde(serialize_with = "flat_keyframes")]
    #[schemars(with = "Vec<Vec<Option<f64>>>")]
    keyframes: Vec<Vec<Row>>,
    /// By entity id: its lives and first events [frame, seconds, tick, event or rule, life, gap
    /// ms, changed fields as name=value].
    timelines: BTreeMap<String, EntityTimeline>,
    /// Entity type names, as `world` gives them (else `type N`, or `untyped`); keyframes index
    /// into it.
    types: Vec<String>,
    untracked_events: u64,
}

/// A change of the world, into its entity's timeline; `events` counts the capture's.
fn record(conv: &mut Conv, events: &mut usize, change: &Change<'_>, rel_nanos: i64) {
    let Some(timeline) = timeline(conv, change.id) else {
        return;
    };
    if change.happened.starts_life() {
        timeline.lives += 1;
        timeline.updates = 0;
    }
    let plain = Happened::Update {
        after_destroy: false,
        unseen: false,
    };
    if change.happened == plain {
        timeline.updates += 1;
        if timeline.updates > UPDATES_PER_LIFE {
            timeline.more += 1;
            return;
        }
    }
    push(timeline, events, |life| {
        let mut changed = String::new();
        for (field, value) in change.changed {
            if !changed.is_empty() {
                changed.push(' ');
            }
            changed.push_str(field.name);
            changed.push('=');
            text_value(&mut changed, field, value.value(), |_| None);
        }
        TimelineEvent(
            change.at.frame,
            secs(rel_nanos),
            change.at.tick,
            change.happened.name(),
            life,
            change.gap_nanos.map(|g| (g as f64 / 1e3).round() / 1e3),
            changed,
        )
    });
}

/// Adds the event `make` gives for the timeline's current life, when both the timeline and the
/// capture have room (else counts it).
fn push(
    timeline: &mut EntityTimeline,
    events: &mut usize,
    make: impl FnOnce(u32) -> TimelineEvent,
) {
    if *events >= MAX_TIMELINE_EVENTS || timeline.events.len() >= EVENTS_PER_TIMELINE {
        timeline.more += 1;
        return;
    }
    timeline.events.push(make(timeline.lives));
    *events += 1;
}

/// The timeline of `id` in `conv`, made when there is room for one more.
fn timeline(conv: &mut Conv, id: u32) -> Option<&mut EntityTimeline> {
    if !conv.timelines.contains_key(&id) && conv.timelines.len() >= MAX_TIMELINES {
        conv.untracked_events += 1;
        return None;
    }
    Some(conv.timelines.entry(id).or_default())
}

/// How the page names an entity's type: `world`'s name, else its number.
fn type_label(name: Option<&str>, life: &Life) -> String {
    match (name, life.type_id) {
        (Some(name), _) => name.to_owned(),
        (None, Some(t)) => format!("type {t}"),
        (None, None) => "untyped".to_owned(),
    }
}

/// A position, to the hundredth as the page draws it (none when unknown or not finite).
fn position(life: &Life, quantity: Quantity) -> Option<f64> {
    let v = life.measured(quantity)?.value.as_f64();
    v.is_finite().then(|| (v * 100.0).round() / 100.0)
}

impl Sink for WorldView {
    type Fields = Gather;

    fn fields(&mut self) -> &mut Gather {
        self.world.fields()
    }

    fn begin(&mut self, _: &Conversations, _: u32) {
        self.world.begin();
    }

    fn datagram(&mut self, e: &DatagramEvent<'_>) {
        let rel = self.rel(e);
        self.advance(rel);
        self.last_rel = self.last_rel.max(rel);
        self.last_tick = e.tick;
        if let Some(conv) = self.conv(e.conversation) {
            for f in e.findings {
                conv.finding(rel, e.frame, f.rule.id());
            }
        }
        for f in e.session {
            if let Some(conv) = self.conv(f.conversation) {
                conv.finding(rel, f.frame, f.finding.rule.id());
            }
        }
        let (conversations, events) = (&mut self.conversations, &mut self.events);
        self.world.apply(e, |change| {
            let index = (change.conversation as usize).wrapping_sub(1);
            if let Some(conv) = conversations.get_mut(index) {
                record(conv, events, change, rel);
            }
        });
    }

    /// The display filter did not pass it: its time moves the keyframes on, as for `world`.
    fn skipped(&mut self, e: &DatagramEvent<'_>) {
        let rel = self.rel(e);
        self.advance(rel);
        self.last_rel = self.last_rel.max(rel);
    }

    fn loose(&mut self, f: &LooseFinding) {
        let (rel, tick) = (self.last_rel, self.last_tick);
        let rule = f.finding.rule;
        let Some(conv) = self.conv(f.conversation) else {
            return;
        };
        conv.finding(rel, f.frame, rule.id());
        let id = match f.finding.detail {
            Detail::Value(id) if ENTITY_RULES.contains(&rule) => u32::try_from(id),
            _ => return,
        };
        let index = f.conversation as usize - 1;
        let (Ok(id), Some(conv)) = (id, self.conversations.get_mut(index)) else {
            return;
        };
        if let Some(timeline) = timeline(conv, id) {
            push(timeline, &mut self.events, |life| {
                TimelineEvent(
                    f.frame,
                    secs(rel),
                    tick,
                    rule.id(),
                    life,
                    None,
                    String::new(),
                )
            });
        }
    }

    /// The last keyframes: up to the first at or after the last datagram, the world at the end.
    fn end(&mut self, _: &RunEnd<'_>) {
        if self.first_ts.is_some() {
            self.advance(self.last_rel.saturating_add(self.step_nanos));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_round_and_cover_the_capture_in_the_keyframes_kept() {
        assert_eq!(step_nanos(0), 10_000_000);
        assert_eq!(step_nanos(5_000_000_000), 10_000_000);
        assert_eq!(step_nanos(15_040_000_000), 50_000_000);
        assert_eq!(step_nanos(3_600_000_000_000), 10_000_000_000);
        assert_eq!(step_nanos(i64::MAX), 20_000_000_000_000_000);
        for d in [
            0,
            1,
            5_980_000_000,
            5_990_000_000,
            15_040_000_000,
            7 << 40,
            i64::MAX,
        ] {
            let s = step_nanos(d);
            assert!(d / s + 2 <= MAX_KEYFRAMES as i64, "{d} {s}");
        }
    }
}
