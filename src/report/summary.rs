//! The default report: what the capture holds, message counts per type and direction, and the
//! findings per rule, as text tables or as the `summary/1` document. [`crate::tally::summary`]
//! counts them while the pipeline runs.

use std::fmt::Write as _;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde_json::Value as Json;

use super::{names_schema, table, Tool};
use crate::app::Term;
use crate::proto::{Direction, Severity};
use crate::session::event::FrameCounts;

/// The counts this report renders, and the message rows it lists at most: counted in
/// [`crate::tally::summary`], named here too for the callers that run the summary.
pub use crate::tally::summary::{Summary, MAX_MESSAGE_ROWS};

/// The schema of the summary's JSON (docs/schemas/summary.schema.json).
pub const SCHEMA: &str = "summary/1";

/// The document `rtype-inspect FILE --format json` (the summary) writes: the capture, its
/// conversations, message counts per type and direction, and the violations found.
// The fields of each struct are in the order serde_json's sorted maps wrote them before.
#[derive(Serialize, JsonSchema)]
#[schemars(title = "rtype-inspect summary", deny_unknown_fields)]
pub struct SummaryDocument<'a> {
    capture: Capture<'a>,
    compressed_payloads: u64,
    config_file: Option<&'a str>,
    conversations: Vec<ConversationJson<'a>>,
    counts: Counts,
    crc_failures: u64,
    /// With a display filter (-Y): the tables count only the datagrams it passed.
    #[serde(skip_serializing_if = "Option::is_none")]
    display_filter: Option<DisplayFilter<'a>>,
    /// The capture, as named on the command line (- for standard input).
    file: &'a str,
    messages: Vec<MessageJson>,
    /// The snapshot field profile every rtype conversation was read with, or `mixed` when they
    /// were read with several (each conversation's `layout` says which).
    profile: &'a str,
    /// Without --profile: the bundled profile whose layout fits the snapshots that could not be
    /// decoded.
    profile_hint: Option<ProfileHint<'a>>,
    #[schemars(extend("const" = SCHEMA))]
    schema: &'static str,
    snapshots_reassembled: u64,
    tool: Tool,
    violations: Vec<Violation>,
}

/// The capture file.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Capture<'a> {
    duration_s: f64,
    /// RFC 3339, UTC, nanoseconds.
    first_time: Option<String>,
    #[schemars(schema_with = "format_schema")]
    format: String,
    frames: u64,
    gzip: bool,
    /// The link types of the capture's interfaces: a decoded one by its short name (ethernet,
    /// linux_sll), one not decoded as "link type N (NAME)" with tcpdump's LINKTYPE_ name when
    /// it has one.
    link_types: Vec<String>,
    /// -c N stopped the run after N datagrams (absent when it read the whole capture).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64", range(min = 1))]
    stopped_after: Option<u64>,
    truncated: Option<Truncated<'a>>,
}

/// The schema of a capture format: its names.
fn format_schema(_: &mut SchemaGenerator) -> Schema {
    names_schema(&["pcap", "pcapng"])
}

/// Where and why reading stopped before the end of the file.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Truncated<'a> {
    /// Corrupt there, as opposed to cut short.
    corrupt: bool,
    /// The packet record cut or corrupt there; null when the block there is not a packet's.
    #[schemars(range(min = 1))]
    frame: Option<u64>,
    /// Byte offset (in the decompressed stream) where the cut record or block starts.
    offset: u64,
    reason: &'a str,
}

/// One conversation: a client and the server it talks to.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct ConversationJson<'a> {
    client: String,
    /// The dialect's name: rtype, rt, rtnp, or a described dialect's id.
    dialect: &'static str,
    first_frame: u64,
    id: u32,
    /// rtype: the snapshot profile its snapshots were read with (document for the document's
    /// layout).
    #[serde(skip_serializing_if = "Option::is_none")]
    layout: Option<&'a str>,
    server: String,
}

/// Frames by what became of them.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Counts {
    datagrams: u64,
    frames: u64,
    malformed: u64,
    not_udp: u64,
    other_udp: u64,
    reassembled_fragments: u64,
    udp: u64,
    /// Frames not decoded: a link type not decoded, or an interface the file never describes
    /// (the text says "N not decoded").
    unsupported_link: u64,
}

impl From<FrameCounts> for Counts {
    fn from(c: FrameCounts) -> Counts {
        Counts {
            datagrams: c.datagrams,
            frames: c.frames,
            malformed: c.malformed,
            not_udp: c.not_udp,
            other_udp: c.other_udp,
            reassembled_fragments: c.reassembled_fragments,
            udp: c.udp,
            unsupported_link: c.unsupported_link,
        }
    }
}

