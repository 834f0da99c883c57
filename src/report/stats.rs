//! `rtype-inspect stats FILE`: the session analysis of every conversation — handshake, traffic,
//! snapshot rate and jitter, round trips, sequence loss, LevelInit delivery, compression — as
//! text tables that fit 100 columns, or as JSON holding the same data.
//!
//! Each conversation's JSON is built, then its text rendered from it, so the two cannot disagree.
//! The report is written one conversation at a time as the run ends: memory holds one
//! conversation's JSON, not all of them (4,096 conversations once took 136 MB).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::process::ExitCode;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{json, Value as Json};

use super::table;
use crate::app::inputs::{Input, InputArgs, Spool};
use crate::app::{read_capture, written, Format, ReadOpts, Reading, Term};
use crate::datagram::Dialect;
use crate::message::NoFields;
use crate::pipeline::{RunEnd, Sink};
use crate::proto::{Direction, Rule};
use crate::session::analysis::{Analysis, Config, Durations, Sequence, Session, MIN_RATE_TICKS};
use crate::session::event::{DatagramEvent, LooseFinding};
use crate::session::Conversation;

/// Conversations shown in the text report; JSON holds them all.
const TEXT_CONVERSATIONS: usize = 50;

/// `rtype-inspect stats`'s options, as `cli::args` parsed them.
pub struct StatsOptions {
    pub inputs: InputArgs,
    pub format: Format,
    pub read: ReadOpts,
}

/// The schema of `stats --format json` (docs/schemas/stats.schema.json).
pub const SCHEMA: &str = "stats/1";

/// Runs `rtype-inspect stats`.
/// Several captures' reports follow one another (a blank line between), or make one JSON array.
pub fn run(options: StatsOptions, term: Term) -> Result<ExitCode, String> {
    let captures = options.inputs.captures("stats")?;
    let mut reading = options.read.reading()?;
    reading.count = options.inputs.count;
    if !captures.several {
        let file = &captures.inputs[0].path;
        let out = io::BufWriter::new(io::stdout().lock());
        return written(report(file, &reading.for_file(file)?, options.format, term, out)?.err());
    }
    let job = |input: &Input, reading: &Reading| {
        let spool = Spool::new().map_err(|e| format!("temporary file: {e}"))?;
        report(&input.path, reading, options.format, term, spool)?
            .map_err(|e| format!("temporary file: {e}"))
    };
    captures.spool_list(&reading, job, options.format == Format::Json)
}

/// Analyses one capture and writes its report to `out`: the output, or the error that stopped
/// writing it (a capture that cannot be read is the outer error).
fn report<W: Write>(
    file: &std::path::Path,
    reading: &Reading,
    format: Format,
    term: Term,
    out: W,
) -> Result<Result<W, io::Error>, String> {
    let path = file.display().to_string();
    let mut stats = Stats::new(out, format, &path, term);
    if reading.filter.is_some() {
        stats.filtered = Some(Analysis::new(reading.analysis));
    }
    read_capture(file, reading, &mut stats)?;
    Ok(stats.finish())
}

/// Collects the session findings per conversation while the pipeline runs, then writes the report
/// from the analysis at the end, to `out`.
pub struct Stats<W: Write> {
    /// Session findings per (conversation, rule): at most conversations × 7 entries.
    findings: BTreeMap<(u32, Rule), u64>,
    no_fields: NoFields,
    /// With a display filter: the analysis of the datagrams it passed (the pipeline's sees them
    /// all, to judge sessions whole).
    pub filtered: Option<Analysis>,
    out: W,
    format: Format,
    path: String,
    term: Term,
    error: Option<io::Error>,
}

impl<W: Write> Stats<W> {
    /// A report on the capture named `path`, to be written to `out` in `format`.
    pub fn new(out: W, format: Format, path: &str, term: Term) -> Self {
        Stats {
            findings: BTreeMap::new(),
            no_fields: NoFields,
            filtered: None,
            out,
            format,
            path: path.to_string(),
            term,
            error: None,
        }
    }

    /// The output after the run, or the write error that stopped it.
    pub fn finish(self) -> Result<W, io::Error> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.out),
        }
    }
}

/// A fraction in percent, without the float noise of the division it came from (7 % not
/// 7.000000000000001).
fn percent(fraction: f64) -> f64 {
    (fraction * 1e11).round() / 1e9
}

