//! `rtype-inspect entity FILE ID`: follows one entity through the world each client received,
//! Wireshark's Follow Stream for an entity. Per conversation, one after the other: each spawn,
//! every update with the fields that changed and their new values and the gap since the
//! update before, each destroy, and whatever came after a destroy, each with its frame, time
//! and tick; one line per event, or one JSON document. The lifecycle findings that name the
//! entity (an update after its destroy, a second spawn, an update of an entity never given, a
//! ghost) are events of their own, at their frames.
//!
//! The events are rendered as they come, into a section per conversation ([`Sections`]), so
//! that memory stays flat on a long capture.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::ser::Serializer;
use serde::Serialize;

use super::render::{
    decimal_len, detail, open_last_list, push_json, push_spaces, push_u64, text_value, FieldValue,
};
use super::sections::Sections;
use super::time::write_seconds;
use super::world::RefusedJson;
use super::Tool;
use crate::app::{read_capture, written, Format, ReadOpts};
use crate::finding::{Detail, Finding};

use crate::pipeline::{RunEnd, Sink};
use crate::proto::schema::{Display, Field, Role};
use crate::proto::{Rule, Severity};
use crate::session::entities::IdMap;
use crate::session::event::{DatagramEvent, LooseFinding};
use crate::session::Conversations;
use crate::world::{Change, Gather, Happened, Num, World};

/// `rtype-inspect entity`'s options, as `cli::args` parsed them.
pub struct EntityOptions {
    pub file: PathBuf,
    pub id: u32,
    pub conversation: Option<u32>,
    pub format: Format,
    pub read: ReadOpts,
}

/// The schema of `entity --format json` (docs/schemas/entity.schema.json).
pub const SCHEMA: &str = "entity/1";

/// The lifecycle findings whose detail is an entity id: the entity's own events.
pub(crate) const ENTITY_RULES: [Rule; 4] = [
    Rule::SessionEntityAfterDestroy,
    Rule::SessionEntitySpawnedTwice,
    Rule::SessionEntityUnknown,
    Rule::SessionEntityGhost,
];

/// Runs `rtype-inspect entity`.
pub fn run(options: EntityOptions) -> Result<ExitCode, String> {
    let reading = options.read.reading()?.for_file(&options.file)?;
    let mut follow = Follow::new(options.id, options.conversation, options.format);
    read_capture(&options.file, &reading, &mut follow)?;
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let file = options.file.display().to_string();
    let result = match follow.end.take() {
        Some(end) => follow.write(&mut out, &file, &end),
        None => Ok(()),
    };
    written(result.and_then(|()| out.flush()).err())
}

/// What the report needs of the run's end.
struct End {
    profile: String,
    filter: Option<String>,
    /// Each conversation's client and server, by id.
    ends: IdMap<u32, (String, String)>,
}

/// A conversation's count of the entity's lives and events.
#[derive(Clone, Copy, Default)]
struct Counts {
    lives: u32,
    updates: u64,
    destroys: u64,
    events: u64,
}

/// Follows the entity while the pipeline runs (see the module's documentation).
struct Follow {
    world: World,
    id: u32,
    conversation: Option<u32>,
    format: Format,
    first_ts: Option<i64>,
    sections: Sections,
    counts: IdMap<u32, Counts>,
    end: Option<End>,
    /// The last datagram the world took: its tick and message name, for the findings that
    /// follow it.
    last_tick: Option<u32>,
    last_rel_nanos: i64,
    last_message: String,
}

impl Follow {
    fn new(id: u32, conversation: Option<u32>, format: Format) -> Follow {
        Follow {
            world: World::new(Some(id)),
            id,
            conversation,
            format,
            first_ts: None,
            sections: Sections::default(),
            counts: IdMap::default(),
            end: None,
            last_tick: None,
            last_rel_nanos: 0,
            last_message: String::new(),
        }
    }

