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

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Serialize, Serializer};

use super::{names_schema, table, Tool};
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
fn findings_of(findings: &BTreeMap<(u32, Rule), u64>, id: u32) -> BTreeMap<&'static str, u64> {
    findings
        .range((id, Rule::all()[0])..=(id, Rule::all()[Rule::all().len() - 1]))
        .map(|((_, rule), n)| (rule.id(), *n))
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
        let (findings, out) = (&self.findings, &mut self.out);
        let conversations = analysis.sessions().map(move |s| {
            conversation_stats(
                s,
                end.conversations.get(s.id),
                &config,
                findings_of(findings, s.id),
            )
        });
        let config_file = end.config.map(|p| p.display().to_string());
        let document = StatsDocument {
            config: StatsConfig {
                snapshot_hz: config.snapshot_hz,
                snapshot_tolerance: percent(config.snapshot_tolerance),
            },
            config_file: config_file.as_deref(),
            conversations: Streamed(RefCell::new(Some(Box::new(conversations)))),
            file: &self.path,
            profile: end.profile,
            schema: SCHEMA,
            tool: Tool::THIS,
            unanalysed_datagrams: analysis.unanalysed_datagrams(),
        };
        let result = match self.format {
            Format::Json => serde_json::to_writer_pretty(&mut *out, &document)
                .map_err(io::Error::from)
                .and_then(|()| out.write_all(b"\n")),
            Format::Text => {
                let count = analysis.sessions().count();
                let mut result = out.write_all(text_head(&document, count).as_bytes());
                for c in document.conversations.take().take(TEXT_CONVERSATIONS) {
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

/// The document `rtype-inspect stats FILE --format json` writes: per conversation, the
/// handshake, traffic, timing, round trips (min, p50, max in ms), sequences and loss, LevelInit,
/// compression and session findings.
// The fields of each struct are in the order serde_json's sorted maps wrote them before.
#[derive(Serialize, JsonSchema)]
#[schemars(title = "rtype-inspect stats", deny_unknown_fields)]
pub struct StatsDocument<'a> {
    config: StatsConfig,
    config_file: Option<&'a str>,
    #[schemars(with = "Vec<ConversationStats>")]
    conversations: Streamed<'a>,
    /// The capture, as named on the command line (- for standard input).
    file: &'a str,
    /// The snapshot field profile every rtype conversation was read with, or `mixed`.
    profile: &'a str,
    #[schemars(extend("const" = SCHEMA))]
    schema: &'static str,
    tool: Tool,
    /// Datagrams of conversations beyond those the analysis follows.
    unanalysed_datagrams: u64,
}

/// What the snapshot rate is judged against.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct StatsConfig {
    snapshot_hz: f64,
    /// In percent, as --snapshot-tolerance and the configuration file give it.
    snapshot_tolerance: f64,
}

/// The conversations, each built as it is written: memory holds one at a time.
struct Streamed<'a>(RefCell<Option<Box<dyn Iterator<Item = ConversationStats> + 'a>>>);

impl<'a> Streamed<'a> {
    /// The conversations, once.
    fn take(&self) -> impl Iterator<Item = ConversationStats> + 'a {
        self.0.borrow_mut().take().into_iter().flatten()
    }
}

impl Serialize for Streamed<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.take())
    }
}

/// The session analysis of one conversation.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct ConversationStats {
    /// Null when the conversation is not known to the run (a filtered analysis).
    client: Option<String>,
    compression: CompressionStats,
    /// The dialect's name: rtype, rt, rtnp, or a described dialect's id.
    dialect: &'static str,
    disconnect: Disconnect,
    duration_s: f64,
    /// Session findings by rule ID.
    findings: BTreeMap<&'static str, u64>,
    first_frame: u64,
    /// RFC 3339, UTC, nanoseconds.
    first_time: String,
    handshake: Handshake,
    id: u32,
    last_frame: u64,
    /// RFC 3339, UTC, nanoseconds.
    last_time: String,
    level_init: LevelInitStats,
    player_id: Option<u32>,
    player_id_changes: u64,
    rtt_ms: RoundTrips,
    /// The client's messages, then the server's snapshots.
    sequences: Vec<SequenceStats>,
    server: Option<String>,
    snapshots: Snapshots,
    /// Each message type sent at a rate, with when it stopped.
    streams: Vec<StreamStats>,
    traffic: TrafficStats,
}

