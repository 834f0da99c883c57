//! The rtnp datagram (document 004): a JSON message, raw or wrapped in a Cap'n Proto message whose
//! root struct holds one Text field (spec-notes A: an unpacked single-segment message), or a bare
//! keep-alive text (spec-notes B).
//!
//! The envelope is read by a small bounded reader rather than the `capnp` crate: the message has
//! one fixed shape, every offset in it is checked against the segment before use, and nothing
//! here allocates. The JSON is parsed with serde_json behind size and depth limits checked first,
//! then judged against the schemas of the description (`proto::rtnp`).

use std::ops::Range;

use serde_json::{Map, Value};

use crate::finding::{add_finding, Detail, Finding};
use crate::proto::rtnp::{
    JsonField, JsonMessage, JsonType, MAX_DATAGRAM, MAX_DEPTH, MAX_JSON, PING, PONG,
};
use crate::proto::Rule;

/// How the message travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// Inside a Cap'n Proto message (the Text field).
    Envelope,
    /// The datagram is the JSON text.
    Raw,
}

impl Framing {
    pub const fn name(self) -> &'static str {
        match self {
            Framing::Envelope => "envelope",
            Framing::Raw => "raw",
        }
    }
}

/// Size of the segment table of a single-segment message: segment count - 1, then its size.
const SEGMENT_TABLE: usize = 8;
const WORD: usize = 8;
/// Largest segment a datagram can hold, in words: bounds the detection heuristic.
pub const MAX_WORDS: u32 = (65_536 / WORD) as u32;

