//! `rtype-inspect diff OLD NEW`: is the new build worse? What changed between two captures (or
//! two saved `profile --format json` documents): the headline figures first (kbit/s per direction,
//! snapshot kbit/s and rate, RTT p95, loss, findings per rule per minute), then the other figures
//! (message mix, bytes per message type, per entity type and per field, percentiles) ranked by
//! weight: how much of the capture's bytes or time a figure stands for, times its relative change.
//! One-off figures (fewer than [`FEW`] datagrams or findings on either side) and figures under
//! [`FLOOR`] of the bytes are folded: compared, in the JSON, but neither shown nor judged.
//! `--fail-above PERCENT` makes it a CI gate (exit 1) on regressions only: a figure that moved the
//! worse way (more bytes, lower rate, more loss, more findings) by more than PERCENT; by default
//! the headline figures, else those `--only` (or the configuration's `diff_only`) names.
//!
//! Captures of different lengths compare by rates, shares and means rather than totals: a
//! shorter session of the same build changes no headline figure much.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value as Json;

use super::profile::{self, document::SCHEMA as PROFILE_SCHEMA};
use super::{table, Tool};
use crate::app::{write_stdout, Format, ReadOpts, Reading, Term};

/// The schema of the diff's JSON document.
pub const SCHEMA: &str = "diff/2";
/// Largest saved profile read (a bounded read: a profile is at most a few MB).
const MAX_PROFILE: u64 = 256 << 20;
/// Other changes listed in the text after the headline (the JSON holds them all).
const TEXT_CHANGES: usize = 20;
/// A figure resting on fewer datagrams (or findings, or samples) than this on both sides is a
/// one-off: a handshake message, a finding raised once per conversation.
pub const FEW: f64 = 10.0;
/// A figure standing for less than this share of the bytes on both sides is folded.
pub const FLOOR: f64 = 0.01;
/// A relative change counts at most this much in the ranking (a figure that appears counts as
/// this), so that weight decides between large changes.
const RANK_CAP: f64 = 10.0;

/// `rtype-inspect diff`'s options, as `cli::args` parsed them.
pub struct DiffOptions {
    pub old: PathBuf,
    pub new: PathBuf,
    pub fail_above: Option<f64>,
    pub only: Vec<String>,
    pub format: Format,
    pub read: ReadOpts,
}

/// Which way a figure gets worse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Worse {
    Up,
    Down,
    /// Neither: a share or a mix.
    Neither,
}

/// One figure of one profile, with what it takes to rank and judge it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Figure {
    pub value: f64,
    /// The share (0 to 1) of the capture's bytes, or of its time, the figure stands for.
    pub weight: f64,
    /// The datagrams, findings or samples it rests on.
    pub events: f64,
    pub worse: Worse,
    /// A headline figure: shown first and judged by default.
    pub headline: bool,
    /// A percentage of a whole (loss): it regresses by its change in percentage points, not
    /// relative to itself (1.2 % → 1.8 % of ticks lost is 0.6 points, not +50 %).
    pub points: bool,
}

/// One figure in both profiles.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub figure: String,
    pub old: Option<f64>,
    pub new: Option<f64>,
    pub weight: f64,
    pub worse: Worse,
    pub headline: bool,
    /// A percentage of a whole, judged in percentage points ([`Figure::points`]).
    pub points: bool,
    /// A one-off or a figure under the floor: neither shown in the text nor judged by default.
    pub folded: bool,
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

    /// How far the figure moved the worse way, relative to the old value (in percentage points
    /// over 100 for a percentage of a whole); 0 for a saving, or a figure that is neither better
    /// nor worse either way.
    pub fn regression(&self) -> f64 {
        let r = if self.points {
            self.absolute() / 100.0
        } else {
            self.relative()
        };
        match self.worse {
            Worse::Up => r.max(0.0),
            Worse::Down => (-r).max(0.0),
            Worse::Neither => 0.0,
        }
    }

    /// What ranks the change among the others: its weight times its relative change (capped).
    pub fn rank(&self) -> f64 {
        self.weight * self.relative().abs().min(RANK_CAP)
    }

    fn status(&self) -> Status {
        match (self.old, self.new) {
            (None, Some(_)) => Status::New,
            (Some(_), None) => Status::Gone,
            _ if self.absolute() == 0.0 => Status::Same,
            _ => Status::Changed,
        }
    }
}

/// Whether a figure is in both profiles, and changed.
#[derive(Clone, Copy, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Status {
    Changed,
    Same,
    New,
    Gone,
}

