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

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde_json::{json, Map, Value as Json};

use super::filter::Filter;
use super::packets::{MaybeTree, Packets, PacketsOptions};
use super::profile::{self, MAX_DETAILED};
use super::Tool;
use crate::app::{OutputFile, ReadOpts, Reading};
use crate::pipeline::{RunEnd, Sink};
use crate::session::analysis::Analysis;
use crate::session::event::{DatagramEvent, LooseFinding, ReassembledEvent};
use crate::session::Conversations;
use crate::tally::budget::{self, BrokenBudget, BudgetBreak};

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
    let data = ReportData {
        files,
        palette: svg::PALETTE,
        schema: SCHEMA,
        tool: Tool::THIS,
    };
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
        data.world = Some(world_data(file, reading, &data.profile)?);
        svg::write_graphs(dir, &name, &data.into_json())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One capture's part of the page: its profile, frames by bucket and rule, budgets.
fn file_data(file: &Path, reading: &Reading, interval: i64) -> Result<FileData, String> {
    let mut data = summary_data(file, reading, interval)?;
    let profile = &data.profile;
    let interval_nanos = (profile["series"]["interval_ms"].as_f64().unwrap_or(1000.0) * 1e6)
        .round()
        .max(1.0) as i64;
    let buckets = profile["series"]["buckets"].as_u64().unwrap_or(0) as usize;
    // No filter: every datagram listed (a default `Filter` would pass none).
    let every = super::filter::FilterOptions::default().build()?;
    let mut frames = FrameLines::new(interval_nanos, buckets, every);
    crate::app::read_capture(file, &reading.for_file(file)?, &mut frames)?;
    data.finding_frames = frames.finding_frames();
    data.buckets = frames.into_buckets();
    data.world = Some(world_data(file, reading, &data.profile)?);
    Ok(data)
}

/// The world view of `file`, whose profile is `profile`: one more reading, with the world
/// `world --at` rebuilds, keyframes over the capture's duration.
fn world_data(file: &Path, reading: &Reading, profile: &Json) -> Result<world::WorldData, String> {
    let duration = profile["capture"]["duration_s"].as_f64().unwrap_or(0.0);
    let mut view = world::WorldView::new(world::step_nanos((duration * 1e9) as i64));
    crate::app::read_capture(file, &reading.for_file(file)?, &mut view)?;
    Ok(view.into_data())
}

/// What the page and the SVG files draw from: the capture's profile, the snapshot rate and
/// tolerance (percent) the analysis used, the configuration's budgets and their breaks.
fn summary_data(file: &Path, reading: &Reading, interval: i64) -> Result<FileData, String> {
    let profile = profile::profile_file(file, reading, interval)?;
    let budgets = &reading.config.budgets;
    let set = (budgets.entries().into_iter())
        .filter_map(|(key, value)| Some((key, value?)))
        .collect();
    let breaks = budget::judge(&profile, budgets);
    Ok(FileData {
        breaks,
        buckets: Vec::new(),
        budgets: set,
        file: file.display().to_string(),
        finding_frames: BTreeMap::new(),
        lines_per_bucket: LINES_PER_BUCKET,
        profile,
        snapshot_hz: reading.analysis.snapshot_hz,
        snapshot_tolerance: (reading.analysis.snapshot_tolerance * 1e11).round() / 1e9,
        world: None,
    })
}

/// The schema of the report's data (docs/schemas/report.schema.json).
pub const SCHEMA: &str = "report/1";

/// The data document `rtype-inspect report FILE... -o report.html` embeds in its page (the
/// `<script type="application/json" id="report-data">` element, every `<` written `\u003c`), from
/// which the page draws its graphs; `--format svg` draws from the same document per capture,
/// without `buckets`, `finding_frames`, `lines_per_bucket` and `world`. Everything in it is
/// bounded by the profile's buckets and rows, not by the capture's length.
// The fields of each struct are in the order serde_json's sorted maps wrote them before.
#[derive(Serialize, JsonSchema)]
#[schemars(title = "rtype-inspect report data", deny_unknown_fields)]
pub struct ReportData {
    /// One per capture, in argument order: a tab each.
    #[schemars(length(min = 1))]
    files: Vec<FileData>,
    /// The series' colours in order (CSS hex): the page's charts and the SVG files colour a
    /// message type alike.
    #[schemars(inner(pattern("^#[0-9a-f]{6}$")))]
    palette: [&'static str; svg::PALETTE.len()],
    #[schemars(extend("const" = SCHEMA))]
    schema: &'static str,
    tool: Tool,
}

/// One capture's part of the page: a tab.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct FileData {
    /// The budgets broken, per conversation, as `check` reports them.
    #[serde(serialize_with = "written_with_comparison")]
    #[schemars(with = "Vec<BrokenBudget<'static>>")]
    breaks: Vec<BudgetBreak>,
    /// Per conversation the profile gives series, per time bucket of its grid
    /// (`profile.series`): the bucket's first and last frame (null when it has no datagram), its
    /// datagram count, and the packet-list lines of its first `lines_per_bucket` datagrams, as
    /// `packets` prints them (none once the capture's 20,000 lines are kept).
    buckets: Vec<ConversationBuckets>,
    /// The configuration file's [budgets] that are set.
    #[schemars(schema_with = "budgets_schema")]
    budgets: BTreeMap<&'static str, f64>,
    /// The capture, as named on the command line.
    file: String,
    /// Per rule ID, the frames of its first 16 findings and their conversations (0: none); the
    /// page finds the bucket from `buckets`.
    #[schemars(transform = bounded_frames)]
    finding_frames: BTreeMap<&'static str, Vec<FindingFrame>>,
    #[schemars(extend("const" = LINES_PER_BUCKET))]
    lines_per_bucket: usize,
    /// The capture's `profile --format json` document, verbatim.
    #[schemars(schema_with = "profile_schema")]
    profile: Json,
    /// The nominal snapshot rate the capture was judged against (--snapshot-hz).
    #[schemars(extend("exclusiveMinimum" = 0))]
    snapshot_hz: f64,
    /// In percent, as --snapshot-tolerance, the configuration file and `stats` give it: the
    /// jitter band is the nominal gap ± this share of it.
    #[schemars(range(min = 0, max = 100))]
    snapshot_tolerance: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "world::WorldData")]
    world: Option<world::WorldData>,
}

