//! Reading captures: the options every reading command shares, merged with the configuration
//! file into one [`Reading`], and the loop that runs a capture through the pipeline into a sink.

use std::path::{Path, PathBuf};

use super::config::{check_snapshot_hz, check_snapshot_tolerance, Config};
use super::progress::Progress;
use crate::capture::{CaptureReader, StageCpu};
use crate::display_filter::DisplayFilter;
use crate::pipeline::{unfit_note, Pipeline, RunEnd, Sink, Watch, Watched};
use crate::proto::profile::Profile;
use crate::proto::registry::Registry;
use crate::session::analysis;
use crate::tally::profile_hint::{fitting_layout, Fit};

/// Options shared by the commands that read captures. Each wins over the configuration file.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ReadOpts {
    /// Snapshot field profile replacing the document's mask-bit table: a bundled one by name
    /// (reference-17byte, reference-15byte), document (the document's table, as
    /// --strict-layout), or a TOML file [default: the document's, or the first profile of the
    /// configuration's [profiles], then the bundled ones, that the capture's snapshots fit].
    #[arg(long, value_name = "NAME|FILE")]
    pub profile: Option<PathBuf>,
    /// Only datagrams to or from this UDP port (default: any port, recognised by content).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: Option<u16>,
    /// No progress bar.
    #[arg(short, long)]
    pub quiet: bool,
    /// Configuration file [default: rtype-inspect.toml in the working directory, when there is one].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Nominal snapshot rate in Hz that session.snapshot-rate judges against [default: 60].
    #[arg(long, value_name = "HZ")]
    pub snapshot_hz: Option<f64>,
    /// How far the snapshot rate may be from nominal, in percent [default: 20].
    #[arg(long, value_name = "PERCENT")]
    pub snapshot_tolerance: Option<f64>,
    /// Display filter, in Wireshark's syntax on the dissector's field names: only the datagrams
    /// it matches are shown or counted (e.g. -Y 'rtype.msg_type == "SERVER_SNAPSHOT"';
    /// `rtype-inspect fields` lists the fields).
    #[arg(short = 'Y', long = "filter", value_name = "EXPR")]
    pub filter: Option<String>,
    /// Threads that decode [default: the machine's cores]: one capture's frames are spread over
    /// them (1: everything on one thread), several captures share them; outputs are the same
    /// whatever their number.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Read snapshots with the document's layout even when a bundled profile fits them (by
    /// default a capture file whose first snapshots fail is read with the profile that fits,
    /// and one rtype.snapshot.layout finding per conversation says so).
    #[arg(long)]
    pub strict_layout: bool,
}

/// How captures are read, once the options and the configuration file are merged.
#[derive(Clone, Debug)]
pub struct Reading {
    pub config: Config,
    pub profile: Profile,
    /// Where the profile came from (its bundled name or file), when it is not the document's.
    pub profile_source: Option<PathBuf>,
    pub port: Option<u16>,
    pub quiet: bool,
    pub analysis: analysis::Config,
    /// The display filter, compiled against the profile's fields.
    pub filter: Option<DisplayFilter>,
    /// Stop after reading this many datagrams (`-c N`).
    pub count: Option<u64>,
    /// Threads that decode ([`ReadOpts::threads`]).
    pub threads: usize,
    /// Whether the profile was given on the command line, which wins over the configuration's
    /// `[profiles]` table.
    pub profile_given: bool,
    /// Keep the document's layout when no profile is named (`--strict-layout`).
    pub strict_layout: bool,
    /// What the capture's snapshots were found to fit, when no profile was named: a candidate
    /// profile (they are read with it, and depart from the document's layout), or neither one
    /// nor the document's (the run ends saying so).
    pub fit: Fit,
    /// The profiles a capture's snapshots are tried with when the document's layout misreads
    /// them, with where each came from: the configuration's `[profiles]` (those that load), then
    /// the bundled ones. Loaded once per run.
    pub candidates: Vec<(Profile, PathBuf)>,
}

