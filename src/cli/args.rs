//! The commands' arguments, as clap parses them, and what each becomes for the function that
//! runs it: the commands and reports take plain values, without clap.

use std::path::PathBuf;

use clap::builder::PossibleValue;
use clap::ValueEnum;

use crate::app::commands::{self, CatalogFormat};
use crate::app::inputs::InputArgs;
use crate::app::{Format, ReadOpts};
use crate::report;

/// A report's options from its arguments, field by field (`into` converts the filters' and
/// passes the others as they are).
macro_rules! options_from {
    ($args:ident => $options:path { $($field:ident),+ }) => {
        impl From<$args> for $options {
            fn from(a: $args) -> Self {
                Self { $($field: a.$field.into()),+ }
            }
        }
    };
}

/// The arguments of `summary` (at the top level too) and `stats`: the captures, the output's
/// form and how to read them.
#[derive(clap::Args)]
pub struct SummaryArgs {
    #[command(flatten)]
    pub(super) inputs: InputArgs,
    /// Output form: text (tables), or json (one document).
    #[arg(long, value_enum, default_value = "text")]
    pub(super) format: Format,
    #[command(flatten)]
    pub(super) read: ReadOpts,
}

/// Arguments of `rtype-inspect packets`.
#[derive(clap::Args)]
pub struct PacketsArgs {
    #[command(flatten)]
    inputs: InputArgs,
    /// Print every decoded field.
    #[arg(short = 'V', long)]
    verbose: bool,
    /// Add a hex dump of each datagram.
    #[arg(short = 'x', long)]
    hex: bool,
    /// Output form: text (a line per datagram), or json (a timeline record per datagram, one
    /// per line, as export writes them).
    #[arg(long, value_enum, default_value = "text", conflicts_with_all = ["verbose", "hex"])]
    format: Format,
    /// tshark's -T: `fields` prints the fields named by -e, one line per datagram.
    #[arg(short = 'T', value_name = "FORMAT", value_parser = ["fields"], requires = "field",
        conflicts_with_all = ["verbose", "hex", "format"])]
    tshark_format: Option<String>,
    /// A field -T fields prints, by its display-filter name (rtype-inspect fields); repeatable.
    #[arg(short = 'e', value_name = "FIELD", requires = "tshark_format")]
    field: Vec<String>,
    /// A -T fields option, as tshark's: separator=,|/t|/s, aggregator=,|/s, header=y|n,
    /// occurrence=f|l|a (first, last or all of a repeated field's values); repeatable.
    #[arg(short = 'E', value_name = "NAME=VALUE", requires = "tshark_format")]
    field_option: Vec<String>,
    /// How each line's time is written, as tshark's -t: a (local time of day), ad (local
    /// date and time), r (seconds since the first datagram), d (since the previous datagram),
    /// dd (since the previous shown), e (seconds since the epoch).
    #[arg(
        short = 't',
        value_enum,
        value_name = "FORMAT",
        default_value = "r",
        hide_default_value = true,
        hide_possible_values = true
    )]
    time_format: report::time::TimeFormat,
    /// Write the frames of the datagrams that pass the filters to this pcap file (- for
    /// standard output), instead of the packet list (tshark's -w); fragmented datagrams
    /// bring all their frames.
    #[arg(short = 'w', long = "write", value_name = "FILE",
        conflicts_with_all = ["verbose", "hex", "format", "tshark_format"])]
    write: Option<PathBuf>,
    #[command(flatten)]
    filter: FilterArgs,
    #[command(flatten)]
    read: ReadOpts,
}

impl From<PacketsArgs> for commands::Packets {
    fn from(a: PacketsArgs) -> Self {
        commands::Packets {
            inputs: a.inputs,
            verbose: a.verbose,
            hex: a.hex,
            format: a.format,
            tshark_fields: a.tshark_format.is_some(),
            field: a.field,
            field_option: a.field_option,
            time_format: a.time_format,
            write: a.write,
            filter: a.filter.into(),
            read: a.read,
        }
    }
}

/// Arguments of `rtype-inspect export`.
#[derive(clap::Args)]
pub struct ExportArgs {
    #[command(flatten)]
    inputs: InputArgs,
    /// Output file, - for standard output [default: -, or none with -w]; with --format
    /// parquet, the dataset's directory.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Write the frames of the datagrams that pass the filters to this pcap file (tshark's
    /// -w; - for standard output); the timeline too when -o is given.
    #[arg(short = 'w', long = "write", value_name = "FILE")]
    write: Option<PathBuf>,
    /// ndjson: the JSON timeline of one capture; parquet: tables of many (docs/parquet.md).
    #[arg(long, value_enum, default_value = "ndjson")]
    format: ExportFormat,
    /// One JSON array instead of one record per line.
    #[arg(long)]
    json_array: bool,
    #[command(flatten)]
    filter: FilterArgs,
    #[command(flatten)]
    read: ReadOpts,
}