fn u32_le(bytes: &[u8], at: usize) -> Option<u32> {
    bytes
        .get(at..at + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn word(bytes: &[u8], index: usize) -> Option<u64> {
    let at = SEGMENT_TABLE.checked_add(index.checked_mul(WORD)?)?;
    bytes
        .get(at..at + WORD)
        .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
}

/// Whether `bytes` looks like rtnp: a JSON object, a bare keep-alive, or a Cap'n Proto
/// single-segment table (`00 00 00 00`, a plausible word count) followed by a struct pointer.
pub fn looks_like(bytes: &[u8]) -> bool {
    if bytes.first() == Some(&b'{') || bytes == PING.as_bytes() || bytes == PONG.as_bytes() {
        return true;
    }
    let (Some(0), Some(words), Some(root)) = (u32_le(bytes, 0), u32_le(bytes, 4), word(bytes, 0))
    else {
        return false;
    };
    (1..=MAX_WORDS).contains(&words) && root & 3 == 0
}

/// Whether `bytes`, which look like rtnp, are rtnp beyond their first bytes: a well-formed
/// envelope (one segment that fits the datagram, a struct whose pointer leads to a NUL-terminated
/// Text), or raw JSON whose `"type"` is one of the document's message types. A LAN broadcast of
/// JSON without such a type, a bare `PING` text, or zeros that only start like a segment table
/// are someone else's.
pub fn consistent(bytes: &[u8]) -> bool {
    if bytes.first() == Some(&b'{') {
        let mut ignored = Vec::new();
        return parse_json(bytes, 0, &mut ignored)
            .as_ref()
            .and_then(|json| json.get(crate::proto::rtnp::TYPE_KEY))
            .and_then(Value::as_str)
            .and_then(crate::proto::rtnp::message)
            .is_some_and(|m| m.message.seen_rule.is_none());
    }
    read_envelope(bytes).is_ok()
}

/// Why an envelope could not be read, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnvelopeError {
    pub at: usize,
    pub what: &'static str,
}

/// Where the Text of a Cap'n Proto envelope is: its bytes without the NUL terminator. Bytes after
/// the segment are an error too, but the Text is still returned with them (`Ok` with a trailing
/// error is reported by [`parse`]).
pub fn read_envelope(bytes: &[u8]) -> Result<Range<usize>, EnvelopeError> {
    let fail = |at: usize, what: &'static str| Err(EnvelopeError { at, what });
    let (Some(count), Some(words)) = (u32_le(bytes, 0), u32_le(bytes, 4)) else {
        return fail(0, "segment table");
    };
    if count != 0 {
        return fail(0, "segment count (one segment expected)");
    }
    let words = words as usize;
    if SEGMENT_TABLE + words * WORD > bytes.len() {
        return fail(4, "segment size (past the datagram's end)");
    }
    // Offsets are relative to the word after the pointer, signed 30-bit counts of words.
    let target = |index: usize, pointer: u64| -> Option<usize> {
        let offset = i64::from((pointer as u32 as i32) >> 2);
        usize::try_from(index as i64 + 1 + offset)
            .ok()
            .filter(|w| *w <= words)
    };
    let Some(root) = word(bytes, 0).filter(|_| words >= 1) else {
        return fail(SEGMENT_TABLE, "root pointer (empty segment)");
    };
    if root & 3 != 0 || root == 0 {
        return fail(SEGMENT_TABLE, "root pointer (not a struct)");
    }
    let data_words = ((root >> 32) & 0xFFFF) as usize;
    let pointer_words = (root >> 48) as usize;
    let Some(start) = target(0, root) else {
        return fail(SEGMENT_TABLE, "root pointer (outside the segment)");
    };
    if pointer_words == 0 {
        return fail(SEGMENT_TABLE, "root struct (no pointer for the Text)");
    }
    let text_pointer = start + data_words;
    let at = SEGMENT_TABLE + text_pointer * WORD;
    let Some(pointer) = word(bytes, text_pointer).filter(|_| text_pointer < words) else {
        return fail(SEGMENT_TABLE, "root struct (outside the segment)");
    };
    if pointer == 0 {
        return fail(at, "Text pointer (null)");
    }
    if pointer & 3 != 1 || (pointer >> 32) & 7 != 2 {
        return fail(at, "Text pointer (not a list of bytes)");
    }
    let len = (pointer >> 35) as usize;
    let Some(first) = target(text_pointer, pointer) else {
        return fail(at, "Text pointer (outside the segment)");
    };
    let begin = SEGMENT_TABLE + first * WORD;
    if first * WORD + len > words * WORD {
        return fail(at, "Text (past the segment's end)");
    }
    if len == 0 || bytes[begin + len - 1] != 0 {
        return fail(begin, "Text (no NUL terminator)");
    }
    Ok(begin..begin + len - 1)
}

/// An rtnp datagram: how it is framed and where its message text is.
#[derive(Clone, Copy, Debug)]
pub struct Datagram<'a> {
    pub framing: Framing,
    /// The message text, when the envelope could be read.
    pub text: Option<&'a [u8]>,
    /// Offset of the text in the datagram.
    pub text_at: usize,
}

/// Reads the framing of a datagram [`looks_like`] accepted; problems go to `findings`.
pub fn parse<'a>(bytes: &'a [u8], findings: &mut Vec<Finding>) -> Datagram<'a> {
    if bytes.len() > MAX_DATAGRAM {
        let detail = Detail::Sizes {
            expected: MAX_DATAGRAM as u64,
            found: bytes.len() as u64,
        };
        add_finding(findings, Finding::new(Rule::RtnpDatagramSize, 0, detail));
    }
    if bytes.first() == Some(&b'{') || bytes == PING.as_bytes() || bytes == PONG.as_bytes() {
        return Datagram {
            framing: Framing::Raw,
            text: Some(bytes),
            text_at: 0,
        };
    }
    match read_envelope(bytes) {
        Ok(range) => {
            let end = u32_le(bytes, 4).map_or(bytes.len(), |w| SEGMENT_TABLE + w as usize * WORD);
            if end < bytes.len() {
                let detail = Detail::Sizes {
                    expected: end as u64,
                    found: bytes.len() as u64,
                };
                add_finding(
                    findings,
                    Finding::new(Rule::RtnpEnvelope, end as u32, detail),
                );
            }
            Datagram {
                framing: Framing::Envelope,
                text_at: range.start,
                text: Some(&bytes[range]),
            }
        }
        Err(e) => {
            add_finding(
                findings,
                Finding::new(Rule::RtnpEnvelope, e.at as u32, Detail::Field(e.what)),
            );
            Datagram {
                framing: Framing::Envelope,
                text: None,
                text_at: 0,
            }
        }
    }
}

