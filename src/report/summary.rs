//! The default report: what the capture holds, message counts per type and direction, and the
//! findings per rule.

use std::fmt::Write as _;

use serde_json::{json, Value as Json};

use super::table;
use crate::app::Term;
use crate::datagram::Dialect;
use crate::finding::Finding;
use crate::message::NoFields;
use crate::pipeline::{RunEnd, Sink};
use crate::proto::{Direction, Rule, Severity};
use crate::session::event::{DatagramEvent, FrameCounts, LooseFinding};

/// Occurrences of one rule.
#[derive(Clone, Copy, Debug, Default)]
pub struct RuleCount {
    pub count: u64,
    pub first_frame: u64,
}

/// Frames remembered per rule (for `check`'s lists of where a rule broke); the count goes on.
pub const MAX_FRAMES: usize = 20;

/// Findings per rule, in catalog order, with the first [`MAX_FRAMES`] distinct frames of each.
/// Empty until the first finding: `check` holds one per capture until its report, and most
/// captures of a large directory have none.
#[derive(Clone, Debug, Default)]
pub struct RuleCounts {
    counts: Vec<RuleCount>,
    frames: Vec<Vec<u64>>,
}

impl RuleCounts {
    pub fn add(&mut self, rule: Rule, frame: u64) {
        self.add_finding(&Finding::new(rule, 0, crate::finding::Detail::None), frame);
    }
    /// Counts a finding: a datagram's finding of a rule broken `count` times counts `count`.
    pub fn add_finding(&mut self, finding: &Finding, frame: u64) {
        if self.counts.is_empty() {
            self.counts = vec![RuleCount::default(); Rule::all().len()];
            self.frames = vec![Vec::new(); Rule::all().len()];
        }
        let rule = finding.rule;
        let c = &mut self.counts[rule.index()];
        if c.count == 0 {
            c.first_frame = frame;
        }
        c.count += u64::from(finding.count);
        let frames = &mut self.frames[rule.index()];
        if frames.len() < MAX_FRAMES && frames.last() != Some(&frame) {
            frames.push(frame);
        }
    }
    /// Rules with at least one finding, most severe first, then by ID.
    pub fn present(&self) -> Vec<(Rule, RuleCount)> {
        let mut v: Vec<_> = Rule::all()
            .iter()
            .map(|r| (*r, self.get(*r)))
            .filter(|(_, c)| c.count > 0)
            .collect();
        v.sort_by(|a, b| {
            b.0.severity()
                .cmp(&a.0.severity())
                .then(a.0.id().cmp(b.0.id()))
        });
        v
    }
    pub fn get(&self, rule: Rule) -> RuleCount {
        self.counts.get(rule.index()).copied().unwrap_or_default()
    }
    /// The first distinct frames (at most [`MAX_FRAMES`]) where `rule` broke.
    pub fn frames(&self, rule: Rule) -> &[u64] {
        self.frames.get(rule.index()).map_or(&[], |f| f)
    }
}

/// Distinct message types listed; datagrams of further types (rtnp names its types in text, so a
/// hostile capture can bring millions) are counted in one row per dialect and direction.
pub const MAX_MESSAGE_ROWS: usize = 1024;
/// The name of that row.
pub const OTHER_TYPES: &str = "(other types)";

/// Datagrams of one message type in one direction.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct MessageCount {
    dialect: Dialect,
    direction: Option<Direction>,
    code: Option<u8>,
    name: String,
    count: u64,
}

/// The schema of the summary's JSON (docs/schemas/summary.schema.json).
pub const SCHEMA: &str = "summary/1";

/// Builds the summary while the pipeline runs.
#[derive(Default)]
pub struct Summary {
    /// Few distinct types exist, so a list searched from the last hit beats a map.
    messages: Vec<MessageCount>,
    last: usize,
    pub rules: RuleCounts,
    crc_failures: u64,
    compressed: u64,
    json: Option<Json>,
    no_fields: NoFields,
    hint: super::profile_hint::ProfileHint,
    /// `-c N`: the run stops after N datagrams, which the summary says when it did.
    pub limit: Option<u64>,
}

