//! `rtype-inspect world FILE --at SECONDS`: the world each client held at a time, rebuilt from
//! what it received: for each conversation, each entity held (spawned or updated, not
//! destroyed) with its type, position, velocity, health and the age of its last update; and
//! where two clients of one server held an entity at one tick with other values
//! (`session.clients-disagree`). The capture is read up to that time, not further.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use super::render::{json_str, json_value, push_f64, push_u64, text_value};
use super::table;
use crate::app::{read_capture, written, Format, ReadOpts, Term};
use crate::finding::Detail;
use crate::pipeline::{RunEnd, Sink};
use crate::proto::schema::Quantity;
use crate::proto::Rule;
use crate::session::entities::IdMap;
use crate::session::event::{DatagramEvent, LooseFinding};
use crate::session::Conversations;
use crate::world::{Gather, Held, HeldValue, Life, World};

/// `rtype-inspect world`'s options, as `cli::args` parsed them.
pub struct WorldOptions {
    pub file: PathBuf,
    pub at: f64,
    pub format: Format,
    pub read: ReadOpts,
}

/// The schema of `world --format json` (docs/schemas/world.schema.json).
pub const SCHEMA: &str = "world/1";

/// The columns of the quantities, with their JSON keys.
const COLUMNS: [(Quantity, &str, &str); 5] = [
    (Quantity::PosX, "pos_x", "Pos X"),
    (Quantity::PosY, "pos_y", "Pos Y"),
    (Quantity::VelX, "vel_x", "Vel X"),
    (Quantity::VelY, "vel_y", "Vel Y"),
    (Quantity::Health, "health", "Health"),
];

/// Runs `rtype-inspect world`.
pub fn run(options: WorldOptions, term: Term) -> Result<ExitCode, String> {
    if !(options.at.is_finite() && options.at >= 0.0) {
        return Err(format!("--at {}: give seconds, 0 or more", options.at));
    }
    let reading = options.read.reading()?.for_file(&options.file)?;
    let at_nanos = (options.at * 1e9).round() as i64;
    let mut at = AtTime {
        world: World::new(None),
        at_nanos,
        first_ts: None,
        last: None,
        reached: false,
        conversations: Vec::new(),
        profile: String::new(),
        filter: None,
        ghosts: IdMap::default(),
    };
    read_capture(&options.file, &reading, &mut at)?;
    let file = options.file.display().to_string();
    let text = match options.format {
        Format::Text => at.text(&file, term),
        Format::Json => at.json(&file),
    };
    let mut out = io::stdout().lock();
    written(
        out.write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .err(),
    )
}

/// The world, read up to the time asked.
struct AtTime {
    world: World,
    at_nanos: i64,
    first_ts: Option<i64>,
    /// The last datagram taken: its frame, and its time since the first.
    last: Option<(u64, i64)>,
    /// A datagram after the time came: reading stops.
    reached: bool,
    /// Each conversation's id, client and server, at the end.
    conversations: Vec<(u32, String, String)>,
    profile: String,
    filter: Option<String>,
    /// The entities a full state left out (`session.entity-ghost`), by conversation and id:
    /// the frame of that full state (at most [`crate::world::MAX_HELD`]).
    ghosts: IdMap<(u32, u32), u64>,
}

impl AtTime {
    /// Whether `e` comes after the time asked (it is not taken, nor anything after it).
    fn past(&mut self, e: &DatagramEvent<'_>) -> bool {
        let rel = e
            .ts_nanos
            .saturating_sub(*self.first_ts.get_or_insert(e.ts_nanos));
        self.reached |= rel > self.at_nanos;
        self.reached
    }

    /// The age of a life's last update at the time asked.
    fn age_s(&self, life: &Life) -> f64 {
        let at = self.first_ts.unwrap_or(0).saturating_add(self.at_nanos);
        at.saturating_sub(life.last.ts_nanos) as f64 / 1e9
    }

    /// Each conversation's id, client, server and the lives it holds.
    fn held(&self) -> Vec<(u32, &str, &str, Vec<&Life>)> {
        self.conversations
            .iter()
            .map(|(id, client, server)| {
                let alive = self.world.held(*id).map_or(Vec::new(), Held::alive);
                (*id, client.as_str(), server.as_str(), alive)
            })
            .collect()
    }

    /// The entities conversation `conversation` holds that a full state left out during their
    /// life: id and the full state's frame, by id.
    fn ghosts(&self, conversation: u32, alive: &[&Life]) -> Vec<(u32, u64)> {
        alive
            .iter()
            .filter_map(|life| {
                let frame = *self.ghosts.get(&(conversation, life.id))?;
                (frame > life.born.frame).then_some((life.id, frame))
            })
            .collect()
    }

