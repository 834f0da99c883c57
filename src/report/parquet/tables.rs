//! The dataset's tables and their columns: the runtime's own (keys, the datagram's facts, the
//! findings, the conversations, the capture), then every described field where the registry
//! places it ([`Column`]), with its value's name and its entity's sprite beside it as the JSON
//! has them. Also the routes that take a visited field to its column.

use std::fmt::Write as _;

use super::columns::Kind;
use crate::datagram::Dialect;
use crate::proto::profile::Profile;
use crate::proto::registry::{scope_table, Column, Registry, Scope, Source, Values};
use crate::proto::schema::Role;
use crate::proto::trie::FieldTrie;
use crate::world::StateColumns;

/// One column of a table.
#[derive(Clone, Debug)]
pub struct ColumnSpec {
    pub name: String,
    pub kind: Kind,
    /// What it holds: a sentence for the runtime's columns; for described ones, generated from
    /// the filter fields it holds.
    pub about: String,
}

/// One table.
#[derive(Clone, Debug)]
pub struct Table {
    pub name: String,
    pub about: &'static str,
    pub columns: Vec<ColumnSpec>,
    /// How many of the first columns are the runtime's (keys and facts), not described fields.
    pub fixed: usize,
    /// The column of undecoded bytes (and the one before it, their offset), in tables of
    /// described fields.
    pub undecoded: Option<usize>,
}

impl Table {
    fn new(name: &str, about: &'static str, columns: &[(&str, Kind, &str)]) -> Table {
        Table {
            name: name.into(),
            about,
            columns: columns
                .iter()
                .map(|(name, kind, about)| ColumnSpec {
                    name: (*name).into(),
                    kind: *kind,
                    about: (*about).into(),
                })
                .collect(),
            fixed: columns.len(),
            undecoded: None,
        }
    }

    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    fn add(&mut self, name: String, kind: Kind, about: String) -> usize {
        self.columns.push(ColumnSpec { name, kind, about });
        self.columns.len() - 1
    }
}

/// The fixed tables, in this order (their indexes are these constants).
pub const CAPTURES: usize = 0;
pub const CONVERSATIONS: usize = 1;
pub const FINDINGS: usize = 2;
pub const DATAGRAMS: usize = 3;
pub const RTNP: usize = 4;
pub const REASSEMBLED: usize = 5;

/// Key columns of a scope's own table (one row per datagram).
const SCOPE_KEYS: &[(&str, Kind, &str)] = &[
    ("frame", Kind::I64, "the datagram's frame number"),
    ("time", Kind::Timestamp, "the datagram's capture time"),
    (
        "conversation",
        Kind::U32,
        "its conversation (`conversations.id`)",
    ),
];

/// Key columns of a repeat's items table (one row per item).
const ITEM_KEYS: &[(&str, Kind, &str)] = &[
    (
        "frame",
        Kind::I64,
        "the frame of the datagram carrying the item",
    ),
    ("time", Kind::Timestamp, "that datagram's capture time"),
    (
        "conversation",
        Kind::U32,
        "its conversation (`conversations.id`)",
    ),
    (
        "message",
        Kind::Str,
        "the message carrying the item (`datagrams.name`)",
    ),
    ("index", Kind::U32, "the item's place in its list, from 0"),
];

/// The tables of a run and the routes of its described fields.
#[derive(Clone, Debug)]
pub struct Dataset {
    pub tables: Vec<Table>,
    pub routes: Routes,
    /// rt's table (every rt datagram has a row, described message or not).
    pub rt_messages: usize,
    /// The `entity_states` table, the columns of a life's state and their names there.
    pub entity_states: usize,
    pub states: StateColumns,
    pub state_names: Vec<String>,
}

/// What a visited field sets: its column, its value's name, its entity's sprite.
#[derive(Clone, Copy, Debug, Default)]
pub struct Target {
    pub table: u16,
    pub column: u16,
    /// The column of the value's name, and the names.
    pub name: Option<(u16, Values)>,
    pub sprite: Option<u16>,
}

/// The described fields of one scope by the groups they sit in, and which lists' items are rows
/// of which table.
#[derive(Clone, Debug, Default)]
pub struct Route {
    /// The scope's own table.
    pub table: usize,
    pub trie: FieldTrie<Target>,
    /// (trie node of a list, the table of its items).
    pub lists: Vec<(usize, usize)>,
}

impl Route {
    pub fn items_table(&self, node: usize) -> Option<usize> {
        self.lists.iter().find(|l| l.0 == node).map(|l| l.1)
    }
}

/// A route per scope.
#[derive(Clone, Debug)]
pub struct Routes {
    rtype_header: Route,
    rt_header: Route,
    reassembled: Route,
    rtype: Vec<Option<Route>>,
    rt: Vec<Option<Route>>,
}

