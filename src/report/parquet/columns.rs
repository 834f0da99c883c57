//! Column builders: the values one column gets in the row group being built, and how they are
//! written as a Parquet column chunk. Every column of every table is one of these; nothing else
//! holds rows.
//!
//! A builder keeps only the values it was given, each with its row: a wide table whose rows set
//! a few of its columns (a datagram sets its message's) costs memory for the values alone, and the
//! nulls are written from the rows when the group is flushed.

use bytes::Bytes;
use parquet::basic::{Encoding, LogicalType, Repetition, TimeUnit, Type as Physical};
use parquet::column::writer::ColumnWriter;
use parquet::data_type::ByteArray;
use parquet::errors::Result;
use parquet::schema::types::Type;

use crate::message::Value;
use crate::proto::registry::FieldType;

/// A column's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Bool,
    U8,
    U16,
    U32,
    I16,
    I32,
    I64,
    F32,
    F64,
    /// UTF-8 text.
    Str,
    Bytes,
    /// Microseconds since the Unix epoch, UTC (the finest unit every engine reads).
    Timestamp,
}

impl Kind {
    /// The column type of a described field's filter type.
    pub fn of(ty: FieldType) -> Kind {
        match ty {
            FieldType::Boolean => Kind::Bool,
            FieldType::Unsigned(8) => Kind::U8,
            FieldType::Unsigned(16) => Kind::U16,
            FieldType::Unsigned(_) => Kind::U32,
            FieldType::Signed(16) => Kind::I16,
            FieldType::Signed(_) => Kind::I32,
            // A field keeps one type whatever layout a capture was read with: a dataset of
            // several layouts has one column per name, and Spark refuses to merge FLOAT with
            // DOUBLE. A scaled field (i16 × 10: five significant digits) is a FLOAT exactly as
            // it is shown.
            FieldType::Float | FieldType::Double => Kind::F32,
            FieldType::RelativeTime => Kind::F64,
            FieldType::String => Kind::Str,
            FieldType::FrameNum => Kind::I64,
            FieldType::Protocol
            | FieldType::None
            | FieldType::Bytes
            | FieldType::Ipv4
            | FieldType::Ipv6 => Kind::Bytes,
        }
    }

    /// The type as SQL engines show it, for the docs.
    pub const fn sql(self) -> &'static str {
        match self {
            Kind::Bool => "BOOLEAN",
            Kind::U8 => "UTINYINT",
            Kind::U16 => "USMALLINT",
            Kind::U32 => "UINTEGER",
            Kind::I16 => "SMALLINT",
            Kind::I32 => "INTEGER",
            Kind::I64 => "BIGINT",
            Kind::F32 => "FLOAT",
            Kind::F64 => "DOUBLE",
            Kind::Str => "VARCHAR",
            Kind::Bytes => "BLOB",
            Kind::Timestamp => "TIMESTAMP WITH TIME ZONE",
        }
    }

    /// How the column's pages are encoded, when not as dictionary and plain values (then its
    /// dictionary is off): deltas for 64-bit integers and times, which mostly grow (frames,
    /// timestamps: a byte or less a row instead of eight), and floats split by byte, which zstd
    /// compresses far better than whole ones (positions, speeds).
    pub fn encoding(self) -> Option<Encoding> {
        match self {
            Kind::I64 | Kind::Timestamp => Some(Encoding::DELTA_BINARY_PACKED),
            Kind::F32 | Kind::F64 => Some(Encoding::BYTE_STREAM_SPLIT),
            _ => None,
        }
    }

    /// The column's Parquet schema node (every column may be null).
    pub fn parquet(self, name: &str) -> Result<Type> {
        let (physical, logical) = match self {
            Kind::Bool => (Physical::BOOLEAN, None),
            Kind::U8 => (Physical::INT32, Some(LogicalType::integer(8, false))),
            Kind::U16 => (Physical::INT32, Some(LogicalType::integer(16, false))),
            Kind::U32 => (Physical::INT32, Some(LogicalType::integer(32, false))),
            Kind::I16 => (Physical::INT32, Some(LogicalType::integer(16, true))),
            Kind::I32 => (Physical::INT32, None),
            Kind::I64 => (Physical::INT64, None),
            Kind::F32 => (Physical::FLOAT, None),
            Kind::F64 => (Physical::DOUBLE, None),
            Kind::Str => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
            Kind::Bytes => (Physical::BYTE_ARRAY, None),
            Kind::Timestamp => (
                Physical::INT64,
                Some(LogicalType::timestamp(true, TimeUnit::MICROS)),
            ),
        };
        Type::primitive_type_builder(name, physical)
            .with_repetition(Repetition::OPTIONAL)
            .with_logical_type(logical)
            .build()
    }
}

