//! Many captures at once: the files that command-line arguments name (a directory stands for the
//! captures under it, recursively), and running a job on each of them on several threads.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::Reading;

/// The error of arguments that name no capture.
pub const NO_CAPTURE: &str = "no capture found (.pcap, .pcapng, .cap or .gz) in the arguments";

/// The captures a reading command is given, as tshark (`-r`) and ripgrep (any number of files
/// and directories) take them, and tshark's `-c`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct InputArgs {
    /// Capture file (pcap or pcapng, gzipped or not); - reads standard input.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Capture file to read, as tshark -r (the same as giving it as FILE); repeatable.
    #[arg(short = 'r', long = "read-file", value_name = "FILE")]
    pub read: Vec<PathBuf>,
    /// Stop after reading N datagrams, whether the filters pass them or not (tshark's -c).
    #[arg(short = 'c', long = "count", value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
}

impl InputArgs {
    /// Every capture named, the positional ones first, then `-r`'s.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.files.iter().chain(&self.read).cloned().collect()
    }

    /// The captures a command reads, from files and directories; `command` names it in the
    /// error when there is none.
    pub fn captures(&self, command: &str) -> Result<Captures, String> {
        let args = self.paths();
        if args.is_empty() {
            return Err(format!(
                "{command}: give a capture file (FILE or -r FILE; - reads standard input)"
            ));
        }
        let inputs = capture_files(&args)?;
        if inputs.is_empty() {
            return Err(NO_CAPTURE.into());
        }
        // A directory's output has the shape of several files', whatever it holds: a program
        // reading it does not depend on how many captures the directory has today.
        let several = inputs.len() > 1 || args.iter().any(|a| a.is_dir());
        Ok(Captures { inputs, several })
    }

    /// The one capture a command reads; `command` names it in the error.
    pub fn one(&self, command: &str) -> Result<PathBuf, String> {
        match &self.paths()[..] {
            [file] => Ok(file.clone()),
            [] => Err(format!(
                "{command}: give a capture file (FILE or -r FILE; - reads standard input)"
            )),
            _ => Err(format!("{command} reads one capture")),
        }
    }
}

/// The captures a command was given, and whether its output takes the several-file shape (each
/// file's section headed by its name, a JSON array, a `file` field on every record).
#[derive(Debug)]
pub struct Captures {
    pub inputs: Vec<Input>,
    pub several: bool,
}

impl Captures {
    /// Runs `job` on every capture, on up to `threads` threads, and hands each result with its
    /// capture to `emit` in argument order ([`ordered`]). A result is kept until those before it
    /// are emitted: jobs that make a long output write it to a [`Spool`], not memory.
    pub fn run<R: Send>(
        &self,
        threads: usize,
        job: impl Fn(&Input) -> R + Sync,
        emit: impl FnMut(&Input, R),
    ) {
        ordered(&self.inputs, threads, job, emit);
    }

    /// [`Captures::run`] for jobs that read their capture, as many at once as the reading's
    /// threads allow ([`Reading::share`]): each gets its own copy of `reading` (the display filter
    /// keeps caches), with the configuration's profile for its file, and no progress bar when
    /// there are several. A capture that cannot be read gives its error, naming it, and the
    /// others go on.
    pub fn read_each<R: Send>(
        &self,
        reading: &Reading,
        job: impl Fn(&Input, &Reading) -> Result<R, String> + Sync,
        emit: impl FnMut(&Input, Result<R, String>),
    ) {
        let (at_once, reading) = reading.share(self.inputs.len());
        let shared = Mutex::new(reading);
        let job = |input: &Input| {
            let reading = shared.lock().unwrap_or_else(|e| e.into_inner()).clone();
            job(input, &reading.for_file(&input.path)?)
        };
        self.run(at_once, job, emit);
    }

