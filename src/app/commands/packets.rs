//! `rtype-inspect packets`: the packet list, its fields (`-T fields`), its JSON, or its frames
//! (`-w`).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use super::export::{export_several, export_stdout};
use crate::app::inputs::{exit_code, Captures, Input, InputArgs, Spool};
use crate::app::{read_capture, written, Format, ReadOpts, Reading, Term};
use crate::report;
use crate::report::filter::{Filter, FilterOptions};
use crate::report::time::TimeFormat;

/// What `packets` was asked for, parsed.
pub struct Packets {
    pub inputs: InputArgs,
    pub verbose: bool,
    pub hex: bool,
    pub format: Format,
    /// `-T fields`: the fields named by `field` instead of the list.
    pub tshark_fields: bool,
    pub field: Vec<String>,
    pub field_option: Vec<String>,
    pub time_format: TimeFormat,
    pub write: Option<PathBuf>,
    pub filter: FilterOptions,
    pub read: ReadOpts,
}

/// Runs `packets`.
pub fn packets(args: Packets, term: Term) -> Result<ExitCode, String> {
    let Packets {
        inputs,
        verbose,
        hex,
        format,
        tshark_fields,
        field,
        field_option,
        time_format,
        write,
        filter,
        read,
    } = args;
    if let Some(target) = write {
        let file = inputs.one("packets -w")?;
        let mut reading = read.reading()?.for_file(&file)?;
        reading.count = inputs.count;
        let none = report::cut::NoReport::default();
        report::cut::write(&file, &reading, filter.build()?, &target, none)?;
        return Ok(ExitCode::SUCCESS);
    }
    if tshark_fields {
        return field_lines(&inputs, &field, &field_option, filter, &read);
    }
    let options = report::packets::PacketsOptions {
        verbose,
        hex,
        width: term.width,
        time: time_format,
        color: term.color,
    };
    let captures = inputs.captures("packets")?;
    let mut reading = read.reading()?;
    reading.count = inputs.count;
    if captures.several {
        let filter = filter.build()?;
        let failed = if format == Format::Json {
            let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
            export_several(&captures, &reading, &filter, false, &mut out)?
        } else {
            packets_several(&captures, &reading, options, &filter)?
        };
        return Ok(exit_code(failed));
    }
    let file = captures.inputs[0].path.clone();
    let reading = reading.for_file(&file)?;
    if format == Format::Json {
        return export_stdout(&file, &reading, filter.build()?, false, None);
    }
    let out = crate::app::output::ListOut::for_input(&file);
    let mut packets = report::packets::Packets::new(out, options, filter.build()?);
    read_capture(&file, &reading, &mut packets)?;
    if let Some(e) = packets.unmatched.take() {
        return Err(e);
    }
    written(packets.error)
}

/// Several captures' packet lists on standard output, each headed by its file's name and
/// followed by a blank line; whether a capture could not be read.
fn packets_several(
    captures: &Captures,
    reading: &Reading,
    options: report::packets::PacketsOptions,
    filter: &Filter,
) -> Result<bool, String> {
    let job = |input: &Input, reading: &Reading| {
        let path = input.path.display().to_string();
        let spool = Spool::new().map_err(|e| format!("temporary file: {e}"))?;
        let mut packets = report::packets::Packets::new(spool, options, filter.clone());
        read_capture(&input.path, reading, &mut packets)?;
        if let Some(e) = packets.unmatched.take() {
            return Err(format!("{path}: {e}"));
        }
        match packets.error.take() {
            Some(e) => Err(format!("temporary file: {e}")),
            None => Ok(packets.into_output()),
        }
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let heading = |input: &Input, copied: usize| {
        let separator = if copied == 0 { "" } else { "\n" };
        format!("{separator}{}\n", input.path.display()).into_bytes()
    };
    let done = captures.spool_each(reading, job, &mut out, heading);
    if let Some(e) = done.error.or_else(|| out.flush().err()) {
        written(Some(e))?;
    }
    Ok(done.failed)
}

/// `packets -T fields -e FIELD…`: the named fields' values, a line per datagram.
fn field_lines(
    inputs: &InputArgs,
    names: &[String],
    field_options: &[String],
    filter: FilterOptions,
    read: &ReadOpts,
) -> Result<ExitCode, String> {
    let mut options = report::field_lines::FieldOptions::default();
    for o in field_options {
        options.set(o)?;
    }
    let file = inputs.one("packets")?;
    let mut reading = read.reading()?.for_file(&file)?;
    reading.count = inputs.count;
    let registry = crate::proto::registry::Registry::new(&reading.profile);
    let fields = crate::display_filter::DisplayFilter::fields(names, &registry)
        .map_err(|e| format!("-e: {e}"))?;
    let out = crate::app::output::ListOut::for_input(&file);
    let mut lines =
        report::field_lines::FieldLines::new(out, names.to_vec(), fields, options, filter.build()?);
    read_capture(&file, &reading, &mut lines)?;
    if let Some(e) = lines.unmatched.take() {
        return Err(e);
    }
    written(lines.error)
}