impl From<ExportArgs> for commands::Export {
    fn from(a: ExportArgs) -> Self {
        commands::Export {
            inputs: a.inputs,
            output: a.output,
            write: a.write,
            parquet: a.format == ExportFormat::Parquet,
            json_array: a.json_array,
            filter: a.filter.into(),
            read: a.read,
        }
    }
}

/// `export --format`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    Ndjson,
    Parquet,
}

options_from!(SummaryArgs => report::stats::StatsOptions { inputs, format, read });

/// Arguments of `rtype-inspect entity`.
#[derive(clap::Args)]
pub struct EntityArgs {
    /// Capture file (pcap or pcapng, gzipped or not); - reads standard input.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// The entity id to follow.
    #[arg(value_name = "ID")]
    id: u32,
    /// Only this conversation's view (its number in the summary).
    #[arg(long, value_name = "N")]
    conversation: Option<u32>,
    /// Output form: text (a line per event), or json (one document).
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    #[command(flatten)]
    read: ReadOpts,
}

options_from!(EntityArgs => report::entity::EntityOptions { file, id, conversation, format, read });

/// Arguments of `rtype-inspect world`.
#[derive(clap::Args)]
pub struct WorldArgs {
    /// Capture file (pcap or pcapng, gzipped or not); - reads standard input.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// The time, in seconds since the first datagram (packets' time column).
    #[arg(long, value_name = "SECONDS")]
    at: f64,
    /// Output form: text (a table per conversation), or json (one document).
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    #[command(flatten)]
    read: ReadOpts,
}

options_from!(WorldArgs => report::world::WorldOptions { file, at, format, read });

/// Arguments of `rtype-inspect check`.
#[derive(clap::Args)]
pub struct CheckArgs {
    /// Captures to judge, each on its own (a directory: the captures under it).
    #[command(flatten)]
    inputs: InputArgs,
    /// Lowest severity that fails the check [default: error, or the config file's fail_on].
    #[arg(long, value_enum)]
    fail_on: Option<report::check::FailOn>,
    /// A rule ID whose findings never fail the check (repeatable).
    #[arg(long = "allow", value_name = "ID")]
    allow: Vec<String>,
    /// Output form: text (a table per capture), json (one document), or junit (JUnit XML for CI).
    #[arg(long, value_enum, default_value = "text")]
    format: report::check::CheckFormat,
    #[command(flatten)]
    read: ReadOpts,
}

options_from!(CheckArgs => report::check::CheckOptions { inputs, fail_on, allow, format, read });

/// Arguments of `rtype-inspect diff`.
#[derive(clap::Args)]
pub struct DiffArgs {
    /// The baseline: a capture, or a saved `profile --format json`.
    old: PathBuf,
    /// The capture (or saved profile) to compare with it.
    new: PathBuf,
    /// Exit 1 when a judged figure regressed by more than PERCENT: moved the worse way (more
    /// bytes, lower rate, more loss, more findings); savings never fail. The headline figures are
    /// judged, or those --only names.
    #[arg(long, value_name = "PERCENT")]
    fail_above: Option<f64>,
    /// Compare and judge only the figures whose name starts with PREFIX (repeatable), e.g.
    /// `field.` or `rtt_ms.` [default: the configuration's diff_only].
    #[arg(long = "only", value_name = "PREFIX")]
    only: Vec<String>,
    /// Output form: text (the headline, then the weightiest changes), or json (one document).
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    #[command(flatten)]
    read: ReadOpts,
}

options_from!(DiffArgs => report::diff::DiffOptions { old, new, fail_above, only, format, read });

/// Arguments of `rtype-inspect live`. Frames are decoded as they arrive, one at a time: the
/// reading options' `--threads` is not offered.
#[derive(clap::Args)]
#[command(mut_arg("threads", |a| a.hide(true)))]
pub struct LiveArgs {
    /// Interface to capture on (`rtype-inspect interfaces` lists them).
    #[arg(short, long, value_name = "IFACE")]
    interface: String,
    /// Also write every captured frame to this pcap file (nanosecond timestamps).
    #[arg(short = 'w', long = "write", value_name = "FILE")]
    write: Option<PathBuf>,
    /// Stop after this many protocol datagrams (other traffic does not count).
    #[arg(short = 'c', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    count: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECS", value_parser = report::live::seconds)]
    duration: Option<std::time::Duration>,
    /// text: the packet list, then the summary; json: NDJSON timeline records as they come.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Print every decoded field (text only).
    #[arg(short = 'V', long)]
    verbose: bool,
    /// Add a hex dump of each datagram (text only).
    #[arg(short = 'x', long)]
    hex: bool,
    #[command(flatten)]
    filter: FilterArgs,
    /// --quiet hides the status line.
    #[command(flatten)]
    read: ReadOpts,
}

