//! `rtype-inspect stats FILE`: the session analysis of every conversation — handshake, traffic,
//! snapshot rate and jitter, round trips, sequence loss, LevelInit delivery, compression — as
//! text tables that fit 100 columns, or as JSON holding the same data.
//!
//! Each conversation's JSON is built, then its text rendered from it, so the two cannot disagree.
//! The report is written one conversation at a time as the run ends: memory holds one
//! conversation's JSON, not all of them (4,096 conversations once took 136 MB).

mod document;
mod text;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::process::ExitCode;

use super::Tool;
use crate::app::inputs::{Input, InputArgs, Spool};
use crate::app::{read_capture, written, Format, ReadOpts, Reading, Term};
use crate::datagram::Dialect;
use crate::message::NoFields;
use crate::pipeline::{RunEnd, Sink};
use crate::proto::{Direction, Rule};
use crate::session::analysis::{Analysis, Config, Durations, Sequence, Session, MIN_RATE_TICKS};
use crate::session::event::{DatagramEvent, LooseFinding};
use crate::session::Conversation;
pub use document::StatsDocument;
use document::*;
use text::{conversation_text, text_head};

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
