//! `rtype-inspect diff OLD NEW`: what changed between two captures (or two saved
//! `profile --format json` documents): the message mix, bytes per message type, per entity type
//! and per field, rates, round-trip, gap and size percentiles, loss, and findings per rule, each
//! with its absolute and relative change, the largest changes first. `--fail-above PERCENT`
//! makes it a CI gate (exit 1).
//!
//! Captures of different lengths compare by rates and shares rather than totals: a figure is a
//! share, a mean, a rate per second or a percentile, except the finding counts.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{json, Value as Json};

use super::profile::{self, json::SCHEMA as PROFILE_SCHEMA};
use super::table;
use crate::app::{write_stdout, Format, ReadOpts, Reading, Term};

/// The schema of the diff's JSON document.
pub const SCHEMA: &str = "diff/1";
/// Largest saved profile read (a bounded read: a profile is at most a few MB).
const MAX_PROFILE: u64 = 256 << 20;
/// Changes listed in the text (the JSON holds them all).
const TEXT_CHANGES: usize = 40;

/// Arguments of `rtype-inspect diff`.
#[derive(clap::Args)]
pub struct DiffArgs {
    /// The baseline: a capture, or a saved `profile --format json`.
    old: PathBuf,
    /// The capture (or saved profile) to compare with it.
    new: PathBuf,
    /// Exit 1 when a figure changed by more than PERCENT either way (a figure that appears or
    /// disappears counts as an infinite change).
    #[arg(long, value_name = "PERCENT")]
    fail_above: Option<f64>,
    /// Compare only the figures whose name starts with PREFIX (repeatable), e.g. `field.` or
    /// `rtt_ms.`.
    #[arg(long = "only", value_name = "PREFIX")]
    only: Vec<String>,
    /// Output form: text (a table of changes), or json (one document).
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    #[command(flatten)]
    read: ReadOpts,
}

/// One figure in both profiles.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub figure: String,
    pub old: Option<f64>,
    pub new: Option<f64>,
}

impl Change {
    pub fn absolute(&self) -> f64 {
        self.new.unwrap_or(0.0) - self.old.unwrap_or(0.0)
    }

    /// The change relative to the old value; infinite for a figure that appeared or vanished
    /// (or grew from 0).
    pub fn relative(&self) -> f64 {
        let (old, new) = (self.old.unwrap_or(0.0), self.new.unwrap_or(0.0));
        if self.old.is_none() || self.new.is_none() || (old == 0.0 && new != 0.0) {
            if old == new {
                0.0
            } else {
                f64::INFINITY.copysign(new - old)
            }
        } else if old == 0.0 {
            0.0
        } else {
            (new - old) / old.abs()
        }
    }

    fn status(&self) -> &'static str {
        match (self.old, self.new) {
            (None, Some(_)) => "new",
            (Some(_), None) => "gone",
            _ if self.absolute() == 0.0 => "same",
            _ => "changed",
        }
    }
}

/// Runs `rtype-inspect diff`.
pub fn run(args: DiffArgs, term: Term) -> Result<ExitCode, String> {
    if let Some(p) = args.fail_above.filter(|p| !p.is_finite() || *p < 0.0) {
        return Err(format!(
            "--fail-above must be a percentage of 0 or more, not {p}"
        ));
    }
    let reading = args.read.reading()?;
    let old = load(&args.old, &reading)?;
    let new = load(&args.new, &reading)?;
    let changes: Vec<Change> = compare(&figures(&old.1), &figures(&new.1))
        .into_iter()
        .filter(|c| args.only.is_empty() || args.only.iter().any(|p| c.figure.starts_with(p)))
        .collect();
    let failing: Vec<&Change> = match args.fail_above {
        Some(p) => changes
            .iter()
            .filter(|c| c.relative().abs() * 100.0 > p)
            .collect(),
        None => Vec::new(),
    };
    let out = match args.format {
        Format::Json => {
            let j = json!({
                "schema": SCHEMA,
                "tool": {"name": env!("CARGO_PKG_NAME"), "version": env!("CARGO_PKG_VERSION")},
                "old": {"file": args.old.display().to_string(), "from": old.0},
                "new": {"file": args.new.display().to_string(), "from": new.0},
                "only": args.only,
                "fail_above": args.fail_above,
                "failing": failing.iter().map(|c| c.figure.as_str()).collect::<Vec<_>>(),
                "changes": changes.iter().map(change_json).collect::<Vec<_>>(),
            });
            serde_json::to_string_pretty(&j).unwrap_or_default() + "\n"
        }
        Format::Text => text(&args, &changes, &failing, term),
    };
    write_stdout(out.as_bytes())?;
    Ok(ExitCode::from(u8::from(!failing.is_empty())))
}

