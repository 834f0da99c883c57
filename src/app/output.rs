//! Where reports go: standard output, where a closed pipe (`| head`) ends the run quietly, and
//! files, written whole or not at all.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The form of a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// A file written to a temporary name beside the target and renamed into place by
/// [`OutputFile::commit`]: an interrupted or failed run leaves what was there before, never a
/// half-written file. Special files (`/dev/null`, a FIFO, a terminal) are written directly.
pub struct OutputFile {
    target: PathBuf,
    /// The temporary file, while it is not yet renamed (`None` for a special file).
    temp: Option<PathBuf>,
    out: BufWriter<File>,
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
        let (file, temp) = if special {
            let file = File::options().write(true).open(target);
            (file.map_err(|e| format!("{shown}: {e}"))?, None)
        } else {
            let temp = temp_path(target);
            let file = File::options().write(true).create_new(true).open(&temp);
            (file.map_err(|e| format!("{shown}: {e}"))?, Some(temp))
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

    /// Flushes the file and renames it into place.
    pub fn commit(mut self) -> Result<(), String> {
        let shown = self.target.display().to_string();
        self.out.flush().map_err(|e| format!("{shown}: {e}"))?;
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