    /// A datagram, which the display filter passed (`shown`) or not: the world takes it
    /// either way; only the updates shown are listed.
    fn seen(&mut self, e: &DatagramEvent<'_>, shown: bool) {
        let first = *self.first_ts.get_or_insert(e.ts_nanos);
        if self.conversation.is_some_and(|c| c != e.conversation) {
            return;
        }
        self.last_tick = e.tick;
        self.last_rel_nanos = e.ts_nanos.saturating_sub(first);
        self.last_message.clear();
        self.last_message.push_str(e.name);
        let (sections, counts, format) = (&mut self.sections, &mut self.counts, self.format);
        self.world.apply(e, |change| {
            let count = counts.entry(change.conversation).or_default();
            let listed = !matches!(change.happened, Happened::Update { .. }) || shown;
            count_change(count, change.happened);
            if !listed {
                return;
            }
            count.events += 1;
            let line = Line {
                change,
                message: e.name,
                rel_nanos: change.at.ts_nanos.saturating_sub(first),
                life: count.lives,
                first: count.events == 1,
            };
            sections.append(change.conversation, |out| match format {
                Format::Text => line.text(out),
                Format::Json => push_event(out, line.first, &line.json()),
            });
        });
    }

    /// A lifecycle finding, listed when it names the entity (after its datagram, whose tick and
    /// message it takes).
    fn finding(&mut self, f: &LooseFinding) {
        let named = matches!(f.finding.detail, Detail::Value(v) if v == u64::from(self.id));
        if !named
            || !ENTITY_RULES.contains(&f.finding.rule)
            || self.conversation.is_some_and(|c| c != f.conversation)
        {
            return;
        }
        let count = self.counts.entry(f.conversation).or_default();
        count.events += 1;
        let line = FindingLine {
            stamp: Stamp {
                frame: f.frame,
                rel_nanos: self.last_rel_nanos,
                tick: self.last_tick,
            },
            message: &self.last_message,
            finding: &f.finding,
            life: count.lives,
            first: count.events == 1,
        };
        self.sections
            .append(f.conversation, |out| match self.format {
                Format::Text => line.text(out),
                Format::Json => push_event(out, line.first, &line.json()),
            });
    }

    /// Writes the report.
    fn write<W: Write>(self, out: &mut W, file: &str, end: &End) -> io::Result<()> {
        let Follow {
            id,
            conversation: only,
            sections,
            counts,
            format,
            world,
            ..
        } = self;
        let ends = |c: u32| end.ends.get(&c).cloned().unwrap_or_default();
        let count = |c: u32| counts.get(&c).copied().unwrap_or_default();
        let refused = world.refused();
        match format {
            Format::Text => {
                if counts.is_empty() {
                    let within = only.map_or(String::new(), |c| format!(" in conversation #{c}"));
                    writeln!(out, "entity {id}: no datagram of {file} names it{within}")?;
                }
                let head = |out: &mut W, c: u32, index: usize| {
                    let (client, server) = ends(c);
                    let n = count(c);
                    if index > 0 {
                        writeln!(out)?;
                    }
                    writeln!(
                        out,
                        "Entity {id} in conversation #{c} ({client} ↔ {server}): {} {}, {} updates, {} destroys",
                        n.lives,
                        if n.lives == 1 { "life" } else { "lives" },
                        n.updates,
                        n.destroys
                    )?;
                    writeln!(
                        out,
                        "{:>7} {:>10} {:>7}  {:<21} {:>10}  changed",
                        "frame", "time", "tick", "event", "gap"
                    )
                };
                sections.write_to(out, head, |_, _| Ok(()))?;
                if let Some(r) = refused {
                    writeln!(
                        out,
                        "note: {} lives from frame {} on were not followed (the world holds {} at most)",
                        r.lives,
                        r.first_frame,
                        crate::world::MAX_HELD
                    )?;
                }
                if let Some(filter) = &end.filter {
                    writeln!(out, "updates shown: those that pass {filter}")?;
                }
                Ok(())
            }
            Format::Json => {
                let doc = EntityJson {
                    display_filter: end.filter.as_deref(),
                    entity: id,
                    file,
                    profile: &end.profile,
                    refused: refused.map(RefusedJson::of),
                    schema: SCHEMA,
                    tool: Tool::THIS,
                    conversations: Vec::new(),
                };
                let mut head = serde_json::to_string(&doc).map_err(io::Error::from)?;
                open_last_list(&mut head);
                out.write_all(head.as_bytes())?;
                let open = |out: &mut W, c: u32, index: usize| {
                    let (client, server) = ends(c);
                    let n = count(c);
                    let mut text = String::from(if index > 0 { ",\n" } else { "\n" });
                    let conversation = ConversationJson {
                        id: c,
                        client: &client,
                        server: &server,
                        lives: n.lives,
                        updates: n.updates,
                        destroys: n.destroys,
                        events: Vec::new(),
                    };
                    push_json(&mut text, &conversation);
                    open_last_list(&mut text);
                    text.push('\n');
                    out.write_all(text.as_bytes())
                };
                sections.write_to(out, open, |out, _| out.write_all(b"]}"))?;
                out.write_all(b"]}\n")
            }
        }
    }
}

