//! `rtype-inspect export`: the JSON timeline of one capture or several, the cut of one (`-w`),
//! or a Parquet dataset of many.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::failed;
use crate::app::inputs::{exit_code, Captures, Input, InputArgs, Spool};
use crate::app::{read_capture, written, OutputFile, ReadOpts, Reading};
use crate::report;
use crate::report::filter::{Filter, FilterOptions};

/// What `export` was asked for, parsed.
pub struct Export {
    pub inputs: InputArgs,
    pub output: Option<PathBuf>,
    pub write: Option<PathBuf>,
    /// `--format parquet`: a dataset of many captures instead of the NDJSON timeline.
    pub parquet: bool,
    pub json_array: bool,
    pub filter: FilterOptions,
    pub read: ReadOpts,
}

/// Runs `export`.
pub fn export(args: Export) -> Result<ExitCode, String> {
    let Export {
        inputs,
        output,
        write,
        parquet,
        json_array,
        filter,
        read,
    } = args;
    crate::app::output::one_stdout(&[("-o", output.as_deref()), ("-w", write.as_deref())])?;
    let (mut reading, filter) = (read.reading()?, filter.build()?);
    reading.count = inputs.count;
    let files = inputs.paths();
    if files.is_empty() {
        return Err("export: give a capture file (FILE or -r FILE; - reads standard input)".into());
    }
    if parquet {
        if write.is_some() {
            return Err("-w writes a pcap of one capture: not with --format parquet".into());
        }
        let Some(output) = output.filter(|o| o.as_os_str() != "-") else {
            return Err("export --format parquet writes a directory: give it with -o DIR".into());
        };
        let inputs = crate::app::inputs::capture_files(&files)?;
        if inputs.is_empty() {
            return Err(crate::app::inputs::NO_CAPTURE.into());
        }
        return parquet_export(&inputs, &output, &reading, &filter);
    }
    let captures = inputs.captures("export")?;
    if captures.several {
        if write.is_some() {
            return Err("-w writes the cut of one capture: give one file".into());
        }
        let output = output.unwrap_or_else(|| PathBuf::from("-"));
        if output.as_os_str() == "-" {
            let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
            let failed = export_several(&captures, &reading, &filter, json_array, &mut out)?;
            return Ok(exit_code(failed));
        }
        let paths: Vec<&Path> = captures.inputs.iter().map(|i| i.path.as_path()).collect();
        let mut out = OutputFile::create(&output, &paths)?;
        let failed = export_several(&captures, &reading, &filter, json_array, &mut out)?;
        out.commit()?;
        return Ok(exit_code(failed));
    }
    let file = &captures.inputs[0].path;
    let reading = reading.for_file(file)?;
    let output = match (output, &write) {
        (None, Some(target)) => {
            let none = report::cut::NoReport::default();
            report::cut::write(file, &reading, filter, target, none)?;
            return Ok(ExitCode::SUCCESS);
        }
        (output, _) => output.unwrap_or_else(|| PathBuf::from("-")),
    };
    if output.as_os_str() == "-" {
        return export_stdout(file, &reading, filter, json_array, write.as_deref());
    }
    let out = OutputFile::create(&output, &[file])?;
    let export = report::export::Export::new(out, json_array, filter.clone());
    let mut export = match &write {
        Some(target) => report::cut::write(file, &reading, filter, target, export)?,
        None => {
            let mut export = export;
            read_capture(file, &reading, &mut export)?;
            export
        }
    };
    if let Some(e) = export.unmatched.take() {
        return Err(e);
    }
    let out = export
        .finish()
        .map_err(|e| format!("{}: {e}", output.display()))?;
    out.commit()?;
    Ok(ExitCode::SUCCESS)
}

/// Several captures' JSON timelines as one stream to `out`, every record naming its capture in
/// a `file` field (`export`, `packets --format json`); whether a capture could not be read.
pub(super) fn export_several<W: std::io::Write>(
    captures: &Captures,
    reading: &Reading,
    filter: &Filter,
    json_array: bool,
    out: &mut W,
) -> Result<bool, String> {
    let job = |input: &Input, reading: &Reading| {
        let path = input.path.display().to_string();
        let spool = Spool::new().map_err(|e| format!("temporary file: {e}"))?;
        let mut export = report::export::Export::new(spool, false, filter.clone());
        export = export.with_file(&path);
        read_capture(&input.path, reading, &mut export)?;
        if let Some(e) = export.unmatched.take() {
            return Err(format!("{path}: {e}"));
        }
        export.finish().map_err(|e| format!("temporary file: {e}"))
    };
    let (mut failed, mut records, mut error) = (false, 0u64, None);
    let mut line = Vec::new();
    let mut copy = |spool: Spool| -> std::io::Result<()> {
        use std::io::BufRead;
        let mut reader = spool.reader()?;
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line)? == 0 {
                return Ok(());
            }
            if json_array {
                out.write_all(if records == 0 { b"[\n" } else { b",\n" })?;
                out.write_all(line.strip_suffix(b"\n").unwrap_or(&line))?;
            } else {
                out.write_all(&line)?;
            }
            records += 1;
        }
    };
    captures.read_each(reading, job, |_, spool| match spool {
        Ok(spool) if error.is_none() => error = copy(spool).err(),
        Ok(_) => {}
        Err(e) => failed |= self::failed(&e),
    });
    if json_array && error.is_none() {
        let closing: &[u8] = if records == 0 { b"[]\n" } else { b"\n]\n" };
        error = out.write_all(closing).err();
    }
    if let Some(e) = error.or_else(|| out.flush().err()) {
        written(Some(e))?;
    }
    Ok(failed)
}

/// The JSON timeline of `file` on standard output: `export -o -`, and `packets --format json`.
pub(super) fn export_stdout(
    file: &Path,
    reading: &Reading,
    filter: Filter,
    json_array: bool,
    cut: Option<&Path>,
) -> Result<ExitCode, String> {
    let out = crate::app::output::ListOut::for_input(file);
    let export = report::export::Export::new(out, json_array, filter.clone());
    let mut export = match cut {
        Some(target) => report::cut::write(file, reading, filter, target, export)?,
        None => {
            let mut export = export;
            read_capture(file, reading, &mut export)?;
            export
        }
    };
    if let Some(e) = export.unmatched.take() {
        return Err(e);
    }
    written(export.finish().err())
}

#[cfg(feature = "parquet")]
fn parquet_export(
    inputs: &[Input],
    output: &Path,
    reading: &Reading,
    filter: &Filter,
) -> Result<ExitCode, String> {
    report::parquet::dataset::export(inputs, output, reading, filter)
}

#[cfg(not(feature = "parquet"))]
fn parquet_export(_: &[Input], _: &Path, _: &Reading, _: &Filter) -> Result<ExitCode, String> {
    Err(super::NO_PARQUET.into())
}
