//! `rtype-inspect report FILE... -o report.html`: one self-contained HTML page of graphs (no
//! network, no CDN, system fonts), a tab per capture, drawn in the browser from each capture's
//! profile document ([`super::profile`], embedded verbatim) by the vendored uPlot
//! (`assets/uplot/`, MIT) and `report.js`.
//!
//! Besides the profile, the page embeds what the profile does not keep: per conversation and
//! time bucket, its first and last frame and the packet-list lines of its first datagrams
//! ([`LINES_PER_BUCKET`], [`MAX_LINES`] in all), so that a click on a bucket lists its frames;
//! the first frames of each rule's findings and their conversations ([`FRAMES_PER_RULE`]); the budgets of the
//! configuration file and the breaks [`budget::judge`] finds. Everything is bounded: the page
//! grows with the profile's buckets, not with the capture.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{json, Map, Value as Json};

use super::filter::Filter;
use super::packets::{MaybeTree, Packets, PacketsOptions};
use super::profile::{self, MAX_DETAILED};
use crate::app::{OutputFile, ReadOpts, Reading};
use crate::pipeline::{RunEnd, Sink};
use crate::session::analysis::Analysis;
use crate::session::event::{DatagramEvent, LooseFinding, ReassembledEvent};
use crate::session::Conversations;
use crate::tally::budget::{self, BrokenBudget};

mod svg;
pub mod world;

/// Packet-list lines kept per conversation and time bucket.
pub const LINES_PER_BUCKET: usize = 8;
/// Packet-list lines kept per capture, all buckets together.
pub const MAX_LINES: usize = 20_000;
/// Frames listed per rule in the findings table.
pub const FRAMES_PER_RULE: usize = 16;

const UPLOT_JS: &str = include_str!("../../../assets/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../../../assets/uplot/uPlot.min.css");
const PAGE_JS: &str = include_str!("report.js");
const PAGE_CSS: &str = include_str!("report.css");

/// `rtype-inspect report`'s options, as `cli::args` parsed them.
pub struct ReportOptions {
    pub files: Vec<PathBuf>,
    pub output: PathBuf,
    pub format: ReportFormat,
    pub interval: i64,
    pub read: ReadOpts,
}

/// The form of `rtype-inspect report`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportFormat {
    Html,
    Svg,
}

/// Runs `rtype-inspect report`.
pub fn run(mut options: ReportOptions) -> Result<ExitCode, String> {
    let reading = options.read.reading()?;
    let inputs = crate::app::inputs::capture_files(&options.files)?;
    if inputs.is_empty() {
        return Err(crate::app::inputs::NO_CAPTURE.into());
    }
    options.files = inputs.into_iter().map(|i| i.path).collect();
    if options.format == ReportFormat::Svg {
        return svg_files(&options, &reading);
    }
    let inputs: Vec<&Path> = options.files.iter().map(PathBuf::as_path).collect();
    let mut out = OutputFile::create(&options.output, &inputs)?;
    let mut files = Vec::with_capacity(options.files.len());
    for file in &options.files {
        files.push(file_data(file, &reading, options.interval)?);
    }
    let mut data = json!({
        "schema": "report/1",
        "tool": {"name": "rtype-inspect", "version": env!("CARGO_PKG_VERSION")},
        "palette": svg::PALETTE,
    });
    // Moved in: `json!` would copy the whole tree (it serialises what it is given).
    data["files"] = Json::Array(files);
    let title = options
        .files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    page(&mut out, &title, &data).map_err(|e| format!("{}: {e}", options.output.display()))?;
    out.commit()?;
    Ok(ExitCode::SUCCESS)
}