/// The session findings of one conversation, by rule ID.
fn findings_of(findings: &BTreeMap<(u32, Rule), u64>, id: u32) -> serde_json::Map<String, Json> {
    findings
        .range((id, Rule::all()[0])..=(id, Rule::all()[Rule::all().len() - 1]))
        .map(|((_, rule), n)| (rule.id().to_string(), json!(n)))
        .collect()
}

impl<W: Write> Sink for Stats<W> {
    type Fields = NoFields;
    fn fields(&mut self) -> &mut NoFields {
        &mut self.no_fields
    }
    fn datagram(&mut self, e: &DatagramEvent<'_>) {
        if let Some(analysis) = &mut self.filtered {
            analysis.observe(e, &mut |_| {});
        }
    }
    fn loose(&mut self, f: &LooseFinding) {
        if f.finding.rule.id().starts_with("session.") {
            *self
                .findings
                .entry((f.conversation, f.finding.rule))
                .or_default() += 1;
        }
    }
    fn end(&mut self, end: &RunEnd<'_>) {
        if let Some(analysis) = &mut self.filtered {
            analysis.finish(&mut |_| {});
        }
        let analysis = self.filtered.as_ref().unwrap_or(end.analysis);
        let config = *analysis.config();
        // Everything but the conversations, which are written one at a time in its place.
        let head = json!({
            "config_file": end.config.map(|p| p.display().to_string()),
            "profile": end.profile,
            // In percent, as --snapshot-tolerance and the configuration file give it.
            "config": {"snapshot_hz": config.snapshot_hz, "snapshot_tolerance": percent(config.snapshot_tolerance)},
            "conversations": Json::Null,
            "unanalysed_datagrams": analysis.unanalysed_datagrams(),
            "file": self.path,
        });
        let mut head = head;
        super::stamp(&mut head, SCHEMA);
        let (findings, out) = (&self.findings, &mut self.out);
        let conversations = analysis.sessions().map(|s| {
            session_json(
                s,
                end.conversations.get(s.id),
                &config,
                findings_of(findings, s.id),
            )
        });
        let result = match self.format {
            Format::Json => {
                let report = Report {
                    head: &head,
                    conversations: RefCell::new(Some(conversations)),
                };
                serde_json::to_writer_pretty(&mut *out, &report)
                    .map_err(io::Error::from)
                    .and_then(|()| out.write_all(b"\n"))
            }
            Format::Text => {
                let count = analysis.sessions().count();
                let mut result = out.write_all(text_head(&self.path, &head, count).as_bytes());
                for c in conversations.take(TEXT_CONVERSATIONS) {
                    let mut text = String::new();
                    conversation_text(&mut text, &c, self.term);
                    result = result.and_then(|()| out.write_all(text.as_bytes()));
                }
                if count > TEXT_CONVERSATIONS {
                    let more = format!(
                        "\n… {} more conversations (see --format json)\n",
                        count - TEXT_CONVERSATIONS
                    );
                    result = result.and_then(|()| out.write_all(more.as_bytes()));
                }
                result
            }
        };
        self.error = result.and_then(|()| out.flush()).err();
    }
}

/// The report's JSON document: `head`'s members in their order, with the conversations built
/// and written one at a time where `head` has a placeholder.
struct Report<'a, I> {
    head: &'a Json,
    conversations: RefCell<Option<I>>,
}

impl<I: Iterator<Item = Json>> Serialize for Report<'_, I> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let members = self.head.as_object().into_iter().flatten();
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in members {
            if key == "conversations" {
                let list = Conversations(&self.conversations);
                map.serialize_entry(key, &list)?;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

/// The conversations, serialized as they are built.
struct Conversations<'a, I>(&'a RefCell<Option<I>>);

impl<I: Iterator<Item = Json>> Serialize for Conversations<'_, I> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.borrow_mut().take().into_iter().flatten())
    }
}

/// Which messages each direction's sequence analysis follows, and why those.
fn families(dialect: Dialect) -> [&'static str; 2] {
    match dialect {
        Dialect::Rtype => [
            "client messages: header sequence (one counter for all types)",
            "snapshots: header tick of SERVER_SNAPSHOT, once per SNAPSHOT_CHUNK set",
        ],
        #[allow(unreachable_patterns)]
        _ => ["client messages: header sequence", "snapshots: tick"],
    }
}

fn durations_json(d: &Durations) -> Json {
    json!({
        "count": d.count(), "min": d.min_ms(), "p50": d.quantile_ms(0.5), "p99": d.quantile_ms(0.99),
        "max": d.max_ms(), "mean": d.mean_ms(),
    })
}