/// Counts a change in its conversation's figures.
fn count_change(count: &mut Counts, happened: Happened) {
    if happened.starts_life() {
        count.lives += 1;
    }
    match happened {
        Happened::Update { .. } => count.updates += 1,
        Happened::Destroy { .. } | Happened::DestroyUnknown => count.destroys += 1,
        Happened::Spawn { .. } => {}
    }
}

/// Appends `n` right-aligned in a column of `width`.
fn push_right(out: &mut String, n: u64, width: usize) {
    push_spaces(out, width.saturating_sub(decimal_len(n)));
    push_u64(out, n);
}

/// One event, rendered.
struct Line<'a, 'c> {
    change: &'a Change<'c>,
    message: &'a str,
    rel_nanos: i64,
    life: u32,
    /// The first event of its conversation's section.
    first: bool,
}

impl Line<'_, '_> {
    fn type_name(&self) -> Option<&str> {
        let archetypes = self.change.archetypes;
        self.change
            .life
            .and_then(|l| l.type_name(|t| archetypes.sprite(t)))
    }

    fn stamp(&self) -> Stamp {
        Stamp {
            frame: self.change.at.frame,
            rel_nanos: self.rel_nanos,
            tick: self.change.at.tick,
        }
    }

    fn text(&self, out: &mut String) {
        let c = self.change;
        self.stamp().text(out);
        // The event, in a column of 21.
        let event_at = out.len();
        out.push_str(c.happened.name());
        if c.happened.starts_life() {
            out.push_str(" #");
            push_u64(out, self.life.into());
        }
        let width = out[event_at..].chars().count();
        push_spaces(out, 21usize.saturating_sub(width));
        match c.gap_nanos {
            // In milliseconds, to the microsecond.
            Some(gap) => {
                out.push(' ');
                write_seconds(out, gap.saturating_mul(1000), 3, 7);
                out.push_str(" ms");
            }
            None => push_spaces(out, 11),
        }
        for FieldValue { field, value } in Changed(c.changed).latest() {
            out.push_str("  ");
            out.push_str(field.name);
            out.push('=');
            text_value(out, field, value, |_| None);
            // An enum names the type already (rt); LevelInit's sprite names it otherwise.
            if field.role == Role::EntityType && !matches!(field.display, Display::Enum(_)) {
                if let Some(type_name) = self.type_name() {
                    out.push_str(" (");
                    out.push_str(type_name);
                    out.push(')');
                }
            }
        }
        // A destroy has no gap nor fields: no padding is left at its end.
        out.truncate(out.trim_end().len());
        out.push('\n');
    }

    fn json(&self) -> EventJson<'_> {
        let c = self.change;
        EventJson {
            gap_s: c.gap_nanos.map(|g| g as f64 / 1e9),
            type_name: self.type_name(),
            changed: Changed(c.changed),
            ..self
                .stamp()
                .json(c.happened.name(), self.message, self.life)
        }
    }
}