/// `--format svg`: each capture's graphs in the `-o` directory (made if missing), each file
/// written whole or not at all; a stem two captures share gets the capture's position
/// (`<stem>-2-c1-io.svg`).
fn svg_files(options: &ReportOptions, reading: &Reading) -> Result<ExitCode, String> {
    let dir = &options.output;
    if crate::app::output::is_stdout(dir) {
        return Err("--format svg writes a directory of SVG files: give it with -o DIR".into());
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let stem = |f: &PathBuf| {
        f.file_stem().map_or_else(
            || "capture".to_owned(),
            |s| s.to_string_lossy().into_owned(),
        )
    };
    for (n, file) in options.files.iter().enumerate() {
        let mut name = stem(file);
        if options.files.iter().filter(|f| stem(f) == name).count() > 1 {
            name = format!("{name}-{}", n + 1);
        }
        let mut data = summary_data(file, reading, options.interval)?;
        data["world"] = world_data(file, reading, &data)?;
        svg::write_graphs(dir, &name, &data)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One capture's part of the page: its profile, frames by bucket and rule, budgets.
fn file_data(file: &Path, reading: &Reading, interval: i64) -> Result<Json, String> {
    let mut data = summary_data(file, reading, interval)?;
    let profile = &data["profile"];
    let interval_nanos = (profile["series"]["interval_ms"].as_f64().unwrap_or(1000.0) * 1e6)
        .round()
        .max(1.0) as i64;
    let buckets = profile["series"]["buckets"].as_u64().unwrap_or(0) as usize;
    // No filter: every datagram listed (a default `Filter` would pass none).
    let every = super::filter::FilterOptions::default().build()?;
    let mut frames = FrameLines::new(interval_nanos, buckets, every);
    crate::app::read_capture(file, &reading.for_file(file)?, &mut frames)?;
    data["buckets"] = frames.buckets_json();
    data["finding_frames"] = frames.rules_json();
    data["lines_per_bucket"] = json!(LINES_PER_BUCKET);
    data["world"] = world_data(file, reading, &data)?;
    Ok(data)
}

/// The world view of `file`, whose [`summary_data`] is `data`: one more reading, with the world
/// `world --at` rebuilds, keyframes over the capture's duration.
fn world_data(file: &Path, reading: &Reading, data: &Json) -> Result<Json, String> {
    let duration = data["profile"]["capture"]["duration_s"]
        .as_f64()
        .unwrap_or(0.0);
    let mut view = world::WorldView::new(world::step_nanos((duration * 1e9) as i64));
    crate::app::read_capture(file, &reading.for_file(file)?, &mut view)?;
    Ok(view.json())
}

/// What the page and the SVG files draw from: the capture's profile, the snapshot rate and
/// tolerance (percent) the analysis used, the configuration's budgets and their breaks.
fn summary_data(file: &Path, reading: &Reading, interval: i64) -> Result<Json, String> {
    let profile = profile::profile_file(file, reading, interval)?;
    let budgets = &reading.config.budgets;
    let set: Map<String, Json> = budgets
        .entries()
        .into_iter()
        .filter_map(|(key, value)| Some((key.to_owned(), json!(value?))))
        .collect();
    let broken = budget::judge(&profile, budgets);
    let breaks: Vec<BrokenBudget> = broken.iter().map(|b| b.written(true)).collect();
    let mut data = json!({
        "file": file.display().to_string(),
        "snapshot_hz": reading.analysis.snapshot_hz,
        // In percent, as --snapshot-tolerance, the configuration file and `stats` give it.
        "snapshot_tolerance": (reading.analysis.snapshot_tolerance * 1e11).round() / 1e9,
        "budgets": set,
        "breaks": breaks,
    });
    data["profile"] = profile;
    Ok(data)
}

/// Writes the page: the styles, the data as JSON in a `<script type="application/json">`
/// (every `<` escaped, so no `</script>` in a file name ends it), uPlot and the page's script.
/// The JSON goes straight to `out`, not through a string of its own (megabytes, twice: the
/// text and its escaped copy).
fn page(out: &mut impl Write, title: &str, data: &Json) -> std::io::Result<()> {
    let title = svg::escape(title);
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
<title>rtype-inspect report: {title}</title>\n<style>\n{UPLOT_CSS}\n</style>\n<style>\n{PAGE_CSS}</style>\n</head>\n<body>\n\
<header><h1>rtype-inspect report</h1><nav id=\"tabs\"></nav></header>\n<main id=\"app\"></main>\n\
<div id=\"report-status\" hidden></div>\n\
<script type=\"application/json\" id=\"report-data\">"
    )?;
    serde_json::to_writer(EscapeLessThan(&mut *out), data)?;
    write!(
        out,
        "</script>\n\
<script>\n{UPLOT_JS}\n</script>\n<script>\n{PAGE_JS}</script>\n</body>\n</html>\n"
    )
}

/// A writer that writes every `<` as `\u003c` (JSON's escape for it: the same string to a
/// JSON parser, and no `</script>` for an HTML one).
struct EscapeLessThan<W: Write>(W);

impl<W: Write> Write for EscapeLessThan<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut rest = buf;
        while let Some(at) = rest.iter().position(|&b| b == b'<') {
            self.0.write_all(&rest[..at])?;
            self.0.write_all(b"\\u003c")?;
            rest = &rest[at + 1..];
        }
        self.0.write_all(rest)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// One conversation's time bucket: its frames, and the first datagrams' packet-list lines.
#[derive(Clone, Default)]
struct Bucket {
    first: u64,
    last: u64,
    datagrams: u64,
    lines: Vec<String>,
}

/// A sink that runs the packet list and keeps, per conversation and time bucket of the
/// profile's grid, the bucket's frames and its first lines; and each rule's first frames.
struct FrameLines {
    packets: Packets<Vec<u8>>,
    interval_nanos: i64,
    buckets: usize,
    start: Option<i64>,
    /// Indexed by conversation id − 1, for the conversations the profile gives series.
    conversations: Vec<Vec<Bucket>>,
    lines: usize,
    /// Per rule, its first findings' frames and conversations.
    rules: BTreeMap<&'static str, Vec<(u64, u32)>>,
}

impl FrameLines {
    fn new(interval_nanos: i64, buckets: usize, every: Filter) -> FrameLines {
        let options = PacketsOptions {
            verbose: false,
            hex: false,
            width: None,
            time: Default::default(),
            color: false,
        };
        FrameLines {
            packets: Packets::new(Vec::new(), options, every),
            interval_nanos,
            buckets,
            start: None,
            conversations: Vec::new(),
            lines: 0,
            rules: BTreeMap::new(),
        }
    }

    fn note_rule(&mut self, id: &'static str, frame: u64, conversation: u32) {
        let frames = self.rules.entry(id).or_default();
        if frames.len() < FRAMES_PER_RULE && frames.last().map(|f| f.0) != Some(frame) {
            frames.push((frame, conversation));
        }
    }

    /// Per conversation with series: `{"id", "first", "last", "datagrams", "lines"}`, each an
    /// array by bucket (`first` and `last` null for an empty bucket).
    fn buckets_json(&self) -> Json {
        let conversations: Vec<Json> = self
            .conversations
            .iter()
            .enumerate()
            .filter(|(_, b)| !b.is_empty())
            .map(|(i, buckets)| {
                let frame = |f: u64, b: &Bucket| {
                    if b.datagrams > 0 {
                        json!(f)
                    } else {
                        Json::Null
                    }
                };
                let mut c = json!({
                    "id": i + 1,
                    "datagrams": buckets.iter().map(|b| b.datagrams).collect::<Vec<_>>(),
                    "lines": buckets.iter().map(|b| &b.lines).collect::<Vec<_>>(),
                });
                c["first"] = buckets.iter().map(|b| frame(b.first, b)).collect();
                c["last"] = buckets.iter().map(|b| frame(b.last, b)).collect();
                c
            })
            .collect();
        Json::Array(conversations)
    }

    /// Per rule: `[{"frame", "conversation"}]`, the page finding the bucket of the frame.
    fn rules_json(&self) -> Json {
        let rules: Map<String, Json> = self
            .rules
            .iter()
            .map(|(id, frames)| {
                let frames = frames.iter().map(
                    |(frame, conversation)| json!({"frame": frame, "conversation": conversation}),
                );
                (id.to_string(), frames.collect())
            })
            .collect();
        Json::Object(rules)
    }
}

impl Sink for FrameLines {
    type Fields = MaybeTree;

    fn fields(&mut self) -> &mut MaybeTree {
        self.packets.fields()
    }

    fn skipped(&mut self, e: &DatagramEvent<'_>) {
        self.packets.skipped(e);
    }

    fn datagram(&mut self, e: &DatagramEvent<'_>) {
        self.packets.output().clear();
        self.packets.datagram(e);
        for f in e.findings {
            self.note_rule(f.rule.id(), e.frame, e.conversation);
        }
        for f in e.session {
            self.note_rule(f.finding.rule.id(), f.frame, f.conversation);
        }
        let start = *self.start.get_or_insert(e.ts_nanos);
        let index = (e.conversation as usize).wrapping_sub(1);
        if index >= MAX_DETAILED || self.buckets == 0 {
            return;
        }
        let bucket = (e.ts_nanos.saturating_sub(start).max(0) / self.interval_nanos) as usize;
        let bucket = bucket.min(self.buckets - 1);
        if self.conversations.len() <= index {
            self.conversations.resize_with(index + 1, Vec::new);
        }
        let buckets = &mut self.conversations[index];
        if buckets.is_empty() {
            buckets.resize_with(self.buckets, Bucket::default);
        }
        let b = &mut buckets[bucket];
        if b.datagrams == 0 {
            b.first = e.frame;
        }
        b.last = e.frame;
        b.datagrams += 1;
        if b.lines.len() < LINES_PER_BUCKET && self.lines < MAX_LINES {
            let text = String::from_utf8_lossy(self.packets.output());
            b.lines.push(text.trim_end().to_owned());
            self.lines += 1;
        }
    }

    fn loose(&mut self, f: &LooseFinding) {
        self.note_rule(f.finding.rule.id(), f.frame, f.conversation);
    }

    fn reassembled(&mut self, _: &ReassembledEvent<'_>) {}

    fn analysed(&mut self, _: &DatagramEvent<'_>, _: &Analysis) {}

    fn begin(&mut self, conversations: &Conversations, conversation: u32) {
        self.packets.begin(conversations, conversation);
    }

    fn end(&mut self, _: &RunEnd<'_>) {}
}
