//! The walker: reads a payload node by node, as the protocol description lays it out.

use super::{Facts, NoFields, Open, Value, Visitor};
use crate::finding::{add_finding, Detail, Finding};
use crate::proto::profile::{BitSlot, PlainBits, Profile, MASK_BITS};
use crate::proto::schema::{
    nodes_fixed_size, Check, Display, Endian, Field, Group, Message, MessageRules, Node, Role, Ty,
};
use crate::proto::Rule;

mod items;

use items::MaskPlan;
/// Why a walk stopped before the end of its nodes.
#[derive(Debug, PartialEq, Eq)]
enum Stop {
    /// The payload ended inside a field.
    Truncated,
    /// The rest cannot be interpreted (unknown width or unknown case); already reported.
    Undecodable,
}

struct Walker<'a, 'c, V> {
    buf: &'a [u8],
    pos: usize,
    /// Offset of `buf` in the datagram, for findings.
    base: usize,
    endian: Endian,
    profile: &'c Profile,
    rules: &'c MessageRules,
    visitor: &'c mut V,
    /// None while only testing whether a layout fits.
    findings: Option<&'c mut Vec<Finding>>,
    facts: Facts,
    mask: u16,
    entity: u32,
    previous: Option<f64>,
    /// Which mask bits' fields the walk can step over unread. Made at the first masked block.
    plan: Option<MaskPlan>,
    /// Where the repeated item being walked starts.
    item: usize,
}

impl<'a, 'c, V: Visitor> Walker<'a, 'c, V> {
    #[allow(clippy::too_many_arguments)]
    fn new(
        buf: &'a [u8],
        base: usize,
        endian: Endian,
        profile: &'c Profile,
        rules: &'c MessageRules,
        visitor: &'c mut V,
        findings: Option<&'c mut Vec<Finding>>,
    ) -> Self {
        Walker {
            buf,
            pos: 0,
            base,
            endian,
            profile,
            rules,
            visitor,
            findings,
            facts: Facts::default(),
            mask: 0,
            entity: 0,
            previous: None,
            plan: None,
            item: 0,
        }
    }

    /// Walks the message body (when `extends_body`) and then `nodes`.
    fn layout(
        &mut self,
        message: &'static Message,
        extends_body: bool,
        nodes: &'static [Node],
    ) -> Result<(), Stop> {
        if extends_body {
            self.nodes(message.body)?;
        }
        self.nodes(nodes)
    }

    fn report(&mut self, rule: Rule, at: usize, detail: Detail) {
        if let Some(findings) = self.findings.as_deref_mut() {
            add_finding(
                findings,
                Finding::new(rule, (self.base + at) as u32, detail),
            );
        }
    }

