//! `rtype-inspect report FILE... --format svg -o DIR`: the report's main graphs as standalone
//! SVG files (for CI artifacts), drawn here from the same per-capture document the HTML page
//! embeds (its `profile --format json` document, tolerance, budgets and world view). Per
//! conversation with
//! time series: `<stem>-c<id>-io.svg` (kbit/s per message type stacked, datagrams/s),
//! `-gap.svg` (snapshot gap, the nominal line and jitter band), `-rtt.svg`; per conversation:
//! `-types.svg` and `-fields.svg` (snapshot bytes by entity type and by field, sorted bars);
//! per conversation whose client held entities, `-world.svg` (the page's world view at four of
//! its keyframes, see [`world::WORLD_PANELS`]).
//!
//! Every plotted series is a `<g class="series" data-series=NAME data-points=N>` whose
//! polylines and circles hold its N points, one per bucket with a value; every bar chart a
//! `<g class="bars" data-bars=N>` of N `<rect class="bar">`. A file holds at most the profile's
//! buckets times its message rows points (both bounded, see SECURITY.md); a world view file
//! [`world::WORLD_PANELS`] times `ENTITIES_PER_KEYFRAME` entities.

mod world;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use crate::app::output::write_file;
use crate::tally::budget::short;
use world::world_graph;

/// The series' colours, in order: the page's charts take them from its data, so that the page
/// and the SVG files colour a message type alike.
pub const PALETTE: [&str; 12] = [
    "#4f8ad8", "#e8833a", "#3aa676", "#c94f7c", "#8a6fd1", "#b5a22c", "#2fa3b5", "#d6564b",
    "#6b7b8c", "#9bc34a", "#e0a03a", "#5a5fc7",
];
const PLOT_WIDTH: f64 = 760.0;
const PLOT_HEIGHT: f64 = 260.0;
const LEFT: f64 = 64.0;
const TOP: f64 = 34.0;
const LEGEND_WIDTH: f64 = 240.0;
/// Characters of a label kept (the whole label is the element's `<title>`).
const LABEL_CHARS: usize = 32;

/// Writes every graph of one capture's document (`file`, as [`super::file_data`] makes it
/// without the frames) into `dir`, each file named `<stem>-…`; returns the paths written.
pub fn write_graphs(dir: &Path, stem: &str, file: &Json) -> Result<Vec<PathBuf>, String> {
    let mut written = Vec::new();
    let profile = &file["profile"];
    let seconds = profile["series"]["interval_ms"].as_f64().unwrap_or(1000.0) / 1000.0;
    for conv in profile["conversations"].as_array().into_iter().flatten() {
        let id = conv["id"].as_u64().unwrap_or(0);
        let mut graphs = Vec::new();
        if conv["series"].is_object() {
            graphs.push(("io", io_graph(file, conv, seconds)));
            graphs.push(("gap", gap_graph(file, conv, seconds)));
            graphs.push(("rtt", rtt_graph(file, conv, seconds)));
        }
        let snapshots = &conv["snapshots"];
        let types = rows(&snapshots["entity_types"], "label");
        let by = snapshots["grouped_by"].as_str().unwrap_or("entity type");
        let title = format!("conversation {id}: snapshot bytes by {by}");
        graphs.push(("types", bar_chart(&title, &types)));
        let fields = rows(&snapshots["fields"], "field");
        let title = format!("conversation {id}: snapshot bytes by field");
        graphs.push(("fields", bar_chart(&title, &fields)));
        let world = &file["world"];
        let view = world["conversations"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["id"].as_u64() == Some(id));
        if let Some(svg) = view.and_then(|wc| world_graph(world, wc)) {
            graphs.push(("world", svg));
        }
        for (name, svg) in graphs {
            let path = dir.join(format!("{stem}-c{id}-{name}.svg"));
            write_file(&path, svg.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))?;
            written.push(path);
        }
    }
    Ok(written)
}

/// `(label, bytes)` rows of a profile table, the largest first.
fn rows(table: &Json, key: &str) -> Vec<(String, f64)> {
    let mut rows: Vec<(String, f64)> = table
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let label = r[key].as_str().unwrap_or("?").to_owned();
            (label, r["bytes"].as_f64().unwrap_or(0.0))
        })
        .collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    rows
}