/// The text shows the name the JSON does.
impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        self.serialize(f)
    }
}

/// The document `rtype-inspect diff OLD NEW --format json` writes: every figure compared (from
/// each side's profile, capture-wide): the headline figures first, then the others by weight ×
/// relative change, the folded ones last. Figures are shares, means, rates, percentiles and
/// findings per minute, so captures of different lengths compare.
// The fields of each struct are in the order serde_json's sorted maps wrote them before.
#[derive(Serialize, JsonSchema)]
#[schemars(title = "rtype-inspect diff", deny_unknown_fields)]
pub struct Diff<'a> {
    changes: Vec<ChangeJson<'a>>,
    /// --fail-above, in percent.
    fail_above: Option<f64>,
    /// Judged figures that regressed (moved the worse way) by more than fail_above percent: the
    /// headline figures that are not folded, or every figure `only` names (the run exits 1 when
    /// there is one).
    failing: Vec<&'a str>,
    new: Side<'a>,
    old: Side<'a>,
    /// The figure name prefixes compared and judged (--only, else the configuration's diff_only;
    /// all compared and the headline judged when empty).
    only: &'a [String],
    #[schemars(extend("const" = SCHEMA))]
    schema: &'static str,
    tool: Tool,
}

/// One side of the comparison.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Side<'a> {
    file: String,
    from: Origin,
    /// the snapshot profile its rtype snapshots were read with (document: the document's layout);
    /// null for a saved profile that does not say
    layout: Option<&'a str>,
}

/// What a side was read from.
#[derive(Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Origin {
    Capture,
    Profile,
}

/// One figure compared.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct ChangeJson<'a> {
    /// new − old (a missing side counts as 0).
    change: f64,
    /// mix_percent.*, mean_bytes.*, kbps.*, compression_ratio.* (per dialect, direction and
    /// message), rate.*, entity_type.*, field.*, snapshot_bytes.*, snapshot_gap_ms.*, rtt_ms.*,
    /// loss_percent.*, findings_per_min.* (per rule)
    figure: &'a str,
    /// A one-off (fewer than 10 datagrams, findings or samples on both sides) or, outside the
    /// headline, under 1 % of the bytes: not shown in the text, not judged unless named.
    folded: bool,
    /// kbit/s per direction, snapshot kbit/s and rate, RTT p95, loss, findings per rule per minute.
    headline: bool,
    new: Option<f64>,
    old: Option<f64>,
    /// The figure moved the worse way.
    regression: bool,
    /// change / |old|; null when the figure appeared, vanished or grew from 0.
    relative: Option<f64>,
    status: Status,
    /// The share (0 to 1) of the capture's bytes (or, for timings, loss and findings, of its
    /// time: 1) the figure stands for, the larger side's.
    #[schemars(range(min = 0))]
    weight: f64,
    /// Which way the figure gets worse (neither: a share or a mix).
    worse: Worse,
}

/// Runs `rtype-inspect diff`.
pub fn run(options: DiffOptions, term: Term) -> Result<ExitCode, String> {
    if let Some(p) = options.fail_above.filter(|p| !p.is_finite() || *p < 0.0) {
        return Err(format!(
            "--fail-above must be a percentage of 0 or more, not {p}"
        ));
    }
    let reading = options.read.reading()?;
    let only = if options.only.is_empty() {
        reading.config.diff_only.clone()
    } else {
        options.only.clone()
    };
    let old = load(&options.old, &reading)?;
    let new = load(&options.new, &reading)?;
    let changes: Vec<Change> = compare(&figures(&old.1), &figures(&new.1))
        .into_iter()
        .filter(|c| only.is_empty() || only.iter().any(|p| c.figure.starts_with(p)))
        .collect();
    let failing = match options.fail_above {
        Some(p) => failing(&changes, !only.is_empty(), p),
        None => Vec::new(),
    };
    let out = match options.format {
        Format::Json => {
            let j = Diff {
                changes: changes.iter().map(change_json).collect(),
                fail_above: options.fail_above,
                failing: failing.iter().map(|c| c.figure.as_str()).collect(),
                new: side(&options.new, &new),
                old: side(&options.old, &old),
                only: &only,
                schema: SCHEMA,
                tool: Tool::THIS,
            };
            serde_json::to_string_pretty(&j).unwrap_or_default() + "\n"
        }
        Format::Text => {
            let layouts = [&old, &new].map(|p| layout(p).unwrap_or(""));
            text(&options, layouts, &changes, &failing, term)
        }
    };
    write_stdout(out.as_bytes())?;
    Ok(ExitCode::from(u8::from(!failing.is_empty())))
}