options_from!(LiveArgs => report::live::LiveOptions {
    interface, write, count, duration, format, verbose, hex, filter, read
});

/// Arguments of `rtype-inspect profile`.
#[derive(clap::Args)]
pub struct ProfileArgs {
    #[command(flatten)]
    inputs: InputArgs,
    /// Width of the time buckets, e.g. 100ms or 1s (10 ms to 1 h).
    #[arg(long, default_value = "1s", value_parser = report::profile::parse_interval)]
    interval: i64,
    /// Output form: text (tables), or json (one document, which diff reads).
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    #[command(flatten)]
    read: ReadOpts,
}

options_from!(ProfileArgs => report::profile::ProfileOptions { inputs, interval, format, read });

/// Arguments of `rtype-inspect report`.
#[derive(clap::Args)]
pub struct ReportArgs {
    /// Captures: one tab each; a directory stands for the captures under it.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// The HTML file to write (- for standard output); with `--format svg`, the directory the
    /// SVG files go to.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// `html`: one page; `svg`: the main graphs as standalone SVG files in the `-o` directory,
    /// named `<capture stem>-c<conversation>-{io,gap,rtt,types,fields,world}.svg` (`world`: the
    /// world view at four of its times, when the client held entities).
    #[arg(long, value_enum, default_value = "html")]
    format: report::html::ReportFormat,
    /// Width of the time buckets, e.g. 100ms or 1s (10 ms to 1 h), as for `profile`.
    #[arg(long, default_value = "1s", value_parser = report::profile::parse_interval)]
    interval: i64,
    #[command(flatten)]
    read: ReadOpts,
}

options_from!(ReportArgs => report::html::ReportOptions { files, output, format, interval, read });

/// Filter options shared by `packets`, `export` and `live`.
#[derive(clap::Args)]
pub struct FilterArgs {
    /// Message type by name (e.g. SERVER_SNAPSHOT, snapshot) or code (0x14, 20); repeatable.
    #[arg(long = "type", value_name = "TYPE")]
    types: Vec<String>,
    /// Direction: c2s (client to server) or s2c.
    #[arg(long, value_parser = ["c2s", "s2c"])]
    direction: Option<String>,
    /// Conversation id (as numbered by the summary); repeatable.
    #[arg(long, value_name = "ID")]
    conversation: Vec<u32>,
    /// Source or destination address, IP or IP:PORT.
    #[arg(long, value_name = "ADDR")]
    address: Option<String>,
    /// Frame range A-B (either end may be left out: 100-, -2), or one frame.
    #[arg(long, value_name = "A-B", allow_hyphen_values = true)]
    frames: Option<String>,
    /// Time range in seconds from the first frame, A-B (either end may be left out).
    #[arg(long, value_name = "A-B", allow_hyphen_values = true)]
    time: Option<String>,
    /// Only datagrams with this violation; repeatable.
    #[arg(long, value_name = "ID")]
    violation: Vec<String>,
    /// Only datagrams with a violation of at least this severity (info, warning, error).
    #[arg(long, value_parser = ["info", "warning", "error"])]
    severity: Option<String>,
}

options_from!(FilterArgs => report::filter::FilterOptions {
    types, direction, conversation, address, frames, time, violation, severity
});

/// clap's side of an enum a report defines without clap: its values, by name and with their help.
macro_rules! value_enum {
    ($type:ty { $($variant:ident => $name:literal $(: $help:literal)?),+ $(,)? }) => {
        impl ValueEnum for $type {
            fn value_variants<'a>() -> &'a [Self] {
                &[$(<$type>::$variant),+]
            }

            fn to_possible_value(&self) -> Option<PossibleValue> {
                Some(match self {
                    $(<$type>::$variant => PossibleValue::new($name)$(.help($help))?),+
                })
            }
        }
    };
}

value_enum!(CatalogFormat {
    Text => "text",
    Json => "json",
    Markdown => "markdown",
});

value_enum!(report::time::TimeFormat {
    Absolute => "a": "Absolute local time of day: 05:23:06.179560",
    AbsoluteDate => "ad": "Absolute local date and time: 2026-11-22 05:23:06.179560",
    Relative => "r": "Seconds since the capture's first datagram (the default)",
    Delta => "d": "Seconds since the previous datagram read, shown or not",
    DeltaDisplayed => "dd": "Seconds since the previous datagram shown",
    Epoch => "e": "Seconds since the Unix epoch: 1795324986.179560",
});

value_enum!(report::check::FailOn {
    Error => "error",
    Warning => "warning",
    Info => "info",
});

value_enum!(report::check::CheckFormat {
    Text => "text": "Per file, a table of the rules with findings; then the tally",
    Json => "json": "One document: policy, result, and per file the findings with their frames",
    Junit => "junit": "JUnit XML: one test suite per file, one test case per rule of the catalog",
});

value_enum!(report::html::ReportFormat {
    Html => "html",
    Svg => "svg",
});