impl Routes {
    pub fn get(&self, scope: Scope) -> Option<&Route> {
        match scope {
            Scope::Header(Dialect::Rtype) => Some(&self.rtype_header),
            Scope::Header(_) => Some(&self.rt_header),
            Scope::Reassembled => Some(&self.reassembled),
            Scope::Message(Dialect::Rtype, code) => self.rtype[code as usize].as_ref(),
            Scope::Message(Dialect::Rt, code) => self.rt[code as usize].as_ref(),
            Scope::Message(Dialect::Rtnp | Dialect::Described(_), _) => None,
        }
    }

    fn get_mut(&mut self, scope: Scope) -> &mut Route {
        let slot = match scope {
            Scope::Header(Dialect::Rtype) => return &mut self.rtype_header,
            Scope::Header(_) => return &mut self.rt_header,
            Scope::Reassembled => return &mut self.reassembled,
            Scope::Message(Dialect::Rt, code) => &mut self.rt[code as usize],
            Scope::Message(_, code) => &mut self.rtype[code as usize],
        };
        slot.get_or_insert_with(Route::default)
    }
}

impl Dataset {
    /// The tables of a run decoding snapshots with `layouts`: their fields are columns too, one
    /// per name (of the first layout's type).
    pub fn new(layouts: &[Profile]) -> Dataset {
        let mut tables = fixed_tables();
        let mut routes = Routes {
            rtype_header: Route::default(),
            rt_header: Route::default(),
            reassembled: Route::default(),
            rtype: vec![None; 256],
            rt: vec![None; 256],
        };
        let registry = Registry::for_layouts(layouts);
        for field in &registry.fields {
            let (
                Some(column),
                Source::Described {
                    scope, path, decls, ..
                },
            ) = (&field.column, &field.source)
            else {
                continue;
            };
            let t = match tables.iter().position(|t| t.name == column.table) {
                Some(t) => t,
                None => {
                    let keys = if column.row_depth == 0 {
                        SCOPE_KEYS
                    } else {
                        ITEM_KEYS
                    };
                    tables.push(Table::new(&column.table, about(&column.table), keys));
                    tables.len() - 1
                }
            };
            let table = &mut tables[t];
            let name = column_name(table, column, path);
            let kind = Kind::of(field.ty);
            let c = match table.column(&name) {
                Some(c) => {
                    table.columns[c]
                        .about
                        .push_str(&format!(", `{}`", field.name));
                    c
                }
                None => table.add(
                    name.clone(),
                    kind,
                    format!("{}: `{}`", field.label, field.name),
                ),
            };
            let named = field.ty.is_integer() && !matches!(field.values, Values::None);
            let name_column = named.then(|| {
                let n = format!("{name}_name");
                let about = format!("the name of `{name}`'s value");
                table
                    .column(&n)
                    .unwrap_or_else(|| table.add(n, Kind::Str, about))
            });
            let rtype = !matches!(
                scope,
                Scope::Header(Dialect::Rt) | Scope::Message(Dialect::Rt, _)
            );
            let entity_type = decls.iter().any(|d| d.role == Role::EntityType);
            let sprite_column = (rtype && entity_type).then(|| {
                let n = match name.strip_suffix("entity_type") {
                    Some(head) => format!("{head}sprite"),
                    None => format!("{name}_sprite"),
                };
                let about =
                    format!("the sprite LevelInit gives `{name}`'s archetype in the conversation");
                table
                    .column(&n)
                    .unwrap_or_else(|| table.add(n, Kind::Str, about))
            });
            let target = Target {
                table: t as u16,
                column: c as u16,
                name: name_column.map(|n| (n as u16, field.values)),
                sprite: sprite_column.map(|s| s as u16),
            };
            let route = routes.get_mut(*scope);
            if column.row_depth == 0 {
                route.table = t;
            }
            for decl in decls {
                *route.trie.entry(path, decl) = target;
            }
            if column.row_depth > 0 {
                let mut node = crate::proto::trie::ROOT;
                for segment in &path[..column.row_depth] {
                    node = route.trie.node_for(node, segment);
                }
                if route.items_table(node).is_none() {
                    route.lists.push((node, t));
                }
            }
        }
        for (t, table) in tables.iter_mut().enumerate().skip(DATAGRAMS) {
            if t == RTNP {
                continue;
            }
            table.add(
                "undecoded_offset".into(),
                Kind::U32,
                "where the bytes the description could not interpret start".into(),
            );
            table.undecoded = Some(table.add(
                "undecoded".into(),
                Kind::Bytes,
                "those bytes (after an unknown mask bit, event type or component)".into(),
            ));
        }
        let rt_messages = routes.rt_header.table;
        let states = StateColumns::new(layouts);
        let mut table = Table::new(
            super::states::TABLE,
            super::states::ABOUT,
            super::states::KEYS,
        );
        let mut state_names = Vec::with_capacity(states.columns.len());
        for c in &states.columns {
            // A profile may name a field as a key column is named.
            let mut name = c.name.to_string();
            while table.column(&name).is_some() {
                name.push_str("_field");
            }
            let kind = if c.float { Kind::F32 } else { Kind::I64 };
            table.add(name.clone(), kind, format!("{} after the change", c.label));
            state_names.push(name);
        }
        tables.push(table);
        Dataset {
            entity_states: tables.len() - 1,
            tables,
            routes,
            rt_messages,
            states,
            state_names,
        }
    }