/// A profile document: read from a saved one (what its first byte says), or made from a capture.
/// Returns where it came from ("profile" or "capture") and the document.
fn load(path: &Path, reading: &Reading) -> Result<(&'static str, Json), String> {
    let shown = path.display();
    let mut head = [0u8; 1];
    let mut file = std::fs::File::open(path).map_err(|e| format!("{shown}: {e}"))?;
    let n = file.read(&mut head).map_err(|e| format!("{shown}: {e}"))?;
    if n == 1 && matches!(head[0], b'{' | b' ' | b'\n' | b'\t' | b'\r') {
        let mut text = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_PROFILE + 1).read_to_end(&mut text))
            .map_err(|e| format!("{shown}: {e}"))?;
        if text.len() as u64 > MAX_PROFILE {
            return Err(format!("{shown}: profile larger than {MAX_PROFILE} bytes"));
        }
        let j: Json = serde_json::from_slice(&text)
            .map_err(|e| format!("{shown}: not a profile (JSON: {e})"))?;
        if j["schema"] != PROFILE_SCHEMA {
            return Err(format!(
                "{shown}: not a profile (its schema is {}, not {PROFILE_SCHEMA})",
                j["schema"]
            ));
        }
        return Ok(("profile", j));
    }
    Ok((
        "capture",
        profile::profile_file(path, reading, 1_000_000_000)?,
    ))
}

fn arrow(direction: &Json) -> &'static str {
    match direction.as_str() {
        Some("client_to_server") => "c2s",
        Some("server_to_client") => "s2c",
        _ => "unknown",
    }
}

/// The figures a diff compares, by name, from a profile's capture-wide account.
pub fn figures(profile: &Json) -> BTreeMap<String, f64> {
    let t = &profile["total"];
    let mut out = BTreeMap::new();
    let mut put = |name: String, v: &Json| {
        if let Some(v) = v.as_f64() {
            out.insert(name, v);
        }
    };
    let seconds = t["duration_s"].as_f64().unwrap_or(0.0);
    for m in t["messages"].as_array().into_iter().flatten() {
        let key = format!(
            "{}.{}.{}",
            m["dialect"].as_str().unwrap_or("?"),
            arrow(&m["direction"]),
            m["name"].as_str().unwrap_or("?")
        );
        put(
            format!("mix_percent.{key}"),
            &json!(m["datagram_share"].as_f64().map(|s| s * 100.0)),
        );
        put(format!("mean_bytes.{key}"), &m["mean_bytes"]);
        put(format!("kbps.{key}"), &m["kbps"]);
        put(format!("compression_ratio.{key}"), &m["compression_ratio"]);
    }
    for d in t["directions"].as_array().into_iter().flatten() {
        let dir = arrow(&d["direction"]);
        put(format!("rate.{dir}.kbps"), &d["kbps"]);
        let per_s = d["datagrams"]
            .as_f64()
            .filter(|_| seconds > 0.0)
            .map(|n| n / seconds);
        put(format!("rate.{dir}.datagrams_per_s"), &json!(per_s));
    }
    let s = &t["snapshots"];
    put("rate.snapshot_hz".into(), &s["hz"]);
    put("rate.snapshot_kbps".into(), &s["kbps"]);
    let e = &t["entities"];
    let updates = e["updates"]
        .as_f64()
        .filter(|_| seconds > 0.0)
        .map(|n| n / seconds);
    put("rate.entity_updates_per_s".into(), &json!(updates));
    for ty in s["entity_types"].as_array().into_iter().flatten() {
        let name = match ty["type_id"].as_u64() {
            Some(id) => format!("{}({id})", ty["type"].as_str().unwrap_or("?")),
            None => ty["type"].as_str().unwrap_or("?").to_owned(),
        };
        put(
            format!("entity_type.{name}.bytes_per_s"),
            &ty["bytes_per_s"],
        );
        put(
            format!("entity_type.{name}.share_percent"),
            &json!(ty["share"].as_f64().map(|v| v * 100.0)),
        );
        put(
            format!("entity_type.{name}.updates_per_s"),
            &ty["updates_per_s"],
        );
    }
    let snapshots = s["datagrams"].as_f64().unwrap_or(0.0);
    for f in s["fields"].as_array().into_iter().flatten() {
        let name = f["field"].as_str().unwrap_or("?");
        let per = f["bytes"]
            .as_f64()
            .filter(|_| snapshots > 0.0)
            .map(|b| b / snapshots);
        put(format!("field.{name}.bytes_per_snapshot"), &json!(per));
        put(
            format!("field.{name}.share_percent"),
            &json!(f["share"].as_f64().map(|v| v * 100.0)),
        );
    }
    let d = &t["distributions"];
    for (name, key) in [
        ("snapshot_bytes", "snapshot_bytes"),
        ("snapshot_gap_ms", "snapshot_gap_ms"),
        ("rtt_ms", "rtt_ms"),
    ] {
        for q in ["p50", "p95", "p99"] {
            put(format!("{name}.{q}"), &d[key][q]);
        }
    }
    for (family, key) in [("client", "client"), ("snapshots", "snapshots")] {
        put(format!("loss_percent.{family}"), &t["loss"][key]["percent"]);
    }
    for f in profile["findings"].as_array().into_iter().flatten() {
        put(
            format!("findings.{}", f["id"].as_str().unwrap_or("?")),
            &f["count"],
        );
    }
    out
}