/// Whether JSON text nests deeper than `limit`, by counting brackets outside strings: checked
/// before parsing so that hostile nesting costs one pass and no allocation.
pub fn too_deep(text: &[u8], limit: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in text {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Parses message text as JSON within the limits; `None` (with a finding) when it is not UTF-8,
/// too large or deep, or not JSON. Raw non-ASCII characters are reported but do not stop parsing.
pub fn parse_json(text: &[u8], at: usize, findings: &mut Vec<Finding>) -> Option<Value> {
    let mut report = |rule, detail| add_finding(findings, Finding::new(rule, at as u32, detail));
    if text.len() > MAX_JSON {
        report(
            Rule::RtnpJsonLimit,
            Detail::Sizes {
                expected: MAX_JSON as u64,
                found: text.len() as u64,
            },
        );
        return None;
    }
    if too_deep(text, MAX_DEPTH) {
        report(Rule::RtnpJsonLimit, Detail::Value(MAX_DEPTH as u64));
        return None;
    }
    let Ok(s) = std::str::from_utf8(text) else {
        report(Rule::RtnpJsonInvalid, Detail::Field("not UTF-8"));
        return None;
    };
    if !s.is_ascii() {
        report(Rule::RtnpJsonNonAscii, Detail::None);
    }
    match serde_json::from_str::<Value>(s) {
        Ok(v) if v.is_object() => Some(v),
        Ok(_) => {
            report(Rule::RtnpJsonInvalid, Detail::Field("not an object"));
            None
        }
        Err(e) => {
            report(Rule::RtnpJsonInvalid, Detail::Value(e.column() as u64));
            None
        }
    }
}

/// The first key of the JSON object `text`, by scanning the text (serde_json's map does not keep
/// the order). Borrowed when it has no escapes, decoded otherwise.
pub fn first_key(text: &str) -> Option<std::borrow::Cow<'_, str>> {
    let rest = text.trim_start().strip_prefix('{')?.trim_start();
    let body = rest.strip_prefix('"')?;
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match (escaped, c) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, '"') => {
                let raw = &body[..i];
                return if raw.contains('\\') {
                    serde_json::from_str::<String>(&rest[..i + 2])
                        .ok()
                        .map(Into::into)
                } else {
                    Some(raw.into())
                };
            }
            _ => {}
        }
    }
    None
}

/// Whether `value` has the JSON Schema type `ty`.
fn has_type(value: &Value, ty: JsonType) -> bool {
    match ty {
        JsonType::String => value.is_string(),
        JsonType::Integer => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        JsonType::Number => value.is_number(),
        JsonType::Boolean => value.is_boolean(),
        JsonType::Object => value.is_object(),
        JsonType::Array => value.is_array(),
    }
}