/// The display filter and how many datagrams it passed.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct DisplayFilter<'a> {
    datagrams: u64,
    expression: &'a str,
}

/// Datagrams of one message type in one direction.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct MessageJson {
    /// The message type's code (null for rtnp's JSON messages, named by their type, and for
    /// the row of further types).
    code: Option<u8>,
    count: u64,
    /// The dialect's name: rtype, rt, rtnp, or a described dialect's id.
    dialect: &'static str,
    #[schemars(schema_with = "direction_schema")]
    direction: &'static str,
    name: String,
}

/// The schema of a message's direction: its names, or unknown.
fn direction_schema(_: &mut SchemaGenerator) -> Schema {
    names_schema(&[
        Direction::ClientToServer.name(),
        Direction::ServerToClient.name(),
        "unknown",
    ])
}

/// The findings of one rule.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Violation {
    count: u64,
    first_frame: u64,
    id: &'static str,
    /// The protocol document and section the rule comes from.
    section: &'static str,
    #[schemars(schema_with = "super::severity_schema")]
    severity: Severity,
    summary: &'static str,
}

/// The bundled profile that decodes the failing snapshots.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct ProfileHint<'a> {
    profile: &'a str,
    snapshots_probed: u32,
}

impl Summary {
    /// The summary/1 document of the capture named `file` (after the run).
    pub fn document<'a>(&'a self, file: &'a str) -> SummaryDocument<'a> {
        let end = self.ending();
        let seconds = match (end.first_ts, end.last_ts) {
            (Some(a), Some(b)) => b.saturating_sub(a) as f64 / 1e9,
            _ => 0.0,
        };
        let conversations = end.conversations.iter().map(|c| ConversationJson {
            client: c.client.to_string(),
            dialect: c.dialect.name(),
            first_frame: c.first_frame,
            id: c.id,
            layout: c.layout.as_deref(),
            server: c.server.to_string(),
        });
        let violations = self.rules.present().into_iter().map(|(rule, c)| {
            let i = rule.info();
            Violation {
                count: c.count,
                first_frame: c.first_frame,
                id: i.id,
                section: i.section,
                severity: i.severity,
                summary: i.summary,
            }
        });
        SummaryDocument {
            capture: Capture {
                duration_s: seconds,
                first_time: end.first_ts.map(super::time::rfc3339),
                format: end.info.format.to_string(),
                frames: end.frames,
                gzip: end.info.gzip,
                link_types: end
                    .info
                    .link_types
                    .iter()
                    .map(|l| l.label().into())
                    .collect(),
                stopped_after: end.stopped_after,
                truncated: end.truncated.as_ref().map(|t| Truncated {
                    corrupt: t.corrupt,
                    frame: t.frame,
                    offset: t.offset,
                    reason: &t.reason,
                }),
            },
            compressed_payloads: self.compressed,
            config_file: end.config_file.as_deref(),
            conversations: conversations.collect(),
            counts: end.counts.into(),
            crc_failures: self.crc_failures,
            display_filter: (end.displayed.as_ref()).map(|(expression, datagrams)| DisplayFilter {
                datagrams: *datagrams,
                expression,
            }),
            file,
            messages: (self.messages().into_iter())
                .map(|m| MessageJson {
                    code: m.code,
                    count: m.count,
                    dialect: m.dialect.name(),
                    direction: m.direction.map_or("unknown", Direction::name),
                    name: m.name,
                })
                .collect(),
            profile: &end.profile,
            profile_hint: self.hint.suggestion().map(|(profile, probed)| ProfileHint {
                profile: &profile.name,
                snapshots_probed: probed,
            }),
            schema: SCHEMA,
            snapshots_reassembled: end.snapshots_reassembled,
            tool: Tool::THIS,
            violations: violations.collect(),
        }
    }

    /// The summary as the export and the Parquet file embed it: the document without the stamp
    /// (schema, tool, file) of its own.
    pub fn json(&self) -> Json {
        let mut json = serde_json::to_value(self.document("")).unwrap_or_default();
        if let Some(members) = json.as_object_mut() {
            for stamp in ["file", "schema", "tool"] {
                members.remove(stamp);
            }
        }
        json
    }