impl Sink for Summary {
    type Fields = NoFields;
    fn fields(&mut self) -> &mut NoFields {
        &mut self.no_fields
    }
    fn datagram(&mut self, e: &DatagramEvent<'_>) {
        let same = |m: &MessageCount| {
            m.code == e.code
                && m.direction == e.direction
                && m.dialect == e.dialect
                && m.name == e.name
        };
        match self
            .messages
            .get(self.last)
            .filter(|m| same(m))
            .map(|_| self.last)
            .or_else(|| self.messages.iter().position(same))
        {
            Some(i) => {
                self.messages[i].count += 1;
                self.last = i;
            }
            None if self.messages.len() >= MAX_MESSAGE_ROWS => {
                let other = |m: &MessageCount| {
                    m.code.is_none()
                        && m.direction == e.direction
                        && m.dialect == e.dialect
                        && m.name == OTHER_TYPES
                };
                match self.messages.iter().position(other) {
                    Some(i) => self.messages[i].count += 1,
                    None => {
                        let (dialect, direction, name) =
                            (e.dialect, e.direction, OTHER_TYPES.to_owned());
                        self.messages.push(MessageCount {
                            dialect,
                            direction,
                            code: None,
                            name,
                            count: 1,
                        });
                    }
                }
            }
            None => {
                let (dialect, direction, code, name) =
                    (e.dialect, e.direction, e.code, e.name.to_owned());
                self.messages.push(MessageCount {
                    dialect,
                    direction,
                    code,
                    name,
                    count: 1,
                });
            }
        }
        self.hint.datagram(e);
        self.crc_failures += u64::from(e.crc_failed());
        self.compressed += u64::from(e.compressed());
        for f in e.findings {
            self.rules.add_finding(f, e.frame);
        }
    }
    fn loose(&mut self, f: &LooseFinding) {
        self.rules.add_finding(&f.finding, f.frame);
    }
    fn end(&mut self, end: &RunEnd<'_>) {
        self.json = Some(self.to_json(end));
    }
}

impl Summary {
    fn to_json(&self, end: &RunEnd<'_>) -> Json {
        let info = end.info;
        let seconds = match (end.first_ts, end.last_ts) {
            (Some(a), Some(b)) => b.saturating_sub(a) as f64 / 1e9,
            _ => 0.0,
        };
        let mut sorted = self.messages.clone();
        sorted.sort();
        let messages: Vec<Json> = sorted
            .iter()
            .map(|m| {
                json!({
                    "dialect": m.dialect.name(),
                    "code": m.code,
                    "name": m.name,
                    "direction": m.direction.map_or("unknown", Direction::name),
                    "count": m.count,
                })
            })
            .collect();
        let violations: Vec<Json> = self
            .rules
            .present()
            .into_iter()
            .map(|(rule, c)| {
                let i = rule.info();
                json!({
                    "id": i.id, "severity": i.severity, "count": c.count, "first_frame": c.first_frame,
                    "section": i.section, "summary": i.summary,
                })
            })
            .collect();
        let conversations: Vec<Json> = end
            .conversations
            .all()
            .iter()
            .map(|c| {
                let mut j = json!({"id": c.id, "dialect": c.dialect.name(), "client": c.client.to_string(), "server": c.server.to_string(), "first_frame": c.first_frame});
                if c.dialect == Dialect::Rtype {
                    j["layout"] = end.layout(c).into();
                }
                j
            })
            .collect();
        let mut summary = json!({
            "config_file": end.config.map(|p| p.display().to_string()),
            "profile": end.profile,
            "capture": {
                "format": info.format.to_string(),
                "gzip": info.gzip,
                "link_types": info.link_types.iter().map(|l| l.label()).collect::<Vec<_>>(),
                "frames": end.read.frames,
                "truncated": end.read.truncated.as_ref().map(|t| json!({"frame": t.frame, "offset": t.offset, "reason": t.reason, "corrupt": t.corrupt})),
                "first_time": end.first_ts.map(super::time::rfc3339),
                "duration_s": seconds,
            },
            "counts": end.counts,
            "crc_failures": self.crc_failures,
            "compressed_payloads": self.compressed,
            "snapshots_reassembled": end.snapshots_reassembled,
            "conversations": conversations,
            "messages": messages,
            "violations": violations,
            "profile_hint": self.hint.suggestion().map(|(profile, probed)| json!({
                "profile": profile.name, "snapshots_probed": probed,
            })),
        });
        if let Some(n) = self.limit.filter(|n| end.counts.datagrams >= *n) {
            summary["capture"]["stopped_after"] = n.into();
        }
        if let Some((expression, datagrams)) = end.displayed {
            summary["display_filter"] = json!({"expression": expression, "datagrams": datagrams});
        }
        summary
    }

    /// The summary as one JSON document (after the run); the command adds the schema, the tool
    /// and the file.
    pub fn json(&self) -> &Json {
        self.json.as_ref().expect("summary read after the run")
    }

