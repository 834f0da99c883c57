//! The walker: reads a payload node by node, as the protocol description lays it out.

use super::{Facts, NoFields, Open, Value, Visitor};
use crate::finding::{add_finding, Detail, Finding};
use crate::proto::profile::{BitSlot, PlainBits, Profile, MASK_BITS};
use crate::proto::schema::{
    nodes_fixed_size, Check, Display, Endian, Field, Group, Message, MessageRules, Node, Role, Ty,
};
use crate::proto::Rule;

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

    /// Walks the items of a repeat made of fixed-width numbers that are not checked (a
    /// snapshot's entity id and update mask), then perhaps the masked fields, without going node
    /// by node: most of a summary's time, and of export's, is spent in these items. Only the
    /// entity id and the update mask are read, each at its place in the item, and handed to the
    /// visitor when it wants them (the pipeline follows entity ids for their lifecycle, export
    /// writes them), each item opened and closed for a visitor that sees the fields; other
    /// numbers of the item are stepped over, so a visitor that wants one of them gets the
    /// node-by-node walk. Every branch here takes the same way for every item. Returns how many
    /// items it walked; the node-by-node walk takes over from the first one that is cut short
    /// (to report it) or when the items are not of this kind.
    fn plain_items(&mut self, item: &'static Group, n: u32) -> Result<u32, Stop> {
        let (nodes, masked) = match item.nodes {
            [nodes @ .., Node::Masked] => (nodes, true),
            nodes => (nodes, false),
        };
        // (offset in the item, width, field, wanted) of the numbers [`Walker::note`] keeps.
        let (mut id, mut mask_at) = (None, None);
        let mut width = 0;
        for node in nodes {
            let Node::Field(field) = node else {
                return Ok(0);
            };
            let (0, Some(w), Check::None) = (field.array, field.ty.width(), field.check) else {
                return Ok(0);
            };
            let wanted = self.visitor.wants(field);
            match field.role {
                Role::None if !wanted => {}
                Role::EntityId => id = Some((width, w, field, wanted)),
                Role::UpdateMask => mask_at = Some((width, w, field, wanted)),
                _ => return Ok(0),
            }
            width += w;
        }
        // Kept here rather than re-read from `self` in every item, as is the position: the
        // walker's own fields are written back only where another path takes over.
        let plan = self.mask_plan();
        if let (true, Some((id_at, 4, id, false)), Some((mask_at, 2, _, false))) =
            (masked, id, mask_at)
        {
            let whole_id = id.ty == Ty::U32 && id.divisor == 1;
            let one_type = plan.typed & !plan.whole == 0 && plan.typed.count_ones() <= 1;
            if !V::WANTS_MASKS
                && self.endian == Endian::Big
                && whole_id
                && one_type
                && plan.wanted == 0
            {
                let layout = Framed {
                    id_at,
                    mask_at,
                    width,
                };
                return self.framed_items(&plan, layout, n);
            }
        }
        let (buf, endian, mut pos) = (self.buf, self.endian, self.pos);
        for index in 0..n {
            let item_at = pos;
            let Some(bytes) = buf.get(item_at..item_at + width) else {
                self.pos = pos;
                return Ok(index);
            };
            let how = Open::Item { index };
            if V::WANTS_FIELDS {
                self.visitor.open(item, how, item_at);
            }
            let mut entity = 0;
            if let Some((at, w, field, wanted)) = id {
                let raw = raw(endian, &bytes[at..at + w]);
                entity = raw as u32;
                if V::WANTS_ENTITIES {
                    self.name_entity(Role::EntityId, item_at + at, number(field, raw));
                }
                if wanted {
                    self.visitor
                        .field(field, item_at + at, w, number(field, raw));
                }
            }
            let mut mask = 0;
            if let Some((at, w, field, wanted)) = mask_at {
                let raw = raw(endian, &bytes[at..at + w]);
                mask = raw as u16;
                if wanted {
                    self.visitor
                        .field(field, item_at + at, w, number(field, raw));
                }
            }
            pos += width;
            if masked {
                let block = plan.width(mask);
                if plan.plain(mask) && buf.len() - pos >= block {
                    self.plain_block(&plan, item_at, mask, pos);
                    pos += block;
                } else {
                    (self.pos, self.item, self.mask, self.entity) = (pos, item_at, mask, entity);
                    let walked = self.masked_fields(plan, mask);
                    if V::WANTS_FIELDS {
                        self.visitor.close(how);
                    }
                    walked?;
                    pos = self.pos;
                    continue;
                }
            }
            if V::WANTS_FIELDS {
                self.visitor.close(how);
            }
        }
        (self.pos, self.item) = (pos, pos);
        Ok(n)
    }

    /// [`Walker::plain_items`] when the visitor wants none of the items' fields and their
    /// framing is the document's (a big-endian 32-bit entity id, a 16-bit update mask, at most
    /// one entity type, a whole number): the walk of a summary, `check` or the packet list
    /// through a snapshot, with its widths known here and nothing but the entities handed over.
    fn framed_items(&mut self, plan: &MaskPlan, layout: Framed, n: u32) -> Result<u32, Stop> {
        let Framed {
            id_at,
            mask_at,
            width,
        } = layout;
        let typed = plan.typed;
        let type_bit = typed.trailing_zeros() as usize % MASK_BITS;
        let (before_type, type_width) =
            ((1u16 << type_bit) - 1, usize::from(plan.widths[type_bit]));
        let (buf, mut pos) = (self.buf, self.pos);
        for index in 0..n {
            let item_at = pos;
            let Some(head) = buf.get(item_at..item_at + width) else {
                self.pos = pos;
                return Ok(index);
            };
            let id = u32::from_be_bytes([
                head[id_at],
                head[id_at + 1],
                head[id_at + 2],
                head[id_at + 3],
            ]);
            let mask = u16::from_be_bytes([head[mask_at], head[mask_at + 1]]);
            if V::WANTS_ENTITIES {
                self.visitor.entity(id, item_at + id_at);
            }
            pos += width;
            let block = plan.width(mask);
            if !plan.plain(mask) || buf.len() - pos < block {
                (self.pos, self.item, self.mask, self.entity) = (pos, item_at, mask, id);
                self.masked_fields(*plan, mask)?;
                pos = self.pos;
                continue;
            }
            if V::WANTS_ENTITIES && mask & typed != 0 {
                let at = pos + plan.width(mask & before_type);
                let type_id = raw(Endian::Big, &buf[at..at + type_width]);
                self.visitor.entity_type(type_id, at);
            }
            pos += block;
        }
        (self.pos, self.item) = (pos, pos);
        Ok(n)
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

    fn masked(&mut self) -> Result<(), Stop> {
        let plan = self.mask_plan();
        self.masked_fields(plan, self.mask)
    }

    fn mask_plan(&mut self) -> MaskPlan {
        *self
            .plan
            .get_or_insert_with(|| MaskPlan::new(self.profile, self.visitor))
    }

    /// The fields `mask` gates, laid out by the profile.
    fn masked_fields(&mut self, plan: MaskPlan, mask: u16) -> Result<(), Stop> {
        let width = plan.width(mask);
        if plan.plain(mask) && self.left() >= width {
            self.plain_block(&plan, self.item, mask, self.pos);
            self.pos += width;
            return Ok(());
        }
        // Otherwise field by field, so that a cut or an unknown bit is reported where it is.
        let mut mask = mask;
        while mask != 0 {
            let bit = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            self.bit(bit)?;
        }
        Ok(())
    }

    /// The fields of `mask`, every one a plain number, which fit at `at` (in the item at `item`):
    /// the block's width is known at once, and only the numbers the visitor wants are read, each
    /// one placed by the widths of the fields before it. The caller steps over the block.
    #[inline(always)]
    fn plain_block(&mut self, plan: &MaskPlan, item: usize, mask: u16, at: usize) {
        let (buf, endian) = (self.buf, self.endian);
        if V::WANTS_MASKS {
            self.visitor.masked(item, mask, at, plan.width(mask));
        }
        let mut typed = mask & plan.typed;
        while V::WANTS_ENTITIES && typed != 0 {
            let bit = typed.trailing_zeros() as usize;
            typed &= typed - 1;
            let at = at + plan.width(mask & ((1 << bit) - 1));
            if let BitSlot::Field(field) = self.profile.bits()[bit] {
                let raw = raw(endian, &buf[at..at + usize::from(plan.widths[bit])]);
                self.name_entity(Role::EntityType, at, number(field, raw));
            }
        }
        let (mut rest, mut at) = (mask, at);
        while rest & plan.wanted != 0 {
            let bit = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let w = usize::from(plan.widths[bit]);
            if plan.wanted & 1 << bit != 0 {
                if let BitSlot::Field(field) = self.profile.bits()[bit] {
                    let raw = raw(endian, &buf[at..at + w]);
                    self.visitor.field(field, at, w, number(field, raw));
                }
            }
            at += w;
        }
    }

    /// Reads the field of a set mask bit, or reports a bit of unknown width and stops.
    fn bit(&mut self, bit: usize) -> Result<(), Stop> {
        let rule = match self.profile.bits()[bit] {
            BitSlot::Field(field) => return self.field(field).map(drop),
            BitSlot::Reserved => self.rules.reserved_bit,
            BitSlot::Undefined => self.rules.undefined_bit,
        };
        let detail = Detail::MaskBit {
            entity: self.entity,
            bit: bit as u8,
            left: self.left() as u32,
        };
        self.report(rule, self.pos, detail);
        self.skip_rest()
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

/// Where a repeated item's entity id and update mask are, and its width up to its masked fields.
#[derive(Clone, Copy)]
struct Framed {
    id_at: usize,
    mask_at: usize,
    width: usize,
}

/// How a walk treats each update-mask bit: the profile's plain bits ([`PlainBits`]: a field can
/// be stepped over unread when reading it would change nothing), and of those, the ones whose
/// value the visitor wants. For a visitor that wants no field this costs nothing per message.
#[derive(Clone, Copy, Debug)]
struct MaskPlan {
    bits: PlainBits,
    /// The plain bits whose value the visitor wants.
    wanted: u16,
}

impl MaskPlan {
    fn new<V: Visitor>(profile: &Profile, visitor: &V) -> MaskPlan {
        let bits = *profile.plain();
        let mut wanted = 0;
        let mut plain = !bits.other;
        while plain != 0 {
            let bit = plain.trailing_zeros() as usize;
            plain &= plain - 1;
            if let BitSlot::Field(f) = profile.bits()[bit] {
                if visitor.wants(f) {
                    wanted |= 1 << bit;
                }
            }
        }
        MaskPlan { bits, wanted }
    }
}

impl std::ops::Deref for MaskPlan {
    type Target = PlainBits;
    fn deref(&self) -> &PlainBits {
        &self.bits
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
mod tests {
    use super::*;
    use crate::datagram::rtype;
    use crate::proto::rtype as desc;

    /// A visitor that wants every field (so the walk goes node by node) and lists them.
    #[derive(Default)]
    struct Everything(Vec<(&'static str, usize, usize)>);

    impl Visitor for Everything {
        fn field(&mut self, f: &'static Field, at: usize, len: usize, _: Value<'_>) {
            self.0.push((f.name, at, len));
        }
        fn open(&mut self, _: &'static Group, _: Open, _: usize) {}
        fn close(&mut self, _: Open) {}
        fn undecoded(&mut self, _: usize, _: &[u8]) {}
    }

    /// A visitor that only wants entity types, as the pipeline's check against LevelInit.
    #[derive(Default)]
    struct Types(Vec<(usize, Value<'static>)>);

    impl Visitor for Types {
        const WANTS_FIELDS: bool = false;
        fn wants(&self, field: &'static Field) -> bool {
            field.role == Role::EntityType
        }
        fn field(&mut self, _: &'static Field, at: usize, _: usize, value: Value<'_>) {
            let value = value.as_u64().map_or(Value::U(u64::MAX), Value::U);
            self.0.push((at, value));
        }
        fn open(&mut self, _: &'static Group, _: Open, _: usize) {}
        fn close(&mut self, _: Open) {}
        fn undecoded(&mut self, _: usize, _: &[u8]) {}
    }

    /// A visitor that wants the entity framing only, as the pipeline's lifecycle tap.
    #[derive(Default)]
    struct Framing(Vec<(&'static str, usize, usize)>);

    impl Visitor for Framing {
        const WANTS_FIELDS: bool = false;
        fn wants(&self, field: &'static Field) -> bool {
            matches!(field.role, Role::EntityId | Role::UpdateMask)
        }
        fn field(&mut self, f: &'static Field, at: usize, len: usize, _: Value<'_>) {
            self.0.push((f.name, at, len));
        }
        fn open(&mut self, _: &'static Group, _: Open, _: usize) {}
        fn close(&mut self, _: Open) {}
        fn undecoded(&mut self, _: usize, _: &[u8]) {}
    }

    /// A visitor that follows entities and wants no field, as the pipeline's summary.
    #[derive(Default)]
    struct Followed(Vec<(&'static str, u64, usize)>);

    impl Visitor for Followed {
        const WANTS_FIELDS: bool = false;
        const WANTS_ENTITIES: bool = true;
        fn entity(&mut self, id: u32, at: usize) {
            self.0.push(("id", id.into(), at));
        }
        fn entity_type(&mut self, type_id: u64, at: usize) {
            self.0.push(("entity_type", type_id, at));
        }
        fn field(&mut self, _: &'static Field, _: usize, _: usize, _: Value<'_>) {}
        fn open(&mut self, _: &'static Group, _: Open, _: usize) {}
        fn close(&mut self, _: Open) {}
        fn undecoded(&mut self, _: usize, _: &[u8]) {}
    }

    /// A visitor that takes masked blocks whole.
    #[derive(Default)]
    struct Blocks(Vec<(usize, u16, usize, usize)>);

    impl Visitor for Blocks {
        const WANTS_FIELDS: bool = false;
        const WANTS_MASKS: bool = true;
        fn wants(&self, _: &'static Field) -> bool {
            false
        }
        fn masked(&mut self, item: usize, mask: u16, at: usize, len: usize) {
            self.0.push((item, mask, at, len));
        }
        fn field(&mut self, _: &'static Field, _: usize, _: usize, _: Value<'_>) {}
        fn open(&mut self, _: &'static Group, _: Open, _: usize) {}
        fn close(&mut self, _: Open) {}
        fn undecoded(&mut self, _: usize, _: &[u8]) {}
    }

    /// Each group opened and closed, and each field, in the order visited.
    #[derive(Default)]
    struct Nesting(Vec<String>);

    impl Visitor for Nesting {
        fn field(&mut self, f: &'static Field, at: usize, _: usize, _: Value<'_>) {
            self.0.push(format!("{}@{at}", f.name));
        }
        fn open(&mut self, _: &'static Group, how: Open, at: usize) {
            self.0.push(format!("open {how:?}@{at}"));
        }
        fn close(&mut self, how: Open) {
            self.0.push(format!("close {how:?}"));
        }
        fn undecoded(&mut self, at: usize, bytes: &[u8]) {
            self.0.push(format!("undecoded {}@{at}", bytes.len()));
        }
    }

    fn decode<V: Visitor>(payload: &[u8], visitor: &mut V) -> (Facts, Vec<Finding>) {
        let snapshot = desc::message(desc::SNAPSHOT).unwrap();
        let mut findings = Vec::new();
        let facts = decode_message(
            snapshot,
            payload,
            17,
            rtype::ENDIAN,
            &Profile::document(),
            &rtype::MESSAGE_RULES,
            visitor,
            &mut findings,
        );
        (facts, findings)
    }

    /// An entity type that is not a whole number as the profile lays it out (signed and
    /// negative, or divided) is followed as the node-by-node walk reads it: a type only when its
    /// value is a whole number.
    #[test]
    fn entity_types_are_followed_as_their_profile_reads_them() {
        let snapshot = desc::message(desc::SNAPSHOT).unwrap();
        // Two entities with bit 0 (the type) and bit 9 (lives, one byte) set.
        let mut payload = vec![0, 2];
        for (id, ty) in [(7u32, [0xFF, 0xFE]), (8, [0x00, 0x14])] {
            payload.extend(id.to_be_bytes());
            payload.extend(0x0201u16.to_be_bytes());
            payload.extend(ty);
            payload.push(3);
        }
        let (one, two) = (("id", 7, 2), ("id", 8, 11));
        for (ty, divisor, expected) in [
            (
                "u16",
                1,
                vec![one, ("entity_type", 65534, 8), two, ("entity_type", 20, 17)],
            ),
            ("i16", 1, vec![one, two, ("entity_type", 20, 17)]),
            ("u16", 10, vec![one, two]),
            ("i16", 10, vec![one, two]),
        ] {
            let profile = Profile::parse(&format!(
                "name = \"t\"\n[bits]\n0 = {{ name = \"entity_type\", type = \"{ty}\", divisor = {divisor} }}\n"
            ))
            .unwrap();
            let mut followed = Followed::default();
            let mut findings = Vec::new();
            decode_message(
                snapshot,
                &payload,
                0,
                rtype::ENDIAN,
                &profile,
                &rtype::MESSAGE_RULES,
                &mut followed,
                &mut findings,
            );
            assert_eq!(findings, []);
            assert_eq!(followed.0, expected, "{ty} / {divisor}");
        }
    }

    /// A snapshot's items, read in one go for a visitor that sees the fields (export, the tree),
    /// open and close around their own fields, on every cut of the payload: whatever stops the
    /// walk, each item opened is closed before its list.
    #[test]
    fn items_open_and_close_around_their_fields_on_every_cut() {
        let mut payload = vec![0, 3];
        for (id, mask, body) in [(1u32, 0x0003u16, 5usize), (2, 0x0000, 0), (3, 0x0080, 3)] {
            payload.extend(id.to_be_bytes());
            payload.extend(mask.to_be_bytes());
            payload.extend((0..body).map(|i| i as u8));
        }
        let mut whole = Nesting::default();
        decode(&payload, &mut whole);
        assert_eq!(
            whole.0,
            [
                "entity_count@0",
                "open List { count: 3 }@2",
                "open Item { index: 0 }@2",
                "id@2",
                "update_mask@6",
                "entity_type@8",
                "pos_x@9",
                "close Item { index: 0 }",
                "open Item { index: 1 }@13",
                "id@13",
                "update_mask@17",
                "close Item { index: 1 }",
                "open Item { index: 2 }@19",
                "id@19",
                "update_mask@23",
                "undecoded 3@25",
                "close Item { index: 2 }",
                "close List { count: 3 }",
            ]
        );
        let all_fields: Vec<&String> = whole.0.iter().filter(|e| !e.contains(' ')).collect();
        for len in 0..=payload.len() {
            let mut nesting = Nesting::default();
            decode(&payload[..len], &mut nesting);
            let mut open = Vec::new();
            for event in &nesting.0 {
                if let Some(group) = event.strip_prefix("open ") {
                    open.push(group.split('@').next().unwrap_or_default().to_string());
                } else if let Some(group) = event.strip_prefix("close ") {
                    assert_eq!(open.pop().as_deref(), Some(group), "cut at {len}");
                }
            }
            assert_eq!(open, Vec::<String>::new(), "cut at {len}");
            // The fields visited are the whole payload's, up to the cut.
            let fields: Vec<&String> = nesting.0.iter().filter(|e| !e.contains(' ')).collect();
            assert_eq!(fields, all_fields[..fields.len()], "cut at {len}");
        }
    }

    /// The walk that steps over a summary's unwanted fields finds exactly what the node-by-node
    /// walk finds, on every cut of a snapshot whose entities use skippable, read, reserved and
    /// undefined mask bits.
    #[test]
    fn skipping_finds_what_reading_finds() {
        let mut payload = vec![0, 4];
        for (id, mask, body) in [
            (1u32, 0x027Fu16, 21usize), // type, 4 floats, health, status, lives
            (2, 0x001E, 16),            // 4 floats, no type
            (3, 0x0000, 0),
            (4, 0x0080, 3), // reserved bit 7: the rest is undecodable
        ] {
            payload.extend(id.to_be_bytes());
            payload.extend(mask.to_be_bytes());
            payload.extend((0..body).map(|i| i as u8));
        }
        for len in 0..=payload.len() {
            let cut = &payload[..len];
            let skipped = decode(cut, &mut NoFields);
            assert_eq!(
                skipped,
                decode(cut, &mut Everything::default()),
                "cut at {len}"
            );
            assert_eq!(skipped, decode(cut, &mut Types::default()), "cut at {len}");
            // The framing is visited where it is, whichever walk reads it.
            let (mut framing, mut every) = (Framing::default(), Everything::default());
            assert_eq!(skipped, decode(cut, &mut framing), "cut at {len}");
            decode(cut, &mut every);
            every.0.retain(|f| matches!(f.0, "id" | "update_mask"));
            assert_eq!(framing.0, every.0, "cut at {len}");
            // Entities are followed where they are, whichever walk reads them.
            let mut followed = Followed::default();
            assert_eq!(skipped, decode(cut, &mut followed), "cut at {len}");
            let mut every = Everything::default();
            decode(cut, &mut every);
            let named: Vec<(&str, usize)> = every
                .0
                .iter()
                .filter(|f| matches!(f.0, "id" | "entity_type"))
                .map(|f| (f.0, f.1))
                .collect();
            let seen: Vec<(&str, usize)> = followed.0.iter().map(|f| (f.0, f.2)).collect();
            assert_eq!(seen, named, "cut at {len}");
        }
        // Fields are visited at their offsets, whichever way the walk reads them.
        let mut every = Everything::default();
        decode(&payload, &mut every);
        let names: Vec<&str> = every.0.iter().map(|f| f.0).collect();
        assert_eq!(
            names[..12],
            [
                "entity_count",
                "id",
                "update_mask",
                "entity_type",
                "pos_x",
                "pos_y",
                "vel_x",
                "vel_y",
                "health",
                "status_flags",
                "lives",
                "id"
            ]
        );
        assert_eq!(every.0[3], ("entity_type", 8, 1));
        assert_eq!(every.0[10], ("lives", 28, 1));
        // Blocks read in one go are handed over whole; the one with a reserved bit is not.
        let mut blocks = Blocks::default();
        assert_eq!(
            decode(&payload, &mut blocks),
            decode(&payload, &mut NoFields)
        );
        assert_eq!(
            blocks.0,
            [(2, 0x027F, 8, 21), (29, 0x001E, 35, 16), (51, 0, 57, 0)]
        );
        let mut followed = Followed::default();
        decode(&payload, &mut followed);
        assert_eq!(
            followed.0,
            [
                ("id", 1, 2),
                ("entity_type", 0, 8),
                ("id", 2, 29),
                ("id", 3, 51),
                ("id", 4, 57)
            ]
        );
        let mut types = Types::default();
        decode(&payload, &mut types);
        assert_eq!(types.0, [(8, Value::U(0))]);
        let (facts, findings) = decode(&payload, &mut NoFields);
        assert_eq!(facts.entity_count, Some(4));
        let rules: Vec<Rule> = findings.iter().map(|f| f.rule).collect();
        assert_eq!(rules, [Rule::RtypeReservedBit]);
        assert_eq!(
            findings[0].detail,
            Detail::MaskBit {
                entity: 4,
                bit: 7,
                left: 3
            }
        );
    }
}
