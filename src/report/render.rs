//! Rendering decoded values and findings as text and JSON, in the description's terms.

use std::fmt::Write as _;

use crate::datagram::Dialect;
use crate::message::{Detail, Finding, Value};
use crate::proto::schema::{Display, Field, Named, Ty};

/// Appends `s` as a JSON string literal.
pub fn json_str(out: &mut String, s: &str) {
    out.push('"');
    // Runs of characters that need no escape (all of them, in field names) are copied whole.
    let mut rest = s;
    while let Some(i) = rest
        .bytes()
        .position(|b| b == b'"' || b == b'\\' || b < 0x20)
    {
        out.push_str(&rest[..i]);
        match rest.as_bytes()[i] {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b => {
                let _ = write!(out, "\\u{b:04x}");
            }
        }
        rest = &rest[i + 1..];
    }
    out.push_str(rest);
    out.push('"');
}

/// Appends bytes as lowercase hex.
pub fn hex(out: &mut String, bytes: &[u8]) {
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
}

/// Appends a float: shortest form at the field's own precision; JSON has no NaN or infinity,
/// so those become the strings "NaN", "inf", "-inf".
fn float(out: &mut String, field: &Field, f: f64, json: bool) {
    if !f.is_finite() {
        let text = if f.is_nan() {
            "NaN"
        } else if f > 0.0 {
            "inf"
        } else {
            "-inf"
        };
        if json {
            json_str(out, text);
        } else {
            out.push_str(text);
        }
        return;
    }
    let _ = if field.ty == Ty::F32 {
        write!(out, "{}", f as f32)
    } else {
        write!(out, "{f}")
    };
}

/// Appends an integer in decimal, as `write!(out, "{n}")` does but without the formatting
/// machinery (export writes dozens per datagram).
pub fn push_u64(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend(digits[i..].iter().map(|d| char::from(*d)));
}

/// [`push_u64`] for signed integers.
pub fn push_i64(out: &mut String, n: i64) {
    if n < 0 {
        out.push('-');
    }
    push_u64(out, n.unsigned_abs());
}

/// Appends a value as JSON.
pub fn json_value(out: &mut String, field: &Field, value: Value<'_>) {
    match value {
        Value::U(n) => push_u64(out, n),
        Value::I(n) => push_i64(out, n),
        Value::F(f) => float(out, field, f, true),
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
        (_, Value::F(f)) => float(out, field, f, false),
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
    }
}

/// A finding's specifics in words (empty when the rule says it all).
pub fn detail(finding: &Finding) -> String {
    match finding.detail {
        Detail::None => String::new(),
        Detail::Sizes { expected, found } => format!("expected {expected}, found {found}"),
        Detail::Truncated {
            field,
            needed,
            left,
        } => format!("field {field} needs {needed} bytes, {left} left"),
        Detail::MaskBit { entity, bit, left } => {
            format!("entity {entity}: mask bit {bit} of unknown width, {left} bytes left undecoded")
        }
        Detail::Value(v) => format!("value {v} (0x{v:X})"),
        Detail::Field(f) => format!("field {f}"),
        Detail::Crc { stored, computed } => {
            format!("stored 0x{stored:08X}, computed 0x{computed:08X}")
        }
        Detail::Chunks { tick, have, total } => format!("tick {tick}: {have} of {total} chunks"),
        Detail::Frames { first } => format!("see frame {first}"),
    }
}
