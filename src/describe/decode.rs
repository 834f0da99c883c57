//! The interpreter: decodes one datagram as a description lays it out, field by field, and
//! says where and why the bytes depart from it. Every read is bounds-checked; repeats, items and
//! decompressed sizes are bounded, so a hostile description or datagram cannot make it loop or
//! allocate without end.

use super::model::*;
use super::names::{Layout, Names};

mod integrity;
mod walk;

use integrity::{check_sum, decompress};

/// The most items one field's `repeat` reads.
pub const MAX_REPEAT: usize = 65_536;
/// The most fields decoded in one datagram.
pub const MAX_ITEMS: usize = 65_536;
/// The largest body decompressed.
pub const MAX_DECOMPRESSED: usize = 1 << 20;

/// A decoded value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    UInt(u64),
    Float(f64),
    Text(String),
    Bytes(Vec<u8>),
    /// A user type's fields follow, one level deeper.
    Group,
}

impl Value {
    /// The integer expressions see.
    pub fn integer(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::UInt(u) => Some(*u as i64),
            _ => None,
        }
    }
}

/// One decoded field.
#[derive(Clone, Debug)]
pub struct Item {
    /// Index in [`Names::fields`].
    pub field: usize,
    /// 0 for a message's own fields, one more per user type.
    pub depth: u8,
    /// Offset in the datagram, or in the decompressed body when `decompressed`.
    pub offset: u32,
    pub len: u32,
    pub decompressed: bool,
    pub value: Value,
}

/// Where a datagram departs from its description.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem<'n> {
    /// Index in [`Description::rules`].
    pub rule: usize,
    /// Offset in the datagram (for a problem inside a decompressed body: where the body starts).
    pub offset: u32,
    /// The filter name of the field (borrowed from the [`Names`]), empty when it is about no
    /// one field.
    pub field: &'n str,
    pub expected: String,
    pub found: String,
}

/// One message of a datagram (several when the framing says `many`).
#[derive(Clone, Debug)]
pub struct MessageSeen {
    pub offset: u32,
    pub code: Option<i64>,
    /// Index in [`Description::messages`].
    pub message: Option<usize>,
    /// The body was compressed on the wire (its flag was set).
    pub compressed: bool,
}

/// A datagram decoded; reused from one datagram to the next.
#[derive(Debug, Default)]
pub struct Decoded<'n> {
    pub items: Vec<Item>,
    pub problems: Vec<Problem<'n>>,
    pub messages: Vec<MessageSeen>,
    scratch: Vec<u8>,
    vars: Vec<Option<i64>>,
}

impl Decoded<'_> {
    fn clear(&mut self, vars: usize) {
        self.items.clear();
        self.problems.clear();
        self.messages.clear();
        self.vars.clear();
        self.vars.resize(vars, None);
    }
}

/// Whether `bytes` is a datagram of `d` by its own evidence: its magic, or (with no magic) its
/// port and a message type the description names.
pub fn claims(d: &Description, bytes: &[u8], src_port: u16, dst_port: u16) -> bool {
    let on_port = d.ports.is_empty() || d.ports.contains(&src_port) || d.ports.contains(&dst_port);
    if !on_port || bytes.len() < d.min_length {
        return false;
    }
    if !d.magic.is_empty() {
        return bytes.starts_with(&d.magic);
    }
    true
}

/// Why a walk stopped early.
enum Stop {
    /// The bytes ended inside a field (reported).
    Truncated,
    /// The rest cannot be read (reported).
    Undecodable,
}

struct Walk<'a, 'n> {
    d: &'a Description,
    names: &'n Names,
    buf: &'a [u8],
    /// Where `buf` starts in the datagram (for problems), or 0 when decompressed.
    base: usize,
    decompressed: bool,
    pos: usize,
    /// Bits already read of the byte at `pos` (bit fields).
    bit: u8,
    end: usize,
    out: &'a mut Vec<Item>,
    problems: &'a mut Vec<Problem<'n>>,
    vars: &'a mut Vec<Option<i64>>,
}