/// Where an event is: frame, time and tick.
struct Stamp {
    frame: u64,
    rel_nanos: i64,
    tick: Option<u32>,
}

impl Stamp {
    /// The line's first columns: frame, time and tick.
    fn text(&self, out: &mut String) {
        push_right(out, self.frame, 7);
        out.push(' ');
        // As packets' time column writes it (to the microsecond, truncated).
        write_seconds(out, self.rel_nanos, 6, 10);
        out.push(' ');
        match self.tick {
            Some(tick) => push_right(out, tick.into(), 7),
            None => out.push_str("      -"),
        }
        out.push_str("  ");
    }

    /// The event, without a gap, a type or a field changed.
    fn json<'a>(&self, event: &'a str, message: &'a str, life: u32) -> EventJson<'a> {
        EventJson {
            frame: self.frame,
            time_rel: self.rel_nanos as f64 / 1e9,
            tick: self.tick,
            event,
            message,
            life,
            gap_s: None,
            type_name: None,
            changed: Changed(&[]),
            finding: None,
        }
    }
}

/// A lifecycle finding that names the entity, rendered as an event: `finding` in the event
/// column, then the rule and what it found.
struct FindingLine<'a> {
    stamp: Stamp,
    message: &'a str,
    finding: &'a Finding,
    life: u32,
    first: bool,
}

impl FindingLine<'_> {
    fn text(&self, out: &mut String) {
        self.stamp.text(out);
        out.push_str("finding");
        push_spaces(out, 21 - "finding".len() + 11);
        out.push_str("  ");
        out.push_str(self.finding.rule.id());
        out.push_str(": ");
        out.push_str(&detail(self.finding));
        out.push('\n');
    }

    fn json(&self) -> EventJson<'_> {
        let rule = self.finding.rule;
        EventJson {
            finding: Some(FindingJson {
                id: rule.id(),
                severity: rule.severity(),
                detail: detail(self.finding),
            }),
            ..self.stamp.json("finding", self.message, self.life)
        }
    }
}

/// Appends an event to its conversation's list (after a comma unless it is the `first`).
fn push_event(out: &mut String, first: bool, event: &EventJson<'_>) {
    if !first {
        out.push_str(",\n");
    }
    push_json(out, event);
}

/// The document `rtype-inspect entity FILE ID --format json` writes: the entity followed through
/// each conversation that named it (each client's view), event by event.
// The head's members are in the order serde_json's sorted maps wrote them before; the
// conversations come last, their events written as they come, in render's forms (`push_json`).
#[derive(Serialize, JsonSchema)]
#[schemars(title = "rtype-inspect entity", deny_unknown_fields)]
pub struct EntityJson<'a> {
    /// The -Y filter: only the updates that pass it are listed (spawns and destroys always are).
    display_filter: Option<&'a str>,
    #[schemars(range(max = 4294967295u32))]
    entity: u32,
    /// The capture, as named on the command line (- for standard input).
    file: &'a str,
    /// The snapshot profile the capture was read with (document for the document's table).
    profile: &'a str,
    refused: Option<RefusedJson>,
    #[schemars(extend("const" = SCHEMA))]
    schema: &'static str,
    tool: Tool,
    /// The conversations that named the entity, by id (with --conversation N, that one alone).
    conversations: Vec<ConversationJson<'a>>,
}

/// The entity in one conversation.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct ConversationJson<'a> {
    id: u32,
    client: &'a str,
    server: &'a str,
    /// Lives of the id: spawns, and updates that started a life no spawn announced.
    lives: u32,
    /// Updates, listed or not.
    updates: u64,
    destroys: u64,
    events: Vec<EventJson<'a>>,
}