/// The changes that regressed by more than `percent`: every one of `changes` when they were
/// named (`--only`), else the headline figures that are not folded.
pub fn failing(changes: &[Change], named: bool, percent: f64) -> Vec<&Change> {
    changes
        .iter()
        .filter(|c| named || (c.headline && !c.folded))
        .filter(|c| c.regression() * 100.0 > percent)
        .collect()
}

/// A profile document: read from a saved one (what its first byte says), or made from a capture.
/// Returns where it came from and the document.
fn load(path: &Path, reading: &Reading) -> Result<(Origin, Json), String> {
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
        return Ok((Origin::Profile, j));
    }
    Ok((
        Origin::Capture,
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
pub fn figures(profile: &Json) -> BTreeMap<String, Figure> {
    let t = &profile["total"];
    let mut out = BTreeMap::new();
    let seconds = t["duration_s"].as_f64().unwrap_or(0.0);
    let per_s = |n: Option<f64>| n.filter(|_| seconds > 0.0).map(|n| n / seconds);
    let total = t["udp_bytes"].as_f64().unwrap_or(0.0);
    let share = |bytes: Option<f64>| match bytes {
        Some(b) if total > 0.0 => b / total,
        _ => 0.0,
    };
    let mut put = |name: String, value: Option<f64>, weight: f64, events: f64, worse, headline| {
        if let Some(value) = value.filter(|v| v.is_finite()) {
            let figure = Figure {
                value,
                weight,
                events,
                worse,
                headline,
                points: name.starts_with("loss_percent."),
            };
            out.insert(name, figure);
        }
    };
    use Worse::{Down, Neither, Up};
    for m in t["messages"].as_array().into_iter().flatten() {
        let key = format!(
            "{}.{}.{}",
            m["dialect"].as_str().unwrap_or("?"),
            arrow(&m["direction"]),
            m["name"].as_str().unwrap_or("?")
        );
        let (w, n) = (
            m["share"].as_f64().unwrap_or(0.0),
            m["datagrams"].as_f64().unwrap_or(0.0),
        );
        let mix = m["datagram_share"].as_f64().map(|s| s * 100.0);
        put(format!("mix_percent.{key}"), mix, w, n, Neither, false);
        put(
            format!("mean_bytes.{key}"),
            m["mean_bytes"].as_f64(),
            w,
            n,
            Up,
            false,
        );
        put(format!("kbps.{key}"), m["kbps"].as_f64(), w, n, Up, false);
        let ratio = m["compression_ratio"].as_f64();
        put(format!("compression_ratio.{key}"), ratio, w, n, Down, false);
    }
    for d in t["directions"].as_array().into_iter().flatten() {
        let dir = arrow(&d["direction"]);
        let w = share(d["udp_bytes"].as_f64());
        let n = d["datagrams"].as_f64().unwrap_or(0.0);
        put(
            format!("rate.{dir}.kbps"),
            d["kbps"].as_f64(),
            w,
            n,
            Up,
            dir != "unknown",
        );
        let rate = per_s(d["datagrams"].as_f64());
        put(format!("rate.{dir}.datagrams_per_s"), rate, w, n, Up, false);
    }
    let s = &t["snapshots"];
    let snapshots = s["datagrams"].as_f64().unwrap_or(0.0);
    let ws = share(s["udp_bytes"].as_f64());
    put(
        "rate.snapshot_hz".into(),
        s["hz"].as_f64(),
        ws,
        snapshots,
        Down,
        true,
    );
    put(
        "rate.snapshot_kbps".into(),
        s["kbps"].as_f64(),
        ws,
        snapshots,
        Up,
        true,
    );
    let e = &t["entities"];
    let updates = e["updates"].as_f64();
    let n = updates.unwrap_or(0.0);
    put(
        "rate.entity_updates_per_s".into(),
        per_s(updates),
        ws,
        n,
        Neither,
        false,
    );
    for ty in s["entity_types"].as_array().into_iter().flatten() {
        let name = match ty["type_id"].as_u64() {
            Some(id) => format!("{}({id})", ty["type"].as_str().unwrap_or("?")),
            None => ty["type"].as_str().unwrap_or("?").to_owned(),
        };
        let w = ws * ty["share"].as_f64().unwrap_or(0.0);
        let n = ty["updates"].as_f64().unwrap_or(0.0);
        let bytes = ty["bytes_per_s"].as_f64();
        put(
            format!("entity_type.{name}.bytes_per_s"),
            bytes,
            w,
            n,
            Up,
            false,
        );
        let pct = ty["share"].as_f64().map(|v| v * 100.0);
        put(
            format!("entity_type.{name}.share_percent"),
            pct,
            w,
            n,
            Neither,
            false,
        );
        let rate = ty["updates_per_s"].as_f64();
        put(
            format!("entity_type.{name}.updates_per_s"),
            rate,
            w,
            n,
            Neither,
            false,
        );
    }
    for f in s["fields"].as_array().into_iter().flatten() {
        let name = f["field"].as_str().unwrap_or("?");
        let w = ws * f["share"].as_f64().unwrap_or(0.0);
        let n = f["present"].as_f64().unwrap_or(snapshots);
        let per = f["bytes"]
            .as_f64()
            .filter(|_| snapshots > 0.0)
            .map(|b| b / snapshots);
        put(
            format!("field.{name}.bytes_per_snapshot"),
            per,
            w,
            n,
            Up,
            false,
        );
        let pct = f["share"].as_f64().map(|v| v * 100.0);
        put(
            format!("field.{name}.share_percent"),
            pct,
            w,
            n,
            Neither,
            false,
        );
    }
    let d = &t["distributions"];
    // Sizes weigh as the snapshots' bytes, timings as the whole session's time.
    for (name, w) in [
        ("snapshot_bytes", ws),
        ("snapshot_gap_ms", 1.0),
        ("rtt_ms", 1.0),
    ] {
        let n = d[name]["count"].as_f64().unwrap_or(0.0);
        for q in ["p50", "p95", "p99"] {
            let headline = name == "rtt_ms" && q == "p95";
            put(
                format!("{name}.{q}"),
                d[name][q].as_f64(),
                w,
                n,
                Up,
                headline,
            );
        }
    }
    for family in ["client", "snapshots"] {
        let l = &t["loss"][family];
        let n = l["received"].as_f64().unwrap_or(0.0) + l["lost"].as_f64().unwrap_or(0.0);
        put(
            format!("loss_percent.{family}"),
            l["percent"].as_f64(),
            1.0,
            n,
            Up,
            true,
        );
    }
    let minutes = seconds / 60.0;
    for f in profile["findings"].as_array().into_iter().flatten() {
        let count = f["count"].as_f64();
        let rate = count.filter(|_| minutes > 0.0).map(|n| n / minutes);
        let name = format!("findings_per_min.{}", f["id"].as_str().unwrap_or("?"));
        put(name, rate, 1.0, count.unwrap_or(0.0), Up, true);
    }
    out
}

/// The headline figures' order: traffic, snapshots, round trip, loss, then findings.
fn headline_order(figure: &str) -> usize {
    const ORDER: [&str; 8] = [
        "rate.c2s.kbps",
        "rate.s2c.kbps",
        "rate.snapshot_kbps",
        "rate.snapshot_hz",
        "rtt_ms.p95",
        "loss_percent.client",
        "loss_percent.snapshots",
        "findings_per_min.",
    ];
    ORDER
        .iter()
        .position(|h| figure.starts_with(h))
        .unwrap_or(ORDER.len())
}

/// Every figure of either side: the headline first (in [`headline_order`], findings by rule),
/// then the others by [`Change::rank`], the folded ones last, then by name.
pub fn compare(old: &BTreeMap<String, Figure>, new: &BTreeMap<String, Figure>) -> Vec<Change> {
    let mut names: Vec<&String> = old.keys().chain(new.keys()).collect();
    names.sort();
    names.dedup();
    let mut changes: Vec<Change> = names
        .into_iter()
        .map(|n| {
            let (o, w) = (old.get(n), new.get(n));
            let either = o.or(w).expect("a name of either side");
            let most = |f: fn(&Figure) -> f64| o.map_or(0.0, f).max(w.map_or(0.0, f));
            let (weight, events) = (most(|f| f.weight), most(|f| f.events));
            Change {
                figure: n.clone(),
                old: o.map(|f| f.value),
                new: w.map(|f| f.value),
                weight,
                worse: either.worse,
                headline: either.headline,
                points: either.points,
                folded: events < FEW || !either.headline && weight < FLOOR,
            }
        })
        .collect();
    changes.sort_by(|a, b| {
        a.folded
            .cmp(&b.folded)
            .then(b.headline.cmp(&a.headline))
            .then(headline_order(&a.figure).cmp(&headline_order(&b.figure)))
            .then(b.rank().total_cmp(&a.rank()))
            .then(a.figure.cmp(&b.figure))
    });
    changes
}

/// The snapshot profile a side's rtype snapshots were read with, when its document says.
fn layout((_, profile): &(Origin, Json)) -> Option<&str> {
    profile["snapshot_profile"].as_str()
}

/// The side read from `path`, as `load` returned it.
fn side<'a>(path: &Path, loaded: &'a (Origin, Json)) -> Side<'a> {
    Side {
        file: path.display().to_string(),
        from: loaded.0,
        layout: layout(loaded),
    }
}