fn numbers(values: &Json) -> Vec<Option<f64>> {
    values
        .as_array()
        .into_iter()
        .flatten()
        .map(Json::as_f64)
        .collect()
}

fn budget(file: &Json, key: &str) -> Option<f64> {
    file["budgets"][key].as_f64()
}

fn io_graph(file: &Json, conv: &Json, seconds: f64) -> String {
    let s = &conv["series"];
    let mut types: Vec<(String, Vec<f64>)> = s["bytes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let arrow = if r["direction"] == "client_to_server" {
                "→"
            } else {
                "←"
            };
            let name = format!("{} {arrow}", r["name"].as_str().unwrap_or("?"));
            let kbps = numbers(&r["values"])
                .iter()
                .map(|v| v.unwrap_or(0.0) * 8.0 / 1000.0 / seconds)
                .collect();
            (name, kbps)
        })
        .collect();
    types.sort_by(|a, b| total(&b.1).total_cmp(&total(&a.1)));
    let buckets = types.first().map_or(0, |t| t.1.len());
    let mut stacked = Vec::with_capacity(types.len());
    let mut below = vec![0.0; buckets];
    for (name, kbps) in &types {
        let top: Vec<f64> = below.iter().zip(kbps).map(|(b, v)| b + v).collect();
        stacked.push((name.as_str(), top.clone()));
        below = top;
    }
    let directions = &s["datagrams"];
    let rate: Vec<Option<f64>> = numbers(&directions["client_to_server"])
        .iter()
        .zip(numbers(&directions["server_to_client"]))
        .map(|(a, b)| Some((a.unwrap_or(0.0) + b.unwrap_or(0.0)) / seconds))
        .collect();
    let snapshot_budget = budget(file, "snapshot_kbps_per_client").map(|limit| {
        let snapshot = |name: &str| {
            let lower = name.to_lowercase();
            (lower.contains("snapshot") || lower.contains("state")) && !name.ends_with('→')
        };
        let broken = (0..buckets)
            .map(|i| {
                let kbps: f64 = types
                    .iter()
                    .filter(|t| snapshot(&t.0))
                    .map(|t| t.1[i])
                    .sum();
                kbps > limit
            })
            .collect();
        Budget {
            value: limit,
            broken,
            label: format!("budget: snapshots ≤ {} kbit/s", short(limit)),
        }
    });
    let id = conv["id"].as_u64().unwrap_or(0);
    let mut chart = TimeChart::new(
        &format!("conversation {id}: IO graph, kbit/s per message type (stacked), datagrams/s"),
        buckets,
        seconds,
        "kbit/s",
        below.iter().copied().fold(0.0, f64::max),
    );
    chart.right_axis("datagrams/s", max(&rate));
    let color = |k: usize| PALETTE[k % PALETTE.len()];
    for (k, (name, high)) in stacked.iter().enumerate().rev() {
        chart.area(name, color(k), high);
    }
    for (k, (name, _)) in stacked.iter().enumerate() {
        chart.key(name, color(k), true);
    }
    chart.line("datagrams/s", "#111", &rate, true, Side::Right);
    if let Some(b) = &snapshot_budget {
        chart.budget(b);
    }
    chart.finish()
}