/// How the handshake went, step by step.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Handshake {
    /// The capture holds the HELLO: the order of the steps is judged.
    order_judged: bool,
    outcome: &'static str,
    steps: Vec<HandshakeStep>,
}

/// One step of the handshake, at its first frame.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct HandshakeStep {
    count: u64,
    frame: u64,
    role: &'static str,
    step: &'static str,
    /// Seconds since the conversation's first datagram.
    time_s: f64,
}

/// Datagrams per direction.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct TrafficStats {
    client_to_server: DirectionTraffic,
    server_to_client: DirectionTraffic,
    unknown: DirectionTraffic,
}

/// Datagrams of one direction.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct DirectionTraffic {
    bytes: u64,
    datagrams: u64,
    /// Byte-identical duplicates.
    duplicates: u64,
}

/// The server's snapshots: their rate and the gaps between them.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Snapshots {
    gap_ms: DurationStats,
    rate_hz: Option<f64>,
    /// Enough ticks to judge the rate.
    rate_judged: bool,
    /// Within the tolerance of the configured rate (null when not judged).
    rate_ok: Option<bool>,
    tick_rate_hz: Option<f64>,
    ticks: u64,
}

/// A distribution of durations, in milliseconds (null when empty).
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct DurationStats {
    count: u64,
    max: Option<f64>,
    mean: Option<f64>,
    min: Option<f64>,
    p50: Option<f64>,
    p99: Option<f64>,
}

/// One message type sent at a rate.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct StreamStats {
    datagrams: u64,
    first_frame: u64,
    first_s: f64,
    last_frame: u64,
    last_s: f64,
    max_gap_ms: f64,
    message: &'static str,
    rate_hz: Option<f64>,
    rate_ok: Option<bool>,
    /// Seconds before the conversation's play ended (null when it did not stop).
    stopped_before_end_s: Option<f64>,
}

/// Pings and pongs, and the round trips of those paired, in milliseconds.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct RoundTrips {
    max: Option<f64>,
    min: Option<f64>,
    p50: Option<f64>,
    p99: Option<f64>,
    pairs: u64,
    pings: u64,
    pongs: u64,
    unanswered_pings: u64,
    unmatched_pongs: u64,
}

/// The sequence analysis of one direction.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct SequenceStats {
    /// The sequence started: the counts below are known.
    analysed: bool,
    #[schemars(schema_with = "direction_schema")]
    direction: &'static str,
    duplicates: u64,
    /// Which messages the sequence follows, and why those.
    family: &'static str,
    loss_ratio: f64,
    /// Estimated.
    lost: u64,
    received: u64,
    reordered: u64,
    resets: u64,
}

/// The schema of a sequence's direction: its names.
fn direction_schema(_: &mut SchemaGenerator) -> Schema {
    names_schema(&[Direction::ClientToServer, Direction::ServerToClient].map(Direction::name))
}

/// The LevelInit's delivery.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct LevelInitStats {
    ack_delay_ms: Option<f64>,
    ack_frame: Option<u64>,
    acknowledged: bool,
    first_frame: Option<u64>,
    retried: bool,
    sent: u64,
}

/// The compressed payloads.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct CompressionStats {
    datagrams: u64,
    decompressed_bytes: u64,
    ratio: Option<f64>,
    wire_bytes: u64,
}

/// Datagrams after the client's disconnect.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Disconnect {
    after: u64,
    /// Flagged: the rest came within 100 ms, in flight.
    flagged: u64,
    reconnects: u64,
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

fn duration_stats(d: &Durations) -> DurationStats {
    DurationStats {
        count: d.count(),
        max: d.max_ms(),
        mean: d.mean_ms(),
        min: d.min_ms(),
        p50: d.quantile_ms(0.5),
        p99: d.quantile_ms(0.99),
    }
}

