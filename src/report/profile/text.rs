//! The profile as text, rendered from its JSON document (so the two cannot disagree): per
//! conversation, tables of bandwidth by message type, snapshot bytes by entity type and by field,
//! the entities' update rates, one sparkline per time series, the distributions, loss and
//! chunking.

use std::fmt::Write as _;

use serde_json::Value as Json;

use crate::app::Term;
use crate::report::table;

/// Conversations shown in the text; the JSON holds them all.
const TEXT_CONVERSATIONS: usize = 20;
/// Sparkline width on a pipe (on a terminal, what is left of its width).
const PIPE_WIDTH: usize = 100;
const LABEL: usize = 28;
const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

pub fn render(j: &Json, term: Term) -> String {
    let mut out = String::new();
    let cap = &j["capture"];
    let convs = j["conversations"].as_array().map_or(&[][..], |v| &v[..]);
    let _ = writeln!(
        out,
        "{}: {} conversation{} over {:.3} s, snapshot profile {}, time buckets of {} ms",
        str_of(&j["file"]),
        convs.len(),
        if convs.len() == 1 { "" } else { "s" },
        cap["duration_s"].as_f64().unwrap_or(0.0),
        str_of(&j["snapshot_profile"]),
        num(&j["series"]["interval_ms"], 0),
    );
    if convs.len() != 1 {
        let _ = writeln!(out, "\nAll conversations");
        account(&mut out, &j["total"], term);
    }
    for c in convs.iter().take(TEXT_CONVERSATIONS) {
        let _ = writeln!(
            out,
            "\nConversation #{} ({}): {} ↔ {}",
            c["id"],
            str_of(&c["dialect"]),
            str_of(&c["client"]),
            str_of(&c["server"]),
        );
        account(&mut out, c, term);
    }
    if convs.len() > TEXT_CONVERSATIONS {
        let _ = writeln!(
            out,
            "\n… {} more conversations in --format json",
            convs.len() - TEXT_CONVERSATIONS
        );
    }
    out
}

fn str_of(v: &Json) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
}

/// A number with `places` decimals, or "-" when there is none.
fn num(v: &Json, places: usize) -> String {
    match v.as_f64() {
        Some(f) => format!("{f:.places$}"),
        None => "-".into(),
    }
}

fn percent(v: &Json) -> String {
    match v.as_f64() {
        Some(f) => format!("{:.1} %", f * 100.0),
        None => "-".into(),
    }
}

fn arrow(direction: &Json) -> &'static str {
    match direction.as_str() {
        Some("client_to_server") => "C→S",
        Some("server_to_client") => "S→C",
        _ => "?",
    }
}

fn account(out: &mut String, a: &Json, term: Term) {
    let _ = writeln!(
        out,
        "{} datagrams, {} bytes of UDP payload ({} with IP and UDP headers) over {:.3} s",
        a["datagrams"],
        a["udp_bytes"],
        a["wire_bytes"],
        a["duration_s"].as_f64().unwrap_or(0.0),
    );
    messages(out, a, term);
    snapshots(out, &a["snapshots"], term);
    entities(out, &a["entities"]);
    if let Some(s) = a["series"].as_object() {
        series(out, s, term);
    }
    distributions(out, a, term);
    let loss = &a["loss"];
    let family = |f: &Json| {
        format!(
            "{} of {} ({:.2} %)",
            f["lost"],
            f["received"].as_u64().unwrap_or(0) + f["lost"].as_u64().unwrap_or(0),
            f["percent"].as_f64().unwrap_or(0.0)
        )
    };
    let _ = writeln!(
        out,
        "Loss: client messages {}, snapshot ticks {}; {} duplicate datagrams",
        family(&loss["client"]),
        family(&loss["snapshots"]),
        a["duplicates"],
    );
    let c = &a["chunking"];
    if c["datagrams"].as_u64().unwrap_or(0) > 0 {
        let _ = writeln!(
            out,
            "Chunking: {} chunk sets ({}/s), {} chunks per set (most {}), chunks of {} bytes on average, largest {}",
            c["sets"],
            num(&c["sets_per_s"], 2),
            num(&c["chunks_per_set"], 2),
            c["most_chunks"],
            num(&c["mean_bytes"], 1),
            c["largest"],
        );
    }
    let d = &a["datagram_sizes"];
    if let Some(l) = d["largest"].as_object() {
        let _ = writeln!(
            out,
            "Largest datagram: {} bytes of UDP payload (frame {}), {} bytes under the {}-byte MTU; {} over {} bytes, {} over the MTU",
            l["bytes"], l["frame"], d["mtu_headroom"], d["mtu"], d["over_safe"], d["safe_bytes"], d["over_mtu"],
        );
    }
}