    /// Where an entity row's type and sprite go: the entity blocks' table's `entity_type`.
    pub fn entity_type(&self) -> Option<Target> {
        let table = self.tables.iter().position(|t| t.name == "entities")?;
        let t = &self.tables[table];
        Some(Target {
            table: table as u16,
            column: t.column("entity_type")? as u16,
            name: None,
            sprite: t.column("sprite").map(|c| c as u16),
        })
    }

    /// The tables and their columns as Markdown (docs/parquet.md's generated part).
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        for table in &self.tables {
            let _ = writeln!(out, "### `{}`\n\n{}\n", table.name, table.about);
            out.push_str("| column | type | what it holds |\n|---|---|---|\n");
            let _ = writeln!(
                out,
                "| `capture` | VARCHAR | the capture (the partition's name) |"
            );
            for c in &table.columns {
                let _ = writeln!(out, "| `{}` | {} | {} |", c.name, c.kind.sql(), c.about);
            }
            out.push('\n');
        }
        out
    }
}

/// A described field's column name in `table`: the registry's, unless a key column has it, then
/// after the segment of the group it sits in (`keyframe_time`).
fn column_name(table: &Table, column: &Column, path: &[&'static str]) -> String {
    let key = table.columns[..table.fixed]
        .iter()
        .any(|c| c.name == column.name);
    match (key, path.last()) {
        (true, Some(group)) => format!("{group}_{}", column.name),
        _ => column.name.clone(),
    }
}

/// What the tables of described fields hold.
fn about(table: &str) -> &'static str {
    match table {
        "level_events" => "One row per SERVER_LEVEL_EVENT: the event type, and the fields of its case.",
        "entities" => "One row per entity block of a SERVER_SNAPSHOT or SERVER_SNAPSHOT_CHUNK, as sent: the update mask's fields (null when the mask leaves them out); the entity type (the block's, else the one its spawn or an earlier update gave) and its archetype's sprite.",
        "archetypes" => "One row per archetype a SERVER_LEVEL_INIT announces.",
        "bosses" => "One row per boss of a SERVER_LEVEL_INIT's boss trailer (spec-notes B).",
        "keyframes" => "One row per keyframe of a set_scroll level event.",
        "reassembled_entities" => "One row per entity of a snapshot reassembled from its chunks (the chunks' entities, once more, as the client rebuilds them).",
        "rt_messages" => "One row per rt datagram: its header, and the scalar fields of its message (`<message>_<field>`).",
        "rt_entities" => "One row per entry of an rt component snapshot (transform, velocity, health, weapon, AI, animation; deltas too).",
        "rt_components" => "One row per component of an rt ENTITY_FULL_STATE.",
        _ => "One row per item of a repeated group.",
    }
}