/// A message's judgement against its schema: its findings, and the (rule, path) pairs already
/// reported. Each pair is one problem, one finding (an array of 50 entities missing a field is one
/// problem, not 50), and there are only as many as the schema has paths.
struct Judging<'a> {
    findings: &'a mut Vec<Finding>,
    at: usize,
    seen: [(Rule, &'static str); SEEN],
    seen_len: usize,
}

/// (rule, path) pairs remembered per message; a schema has fewer paths (past it, the problems of
/// a rule are counted on its first finding, as for any rule a datagram breaks again).
const SEEN: usize = 64;

impl Judging<'_> {
    /// Adds a finding about `path` unless this message already has one of that rule for it.
    fn once(&mut self, rule: Rule, path: &'static str) {
        let seen = &self.seen[..self.seen_len];
        if seen.contains(&(rule, path)) {
            return;
        }
        let finding = Finding::new(rule, self.at as u32, Detail::Field(path));
        if self.seen_len < SEEN {
            self.seen[self.seen_len] = (rule, path);
            self.seen_len += 1;
            self.findings.push(finding);
        } else {
            add_finding(self.findings, finding);
        }
    }

    fn fields(&mut self, object: &Map<String, Value>, fields: &'static [JsonField]) {
        for field in fields {
            match object.get(field.key()) {
                None if field.required => self.once(field.missing, field.path),
                None => {}
                Some(value) => self.value(value, field),
            }
        }
    }

    fn value(&mut self, value: &Value, field: &'static JsonField) {
        if !has_type(value, field.ty) {
            return self.once(Rule::RtnpWrongType, field.path);
        }
        if let (Some(minimum), Some(n)) = (field.minimum, value.as_f64()) {
            if n < minimum {
                self.once(Rule::RtnpRange, field.path);
            }
        }
        match value {
            Value::Object(object) => self.fields(object, field.fields),
            Value::Array(items) if !field.fields.is_empty() => {
                for item in items {
                    match item {
                        Value::Object(object) => self.fields(object, field.fields),
                        _ => self.once(Rule::RtnpWrongType, field.path),
                    }
                }
            }
            _ => {}
        }
    }
}