/// Every figure of either side, the largest relative change first (figures that appeared or
/// vanished lead), then by the size of the absolute change, then by name.
pub fn compare(old: &BTreeMap<String, f64>, new: &BTreeMap<String, f64>) -> Vec<Change> {
    let mut names: Vec<&String> = old.keys().chain(new.keys()).collect();
    names.sort();
    names.dedup();
    let mut changes: Vec<Change> = names
        .into_iter()
        .map(|n| Change {
            figure: n.clone(),
            old: old.get(n).copied(),
            new: new.get(n).copied(),
        })
        .collect();
    changes.sort_by(|a, b| {
        b.relative()
            .abs()
            .total_cmp(&a.relative().abs())
            .then(b.absolute().abs().total_cmp(&a.absolute().abs()))
            .then(a.figure.cmp(&b.figure))
    });
    changes
}

fn change_json(c: &Change) -> Json {
    let relative = c.relative();
    json!({
        "figure": c.figure, "old": c.old, "new": c.new, "change": c.absolute(),
        "relative": relative.is_finite().then_some(relative), "status": c.status(),
    })
}

fn number(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v.fract() == 0.0 && v.abs() < 1e15 => format!("{v}"),
        Some(v) => format!("{v:.3}"),
    }
}

/// A change with its sign.
fn signed(v: f64) -> String {
    let n = number(Some(v.abs()));
    if v < 0.0 {
        format!("-{n}")
    } else {
        format!("+{n}")
    }
}

fn text(args: &DiffArgs, changes: &[Change], failing: &[&Change], term: Term) -> String {
    let mut out = String::new();
    let changed: Vec<&Change> = changes.iter().filter(|c| c.status() != "same").collect();
    let _ = writeln!(
        out,
        "diff: {} → {}: {} figures compared, {} changed",
        args.old.display(),
        args.new.display(),
        changes.len(),
        changed.len()
    );
    if changed.is_empty() {
        out += "No change.\n";
    } else {
        let mut t = table::new(term, &["Figure", "Old", "New", "Change", "Change %"]);
        table::keep_whole(&mut t, 0);
        for c in changed.iter().take(TEXT_CHANGES) {
            let r = c.relative();
            let percent = if r.is_finite() {
                format!("{:+.1} %", r * 100.0)
            } else {
                c.status().into()
            };
            t.add_row(vec![
                table::cell(&c.figure),
                table::cell(number(c.old)),
                table::cell(number(c.new)),
                table::cell(signed(c.absolute())),
                table::cell(percent),
            ]);
        }
        let _ = writeln!(out, "{t}");
        if changed.len() > TEXT_CHANGES {
            let _ = writeln!(
                out,
                "… {} smaller changes in --format json",
                changed.len() - TEXT_CHANGES
            );
        }
    }
    if let Some(p) = args.fail_above {
        if failing.is_empty() {
            let _ = writeln!(out, "pass: no figure changed by more than {p} %");
        } else {
            let names: Vec<&str> = failing.iter().map(|c| c.figure.as_str()).collect();
            let _ = writeln!(
                out,
                "FAIL: {} figure{} changed by more than {p} %: {}",
                failing.len(),
                if failing.len() == 1 { "" } else { "s" },
                names.join(", ")
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn largest_changes_first() {
        let old = map(&[
            ("a", 100.0),
            ("b", 10.0),
            ("c", 5.0),
            ("gone", 1.0),
            ("zero", 0.0),
        ]);
        let new = map(&[
            ("a", 110.0),
            ("b", 5.0),
            ("c", 5.0),
            ("new", 2.0),
            ("zero", 3.0),
        ]);
        let changes = compare(&old, &new);
        let order: Vec<(&str, f64)> = changes
            .iter()
            .map(|c| (c.figure.as_str(), c.relative()))
            .collect();
        assert_eq!(
            order,
            [
                ("zero", f64::INFINITY),
                ("new", f64::INFINITY),
                ("gone", f64::NEG_INFINITY),
                ("b", -0.5),
                ("a", 0.1),
                ("c", 0.0)
            ]
        );
        assert_eq!(changes[0].status(), "changed");
        assert_eq!(changes[1].status(), "new");
        assert_eq!(changes[2].status(), "gone");
        assert_eq!(changes[5].status(), "same");
        assert_eq!(changes[3].absolute(), -5.0);
    }
}