    fn left(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn take(&mut self, field: &'static Field, n: usize) -> Result<&'a [u8], Stop> {
        if self.left() < n {
            let left = self.left() as u32;
            self.report(
                self.rules.truncated,
                self.pos,
                Detail::Truncated {
                    field: field.name,
                    needed: n as u32,
                    left,
                },
            );
            return Err(Stop::Truncated);
        }
        let bytes = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    /// The integer in `bytes` (1, 2 or 4 of them: the widths of [`Ty`]).
    fn raw(&self, bytes: &[u8]) -> u64 {
        raw(self.endian, bytes)
    }

    /// Reads one field; returns its raw integer (0 for text).
    #[inline]
    fn field(&mut self, field: &'static Field) -> Result<u64, Stop> {
        // Most fields are fixed-width numbers that fit: read them here, and build their value
        // only for a check or a visitor that wants it (a summary wants none of a snapshot's).
        if let (0, Some(width)) = (field.array, field.ty.width()) {
            if self.left() >= width {
                let at = self.pos;
                let raw = self.raw(&self.buf[at..at + width]);
                self.pos += width;
                if field.check != Check::None {
                    self.check(field, at, number(field, raw));
                }
                self.note(field.role, raw);
                if V::WANTS_ENTITIES && matches!(field.role, Role::EntityId | Role::EntityType) {
                    self.name_entity(field.role, at, number(field, raw));
                }
                if self.visitor.wants(field) {
                    self.visitor.field(field, at, width, number(field, raw));
                }
                return Ok(raw);
            }
        }
        self.read_field(field)
    }

    /// [`Walker::field`] for the rest: text, byte arrays, truncation.
    #[inline(never)]
    fn read_field(&mut self, field: &'static Field) -> Result<u64, Stop> {
        let at = self.pos;
        let wanted = self.visitor.wants(field);
        let (value, raw) = match field.width() {
            // A fixed byte array: text up to the first NUL (`char name[32]`), or bytes.
            Some(len) if field.array > 0 => {
                let bytes = self.take(field, len)?;
                let value = if matches!(field.display, Display::Text) {
                    let text = bytes
                        .iter()
                        .position(|b| *b == 0)
                        .map_or(bytes, |nul| &bytes[..nul]);
                    match std::str::from_utf8(text) {
                        Ok(text) => Value::Str(text),
                        Err(_) => {
                            self.report(self.rules.utf8, at, Detail::Field(field.name));
                            Value::Bytes(text)
                        }
                    }
                } else {
                    Value::Bytes(bytes)
                };
                (value, 0)
            }
            None => {
                let len = self.take(field, 1)?[0] as usize;
                let bytes = self.take(field, len)?;
                match std::str::from_utf8(bytes) {
                    Ok(text) => (Value::Str(text), 0),
                    Err(_) => {
                        self.report(self.rules.utf8, at, Detail::Field(field.name));
                        (Value::Bytes(bytes), 0)
                    }
                }
            }
            Some(width) => {
                let bytes = self.take(field, width)?;
                let raw = self.raw(bytes);
                (number(field, raw), raw)
            }
        };
        self.check(field, at, value);
        self.note(field.role, raw);
        if V::WANTS_ENTITIES {
            self.name_entity(field.role, at, value);
        }
        if wanted {
            self.visitor.field(field, at, self.pos - at, value);
        }
        Ok(raw)
    }

    fn check(&mut self, field: &'static Field, at: usize, value: Value<'_>) {
        match (field.check, value) {
            (Check::Finite(rule), Value::F(f)) if !f.is_finite() => {
                self.report(rule, at, Detail::Field(field.name))
            }
            (Check::Known(rule), Value::U(n)) => {
                if let Display::Enum(names) = field.display {
                    if !names.iter().any(|e| u64::from(e.value) == n) {
                        self.report(rule, at, Detail::Value(n));
                    }
                }
            }
            (Check::Unused { mask, rule }, Value::U(n)) if n & u64::from(mask) != 0 => {
                self.report(rule, at, Detail::Value(n & u64::from(mask)))
            }
            (Check::Ascending(rule), Value::F(f)) => {
                if self.previous.is_some_and(|p| f < p) {
                    self.report(rule, at, Detail::Field(field.name));
                }
                self.previous = Some(f);
            }
            _ => {}
        }
    }

    /// Records the facts the session layer needs, by role.
    fn note(&mut self, role: Role, raw: u64) {
        let f = &mut self.facts;
        match role {
            Role::PlayerId => f.player_id = Some(raw as u32),
            Role::ClientTime => f.client_time = Some(raw as u32),
            Role::AckSequence => f.ack_sequence = Some(raw as u16),
            Role::AckMessageType => f.ack_msg_type = Some(raw as u8),
            Role::ReasonCode => f.reason = Some(raw as u8),
            Role::TotalChunks => f.total_chunks = Some(raw as u16),
            Role::ChunkIndex => f.chunk_index = Some(raw as u16),
            Role::EventType => f.event_type = Some(raw as u8),
            Role::ComponentType => f.component = Some((self.entity, raw as u8)),
            Role::UpdateMask => self.mask = raw as u16,
            Role::EntityId => self.entity = raw as u32,
            _ => {}
        }
    }

    /// Hands an entity's id or type to a visitor that follows entities.
    #[inline]
    fn name_entity(&mut self, role: Role, at: usize, value: Value<'_>) {
        match role {
            Role::EntityId => self
                .visitor
                .entity(value.as_u64().map_or(0, |v| v as u32), at),
            Role::EntityType => {
                if let Some(t) = value.as_u64() {
                    self.visitor.entity_type(t, at);
                }
            }
            _ => {}
        }
    }

    fn nodes(&mut self, nodes: &'static [Node]) -> Result<(), Stop> {
        for node in nodes {
            self.node(node)?;
        }
        Ok(())
    }

    fn node(&mut self, node: &'static Node) -> Result<(), Stop> {
        match node {
            Node::Field(field) => self.field(field).map(drop),
            Node::Repeat { count, item } => self.repeat(count, item),
            Node::Switch {
                tag,
                cases,
                unknown,
            } => {
                let value = self.field(tag)?;
                match cases.iter().find(|c| u64::from(c.value) == value) {
                    Some(case) => {
                        self.group(&case.group, Open::Case, |w| w.nodes(case.group.nodes))
                    }
                    None => {
                        self.report(*unknown, self.pos - 1, Detail::Value(value));
                        self.skip_rest()
                    }
                }
            }
            Node::Masked => self.masked(),
        }
    }

    fn repeat(&mut self, count: &'static Field, item: &'static Group) -> Result<(), Stop> {
        let n = self.field(count)? as u32;
        if count.role == Role::EntityCount && self.facts.entities_at.is_none() {
            self.facts.entity_count = Some(n as u16);
            self.facts.entities_at = Some(self.pos);
        }
        self.previous = None;
        self.group(item, Open::List { count: n }, |w| {
            let done = w.plain_items(item, n)?;
            for index in done..n {
                w.item = w.pos;
                w.group(item, Open::Item { index }, |w| w.nodes(item.nodes))?;
            }
            Ok(())
        })
    }

    /// Runs `body` inside an opened group, closing it whatever happens.
    fn group(
        &mut self,
        group: &'static Group,
        how: Open,
        body: impl FnOnce(&mut Self) -> Result<(), Stop>,
    ) -> Result<(), Stop> {
        if V::WANTS_FIELDS {
            self.visitor.open(group, how, self.pos);
        }
        let result = body(self);
        if V::WANTS_FIELDS {
            self.visitor.close(how);
        }
        result
    }

    /// Hands the rest of the payload to the visitor as undecoded bytes and stops.
    fn skip_rest(&mut self) -> Result<(), Stop> {
        if V::WANTS_FIELDS && self.left() > 0 {
            self.visitor.undecoded(self.pos, &self.buf[self.pos..]);
        }
        self.pos = self.buf.len();
        Err(Stop::Undecodable)
    }
}

/// The integer in `bytes` (1, 2 or 4 of them: the widths of [`Ty`]) in byte order `endian`.
#[inline(always)]
fn raw(endian: Endian, bytes: &[u8]) -> u64 {
    match (endian, bytes) {
        (_, [b]) => u64::from(*b),
        (Endian::Big, [a, b]) => u16::from_be_bytes([*a, *b]).into(),
        (Endian::Little, [a, b]) => u16::from_le_bytes([*a, *b]).into(),
        (Endian::Big, [a, b, c, d]) => u32::from_be_bytes([*a, *b, *c, *d]).into(),
        (Endian::Little, [a, b, c, d]) => u32::from_le_bytes([*a, *b, *c, *d]).into(),
        (Endian::Big, _) => bytes.iter().fold(0u64, |acc, b| acc << 8 | u64::from(*b)),
        (Endian::Little, _) => bytes
            .iter()
            .rev()
            .fold(0u64, |acc, b| acc << 8 | u64::from(*b)),
    }
}

/// The value of a plain number field (1, 2 or 4 bytes) from its bytes, as the walk reads it: for
/// a reader that finds such a field by its place (a masked block's, by the widths before it).
pub fn plain_number(field: &Field, endian: Endian, bytes: &[u8]) -> Value<'static> {
    number(field, raw(endian, bytes))
}

/// The value of a fixed-width number field whose raw integer is `raw`.
fn number(field: &Field, raw: u64) -> Value<'static> {
    let value = match field.ty {
        Ty::I16 => Value::I(i64::from(raw as u16 as i16)),
        Ty::I32 => Value::I(i64::from(raw as u32 as i32)),
        Ty::F32 => Value::F(f64::from(f32::from_bits(raw as u32))),
        _ => Value::U(raw),
    };
    match value {
        Value::U(n) if field.divisor != 1 => Value::F(n as f64 / f64::from(field.divisor)),
        Value::I(n) if field.divisor != 1 => Value::F(n as f64 / f64::from(field.divisor)),
        v => v,
    }
}

/// Whether `profile` misreads `payload` as `message` (a [`MessageRules::misfit`] finding);
/// `scratch` holds the findings of the reading.
pub fn misreads(
    message: &'static Message,
    payload: &[u8],
    endian: Endian,
    profile: &Profile,
    rules: &MessageRules,
    scratch: &mut Vec<Finding>,
) -> bool {
    scratch.clear();
    decode_message(
        message,
        payload,
        0,
        endian,
        profile,
        rules,
        &mut NoFields,
        scratch,
    );
    scratch.iter().any(|f| rules.misfit(f.rule))
}

/// Decodes a message payload against its description, trying the known variants when the
/// document's layout does not fit. Returns the facts read; problems go to `findings`, located at
/// `base` + their offset in `payload`.
#[allow(clippy::too_many_arguments)]
pub fn decode_message<V: Visitor>(
    message: &'static Message,
    payload: &[u8],
    base: usize,
    endian: Endian,
    profile: &Profile,
    rules: &MessageRules,
    visitor: &mut V,
    findings: &mut Vec<Finding>,
) -> Facts {
    let layout = choose_layout(message, payload, endian, profile, rules, None);
    let v = layout.variant;
    decode_message_as(
        message, v, payload, base, endian, profile, rules, visitor, findings,
    )
}

/// The layout a payload is decoded with: the document's body (`variant` None) or one of the
/// message's variants, and whether it fits the payload whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub variant: Option<u8>,
    pub whole: bool,
}

