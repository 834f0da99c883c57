//! The command line: arguments, and which report each command runs.
//!
//! Exit codes: 0 when the files were read (and, for `check`, nothing reached `--fail-on`),
//! 1 when `check` found something, 2 when a file cannot be read or the arguments are wrong.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

use crate::capture::CaptureReader;
use crate::pipeline::{Pipeline, Sink};
use crate::proto::profile::Profile;
use crate::proto::CATALOG;
use crate::report;

#[derive(Parser)]
#[command(
    name = "rtype-inspect",
    version,
    about = "Inspect R-Type UDP game traffic in pcap and pcapng captures"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CatalogFormat {
    Text,
    Json,
    Markdown,
}

/// Options shared by the commands that read captures.
#[derive(clap::Args, Clone)]
pub struct ReadOpts {
    /// Snapshot field profile replacing the document's mask-bit table: a bundled one by name
    /// (reference-17byte, reference-15byte) or a TOML file.
    #[arg(long, value_name = "NAME|FILE")]
    pub profile: Option<PathBuf>,
    /// Only datagrams to or from this UDP port (default: any port, found by magic bytes).
    #[arg(long)]
    pub port: Option<u16>,
    /// No progress bar.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub analysis: report::stats::AnalysisOpts,
}

#[derive(Subcommand)]
enum Command {
    /// Summarise a capture: conversations, message counts, violations (the default command).
    Summary {
        file: PathBuf,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        #[command(flatten)]
        read: ReadOpts,
    },
    /// One line per datagram; -V for the decoded tree, -x for a hex dump.
    Packets {
        file: PathBuf,
        /// Print every decoded field.
        #[arg(short = 'V', long)]
        verbose: bool,
        /// Add a hex dump of each datagram.
        #[arg(short = 'x', long)]
        hex: bool,
        #[command(flatten)]
        filter: report::filter::FilterArgs,
        #[command(flatten)]
        read: ReadOpts,
    },
    /// Export the JSON timeline (NDJSON by default).
    Export {
        file: PathBuf,
        /// Output file, - for standard output.
        #[arg(short, long, default_value = "-")]
        output: PathBuf,
        /// One JSON array instead of one record per line.
        #[arg(long)]
        json_array: bool,
        #[command(flatten)]
        filter: report::filter::FilterArgs,
        #[command(flatten)]
        read: ReadOpts,
    },
    /// Per-conversation session analysis: handshake, rates, round trips, loss, LevelInit.
    Stats(report::stats::StatsArgs),
    /// Judge captures for CI: exit 0 clean, 1 when a finding reaches --fail-on, 2 on errors.
    Check(report::check::CheckArgs),
    /// Print the protocol reference (every message and field) generated from the description.
    Protocol,
    /// List the catalog of violations.
    Violations {
        #[arg(long, value_enum, default_value = "text")]
        format: CatalogFormat,
    },
    /// Write the Wireshark Lua dissector generated from the protocol description.
    Dissector {
        /// Output file (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
        #[arg(long, value_name = "FILE")]
        profile: Option<PathBuf>,
    },
    /// Capture live on a Linux interface (root or CAP_NET_RAW): the packet list as datagrams
    /// arrive, then the summary on Ctrl-C, --duration or --count.
    Live(report::live::LiveArgs),
    /// List the network interfaces live capture can use.
    Interfaces {
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Write the deterministic sample captures (see samples/README.md).
    Generate {
        /// Directory to write every sample into.
        #[arg(long, value_name = "DIR")]
        all: Option<PathBuf>,
        /// Write a large benchmark capture with this many datagrams to --output.
        #[arg(long, value_name = "N")]
        large: Option<u64>,
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
}

const SUBCOMMANDS: &[&str] = &[
    "summary",
    "stats",
    "check",
    "packets",
    "export",
    "violations",
    "protocol",
    "dissector",
    "generate",
    "live",
    "interfaces",
    "help",
];

/// Runs the command line; `rtype-inspect FILE` means `rtype-inspect summary FILE`.
pub fn main() -> ExitCode {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(first) = args.get(1).and_then(|a| a.to_str()) {
        if !first.starts_with('-') && !SUBCOMMANDS.contains(&first) {
            args.insert(1, "summary".into());
        }
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match run(cli.command) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("rtype-inspect: {message}");
            ExitCode::from(2)
        }
    }
}

fn run(command: Command) -> Result<ExitCode, String> {
    match command {
        Command::Summary { file, format, read } => {
            let mut summary = report::summary::Summary::default();
            read_capture(&file, &read, &mut summary)?;
            let text = match format {
                Format::Json => {
                    serde_json::to_string_pretty(summary.json()).unwrap_or_default() + "\n"
                }
                Format::Text => {
                    summary.text(&file.display().to_string(), std::io::stdout().is_terminal())
                }
            };
            write_stdout(text.as_bytes())
        }
        Command::Packets {
            file,
            verbose,
            hex,
            filter,
            read,
        } => {
            let options = report::packets::PacketsOptions { verbose, hex };
            let out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
            let mut packets = report::packets::Packets::new(out, options, filter.build()?);
            read_capture(&file, &read, &mut packets)?;
            quiet_on_broken_pipe(packets.error)
        }
        Command::Export {
            file,
            output,
            json_array,
            filter,
            read,
        } => {
            let out: Box<dyn Write> = if output.as_os_str() == "-" {
                Box::new(std::io::stdout().lock())
            } else {
                Box::new(
                    std::fs::File::create(&output)
                        .map_err(|e| format!("{}: {e}", output.display()))?,
                )
            };
            let out = std::io::BufWriter::with_capacity(1 << 16, out);
            let mut export = report::export::Export::new(out, json_array, filter.build()?);
            read_capture(&file, &read, &mut export)?;
            quiet_on_broken_pipe(export.error())
        }
        Command::Stats(args) => report::stats::run(args),
        Command::Check(args) => report::check::run(args),
        Command::Protocol => write_stdout(report::protocol_doc::markdown().as_bytes()),
        Command::Violations { format } => {
            let text = match format {
                CatalogFormat::Json => {
                    serde_json::to_string_pretty(CATALOG).unwrap_or_default() + "\n"
                }
                CatalogFormat::Text => report::catalog::text(),
                CatalogFormat::Markdown => report::catalog::markdown(),
            };
            write_stdout(text.as_bytes())
        }
        Command::Dissector { output, profile } => {
            let lua = report::lua::generate(&load_profile(profile.as_deref())?);
            match output {
                Some(path) => {
                    std::fs::write(&path, lua).map_err(|e| format!("{}: {e}", path.display()))?
                }
                None => return write_stdout(lua.as_bytes()),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Live(args) => report::live::run(args),
        Command::Interfaces { format } => report::live::interfaces(format),
        Command::Generate { all, large, output } => {
            let result = match (all, large, output) {
                (Some(dir), None, None) => crate::samplegen::scenarios::write_all(&dir),
                (None, Some(n), Some(out)) => crate::samplegen::generate_large(&out, n, 4),
                _ => return Err("generate takes --all DIR, or --large N --output FILE".into()),
            };
            result.map_err(|e| e.to_string())?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn load_profile(path: Option<&Path>) -> Result<Profile, String> {
    path.map_or_else(|| Ok(Profile::document()), Profile::resolve)
}

/// Reads one capture into `sink`, with a progress bar on a TTY.
pub fn read_capture<S: Sink>(file: &Path, opts: &ReadOpts, sink: &mut S) -> Result<(), String> {
    let profile = load_profile(opts.profile.as_deref())?;
    let mut reader = CaptureReader::open(file).map_err(|e| e.to_string())?;
    let progress =
        (!opts.quiet && std::io::stderr().is_terminal()).then(|| progress_bar(file, &reader));
    let analysis = opts.analysis.config()?;
    let result = Pipeline::new(profile, opts.port)
        .with_analysis(analysis)
        .run(&mut reader, sink);
    if let Some((bar, stop)) = progress {
        stop.store(true, Ordering::Relaxed);
        bar.finish_and_clear();
    }
    result.map_err(|e| e.to_string())
}

/// A progress bar over the file's bytes, fed from the reader's counter by a ticker thread; for a
/// pipe or a device, whose size is unknown, a spinner with the bytes read so far.
fn progress_bar(
    file: &Path,
    reader: &CaptureReader,
) -> (
    indicatif::ProgressBar,
    std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    let len = std::fs::metadata(file)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len());
    let template = if len.is_some() {
        "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}"
    } else {
        "{spinner} {bytes} read, {bytes_per_sec}"
    };
    let bar =
        indicatif::ProgressBar::with_draw_target(len, indicatif::ProgressDrawTarget::stderr());
    bar.set_style(
        indicatif::ProgressStyle::with_template(template)
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (counter, ticker, done) = (reader.progress_counter(), bar.clone(), stop.clone());
    std::thread::spawn(move || {
        // Short reads finish before the first tick and never show a bar.
        std::thread::sleep(Duration::from_millis(300));
        while !done.load(Ordering::Relaxed) {
            ticker.set_position(counter.load(Ordering::Relaxed));
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    (bar, stop)
}

/// A closed pipe (`| head`) ends quietly; other write errors are reported.
fn quiet_on_broken_pipe(error: Option<std::io::Error>) -> Result<ExitCode, String> {
    match error {
        Some(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("writing output: {e}"))
        }
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// Writes to stdout; a closed pipe (`| head`) ends quietly.
pub fn write_stdout(bytes: &[u8]) -> Result<ExitCode, String> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("writing output: {e}")),
        _ => Ok(ExitCode::SUCCESS),
    }
}