fn messages(out: &mut String, a: &Json, term: Term) {
    let rows = a["messages"].as_array().map_or(&[][..], |v| &v[..]);
    if rows.is_empty() {
        return;
    }
    let mut t = table::new(
        term,
        &[
            "Dir", "Message", "Count", "Bytes", "+IP/UDP", "Share", "Mean", "p50", "p95", "Max",
            "kbit/s", "Peak 1 s", "LZ4",
        ],
    );
    for m in rows {
        t.add_row(vec![
            arrow(&m["direction"]).to_string(),
            str_of(&m["name"]),
            m["datagrams"].to_string(),
            m["udp_bytes"].to_string(),
            m["wire_bytes"].to_string(),
            percent(&m["share"]),
            num(&m["mean_bytes"], 1),
            m["p50_bytes"].to_string(),
            m["p95_bytes"].to_string(),
            m["max_bytes"].to_string(),
            num(&m["kbps"], 1),
            num(&m["peak"]["kbps"], 1),
            match m["compressed"].as_object() {
                Some(c) => format!("{}× {}", num(&c["ratio"], 2), c["datagrams"]),
                None => String::new(),
            },
        ]);
    }
    let _ = writeln!(out, "\nBandwidth by message type (bytes: UDP payload)\n{t}");
    for d in a["directions"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "  {}: {} datagrams, {} kbit/s, peak {} kbit/s in 1 s (frames {}-{})",
            arrow(&d["direction"]),
            d["datagrams"],
            num(&d["kbps"], 1),
            num(&d["peak"]["kbps"], 1),
            d["peak"]["first_frame"],
            d["peak"]["last_frame"],
        );
    }
}

fn snapshots(out: &mut String, s: &Json, term: Term) {
    if s["datagrams"].as_u64().unwrap_or(0) == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "\nSnapshots: {} datagrams, {} ticks at {} Hz, {} payload bytes ({} on the wire, {}×), {} kbit/s, peak {} kbit/s",
        s["datagrams"],
        s["ticks"],
        num(&s["hz"], 2),
        s["payload_bytes"],
        s["wire_payload_bytes"],
        num(&s["compression_ratio"], 2),
        num(&s["kbps"], 1),
        num(&s["peak"]["kbps"], 1),
    );
    if let Some(q) = s["quietest_second"].as_object() {
        let _ = writeln!(
            out,
            "  quietest 1 s: {} ticks, between frames {} and {}",
            q["ticks"], q["before_frame"], q["after_frame"]
        );
    }
    let by = str_of(&s["grouped_by"]);
    let mut t = table::new(
        term,
        &[
            if by == "component" {
                "Component"
            } else {
                "Entity type"
            },
            "Entities",
            "Updates",
            "Updates/s",
            "Bytes",
            "Bytes/s",
            "Share",
        ],
    );
    for r in s["entity_types"].as_array().into_iter().flatten() {
        t.add_row(vec![
            str_of(&r["label"]),
            r["entities"].to_string(),
            r["updates"].to_string(),
            num(&r["updates_per_s"], 1),
            r["bytes"].to_string(),
            num(&r["bytes_per_s"], 0),
            percent(&r["share"]),
        ]);
    }
    let _ = writeln!(out, "By {by}\n{t}");
    let mut t = table::new(
        term,
        &[
            "Field",
            "Bit",
            "Present",
            "Bytes",
            "Share",
            "Wire bytes",
            "Wire share",
        ],
    );
    for r in s["fields"].as_array().into_iter().flatten() {
        t.add_row(vec![
            str_of(&r["field"]),
            r["bit"]
                .as_u64()
                .map_or_else(String::new, |b| b.to_string()),
            r["present"]
                .as_u64()
                .map_or_else(String::new, |b| b.to_string()),
            r["bytes"].to_string(),
            percent(&r["share"]),
            num(&r["wire_bytes"], 0),
            percent(&r["wire_share"]),
        ]);
    }
    let _ = writeln!(out, "By field (bytes of the decompressed payload; wire: their share of the compressed bytes)\n{t}");
}

