//! One function per command, called by `cli` with the arguments it parsed: the reports' own
//! commands are in `report`; here are the ones that combine reports or print a reference.

pub mod export;
pub mod packets;
pub mod summary;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::app::{write_stdout, Format, OutputFile, Term};
use crate::proto::profile::Profile;
use crate::report;

pub use export::{export, Export};
pub use packets::{packets, Packets};
pub use summary::summary;

/// A capture that could not be read: its error (which names it) on stderr; the others go on.
fn failed(e: &str) -> bool {
    eprintln!("rtype-inspect: {e}");
    true
}

/// Built with `--no-default-features`: no Parquet writer.
#[cfg(not(feature = "parquet"))]
const NO_PARQUET: &str = "this build has no Parquet support (built without the `parquet` feature)";

/// The form of `violations`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum CatalogFormat {
    Text,
    Json,
    Markdown,
}

/// `violations`: the catalog of violations.
pub fn violations(format: CatalogFormat, term: Term) -> Result<ExitCode, String> {
    let text = match format {
        CatalogFormat::Json => {
            serde_json::to_string_pretty(&report::catalog::json()).unwrap_or_default() + "\n"
        }
        CatalogFormat::Text => report::catalog::text(term),
        CatalogFormat::Markdown => report::catalog::markdown(),
    };
    write_stdout(text.as_bytes())
}

/// `dissector`: the Wireshark Lua dissector, with `profile` built in as the default.
pub fn dissector(output: Option<&Path>, profile: Option<&Path>) -> Result<ExitCode, String> {
    let profile = profile.map(Profile::resolve).transpose()?;
    let lua = report::lua::generate(profile.as_ref());
    match output {
        Some(path) => crate::app::write_file(path, lua.as_bytes())
            .map_err(|e| format!("{}: {e}", path.display()))?,
        None => return write_stdout(lua.as_bytes()),
    }
    Ok(ExitCode::SUCCESS)
}

/// `fields`: every display-filter field, with `profile`'s mask-bit fields.
pub fn fields(format: Format, values: bool, profile: Option<&Path>) -> Result<ExitCode, String> {
    let profile = match profile {
        Some(p) => Profile::resolve(p)?,
        None => Profile::document(),
    };
    let registry = crate::proto::registry::Registry::new(&profile);
    let text = match format {
        Format::Json => {
            serde_json::to_string_pretty(&report::field_list::json(&registry, &profile.name))
                .unwrap_or_default()
                + "\n"
        }
        _ => report::field_list::text(&registry, values),
    };
    write_stdout(text.as_bytes())
}

/// `tables`: the Parquet export's tables and columns, with `profile`'s entity columns.
pub fn tables(profile: Option<&Path>) -> Result<ExitCode, String> {
    let profile = match profile {
        Some(p) => Profile::resolve(p)?,
        None => Profile::document(),
    };
    write_stdout(parquet_tables(&profile)?.as_bytes())
}

#[cfg(feature = "parquet")]
fn parquet_tables(profile: &Profile) -> Result<String, String> {
    Ok(report::parquet::tables::Dataset::new(std::slice::from_ref(profile)).markdown())
}

#[cfg(not(feature = "parquet"))]
fn parquet_tables(_: &Profile) -> Result<String, String> {
    Err(NO_PARQUET.into())
}

/// `generate`: every sample into `all`, or a large capture of `large` datagrams into `output`.
pub fn generate(
    all: Option<PathBuf>,
    large: Option<u64>,
    output: Option<PathBuf>,
) -> Result<ExitCode, String> {
    match (all, large, output) {
        (Some(dir), None, None) => {
            crate::samplegen::scenarios::write_all(&dir)
                .map_err(|e| format!("{}: {e}", dir.display()))?;
            Ok(ExitCode::SUCCESS)
        }
        (None, Some(n), Some(path)) => {
            let out = OutputFile::create(&path, &[])?;
            let made = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
            let bar = crate::app::progress::Progress::on_terminal(
                Some(n),
                "{bar:40} {human_pos}/{human_len} datagrams, {per_sec} ETA {eta}",
                made.clone(),
            );
            let out = crate::samplegen::generate_large_counted(out, n, 4, &made)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            drop(bar);
            out.commit()?;
            Ok(ExitCode::SUCCESS)
        }
        _ => Err("generate takes --all DIR, or --large N --output FILE".into()),
    }
}

/// `dialect dissector`: the Wireshark Lua dissector of the described dialect.
pub fn dialect_dissector(description: &Path, output: Option<&Path>) -> Result<ExitCode, String> {
    let described = crate::describe::Described::open(description)?;
    report::dialect::write_out(output, &crate::describe::lua::generate(&described))
}