fn sequence_stats(direction: Direction, family: &'static str, s: &Sequence) -> SequenceStats {
    SequenceStats {
        analysed: s.started(),
        direction: direction.name(),
        duplicates: s.duplicates,
        family,
        loss_ratio: s.loss_ratio(),
        lost: s.lost,
        received: s.received,
        reordered: s.reordered,
        resets: s.resets,
    }
}

fn conversation_stats(
    s: &Session,
    c: Option<&Conversation>,
    config: &Config,
    findings: BTreeMap<&'static str, u64>,
) -> ConversationStats {
    let since = |ts: i64| ts.saturating_sub(s.first_ts) as f64 / 1e9;
    let steps = s.steps().into_iter().map(|st| HandshakeStep {
        count: st.count,
        frame: st.frame,
        role: st.step.name(),
        step: st.name,
        time_s: since(st.ts_nanos),
    });
    let end = s.play_end();
    let streams = s.streams().map(|st| StreamStats {
        datagrams: st.count,
        first_frame: st.first.0,
        first_s: since(st.first.1),
        last_frame: st.last.0,
        last_s: since(st.last.1),
        max_gap_ms: st.max_gap_nanos as f64 / 1e6,
        message: st.name,
        rate_hz: st.rate_hz(),
        rate_ok: (st.rate_hz())
            .filter(|_| st.count >= MIN_RATE_TICKS)
            .map(|r| config.rate_ok(r)),
        stopped_before_end_s: st.stopped_before(end).map(|n| n as f64 / 1e9),
    });
    let traffic = |i: usize| {
        let t = &s.traffic[i];
        DirectionTraffic {
            bytes: t.bytes,
            datagrams: t.datagrams,
            duplicates: t.duplicates,
        }
    };
    let [client_family, server_family] = families(s.dialect);
    let li = &s.level_init;
    ConversationStats {
        client: c.map(|c| c.client.to_string()),
        compression: CompressionStats {
            datagrams: s.compression.datagrams,
            decompressed_bytes: s.compression.decompressed_bytes,
            ratio: s.compression.ratio(),
            wire_bytes: s.compression.wire_bytes,
        },
        dialect: s.dialect.name(),
        disconnect: Disconnect {
            after: s.after_disconnect,
            flagged: s.after_disconnect_flagged,
            reconnects: s.reconnects,
        },
        duration_s: since(s.last_ts),
        findings,
        first_frame: s.first_frame,
        first_time: super::time::rfc3339(s.first_ts),
        handshake: Handshake {
            order_judged: s.from_start(),
            outcome: s.outcome().name(),
            steps: steps.collect(),
        },
        id: s.id,
        last_frame: s.last_frame,
        last_time: super::time::rfc3339(s.last_ts),
        level_init: LevelInitStats {
            ack_delay_ms: (li.first.zip(li.acknowledged)).map(|(f, a)| (a.1 - f.1) as f64 / 1e6),
            ack_frame: li.acknowledged.map(|a| a.0),
            acknowledged: li.acknowledged.is_some(),
            first_frame: li.first.map(|f| f.0),
            retried: li.sent > 1,
            sent: li.sent,
        },
        player_id: s.player_id,
        player_id_changes: s.player_id_changes,
        rtt_ms: RoundTrips {
            max: s.rtt.max_ms(),
            min: s.rtt.min_ms(),
            p50: s.rtt.quantile_ms(0.5),
            p99: s.rtt.quantile_ms(0.99),
            pairs: s.rtt.count(),
            pings: s.pings,
            pongs: s.pongs,
            unanswered_pings: s.unanswered_pings(),
            unmatched_pongs: s.unmatched_pongs,
        },
        sequences: vec![
            sequence_stats(Direction::ClientToServer, client_family, &s.client_sequence),
            sequence_stats(Direction::ServerToClient, server_family, &s.snapshot_ticks),
        ],
        server: c.map(|c| c.server.to_string()),
        snapshots: Snapshots {
            gap_ms: duration_stats(&s.snapshot_gaps),
            rate_hz: s.snapshot_rate_hz(),
            rate_judged: s.rate_judged(),
            rate_ok: (s.snapshot_rate_hz())
                .filter(|_| s.rate_judged())
                .map(|r| config.rate_ok(r)),
            tick_rate_hz: s.tick_rate_hz(),
            ticks: s.snapshot_tick_count(),
        },
        streams: streams.collect(),
        traffic: TrafficStats {
            client_to_server: traffic(0),
            server_to_client: traffic(1),
            unknown: traffic(2),
        },
    }
}

