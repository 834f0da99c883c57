//! `rtype-inspect world FILE --at SECONDS`: the world each client held at a time, rebuilt from
//! what it received: for each conversation, each entity held (spawned or updated, not
//! destroyed) with its type, position, velocity, health and the age of its last update; and
//! where two clients of one server held an entity at one tick with other values
//! (`session.clients-disagree`). The capture is read up to that time, not further.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use schemars::JsonSchema;
use serde::Serialize;

use super::render::{open_last_list, push_json, text_value, FieldValue};
use super::{table, Tool};
use crate::app::{read_capture, written, Format, ReadOpts, Term};
use crate::finding::Detail;
use crate::pipeline::{RunEnd, Sink};
use crate::proto::schema::Quantity;
use crate::proto::{Rule, Severity};
use crate::session::entities::IdMap;
use crate::session::event::{DatagramEvent, LooseFinding};
use crate::session::Conversations;
use crate::world::{Disagreement, Gather, Held, HeldValue, Life, Refused, World};

/// `rtype-inspect world`'s options, as `cli::args` parsed them.
pub struct WorldOptions {
    pub file: PathBuf,
    pub at: f64,
    pub format: Format,
    pub read: ReadOpts,
}

/// The schema of `world --format json` (docs/schemas/world.schema.json).
pub const SCHEMA: &str = "world/1";

/// The columns of the quantities.
const COLUMNS: [(Quantity, &str); 5] = [
    (Quantity::PosX, "Pos X"),
    (Quantity::PosY, "Pos Y"),
    (Quantity::VelX, "Vel X"),
    (Quantity::VelY, "Vel Y"),
    (Quantity::Health, "Health"),
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
            headers.extend(COLUMNS.iter().map(|c| c.1));
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
                for (quantity, _) in COLUMNS {
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
        let doc = WorldJson {
            at: self.at_nanos as f64 / 1e9,
            disagreements: (self.world.disagreements().iter())
                .map(DisagreementJson::of)
                .collect(),
            display_filter: self.filter.as_deref(),
            file,
            last_frame: self.last.map(|l| l.0),
            profile: &self.profile,
            refused: self.world.refused().map(RefusedJson::of),
            schema: SCHEMA,
            tool: Tool::THIS,
            conversations: Vec::new(),
        };
        let mut out = serde_json::to_string(&doc).unwrap_or_default();
        open_last_list(&mut out);
        for (n, (id, client, server, alive)) in self.held().into_iter().enumerate() {
            out.push_str(if n > 0 { ",\n" } else { "\n" });
            let ghosts = self.ghosts(id, &alive);
            let conversation = ConversationJson {
                id,
                client,
                server,
                ghosts: (ghosts.into_iter())
                    .map(|(id, full_state_frame)| GhostJson {
                        id,
                        full_state_frame,
                    })
                    .collect(),
                entities: Vec::new(),
            };
            push_json(&mut out, &conversation);
            open_last_list(&mut out);
            for (i, life) in alive.into_iter().enumerate() {
                out.push_str(if i > 0 { ",\n" } else { "\n" });
                push_json(&mut out, &self.entity_json(id, life));
            }
            out.push_str("]}");
        }
        out.push_str("]}\n");
        out
    }

    fn entity_json<'a>(&'a self, conversation: u32, life: &'a Life) -> EntityJson<'a> {
        let quantity = |q: Quantity| {
            (life.measured(q)).map(|s| FieldValue {
                field: s.field,
                value: s.value.value(),
            })
        };
        EntityJson {
            id: life.id,
            type_id: life.type_id,
            type_name: self.type_name(conversation, life),
            pos_x: quantity(Quantity::PosX),
            pos_y: quantity(Quantity::PosY),
            vel_x: quantity(Quantity::VelX),
            vel_y: quantity(Quantity::VelY),
            health: quantity(Quantity::Health),
            spawned: life.spawned,
            born_frame: life.born.frame,
            last_frame: life.last.frame,
            last_tick: life.last.tick,
            age_s: self.age_s(life),
            fields: (life.slots().iter())
                .map(|slot| SlotJson {
                    name: slot.field.name,
                    value: FieldValue {
                        field: slot.field,
                        value: slot.value.value(),
                    },
                    changed_frame: slot.changed.frame,
                    changed_tick: slot.changed.tick,
                })
                .collect(),
        }
    }
}