    /// The summary as text tables that fit the terminal.
    pub fn text(&self, path: &str, term: Term) -> String {
        let j = self.json();
        let cap = &j["capture"];
        let counts: FrameCounts = serde_json::from_value(j["counts"].clone()).unwrap_or_default();
        let mut out = String::new();
        let truncated = match (&cap["truncated"], &cap["stopped_after"]) {
            (Json::Null, Json::Null) => "complete".to_string(),
            (Json::Null, n) => format!("stopped after {n} datagrams (-c {n})"),
            (t, _) => format!(
                "{} at {}: {}",
                if t["corrupt"] == true {
                    "CORRUPT"
                } else {
                    "TRUNCATED"
                },
                match &t["frame"] {
                    Json::Null => format!("byte offset {}", t["offset"]),
                    frame => format!("frame {frame} (byte offset {})", t["offset"]),
                },
                str_of(&t["reason"])
            ),
        };
        let links: Vec<&str> = cap["link_types"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str())
            .collect();
        // A pcapng file may describe no interface (before a corrupt block, or at all).
        let links = match links.is_empty() {
            true => "no interface".to_string(),
            false => links.join(", "),
        };
        let _ = writeln!(
            out,
            "{path}: {}{} ({links}), {} frames over {:.3} s, {truncated}",
            cap["format"].as_str().unwrap_or(""),
            if cap["gzip"] == true { ".gz" } else { "" },
            cap["frames"],
            cap["duration_s"].as_f64().unwrap_or(0.0),
        );
        if let Some(line) = super::render::settings_line(j) {
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
            j["crc_failures"],
            j["compressed_payloads"],
            j["snapshots_reassembled"],
        );
        if let Some(filter) = j.get("display_filter") {
            let _ = writeln!(
                out,
                "{} datagrams match the display filter {}; the tables count only those",
                filter["datagrams"],
                str_of(&filter["expression"]),
            );
        }
        let convs = j["conversations"].as_array().map_or(&[][..], |v| &v[..]);
        let _ = writeln!(out, "\nConversations: {}", convs.len());
        // Conversations read with several snapshot profiles: each says its own.
        let mixed = j["profile"] == crate::pipeline::MIXED_LAYOUTS;
        let mut head = vec!["#", "Client", "Server", "First frame"];
        head.extend(mixed.then_some("Layout"));
        let mut t = table::new(term, &head);
        for c in convs.iter().take(50) {
            let mut row = vec![
                c["id"].to_string(),
                str_of(&c["client"]),
                str_of(&c["server"]),
                c["first_frame"].to_string(),
            ];
            row.extend(mixed.then(|| str_of(&c["layout"])));
            t.add_row(row);
        }
        if !convs.is_empty() {
            let _ = writeln!(out, "{t}");
        }
        let mut t = table::new(term, &["Dialect", "Direction", "Code", "Message", "Count"]);
        for m in j["messages"].as_array().into_iter().flatten() {
            let dir = match m["direction"].as_str() {
                Some("client_to_server") => "C→S",
                Some("server_to_client") => "S→C",
                _ => "?",
            };
            let code = m["code"]
                .as_u64()
                .map_or_else(String::new, |c| format!("0x{c:02X}"));
            t.add_row(vec![
                str_of(&m["dialect"]),
                dir.into(),
                code,
                str_of(&m["name"]),
                m["count"].to_string(),
            ]);
        }
        let _ = writeln!(out, "\nMessages\n{t}");
        let violations = j["violations"].as_array().map_or(&[][..], |v| &v[..]);
        if violations.is_empty() {
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
            for v in violations {
                let sev =
                    Severity::parse(v["severity"].as_str().unwrap_or("")).unwrap_or(Severity::Info);
                t.add_row(vec![
                    table::cell(str_of(&v["id"])),
                    table::severity_cell(sev, term),
                    table::cell(v["count"].to_string()),
                    table::cell(v["first_frame"].to_string()),
                    table::cell(format!(
                        "{} ({})",
                        str_of(&v["summary"]),
                        str_of(&v["section"])
                    )),
                ]);
            }
            let _ = writeln!(out, "\nViolations\n{t}");
        }
        if let Some(hint) = j["profile_hint"].as_object() {
            let name = str_of(&hint["profile"]);
            let _ = writeln!(
                out,
                "\nSnapshots fail to decode with this layout, but the {} tried all fit the bundled \
                 profile {name}: --profile {name}",
                hint["snapshots_probed"]
            );
        }
        out
    }
}

fn str_of(v: &Json) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
}