/// Judges a message against its type's schema (the `type` field is the caller's).
pub fn check_schema(
    json: &Value,
    message: &'static JsonMessage,
    at: usize,
    findings: &mut Vec<Finding>,
) {
    if let Value::Object(object) = json {
        let mut judging = Judging {
            findings,
            at,
            seen: [(Rule::RtnpMissingField, ""); SEEN],
            seen_len: 0,
        };
        judging.fields(object, message.fields);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::rtnp;

    /// An envelope around `text`, as the real server builds it.
    fn envelope(text: &str) -> Vec<u8> {
        let len = text.len() + 1;
        let text_words = len.div_ceil(8);
        let mut d = Vec::new();
        d.extend(0u32.to_le_bytes());
        d.extend(((2 + text_words) as u32).to_le_bytes());
        d.extend(0u32.to_le_bytes());
        d.extend([0, 0, 1, 0]);
        d.extend(1u32.to_le_bytes());
        d.extend(((len as u32) << 3 | 2).to_le_bytes());
        d.extend(text.as_bytes());
        d.resize(d.len() + text_words * 8 - text.len(), 0);
        d
    }

    fn rules(findings: &[Finding]) -> Vec<Rule> {
        findings.iter().map(|f| f.rule).collect()
    }

    #[test]
    fn reads_the_real_envelope() {
        // Frame 1 of rtnp-solo.pcap: PING.
        let ping = [
            0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0x2a, 0, 0, 0, b'P', b'I',
            b'N', b'G', 0, 0, 0, 0,
        ];
        assert_eq!(ping.to_vec(), envelope("PING"));
        assert!(looks_like(&ping));
        assert_eq!(read_envelope(&ping), Ok(24..28));
        let mut findings = vec![];
        let d = parse(&ping, &mut findings);
        assert_eq!(
            (d.framing, d.text, d.text_at),
            (Framing::Envelope, Some(&b"PING"[..]), 24)
        );
        assert!(findings.is_empty());
        let json = envelope(r#"{"client_id":0,"type":"assign_id"}"#);
        assert_eq!(
            parse(&json, &mut findings).text,
            Some(&br#"{"client_id":0,"type":"assign_id"}"#[..])
        );
    }

    #[test]
    fn malformed_envelopes_are_findings_never_panics() {
        let good = envelope("PING");
        let cases: &[(Vec<u8>, &str)] = &[
            (
                {
                    let mut d = good.clone();
                    d[0] = 1;
                    d
                },
                "segment count (one segment expected)",
            ),
            (
                {
                    let mut d = good.clone();
                    d[4] = 9;
                    d
                },
                "segment size (past the datagram's end)",
            ),
            (
                {
                    let mut d = good.clone();
                    d[8] = 1;
                    d
                },
                "root pointer (not a struct)",
            ),
            (
                {
                    let mut d = good.clone();
                    d[8] = 0x40;
                    d
                },
                "root pointer (outside the segment)",
            ),
            (
                {
                    let mut d = good.clone();
                    d[12] = 1;
                    d[14] = 0;
                    d
                },
                "root struct (no pointer for the Text)",
            ),
            (
                {
                    let mut d = good.clone();
                    d[16..24].fill(0);
                    d
                },
                "Text pointer (null)",
            ),
            (
                {
                    let mut d = good.clone();
                    d[20] = 0x2b;
                    d
                },
                "Text pointer (not a list of bytes)",
            ),
            (
                {
                    let mut d = good.clone();
                    d[20] = 0xFA;
                    d
                },
                "Text (past the segment's end)",
            ),
            (
                {
                    let mut d = good.clone();
                    d[28] = b'!';
                    d
                },
                "Text (no NUL terminator)",
            ),
        ];
        for (bytes, what) in cases {
            assert_eq!(read_envelope(bytes).map_err(|e| e.what), Err(*what));
            let mut findings = vec![];
            let d = parse(bytes, &mut findings);
            assert_eq!((rules(&findings), d.text), (vec![Rule::RtnpEnvelope], None));
        }
        // Every prefix and every single-byte corruption: findings, never a panic.
        for n in 0..good.len() {
            let _ = read_envelope(&good[..n]);
            for b in [0x00, 0x01, 0x7F, 0x80, 0xFF] {
                let mut d = good.clone();
                d[n] = b;
                let mut findings = vec![];
                let _ = parse(&d, &mut findings);
            }
        }
        let mut trailing = good.clone();
        trailing.extend([0; 8]);
        let mut findings = vec![];
        assert_eq!(parse(&trailing, &mut findings).text, Some(&b"PING"[..]));
        assert_eq!(
            findings[0].detail,
            Detail::Sizes {
                expected: 32,
                found: 40
            }
        );
    }

    #[test]
    fn detection() {
        assert!(looks_like(b"{\"type\":\"snapshot\"}"));
        assert!(looks_like(b"PONG"));
        assert!(!looks_like(b"PINGS"));
        assert!(!looks_like(&[0; 15]));
        assert!(!looks_like(&[
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
        ]));
        assert!(!looks_like(&[
            0, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0
        ]));
    }

    #[test]
    fn json_limits() {
        let mut findings = vec![];
        let deep = "[".repeat(33) + &"]".repeat(33);
        assert!(parse_json(deep.as_bytes(), 0, &mut findings).is_none());
        assert_eq!(
            findings,
            vec![Finding::new(Rule::RtnpJsonLimit, 0, Detail::Value(32))]
        );
        findings.clear();
        let ok = format!("{{\"a\":{}1{}}}", "[".repeat(31), "]".repeat(31));
        assert!(parse_json(ok.as_bytes(), 0, &mut findings).is_some());
        assert!(findings.is_empty());
        // Brackets inside strings do not count.
        assert!(!too_deep(
            format!("{{\"a\":\"{}\\\"\"}}", "[".repeat(100)).as_bytes(),
            32
        ));
        let big = format!("{{\"a\":\"{}\"}}", "x".repeat(MAX_JSON));
        assert!(parse_json(big.as_bytes(), 5, &mut findings).is_none());
        assert_eq!(
            findings[0].detail,
            Detail::Sizes {
                expected: 65536,
                found: 65544
            }
        );
        for (text, rule) in [
            (&b"{\"a\":"[..], Rule::RtnpJsonInvalid),
            (b"[1]", Rule::RtnpJsonInvalid),
            (b"{\"a\":\"\xff\"}", Rule::RtnpJsonInvalid),
        ] {
            findings.clear();
            assert!(parse_json(text, 0, &mut findings).is_none());
            assert_eq!(rules(&findings), vec![rule]);
        }
        findings.clear();
        assert!(parse_json("{\"name\":\"é\"}".as_bytes(), 0, &mut findings).is_some());
        assert_eq!(rules(&findings), vec![Rule::RtnpJsonNonAscii]);
    }

    #[test]
    fn first_keys() {
        assert_eq!(
            first_key(r#" { "type":"x","a":1}"#).as_deref(),
            Some("type")
        );
        assert_eq!(
            first_key(r#"{"client_id":0,"type":"assign_id"}"#).as_deref(),
            Some("client_id")
        );
        assert_eq!(first_key(r#"{"\u0074ype":1}"#).as_deref(), Some("type"));
        assert_eq!(first_key(r#"{"a\"b":1}"#).as_deref(), Some("a\"b"));
        assert_eq!(first_key("{}"), None);
        assert_eq!(first_key("{\"unterminated"), None);
    }

    #[test]
    fn schema_checks_once_per_path() {
        let snapshot = rtnp::message("snapshot").unwrap();
        let json: Value = serde_json::from_str(
            r#"{"entities":[{"id":0,"health":{"hp":5}},{"id":1,"networkId":-1,"type":"ship","sprite":{"scale":-1}}],"type":"snapshot"}"#,
        )
        .unwrap();
        let mut findings = vec![];
        check_schema(&json, snapshot, 24, &mut findings);
        let got: Vec<_> = findings.iter().map(|f| (f.rule, f.detail)).collect();
        assert_eq!(
            got,
            vec![
                (Rule::RtnpEpochMissing, Detail::Field("epoch")),
                (
                    Rule::RtnpMissingField,
                    Detail::Field("entities[].networkId")
                ),
                (Rule::RtnpMissingField, Detail::Field("entities[].type")),
                (Rule::RtnpWrongType, Detail::Field("entities[].health")),
                (Rule::RtnpRange, Detail::Field("entities[].networkId")),
                (Rule::RtnpRange, Detail::Field("entities[].sprite.scale")),
            ]
        );
        let input = rtnp::message("player_input").unwrap();
        let json: Value = serde_json::from_str(r#"{"type":"player_input","client_id":1.0,"keys":{"up":1,"down":false,"left":false,"right":false}}"#).unwrap();
        findings.clear();
        check_schema(&json, input, 0, &mut findings);
        let got: Vec<_> = findings.iter().map(|f| (f.rule, f.detail)).collect();
        assert_eq!(
            got,
            vec![
                (Rule::RtnpWrongType, Detail::Field("keys.up")),
                (Rule::RtnpMissingField, Detail::Field("keys.space"))
            ]
        );
    }

    #[test]
    fn mutated_json_never_panics() {
        let base = br#"{"type":"snapshot","epoch":3,"entities":[{"networkId":1,"type":"ship","sprite":{"scale":1.5}}],"x":"\u00e9"}"#;
        let snapshot = rtnp::message("snapshot").unwrap();
        for i in 0..base.len() {
            for b in [
                b'{', b'}', b'[', b']', b'"', b'\\', b',', b':', b'0', b' ', 0xC3, 0xFF,
            ] {
                let mut text = base.to_vec();
                text[i] = b;
                let mut findings = vec![];
                if let Some(json) = parse_json(&text, 0, &mut findings) {
                    check_schema(&json, snapshot, 0, &mut findings);
                }
                if let Ok(s) = std::str::from_utf8(&text) {
                    let _ = first_key(s);
                }
                let _ = too_deep(&text[..i], MAX_DEPTH);
            }
        }
    }
}