    fn type_name<'a>(&'a self, conversation: u32, life: &Life) -> Option<&'a str> {
        self.world.held(conversation)?.type_name(life)
    }

    fn text(&self, file: &str, term: Term) -> String {
        let mut out = String::new();
        let _ = write!(
            out,
            "{file}: the world at {:.6} s",
            self.at_nanos as f64 / 1e9
        );
        match self.last {
            Some((frame, rel)) => {
                let _ = writeln!(out, ", as of frame {frame} ({:.6} s)", rel as f64 / 1e9);
            }
            None => out.push_str(", before any datagram\n"),
        }
        for (id, client, server, alive) in self.held() {
            let _ = writeln!(
                out,
                "\nConversation #{id} ({client} ↔ {server}): {} entities held",
                alive.len()
            );
            if alive.is_empty() {
                continue;
            }
            let ghosts = self.ghosts(id, &alive);
            let mut headers = vec!["ID", "Type"];
            headers.extend(COLUMNS.iter().map(|c| c.2));
            headers.extend(["Last update", "Age"]);
            let mut t = table::new(term, &headers);
            for life in alive {
                let mut row = vec![table::cell(life.id.to_string())];
                let kind = match (life.type_id, self.type_name(id, life)) {
                    (Some(t), Some(name)) => format!("{name} ({t})"),
                    (Some(t), None) => t.to_string(),
                    (None, _) => "-".into(),
                };
                row.push(table::cell(kind));
                for (quantity, _, _) in COLUMNS {
                    let mut cell = String::new();
                    match life.measured(quantity) {
                        Some(s) => text_value(&mut cell, s.field, s.value.value(), |_| None),
                        None => cell.push('-'),
                    }
                    row.push(table::cell(cell));
                }
                row.push(table::cell(format!("frame {}", life.last.frame)));
                row.push(table::cell(format!("{:.1} ms", self.age_s(life) * 1e3)));
                t.add_row(row);
            }
            let _ = writeln!(out, "{t}");
            if !ghosts.is_empty() {
                let list: Vec<String> = ghosts
                    .iter()
                    .map(|(g, frame)| format!("{g} (frame {frame})"))
                    .collect();
                let _ = writeln!(
                    out,
                    "Held, but not in the server's full state ({}): {}",
                    Rule::SessionEntityGhost.id(),
                    list.join(", ")
                );
            }
        }
        let disagreements = self.world.disagreements();
        if !disagreements.is_empty() {
            let rule = Rule::SessionClientsDisagree;
            let _ = writeln!(
                out,
                "\nClients disagree ({}, {}):",
                rule.id(),
                rule.severity().name()
            );
            for d in disagreements {
                let _ = writeln!(
                    out,
                    "  #{} and #{} of {}: entity {} at tick {}: {} {} (frame {}) against {} (frame {})",
                    d.first.conversation,
                    d.second.conversation,
                    d.server,
                    d.id,
                    d.tick,
                    d.field,
                    d.first.value,
                    d.first.frame,
                    d.second.value,
                    d.second.frame
                );
            }
        }
        if let Some(r) = self.world.refused() {
            let _ = writeln!(
                out,
                "note: {} lives from frame {} on were not followed (the world holds {} at most)",
                r.lives,
                r.first_frame,
                crate::world::MAX_HELD
            );
        }
        if let Some(filter) = &self.filter {
            let _ = writeln!(out, "rebuilt from the datagrams that pass {filter}");
        }
        out
    }

    fn json(&self, file: &str) -> String {
        let refused = self.world.refused();
        let mut doc = serde_json::json!({
            "file": file,
            "profile": self.profile,
            "at": self.at_nanos as f64 / 1e9,
            "last_frame": self.last.map(|l| l.0),
            "display_filter": self.filter,
            "refused": refused.map(|r| serde_json::json!({"first_frame": r.first_frame, "lives": r.lives})),
            "disagreements": self.world.disagreements().iter().map(|d| {
                let held = |h: &HeldValue| serde_json::json!({
                    "conversation": h.conversation, "frame": h.frame, "value": h.value,
                });
                serde_json::json!({
                    "id": Rule::SessionClientsDisagree.id(),
                    "severity": Rule::SessionClientsDisagree.severity().name(),
                    "server": d.server.to_string(),
                    "entity": d.id,
                    "tick": d.tick,
                    "field": d.field,
                    "first": held(&d.first),
                    "second": held(&d.second),
                })
            }).collect::<Vec<_>>(),
        });
        super::stamp(&mut doc, SCHEMA);
        let mut out = serde_json::to_string(&doc).unwrap_or_default();
        out.pop();
        out.push_str(",\"conversations\":[");
        for (n, (id, client, server, alive)) in self.held().into_iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            out.push_str("\n{\"id\":");
            push_u64(&mut out, id.into());
            out.push_str(",\"client\":");
            json_str(&mut out, client);
            out.push_str(",\"server\":");
            json_str(&mut out, server);
            out.push_str(",\"ghosts\":[");
            for (i, (ghost, frame)) in self.ghosts(id, &alive).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str("{\"id\":");
                push_u64(&mut out, ghost.into());
                out.push_str(",\"full_state_frame\":");
                push_u64(&mut out, frame);
                out.push('}');
            }
            out.push_str("],\"entities\":[");
            for (i, life) in alive.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                self.entity_json(&mut out, id, life);
            }
            out.push_str("]}");
        }
        out.push_str("]}\n");
        out
    }

    fn entity_json(&self, out: &mut String, conversation: u32, life: &Life) {
        out.push_str("\n{\"id\":");
        push_u64(out, life.id.into());
        out.push_str(",\"type_id\":");
        match life.type_id {
            Some(t) => push_u64(out, t),
            None => out.push_str("null"),
        }
        out.push_str(",\"type_name\":");
        match self.type_name(conversation, life) {
            Some(name) => json_str(out, name),
            None => out.push_str("null"),
        }
        for (quantity, key, _) in COLUMNS {
            out.push_str(",\"");
            out.push_str(key);
            out.push_str("\":");
            match life.measured(quantity) {
                Some(s) => json_value(out, s.field, s.value.value()),
                None => out.push_str("null"),
            }
        }
        out.push_str(",\"spawned\":");
        out.push_str(if life.spawned { "true" } else { "false" });
        out.push_str(",\"born_frame\":");
        push_u64(out, life.born.frame);
        out.push_str(",\"last_frame\":");
        push_u64(out, life.last.frame);
        out.push_str(",\"last_tick\":");
        match life.last.tick {
            Some(t) => push_u64(out, t.into()),
            None => out.push_str("null"),
        }
        out.push_str(",\"age_s\":");
        push_f64(out, self.age_s(life));
        out.push_str(",\"fields\":[");
        for (i, slot) in life.slots().iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str("{\"name\":");
            json_str(out, slot.field.name);
            out.push_str(",\"value\":");
            json_value(out, slot.field, slot.value.value());
            out.push_str(",\"changed_frame\":");
            push_u64(out, slot.changed.frame);
            out.push_str(",\"changed_tick\":");
            match slot.changed.tick {
                Some(t) => push_u64(out, t.into()),
                None => out.push_str("null"),
            }
            out.push('}');
        }
        out.push_str("]}");
    }
}

