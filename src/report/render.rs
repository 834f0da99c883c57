//! Rendering decoded values and findings as text and JSON, in the description's terms.

use std::fmt::Write as _;
use std::io;
use std::net::IpAddr;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter};

use crate::datagram::Dialect;
use crate::finding::{Detail, Finding};
use crate::message::Value;
use crate::proto::schema::{Display, Field, Named, Ty};
use crate::proto::Rule;

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

/// [`json_str`] of the longest start of `s` whose escaped form takes at most `max` bytes (the
/// quotes aside); returns that start's length in bytes.
pub fn json_str_within(out: &mut String, s: &str, max: usize) -> usize {
    let start = out.len();
    json_str(out, s);
    if out.len() - start <= max + 2 {
        return s.len();
    }
    out.truncate(start);
    let (mut used, mut end) = (0, 0);
    for (i, c) in s.char_indices() {
        let width = match c {
            '"' | '\\' | '\n' | '\r' | '\t' => 2,
            c if u32::from(c) < 0x20 => 6,
            c => c.len_utf8(),
        };
        if used + width > max {
            break;
        }
        used += width;
        end = i + c.len_utf8();
    }
    json_str(out, &s[..end]);
    end
}

/// Appends `"name":`, an object key from the protocol description or a profile. Their names
/// are [a-z0-9_] (profiles are validated on load), so the escape scan of [`json_str`] is skipped.
pub fn json_key(out: &mut String, name: &str) {
    debug_assert!(
        !name.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20),
        "key {name:?} needs escaping"
    );
    out.push('"');
    out.push_str(name);
    out.push_str("\":");
}

/// Appends bytes as lowercase hex.
pub fn hex(out: &mut String, bytes: &[u8]) {
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
}

/// Appends a float to JSON: shortest form at the field's own precision; JSON has no NaN or
/// infinity, so those become the strings "NaN", "inf", "-inf".
fn json_float(out: &mut String, field: &Field, f: f64) {
    if !f.is_finite() {
        let text = if f.is_nan() {
            "NaN"
        } else if f > 0.0 {
            "inf"
        } else {
            "-inf"
        };
        json_str(out, text);
        return;
    }
    if field.ty == Ty::F32 {
        push_f32(out, f as f32);
    } else {
        push_f64(out, f);
    }
}

/// Appends `x` exactly as `write!(out, "{x}")` does, but through zmij, which is much cheaper than
/// std's float formatting (export writes many floats); zmij is in the tree through serde_json.
pub fn push_f64(out: &mut String, x: f64) {
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1 << 52) - 1);
    let places = if exp == 0 {
        exact_places(frac, -1074)
    } else {
        exact_places(frac | 1 << 52, exp - 1075)
    };
    if !x.is_finite() || !push_shortest(out, zmij::Buffer::new().format_finite(x), places) {
        let _ = write!(out, "{x}");
    }
}

/// [`push_f64`] for `f32`, whose `Display` gives the shortest digits at single precision.
pub fn push_f32(out: &mut String, x: f32) {
    if push_eighths(out, x) {
        return;
    }
    let bits = x.to_bits();
    let exp = ((bits >> 23) & 0xff) as i32;
    let frac = u64::from(bits & 0x7f_ffff);
    let places = if exp == 0 {
        exact_places(frac, -149)
    } else {
        exact_places(frac | 1 << 23, exp - 150)
    };
    if !x.is_finite() || !push_shortest(out, zmij::Buffer::new().format_finite(x), places) {
        let _ = write!(out, "{x}");
    }
}

