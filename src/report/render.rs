//! Rendering decoded values and findings as text and JSON, in the description's terms.

use std::fmt::Write as _;

use crate::datagram::Dialect;
use crate::message::Value;
use crate::proto::schema::{Display, Field, Named, Ty};

mod finding;
mod number;
mod typed;

pub use finding::{detail, loose_detail};
pub use number::{
    decimal_len, hex, json_key, json_str, json_str_within, push_f32, push_f64, push_i64, push_ip,
    push_padded, push_spaces, push_u64,
};
use number::{json_float, push_eighths};
pub use typed::{open_last_list, push_json, FieldValue, JsonForms};

/// Appends a value as JSON.
#[inline]
pub fn json_value(out: &mut String, field: &Field, value: Value<'_>) {
    match value {
        Value::U(n) => push_u64(out, n),
        Value::I(n) => push_i64(out, n),
        Value::F(f) => {
            // Most floats of a game are eighths: those are written here, without a call.
            if field.ty != Ty::F32 || !push_eighths(out, f as f32) {
                json_float(out, field, f);
            }
        }
        Value::Str(s) => json_str(out, s),
        Value::Bytes(b) => {
            out.push_str("{\"hex\":\"");
            hex(out, b);
            out.push_str("\"}");
        }
    }
}

/// The name an enum display gives `n`, if any.
pub fn enum_name(table: &[Named], n: u64) -> Option<&'static str> {
    table
        .iter()
        .find(|e| u64::from(e.value) == n)
        .map(|e| e.name)
}

/// Names of the flags set in `n` (a multi-bit mask shows as `name=value`).
pub fn flag_names(table: &[Named], n: u64, out: &mut String) {
    let mut first = true;
    for e in table {
        let mask = u64::from(e.value);
        let bits = n & mask;
        if bits == 0 {
            continue;
        }
        if !first {
            out.push_str(", ");
        }
        first = false;
        if mask.count_ones() == 1 {
            out.push_str(e.name);
        } else {
            let _ = write!(out, "{}={}", e.name, bits >> mask.trailing_zeros());
        }
    }
}

/// A value for people: the number in the field's display, with names where the description has them.
pub fn text_value(
    out: &mut String,
    field: &Field,
    value: Value<'_>,
    message_name: impl Fn(u64) -> Option<&'static str>,
) {
    let width = field.ty.width().unwrap_or(1) * 2;
    match (field.display, value) {
        (Display::Hex, Value::U(n)) => {
            let _ = write!(out, "0x{n:0width$X}");
        }
        (Display::Enum(table), Value::U(n)) => {
            let _ = write!(out, "{n} ({})", enum_name(table, n).unwrap_or("unknown"));
        }
        (Display::MessageType, Value::U(n)) => {
            let _ = write!(out, "0x{n:02X} ({})", message_name(n).unwrap_or("unknown"));
        }
        (Display::Flags(table), Value::U(n)) => {
            let _ = write!(out, "0x{n:0width$X} (");
            flag_names(table, n, out);
            out.push(')');
        }
        (_, Value::U(n)) => {
            let _ = write!(out, "{n}");
        }
        (_, Value::I(n)) => {
            let _ = write!(out, "{n}");
        }
        // As tshark shows the field: %g at the precision of its type.
        (_, Value::F(f)) => {
            let digits = if field.ty == Ty::F32 { 6 } else { 15 };
            crate::number::write_g(out, f, digits);
        }
        (_, Value::Str(s)) => {
            let _ = write!(out, "{s:?}");
        }
        (_, Value::Bytes(b)) => {
            out.push_str("(not UTF-8) ");
            hex(out, b);
        }
    }
}

/// The name of message type `code` in `dialect`.
pub fn message_name(dialect: Dialect, code: u64) -> Option<&'static str> {
    match dialect {
        Dialect::Rtype => u8::try_from(code)
            .ok()
            .and_then(crate::proto::rtype::message)
            .map(|m| m.name),
        Dialect::Rt => u8::try_from(code)
            .ok()
            .and_then(crate::proto::rt::message)
            .map(|m| m.name),
        Dialect::Rtnp => None,
        Dialect::Described(i) => {
            let loaded = crate::describe::loaded::all().get(usize::from(i))?;
            let code = i64::try_from(code).ok()?;
            loaded
                .described
                .description
                .message(code)
                .map(|m| m.name.as_str())
        }
    }
}

/// "read with config FILE and snapshot profile NAME", from a report's `config_file` and `profile`
/// members, when either is not the default (no file, the document's table).
pub fn settings_line(report: &serde_json::Value) -> Option<String> {
    let config = report["config_file"].as_str();
    let profile = report["profile"].as_str().filter(|p| *p != "document");
    let parts: Vec<String> = config
        .map(|c| format!("config {c}"))
        .into_iter()
        .chain(profile.map(|p| match p {
            crate::pipeline::MIXED_LAYOUTS => "a snapshot profile per conversation".into(),
            p => format!("snapshot profile {p}"),
        }))
        .collect();
    (!parts.is_empty()).then(|| format!("read with {}", parts.join(" and ")))
}
