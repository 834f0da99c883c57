//! The typed JSON documents in this module's forms: floats as [`push_f64`] writes them, control
//! characters escaped as [`json_str`] escapes them, so that a document typed after its
//! hand-written form came first stays byte-identical.

use std::io;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter};

use super::number::{hex, push_eighths, push_f32, push_f64};
use crate::message::Value;
use crate::proto::schema::{Field, Ty};

/// A field's value as [`json_value`] writes it, for the typed documents: written by
/// [`push_json`], whose floats are [`json_value`]'s.
pub struct FieldValue<'a> {
    pub field: &'a Field,
    pub value: Value<'a>,
}

impl Serialize for FieldValue<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.value {
            Value::U(n) => serializer.serialize_u64(n),
            Value::I(n) => serializer.serialize_i64(n),
            // JSON has no NaN or infinity: strings, as json_float writes them.
            Value::F(f) if f.is_nan() => serializer.serialize_str("NaN"),
            Value::F(f) if f.is_infinite() => {
                serializer.serialize_str(if f > 0.0 { "inf" } else { "-inf" })
            }
            // At the field's own precision: [`JsonForms`] writes an f32 as one.
            Value::F(f) if self.field.ty == Ty::F32 => serializer.serialize_f32(f as f32),
            Value::F(f) => serializer.serialize_f64(f),
            Value::Str(s) => serializer.serialize_str(s),
            Value::Bytes(b) => {
                let mut text = String::with_capacity(b.len() * 2);
                hex(&mut text, b);
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("hex", &text)?;
                map.end()
            }
        }
    }
}

impl JsonSchema for FieldValue<'_> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "FieldValue".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A field's value as export writes it (a number; the fields the world keeps are numbers).",
            "type": "number"
        })
    }
}

/// serde_json's compact form with this module's: floats as [`push_f64`] and [`json_value`] write
/// them ("1", not serde_json's "1.0"; no exponent), control characters escaped as [`json_str`]
/// escapes them. The typed documents whose hand-written forms came first stay byte-identical.
#[derive(Default)]
pub struct JsonForms {
    /// The float being written (kept, to allocate once a document).
    number: String,
}

impl Formatter for JsonForms {
    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, x: f32) -> io::Result<()> {
        self.number.clear();
        if !push_eighths(&mut self.number, x) {
            push_f32(&mut self.number, x);
        }
        writer.write_all(self.number.as_bytes())
    }

    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, x: f64) -> io::Result<()> {
        self.number.clear();
        push_f64(&mut self.number, x);
        writer.write_all(self.number.as_bytes())
    }

    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        escape: CharEscape,
    ) -> io::Result<()> {
        match escape {
            CharEscape::Backspace => writer.write_all(b"\\u0008"),
            CharEscape::FormFeed => writer.write_all(b"\\u000c"),
            other => CompactFormatter.write_char_escape(writer, other),
        }
    }
}

/// Appends `value` as JSON in [`JsonForms`].
pub fn push_json(out: &mut String, value: &impl Serialize) {
    let mut bytes = Vec::with_capacity(256);
    let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, JsonForms::default());
    // Neither the types written (string keys only) nor a Vec fail.
    value
        .serialize(&mut serializer)
        .expect("a typed document serializes");
    out.push_str(std::str::from_utf8(&bytes).expect("serde_json writes UTF-8"));
}

/// Opens `json`, an object whose last member is an empty list, for that list's items to follow
/// it: the list's and the object's closing `]}` are removed.
pub fn open_last_list(json: &mut String) {
    debug_assert!(json.ends_with("[]}"), "{json}");
    json.truncate(json.len() - 2);
}
