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

use super::render::{
    decimal_len, detail, json_str, json_value, push_f64, push_spaces, push_u64, text_value,
};
use super::sections::Sections;
use super::time::write_seconds;
use crate::app::{read_capture, written, Format, ReadOpts};
use crate::finding::{Detail, Finding};
use crate::message::Value;
use crate::pipeline::{RunEnd, Sink};
use crate::proto::schema::{Display, Role};
use crate::proto::Rule;
use crate::session::entities::IdMap;
use crate::session::event::{DatagramEvent, LooseFinding};
use crate::session::Conversations;
use crate::world::{Change, Gather, Happened, World};

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
                Format::Json => line.json(out),
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
                Format::Json => line.json(out),
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
                let mut doc = serde_json::json!({
                    "file": file,
                    "profile": end.profile,
                    "entity": id,
                    "display_filter": end.filter,
                    "refused": refused.map(|r| serde_json::json!({"first_frame": r.first_frame, "lives": r.lives})),
                });
                super::stamp(&mut doc, SCHEMA);
                let mut head = serde_json::to_string(&doc).map_err(io::Error::from)?;
                head.pop();
                head.push_str(",\"conversations\":[");
                out.write_all(head.as_bytes())?;
                let open = |out: &mut W, c: u32, index: usize| {
                    let (client, server) = ends(c);
                    let n = count(c);
                    let mut text = String::new();
                    if index > 0 {
                        text.push(',');
                    }
                    text.push_str("\n{\"id\":");
                    push_u64(&mut text, c.into());
                    text.push_str(",\"client\":");
                    json_str(&mut text, &client);
                    text.push_str(",\"server\":");
                    json_str(&mut text, &server);
                    for (key, value) in [
                        ("lives", u64::from(n.lives)),
                        ("updates", n.updates),
                        ("destroys", n.destroys),
                    ] {
                        text.push_str(",\"");
                        text.push_str(key);
                        text.push_str("\":");
                        push_u64(&mut text, value);
                    }
                    text.push_str(",\"events\":[\n");
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
    /// The fields that changed, each once (its last value, where a message gives a field twice).
    fn changed(&self) -> impl Iterator<Item = (usize, &'static str, Value<'static>)> + '_ {
        let changed = self.change.changed;
        changed.iter().enumerate().filter_map(move |(i, (f, v))| {
            let later = changed[i + 1..].iter().any(|(g, _)| g.name == f.name);
            (!later).then_some((i, f.name, v.value()))
        })
    }

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
        for (i, name, value) in self.changed() {
            out.push_str("  ");
            out.push_str(name);
            out.push('=');
            let field = c.changed[i].0;
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

    fn json(&self, out: &mut String) {
        let c = self.change;
        self.stamp()
            .json(out, self.first, c.happened.name(), self.message, self.life);
        out.push_str(",\"gap_s\":");
        match c.gap_nanos {
            Some(g) => push_f64(out, g as f64 / 1e9),
            None => out.push_str("null"),
        }
        out.push_str(",\"type_name\":");
        match self.type_name() {
            Some(name) => json_str(out, name),
            None => out.push_str("null"),
        }
        out.push_str(",\"changed\":{");
        for (n, (i, name, value)) in self.changed().enumerate() {
            if n > 0 {
                out.push(',');
            }
            json_str(out, name);
            out.push(':');
            json_value(out, c.changed[i].0, value);
        }
        out.push_str("}}");
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

    /// The event object's first members, through `life` (after a comma unless `first`).
    fn json(&self, out: &mut String, first: bool, event: &str, message: &str, life: u32) {
        if !first {
            out.push_str(",\n");
        }
        out.push_str("{\"frame\":");
        push_u64(out, self.frame);
        out.push_str(",\"time_rel\":");
        push_f64(out, self.rel_nanos as f64 / 1e9);
        out.push_str(",\"tick\":");
        match self.tick {
            Some(t) => push_u64(out, t.into()),
            None => out.push_str("null"),
        }
        out.push_str(",\"event\":");
        json_str(out, event);
        out.push_str(",\"message\":");
        json_str(out, message);
        out.push_str(",\"life\":");
        push_u64(out, life.into());
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

    fn json(&self, out: &mut String) {
        self.stamp
            .json(out, self.first, "finding", self.message, self.life);
        out.push_str(",\"gap_s\":null,\"type_name\":null,\"changed\":{},\"finding\":{\"id\":");
        json_str(out, self.finding.rule.id());
        out.push_str(",\"severity\":");
        json_str(out, self.finding.rule.severity().name());
        out.push_str(",\"detail\":");
        json_str(out, &detail(self.finding));
        out.push_str("}}");
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