fn gap_graph(file: &Json, conv: &Json, seconds: f64) -> String {
    let gaps = numbers(&conv["series"]["snapshot_gap_ms_mean"]);
    // A stall hides in a bucket's mean: its longest gap shows it.
    let longest = numbers(&conv["series"]["snapshot_gap_ms_max"]);
    let hz = file["snapshot_hz"].as_f64().unwrap_or(60.0).max(1e-3);
    let nominal = 1000.0 / hz;
    // The document gives the tolerance in percent.
    let tolerance = nominal * file["snapshot_tolerance"].as_f64().unwrap_or(0.0) / 100.0;
    let limit = budget(file, "snapshot_hz_min").map(|hz_min| {
        let limit = 1000.0 / hz_min.max(1e-3);
        Budget {
            value: limit,
            broken: longest
                .iter()
                .map(|g| g.is_some_and(|g| g > limit))
                .collect(),
            label: format!("budget: ≥ {} Hz (gap ≤ {limit:.1} ms)", short(hz_min)),
        }
    });
    let top = max(&gaps)
        .max(max(&longest))
        .max(nominal + tolerance)
        .max(limit.as_ref().map_or(0.0, |b| b.value));
    let id = conv["id"].as_u64().unwrap_or(0);
    let mut chart = TimeChart::new(
        &format!("conversation {id}: snapshot gap, mean and longest per bucket"),
        gaps.len(),
        seconds,
        "ms",
        top,
    );
    chart.band(
        &format!("jitter band ±{}%", short(tolerance / nominal * 100.0)),
        "#9bc34a",
        nominal - tolerance,
        nominal + tolerance,
    );
    chart.rule(
        &format!("{} Hz ({nominal:.2} ms)", short(hz)),
        "#3aa676",
        nominal,
    );
    chart.line("snapshot gap", "#4f8ad8", &gaps, false, Side::Left);
    chart.line("longest gap", "#d9534f", &longest, true, Side::Left);
    if let Some(b) = &limit {
        chart.budget(b);
    }
    chart.finish()
}

fn rtt_graph(file: &Json, conv: &Json, seconds: f64) -> String {
    let rtt = numbers(&conv["series"]["rtt_ms_mean"]);
    let limit = budget(file, "rtt_p95_ms_max").map(|limit| Budget {
        value: limit,
        broken: rtt.iter().map(|r| r.is_some_and(|r| r > limit)).collect(),
        label: format!("budget: RTT p95 ≤ {} ms", short(limit)),
    });
    let top = max(&rtt).max(limit.as_ref().map_or(0.0, |b| b.value));
    let id = conv["id"].as_u64().unwrap_or(0);
    let mut chart = TimeChart::new(
        &format!("conversation {id}: RTT, mean per bucket"),
        rtt.len(),
        seconds,
        "ms",
        top,
    );
    chart.line("RTT", "#4f8ad8", &rtt, false, Side::Left);
    if let Some(b) = &limit {
        chart.budget(b);
    }
    chart.finish()
}

fn total(values: &[f64]) -> f64 {
    values.iter().sum()
}

fn max(values: &[Option<f64>]) -> f64 {
    values.iter().flatten().copied().fold(0.0, f64::max)
}

/// A budget drawn as a dashed line, red over the buckets that break it, green elsewhere.
struct Budget {
    value: f64,
    broken: Vec<bool>,
    label: String,
}

#[derive(Clone, Copy, PartialEq)]
enum Side {
    Left,
    Right,
}

/// A chart over the profile's buckets: x in seconds from the capture's start, a left value
/// axis from 0 and an optional right one, a legend beside the plot.
struct TimeChart {
    title: String,
    buckets: usize,
    seconds: f64,
    left: Scale,
    right: Option<Scale>,
    body: String,
    legend: Vec<(String, String, bool)>,
}

/// A value axis: its label and its top (the bottom is 0).
struct Scale {
    label: String,
    top: f64,
}

impl Scale {
    fn new(label: &str, max: f64) -> Scale {
        Scale {
            label: label.to_owned(),
            top: nice_top(max),
        }
    }
}

impl TimeChart {
    fn new(title: &str, buckets: usize, seconds: f64, unit: &str, max: f64) -> TimeChart {
        TimeChart {
            title: title.to_owned(),
            buckets,
            seconds,
            left: Scale::new(unit, max),
            right: None,
            body: String::new(),
            legend: Vec::new(),
        }
    }

    fn right_axis(&mut self, label: &str, max: f64) {
        self.right = Some(Scale::new(label, max));
    }

    /// The x of bucket `i`'s start.
    fn x(&self, i: usize) -> f64 {
        let span = (self.buckets.max(2) - 1) as f64;
        LEFT + PLOT_WIDTH * i as f64 / span
    }

    fn y(&self, value: f64, side: Side) -> f64 {
        let top = match (side, &self.right) {
            (Side::Right, Some(s)) => s.top,
            _ => self.left.top,
        };
        let v = (value / top).clamp(0.0, 1.0);
        TOP + PLOT_HEIGHT * (1.0 - v)
    }

