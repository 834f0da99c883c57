//! `rtype-inspect summary` (and `rtype-inspect FILE`).

use std::io::Write as _;
use std::process::ExitCode;

use super::failed;
use crate::app::inputs::{exit_code, Input, InputArgs};
use crate::app::{read_capture, write_stdout, written, Format, ReadOpts, Reading, Term};
use crate::tally::summary::Summary;

/// Summarises each capture. Several captures' reports are written as each comes, in argument
/// order (flat memory); one capture's only when it could be read.
pub fn summary(
    inputs: &InputArgs,
    format: Format,
    read: &ReadOpts,
    term: Term,
) -> Result<ExitCode, String> {
    let captures = inputs.captures("summary")?;
    let mut reading = read.reading()?;
    reading.count = inputs.count;
    let several = captures.several;
    let mut out =
        several.then(|| std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock()));
    let (mut one, mut shown, mut failed, mut error) = (String::new(), 0, false, None);
    let job = |input: &Input, reading: &Reading| {
        let mut summary = Summary::default();
        summary.limit = reading.count;
        read_capture(&input.path, reading, &mut summary)?;
        Ok(summary)
    };
    captures.read_each(&reading, job, |input, summary| {
        let path = input.path.display().to_string();
        let report = match (summary, format) {
            (Ok(summary), Format::Json) => {
                let document = summary.document(&path);
                let text = serde_json::to_string_pretty(&document).unwrap_or_default();
                match several {
                    // An element of the array: indented one level.
                    true => format!("  {}", text.replace('\n', "\n  ")),
                    false => text + "\n",
                }
            }
            // Each section starts with its file's name.
            (Ok(summary), Format::Text) => summary.text(&path, term),
            (Err(e), _) => return failed |= self::failed(&e),
        };
        let Some(out) = out.as_mut() else {
            return one = report;
        };
        let separator = match (format, shown) {
            (Format::Json, 0) => "[\n",
            (Format::Json, _) => ",\n",
            (Format::Text, 0) => "",
            (Format::Text, _) => "\n",
        };
        shown += 1;
        if error.is_none() {
            error = out
                .write_all(separator.as_bytes())
                .and_then(|()| out.write_all(report.as_bytes()))
                .err();
        }
    });
    if let Some(mut out) = out {
        if matches!(format, Format::Json) && error.is_none() {
            let closing: &[u8] = if shown == 0 { b"[]\n" } else { b"\n]\n" };
            error = out.write_all(closing).err();
        }
        written(error.or_else(|| out.flush().err()))?;
    } else if !failed {
        write_stdout(one.as_bytes())?;
    }
    Ok(exit_code(failed))
}