/// Appends `x` when it is a whole number of eighths below 16384 (whole numbers, halves,
/// quarters, eighths: most of a game's positions, speeds and health), from integers; false
/// otherwise. Such a value is its own shortest form: its last place (of at most 3) is a 5, so a
/// number with fewer places is at least 0.005 away, and below 16384 an f32 is less than 0.0005
/// from the next one, so no shorter number reads back as `x`.
#[inline(always)]
fn push_eighths(out: &mut String, x: f32) -> bool {
    // Exact: times a power of two; NaN and infinities are no whole number.
    let scaled = x * 8.0;
    let eighths = scaled as i32;
    if eighths as f32 != scaled || eighths.unsigned_abs() >= 16384 * 8 {
        return false;
    }
    if x.is_sign_negative() {
        out.push('-');
    }
    let eighths = eighths.unsigned_abs();
    push_u64(out, u64::from(eighths >> 3));
    // An eighth is 0.125: the fraction's digits are those of 125 × its eighths, without the
    // trailing zeros (.5, .25, .375).
    let thousandths = (eighths & 7) * 125;
    if thousandths != 0 {
        out.push('.');
        push_digit(out, thousandths / 100);
        if !thousandths.is_multiple_of(100) {
            push_digit(out, thousandths / 10);
            if !thousandths.is_multiple_of(10) {
                push_digit(out, thousandths);
            }
        }
    }
    true
}

/// Appends the last `width` (at most 9) decimal digits of `n`, zero-padded: a timestamp's parts.
pub fn push_padded(out: &mut String, n: u64, width: usize) {
    let power = 10u64.pow(width.min(9) as u32);
    // 10^width + n, less its leading 1: the zeros come with the digits, in one formatting.
    let mut digits = itoa::Buffer::new();
    out.push_str(&digits.format(power + n % power)[1..]);
}

/// Appends `n` spaces: padding to a column, copied from one slice rather than char by char.
pub fn push_spaces(out: &mut String, mut n: usize) {
    const SPACES: &str = "                                ";
    while n > 0 {
        let run = n.min(SPACES.len());
        out.push_str(&SPACES[..run]);
        n -= run;
    }
}

/// Digits of `n` in decimal.
pub fn decimal_len(n: u64) -> usize {
    n.checked_ilog10().unwrap_or(0) as usize + 1
}

/// Appends `n` (below 100 000) in decimal, one character at a time: for the few digits of most
/// values this is cheaper than formatting into a buffer and copying that.
#[inline(always)]
fn push_small(out: &mut String, n: u32) {
    if n >= 10_000 {
        push_digit(out, n / 10_000);
    }
    if n >= 1000 {
        push_digit(out, n / 1000);
    }
    if n >= 100 {
        push_digit(out, n / 100);
    }
    if n >= 10 {
        push_digit(out, n / 10);
    }
    push_digit(out, n);
}

/// Appends the last decimal digit of `n`.
#[inline(always)]
fn push_digit(out: &mut String, n: u32) {
    // A one-byte slice copies as one byte, where `String::push` of a char is not always inlined.
    const DIGITS: &str = "0123456789";
    let d = (n % 10) as usize;
    out.push_str(&DIGITS[d..d + 1]);
}

/// Decimal places in the exact value of `m * 2^e`: a binary fraction `odd / 2^k` has exactly
/// `k`, the last of them a 5.
fn exact_places(m: u64, e: i32) -> usize {
    if m == 0 {
        return 0;
    }
    (-(e + m.trailing_zeros() as i32)).max(0) as usize
}

/// Appends zmij's shortest form `s` of a value with `places` exact decimal places, rewritten as
/// `Display` writes it; false (nothing appended) where that is not a cheap rewrite.
///
/// Both give the same shortest digits, but zmij writes "1.0" for `Display`'s "1" and "1e-7" or
/// "1e+16" where `Display` never uses an exponent. And where the value lies exactly halfway
/// between two shortest candidates (one more exact decimal place than shown, that place a 5:
/// 2.00390625 as an f32), zmij rounds to even ("2.0039062") and std away from zero
/// ("2.0039063"): those few go through `write!` too.
fn push_shortest(out: &mut String, s: &str, places: usize) -> bool {
    // One pass over the (short) text for both the exponent and the point.
    let mut dot = None;
    for (i, b) in s.bytes().enumerate() {
        match b {
            b'e' => return false,
            b'.' => dot = Some(i),
            _ => {}
        }
    }
    let (s, shown) = match dot {
        Some(dot) if &s[dot..] == ".0" => (&s[..dot], 0),
        Some(dot) => (s, s.len() - dot - 1),
        None => (s, 0),
    };
    if places == shown + 1 {
        return false;
    }
    out.push_str(s);
    true
}