impl Sink for AtTime {
    type Fields = Gather;

    fn fields(&mut self) -> &mut Gather {
        self.world.fields()
    }

    fn begin(&mut self, conversations: &Conversations, conversation: u32) {
        self.world.begin();
        self.world.compare(conversations, conversation);
    }

    fn datagram(&mut self, e: &DatagramEvent<'_>) {
        if self.past(e) {
            return;
        }
        let first = self.first_ts.unwrap_or(e.ts_nanos);
        self.last = Some((e.frame, e.ts_nanos.saturating_sub(first)));
        self.world.apply(e, |_| {});
    }

    /// The display filter did not pass it: the world is rebuilt from those it passes.
    fn skipped(&mut self, e: &DatagramEvent<'_>) {
        self.past(e);
    }

    fn loose(&mut self, f: &LooseFinding) {
        let Detail::Value(id) = f.finding.detail else {
            return;
        };
        let key = (f.conversation, id as u32);
        let room = self.ghosts.len() < crate::world::MAX_HELD || self.ghosts.contains_key(&key);
        if f.finding.rule == Rule::SessionEntityGhost && !self.reached && room {
            self.ghosts.insert(key, f.frame);
        }
    }

    fn end(&mut self, end: &RunEnd<'_>) {
        self.conversations = end
            .conversations
            .all()
            .iter()
            .map(|c| (c.id, c.client.to_string(), c.server.to_string()))
            .collect();
        self.profile = end.profile.to_string();
        self.filter = end.displayed.map(|(text, _)| text.to_string());
    }

    fn done(&self) -> bool {
        self.reached
    }
}