fn sequence_json(direction: Direction, family: &str, s: &Sequence) -> Json {
    json!({
        "direction": direction.name(), "family": family, "analysed": s.started(), "received": s.received,
        "lost": s.lost, "loss_ratio": s.loss_ratio(), "duplicates": s.duplicates, "reordered": s.reordered,
        "resets": s.resets,
    })
}

fn session_json(
    s: &Session,
    c: Option<&Conversation>,
    config: &Config,
    findings: serde_json::Map<String, Json>,
) -> Json {
    let since = |ts: i64| ts.saturating_sub(s.first_ts) as f64 / 1e9;
    let steps: Vec<Json> = s
        .steps()
        .iter()
        .map(|st| json!({"step": st.name, "role": st.step.name(), "frame": st.frame, "time_s": since(st.ts_nanos), "count": st.count}))
        .collect();
    let end = s.play_end();
    let streams: Vec<Json> = s
        .streams()
        .map(|st| {
            json!({
                "message": st.name, "datagrams": st.count, "first_frame": st.first.0,
                "last_frame": st.last.0, "first_s": since(st.first.1), "last_s": since(st.last.1),
                "rate_hz": st.rate_hz(), "rate_ok": st.rate_hz().filter(|_| st.count >= MIN_RATE_TICKS).map(|r| config.rate_ok(r)),
                "max_gap_ms": st.max_gap_nanos as f64 / 1e6,
                "stopped_before_end_s": st.stopped_before(end).map(|n| n as f64 / 1e9),
            })
        })
        .collect();
    let traffic = |i: usize| {
        let t = &s.traffic[i];
        json!({"datagrams": t.datagrams, "bytes": t.bytes, "duplicates": t.duplicates})
    };
    let [client_family, server_family] = families(s.dialect);
    let li = &s.level_init;
    json!({
        "id": s.id,
        "dialect": s.dialect.name(),
        "client": c.map(|c| c.client.to_string()),
        "server": c.map(|c| c.server.to_string()),
        "first_frame": s.first_frame,
        "last_frame": s.last_frame,
        "first_time": super::time::rfc3339(s.first_ts),
        "last_time": super::time::rfc3339(s.last_ts),
        "duration_s": since(s.last_ts),
        "player_id": s.player_id,
        "player_id_changes": s.player_id_changes,
        "handshake": {"outcome": s.outcome().name(), "order_judged": s.from_start(), "steps": steps},
        "traffic": {"client_to_server": traffic(0), "server_to_client": traffic(1), "unknown": traffic(2)},
        "snapshots": {
            "ticks": s.snapshot_tick_count(),
            "rate_hz": s.snapshot_rate_hz(),
            "tick_rate_hz": s.tick_rate_hz(),
            "gap_ms": durations_json(&s.snapshot_gaps),
            "rate_judged": s.rate_judged(),
            "rate_ok": s.snapshot_rate_hz().filter(|_| s.rate_judged()).map(|r| config.rate_ok(r)),
        },
        "streams": streams,
        "rtt_ms": {
            "pings": s.pings, "pongs": s.pongs, "pairs": s.rtt.count(), "unanswered_pings": s.unanswered_pings(),
            "unmatched_pongs": s.unmatched_pongs, "min": s.rtt.min_ms(), "p50": s.rtt.quantile_ms(0.5),
            "p99": s.rtt.quantile_ms(0.99), "max": s.rtt.max_ms(),
        },
        "sequences": [
            sequence_json(Direction::ClientToServer, client_family, &s.client_sequence),
            sequence_json(Direction::ServerToClient, server_family, &s.snapshot_ticks),
        ],
        "level_init": {
            "sent": li.sent,
            "first_frame": li.first.map(|f| f.0),
            "acknowledged": li.acknowledged.is_some(),
            "ack_frame": li.acknowledged.map(|a| a.0),
            "ack_delay_ms": li.first.zip(li.acknowledged).map(|(f, a)| (a.1 - f.1) as f64 / 1e6),
            "retried": li.sent > 1,
        },
        "compression": {
            "datagrams": s.compression.datagrams, "wire_bytes": s.compression.wire_bytes,
            "decompressed_bytes": s.compression.decompressed_bytes, "ratio": s.compression.ratio(),
        },
        "disconnect": {
            "after": s.after_disconnect, "flagged": s.after_disconnect_flagged, "reconnects": s.reconnects,
        },
        "findings": findings,
    })
}