/// One event of the entity, or a finding that names it.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct EventJson<'a> {
    #[schemars(range(min = 1))]
    frame: u64,
    /// Seconds since the capture's first datagram, as export's time_rel.
    time_rel: f64,
    /// The header's tick (null where the dialect's header has none: rt, rtnp).
    tick: Option<u32>,
    /// spawn-over-live: a spawn of an id alive; update-after-destroy: an update of the life a
    /// destroy ended (the client holds no entity); update-unspawned: an update that starts a
    /// life no spawn announced; destroy-again: a destroy of a life already destroyed;
    /// destroy-unknown: a destroy of an id the world does not hold. finding: a lifecycle finding
    /// that names the entity (session.entity-after-destroy, -spawned-twice, -unknown, -ghost),
    /// after the datagram it was raised at; its message is that datagram's.
    #[schemars(schema_with = "event_schema")]
    event: &'a str,
    message: &'a str,
    /// Which life of the id in the conversation (1 for the first; 0 before any).
    life: u32,
    /// Seconds since the life's previous spawn or update (null for a spawn, a destroy, or the
    /// first update of a life).
    gap_s: Option<f64>,
    /// The entity type's name: the LevelInit archetype's sprite (rtype) or the type's name in the
    /// description (rt).
    type_name: Option<&'a str>,
    /// The fields whose value changed, by name, with the new value (the entity type first when
    /// it changed); every field of a spawn.
    #[schemars(with = "std::collections::BTreeMap<String, FieldValue<'static>>")]
    changed: Changed<'a>,
    /// Only on a finding event: the finding's rule, severity and what it found.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "FindingJson")]
    finding: Option<FindingJson>,
}

/// The names an event takes: each change's, and `finding`.
fn event_schema(_: &mut SchemaGenerator) -> Schema {
    let changes = [
        Happened::Spawn { replaced: false },
        Happened::Spawn { replaced: true },
        Happened::Update {
            after_destroy: false,
            unseen: false,
        },
        Happened::Update {
            after_destroy: true,
            unseen: false,
        },
        Happened::Update {
            after_destroy: false,
            unseen: true,
        },
        Happened::Destroy { again: false },
        Happened::Destroy { again: true },
        Happened::DestroyUnknown,
    ];
    let mut names: Vec<&str> = changes.map(Happened::name).into();
    names.push("finding");
    super::names_schema(&names)
}

/// A lifecycle finding that names the entity.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct FindingJson {
    id: &'static str,
    #[schemars(schema_with = "super::severity_schema")]
    severity: Severity,
    detail: String,
}

/// The fields a change changed, as an object of their new values.
struct Changed<'a>(&'a [(&'static Field, Num)]);

impl<'a> Changed<'a> {
    /// Each field once (its last value, where a message gives a field twice).
    fn latest(&self) -> impl Iterator<Item = FieldValue<'a>> + 'a {
        let changed = self.0;
        changed.iter().enumerate().filter_map(move |(i, (f, v))| {
            let later = changed[i + 1..].iter().any(|(g, _)| g.name == f.name);
            (!later).then_some(FieldValue {
                field: f,
                value: v.value(),
            })
        })
    }
}

impl Serialize for Changed<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.latest().map(|v| (v.field.name, v)))
    }
}

impl Sink for Follow {
    type Fields = Gather;

    fn fields(&mut self) -> &mut Gather {
        self.world.fields()
    }

    fn begin(&mut self, _conversations: &Conversations, _conversation: u32) {
        self.world.begin();
    }

    fn datagram(&mut self, e: &DatagramEvent<'_>) {
        self.seen(e, true);
    }

    fn skipped(&mut self, e: &DatagramEvent<'_>) {
        self.seen(e, false);
    }

    fn loose(&mut self, f: &LooseFinding) {
        self.finding(f);
    }

    fn end(&mut self, end: &RunEnd<'_>) {
        let ends = end
            .conversations
            .all()
            .iter()
            .filter(|c| self.counts.contains_key(&c.id))
            .map(|c| (c.id, (c.client.to_string(), c.server.to_string())))
            .collect();
        self.end = Some(End {
            profile: end.profile.to_string(),
            filter: end.displayed.map(|(text, _)| text.to_string()),
            ends,
        });
    }

    fn done(&self) -> bool {
        self.sections.error.is_some()
    }
}