fn change_json(c: &Change) -> ChangeJson<'_> {
    let relative = c.relative();
    ChangeJson {
        change: c.absolute(),
        figure: &c.figure,
        folded: c.folded,
        headline: c.headline,
        new: c.new,
        old: c.old,
        regression: c.regression() > 0.0,
        relative: relative.is_finite().then_some(relative),
        status: c.status(),
        weight: c.weight,
        worse: c.worse,
    }
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

/// The text form; `layouts` are the snapshot profiles the old and new captures were read with,
/// said when either is not the document's.
fn text(
    options: &DiffOptions,
    layouts: [&str; 2],
    changes: &[Change],
    failing: &[&Change],
    term: Term,
) -> String {
    let mut out = String::new();
    let changed: Vec<&Change> = changes
        .iter()
        .filter(|c| c.status() != Status::Same)
        .collect();
    let _ = writeln!(
        out,
        "diff: {} → {}: {} figures compared, {} changed",
        options.old.display(),
        options.new.display(),
        changes.len(),
        changed.len()
    );
    if layouts.iter().any(|l| *l != "document") {
        let _ = writeln!(
            out,
            "snapshots read with profile {} → {}",
            layouts[0], layouts[1]
        );
    }
    if changed.is_empty() {
        out += "No change.\n";
    } else {
        let (headline, others): (Vec<&Change>, Vec<&Change>) = changes
            .iter()
            .filter(|c| !c.folded)
            .partition(|c| c.headline);
        if !headline.is_empty() {
            let _ = writeln!(out, "Headline\n{}", table_of(&headline, term));
        }
        let others: Vec<&Change> = others
            .into_iter()
            .filter(|c| c.status() != Status::Same)
            .collect();
        let shown = others.len().min(TEXT_CHANGES);
        if shown > 0 {
            let _ = writeln!(
                out,
                "Other changes, by weight (share of the bytes or time × change)\n{}",
                table_of(&others[..shown], term)
            );
        }
        let folded = changed.iter().filter(|c| c.folded).count();
        let rest = others.len() - shown;
        if folded + rest > 0 {
            let _ = writeln!(
                out,
                "… {rest} smaller changes, and {folded} folded (one-off: under {FEW} datagrams or \
                 findings; or under {} % of the bytes), in --format json",
                FLOOR * 100.0
            );
        }
    }
    if let Some(p) = options.fail_above {
        if failing.is_empty() {
            let _ = writeln!(out, "pass: no judged figure regressed by more than {p} %");
        } else {
            let names: Vec<&str> = failing.iter().map(|c| c.figure.as_str()).collect();
            let _ = writeln!(
                out,
                "FAIL: {} figure{} regressed by more than {p} %: {}",
                failing.len(),
                if failing.len() == 1 { "" } else { "s" },
                names.join(", ")
            );
        }
    }
    out
}

/// The changes as a table: the figure, both values, the change, and whether it is worse.
fn table_of(changes: &[&Change], term: Term) -> String {
    let mut t = table::new(term, &["Figure", "Old", "New", "Change", "Change %", ""]);
    table::keep_whole(&mut t, 0);
    for c in changes {
        let r = c.relative();
        let percent = if r.is_finite() {
            format!("{:+.1} %", r * 100.0)
        } else {
            c.status().to_string()
        };
        let verdict = if c.regression() > 0.0 {
            "worse"
        } else if c.worse != Worse::Neither && c.absolute() != 0.0 {
            "better"
        } else {
            ""
        };
        t.add_row(vec![
            table::cell(&c.figure),
            table::cell(number(c.old)),
            table::cell(number(c.new)),
            table::cell(signed(c.absolute())),
            table::cell(percent),
            table::cell(verdict),
        ]);
    }
    t.to_string()
}

#[cfg(test)]
mod tests;