/// The text report's first lines: what was analysed, and how it was judged.
fn text_head(path: &str, j: &Json, conversations: usize) -> String {
    let mut out = String::new();
    let cfg = &j["config"];
    let _ = writeln!(
        out,
        "{path}\n{} conversation{} analysed; snapshot rate judged against {} Hz ± {}%",
        conversations,
        if conversations == 1 { "" } else { "s" },
        num(&cfg["snapshot_hz"], 1),
        num(&cfg["snapshot_tolerance"], 1),
    );
    if let Some(line) = super::render::settings_line(j) {
        let _ = writeln!(out, "{line}");
    }
    if j["unanalysed_datagrams"].as_u64().unwrap_or(0) > 0 {
        let _ = writeln!(
            out,
            "{} datagrams of further conversations were not analysed",
            j["unanalysed_datagrams"]
        );
    }
    out
}

fn conversation_text(out: &mut String, c: &Json, term: Term) {
    let player = c["player_id"]
        .as_u64()
        .map_or_else(|| "unknown".to_string(), |p| p.to_string());
    let _ = writeln!(
        out,
        "\nConversation {} ({}): client {} ↔ server {}, player {player}\n  frames {}–{}, {} s from {}",
        c["id"],
        str_of(&c["dialect"]),
        str_of(&c["client"]),
        str_of(&c["server"]),
        c["first_frame"],
        c["last_frame"],
        num(&c["duration_s"], 3),
        str_of(&c["first_time"]),
    );
    let hs = &c["handshake"];
    let steps = hs["steps"].as_array().map_or(&[][..], |v| &v[..]);
    let path: Vec<String> = steps.iter().map(|s| str_of(&s["step"])).collect();
    let judged = if hs["order_judged"] == true {
        ""
    } else {
        " (order not judged: the capture misses the HELLO)"
    };
    let head = format!("  handshake: {}{judged}:", str_of(&hs["outcome"]));
    let _ = writeln!(
        out,
        "{}",
        wrap(head, &path, " →", term.width.unwrap_or(usize::MAX))
    );
    if !steps.is_empty() {
        let mut t = table::new(term, &["Step", "Frame", "Time (s)", "Count"]);
        for s in steps {
            t.add_row(vec![
                str_of(&s["step"]),
                s["frame"].to_string(),
                num(&s["time_s"], 6),
                s["count"].to_string(),
            ]);
        }
        let _ = writeln!(out, "{t}");
    }

    let mut t = table::new(
        term,
        &[
            "Direction",
            "Datagrams",
            "Bytes",
            "Byte-identical duplicates",
        ],
    );
    for (key, label) in [
        ("client_to_server", "C→S"),
        ("server_to_client", "S→C"),
        ("unknown", "?"),
    ] {
        let d = &c["traffic"][key];
        if key == "unknown" && d["datagrams"] == 0 {
            continue;
        }
        t.add_row(vec![
            label.to_string(),
            d["datagrams"].to_string(),
            d["bytes"].to_string(),
            d["duplicates"].to_string(),
        ]);
    }
    let _ = writeln!(out, "Traffic\n{t}");

    let snaps = &c["snapshots"];
    let rtt = &c["rtt_ms"];
    let mut t = table::new(term, &["Timing (ms)", "Count", "Min", "p50", "p99", "Max"]);
    let gap = &snaps["gap_ms"];
    t.add_row(vec![
        "snapshot gap".into(),
        gap["count"].to_string(),
        num(&gap["min"], 3),
        num(&gap["p50"], 3),
        num(&gap["p99"], 3),
        num(&gap["max"], 3),
    ]);
    t.add_row(vec![
        "round trip".into(),
        rtt["pairs"].to_string(),
        num(&rtt["min"], 3),
        num(&rtt["p50"], 3),
        num(&rtt["p99"], 3),
        num(&rtt["max"], 3),
    ]);
    let _ = writeln!(out, "Timing\n{t}");
    let verdict = match snaps["rate_ok"].as_bool() {
        Some(true) => "within tolerance",
        Some(false) => "OUTSIDE tolerance",
        None => "not judged (fewer than 20 ticks)",
    };
    let _ = writeln!(
        out,
        "  snapshots: {} ticks at {} Hz (server tick advancing at {} Hz), {verdict}",
        snaps["ticks"],
        num(&snaps["rate_hz"], 2),
        num(&snaps["tick_rate_hz"], 2),
    );
    let streams = c["streams"].as_array().map_or(&[][..], |v| &v[..]);
    if streams.len() > 1 || streams.iter().any(|s| !s["stopped_before_end_s"].is_null()) {
        let mut t = table::new(
            term,
            &[
                "Stream",
                "Datagrams",
                "Frames",
                "Rate (Hz)",
                "Max gap (ms)",
                "Stopped",
            ],
        );
        for st in streams {
            let stopped = st["stopped_before_end_s"].as_f64().map_or_else(
                || "no".to_string(),
                |s| format!("at {} s, {s:.3} s before the end", num(&st["last_s"], 3)),
            );
            t.add_row(vec![
                str_of(&st["message"]),
                st["datagrams"].to_string(),
                format!("{}–{}", st["first_frame"], st["last_frame"]),
                num(&st["rate_hz"], 2),
                num(&st["max_gap_ms"], 3),
                stopped,
            ]);
        }
        let _ = writeln!(out, "Streams\n{t}");
    }
    let _ = writeln!(
        out,
        "  pings: {} sent, {} answered, {} unanswered, {} pongs without a ping",
        rtt["pings"], rtt["pairs"], rtt["unanswered_pings"], rtt["unmatched_pongs"],
    );

    let mut t = table::new(
        term,
        &[
            "Dir",
            "Sequence family",
            "Received",
            "Lost (est.)",
            "Loss %",
            "Dup",
            "Reord",
            "Resets",
        ],
    );
    for s in c["sequences"].as_array().into_iter().flatten() {
        let dir = if s["direction"] == "client_to_server" {
            "C→S"
        } else {
            "S→C"
        };
        if s["analysed"] != true {
            t.add_row(vec![
                dir.into(),
                str_of(&s["family"]),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]);
            continue;
        }
        t.add_row(vec![
            dir.into(),
            str_of(&s["family"]),
            s["received"].to_string(),
            s["lost"].to_string(),
            num(&json!(s["loss_ratio"].as_f64().unwrap_or(0.0) * 100.0), 2),
            s["duplicates"].to_string(),
            s["reordered"].to_string(),
            s["resets"].to_string(),
        ]);
    }
    let _ = writeln!(out, "Sequences\n{t}");

    let li = &c["level_init"];
    if li["sent"].as_u64().unwrap_or(0) > 0 {
        let ack = match li["ack_frame"].as_u64() {
            Some(f) => format!(
                "acknowledged at frame {f} ({} ms later)",
                num(&li["ack_delay_ms"], 3)
            ),
            None => "never acknowledged".into(),
        };
        let retried = if li["retried"] == true {
            "retried"
        } else {
            "not retried"
        };
        let _ = writeln!(
            out,
            "  LevelInit: sent {} time(s) from frame {}, {ack}, {retried}",
            li["sent"], li["first_frame"]
        );
    }
    let comp = &c["compression"];
    if comp["datagrams"].as_u64().unwrap_or(0) > 0 {
        let _ = writeln!(
            out,
            "  compression: {} payloads, {} bytes on the wire for {} decompressed (ratio {}:1)",
            comp["datagrams"],
            comp["wire_bytes"],
            comp["decompressed_bytes"],
            num(&comp["ratio"], 2),
        );
    }
    let dis = &c["disconnect"];
    if dis["after"].as_u64().unwrap_or(0) > 0 || dis["reconnects"].as_u64().unwrap_or(0) > 0 {
        let _ = writeln!(
            out,
            "  after disconnect: {} datagrams ({} flagged, the rest within 100 ms in flight), {} reconnects",
            dis["after"], dis["flagged"], dis["reconnects"],
        );
    }
    if let Some(f) = c["findings"].as_object().filter(|f| !f.is_empty()) {
        let list: Vec<String> = f.iter().map(|(id, n)| format!("{id} ×{n}")).collect();
        let _ = writeln!(out, "  session findings: {}", list.join(", "));
    }
}

/// `head` followed by `items` joined with `sep`, broken into lines of at most `width` characters
/// (continuation lines indented by four spaces).
fn wrap(head: String, items: &[String], sep: &str, width: usize) -> String {
    let mut out = head;
    let mut line = out.chars().count();
    for (i, item) in items.iter().enumerate() {
        let piece = if i + 1 < items.len() {
            format!("{item}{sep}")
        } else {
            item.clone()
        };
        let n = piece.chars().count() + 1;
        if line + n > width {
            out += "\n   ";
            line = 3;
        }
        out += " ";
        out += &piece;
        line += n;
    }
    if items.is_empty() {
        out += " -";
    }
    out
}

/// A number with `digits` decimals, or "-" when absent.
fn num(v: &Json, digits: usize) -> String {
    v.as_f64()
        .map_or_else(|| "-".to_string(), |x| format!("{x:.digits$}"))
}

fn str_of(v: &Json) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
}
