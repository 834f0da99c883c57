//! One table's Parquet file: rows go into the column builders, and a row group is written out
//! whenever the group reaches [`GROUP_ROWS`] rows or [`GROUP_BYTES`] bytes, so memory stays
//! bounded whatever the capture's size. The file is an [`OutputFile`]: a temporary name until
//! the capture is committed.

use std::path::Path;
use std::sync::Arc;

use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{ColumnPath, Type};

use super::columns::{ColumnBuilder, Scratch};
use super::tables::Table;
use crate::app::OutputFile;

/// Rows of a row group (DuckDB's own row groups are 122,880 rows).
pub const GROUP_ROWS: u32 = 122_880;
/// Bytes of values a row group may hold before it is written, whatever its rows.
pub const GROUP_BYTES: usize = 16 << 20;
/// zstd's level: 3, its own default.
const ZSTD_LEVEL: i32 = 3;

/// The writer properties of a table's file: zstd, statistics per column chunk, each column's
/// encoding by its type ([`super::columns::Kind::encoding`]).
pub fn properties(table: &Table) -> Arc<WriterProperties> {
    let level = ZstdLevel::try_new(ZSTD_LEVEL).unwrap_or_default();
    let mut builder = WriterProperties::builder()
        .set_compression(Compression::ZSTD(level))
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_created_by(format!("rtype-inspect {}", env!("CARGO_PKG_VERSION")));
    for c in &table.columns {
        if let Some(encoding) = c.kind.encoding() {
            let path = ColumnPath::from(c.name.as_str());
            builder = builder
                .set_column_dictionary_enabled(path.clone(), false)
                .set_column_encoding(path, encoding);
        }
    }
    Arc::new(builder.build())
}

/// A table's file being written.
pub struct TableWriter {
    builders: Vec<ColumnBuilder>,
    /// Rows of the group being built.
    rows: u32,
    /// Rows already written.
    pub written: u64,
    /// Rows of the group when its bytes were last counted.
    counted: u32,
    undecoded: Option<usize>,
    file: SerializedFileWriter<OutputFile>,
}

fn error(path: &Path, e: impl std::fmt::Display) -> String {
    format!("{}: {e}", path.display())
}

impl TableWriter {
    /// Creates the table's temporary file for `target`.
    pub fn create(target: &Path, table: &Table) -> Result<TableWriter, String> {
        let fields = table
            .columns
            .iter()
            .map(|c| c.kind.parquet(&c.name).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| error(target, e))?;
        let schema = Type::group_type_builder("schema")
            .with_fields(fields)
            .build()
            .map_err(|e| error(target, e))?;
        let out = OutputFile::create(target, &[])?;
        let file = SerializedFileWriter::new(out, Arc::new(schema), properties(table))
            .map_err(|e| error(target, e))?;
        Ok(TableWriter {
            builders: table
                .columns
                .iter()
                .map(|c| ColumnBuilder::new(c.kind))
                .collect(),
            rows: 0,
            written: 0,
            counted: 0,
            undecoded: table.undecoded,
            file,
        })
    }

    /// Starts a row; its columns are null until set.
    pub fn new_row(&mut self) -> u32 {
        self.rows += 1;
        self.rows - 1
    }

    pub fn col(&mut self, column: usize) -> &mut ColumnBuilder {
        &mut self.builders[column]
    }

    /// The column of undecoded bytes (the one before it holds their offset), if the table has it.
    pub fn spec_undecoded(&self) -> Option<usize> {
        self.undecoded
    }

    /// Whether the group being built is full (its bytes are counted every 1024 rows).
    pub fn full(&mut self) -> bool {
        if self.rows >= GROUP_ROWS {
            return true;
        }
        if self.rows - self.counted < 1024 {
            return false;
        }
        self.counted = self.rows;
        self.builders.iter().map(ColumnBuilder::held).sum::<usize>() >= GROUP_BYTES
    }

    /// Writes the group being built as a row group (nothing when it is empty).
    pub fn flush(&mut self, scratch: &mut Scratch) -> parquet::errors::Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut group = self.file.next_row_group()?;
        let mut builders = self.builders.iter_mut();
        while let Some(mut column) = group.next_column()? {
            if let Some(builder) = builders.next() {
                builder.write(self.rows, column.untyped(), scratch)?;
            }
            column.close()?;
        }
        group.close()?;
        self.written += u64::from(self.rows);
        self.rows = 0;
        self.counted = 0;
        Ok(())
    }

    /// Writes what is left and the footer; the file is complete, not yet in place.
    pub fn finish(mut self, scratch: &mut Scratch) -> parquet::errors::Result<OutputFile> {
        self.flush(scratch)?;
        self.file.into_inner()
    }
}