/// Appends an integer in decimal, as `write!(out, "{n}")` does but without the formatting
/// machinery (export writes dozens per datagram).
#[inline]
pub fn push_u64(out: &mut String, n: u64) {
    // Most of a game's numbers (ids, masks, counts, health) have a few digits.
    if n < 100_000 {
        push_small(out, n as u32);
    } else {
        push_large(out, n);
    }
}

/// [`push_u64`] of larger numbers.
#[inline(never)]
fn push_large(out: &mut String, n: u64) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// [`push_u64`] for signed integers.
#[inline]
pub fn push_i64(out: &mut String, n: i64) {
    if n < 0 {
        out.push('-');
    }
    push_u64(out, n.unsigned_abs());
}

/// Appends an address as its `Display` does; IPv4 without the formatting machinery.
pub fn push_ip(out: &mut String, ip: IpAddr) {
    match ip {
        IpAddr::V4(v4) => {
            for (i, octet) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    out.push('.');
                }
                push_u64(out, octet.into());
            }
        }
        IpAddr::V6(v6) => {
            let _ = write!(out, "{v6}");
        }
    }
}

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

/// What a finding found, as words that read after its rule's summary ("expected SERVER_HELLO
/// before JOIN_REQUEST", "Payload Len says 9 bytes, the datagram holds 4"): the rule says what
/// each number means. Empty when the rule says it all.
pub fn detail(finding: &Finding) -> String {
    let first = first_detail(finding);
    match (finding.count, first.is_empty()) {
        (0 | 1, _) => first,
        (n, true) => format!("×{n} in this datagram, the first at @{}", finding.at),
        (n, false) => format!(
            "{first}; ×{n} in this datagram, the first at @{}",
            finding.at
        ),
    }
}

/// [`detail`] of a finding that belongs to no datagram, and with why reading stopped when it is
/// the finding that it did ([`crate::pipeline::Sink::cut`]): the sentence the summary gives.
pub fn loose_detail(finding: &Finding, reason: Option<&str>) -> String {
    match reason {
        Some(reason) => format!("{}: {reason}", detail(finding)),
        None => detail(finding),
    }
}