    /// The area from 0 up to `high` per bucket, its top line being the series. Stacked areas
    /// are drawn from the highest down, each painting over the ones above it, so that each
    /// outline holds its buckets once.
    fn area(&mut self, name: &str, color: &str, high: &[f64]) {
        let mut top = String::new();
        for (i, v) in high.iter().enumerate() {
            point(&mut top, self.x(i), self.y(*v, Side::Left));
        }
        let mut outline = top.clone();
        let bottom = TOP + PLOT_HEIGHT;
        point(&mut outline, self.x(high.len().saturating_sub(1)), bottom);
        point(&mut outline, self.x(0), bottom);
        let _ = writeln!(
            self.body,
            "<g class=\"series\" data-series=\"{}\" data-points=\"{}\">\
<polygon class=\"area\" fill=\"{color}\" stroke=\"none\" points=\"{}\"/>\
<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1\" points=\"{}\"/></g>",
            escape(name),
            high.len(),
            outline.trim_end(),
            top.trim_end(),
        );
    }

    /// A legend entry: a filled box or a line.
    fn key(&mut self, name: &str, color: &str, filled: bool) {
        self.legend
            .push((name.to_owned(), color.to_owned(), filled));
    }

    /// A line through the buckets with a value, broken where a bucket has none; a lone value
    /// is a dot.
    fn line(&mut self, name: &str, color: &str, values: &[Option<f64>], dashed: bool, side: Side) {
        let count = values.iter().flatten().count();
        let dash = if dashed {
            " stroke-dasharray=\"4 3\""
        } else {
            ""
        };
        let _ = write!(
            self.body,
            "<g class=\"series\" data-series=\"{}\" data-points=\"{count}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\"{dash}>",
            escape(name)
        );
        let mut run: Vec<(f64, f64)> = Vec::new();
        for (i, v) in values.iter().enumerate() {
            match v {
                Some(v) => run.push((self.x(i), self.y(*v, side))),
                None => self.flush_run(&mut run, color),
            }
        }
        self.flush_run(&mut run, color);
        self.body.push_str("</g>\n");
        self.legend.push((name.to_owned(), color.to_owned(), false));
    }

    fn flush_run(&mut self, run: &mut Vec<(f64, f64)>, color: &str) {
        match run.len() {
            0 => {}
            1 => {
                let _ = write!(
                    self.body,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2\" fill=\"{color}\" stroke=\"none\"/>",
                    run[0].0, run[0].1
                );
            }
            _ => {
                let mut points = String::new();
                for (x, y) in run.iter() {
                    point(&mut points, *x, *y);
                }
                let _ = write!(self.body, "<polyline points=\"{}\"/>", points.trim_end());
            }
        }
        run.clear();
    }

    /// A horizontal band of the left scale.
    fn band(&mut self, name: &str, color: &str, low: f64, high: f64) {
        let (y0, y1) = (self.y(high, Side::Left), self.y(low, Side::Left));
        let _ = writeln!(
            self.body,
            "<rect class=\"band\" x=\"{LEFT}\" y=\"{y0:.1}\" width=\"{PLOT_WIDTH}\" height=\"{:.1}\" fill=\"{color}\" fill-opacity=\"0.25\"/>",
            y1 - y0
        );
        self.legend.push((name.to_owned(), color.to_owned(), true));
    }

    /// A horizontal line of the left scale.
    fn rule(&mut self, name: &str, color: &str, value: f64) {
        let y = self.y(value, Side::Left);
        let _ = writeln!(
            self.body,
            "<line class=\"rule\" x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{color}\" stroke-width=\"1.5\"/>",
            LEFT + PLOT_WIDTH
        );
        self.legend.push((name.to_owned(), color.to_owned(), false));
    }