/// Chooses the layout of a payload: the document's body when it fits the bytes whole, else the
/// first variant that does. When none does (a cut or padded payload), the one its conversation
/// has been using (`usual`, a variant's index; None for the body): a cut datagram is then reported
/// as cut against that layout, not decoded as another one it happens to fit better.
pub fn choose_layout(
    message: &'static Message,
    payload: &[u8],
    endian: Endian,
    profile: &Profile,
    rules: &MessageRules,
    usual: Option<u8>,
) -> Layout {
    if message.variants.is_empty() {
        return Layout {
            variant: None,
            whole: true,
        };
    }
    let fits = |extends, nodes| {
        let mut silent = NoFields;
        let mut w = Walker::new(payload, 0, endian, profile, rules, &mut silent, None);
        w.layout(message, extends, nodes).is_ok() && w.pos == payload.len()
    };
    let variant = if fits(false, message.body) {
        None
    } else {
        match message
            .variants
            .iter()
            .position(|v| fits(v.extends_body, v.nodes))
        {
            Some(i) => Some(i as u8),
            None => {
                let usual = usual.filter(|i| usize::from(*i) < message.variants.len());
                return Layout {
                    variant: usual,
                    whole: false,
                };
            }
        }
    };
    Layout {
        variant,
        whole: true,
    }
}

