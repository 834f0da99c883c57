//! Many captures at once: the files that command-line arguments name (a directory stands for the
//! captures under it, recursively), and running a job on each of them on several threads.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

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
        } else if name
            .to_str()
            .is_some_and(|n| CAPTURE_EXTENSIONS.iter().any(|x| n.ends_with(x)))
        {
            out.push(Input { path, relative });
        }
    }
    Ok(())
}

/// The number of threads to use by default: the machine's cores.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Runs `job` on every item on up to `threads` threads, items taken in order; returns the
/// results in the items' order.
pub fn parallel<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    job: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new(items.iter().map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, items.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let result = job(item);
                if let Ok(mut results) = results.lock() {
                    results[i] = Some(result);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        ] {
            std::fs::write(d.join(f), "").unwrap();
        }
        let other = d.join("notes.txt");
        let inputs = capture_files(&[d.clone(), other.clone(), d.join("b.pcap")]).unwrap();
        let relative: Vec<_> = inputs.iter().map(|i| i.relative.clone()).collect();
        let expected: Vec<PathBuf> = ["a.pcapng", "b.pcap", "day1/night/y.pcap", "day1/x.pcap.gz"]
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
}
