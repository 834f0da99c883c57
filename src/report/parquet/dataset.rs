//! The dataset on disk: `DIR/<table>/capture=<NAME>/part-0.parquet`, Hive's layout, so that an
//! engine reading `DIR/<table>` sees one table with a `capture` column. A capture's files are
//! written under temporary names and put in place together when all are complete, the
//! captures table's last: a capture listed there has all its tables.

use std::io::Read as _;
use std::path::Path;
use std::process::ExitCode;

use sha2::{Digest, Sha256};

use super::tables::Dataset;
use super::writer::TableWriter;
use super::{FileFacts, Parquet};
use crate::app::inputs::{self, Input};
use crate::app::{read_capture, Reading};
use crate::report::filter::Filter;

/// Each table's file in a capture's partition.
pub const FILE: &str = "part-0.parquet";
/// The partition column.
pub const PARTITION: &str = "capture";

/// A capture's partition value: its path below the directory argument it was found in (its file
/// name for a file argument), with every byte but ASCII letters, digits and `.`, `_`, `-`, `+`
/// written `%XX` as Hive escapes partition values (`day1/match.pcap` → `day1%2Fmatch.pcap`).
pub fn partition_name(relative: &Path) -> String {
    let mut name = String::new();
    for b in relative.to_string_lossy().bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'_' | b'-' | b'+' => {
                name.push(b as char)
            }
            _ => name.push_str(&format!("%{b:02X}")),
        }
    }
    name
}

/// Exports `inputs` into the dataset at `out`, several at once as the reading's threads allow; a
/// capture that cannot be read is reported (and its partition left as it was), the others are
/// written.
pub fn export(
    inputs: &[Input],
    out: &Path,
    reading: &Reading,
    filter: &Filter,
) -> Result<ExitCode, String> {
    let mut names = std::collections::HashMap::new();
    for input in inputs {
        if let Some(other) = names.insert(partition_name(&input.relative), &input.path) {
            return Err(format!(
                "{} and {} would both be capture={}: export them into separate datasets",
                other.display(),
                input.path.display(),
                partition_name(&input.relative)
            ));
        }
    }
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    // The analysis resolves each entity's type, which the entity rows whose block left it out
    // carry.
    let mut reading = reading.clone();
    reading.analysis.entity_figures = true;
    let (at_once, reading) = reading.share(inputs.len());
    // Each capture gets a copy of the settings (the display filter keeps caches), and its own
    // snapshot profile: its `[profiles]` entry, or the layout its snapshots were found to fit;
    // its tables have the fields of every layout its conversations may be read with.
    let settings = std::sync::Mutex::new(reading);
    let results = inputs::parallel(inputs, at_once, |input| {
        let reading = settings.lock().map_err(|e| e.to_string())?.clone();
        let reading = reading.for_file(&input.path)?;
        let dataset = Dataset::new(&reading.layouts());
        export_one(input, out, &reading, dataset, filter.clone())
    });
    let mut failed = 0;
    for result in results {
        if let Err(e) = result {
            eprintln!("rtype-inspect: {e}");
            failed += 1;
        }
    }
    Ok(if failed > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// Writes one capture's partition of every table.
pub fn export_one(
    input: &Input,
    out: &Path,
    reading: &Reading,
    dataset: Dataset,
    filter: Filter,
) -> Result<(), String> {
    let facts = file_facts(&input.path)?;
    let partition = format!("{PARTITION}={}", partition_name(&input.relative));
    let mut tables = Vec::with_capacity(dataset.tables.len());
    for table in &dataset.tables {
        let dir = out.join(&table.name).join(&partition);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        tables.push(TableWriter::create(&dir.join(FILE), table)?);
    }
    let mut sink = Parquet::new(dataset, tables, filter, facts);
    read_capture(&input.path, reading, &mut sink)?;
    if let Some(e) = sink.unmatched.take() {
        return Err(e);
    }
    for file in sink.finish()? {
        file.commit()?;
    }
    Ok(())
}

/// The file's size and SHA-256, read once more on its own (from the page cache, as a rule).
fn file_facts(path: &Path) -> Result<FileFacts, String> {
    let error = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut file = std::fs::File::open(path).map_err(error)?;
    let mut hash = Sha256::new();
    let mut buf = vec![0; 1 << 16];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(error)?;
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
        size += n as u64;
    }
    let mut sha256 = String::with_capacity(64);
    for b in hash.finalize() {
        sha256.push_str(&format!("{b:02x}"));
    }
    Ok(FileFacts {
        file: path.display().to_string(),
        size,
        sha256,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_names_escape_what_hive_would() {
        assert_eq!(
            partition_name(Path::new("clean-session.pcap")),
            "clean-session.pcap"
        );
        assert_eq!(
            partition_name(Path::new("day 1/match=2.pcap.gz")),
            "day%201%2Fmatch%3D2.pcap.gz"
        );
    }
}