fn entities(out: &mut String, e: &Json) {
    if e["lives"].as_u64().unwrap_or(0) == 0 {
        return;
    }
    let buckets = |key: &str, unit: &str| -> String {
        e[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["entities"].as_u64().unwrap_or(0) > 0)
            .map(|b| {
                let from = num(&b["from"], 2);
                let range = match b["to"].as_f64() {
                    Some(_) => format!("{from}-{}{unit}", num(&b["to"], 2)),
                    None => format!("≥{from}{unit}"),
                };
                format!("{range}: {}", b["entities"])
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        out,
        "\nEntities: {} lives, {} updates; by updates per second: {}",
        e["lives"],
        e["updates"],
        buckets("rate_histogram", "/s"),
    );
    let _ = writeln!(
        out,
        "  by share of the snapshot ticks they were updated in: {}",
        buckets("tick_share_histogram", "")
    );
    if let Some(g) = e["longest_gap"].as_object() {
        let _ = writeln!(
            out,
            "  longest gap: {} ms (entity {}, frames {}-{})",
            num(&g["ms"], 1),
            g["entity"],
            g["from_frame"],
            g["to_frame"]
        );
    }
    if let Some(s) = e["slowest"].as_object() {
        let _ = writeln!(
            out,
            "  least updated (alive 1 s or more): entity {}, {} updates/s (frames {}-{})",
            s["entity"],
            num(&s["updates_per_s"], 2),
            s["first_frame"],
            s["last_frame"]
        );
    }
}

/// Unicode bars for `values` squeezed into `width` columns (each the largest value it covers);
/// a blank column is one where the series is 0, so a stall shows as a gap.
pub fn sparkline(values: &[f64], width: usize) -> String {
    if values.is_empty() || width == 0 {
        return String::new();
    }
    let per = values.len().div_ceil(width);
    let columns: Vec<f64> = values
        .chunks(per)
        .map(|c| c.iter().copied().fold(0.0, f64::max))
        .collect();
    let max = columns.iter().copied().fold(0.0, f64::max);
    columns
        .iter()
        .map(|v| {
            if *v <= 0.0 || max <= 0.0 {
                ' '
            } else {
                let level = ((v / max) * (BARS.len() - 1) as f64).round() as usize;
                BARS[level.min(BARS.len() - 1)]
            }
        })
        .collect()
}

fn series(out: &mut String, s: &serde_json::Map<String, Json>, term: Term) {
    let width = term
        .width
        .map_or(PIPE_WIDTH, |w| w.saturating_sub(LABEL + 16).max(10));
    let floats = |v: &Json| -> Vec<f64> {
        v.as_array()
            .into_iter()
            .flatten()
            .map(|x| x.as_f64().unwrap_or(0.0))
            .collect()
    };
    let mut heading = String::new();
    let mut lines = String::new();
    let mut line = |label: String, v: &Json| {
        let values = floats(v);
        if values.iter().all(|x| *x == 0.0) {
            return;
        }
        let max = values.iter().copied().fold(0.0, f64::max);
        let _ = writeln!(
            lines,
            "  {label:<LABEL$} {} max {}",
            sparkline(&values, width),
            if max.fract() == 0.0 {
                format!("{max}")
            } else {
                format!("{max:.1}")
            }
        );
    };
    let _ = writeln!(
        heading,
        "\nOver time (one column per bucket or group of buckets)"
    );
    line("datagrams C→S".into(), &s["datagrams"]["client_to_server"]);
    line("datagrams S→C".into(), &s["datagrams"]["server_to_client"]);
    for b in s["bytes"].as_array().into_iter().flatten() {
        let mut label = format!("{} {}", arrow(&b["direction"]), str_of(&b["name"]));
        if label.chars().count() > LABEL {
            label = label.chars().take(LABEL - 1).collect::<String>() + "…";
        }
        line(label, &b["values"]);
    }
    for (label, key) in [
        ("snapshots", "snapshots"),
        ("snapshot gap ms", "snapshot_gap_ms_max"),
        ("RTT samples", "rtt_samples"),
        ("RTT ms", "rtt_ms_mean"),
        ("losses", "losses"),
        ("duplicates", "duplicates"),
        ("findings", "findings"),
    ] {
        line(label.into(), &s[key]);
    }
    out.push_str(&heading);
    out.push_str(&lines);
}

fn distributions(out: &mut String, a: &Json, term: Term) {
    let mut t = table::new(
        term,
        &[
            "Distribution",
            "Count",
            "Min",
            "p50",
            "p95",
            "p99",
            "Max",
            "Histogram (log buckets)",
        ],
    );
    let d = &a["distributions"];
    for (label, key) in [
        ("snapshot bytes", "snapshot_bytes"),
        ("snapshot gap ms", "snapshot_gap_ms"),
        ("RTT ms", "rtt_ms"),
    ] {
        let x = &d[key];
        if x["count"].as_u64().unwrap_or(0) == 0 {
            continue;
        }
        let counts: Vec<f64> = x["buckets"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| b["count"].as_f64().unwrap_or(0.0))
            .collect();
        let places = if key == "snapshot_bytes" { 0 } else { 3 };
        t.add_row(vec![
            label.to_string(),
            x["count"].to_string(),
            num(&x["min"], places),
            num(&x["p50"], places),
            num(&x["p95"], places),
            num(&x["p99"], places),
            num(&x["max"], places),
            format!(
                "{}–{} {}",
                num(&x["buckets"][0]["from"], places),
                num(&x["buckets"][counts.len().saturating_sub(1)]["to"], places),
                sparkline(&counts, counts.len())
            ),
        ]);
    }
    let _ = writeln!(out, "\nDistributions\n{t}");
}

#[cfg(test)]
mod tests {
    use super::sparkline;

    #[test]
    fn sparklines_scale_and_show_stalls() {
        assert_eq!(sparkline(&[0.0, 1.0, 2.0, 4.0, 8.0], 5), " ▂▃▅█");
        // Squeezed: each column is the largest value it covers.
        assert_eq!(sparkline(&[1.0, 8.0, 0.0, 0.0, 8.0, 8.0], 3), "█ █");
        assert_eq!(sparkline(&[], 10), "");
        assert_eq!(sparkline(&[0.0, 0.0], 10), "  ");
    }
}