/// The detail of a finding's first time.
fn first_detail(finding: &Finding) -> String {
    use Rule as R;
    let rule = finding.rule;
    match finding.detail {
        Detail::None => String::new(),
        Detail::At(offset) => format!("at byte offset {offset} of the file"),
        Detail::Block { block, offset } => {
            let article = match block.starts_with(['A', 'E', 'I', 'O', 'U']) {
                true => "an",
                false => "a",
            };
            format!("{article} {block} at byte offset {offset}")
        }
        Detail::Before { missing, message } => format!("expected {missing} before {message}"),
        Detail::Stopped { stream, before_ms } => format!(
            "{stream} stopped {}.{:03} s before the conversation did",
            before_ms / 1000,
            before_ms % 1000
        ),
        Detail::Rate {
            stream,
            nominal,
            found,
        } => format!("{stream} at {found} per second, nominal {nominal}"),
        Detail::Stall {
            stream,
            gap_micros,
            period_micros,
            ticks,
        } => {
            let ms = |us: u32| f64::from(us) / 1000.0;
            let mut s = format!(
                "no {stream} for {:.1} ms (period {:.1} ms)",
                ms(gap_micros),
                ms(period_micros)
            );
            let missing = ticks.map(|(before, after)| (before, after.saturating_sub(before)));
            match missing {
                Some((before, 2)) => {
                    let _ = write!(s, ", tick {} missing", before + 1);
                }
                Some((before, n @ 3..)) => {
                    let _ = write!(
                        s,
                        ", ticks {}–{} missing ({})",
                        before + 1,
                        before + n - 1,
                        n - 1
                    );
                }
                Some(_) => s.push_str(", no tick missing"),
                None => {}
            }
            s
        }
        Detail::Sizes { expected, found } => match rule {
            R::RtypeShort | R::RtShort => {
                format!("{found} bytes, at least {expected} needed")
            }
            R::RtypeLength => {
                format!("Payload Len says {expected} bytes, the datagram holds {found}")
            }
            R::RtypeCompressNotSmaller => {
                format!("{expected} bytes compressed to {found}")
            }
            R::RtypeOrigSize => format!("Orig. Size says {expected} bytes, LZ4 gave {found}"),
            R::RtypeSize | R::RtSize => {
                format!("a {found}-byte payload where the document's is {expected} bytes")
            }
            R::RtypeTrailing | R::RtTrailing => format!(
                "the message ends after {expected} of {found} bytes, {} left over",
                found.saturating_sub(expected)
            ),
            R::RtypeChunkIndex => format!("chunkIndex {found} with totalChunks {expected}"),
            R::RtypeChunkTotalMismatch => {
                format!("totalChunks {found} where the tick's other chunks said {expected}")
            }
            R::RtDatagramSize | R::RtnpDatagramSize => {
                format!("{found} bytes, over the {expected} allowed")
            }
            R::RtnpJsonLimit => format!("{found} bytes of JSON, over the {expected} parsed"),
            R::CaptureOversizedRecord => {
                format!("a {found}-byte record, over the file's snaplen of {expected}")
            }
            R::CapturePacketExceedsBlock => {
                format!("a {found}-byte packet in a block with room for {expected} bytes")
            }
            R::RtUnacknowledged => format!(
                "{} of {expected} RELIABLE packets never acknowledged",
                expected.saturating_sub(found)
            ),
            R::RtnpClientId => format!("client_id {found} where assign_id gave {expected}"),
            R::RtnpEpochSequence => format!("epoch {found} where {expected} was next"),
            R::SessionSnapshotRate => {
                format!("{found} snapshots per second, nominal {expected}")
            }
            _ => format!("expected {expected}, found {found}"),
        },
        Detail::Truncated {
            field,
            needed,
            left,
        } => format!("{field} needs {needed} bytes, {left} left"),
        Detail::MaskBit { entity, bit, left } => {
            format!(
                "entity {entity}: mask bit {bit} has no known width, {left} bytes left undecoded"
            )
        }
        Detail::Value(v) => match rule {
            R::RtypeMagic => format!("it starts with {v:08X}"),
            R::RtMagic | R::RtByteOrderSwitch | R::RtByteOrder => {
                format!("magic bytes {:02X} {:02X}", v >> 8, v & 0xFF)
            }
            R::RtypeVersion => format!("version {v}"),
            R::RtypePacketType | R::RtPacketType | R::RtypeDirection | R::RtDirection => {
                format!("packet type 0x{v:02X}")
            }
            R::RtypeUnknownType | R::RtUnknownType => format!("type 0x{v:02X}"),
            R::RtypeCompressSmall => format!("{v} bytes uncompressed"),
            R::RtypeOrigSizeSet => format!("Orig. Size {v}"),
            R::RtypeReason => format!("reason code 0x{v:02X}"),
            R::RtypeInputUnusedBits => format!("unused bits 0x{v:04X} set"),
            R::RtypeUnknownEntityType => format!("entity type {v}"),
            R::RtypeUnknownEvent => format!("event type {v}"),
            R::RtypeChunkDuplicate => format!("chunk {} again", v + 1),
            R::RtypeChunkLimit => format!("{v} (the limit is in SECURITY.md)"),
            R::RtReservedFlags
            | R::RtOpaque
            | R::RtDisconnectUnreliable
            | R::RtReliableFlagMissing => format!("flags 0x{v:02X}"),
            R::RtUnknownComponent => format!("component type {v}"),
            R::RtnpClientSilent => format!("silent for {v} s"),
            R::RtnpJsonInvalid => format!("the JSON is invalid at column {v}"),
            R::RtnpJsonLimit => format!("nested deeper than {v} levels"),
            R::RtnpPlayerName => format!("{v} characters"),
            R::CaptureSnaplen => format!("{v} bytes not captured"),
            R::SessionTickBackwards => format!("tick {v}"),
            R::SessionConversationLimit => format!("{v} conversations are tracked"),
            R::SessionEntityAfterDestroy => format!("entity {v} updated after its destruction"),
            R::SessionEntitySpawnedTwice => format!("entity {v} spawned again while alive"),
            R::SessionEntityUnknown => format!("entity {v} updated, never spawned"),
            R::SessionEntityGhost => format!("entity {v} held, not in the server's full state"),
            R::SessionEntityNeverDestroyed => match v {
                1 => "1 entity still alive at the end".to_string(),
                _ => format!("{v} entities still alive at the end"),
            },
            R::SessionEntityLimit => format!("{v} entities are followed"),
            R::RtypeChunkTotalZero => String::new(),
            _ => format!("{v}"),
        },
        Detail::Field(f) => match rule {
            R::RtypeInputNonFinite => format!("{f} is not a finite number"),
            R::RtypeUnsortedKeyframes => format!("a keyframe's {f} goes back"),
            R::RtypeUtf8 | R::RtUtf8 => format!("{f} is not UTF-8"),
            R::RtnpMissingField | R::RtnpEpochMissing => format!("{f} is missing"),
            R::RtnpWrongType => format!("{f} has another type"),
            R::RtnpRange => format!("{f} is below its minimum"),
            R::RtnpTypeMissing | R::RtnpTypeNotFirst => String::new(),
            R::RtnpJsonInvalid => format!("the text is {f}"),
            _ => format!("bad {f}"),
        },
        Detail::Crc { stored, computed } => {
            format!("the footer says 0x{stored:08X}, the datagram hashes to 0x{computed:08X}")
        }
        Detail::Chunks { tick, have, total } => {
            format!("tick {tick}: {have} of {total} chunks arrived")
        }
        Detail::Frames { first } => format!("a copy of frame {first}"),
        Detail::Disagree {
            entity,
            tick,
            field,
            with,
            with_frame,
        } => format!(
            "entity {entity} at tick {tick}: {field} other than conversation #{with} held (frame {with_frame})"
        ),
        Detail::Layout(name) => match crate::proto::profile::Profile::differs_of(name) {
            Some(differs) => format!("read as profile {name}: {differs}"),
            None => format!("read as profile {name}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_f32(x: f32) {
        let mut s = String::new();
        push_f32(&mut s, x);
        assert_eq!(s, format!("{x}"), "f32 {:#010x}", x.to_bits());
    }

    fn check_f64(x: f64) {
        let mut s = String::new();
        push_f64(&mut s, x);
        assert_eq!(s, format!("{x}"), "f64 {:#018x}", x.to_bits());
    }

    #[test]
    fn padded_numbers_keep_their_last_digits() {
        let padded = |n: u64, width: usize| {
            let mut s = String::from("<");
            push_padded(&mut s, n, width);
            s
        };
        assert_eq!(padded(7, 2), "<07");
        assert_eq!(padded(2026, 4), "<2026");
        assert_eq!(padded(912_345, 6), "<912345");
        assert_eq!(padded(45, 9), "<000000045");
        assert_eq!(padded(1_795_325_308, 9), "<795325308");
        assert_eq!(padded(u64::MAX, 9), "<709551615");
        assert_eq!(padded(5, 0), "<");
        assert_eq!(padded(5, 12), "<000000005", "at most 9 digits");
        let mut s = String::new();
        push_spaces(&mut s, 70);
        assert_eq!(s, " ".repeat(70));
        assert_eq!((decimal_len(0), decimal_len(9), decimal_len(10)), (1, 1, 2));
        assert_eq!(decimal_len(u64::MAX), 20);
    }

    /// xorshift64: reproducible pseudo-random bits without a dependency.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn floats_as_display_writes_them() {
        for x in [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.1,
            1e-7,
            1e16,
            123456789.0,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            f32::from_bits(1),
            f32::from_bits(0x007f_ffff),
            f32::MAX,
            f32::MIN,
            f32::EPSILON,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            // Exactly halfway between two shortest candidates, where std rounds up and zmij to
            // even: 2.00390625, 131072.125, 0.000244140625.
            f32::from_bits(0x4000_4000),
            f32::from_bits(0x4800_0008),
            f32::from_bits(0x3980_0000),
        ] {
            check_f32(x);
        }
        for x in [
            0.0,
            -0.0,
            1e-7,
            1e16,
            123456789.0,
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            f64::MAX,
            f64::INFINITY,
            f64::NAN,
            f64::from(f32::MAX),
        ] {
            check_f64(x);
        }
        // Every f32 with up to 3 decimal places near the short path's bound (eighths), and
        // every whole number, half and quarter on both sides of it.
        for k in -(16_400 * 8)..16_400 * 8 {
            check_f32(k as f32 / 8.0);
        }
        for k in -(1 << 16)..1 << 16 {
            check_f32(k as f32 + 0.25);
            check_f32(k as f32 * 4.0 + 0.5);
        }
        // Fixed-point profile fields (tenths, hundredths) read as f32.
        for k in -100_000..100_000 {
            check_f32(k as f32 / 10.0);
            check_f32(k as f32 / 100.0);
        }
        // Divisor fields: i16 / 10 and i32 / 1000 in f64.
        for n in i16::MIN..=i16::MAX {
            check_f64(f64::from(n) / 10.0);
            check_f64(f64::from(n) / 1000.0);
        }
        let mut state = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..1_000_000 {
            check_f64(f64::from(xorshift(&mut state) as i32) / 1000.0);
        }
        // Any f32 bit pattern (NaN and infinities are written before this path).
        let mut tested = 0;
        while tested < 3_000_000 {
            let x = f32::from_bits(xorshift(&mut state) as u32);
            if x.is_finite() {
                check_f32(x);
                tested += 1;
            }
        }
    }

    #[test]
    fn zmij_path_is_taken_for_ordinary_values() {
        // The comparison above would pass through `write!` alone; make sure it exercised zmij.
        let mut s = String::new();
        let (mut a, mut b) = (zmij::Buffer::new(), zmij::Buffer::new());
        assert!(push_shortest(&mut s, a.format_finite(1.5f32), 1));
        assert!(push_shortest(&mut s, b.format_finite(-3.0f64), 0));
        assert_eq!(s, "1.5-3");
        // And that the short path above took the values it should, and only those.
        let mut s = String::new();
        assert!(push_eighths(&mut s, -97.125));
        assert!(push_eighths(&mut s, -0.0));
        assert!(push_eighths(&mut s, 16383.875));
        assert!(!push_eighths(&mut s, 16384.0));
        assert!(!push_eighths(&mut s, 0.0625));
        assert!(!push_eighths(&mut s, f32::NAN));
        assert!(!push_eighths(&mut s, f32::INFINITY));
        assert_eq!(s, "-97.125-016383.875");
    }

    #[test]
    fn integers_and_keys() {
        let mut state = 1;
        for n in [0, 1, 9, 10, 99, 100, u64::MAX, i64::MAX as u64]
            .into_iter()
            .chain((0..10_000).map(|_| xorshift(&mut state) >> (state % 64)))
        {
            let mut s = String::new();
            push_u64(&mut s, n);
            assert_eq!(s, n.to_string());
        }
        for n in (-100_100..100_100).chain([i64::MIN, i64::MAX, -99_999_999]) {
            let mut s = String::new();
            push_i64(&mut s, n);
            assert_eq!(s, n.to_string());
        }
        let mut s = String::new();
        push_i64(&mut s, i64::MIN);
        json_key(&mut s, "pos_x");
        assert_eq!(s, "-9223372036854775808\"pos_x\":");
        for ip in [
            "0.0.0.0",
            "10.0.0.1",
            "255.255.255.255",
            "192.168.1.20",
            "::1",
            "fe80::2",
        ] {
            let mut s = String::new();
            push_ip(&mut s, ip.parse().unwrap());
            assert_eq!(s, ip);
        }
    }
}
