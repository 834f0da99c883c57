//! The commands' arguments, as clap parses them, and what each becomes for the function that
//! runs it: the commands and reports take plain values, without clap.

use std::path::PathBuf;

use clap::builder::PossibleValue;
use clap::ValueEnum;

use crate::app::commands::{self, CatalogFormat};
use crate::app::inputs::InputArgs;
use crate::app::{Format, ReadOpts};
use crate::report;

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
    filter: report::filter::FilterArgs,
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
            filter: a.filter,
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
    filter: report::filter::FilterArgs,
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
            filter: a.filter,
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

impl ValueEnum for CatalogFormat {
    fn value_variants<'a>() -> &'a [Self] {
        &[Self::Text, Self::Json, Self::Markdown]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(match self {
            Self::Text => "text",
            Self::Json => "json",
            Self::Markdown => "markdown",
        }))
    }
}