    /// [`Captures::read_each`] for jobs that write their report to a [`Spool`]: each is copied to
    /// `out` in argument order, after what `before` gives for it (a heading, a separator; the
    /// number of reports copied before it is its second argument); a capture that cannot be
    /// read has its error on standard error, and the others go on.
    pub fn spool_each(
        &self,
        reading: &Reading,
        job: impl Fn(&Input, &Reading) -> Result<Spool, String> + Sync,
        out: &mut impl std::io::Write,
        mut before: impl FnMut(&Input, usize) -> Vec<u8>,
    ) -> Spooled {
        let mut done = Spooled::default();
        self.read_each(reading, job, |input, spool| match spool {
            Ok(spool) if done.error.is_none() => {
                let head = before(input, done.copied);
                done.copied += 1;
                done.error = out
                    .write_all(&head)
                    .and_then(|()| std::io::copy(&mut spool.reader()?, out).map(|_| ()))
                    .err();
            }
            Ok(_) => {}
            Err(e) => {
                eprintln!("rtype-inspect: {e}");
                done.failed = true;
            }
        });
        done
    }
}

impl Captures {
    /// [`Captures::spool_each`] to standard output as one list: the documents as a JSON array
    /// (`json`), else the reports one after another with a blank line between. The run's exit
    /// code: 2 when a capture could not be read.
    pub fn spool_list(
        &self,
        reading: &Reading,
        job: impl Fn(&Input, &Reading) -> Result<Spool, String> + Sync,
        json: bool,
    ) -> Result<std::process::ExitCode, String> {
        use std::io::Write as _;
        let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
        let separator = |_: &Input, copied: usize| -> Vec<u8> {
            match (json, copied) {
                (true, 0) => b"[\n".to_vec(),
                (true, _) => b",\n".to_vec(),
                (false, 0) => Vec::new(),
                (false, _) => b"\n".to_vec(),
            }
        };
        let mut done = self.spool_each(reading, job, &mut out, separator);
        if json && done.error.is_none() {
            let closing: &[u8] = if done.copied == 0 { b"[]\n" } else { b"]\n" };
            done.error = out.write_all(closing).err();
        }
        super::output::written(done.error.or_else(|| out.flush().err()))?;
        Ok(exit_code(done.failed))
    }
}

/// How [`Captures::spool_each`] went.
#[derive(Debug, Default)]
pub struct Spooled {
    /// Reports copied out.
    pub copied: usize,
    /// Whether a capture could not be read.
    pub failed: bool,
    /// The write error that stopped the output.
    pub error: Option<std::io::Error>,
}

/// The exit code of a run over several captures: 2 when one could not be read.
pub fn exit_code(failed: bool) -> std::process::ExitCode {
    if failed {
        std::process::ExitCode::from(2)
    } else {
        std::process::ExitCode::SUCCESS
    }
}

/// A report's output kept in an unnamed temporary file (removed as soon as it is created), to be
/// copied out when its turn comes: several captures' long outputs in flat memory.
pub struct Spool {
    file: std::io::BufWriter<std::fs::File>,
}

impl Spool {
    pub fn new() -> std::io::Result<Spool> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!(".rtype-inspect-{}-{n}.spool", std::process::id()));
        let file = std::fs::File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        // Unnamed from now on (on Unix): nothing is left behind, however the run ends.
        #[cfg(unix)]
        std::fs::remove_file(&path)?;
        #[cfg(not(unix))]
        let _ = &path;
        Ok(Spool {
            file: std::io::BufWriter::with_capacity(1 << 16, file),
        })
    }

    /// What was written, to read from its start.
    pub fn reader(self) -> std::io::Result<std::io::BufReader<std::fs::File>> {
        use std::io::Seek;
        let mut file = self.file.into_inner().map_err(|e| e.into_error())?;
        file.seek(std::io::SeekFrom::Start(0))?;
        Ok(std::io::BufReader::with_capacity(1 << 16, file))
    }
}