impl FileData {
    /// The capture's data as the SVG writer reads it, its profile moved, not copied.
    fn into_json(mut self) -> Json {
        let profile = std::mem::take(&mut self.profile);
        let mut data = serde_json::to_value(self).unwrap_or_default();
        data["profile"] = profile;
        data
    }
}

/// One conversation's time buckets, each array by bucket.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct ConversationBuckets {
    datagrams: Vec<u64>,
    #[schemars(inner(range(min = 1)))]
    first: Vec<Option<u64>>,
    #[schemars(range(min = 1))]
    id: usize,
    #[schemars(inner(range(min = 1)))]
    last: Vec<Option<u64>>,
    #[schemars(inner(length(max = LINES_PER_BUCKET)))]
    lines: Vec<Vec<String>>,
}

/// A rule's finding: its frame and conversation.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct FindingFrame {
    conversation: u32,
    frame: u64,
}

/// Each rule lists at least one finding, at most [`FRAMES_PER_RULE`].
fn bounded_frames(schema: &mut Schema) {
    if let Some(Json::Object(frames)) = schema.get_mut("additionalProperties") {
        frames.insert("minItems".into(), 1.into());
        frames.insert("maxItems".into(), FRAMES_PER_RULE.into());
    }
}

/// The breaks as `check` writes them, with their comparison in words for the page.
fn written_with_comparison<S: serde::Serializer>(
    breaks: &[BudgetBreak],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(breaks.iter().map(|b| b.written(true)))
}

/// The budgets by key: each a number.
fn budgets_schema(_: &mut SchemaGenerator) -> Schema {
    let keys = crate::app::config::Budgets::default()
        .entries()
        .map(|(key, _)| key);
    let properties: Map<String, Json> = (keys.into_iter())
        .map(|key| (key.to_owned(), json!({"type": "number"})))
        .collect();
    schemars::json_schema!({
        "type": "object",
        "additionalProperties": false,
        "properties": properties,
    })
}

/// The profile document has a schema of its own.
fn profile_schema(_: &mut SchemaGenerator) -> Schema {
    schemars::json_schema!({ "$ref": "profile.schema.json" })
}

/// Writes the page: the styles, the data as JSON in a `<script type="application/json">`
/// (every `<` escaped, so no `</script>` in a file name ends it), uPlot and the page's script.
/// The JSON goes straight to `out`, not through a string of its own (megabytes, twice: the
/// text and its escaped copy).
fn page(out: &mut impl Write, title: &str, data: &ReportData) -> std::io::Result<()> {
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

    /// Per conversation with series, its buckets; the lines moved, not copied.
    fn into_buckets(self) -> Vec<ConversationBuckets> {
        let frame = |f: u64, b: &Bucket| (b.datagrams > 0).then_some(f);
        (self.conversations.into_iter().enumerate())
            .filter(|(_, b)| !b.is_empty())
            .map(|(i, buckets)| ConversationBuckets {
                datagrams: buckets.iter().map(|b| b.datagrams).collect(),
                first: buckets.iter().map(|b| frame(b.first, b)).collect(),
                id: i + 1,
                last: buckets.iter().map(|b| frame(b.last, b)).collect(),
                lines: buckets.into_iter().map(|b| b.lines).collect(),
            })
            .collect()
    }

    /// Per rule, its first findings, the page finding the bucket of each frame.
    fn finding_frames(&self) -> BTreeMap<&'static str, Vec<FindingFrame>> {
        (self.rules.iter())
            .map(|(&id, frames)| {
                let frames = frames.iter().map(|&(frame, conversation)| FindingFrame {
                    conversation,
                    frame,
                });
                (id, frames.collect())
            })
            .collect()
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