    /// The summary as text tables that fit the terminal.
    pub fn text(&self, path: &str, term: Term) -> String {
        let d = self.document(path);
        let (cap, counts) = (&d.capture, &d.counts);
        let mut out = String::new();
        let truncated = match (&cap.truncated, cap.stopped_after) {
            (None, None) => "complete".to_string(),
            (None, Some(n)) => format!("stopped after {n} datagrams (-c {n})"),
            (Some(t), _) => format!(
                "{} at {}: {}",
                if t.corrupt { "CORRUPT" } else { "TRUNCATED" },
                match t.frame {
                    None => format!("byte offset {}", t.offset),
                    Some(frame) => format!("frame {frame} (byte offset {})", t.offset),
                },
                t.reason
            ),
        };
        // A pcapng file may describe no interface (before a corrupt block, or at all).
        let links = match cap.link_types.is_empty() {
            true => "no interface".to_string(),
            false => cap.link_types.join(", "),
        };
        let _ = writeln!(
            out,
            "{path}: {}{} ({links}), {} frames over {:.3} s, {truncated}",
            cap.format,
            if cap.gzip { ".gz" } else { "" },
            cap.frames,
            cap.duration_s,
        );
        let settings = serde_json::json!({"config_file": d.config_file, "profile": d.profile});
        if let Some(line) = super::render::settings_line(&settings) {
            let _ = writeln!(out, "{line}");
        }
        // Frames of a link type we do not decode are neither UDP nor not: counted apart.
        let not_decoded = match counts.unsupported_link {
            0 => String::new(),
            n => format!(", {n} not decoded"),
        };
        let _ = writeln!(
            out,
            "{} protocol datagrams, {} other UDP, {} not UDP, {} malformed{not_decoded}\n\
             {} CRC failures, {} compressed payloads, {} snapshots reassembled",
            counts.datagrams,
            counts.other_udp,
            counts.not_udp,
            counts.malformed,
            d.crc_failures,
            d.compressed_payloads,
            d.snapshots_reassembled,
        );
        if let Some(filter) = &d.display_filter {
            let _ = writeln!(
                out,
                "{} datagrams match the display filter {}; the tables count only those",
                filter.datagrams, filter.expression,
            );
        }
        let convs = &d.conversations;
        let _ = writeln!(out, "\nConversations: {}", convs.len());
        // Conversations read with several snapshot profiles: each says its own.
        let mixed = d.profile == crate::pipeline::MIXED_LAYOUTS;
        let mut head = vec!["#", "Client", "Server", "First frame"];
        head.extend(mixed.then_some("Layout"));
        let mut t = table::new(term, &head);
        for c in convs.iter().take(50) {
            let mut row = vec![
                c.id.to_string(),
                c.client.clone(),
                c.server.clone(),
                c.first_frame.to_string(),
            ];
            // A conversation of another dialect has no layout: the cell says null.
            row.extend(mixed.then(|| c.layout.unwrap_or("null").to_owned()));
            t.add_row(row);
        }
        if !convs.is_empty() {
            let _ = writeln!(out, "{t}");
        }
        let mut t = table::new(term, &["Dialect", "Direction", "Code", "Message", "Count"]);
        for m in &d.messages {
            let dir = match m.direction {
                "client_to_server" => "C→S",
                "server_to_client" => "S→C",
                _ => "?",
            };
            let code = m.code.map_or_else(String::new, |c| format!("0x{c:02X}"));
            t.add_row(vec![
                m.dialect.into(),
                dir.into(),
                code,
                m.name.clone(),
                m.count.to_string(),
            ]);
        }
        let _ = writeln!(out, "\nMessages\n{t}");
        if d.violations.is_empty() {
            let _ = writeln!(out, "\nNo violations.");
        } else {
            let mut t = table::new(
                term,
                &[
                    "Violation",
                    "Severity",
                    "Count",
                    "First",
                    "What (document section)",
                ],
            );
            table::keep_whole(&mut t, 0);
            for v in &d.violations {
                t.add_row(vec![
                    table::cell(v.id),
                    table::severity_cell(v.severity, term),
                    table::cell(v.count.to_string()),
                    table::cell(v.first_frame.to_string()),
                    table::cell(format!("{} ({})", v.summary, v.section)),
                ]);
            }
            let _ = writeln!(out, "\nViolations\n{t}");
        }
        if let Some(hint) = &d.profile_hint {
            let name = hint.profile;
            let _ = writeln!(
                out,
                "\nSnapshots fail to decode with this layout, but the {} tried all fit the bundled \
                 profile {name}: --profile {name}",
                hint.snapshots_probed
            );
        }
        out
    }
}
