//! The interpreter: decodes one datagram as a description lays it out, field by field, and
//! says where and why the bytes depart from it. Every read is bounds-checked; repeats, items and
//! decompressed sizes are bounded, so a hostile description or datagram cannot make it loop or
//! allocate without end.

use std::io::Read;

use super::model::*;
use super::names::{Layout, Names};

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

#[allow(clippy::too_many_arguments)]
fn check_sum<'n>(
    d: &Description,
    names: &'n Names,
    c: &ChecksumRule,
    bytes: &[u8],
    message_at: usize,
    footer_at: usize,
    vars: &[Option<i64>],
    problems: &mut Vec<Problem<'n>>,
) {
    let (field, at, name) = match c.field {
        Place::Header(i) => (
            &d.header[i],
            message_at + offset_of(d, i),
            names.fields[names.header.slots[i].field].name.as_str(),
        ),
        Place::Footer(i) => (
            &d.footer[i],
            footer_at + fixed_width(&d.footer[..i], &d.types).unwrap_or(0),
            names.fields[names.footer.slots[i].field].name.as_str(),
        ),
    };
    let Some(stated) = vars[field.var as usize] else {
        return;
    };
    let resolve = |o: i64| -> Option<usize> {
        let v = if o < 0 { bytes.len() as i64 + o } else { o };
        usize::try_from(v).ok().filter(|v| *v <= bytes.len())
    };
    let (Some(from), Some(to)) = (resolve(c.from), resolve(c.to)) else {
        return;
    };
    if from > to {
        return;
    }
    let covered = &bytes[from..to];
    let computed: u64 = match c.algorithm {
        ChecksumAlgorithm::Crc32 => u64::from(crc32fast::hash(covered)),
        ChecksumAlgorithm::Crc32c => u64::from(crc32c(covered)),
        ChecksumAlgorithm::Sum8 => u64::from(covered.iter().fold(0u8, |a, b| a.wrapping_add(*b))),
        ChecksumAlgorithm::Xor8 => u64::from(covered.iter().fold(0u8, |a, b| a ^ b)),
    };
    let mask = match field.kind {
        Kind::Int { width, .. } if width < 8 => (1u64 << (width * 8)) - 1,
        _ => u64::MAX,
    };
    if (stated as u64) & mask != computed & mask {
        problems.push(Problem {
            rule: Description::rule_index(Check::Checksum),
            offset: at as u32,
            field: name,
            expected: format!("{:#x}", computed & mask),
            found: format!("{:#x}", stated as u64 & mask),
        });
    }
}

/// CRC-32C (Castagnoli), reflected, as iSCSI and SCTP compute it.
fn crc32c(bytes: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut t = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0x82F6_3B78 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            t[i] = c;
            i += 1;
        }
        t
    };
    !bytes.iter().fold(!0u32, |c, b| {
        TABLE[((c ^ u32::from(*b)) & 0xFF) as usize] ^ (c >> 8)
    })
}

fn decompress(
    algorithm: CompressionAlgorithm,
    input: &[u8],
    original: Option<i64>,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    out.clear();
    match algorithm {
        CompressionAlgorithm::Lz4Block => {
            let size = original.unwrap_or(0);
            if size < 0 || size as usize > MAX_DECOMPRESSED {
                return Err(format!("an original size of {size} bytes"));
            }
            out.resize(size as usize, 0);
            match lz4_flex::block::decompress_into(input, out) {
                Ok(n) if n == size as usize => Ok(()),
                Ok(n) => Err(format!("{n} bytes, not the {size} the header states")),
                Err(e) => Err(format!("LZ4 data that fails: {e}")),
            }
        }
        CompressionAlgorithm::Lz4Frame => {
            read_bounded(lz4_flex::frame::FrameDecoder::new(input), out)
        }
        CompressionAlgorithm::Zlib => read_bounded(flate2::read::ZlibDecoder::new(input), out),
    }
}