/// Decodes a message payload in one layout: the document's body (`variant` None) or a variant,
/// which is reported. A payload the layout does not fit whole is reported as cut, or as carrying
/// bytes past its end, or (a fixed-size layout) as of the wrong size.
#[allow(clippy::too_many_arguments)]
pub fn decode_message_as<V: Visitor>(
    message: &'static Message,
    variant: Option<u8>,
    payload: &[u8],
    base: usize,
    endian: Endian,
    profile: &Profile,
    rules: &MessageRules,
    visitor: &mut V,
    findings: &mut Vec<Finding>,
) -> Facts {
    let chosen = variant.and_then(|i| message.variants.get(usize::from(i)));
    if let Some(v) = chosen {
        add_finding(findings, Finding::new(v.rule, base as u32, Detail::None));
    }
    let (extends, nodes) = chosen.map_or((false, message.body), |v| (v.extends_body, v.nodes));
    let fixed = match (extends, nodes_fixed_size(nodes)) {
        (true, n) => nodes_fixed_size(message.body).zip(n).map(|(b, n)| b + n),
        (false, n) => n,
    };
    let before = findings.len();
    let mut w = Walker::new(
        payload,
        base,
        endian,
        profile,
        rules,
        visitor,
        Some(findings),
    );
    let result = w.layout(message, extends, nodes);
    let (pos, mut facts) = (w.pos, w.facts);
    facts.variant = chosen.and(variant);
    if pos < payload.len() && result.is_ok() && V::WANTS_FIELDS {
        w.visitor.undecoded(pos, &payload[pos..]);
    }
    match fixed {
        Some(size) if size != payload.len() => {
            // The size finding says it all: drop the truncation it caused.
            let mut index = 0;
            findings.retain(|f| {
                index += 1;
                index <= before || f.rule != rules.truncated
            });
            let detail = Detail::Sizes {
                expected: size as u64,
                found: payload.len() as u64,
            };
            add_finding(findings, Finding::new(rules.size, base as u32, detail));
        }
        _ if result.is_ok() && pos < payload.len() => {
            let detail = Detail::Sizes {
                expected: pos as u64,
                found: payload.len() as u64,
            };
            add_finding(
                findings,
                Finding::new(rules.trailing, (base + pos) as u32, detail),
            );
        }
        _ => {}
    }
    facts
}

/// Walks fixed nodes (a header) over `buf` for a visitor; the caller has checked the length.
pub fn decode_nodes<V: Visitor>(
    nodes: &'static [Node],
    buf: &[u8],
    endian: Endian,
    profile: &Profile,
    rules: &MessageRules,
    visitor: &mut V,
) {
    let mut w = Walker::new(buf, 0, endian, profile, rules, visitor, None);
    let _ = w.nodes(nodes);
}

#[cfg(test)]
mod tests;
