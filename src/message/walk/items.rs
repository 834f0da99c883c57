//! The walk's fast paths through repeated items and update-masked blocks: a snapshot's entities
//! read at their places rather than node by node, and a masked block sized at once from the
//! profile's plain bits, with the field-by-field fallback for a cut or an unknown bit.

use super::*;

impl<'a, 'c, V: Visitor> Walker<'a, 'c, V> {
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
    pub(super) fn plain_items(&mut self, item: &'static Group, n: u32) -> Result<u32, Stop> {
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

    pub(super) fn masked(&mut self) -> Result<(), Stop> {
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
pub(super) struct MaskPlan {
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
