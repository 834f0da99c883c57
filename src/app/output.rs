//! Where reports go: standard output, where a closed pipe (`| head`) ends the run quietly, and
//! files, written whole or not at all.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// The form of a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// The path that names standard output wherever an output file is named (a file of that name
/// is `./-`).
pub const STDOUT: &str = "-";

/// Whether `path` names standard output.
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == STDOUT
}

/// Refuses two outputs that both name standard output: their bytes would be mixed.
pub fn one_stdout(outputs: &[(&str, Option<&Path>)]) -> Result<(), String> {
    let named: Vec<&str> = outputs
        .iter()
        .filter(|(_, path)| path.is_some_and(is_stdout))
        .map(|(option, _)| *option)
        .collect();
    match named.as_slice() {
        [a, b, ..] => Err(format!(
            "{a} - and {b} - would both write to standard output: give one of them a file"
        )),
        _ => Ok(()),
    }
}

/// A file written to a temporary name beside the target and renamed into place by
/// [`OutputFile::commit`]: an interrupted or failed run leaves what was there before, never a
/// half-written file. Special files (`/dev/null`, a FIFO, a terminal) are written directly, and
/// `-` is standard output.
pub struct OutputFile {
    target: PathBuf,
    /// The temporary file, while it is not yet renamed (`None` for a special file).
    temp: Option<PathBuf>,
    out: BufWriter<Target>,
}

/// Where an [`OutputFile`]'s bytes go.
enum Target {
    File(File),
    Stdout(io::Stdout),
}

impl Write for Target {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Target::File(f) => f.write(buf),
            Target::Stdout(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Target::File(f) => f.flush(),
            Target::Stdout(s) => s.flush(),
        }
    }
}

impl OutputFile {
    /// Creates the temporary file for `target`; refuses a target that is one of `inputs` (a
    /// capture overwritten by its own export is lost).
    pub fn create(target: &Path, inputs: &[&Path]) -> Result<OutputFile, String> {
        let shown = target.display();
        if let Some(input) = inputs.iter().find(|i| same_file(i, target)) {
            return Err(format!(
                "{shown}: refusing to write the output over an input ({})",
                input.display()
            ));
        }
        let special = std::fs::metadata(target).is_ok_and(|m| !m.is_file());
        let (file, temp) = if is_stdout(target) {
            (Target::Stdout(io::stdout()), None)
        } else if special {
            let file = File::options().write(true).open(target);
            (
                Target::File(file.map_err(|e| format!("{shown}: {e}"))?),
                None,
            )
        } else {
            let temp = temp_path(target);
            let file = File::options().write(true).create_new(true).open(&temp);
            let file = file.map_err(|e| format!("{shown}: {e}"))?;
            (Target::File(file), Some(temp))
        };
        Ok(OutputFile {
            target: target.to_path_buf(),
            temp,
            out: BufWriter::with_capacity(1 << 16, file),
        })
    }

    /// The path the output goes to once committed.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Flushes the file and renames it into place. Standard output closed by the reader (`| head`)
    /// is a quiet end, as for the reports.
    pub fn commit(mut self) -> Result<(), String> {
        let shown = self.target.display().to_string();
        match self.out.flush() {
            Err(e) if is_stdout(&self.target) => written(Some(e)).map(drop)?,
            flushed => flushed.map_err(|e| format!("{shown}: {e}"))?,
        }
        if let Some(temp) = self.temp.take() {
            if let Err(e) = std::fs::rename(&temp, &self.target) {
                let _ = std::fs::remove_file(&temp);
                return Err(format!("{shown}: {e}"));
            }
        }
        Ok(())
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.out.write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl Drop for OutputFile {
    /// Not committed: the temporary file goes, the target stays as it was.
    fn drop(&mut self) {
        if let Some(temp) = &self.temp {
            let _ = std::fs::remove_file(temp);
        }
    }
}

/// Writes `bytes` to `path` whole or not at all (through an [`OutputFile`]).
pub fn write_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut out = OutputFile::create(path, &[]).map_err(io::Error::other)?;
    out.write_all(bytes)?;
    out.commit().map_err(io::Error::other)
}

/// `.NAME.PID.tmp` beside `target`: hidden, and on the same file system so the rename is atomic.
fn temp_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    target.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

/// Whether two paths name the same existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }
}

/// Writes to stdout; a closed pipe (`| head`) ends quietly.
pub fn write_stdout(bytes: &[u8]) -> Result<ExitCode, String> {
    let mut out = io::stdout().lock();
    written(out.write_all(bytes).and_then(|_| out.flush()).err())
}

