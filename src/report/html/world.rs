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

use std::collections::HashMap;

use serde_json::{json, Map, Value as Json};

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

/// One event of an entity's timeline.
struct Event {
    frame: u64,
    rel_nanos: i64,
    tick: Option<u32>,
    /// The change's name (`spawn`, `update`…) or the finding's rule.
    what: &'static str,
    life: u32,
    gap_nanos: Option<i64>,
    /// The fields that changed, `name=value` as `entity` writes them.
    changed: String,
}

#[derive(Default)]
struct Timeline {
    lives: u32,
    /// Plain updates of the current life.
    updates: u32,
    events: Vec<Event>,
    more: u64,
}

/// One conversation's part of the view.
#[derive(Default)]
struct Conv {
    types: Vec<String>,
    type_index: HashMap<String, usize>,
    keyframes: Vec<Vec<Row>>,
    /// Per keyframe past [`ENTITIES_PER_KEYFRAME`]: its index and the entities held.
    clipped: Vec<(usize, usize)>,
    findings: Vec<(i64, u64, &'static str)>,
    findings_more: u64,
    timelines: IdMap<u32, Timeline>,
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
            self.findings.push((rel_nanos, frame, rule));
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

    /// The view, as the page's `world` member.
    pub fn json(&self) -> Json {
        let secs = |nanos: i64| (nanos as f64 / 1e6).round() / 1e3;
        let conversations: Vec<Json> = self
            .conversations
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.keyframes.iter().all(Vec::is_empty) || !c.timelines.is_empty())
            .map(|(i, c)| {
                let keyframes: Vec<Json> = c
                    .keyframes
                    .iter()
                    .map(|rows| {
                        let flat: Vec<Json> = rows
                            .iter()
                            .flat_map(|r| {
                                [json!(r.id), json!(r.type_index), json!(r.x), json!(r.y)]
                            })
                            .collect();
                        Json::Array(flat)
                    })
                    .collect();
                let mut ids: Vec<&u32> = c.timelines.keys().collect();
                ids.sort_unstable();
                let timelines: Map<String, Json> = ids
                    .into_iter()
                    .map(|id| {
                        let t = &c.timelines[id];
                        let events: Vec<Json> = t
                            .events
                            .iter()
                            .map(|e| {
                                json!([
                                    e.frame,
                                    secs(e.rel_nanos),
                                    e.tick,
                                    e.what,
                                    e.life,
                                    e.gap_nanos.map(|g| (g as f64 / 1e3).round() / 1e3),
                                    e.changed
                                ])
                            })
                            .collect();
                        let mut timeline = json!({"lives": t.lives, "more": t.more});
                        timeline["events"] = Json::Array(events);
                        (id.to_string(), timeline)
                    })
                    .collect();
                // The large members moved in: `json!` would copy them.
                let mut conv = json!({
                    "id": i + 1,
                    "types": c.types,
                    "findings_more": c.findings_more,
                    "untracked_events": c.untracked_events,
                });
                conv["keyframes"] = Json::Array(keyframes);
                conv["clipped"] = c.clipped.iter().map(|(k, n)| json!([k, n])).collect();
                conv["findings"] = c
                    .findings
                    .iter()
                    .map(|(t, f, r)| json!([secs(*t), f, r]))
                    .collect();
                conv["timelines"] = Json::Object(timelines);
                conv
            })
            .collect();
        let mut view = json!({
            "step_ms": self.step_nanos as f64 / 1e6,
            "keyframes": self.keyframes,
            "cut": self.cut,
            "bounds": {
                "max_keyframes": MAX_KEYFRAMES,
                "entities_per_keyframe": ENTITIES_PER_KEYFRAME,
                "max_rows": MAX_WORLD_ROWS,
                "max_timelines": MAX_TIMELINES,
                "events_per_timeline": EVENTS_PER_TIMELINE,
                "updates_per_life": UPDATES_PER_LIFE,
                "max_timeline_events": MAX_TIMELINE_EVENTS,
                "findings_marked": FINDINGS_MARKED,
            },
        });
        view["conversations"] = Json::Array(conversations);
        view
    }
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
        Event {
            frame: change.at.frame,
            rel_nanos,
            tick: change.at.tick,
            what: change.happened.name(),
            life,
            gap_nanos: change.gap_nanos,
            changed,
        }
    });
}

/// Adds the event `make` gives for the timeline's current life, when both the timeline and the
/// capture have room (else counts it).
fn push(timeline: &mut Timeline, events: &mut usize, make: impl FnOnce(u32) -> Event) {
    if *events >= MAX_TIMELINE_EVENTS || timeline.events.len() >= EVENTS_PER_TIMELINE {
        timeline.more += 1;
        return;
    }
    timeline.events.push(make(timeline.lives));
    *events += 1;
}

/// The timeline of `id` in `conv`, made when there is room for one more.
fn timeline(conv: &mut Conv, id: u32) -> Option<&mut Timeline> {
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
            push(timeline, &mut self.events, |life| Event {
                frame: f.frame,
                rel_nanos: rel,
                tick,
                what: rule.id(),
                life,
                gap_nanos: None,
                changed: String::new(),
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