    fn budget(&mut self, b: &Budget) {
        let y = self.y(b.value, Side::Left);
        let _ = write!(
            self.body,
            "<g class=\"budget\" stroke-width=\"2\" stroke-dasharray=\"6 4\">"
        );
        for i in 0..self.buckets {
            let x1 = if i + 1 < self.buckets {
                self.x(i + 1)
            } else {
                LEFT + PLOT_WIDTH
            };
            let color = if b.broken.get(i) == Some(&true) {
                "#d11"
            } else {
                "#2a2"
            };
            let _ = write!(
                self.body,
                "<line x1=\"{:.1}\" x2=\"{x1:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{color}\"/>",
                self.x(i)
            );
        }
        let _ = writeln!(
            self.body,
            "</g><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            LEFT + 4.0,
            y - 4.0,
            escape(&b.label)
        );
    }

    fn finish(self) -> String {
        let width = LEFT + PLOT_WIDTH + 64.0 + LEGEND_WIDTH;
        let legend_height = TOP + 16.0 * self.legend.len() as f64 + 8.0;
        let height = (TOP + PLOT_HEIGHT + 44.0).max(legend_height);
        let mut svg = Svg::new(width, height, &self.title);
        let bottom = TOP + PLOT_HEIGHT;
        // The x axis: seconds.
        let end = self.seconds * self.buckets.max(2).saturating_sub(1) as f64;
        for t in ticks(end) {
            let x = LEFT + PLOT_WIDTH * t / end.max(f64::MIN_POSITIVE);
            svg.grid(x, TOP, x, bottom);
            svg.text(x, bottom + 14.0, "middle", &short(t));
        }
        svg.text(LEFT + PLOT_WIDTH / 2.0, bottom + 32.0, "middle", "s");
        for t in ticks(self.left.top) {
            let y = self.y(t, Side::Left);
            svg.grid(LEFT, y, LEFT + PLOT_WIDTH, y);
            svg.text(LEFT - 4.0, y + 4.0, "end", &short(t));
        }
        svg.vertical_label(14.0, TOP + PLOT_HEIGHT / 2.0, &self.left.label);
        if let Some(right) = &self.right {
            let x = LEFT + PLOT_WIDTH;
            for t in ticks(right.top) {
                let y = self.y(t, Side::Right);
                svg.text(x + 4.0, y + 4.0, "start", &short(t));
            }
            svg.vertical_label(x + 52.0, TOP + PLOT_HEIGHT / 2.0, &right.label);
        }
        svg.out.push_str(&self.body);
        let _ = writeln!(
            svg.out,
            "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{PLOT_WIDTH}\" height=\"{PLOT_HEIGHT}\" fill=\"none\" stroke=\"#888\"/>"
        );
        let x = LEFT + PLOT_WIDTH + 64.0;
        for (k, (name, color, filled)) in self.legend.iter().enumerate() {
            let y = TOP + 16.0 * k as f64;
            if *filled {
                let _ = write!(
                    svg.out,
                    "<rect x=\"{x}\" y=\"{:.1}\" width=\"14\" height=\"10\" fill=\"{color}\"/>",
                    y + 1.0
                );
            } else {
                let _ = write!(
                    svg.out,
                    "<line x1=\"{x}\" x2=\"{}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"{color}\" stroke-width=\"2\"/>",
                    x + 14.0,
                    y + 6.0,
                    y + 6.0
                );
            }
            svg.label(x + 20.0, y + 10.0, "start", name);
        }
        svg.finish()
    }
}

/// Horizontal bars, the largest first, each labelled with its value.
fn bar_chart(title: &str, rows: &[(String, f64)]) -> String {
    const LABEL: f64 = 220.0;
    const BAR: f64 = 480.0;
    const ROW: f64 = 18.0;
    let height = TOP + ROW * rows.len().max(1) as f64 + 12.0;
    let mut svg = Svg::new(LABEL + BAR + 120.0, height, title);
    let max = rows.iter().map(|r| r.1).fold(0.0, f64::max);
    let _ = write!(svg.out, "<g class=\"bars\" data-bars=\"{}\">", rows.len());
    for (k, (label, value)) in rows.iter().enumerate() {
        let y = TOP + ROW * k as f64;
        let width = if max > 0.0 { BAR * value / max } else { 0.0 };
        let _ = write!(
            svg.out,
            "<rect class=\"bar\" x=\"{LABEL}\" y=\"{y:.1}\" width=\"{width:.1}\" height=\"{:.1}\" fill=\"#4f8ad8\"><title>{}: {} B</title></rect>",
            ROW - 4.0,
            escape(label),
            short(*value)
        );
        svg.label(LABEL - 6.0, y + 11.0, "end", label);
        svg.text(
            LABEL + width + 4.0,
            y + 11.0,
            "start",
            &format!("{} B", short(*value)),
        );
    }
    svg.out.push_str("</g>\n");
    if rows.is_empty() {
        svg.text(LABEL, TOP + 12.0, "start", "none");
    }
    svg.finish()
}