impl ReadOpts {
    /// Reads the configuration file and merges it with these options.
    pub fn reading(&self) -> Result<Reading, String> {
        let config = Config::find(self.config.as_deref())?;
        let mut analysis = analysis::Config::default();
        if let Some(hz) = self.snapshot_hz {
            check_snapshot_hz(hz, "--snapshot-hz")?;
            analysis.snapshot_hz = hz;
        } else if let Some(hz) = config.snapshot_hz {
            analysis.snapshot_hz = hz;
        }
        if let Some(pct) = self.snapshot_tolerance {
            check_snapshot_tolerance(pct, "--snapshot-tolerance")?;
            analysis.snapshot_tolerance = pct / 100.0;
        } else if let Some(pct) = config.snapshot_tolerance {
            analysis.snapshot_tolerance = pct / 100.0;
        }
        if let Some(m) = config.stall_multiple {
            analysis.stall_multiple = m;
        }
        let profile_source = self.profile.clone().or_else(|| config.profile.clone());
        let profile = match &profile_source {
            Some(arg) => {
                Profile::resolve(arg).map_err(|e| match (&self.profile, &config.path) {
                    // A profile named by the configuration file: say which file named it.
                    (None, Some(path)) => format!("{} (key profile): {e}", path.display()),
                    _ => e,
                })?
            }
            None => Profile::document(),
        };
        let mut reading = Reading {
            filter: None,
            profile,
            profile_source,
            port: self.port,
            quiet: self.quiet,
            analysis,
            count: None,
            threads: self
                .threads
                .map_or_else(super::inputs::default_threads, usize::from),
            profile_given: self.profile.is_some(),
            strict_layout: self.strict_layout,
            fit: Fit::Document,
            candidates: layout_candidates(&config),
            config,
        };
        if let Some(text) = &self.filter {
            let filter = reading.compile(text);
            reading.filter = Some(filter.map_err(|e| format!("display filter: {e}"))?);
        }
        Ok(reading)
    }
}

impl Reading {
    /// These settings for one capture: with the profile the configuration's `[profiles]` table
    /// gives its file name, unless `--profile` was given (the display filter compiled again, its
    /// fields being the profile's).
    ///
    /// With no profile named at all, a capture file whose first snapshots fail with the
    /// document's layout and fit a bundled profile is read with that profile
    /// ([`fitting_layout`]), unless
    /// `--strict-layout`. Standard input cannot be read twice: it keeps the document's layout.
    pub fn for_file(&self, capture: &Path) -> Result<Reading, String> {
        let found = self.config.profile_for(capture);
        let (Some((pattern, source)), false) = (found, self.profile_given) else {
            return Ok(self.with_found_layout(capture));
        };
        let at = || {
            let file = self.config.path.as_deref().unwrap_or(Path::new(""));
            format!("{} (profiles.\"{pattern}\")", file.display())
        };
        let profile = Profile::resolve(source).map_err(|e| format!("{}: {e}", at()))?;
        self.with_profile(profile, source)
            .map_err(|e| format!("display filter, with {}'s profile: {e}", at()))
    }

    /// These settings with `profile` (from `source`), the display filter compiled for its fields.
    fn with_profile(&self, profile: Profile, source: &Path) -> Result<Reading, String> {
        let mut reading = Reading {
            profile,
            profile_source: Some(source.to_path_buf()),
            ..self.clone()
        };
        if let Some(f) = &self.filter {
            reading.filter = Some(reading.compile(f.text()).map_err(|e| e.to_string())?);
        }
        Ok(reading)
    }

    /// Compiles a display filter for the fields of every layout these settings may read a
    /// conversation with ([`Reading::layouts`]).
    fn compile(&self, text: &str) -> Result<DisplayFilter, crate::display_filter::FilterError> {
        DisplayFilter::compile(text, &Registry::for_layouts(&self.layouts()))
    }

    /// These settings, with the bundled profile `capture`'s snapshots fit when no profile is
    /// named and the document's layout does not fit them.
    fn with_found_layout(&self, capture: &Path) -> Reading {
        let named = self.profile_source.is_some() || self.strict_layout;
        let file = !named && std::fs::metadata(capture).is_ok_and(|m| m.is_file());
        let candidates: Vec<Profile> = self.candidates.iter().map(|(p, _)| p.clone()).collect();
        let fit = match file {
            true => fitting_layout(capture, self.port, &candidates),
            false => Fit::Document,
        };
        let found = match fit {
            Fit::Profile(name) => self
                .candidates
                .iter()
                .find(|(p, _)| p.finding_name() == name)
                .and_then(|(p, source)| self.with_profile(p.clone(), source).ok()),
            _ => None,
        };
        Reading {
            fit,
            ..found.unwrap_or_else(|| self.clone())
        }
    }

    /// The pipeline these settings read with.
    pub fn pipeline(&self) -> Pipeline {
        let mut pipeline = Pipeline::new(self.profile.clone(), self.port);
        if self.chooses_layouts() {
            pipeline = pipeline.with_layouts(self.candidates.iter().map(|(p, _)| p.clone()));
        }
        pipeline
            .with_analysis(self.analysis)
            .with_config(self.config.path.clone())
            .with_filter(self.filter.clone())
            .with_threads(self.threads)
    }