/// Decodes `bytes` as a datagram of `d`. `from_client`: the direction, when it is known.
pub fn decode<'n>(
    d: &Description,
    names: &'n Names,
    bytes: &[u8],
    from_client: Option<bool>,
    out: &mut Decoded<'n>,
) {
    out.clear(d.vars.len());
    let Decoded {
        items,
        problems,
        messages,
        scratch,
        vars,
    } = out;
    if !d.magic.is_empty() && !bytes.starts_with(&d.magic) {
        problems.push(Problem {
            rule: Description::rule_index(Check::Magic),
            offset: 0,
            field: "",
            expected: hex(&d.magic),
            found: hex(&bytes[..bytes.len().min(d.magic.len())]),
        });
        return;
    }
    let header_len = d.header_len();
    let footer_len = d.footer_len();
    let mut at = 0usize;
    let datagram_end = bytes.len();
    loop {
        vars.iter_mut().for_each(|v| *v = None);
        let seen = MessageSeen {
            offset: at as u32,
            code: None,
            message: None,
            compressed: false,
        };
        messages.push(seen);
        let mut walk = Walk {
            d,
            names,
            buf: bytes,
            base: 0,
            decompressed: false,
            pos: at,
            bit: 0,
            end: datagram_end,
            out: items,
            problems,
            vars,
        };
        if walk.seq(&d.header, &names.header, 0).is_err() {
            return;
        }
        let body_start = walk.pos;
        // The header's values, as the walk noted them for expressions (read before the body,
        // whose fields may reuse a header field's name).
        let header = |i: usize| vars[d.header[i].var as usize];
        let code = header(d.type_field);
        let last = messages.last_mut().expect("pushed above");
        last.code = code;
        let body_len = body_len(
            d,
            names,
            vars,
            (header_len, footer_len),
            at,
            body_start,
            datagram_end,
            problems,
        );
        let body_end = body_start + body_len;
        let message = code.and_then(|c| d.messages.iter().position(|m| m.code == c));
        messages.last_mut().expect("pushed above").message = message;
        // Decompress when the flag says.
        let compressed = d
            .compression
            .as_ref()
            .filter(|c| header(c.flag).is_some_and(|v| v as u64 & c.mask != 0));
        messages.last_mut().expect("pushed above").compressed = compressed.is_some();
        let mut body: (&[u8], usize, bool) = (&bytes[..body_end], body_start, false);
        if let Some(c) = compressed {
            let original = c.original_size.and_then(header);
            match decompress(c.algorithm, &bytes[body_start..body_end], original, scratch) {
                Ok(()) => body = (scratch.as_slice(), 0, true),
                Err(why) => {
                    problems.push(Problem {
                        rule: Description::rule_index(Check::Compression),
                        offset: body_start as u32,
                        field: "",
                        expected: "a body that decompresses".into(),
                        found: why,
                    });
                    body = (&bytes[..0], 0, false);
                }
            }
        }
        match message {
            None => {
                if let Some(c) = code {
                    let field = names.fields[names.header.slots[d.type_field].field]
                        .name
                        .as_str();
                    problems.push(Problem {
                        rule: Description::rule_index(Check::UnknownType),
                        offset: (at + offset_of(d, d.type_field)) as u32,
                        field,
                        expected: "a message type the description names".into(),
                        found: format!("{c:#04x}"),
                    });
                }
            }
            Some(m) => {
                let msg = &d.messages[m];
                check_direction(msg, from_client, at, problems);
                let (buf, start, decompressed) = body;
                let end = if decompressed {
                    buf.len()
                } else {
                    body_end.min(buf.len())
                };
                // A body that failed to decompress is not read.
                if compressed.is_none() || decompressed {
                    let mut walk = Walk {
                        d,
                        names,
                        buf,
                        base: if decompressed { body_start } else { 0 },
                        decompressed,
                        pos: start,
                        bit: 0,
                        end,
                        out: items,
                        problems,
                        vars,
                    };
                    if walk.seq(&msg.seq, &names.messages[m], 0).is_ok() {
                        walk.align();
                        if walk.pos < end {
                            let left = end - walk.pos;
                            walk.problem(
                                Check::Trailing,
                                walk.pos,
                                "",
                                "the end of the body".into(),
                                format!("{left} more bytes"),
                            );
                        }
                    }
                }
            }
        }
        // The footer, after the body.
        let footer_at = body_end;
        let mut next = body_end;
        if footer_len > 0 {
            let mut walk = Walk {
                d,
                names,
                buf: bytes,
                base: 0,
                decompressed: false,
                pos: footer_at,
                bit: 0,
                end: datagram_end,
                out: items,
                problems,
                vars,
            };
            if walk.seq(&d.footer, &names.footer, 0).is_err() {
                return;
            }
            next = walk.pos;
        }
        if let Some(c) = &d.checksum {
            check_sum(d, names, c, bytes, at, footer_at, vars, problems);
        }
        if !d.many_per_datagram
            || next >= datagram_end
            || next <= at
            || messages.len() >= MAX_REPEAT
        {
            return;
        }
        at = next;
    }
}