/// The end of a run that wrote a report: a closed pipe (`| head`) is a quiet success, any other
/// write error is reported.
pub fn written(error: Option<io::Error>) -> Result<ExitCode, String> {
    match error {
        Some(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(format!("writing output: {e}")),
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// How long output read from a pipe may wait in a buffer before it is written.
pub const PIPE_FLUSH: Duration = Duration::from_millis(50);

/// Standard output for a list that is written as a capture is read (`packets`, `-T fields`,
/// `export`): a large buffer for a file, whose bytes come as fast as they can be read; for a
/// pipe or a device, whose frames come when they are sent, a buffer that a thread writes out
/// every [`PIPE_FLUSH`], so that what has arrived is shown while reading waits for more.
pub enum ListOut {
    Buffered(BufWriter<io::StdoutLock<'static>>),
    Timed(Timed),
}

impl ListOut {
    /// The writer for a list of the capture `input` (`-` is standard input).
    pub fn for_input(input: &Path) -> ListOut {
        let regular = input.as_os_str() != super::read::STDIN
            && std::fs::metadata(input).is_ok_and(|m| m.is_file());
        if regular {
            ListOut::Buffered(BufWriter::with_capacity(1 << 16, io::stdout().lock()))
        } else {
            ListOut::Timed(Timed::new(PIPE_FLUSH))
        }
    }
}

impl Write for ListOut {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            ListOut::Buffered(w) => w.write(buf),
            ListOut::Timed(w) => w.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            ListOut::Buffered(w) => w.write_all(buf),
            ListOut::Timed(w) => w.write_all(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            ListOut::Buffered(w) => w.flush(),
            ListOut::Timed(w) => w.flush(),
        }
    }
}

/// Standard output through a buffer that a thread writes out every period while it holds
/// something; writing past [`TIMED_MAX`] bytes writes out at once, so the buffer stays bounded.
pub struct Timed {
    shared: Arc<TimedShared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The bytes a [`Timed`] writer holds at most before it writes them out itself.
const TIMED_MAX: usize = 1 << 16;

#[derive(Default)]
struct TimedShared {
    state: Mutex<TimedState>,
    /// Wakes the thread at the end.
    ended: Condvar,
}

#[derive(Default)]
struct TimedState {
    pending: Vec<u8>,
    /// The first write error (a closed pipe), returned to every later write.
    error: Option<io::ErrorKind>,
    ended: bool,
}

impl TimedState {
    /// Writes the pending bytes to standard output; keeps the first error.
    fn write_out(&mut self) -> io::Result<()> {
        if let Some(kind) = self.error {
            return Err(kind.into());
        }
        let mut out = io::stdout().lock();
        let result = out.write_all(&self.pending).and_then(|()| out.flush());
        self.pending.clear();
        if let Err(e) = &result {
            self.error = Some(e.kind());
        }
        result
    }
}

impl Timed {
    pub fn new(period: Duration) -> Timed {
        let shared = Arc::new(TimedShared::default());
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("output".into())
            .spawn(move || {
                let mut state = theirs.state.lock().unwrap_or_else(|e| e.into_inner());
                while !state.ended {
                    state = theirs
                        .ended
                        .wait_timeout(state, period)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                    if !state.pending.is_empty() {
                        let _ = state.write_out();
                    }
                }
            })
            .ok();
        Timed { shared, thread }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, TimedState> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Write for Timed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf).map(|()| buf.len())
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let no_thread = self.thread.is_none();
        let mut state = self.state();
        if let Some(kind) = state.error {
            return Err(kind.into());
        }
        state.pending.extend_from_slice(buf);
        if state.pending.len() >= TIMED_MAX || no_thread {
            state.write_out()?;
        }
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.state().write_out()
    }
}

impl Drop for Timed {
    fn drop(&mut self) {
        self.state().ended = true;
        self.shared.ended.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = self.state().write_out();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rtype-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn the_target_changes_only_on_commit() {
        let d = dir("commit");
        let target = d.join("out.json");
        std::fs::write(&target, "before").unwrap();
        let mut out = OutputFile::create(&target, &[]).unwrap();
        out.write_all(b"after").unwrap();
        out.flush().unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "before");
        drop(out);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "before");
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            1,
            "the temporary file is gone"
        );
        let mut out = OutputFile::create(&target, &[]).unwrap();
        out.write_all(b"after").unwrap();
        out.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "after");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
    }

    #[test]
    fn refuses_to_overwrite_an_input() {
        let d = dir("input");
        let input = d.join("x.pcap");
        std::fs::write(&input, "capture").unwrap();
        let e = OutputFile::create(&d.join(".").join("x.pcap"), &[&input])
            .err()
            .unwrap();
        assert!(
            e.contains("refusing to write the output over an input"),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&input).unwrap(), "capture");
    }

    #[cfg(unix)]
    #[test]
    fn special_files_are_written_directly() {
        let mut out = OutputFile::create(Path::new("/dev/null"), &[]).unwrap();
        out.write_all(b"x").unwrap();
        out.commit().unwrap();
        assert!(Path::new("/dev/null").exists());
    }
}