    /// Whether each conversation finds its own snapshot layout: unless a profile was named (on
    /// the command line, in the configuration, or by `[profiles]` for this file), which is every
    /// conversation's, or `--strict-layout`.
    fn chooses_layouts(&self) -> bool {
        let found = matches!(self.fit, Fit::Profile(_));
        !self.strict_layout && (self.profile_source.is_none() || found)
    }

    /// Every snapshot layout the conversations may be read with, the run's profile first.
    pub fn layouts(&self) -> Vec<Profile> {
        let mut layouts = vec![self.profile.clone()];
        if self.chooses_layouts() {
            let candidates = self.candidates.iter().map(|(p, _)| p.clone());
            layouts.extend(crate::pipeline::layouts::after(&self.profile, candidates));
        }
        layouts
    }

    /// How `files` captures share the threads: how many are read at once, and the settings each
    /// is read with (the threads left over for its frames).
    pub fn share(&self, files: usize) -> (usize, Reading) {
        let at_once = self.threads.clamp(1, files.max(1));
        let mut each = self.clone();
        each.threads = (self.threads / at_once).max(1);
        // Several captures at once: one progress bar each would fight over the terminal.
        each.quiet |= files > 1;
        (at_once, each)
    }
}

/// The profiles a capture's snapshots are tried with ([`Reading::candidates`]): each profile
/// the configuration's `[profiles]` names (once, in its order; one that does not load is left
/// out here and reported when a capture it is given to is read), then the bundled ones.
fn layout_candidates(config: &Config) -> Vec<(Profile, PathBuf)> {
    let mut candidates: Vec<(Profile, PathBuf)> = Vec::new();
    for (_, source) in &config.profiles {
        if candidates.iter().any(|(_, s)| s == source) {
            continue;
        }
        if let Ok(profile) = Profile::resolve(source) {
            candidates.push((profile, source.clone()));
        }
    }
    for profile in Profile::all_bundled() {
        if !candidates.iter().any(|(p, _)| p.name == profile.name) {
            let source = PathBuf::from(&profile.name);
            candidates.push((profile, source));
        }
    }
    candidates
}

/// The file name that stands for standard input.
pub const STDIN: &str = "-";

/// Reads one capture into `sink` (`-` is standard input), with a progress bar on a terminal;
/// with a count, stops after reading that many datagrams.
pub fn read_capture<S: Sink>(file: &Path, reading: &Reading, sink: &mut S) -> Result<(), String> {
    let stdin = file.as_os_str() == STDIN;
    let mut reader = if stdin {
        CaptureReader::from_read(file, Box::new(std::io::stdin()))
    } else {
        CaptureReader::open(file)
    }
    .map_err(|e| e.to_string())?;
    let mut pipeline = reading.pipeline();
    if stdin && !stdin_is_file() {
        // A pipe is read by one thread, a frame at a time: several would hold a partial batch
        // until more arrives, and what has arrived would not be shown.
        pipeline = pipeline.with_threads(1);
    }
    // Dropped at the end of the run, which erases it.
    let progress = (!reading.quiet)
        .then(|| progress_bar(file, &reader))
        .flatten();
    let mut watched = Watched {
        sink,
        watch: Run {
            left: reading.count.unwrap_or(u64::MAX),
            unfit: 0,
        },
    };
    let result = pipeline.run(&mut reader, &mut watched);
    drop(progress);
    let cpu = result.map_err(|e| e.to_string())?;
    if let (Some(note), true) = (unfit_note(watched.watch.unfit), first_note(file)) {
        eprintln!("{}: {note}", file.display());
    }
    if std::env::var_os(STAGE_CPU).is_some() {
        eprintln!("{}", stage_cpu_line(file, &cpu));
    }
    Ok(())
}

/// Whether standard input is a regular file (`< capture.pcap`), which several threads may read
/// ahead of, rather than a pipe or a terminal.
fn stdin_is_file() -> bool {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let stdin = std::io::stdin();
        let file = stdin.as_fd().try_clone_to_owned().map(std::fs::File::from);
        file.and_then(|f| f.metadata()).is_ok_and(|m| m.is_file())
    }
    #[cfg(not(unix))]
    {
        false
    }
}

/// Whether this run has not yet said something of `file`: a command that reads a capture twice
/// (`report`) says it once.
fn first_note(file: &Path) -> bool {
    static NOTED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let mut noted = NOTED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let first = !noted.iter().any(|f| f == file);
    if first {
        noted.push(file.to_path_buf());
    }
    first
}

/// The environment variable that makes every run print its stages' CPU time on standard error
/// (the benchmarks' per-stage mode: BENCHMARKS.md).
pub const STAGE_CPU: &str = "RTYPE_INSPECT_STAGE_CPU";

/// The cores [`stage_cpu_line`] predicts the speed on.
const PREDICTED_CORES: [u32; 5] = [1, 2, 4, 8, 16];