fn read_bounded(reader: impl Read, out: &mut Vec<u8>) -> Result<(), String> {
    match reader.take(MAX_DECOMPRESSED as u64 + 1).read_to_end(out) {
        Ok(n) if n > MAX_DECOMPRESSED => Err(format!("more than {MAX_DECOMPRESSED} bytes")),
        Ok(_) => Ok(()),
        Err(e) => Err(format!("data that fails: {e}")),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(" ")
}

impl<'n> Walk<'_, 'n> {
    fn problem(
        &mut self,
        check: Check,
        at: usize,
        field: &'n str,
        expected: String,
        found: String,
    ) {
        self.problem_rule(Description::rule_index(check), at, field, expected, found);
    }

    fn problem_rule(
        &mut self,
        rule: usize,
        at: usize,
        field: &'n str,
        expected: String,
        found: String,
    ) {
        let offset = if self.decompressed { self.base } else { at };
        self.problems.push(Problem {
            rule,
            offset: offset as u32,
            field,
            expected,
            found,
        });
    }

    fn name(&self, slot: usize) -> &'n str {
        &self.names.fields[slot].name
    }

    /// Moves to the next whole byte after bit fields.
    fn align(&mut self) {
        if self.bit > 0 {
            self.bit = 0;
            self.pos += 1;
        }
    }

    fn push(
        &mut self,
        field: usize,
        depth: u8,
        offset: usize,
        len: usize,
        value: Value,
    ) -> Result<(), Stop> {
        if self.out.len() >= MAX_ITEMS {
            let name = self.name(field);
            self.problem(
                Check::Truncated,
                offset,
                name,
                format!("at most {MAX_ITEMS} fields"),
                "more".into(),
            );
            return Err(Stop::Undecodable);
        }
        self.out.push(Item {
            field,
            depth,
            offset: offset as u32,
            len: len as u32,
            decompressed: self.decompressed,
            value,
        });
        Ok(())
    }

    fn var(&self, v: u16) -> Option<i64> {
        self.vars.get(v as usize).copied().flatten()
    }

    fn seq(&mut self, seq: &[Field], layout: &Layout, depth: u8) -> Result<(), Stop> {
        for (f, slot) in seq.iter().zip(&layout.slots) {
            if let Some(cond) = &f.cond {
                let vars = &*self.vars;
                let lookup = |v: u16| vars.get(v as usize).copied().flatten();
                match cond.eval(&lookup) {
                    Some(0) => continue,
                    Some(_) => {}
                    None => {
                        let name = self.name(slot.field);
                        self.problem(
                            Check::Truncated,
                            self.pos,
                            name,
                            "the fields its `if` reads".into(),
                            "a field that was not read".into(),
                        );
                        return Err(Stop::Undecodable);
                    }
                }
            }
            match &f.repeat {
                Repeat::Once => self.one(f, slot.field, slot.inner.as_ref(), depth)?,
                Repeat::Count(e) => {
                    let lookup = |v: u16| self.var(v);
                    let Some(n) = e.eval(&lookup) else {
                        let name = self.name(slot.field);
                        self.problem(
                            Check::Truncated,
                            self.pos,
                            name,
                            "a count".into(),
                            "a field that was not read".into(),
                        );
                        return Err(Stop::Undecodable);
                    };
                    if n < 0 || n as usize > MAX_REPEAT {
                        let name = self.name(slot.field);
                        self.problem(
                            Check::Valid,
                            self.pos,
                            name,
                            format!("a count from 0 to {MAX_REPEAT}"),
                            n.to_string(),
                        );
                        return Err(Stop::Undecodable);
                    }
                    for _ in 0..n {
                        let before = (self.pos, self.bit);
                        self.one(f, slot.field, slot.inner.as_ref(), depth)?;
                        if (self.pos, self.bit) == before {
                            break;
                        }
                    }
                }
                Repeat::UntilEnd => {
                    let mut count = 0;
                    while self.pos < self.end && count < MAX_REPEAT {
                        let before = (self.pos, self.bit);
                        self.one(f, slot.field, slot.inner.as_ref(), depth)?;
                        count += 1;
                        if (self.pos, self.bit) == before {
                            break;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether `n` bytes are left for `field`; a truncation problem where they are not.
    fn need(&mut self, field: usize, n: usize) -> Result<(), Stop> {
        let left = self.end.saturating_sub(self.pos);
        if left < n {
            let name = self.name(field);
            let wanted = format!("{n} bytes");
            self.problem(Check::Truncated, self.pos, name, wanted, format!("{left}"));
            return Err(Stop::Truncated);
        }
        Ok(())
    }

    fn take(&mut self, field: usize, n: usize) -> Result<usize, Stop> {
        self.align();
        self.need(field, n)?;
        let at = self.pos;
        self.pos += n;
        Ok(at)
    }

    fn one(
        &mut self,
        f: &Field,
        slot: usize,
        inner: Option<&Layout>,
        depth: u8,
    ) -> Result<(), Stop> {
        match f.kind {
            Kind::Int { width, signed } => {
                let at = self.take(slot, width as usize)?;
                let raw = read_uint(&self.buf[at..at + width as usize], f.endian);
                let value = if signed {
                    let shift = 64 - u32::from(width) * 8;
                    Value::Int(((raw << shift) as i64) >> shift)
                } else if width == 8 && raw > i64::MAX as u64 {
                    Value::UInt(raw)
                } else {
                    Value::Int(raw as i64)
                };
                self.number(f, slot, depth, at, width as usize, value)
            }
            Kind::Float { width } => {
                let at = self.take(slot, width as usize)?;
                let raw = read_uint(&self.buf[at..at + width as usize], f.endian);
                let v = if width == 4 {
                    f64::from(f32::from_bits(raw as u32))
                } else {
                    f64::from_bits(raw)
                };
                self.push(slot, depth, at, width as usize, Value::Float(v))
            }
            Kind::Bits { width } => {
                let needed_bits = usize::from(self.bit) + usize::from(width);
                let bytes = needed_bits.div_ceil(8);
                if self.end.saturating_sub(self.pos) < bytes {
                    let name = self.name(slot);
                    self.problem(
                        Check::Truncated,
                        self.pos,
                        name,
                        format!("{width} bits"),
                        "fewer".into(),
                    );
                    return Err(Stop::Truncated);
                }
                let mut value = 0u64;
                for i in 0..usize::from(width) {
                    let bit = usize::from(self.bit) + i;
                    let byte = self.buf[self.pos + bit / 8];
                    let b = if self.d.bits_big_endian {
                        (byte >> (7 - bit % 8)) & 1
                    } else {
                        (byte >> (bit % 8)) & 1
                    };
                    if self.d.bits_big_endian {
                        value = (value << 1) | u64::from(b);
                    } else {
                        value |= u64::from(b) << i;
                    }
                }
                let at = self.pos;
                let total = usize::from(self.bit) + usize::from(width);
                self.pos += total / 8;
                self.bit = (total % 8) as u8;
                self.number(f, slot, depth, at, bytes, Value::Int(value as i64))
            }
            Kind::Str | Kind::Bytes => {
                let n = self.size(f, slot)?;
                let at = self.take(slot, n)?;
                let bytes = &self.buf[at..at + n];
                if let Some(contents) = &f.contents {
                    if bytes != contents.as_slice() {
                        let name = self.name(slot);
                        self.problem(Check::Contents, at, name, hex(contents), hex(bytes));
                    }
                }
                let value = if f.kind == Kind::Str {
                    let text = bytes.split(|b| *b == 0).next().unwrap_or_default();
                    Value::Text(self.text(f, slot, at, text))
                } else {
                    Value::Bytes(bytes.to_vec())
                };
                self.push(slot, depth, at, n, value)
            }
            Kind::Strz => {
                self.align();
                let rest = &self.buf[self.pos.min(self.end)..self.end];
                let Some(nul) = rest.iter().position(|b| *b == 0) else {
                    let name = self.name(slot);
                    self.problem(
                        Check::Truncated,
                        self.pos,
                        name,
                        "a NUL-terminated string".into(),
                        "no NUL before the end".into(),
                    );
                    return Err(Stop::Truncated);
                };
                let at = self.pos;
                self.pos += nul + 1;
                let text = self.text(f, slot, at, &rest[..nul]);
                self.push(slot, depth, at, nul + 1, Value::Text(text))
            }
            Kind::User(t) => {
                self.align();
                let at = self.pos;
                let index = self.out.len();
                self.push(slot, depth, at, 0, Value::Group)?;
                let saved_end = self.end;
                if let Size::Bytes(_) | Size::ToEnd = f.size {
                    let n = self.size(f, slot)?;
                    self.need(slot, n)?;
                    self.end = self.pos + n;
                }
                let empty = Layout::default();
                let result = self.seq(
                    &self.d.types[t].seq,
                    inner.unwrap_or(&empty),
                    depth.saturating_add(1),
                );
                self.align();
                if self.end != saved_end {
                    self.pos = self.end;
                    self.end = saved_end;
                }
                let len = self.pos - at;
                self.out[index].len = len as u32;
                result
            }
        }
    }

    /// A byte size from `size` or `size-eos`.
    fn size(&mut self, f: &Field, slot: usize) -> Result<usize, Stop> {
        self.align();
        match &f.size {
            Size::ToEnd => Ok(self.end.saturating_sub(self.pos)),
            Size::Natural => Ok(0),
            Size::Bytes(e) => {
                let lookup = |v: u16| self.var(v);
                match e.eval(&lookup) {
                    Some(n) if n >= 0 => Ok(n as usize),
                    found => {
                        let name = self.name(slot);
                        let found =
                            found.map_or("a field that was not read".into(), |n| n.to_string());
                        self.problem(
                            Check::Valid,
                            self.pos,
                            name,
                            "a size of 0 or more".into(),
                            found,
                        );
                        Err(Stop::Undecodable)
                    }
                }
            }
        }
    }

    fn text(&mut self, f: &Field, slot: usize, at: usize, bytes: &[u8]) -> String {
        let ok = match f.encoding {
            Encoding::Ascii => bytes.is_ascii(),
            Encoding::Utf8 => std::str::from_utf8(bytes).is_ok(),
        };
        if !ok {
            let name = self.name(slot);
            let expected = if f.encoding == Encoding::Ascii {
                "ASCII"
            } else {
                "UTF-8"
            };
            self.problem(
                Check::Encoding,
                at,
                name,
                expected.into(),
                hex(&bytes[..bytes.len().min(16)]),
            );
        }
        String::from_utf8_lossy(bytes).into_owned()
    }

    /// An integer: noted for expressions, checked against `contents`, `valid` and `enum`.
    fn number(
        &mut self,
        f: &Field,
        slot: usize,
        depth: u8,
        at: usize,
        len: usize,
        value: Value,
    ) -> Result<(), Stop> {
        let v = value.integer().unwrap_or(0);
        if let Some(var) = self.vars.get_mut(f.var as usize) {
            *var = Some(v);
        }
        if let Some(contents) = &f.contents {
            let bytes = &self.buf[at..at + len];
            if bytes != contents.as_slice() {
                let name = self.name(slot);
                self.problem(Check::Contents, at, name, hex(contents), hex(bytes));
            }
        }
        if let Some(valid) = &f.valid {
            if !valid.accepts(v) {
                let name = self.name(slot);
                let rule = valid.rule;
                self.problem_rule(rule, at, name, valid.expected(), v.to_string());
            }
        }
        if let Some(e) = f.enumeration {
            if self.d.enums[e].name_of(v).is_none() {
                let name = self.name(slot);
                let expected = format!("a value of enum `{}`", self.d.enums[e].id);
                self.problem(Check::Enum, at, name, expected, v.to_string());
            }
        }
        self.push(slot, depth, at, len, value)
    }
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