/// The document `rtype-inspect world FILE --at SECONDS --format json` writes: for each
/// conversation, the entities its client held at that time, rebuilt from what it received.
// The head's members are in the order serde_json's sorted maps wrote them before; the
// conversations come last, each written as it is made, in render's forms (`push_json`).
#[derive(Serialize, JsonSchema)]
#[schemars(title = "rtype-inspect world", deny_unknown_fields)]
pub struct WorldJson<'a> {
    /// The time asked, in seconds since the first datagram.
    #[schemars(range(min = 0))]
    at: f64,
    /// session.clients-disagree: for each pair of conversations of one server, the first tick
    /// (up to the time asked) at which the snapshots of that tick gave one entity another
    /// position, velocity or health (beyond the layouts' quantisation when they differ).
    disagreements: Vec<DisagreementJson>,
    /// The -Y filter: the world is rebuilt from the datagrams it passes.
    display_filter: Option<&'a str>,
    /// The capture, as named on the command line (- for standard input).
    file: &'a str,
    /// The last datagram taken (at or before the time); null when none was.
    last_frame: Option<u64>,
    profile: &'a str,
    refused: Option<RefusedJson>,
    #[schemars(extend("const" = SCHEMA))]
    schema: &'static str,
    tool: Tool,
    conversations: Vec<ConversationJson<'a>>,
}

/// Lives not followed because the world held as many as it holds at most (65,536 over all
/// conversations): how many, and the frame of the first; null when none was refused.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct RefusedJson {
    first_frame: u64,
    #[schemars(range(min = 1))]
    lives: u64,
}

impl RefusedJson {
    pub(crate) fn of(refused: Refused) -> RefusedJson {
        RefusedJson {
            first_frame: refused.first_frame,
            lives: refused.lives,
        }
    }
}

/// Two clients of one server held an entity at one tick with other values.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct DisagreementJson {
    entity: u32,
    /// The field of the second conversation's snapshot.
    field: &'static str,
    /// The conversation whose snapshot of the tick came first.
    first: HeldJson,
    #[schemars(extend("const" = Rule::SessionClientsDisagree.id()))]
    id: &'static str,
    /// The conversation whose snapshot of the tick gave another value.
    second: HeldJson,
    server: String,
    #[schemars(schema_with = "super::severity_schema")]
    severity: Severity,
    /// The server tick: the header's, else its sequence number (rt's component snapshots).
    tick: u32,
}

impl DisagreementJson {
    fn of(d: &Disagreement) -> DisagreementJson {
        let rule = Rule::SessionClientsDisagree;
        DisagreementJson {
            entity: d.id,
            field: d.field,
            first: HeldJson::of(&d.first),
            id: rule.id(),
            second: HeldJson::of(&d.second),
            server: d.server.to_string(),
            severity: rule.severity(),
            tick: d.tick,
        }
    }
}

/// What one conversation's snapshot of the tick carried.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct HeldJson {
    conversation: u32,
    /// The frame whose snapshot carried the value.
    #[schemars(range(min = 1))]
    frame: u64,
    value: f64,
}

impl HeldJson {
    fn of(held: &HeldValue) -> HeldJson {
        HeldJson {
            conversation: held.conversation,
            frame: held.frame,
            value: held.value,
        }
    }
}

/// One conversation's world.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct ConversationJson<'a> {
    id: u32,
    client: &'a str,
    server: &'a str,
    /// The entities the client holds that a full state of the server left out during their life
    /// (session.entity-ghost): the client draws what the server no longer has.
    ghosts: Vec<GhostJson>,
    /// The entities held (spawned, or updated without a spawn, and not destroyed), by id.
    entities: Vec<EntityJson<'a>>,
}

/// An entity a full state left out.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct GhostJson {
    id: u32,
    /// The last datagram of the full state that left it out.
    #[schemars(range(min = 1))]
    full_state_frame: u64,
}

/// An entity held, with its last values.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct EntityJson<'a> {
    id: u32,
    type_id: Option<u64>,
    type_name: Option<&'a str>,
    pos_x: Option<FieldValue<'a>>,
    pos_y: Option<FieldValue<'a>>,
    vel_x: Option<FieldValue<'a>>,
    vel_y: Option<FieldValue<'a>>,
    health: Option<FieldValue<'a>>,
    /// Whether a spawn started this life (else its first update did).
    spawned: bool,
    #[schemars(range(min = 1))]
    born_frame: u64,
    /// Its last spawn or update.
    #[schemars(range(min = 1))]
    last_frame: u64,
    last_tick: Option<u32>,
    /// Seconds from its last spawn or update to the time asked.
    age_s: f64,
    /// Every field the life holds, in the order they first came: its last value, and the frame
    /// and tick (the header's) of the datagram that last changed it. A quantity both a spawn and
    /// a snapshot carry is one field, named as the last message that set it named it.
    fields: Vec<SlotJson<'a>>,
}

/// A field of a life: its last value, and when it last changed.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct SlotJson<'a> {
    name: &'static str,
    value: FieldValue<'a>,
    #[schemars(range(min = 1))]
    changed_frame: u64,
    changed_tick: Option<u32>,
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
