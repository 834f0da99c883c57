//! The stats text view, rendered from the document's types.

use std::fmt::Write as _;

use super::document::*;
use crate::app::Term;
use crate::proto::Direction;
use crate::report::table;

/// The text report's first lines: what was analysed, and how it was judged.
pub(super) fn text_head(d: &StatsDocument<'_>, conversations: usize) -> String {
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
    if let Some(line) = crate::report::render::settings_line(&settings) {
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

pub(super) fn conversation_text(out: &mut String, c: &ConversationStats, term: Term) {
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
    let timing = |label: &str, count: u64, figures: [Option<f64>; 4]| {
        let mut row = vec![label.to_string(), count.to_string()];
        row.extend(figures.map(|x| num(x, 3)));
        row
    };
    t.add_row(timing(
        "snapshot gap",
        gap.count,
        [gap.min, gap.p50, gap.p99, gap.max],
    ));
    t.add_row(timing(
        "round trip",
        rtt.pairs,
        [rtt.min, rtt.p50, rtt.p99, rtt.max],
    ));
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