/// One line of a run's CPU time per stage, and the ordered stage's share: the part that runs on
/// one thread whatever the cores, so that the run cannot be faster than it on any machine. Then
/// the frames per second the same work would take on more cores as fast as these
/// ([`StageCpu::predicted_rate`]), and from how many the ordered stage (or reading) bounds it.
fn stage_cpu_line(file: &Path, cpu: &StageCpu) -> String {
    let s = |ns: u64| ns as f64 / 1e9;
    let total = cpu.total();
    let stages = format!(
        "stage CPU of {}: reading {:.3} s, workers {:.3} s, ordered {:.3} s ({:.1} % of {:.3} s); \
         {} frames",
        file.display(),
        s(cpu.reading),
        s(cpu.workers),
        s(cpu.ordered),
        100.0 * cpu.ordered as f64 / total.max(1) as f64,
        s(total),
        cpu.frames,
    );
    if cpu.reading + cpu.workers == 0 {
        // `--threads 1`: every stage ran as one, and nothing tells them apart.
        return stages + " on one thread (--threads 2 or more predicts more cores)";
    }
    let rates: Vec<String> = PREDICTED_CORES
        .iter()
        .map(|&n| format!("{n}: {:.2}", cpu.predicted_rate(n) / 1e6))
        .collect();
    format!(
        "{stages}, predicted M frames/s on cores {} (bound by one thread from {} cores)",
        rates.join(", "),
        cpu.bound_from()
    )
}

/// What every reading watches: with `-c N`, lets `left` more datagrams through, whether the
/// filters pass them or not, then asks reading to stop (tshark's `-c N`); at the end, how many
/// conversations no layout reads.
struct Run {
    /// The datagrams still to let through (all, without `-c N`).
    left: u64,
    /// The conversations whose snapshots no layout reads ([`RunEnd::unfit`]).
    unfit: usize,
}

impl Watch for Run {
    fn datagram(&mut self, _: &crate::session::event::DatagramEvent<'_>, _: bool) -> bool {
        let take = self.left > 0;
        self.left = self.left.saturating_sub(1);
        take
    }
    fn end(&mut self, end: &RunEnd<'_>) {
        self.unfit = end.unfit();
    }
    fn done(&self, sink_done: bool) -> bool {
        self.left == 0 || sink_done
    }
}

/// A progress bar over the file's bytes, fed from the reader's counter, on a terminal; for a
/// pipe or a device, whose size is unknown, a spinner with the bytes read so far.
fn progress_bar(file: &Path, reader: &CaptureReader) -> Option<Progress> {
    let len = std::fs::metadata(file)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len());
    let template = if len.is_some() {
        "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}"
    } else {
        "{spinner} {bytes} read, {bytes_per_sec}"
    };
    Progress::on_terminal(len, template, reader.progress_counter())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ninth pass's figures (BENCHMARKS.md): two threads share the work until the ordered
    /// stage, 0.263 s of 0.913 s, is the longer, from 4 cores on.
    #[test]
    fn the_stage_line_predicts_the_speed_on_more_cores() {
        let cpu = StageCpu {
            reading: 100_000_000,
            workers: 550_000_000,
            ordered: 263_000_000,
            frames: 2_000_000,
        };
        assert_eq!(
            stage_cpu_line(Path::new("big.pcap"), &cpu),
            "stage CPU of big.pcap: reading 0.100 s, workers 0.550 s, ordered 0.263 s (28.8 % of \
             0.913 s); 2000000 frames, predicted M frames/s on cores 1: 2.19, 2: 4.38, 4: 7.60, \
             8: 7.60, 16: 7.60 (bound by one thread from 4 cores)"
        );
        // Reading, done by one thread at a time, bounds it too; and no time predicts nothing.
        let reading_bound = StageCpu {
            reading: 500,
            workers: 400,
            ordered: 100,
            frames: 1,
        };
        assert_eq!(reading_bound.predicted_rate(4), 1e9 / 500.0);
        assert_eq!(reading_bound.bound_from(), 2);
        assert_eq!(StageCpu::default().predicted_rate(2), 0.0);
        assert_eq!(StageCpu::default().bound_from(), 1);
        // One thread tells its stages apart by nothing: no prediction.
        let one_thread = StageCpu {
            ordered: 900_000_000,
            frames: 2_000_000,
            ..StageCpu::default()
        };
        assert_eq!(
            stage_cpu_line(Path::new("big.pcap"), &one_thread),
            "stage CPU of big.pcap: reading 0.000 s, workers 0.000 s, ordered 0.900 s (100.0 % of \
             0.900 s); 2000000 frames on one thread (--threads 2 or more predicts more cores)"
        );
    }
}