/// The tables whose columns are the runtime's alone, and the start of the datagram tables.
fn fixed_tables() -> Vec<Table> {
    use Kind::*;
    vec![
        Table::new(
            "captures",
            "One row per capture file: where it came from, what it holds, and its summary. Written last: a capture is here only once its other tables are complete.",
            &[
                ("file", Str, "the file's path as the command line named it"),
                ("size", I64, "its size in bytes"),
                ("sha256", Str, "the SHA-256 of its bytes, in hex (as `sha256sum` prints it)"),
                ("format", Str, "`pcap` or `pcapng`"),
                ("gzip", Bool, "whether the file was gzip-compressed"),
                ("nanosecond", Bool, "whether its timestamps have nanosecond resolution"),
                ("link_types", Str, "its link types, comma-separated"),
                ("frames", I64, "frames read"),
                ("datagrams", I64, "protocol datagrams (the rows of `datagrams`)"),
                ("first_time", Timestamp, "the first frame's time"),
                ("last_time", Timestamp, "the last frame's time"),
                ("duration_s", F64, "seconds from the first frame to the last"),
                ("truncated", Bool, "whether the file is cut or corrupt (`capture.truncated`, `capture.corrupt`)"),
                ("conversations", I64, "conversations recognised"),
                ("findings", I64, "findings of every rule (the rows of `findings`)"),
                ("profile", Str, "the snapshot profile it was decoded with"),
                ("version", Str, "the rtype-inspect version that wrote it"),
                ("summary", Str, "the summary (`rtype-inspect FILE --format json`), as JSON text"),
            ],
        ),
        Table::new(
            "conversations",
            "One row per conversation: a client and a server, recognised by evidence.",
            &[
                ("id", U32, "the conversation's number in the capture, from 1"),
                ("dialect", Str, "`rtype`, `rt` or `rtnp`"),
                ("client", Str, "the client's address and port"),
                ("server", Str, "the server's address and port"),
                ("first_frame", I64, "the frame of its first datagram"),
                ("layout", Str, "the snapshot profile its snapshots were read with (rtype; `document` for the document's layout)"),
            ],
        ),
        Table::new(
            "findings",
            "One row per finding: a datagram's own (its `violations` in the JSON timeline) and those reported on their own (the session's, the capture's).",
            &[
                ("frame", I64, "the frame it is about"),
                ("conversation", U32, "its conversation (0: none)"),
                ("id", Str, "the rule's ID (`rtype-inspect violations`)"),
                ("severity", Str, "`error`, `warning` or `info`"),
                ("offset", U32, "the byte offset in the datagram (or in the file, for `capture.*`)"),
                ("detail", Str, "what was found, as the JSON timeline says it"),
                ("of_datagram", Bool, "true for a datagram's own finding, false for one reported on its own"),
                ("count", U32, "how many times it was broken there: 1 but for a rule a datagram breaks over and over (one row, the first offset and detail)"),
            ],
        ),
        Table::new(
            scope_table(Scope::Header(Dialect::Rtype)),
            "One row per protocol datagram of every dialect: where and when, its conversation, type and sizes, then rtype's header and the scalar fields of its message (`<message>_<field>`; LevelEvent's are in `level_events`, repeated groups in their own tables).",
            &[
                ("frame", I64, "its frame number"),
                ("time", Timestamp, "its capture time"),
                ("time_ns", I64, "the same in nanoseconds since the Unix epoch, exact"),
                ("time_rel", F64, "seconds since the first datagram"),
                ("src_ip", Str, "source address"),
                ("src_port", U16, "source UDP port"),
                ("dst_ip", Str, "destination address"),
                ("dst_port", U16, "destination UDP port"),
                ("conversation", U32, "its conversation (`conversations.id`)"),
                ("dialect", Str, "`rtype`, `rt` or `rtnp`"),
                ("direction", Str, "`client_to_server` or `server_to_client` (null when unknown)"),
                ("length", U32, "the UDP payload's size in bytes"),
                ("code", U8, "the message type as on the wire (rtype, rt)"),
                ("name", Str, "the message's name (rtnp: its JSON `type`)"),
                ("sequence", U32, "the header's sequence number (rtype, rt)"),
                ("tick", U32, "the header's tick (rtype)"),
                ("header_len", U8, "rtype: 17, or 15 for the older header"),
                ("compressed", Bool, "whether the payload was compressed (rtype, rt)"),
                ("crc_stored", U32, "rtype: the CRC32 footer, when it is not `crc_computed`"),
                ("crc_computed", U32, "rtype: the CRC32 computed over the datagram, when it is not `crc_stored`"),
                ("crc_ok", Bool, "rtype: whether they match"),
            ],
        ),
        Table::new(
            scope_table(Scope::Message(Dialect::Rtnp, 0)),
            "One row per rtnp datagram: its framing and its JSON message whole.",
            &[
                ("frame", I64, "the datagram's frame number"),
                ("time", Timestamp, "its capture time"),
                ("conversation", U32, "its conversation (`conversations.id`)"),
                ("framing", Str, "`envelope` (Cap'n Proto), `raw` JSON, or a `keepalive` text"),
                ("type", Str, "the JSON `type` (or the keep-alive text)"),
                ("json", Str, "the JSON message, as the JSON timeline writes it"),
                ("text", Str, "the text, when it is not JSON"),
            ],
        ),
        Table::new(
            scope_table(Scope::Reassembled),
            "One row per snapshot reassembled from its chunks, reported with the chunk that completed it; its entities are in `reassembled_entities`.",
            &[
                ("frame", I64, "the frame of the chunk that completed it"),
                ("time", Timestamp, "that chunk's capture time"),
                ("conversation", U32, "its conversation (`conversations.id`)"),
                ("tick", U32, "the snapshot's tick"),
                ("chunks", U16, "how many chunks it was sent in"),
                ("first_frame", I64, "the frame of its first chunk"),
            ],
        ),
    ]
}