impl std::io::Write for Spool {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.file.write_all(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// File names a directory's captures end with.
pub const CAPTURE_EXTENSIONS: &[&str] = &[".pcap", ".pcapng", ".cap", ".gz"];

/// Directories deeper than this under an argument are not entered (a link loop ends here).
const MAX_DEPTH: usize = 64;

/// One capture to read: its path, and where it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    pub path: PathBuf,
    /// The path below the directory argument it was found in (its file name for a file
    /// argument): unique among a run's inputs, and how reports name it.
    pub relative: PathBuf,
}

/// The captures `args` name: each file argument as it is (whatever its name), and the files
/// under each directory argument whose names end with a [`CAPTURE_EXTENSIONS`] one, in name
/// order. Each file once, in the order of the arguments. A directory that cannot be read is an
/// error; a file argument is taken as it is, even when missing (its reader reports it).
pub fn capture_files(args: &[PathBuf]) -> Result<Vec<Input>, String> {
    let mut inputs: Vec<Input> = Vec::new();
    for arg in args {
        // A file that cannot be opened is kept: reading it says why, beside the others' reports.
        if arg.is_dir() {
            walk(arg, Path::new(""), 0, &mut inputs)?;
        } else {
            let name = arg.file_name().map_or_else(|| arg.clone(), PathBuf::from);
            inputs.push(Input {
                path: arg.clone(),
                relative: name,
            });
        }
    }
    let mut seen = std::collections::HashSet::new();
    inputs.retain(|i| seen.insert(std::fs::canonicalize(&i.path).unwrap_or(i.path.clone())));
    Ok(inputs)
}

fn walk(dir: &Path, below: &Path, depth: usize, out: &mut Vec<Input>) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    let read = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut entries: Vec<_> = read
        .filter_map(Result::ok)
        .map(|e| (e.file_name(), e.path()))
        .collect();
    entries.sort();
    for (name, path) in entries {
        let relative = below.join(&name);
        if path.is_dir() {
            walk(&path, &relative, depth + 1, out)?;
        } else if name.to_str().is_some_and(|n| {
            // `session.PCAP` is a capture too: extensions are matched without regard to case.
            let n = n.to_ascii_lowercase();
            CAPTURE_EXTENSIONS.iter().any(|x| n.ends_with(x))
        }) {
            out.push(Input { path, relative });
        }
    }
    Ok(())
}

/// The number of threads that decode by default: the machine's cores. Each of them reads and
/// works batches, and one also runs the ordered stage ([`crate::capture::CaptureReader`]'s
/// parallel reading), so more threads than cores would only take turns on them (summary of the
/// 2 M-datagram benchmark on 2 cores: 0.47 s with 2 threads, 0.60 s with 3).
pub fn default_threads() -> usize {
    threads_for(std::thread::available_parallelism().map_or(1, usize::from))
}

/// [`default_threads`] on a machine with `cores` cores.
fn threads_for(cores: usize) -> usize {
    cores.max(1)
}

/// Finished results [`ordered`] holds per thread while an earlier one is still being worked: a
/// slow capture delays the others' output, never makes it pile up (each result may hold an open
/// [`Spool`]: a file descriptor and its buffer).
pub const WAITING_PER_THREAD: usize = 4;

/// Runs `job` on every item on up to `threads` threads, items taken in order; returns the
/// results in the items' order.
pub fn parallel<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    job: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let mut results = Vec::with_capacity(items.len());
    ordered(items, threads, job, |_, r| results.push(r));
    results
}

/// Runs `job` on every item on up to `threads` threads, items taken in order, and hands each
/// result to `emit` (on the calling thread) in the items' order as soon as those before it are
/// emitted. An item is started only when fewer than [`WAITING_PER_THREAD`] × `threads` results
/// wait for an earlier one: memory and open files stay flat in the number of items. A job that
/// panics stops the others and the panic goes on in the caller.
pub fn ordered<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    job: impl Fn(&T) -> R + Sync,
    mut emit: impl FnMut(&T, R),
) {
    let threads = threads.clamp(1, items.len().max(1));
    let window = threads * WAITING_PER_THREAD;
    let state = Mutex::new(Order {
        next: 0,
        emitted: 0,
        done: std::collections::BTreeMap::new(),
        panic: None,
        stopped: false,
    });
    let changed = std::sync::Condvar::new();
    let lock = || state.lock().unwrap_or_else(|e| e.into_inner());
    let wait = |guard| changed.wait(guard).unwrap_or_else(|e| e.into_inner());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = {
                    let mut order = lock();
                    while order.next >= order.emitted + window && !order.stopped {
                        order = wait(order);
                    }
                    if order.next >= items.len() || order.stopped {
                        break;
                    }
                    order.next += 1;
                    order.next - 1
                };
                let result =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&items[i])));
                let mut order = lock();
                match result {
                    Ok(r) => {
                        order.done.insert(i, r);
                    }
                    Err(payload) => {
                        order.panic = Some(payload);
                        order.stopped = true;
                    }
                }
                changed.notify_all();
            });
        }
        // However the caller's side ends (a panic in `emit` too), the threads stop waiting.
        let _stop = OnDrop(|| {
            lock().stopped = true;
            changed.notify_all();
        });
        for (i, item) in items.iter().enumerate() {
            let result = {
                let mut order = lock();
                loop {
                    if let Some(payload) = order.panic.take() {
                        drop(order);
                        std::panic::resume_unwind(payload);
                    }
                    if let Some(r) = order.done.remove(&i) {
                        break r;
                    }
                    order = wait(order);
                }
            };
            emit(item, result);
            lock().emitted = i + 1;
            changed.notify_all();
        }
    });
}