/// The text report's first lines: what was analysed, and how it was judged.
fn text_head(d: &StatsDocument<'_>, conversations: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}\n{} conversation{} analysed; snapshot rate judged against {} Hz ± {}%",
        d.file,
        conversations,
        if conversations == 1 { "" } else { "s" },
        num(Some(d.config.snapshot_hz), 1),
        num(Some(d.config.snapshot_tolerance), 1),
    );
    let settings = serde_json::json!({"config_file": d.config_file, "profile": d.profile});
    if let Some(line) = super::render::settings_line(&settings) {
        let _ = writeln!(out, "{line}");
    }
    if d.unanalysed_datagrams > 0 {
        let _ = writeln!(
            out,
            "{} datagrams of further conversations were not analysed",
            d.unanalysed_datagrams
        );
    }
    out
}

fn conversation_text(out: &mut String, c: &ConversationStats, term: Term) {
    let player = c
        .player_id
        .map_or_else(|| "unknown".to_string(), |p| p.to_string());
    let _ = writeln!(
        out,
        "\nConversation {} ({}): client {} ↔ server {}, player {player}\n  frames {}–{}, {} s from {}",
        c.id,
        c.dialect,
        or_null(c.client.as_ref()),
        or_null(c.server.as_ref()),
        c.first_frame,
        c.last_frame,
        num(Some(c.duration_s), 3),
        c.first_time,
    );
    let hs = &c.handshake;
    let path: Vec<String> = hs.steps.iter().map(|s| s.step.to_string()).collect();
    let judged = if hs.order_judged {
        ""
    } else {
        " (order not judged: the capture misses the HELLO)"
    };
    let head = format!("  handshake: {}{judged}:", hs.outcome);
    let _ = writeln!(
        out,
        "{}",
        wrap(head, &path, " →", term.width.unwrap_or(usize::MAX))
    );
    if !hs.steps.is_empty() {
        let mut t = table::new(term, &["Step", "Frame", "Time (s)", "Count"]);
        for s in &hs.steps {
            t.add_row(vec![
                s.step.to_string(),
                s.frame.to_string(),
                num(Some(s.time_s), 6),
                s.count.to_string(),
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
    let traffic = &c.traffic;
    for (d, label) in [
        (&traffic.client_to_server, "C→S"),
        (&traffic.server_to_client, "S→C"),
        (&traffic.unknown, "?"),
    ] {
        if label == "?" && d.datagrams == 0 {
            continue;
        }
        t.add_row(vec![
            label.to_string(),
            d.datagrams.to_string(),
            d.bytes.to_string(),
            d.duplicates.to_string(),
        ]);
    }
    let _ = writeln!(out, "Traffic\n{t}");

    let snaps = &c.snapshots;
    let rtt = &c.rtt_ms;
    let mut t = table::new(term, &["Timing (ms)", "Count", "Min", "p50", "p99", "Max"]);
    let gap = &snaps.gap_ms;
    t.add_row(vec![
        "snapshot gap".into(),
        gap.count.to_string(),
        num(gap.min, 3),
        num(gap.p50, 3),
        num(gap.p99, 3),
        num(gap.max, 3),
    ]);
    t.add_row(vec![
        "round trip".into(),
        rtt.pairs.to_string(),
        num(rtt.min, 3),
        num(rtt.p50, 3),
        num(rtt.p99, 3),
        num(rtt.max, 3),
    ]);
    let _ = writeln!(out, "Timing\n{t}");
    let verdict = match snaps.rate_ok {
        Some(true) => "within tolerance",
        Some(false) => "OUTSIDE tolerance",
        None => "not judged (fewer than 20 ticks)",
    };
    let _ = writeln!(
        out,
        "  snapshots: {} ticks at {} Hz (server tick advancing at {} Hz), {verdict}",
        snaps.ticks,
        num(snaps.rate_hz, 2),
        num(snaps.tick_rate_hz, 2),
    );
    let stopped = |st: &StreamStats| st.stopped_before_end_s.filter(|s| s.is_finite());
    let streams = &c.streams;
    if streams.len() > 1 || streams.iter().any(|s| stopped(s).is_some()) {
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
            let stopped = stopped(st).map_or_else(
                || "no".to_string(),
                |s| format!("at {} s, {s:.3} s before the end", num(Some(st.last_s), 3)),
            );
            t.add_row(vec![
                st.message.to_string(),
                st.datagrams.to_string(),
                format!("{}–{}", st.first_frame, st.last_frame),
                num(st.rate_hz, 2),
                num(Some(st.max_gap_ms), 3),
                stopped,
            ]);
        }
        let _ = writeln!(out, "Streams\n{t}");
    }
    let _ = writeln!(
        out,
        "  pings: {} sent, {} answered, {} unanswered, {} pongs without a ping",
        rtt.pings, rtt.pairs, rtt.unanswered_pings, rtt.unmatched_pongs,
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
    for s in &c.sequences {
        let dir = if s.direction == Direction::ClientToServer.name() {
            "C→S"
        } else {
            "S→C"
        };
        if !s.analysed {
            t.add_row(vec![
                dir.into(),
                s.family.to_string(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]);
            continue;
        }
        // JSON has no NaN: a ratio that is none counts as none lost.
        let ratio = Some(s.loss_ratio).filter(|r| r.is_finite()).unwrap_or(0.0);
        t.add_row(vec![
            dir.into(),
            s.family.into(),
            s.received.to_string(),
            s.lost.to_string(),
            num(Some(ratio * 100.0), 2),
            s.duplicates.to_string(),
            s.reordered.to_string(),
            s.resets.to_string(),
        ]);
    }
    let _ = writeln!(out, "Sequences\n{t}");

    let li = &c.level_init;
    if li.sent > 0 {
        let ack = match li.ack_frame {
            Some(f) => format!(
                "acknowledged at frame {f} ({} ms later)",
                num(li.ack_delay_ms, 3)
            ),
            None => "never acknowledged".into(),
        };
        let retried = if li.retried { "retried" } else { "not retried" };
        let _ = writeln!(
            out,
            "  LevelInit: sent {} time(s) from frame {}, {ack}, {retried}",
            li.sent,
            or_null(li.first_frame.as_ref())
        );
    }
    let comp = &c.compression;
    if comp.datagrams > 0 {
        let _ = writeln!(
            out,
            "  compression: {} payloads, {} bytes on the wire for {} decompressed (ratio {}:1)",
            comp.datagrams,
            comp.wire_bytes,
            comp.decompressed_bytes,
            num(comp.ratio, 2),
        );
    }
    let dis = &c.disconnect;
    if dis.after > 0 || dis.reconnects > 0 {
        let _ = writeln!(
            out,
            "  after disconnect: {} datagrams ({} flagged, the rest within 100 ms in flight), {} reconnects",
            dis.after, dis.flagged, dis.reconnects,
        );
    }
    if !c.findings.is_empty() {
        let list: Vec<String> = (c.findings.iter())
            .map(|(id, n)| format!("{id} ×{n}"))
            .collect();
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

/// A number with `digits` decimals, or "-" when absent (or not finite: JSON has no NaN).
fn num(x: Option<f64>, digits: usize) -> String {
    x.filter(|x| x.is_finite())
        .map_or_else(|| "-".to_string(), |x| format!("{x:.digits$}"))
}

/// A value that may be absent, as the JSON document shows it.
fn or_null<T: ToString>(v: Option<&T>) -> String {
    v.map_or_else(|| "null".to_string(), T::to_string)
}