/// The values of one column, by physical type.
#[derive(Debug)]
enum Values {
    Bool(Vec<bool>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    /// Text or bytes end to end, and where each value ends.
    Bytes {
        data: Vec<u8>,
        ends: Vec<u32>,
    },
}

/// Buffers reused by every column's flush.
#[derive(Default)]
pub struct Scratch {
    defs: Vec<i16>,
    arrays: Vec<ByteArray>,
}

/// The values of one column in the row group being built.
#[derive(Debug)]
pub struct ColumnBuilder {
    kind: Kind,
    /// The row of each value, ascending.
    rows: Vec<u32>,
    values: Values,
}

impl ColumnBuilder {
    pub fn new(kind: Kind) -> ColumnBuilder {
        let values = match kind {
            Kind::Bool => Values::Bool(Vec::new()),
            Kind::U8 | Kind::U16 | Kind::U32 | Kind::I16 | Kind::I32 => Values::I32(Vec::new()),
            Kind::I64 | Kind::Timestamp => Values::I64(Vec::new()),
            Kind::F32 => Values::F32(Vec::new()),
            Kind::F64 => Values::F64(Vec::new()),
            Kind::Str | Kind::Bytes => Values::Bytes {
                data: Vec::new(),
                ends: Vec::new(),
            },
        };
        ColumnBuilder {
            kind,
            rows: Vec::new(),
            values,
        }
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Makes way for `row`'s value: a row set twice keeps its last value.
    fn claim(&mut self, row: u32) {
        if self.rows.last() == Some(&row) {
            match &mut self.values {
                Values::Bool(v) => drop(v.pop()),
                Values::I32(v) => drop(v.pop()),
                Values::I64(v) => drop(v.pop()),
                Values::F32(v) => drop(v.pop()),
                Values::F64(v) => drop(v.pop()),
                Values::Bytes { data, ends } => {
                    ends.pop();
                    data.truncate(ends.last().map_or(0, |e| *e as usize));
                }
            }
        } else {
            self.rows.push(row);
        }
    }

    /// Sets an integer; a value the column's type cannot hold is written as it wraps (the
    /// description's types fit their columns).
    pub fn set_int(&mut self, row: u32, n: i64) {
        self.claim(row);
        match &mut self.values {
            Values::I32(v) => v.push(n as i32),
            Values::I64(v) => v.push(n),
            Values::F32(v) => v.push(n as f32),
            Values::F64(v) => v.push(n as f64),
            Values::Bool(v) => v.push(n != 0),
            Values::Bytes { data, ends } => {
                data.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
                ends.push(data.len() as u32);
            }
        }
    }

    pub fn set_float(&mut self, row: u32, f: f64) {
        self.claim(row);
        match &mut self.values {
            Values::F32(v) => v.push(f as f32),
            Values::F64(v) => v.push(f),
            Values::I32(v) => v.push(f as i32),
            Values::I64(v) => v.push(f as i64),
            Values::Bool(v) => v.push(f != 0.0),
            Values::Bytes { data, ends } => {
                data.extend_from_slice(f.to_string().as_bytes());
                ends.push(data.len() as u32);
            }
        }
    }

    pub fn set_bool(&mut self, row: u32, b: bool) {
        match &mut self.values {
            Values::Bool(_) => {
                self.claim(row);
                if let Values::Bool(v) = &mut self.values {
                    v.push(b);
                }
            }
            _ => self.set_int(row, i64::from(b)),
        }
    }

    /// Sets text or bytes. A text column keeps text only: bytes that are not UTF-8 (a string
    /// field that broke `*.string.utf8`) are written with U+FFFD in place of what is not, so
    /// that every engine reads the file.
    pub fn set_bytes(&mut self, row: u32, bytes: &[u8]) {
        self.claim(row);
        if let Values::Bytes { data, ends } = &mut self.values {
            match (self.kind, std::str::from_utf8(bytes)) {
                (Kind::Str, Err(_)) => {
                    data.extend_from_slice(String::from_utf8_lossy(bytes).as_bytes())
                }
                _ => data.extend_from_slice(bytes),
            }
            ends.push(data.len() as u32);
        } else {
            // Not a text column: the value is dropped, the row stays null.
            self.rows.pop();
        }
    }

    pub fn set_str(&mut self, row: u32, s: &str) {
        self.set_bytes(row, s.as_bytes());
    }

    /// Sets a decoded field's value.
    pub fn set_value(&mut self, row: u32, value: Value<'_>) {
        match value {
            Value::U(n) => self.set_int(row, n as i64),
            Value::I(n) => self.set_int(row, n),
            Value::F(f) => self.set_float(row, f),
            Value::Str(s) => self.set_str(row, s),
            Value::Bytes(b) => self.set_bytes(row, b),
        }
    }

    /// Bytes held, to bound a row group's memory.
    pub fn held(&self) -> usize {
        let values = match &self.values {
            Values::Bool(v) => v.len(),
            Values::I32(v) => v.len() * 4,
            Values::F32(v) => v.len() * 4,
            Values::I64(v) => v.len() * 8,
            Values::F64(v) => v.len() * 8,
            Values::Bytes { data, ends } => data.len() + ends.len() * 4,
        };
        values + self.rows.len() * 4
    }

    /// Writes the column chunk of a row group of `rows` rows, and starts the next group empty.
    pub fn write(
        &mut self,
        rows: u32,
        out: &mut ColumnWriter<'_>,
        scratch: &mut Scratch,
    ) -> Result<()> {
        let defs = &mut scratch.defs;
        defs.clear();
        defs.resize(rows as usize, 0);
        for &r in &self.rows {
            defs[r as usize] = 1;
        }
        let defs = Some(&defs[..]);
        match (&mut self.values, out) {
            (Values::Bool(v), ColumnWriter::BoolColumnWriter(w)) => {
                w.write_batch(v, defs, None)?;
                v.clear();
            }
            (Values::I32(v), ColumnWriter::Int32ColumnWriter(w)) => {
                w.write_batch(v, defs, None)?;
                v.clear();
            }
            (Values::I64(v), ColumnWriter::Int64ColumnWriter(w)) => {
                w.write_batch(v, defs, None)?;
                v.clear();
            }
            (Values::F32(v), ColumnWriter::FloatColumnWriter(w)) => {
                w.write_batch(v, defs, None)?;
                v.clear();
            }
            (Values::F64(v), ColumnWriter::DoubleColumnWriter(w)) => {
                w.write_batch(v, defs, None)?;
                v.clear();
            }
            (Values::Bytes { data, ends }, ColumnWriter::ByteArrayColumnWriter(w)) => {
                // One buffer for the group's values; each value is a slice of it.
                let all = Bytes::from(std::mem::take(data));
                let arrays = &mut scratch.arrays;
                let mut start = 0;
                for &end in ends.iter() {
                    arrays.push(ByteArray::from(all.slice(start..end as usize)));
                    start = end as usize;
                }
                let result = w.write_batch(arrays, defs, None);
                arrays.clear();
                ends.clear();
                result?;
            }
            _ => {
                return Err(parquet::errors::ParquetError::General(
                    "column builder and writer types differ".into(),
                ))
            }
        }
        self.rows.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_set_twice_keeps_its_last_value() {
        let mut c = ColumnBuilder::new(Kind::Str);
        c.set_str(0, "a");
        c.set_str(2, "first");
        c.set_str(2, "second");
        assert_eq!(c.rows, [0, 2]);
        let Values::Bytes { data, ends } = &c.values else {
            panic!()
        };
        assert_eq!((&data[..], &ends[..]), (&b"asecond"[..], &[1, 7][..]));
    }

    #[test]
    fn text_that_is_not_utf8_is_replaced() {
        let mut c = ColumnBuilder::new(Kind::Str);
        c.set_bytes(0, b"ok\xFF");
        let Values::Bytes { data, .. } = &c.values else {
            panic!()
        };
        assert_eq!(std::str::from_utf8(data).unwrap(), "ok\u{FFFD}");
    }
}