/// The document being written: a header with the size and title, then elements.
struct Svg {
    out: String,
}

impl Svg {
    fn new(width: f64, height: f64, title: &str) -> Svg {
        let mut out = String::with_capacity(1 << 14);
        let title = escape(title);
        let _ = write!(
            out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"system-ui, sans-serif\" font-size=\"11\" fill=\"#1d232a\">\n\
<title>{title}</title>\n<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n\
<text x=\"{LEFT}\" y=\"20\" font-size=\"13\" font-weight=\"600\">{title}</text>\n"
        );
        Svg { out }
    }

    fn text(&mut self, x: f64, y: f64, anchor: &str, text: &str) {
        let _ = writeln!(
            self.out,
            "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"{anchor}\">{}</text>",
            escape(text)
        );
    }

    /// A label cut to [`LABEL_CHARS`], whole in its `<title>`.
    fn label(&mut self, x: f64, y: f64, anchor: &str, text: &str) {
        let shown: String = if text.chars().count() > LABEL_CHARS {
            text.chars().take(LABEL_CHARS - 1).chain(['…']).collect()
        } else {
            text.to_owned()
        };
        let _ = writeln!(
            self.out,
            "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"{anchor}\"><title>{}</title>{}</text>",
            escape(text),
            escape(&shown)
        );
    }

    fn vertical_label(&mut self, x: f64, y: f64, text: &str) {
        let _ = writeln!(
            self.out,
            "<text transform=\"translate({x:.1} {y:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
            escape(text)
        );
    }

    fn grid(&mut self, x1: f64, y1: f64, x2: f64, y2: f64) {
        let _ = writeln!(
            self.out,
            "<line x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\" stroke=\"#e3e6ea\"/>"
        );
    }

    fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

fn point(out: &mut String, x: f64, y: f64) {
    let _ = write!(out, "{x:.1},{y:.1} ");
}

/// The axis' top: `max` (or 1 when nothing is above 0) rounded up to its tick step.
fn nice_top(max: f64) -> f64 {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let step = step(max);
    (max / step).ceil() * step
}

/// A tick step of 1, 2 or 5 × 10ⁿ giving about five ticks up to `top`.
fn step(top: f64) -> f64 {
    let raw = top / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let unit = raw / magnitude;
    let nice = if unit <= 1.0 {
        1.0
    } else if unit <= 2.0 {
        2.0
    } else if unit <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// The ticks from 0 to `top`.
fn ticks(top: f64) -> Vec<f64> {
    if !(top.is_finite() && top > 0.0) {
        return vec![0.0];
    }
    let step = step(top);
    (0..=((top / step + 1e-9).floor() as usize).min(20))
        .map(|k| k as f64 * step)
        .collect()
}

/// Text for XML: markup characters escaped, characters XML 1.0 cannot hold dropped (a name in
/// a profile file may hold control characters).
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\t' | '\n' | '\r' => out.push(' '),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_top() {
        assert_eq!(nice_top(0.0), 1.0);
        assert_eq!(nice_top(17.3), 20.0);
        assert_eq!(ticks(20.0), [0.0, 5.0, 10.0, 15.0, 20.0]);
        assert_eq!(nice_top(362.7), 400.0);
        assert_eq!(ticks(f64::NAN), [0.0]);
    }

    #[test]
    fn text_is_escaped_for_xml() {
        assert_eq!(
            escape("a<b>&\"c\u{1}\u{FFFF}\td"),
            "a&lt;b&gt;&amp;&quot;c d"
        );
    }
}