/// What [`ordered`]'s threads share.
struct Order<R> {
    /// The next item to start.
    next: usize,
    /// Items emitted so far.
    emitted: usize,
    /// Results waiting for their turn, by item.
    done: std::collections::BTreeMap<usize, R>,
    /// A job's panic, to go on in the caller.
    panic: Option<Box<dyn std::any::Any + Send>>,
    /// No item is to be started any more (a panic, or the caller is gone).
    stopped: bool,
}

/// Runs its closure when dropped, unwinding included.
struct OnDrop<F: FnMut()>(F);

impl<F: FnMut()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_are_the_cores() {
        assert_eq!([0, 1, 2, 4, 16].map(threads_for), [1, 1, 2, 4, 16]);
    }

    #[test]
    fn directories_give_their_captures_recursively() {
        let d = std::env::temp_dir().join(format!("rtype-inputs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("day1/night")).unwrap();
        for f in [
            "b.pcap",
            "a.pcapng",
            "notes.txt",
            "day1/x.pcap.gz",
            "day1/night/y.pcap",
            "day1/SESSION.PCAP",
        ] {
            std::fs::write(d.join(f), "").unwrap();
        }
        let other = d.join("notes.txt");
        let inputs = capture_files(&[d.clone(), other.clone(), d.join("b.pcap")]).unwrap();
        let relative: Vec<_> = inputs.iter().map(|i| i.relative.clone()).collect();
        let expected: Vec<PathBuf> = [
            "a.pcapng",
            "b.pcap",
            "day1/SESSION.PCAP",
            "day1/night/y.pcap",
            "day1/x.pcap.gz",
        ]
        .iter()
        .map(PathBuf::from)
        .chain([PathBuf::from("notes.txt")])
        .collect();
        assert_eq!(relative, expected);
        // A missing file is kept for its reader to report; an unreadable directory is an error.
        let missing = capture_files(&[d.join("missing")]).unwrap();
        assert_eq!(missing[0].path, d.join("missing"));
        assert!(walk(&d.join("missing"), Path::new(""), 0, &mut Vec::new()).is_err());
    }

    #[test]
    fn parallel_keeps_the_order() {
        let items: Vec<u64> = (0..100).collect();
        assert_eq!(
            parallel(&items, 4, |n| n * 2),
            (0..100).map(|n| n * 2).collect::<Vec<_>>()
        );
        assert!(parallel(&Vec::<u64>::new(), 4, |n| *n).is_empty());
    }

    #[test]
    fn ordered_holds_a_bounded_number_of_results() {
        use std::sync::atomic::AtomicUsize;
        let items: Vec<usize> = (0..200).collect();
        let (started, emitted) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let mut most_ahead = 0;
        let mut seen = Vec::new();
        ordered(
            &items,
            3,
            |&n| {
                started.fetch_add(1, Ordering::SeqCst);
                // The first item is slow: the others may not all finish before it is emitted.
                if n == 0 {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                n
            },
            |_, n| {
                let ahead = started.load(Ordering::SeqCst) - emitted.fetch_add(1, Ordering::SeqCst);
                most_ahead = most_ahead.max(ahead);
                seen.push(n);
            },
        );
        assert_eq!(seen, items);
        assert!(
            most_ahead <= 3 * WAITING_PER_THREAD + 3,
            "{most_ahead} started ahead of the output"
        );
    }

    #[test]
    fn a_panicking_job_panics_in_the_caller() {
        let items: Vec<u64> = (0..50).collect();
        let caught = std::panic::catch_unwind(|| {
            ordered(&items, 2, |&n| assert_ne!(n, 7), |_, ()| {});
        });
        assert!(caught.is_err());
    }
}