/// Byte offset of header field `i` (the header is fixed-width).
fn offset_of(d: &Description, i: usize) -> usize {
    fixed_width(&d.header[..i], &d.types).unwrap_or(0)
}

/// Integer header field `i` of the message at the start of `bytes`, read before decoding it
/// (the pipeline's direction falls back to the message's), `None` when it is not there.
pub fn header_integer(d: &Description, bytes: &[u8], i: usize) -> Option<i64> {
    let f = d.header.get(i)?;
    let width = f.kind.number_width()?;
    let at = offset_of(d, i);
    Some(read_uint(bytes.get(at..at + width)?, f.endian) as i64)
}

/// The length of the body of the message at `at` (`header_len` and `footer_len` its header's and
/// footer's fixed widths), its header read (into `vars`) up to
/// `body_start`: the length field's word where there is one (a problem when it does not fit), else
/// up to the footer (or the datagram's end).
#[allow(clippy::too_many_arguments)]
fn body_len<'n>(
    d: &Description,
    names: &'n Names,
    vars: &[Option<i64>],
    (header_len, footer_len): (usize, usize),
    at: usize,
    body_start: usize,
    datagram_end: usize,
    problems: &mut Vec<Problem<'n>>,
) -> usize {
    let header = |i: usize| vars[d.header[i].var as usize];
    // The body's end: the length field's word where there is one, else the footer's start.
    let rest = datagram_end - body_start;
    let natural = if d.many_per_datagram {
        rest
    } else {
        rest.saturating_sub(footer_len)
    };
    let mut body_len = natural;
    if let Some(rule) = &d.length {
        if let Some(value) = header(rule.field) {
            let stated = value.saturating_add(rule.adjust);
            let expected_total = match rule.covers {
                LengthCovers::Body => stated,
                LengthCovers::Message => stated - header_len as i64 - footer_len as i64,
                LengthCovers::Datagram => {
                    stated - at as i64 - header_len as i64 - footer_len as i64
                }
            };
            let fits = if d.many_per_datagram {
                expected_total >= 0 && expected_total as usize + footer_len <= rest
            } else {
                expected_total == natural as i64
            };
            if !fits {
                let field = names.fields[names.header.slots[rule.field].field]
                    .name
                    .as_str();
                let found_bytes = match rule.covers {
                    LengthCovers::Body => natural as i64,
                    LengthCovers::Message => (natural + header_len + footer_len) as i64,
                    LengthCovers::Datagram => datagram_end as i64,
                };
                problems.push(Problem {
                    rule: Description::rule_index(Check::Length),
                    offset: (at + offset_of(d, rule.field)) as u32,
                    field,
                    expected: format!("{stated} bytes"),
                    found: format!("{found_bytes} bytes"),
                });
            }
            if expected_total >= 0 {
                body_len = (expected_total as usize).min(natural);
            }
        }
    }
    body_len
}

/// A problem when message `msg` travels the other way than the description says (`from_client`:
/// the datagram's direction, when it is known).
fn check_direction(
    msg: &Message,
    from_client: Option<bool>,
    at: usize,
    problems: &mut Vec<Problem<'_>>,
) {
    if let (Some(from_client), Direction::ClientToServer | Direction::ServerToClient) =
        (from_client, msg.direction)
    {
        if from_client != (msg.direction == Direction::ClientToServer) {
            problems.push(Problem {
                rule: Description::rule_index(Check::Direction),
                offset: at as u32,
                field: "",
                expected: msg.direction.name().into(),
                found: if from_client {
                    "client-to-server"
                } else {
                    "server-to-client"
                }
                .into(),
            });
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn read_uint(bytes: &[u8], endian: Endian) -> u64 {
    let mut v = 0u64;
    match endian {
        Endian::Big => bytes.iter().for_each(|b| v = (v << 8) | u64::from(*b)),
        Endian::Little => bytes
            .iter()
            .rev()
            .for_each(|b| v = (v << 8) | u64::from(*b)),
    }
    v
}
