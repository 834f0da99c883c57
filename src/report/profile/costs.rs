//! What each field of a snapshot costs: the visitor the walker hands every field to, with its
//! offset and length, noting per datagram the bytes before the entity list, each entity's block
//! (its framing, where it starts and ends, its position) and the bytes of each field. An update
//! mask's fields come as one block ([`Visitor::masked`]) and are counted per mask bit by the
//! snapshot profile's widths, as the walker laid them out; a block the walker cannot read whole
//! (an unknown bit, a cut) leaves its fields to the undecoded bytes.
//!
//! Nothing is allocated per datagram once the buffers have grown to the largest snapshot. The
//! walk runs on the worker threads ([`RenderAhead`], [`CostsAhead`]); the positions of the
//! snapshots the timelines sample are read afterwards, from each block's place
//! ([`FieldCosts::read_positions`]).

use crate::message::{plain_number, Open, Value, Visitor};
use crate::pipeline::{RenderAhead, Renderings};
use crate::proto::profile::{Profile, MASK_BITS};
use crate::proto::schema::Endian;
use crate::proto::schema::{Field, Group, Role};
use crate::session::entities::IdMap;

/// Distinct fields told apart (the description's and the snapshot profile's are far fewer).
pub const MAX_SLOTS: usize = 1024;
/// Entries of the pointer cache in front of the slot map.
const CACHE: usize = 256;

/// What a field is to the profile, decided once per field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Plain,
    /// The position fields the entity timelines plot.
    X,
    Y,
}

/// One entity block of the datagram.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Block {
    /// Its entity id where the id was visited (the pipeline's entity references tell the others').
    pub id: u32,
    /// Where its id starts, and where its last field ends, in the payload.
    pub at: u32,
    pub end: u32,
    /// The update mask whose fields it carries, read whole, and where they start.
    pub mask: u16,
    pub fields_at: u32,
    pub x: Option<f64>,
    pub y: Option<f64>,
}

impl Block {
    /// Notes a position field's value.
    fn place(&mut self, kind: Kind, value: Value<'_>) {
        match kind {
            Kind::X => self.x = number(value),
            Kind::Y => self.y = number(value),
            Kind::Plain => {}
        }
    }
}

/// A registered field: what it is, and its update-mask bit when the snapshot profile gates it.
#[derive(Clone, Copy, Debug)]
struct Slot {
    field: &'static Field,
    kind: Kind,
    bit: Option<u8>,
}

/// What one snapshot profile lays out behind the mask bits.
#[derive(Clone, Copy, Debug)]
struct MaskLayout {
    /// Each mask bit's field width (0: of unknown width).
    widths: [u8; MASK_BITS],
    /// Each mask bit's field's slot ([`NO_SLOT`]: none).
    slots: [u16; MASK_BITS],
    /// The position fields' mask bits, and the fields ([`FieldCosts::read_positions`]).
    positions: [Option<(u8, &'static Field)>; 2],
}

/// A mask bit no field of the layout is behind.
const NO_SLOT: u16 = u16::MAX;

/// The fields of one snapshot, as the walker visits them.
pub struct FieldCosts {
    /// The fields met so far (the profiles' masked fields first), by slot.
    slots: Vec<Slot>,
    cache: Box<[(usize, u16); CACHE]>,
    index: IdMap<usize, u16>,
    /// The mask layout of each snapshot profile the run may read a conversation with (the run's
    /// first), and the one of the datagram's conversation.
    layouts: Vec<MaskLayout>,
    layout: usize,
    /// An entity count was read: the entity list started.
    active: bool,
    /// Bytes of the message before the entity list, the count included.
    pub head: u32,
    /// Bytes of the entities' ids and update masks.
    pub framing: u32,
    pub blocks: Vec<Block>,
    /// Per mask bit, bytes and presences in this datagram, once [`FieldCosts::total`] added
    /// them up from the blocks' masks.
    bits: [(u32, u32); MASK_BITS],
    /// The mask bits touched, once [`FieldCosts::total`] added them up (on a worker, for the
    /// datagrams walked ahead).
    totalled: Option<u16>,
    /// A masked block was read: entity ids need not be visited any more (the blocks say where
    /// each entity starts).
    masked_blocks: bool,
    /// Per slot (fields outside masks, rt's component fields): the same.
    bytes: Vec<u32>,
    present: Vec<u32>,
    pub touched: Vec<u16>,
    /// Fields past [`MAX_SLOTS`]' bytes.
    pub unslotted: u32,
}

impl FieldCosts {
    /// Costs by the mask bits of `profiles`, the snapshot layouts a run may read a conversation
    /// with (the run's first).
    pub fn new(profiles: &[Profile]) -> FieldCosts {
        let mut costs = FieldCosts::empty();
        costs.layouts.clear();
        for profile in profiles {
            let mut layout = MaskLayout {
                widths: [0; MASK_BITS],
                slots: [NO_SLOT; MASK_BITS],
                positions: [None; 2],
            };
            for bit in 0..MASK_BITS {
                let Some(field) = profile.field(bit) else {
                    continue;
                };
                layout.widths[bit] = field.width().unwrap_or(0) as u8;
                if let Some(slot) = costs.register(field, Some(bit as u8)) {
                    layout.slots[bit] = slot;
                    let kind = costs.slots[usize::from(slot)].kind;
                    if kind != Kind::Plain {
                        let place = &mut layout.positions[usize::from(kind == Kind::Y)];
                        place.get_or_insert((bit as u8, field));
                    }
                }
            }
            costs.layouts.push(layout);
        }
        costs
    }

    /// Counts the next datagrams by the mask layout of index `layout` (its conversation's).
    pub fn select(&mut self, layout: usize) {
        self.layout = if layout < self.layouts.len() {
            layout
        } else {
            0
        };
    }

    /// The slot of the field behind `bit` in a layout other than the run's, in which the
    /// datagram's conversation is read; None in the run's (its rows are by bit).
    pub fn bit_slot(&self, bit: usize) -> Option<u16> {
        let slot = self.layouts[self.layout].slots[bit];
        (self.layout > 0 && slot != NO_SLOT).then_some(slot)
    }

    /// The mask bit a slot's field is behind, if any.
    pub fn slot_bit(&self, slot: u16) -> Option<u8> {
        self.slots.get(usize::from(slot)).and_then(|s| s.bit)
    }

    fn empty() -> FieldCosts {
        FieldCosts {
            slots: Vec::new(),
            cache: Box::new([(0, 0); CACHE]),
            index: IdMap::default(),
            layouts: vec![MaskLayout {
                widths: [0; MASK_BITS],
                slots: [NO_SLOT; MASK_BITS],
                positions: [None; 2],
            }],
            layout: 0,
            active: false,
            head: 0,
            framing: 0,
            blocks: Vec::new(),
            bits: [(0, 0); MASK_BITS],
            totalled: None,
            masked_blocks: false,
            bytes: Vec::new(),
            present: Vec::new(),
            touched: Vec::new(),
            unslotted: 0,
        }
    }

    /// Forgets the last datagram's fields.
    pub fn reset(&mut self) {
        for slot in self.touched.drain(..) {
            self.bytes[usize::from(slot)] = 0;
            self.present[usize::from(slot)] = 0;
        }
        self.bits = [(0, 0); MASK_BITS];
        self.totalled = None;
        self.masked_blocks = false;
        self.active = false;
        self.head = 0;
        self.framing = 0;
        self.unslotted = 0;
        self.blocks.clear();
    }

    /// Reads the positions of the blocks read whole (whose update mask has the position bits),
    /// each field at its place in the block by the widths of the fields before it, from
    /// `payload`, the bytes the walk read, in byte order `endian`: what the walk would hand over
    /// if it were asked for them, read only for the datagrams the timelines sample.
    pub fn read_positions(&mut self, payload: &[u8], endian: Endian) {
        let layout = self.layouts[self.layout];
        for (kind, position) in [Kind::X, Kind::Y].into_iter().zip(layout.positions) {
            let Some((bit, field)) = position else {
                continue;
            };
            let (bit, widths) = (usize::from(bit), &layout.widths);
            for b in &mut self.blocks {
                if b.mask & 1 << bit == 0 {
                    continue;
                }
                let before = b.mask & ((1 << bit) - 1);
                let at = b.fields_at as usize
                    + bit_indices(before)
                        .map(|i| usize::from(widths[i]))
                        .sum::<usize>();
                if let Some(bytes) = payload.get(at..at + usize::from(widths[bit])) {
                    b.place(kind, plain_number(field, endian, bytes));
                }
            }
        }
    }

    /// The field in a slot.
    pub fn field(&self, slot: u16) -> &'static Field {
        self.slots[usize::from(slot)].field
    }

    /// Bytes and presences of a touched slot in this datagram.
    pub fn cost(&self, slot: u16) -> (u32, u32) {
        let s = usize::from(slot);
        (self.bytes[s], self.present[s])
    }

    /// Adds up the masked fields' bytes per bit from the blocks (once the walk is over, the
    /// first time it is asked), and returns the mask bits touched.
    pub fn total(&mut self) -> u16 {
        if let Some(touched) = self.totalled {
            return touched;
        }
        self.bits = [(0, 0); MASK_BITS];
        // The distinct masks and how many blocks had each (a snapshot has few), then their bits.
        let mut masks = [(0u16, 0u32); 8];
        let (mut distinct, mut touched) = (0, 0u16);
        for b in &self.blocks {
            touched |= b.mask;
            match masks[..distinct].iter().position(|m| m.0 == b.mask) {
                Some(i) => masks[i].1 += 1,
                None if distinct < masks.len() => {
                    masks[distinct] = (b.mask, 1);
                    distinct += 1;
                }
                None => expand(&mut self.bits, &self.layouts[self.layout].widths, b.mask, 1),
            }
        }
        for (mask, n) in &masks[..distinct] {
            expand(&mut self.bits, &self.layouts[self.layout].widths, *mask, *n);
        }
        self.totalled = Some(touched);
        touched
    }

    /// Bytes and presences of a mask bit's field in this datagram (after [`FieldCosts::total`]).
    pub fn bit_cost(&self, bit: usize) -> (u32, u32) {
        self.bits[bit]
    }

    /// The bytes of the fields visited inside the entity list (after [`FieldCosts::total`]).
    pub fn in_blocks(&self) -> u64 {
        let slots: u64 = self
            .touched
            .iter()
            .map(|s| u64::from(self.cost(*s).0))
            .sum();
        let bits: u64 = self.bits.iter().map(|b| u64::from(b.0)).sum();
        slots + bits + u64::from(self.framing) + u64::from(self.unslotted)
    }

    fn register(&mut self, field: &'static Field, bit: Option<u8>) -> Option<u16> {
        let key = field as *const Field as usize;
        if let Some(slot) = self.index.get(&key) {
            return Some(*slot);
        }
        if self.slots.len() >= MAX_SLOTS {
            return None;
        }
        let slot = self.slots.len() as u16;
        let kind = match field.name {
            "pos_x" => Kind::X,
            "pos_y" => Kind::Y,
            _ => Kind::Plain,
        };
        self.slots.push(Slot { field, kind, bit });
        self.bytes.push(0);
        self.present.push(0);
        self.index.insert(key, slot);
        self.cache[(key >> 3) % CACHE] = (key, slot);
        Some(slot)
    }

    /// A field's slot when it is registered already, through the pointer cache.
    fn known(&self, field: &'static Field) -> Option<u16> {
        let key = field as *const Field as usize;
        let (cached, slot) = self.cache[(key >> 3) % CACHE];
        if cached == key {
            return Some(slot);
        }
        self.index.get(&key).copied()
    }

    /// Adds bytes and presences to a slot's in this datagram.
    fn add(&mut self, slot: usize, bytes: u32, present: u32) {
        if self.present[slot] == 0 {
            self.touched.push(slot as u16);
        }
        self.bytes[slot] += bytes;
        self.present[slot] += present;
    }

    /// The slot of a field, registered the first time it is met.
    fn slot(&mut self, field: &'static Field) -> Option<(usize, Slot)> {
        let slot = match self.known(field) {
            Some(slot) => slot,
            None => self.register(field, None)?,
        };
        let key = field as *const Field as usize;
        self.cache[(key >> 3) % CACHE] = (key, slot);
        Some((usize::from(slot), self.slots[usize::from(slot)]))
    }
}

/// Adds `n` blocks of update mask `mask` to the bytes and presences per bit.
fn expand(bits: &mut [(u32, u32); MASK_BITS], widths: &[u8; MASK_BITS], mask: u16, n: u32) {
    for bit in bit_indices(mask) {
        bits[bit].0 += n * u32::from(widths[bit]);
        bits[bit].1 += n;
    }
}

/// The bits set in `mask`, lowest first.
pub fn bit_indices(mask: u16) -> impl Iterator<Item = usize> {
    let mut left = mask;
    std::iter::from_fn(move || {
        (left != 0).then(|| {
            let bit = left.trailing_zeros() as usize;
            left &= left - 1;
            bit
        })
    })
}

fn number(value: Value<'_>) -> Option<f64> {
    match value {
        Value::U(n) => Some(n as f64),
        Value::I(n) => Some(n as f64),
        Value::F(f) => Some(f),
        _ => None,
    }
}

impl Visitor for FieldCosts {
    /// Only values are wanted, not the structure: the walk skips headers and groups.
    const WANTS_FIELDS: bool = false;
    const WANTS_MASKS: bool = true;
    /// Every field but those an update mask gates, which come as blocks, the update masks (their
    /// bytes are told by the blocks) and entity types (their bytes are the masked blocks').
    #[inline(always)]
    fn wants(&self, field: &'static Field) -> bool {
        if !self.active {
            // Before a snapshot's entity list, only the count that starts it (other messages'
            // fields are never needed).
            return field.role == Role::EntityCount;
        }
        match field.role {
            Role::UpdateMask | Role::EntityType => false,
            Role::EntityId => !self.masked_blocks,
            Role::None => match self.known(field) {
                Some(s) => self.slots[usize::from(s)].bit.is_none(),
                None => true,
            },
            _ => true,
        }
    }
    #[inline]
    fn masked(&mut self, item: usize, mask: u16, at: usize, len: usize) {
        self.masked_blocks = true;
        // The first item's id was visited and started its block: what follows it up to the
        // masked fields is its update mask.
        match self.blocks.last_mut().filter(|b| b.at as usize == item) {
            Some(block) => {
                self.framing += (at as u32).saturating_sub(block.end);
                block.end = (at + len) as u32;
                block.mask = mask;
                block.fields_at = at as u32;
            }
            None => {
                self.framing += (at - item) as u32;
                self.blocks.push(Block {
                    id: 0,
                    at: item as u32,
                    end: (at + len) as u32,
                    mask,
                    fields_at: at as u32,
                    x: None,
                    y: None,
                });
            }
        }
    }
    /// Out of line: most snapshot fields come as masked blocks, so the walk's hot loop stays
    /// small with this call in it.
    #[inline(never)]
    fn field(&mut self, field: &'static Field, at: usize, len: usize, value: Value<'_>) {
        let end = (at + len) as u32;
        if !self.active {
            // The entity count: everything before the list is the message's head.
            self.head = end;
            self.active = true;
            return;
        }
        match field.role {
            // Past the first masked block, blocks start with their masked fields' item.
            Role::EntityId if self.masked_blocks => return,
            Role::EntityId => {
                self.framing += len as u32;
                self.blocks.push(Block {
                    id: value.as_u64().map_or(0, |v| v as u32),
                    at: at as u32,
                    end,
                    mask: 0,
                    fields_at: 0,
                    x: None,
                    y: None,
                });
                return;
            }
            Role::UpdateMask => self.framing += len as u32,
            _ => match self.slot(field) {
                // A masked field's bytes come with its block: only its value is read here, when
                // it is in the block (one the walk could not read whole has none).
                Some((_, slot)) if slot.bit.is_some() => {
                    if let Some(block) = self.blocks.last_mut().filter(|b| (at as u32) < b.end) {
                        block.place(slot.kind, value);
                    }
                    return;
                }
                Some((s, slot)) => {
                    self.add(s, len as u32, 1);
                    if let Some(block) = self.blocks.last_mut() {
                        block.place(slot.kind, value);
                    }
                }
                None => self.unslotted += len as u32,
            },
        }
        if let Some(block) = self.blocks.last_mut() {
            block.end = block.end.max(end);
        }
    }
    fn open(&mut self, _: &'static Group, _: Open, _: usize) {}
    fn close(&mut self, _: Open) {}
    fn undecoded(&mut self, _: usize, _: &[u8]) {}
}

/// Field costs found on the worker threads, datagram after datagram: each one's
/// [`DatagramAhead`], its entity blocks, the bytes and presences of the mask bits it touched
/// (added up there), and those of the fields outside update masks (by field: each worker numbers
/// its slots its own way).
#[derive(Default)]
pub struct CostsAhead {
    datagrams: Vec<DatagramAhead>,
    blocks: Vec<Block>,
    bits: Vec<(u32, u32)>,
    fields: Vec<(&'static Field, u32, u32)>,
}

/// One datagram's costs found ahead, and where its blocks, bits and fields end in a
/// [`CostsAhead`]'s lists.
#[derive(Clone, Copy)]
struct DatagramAhead {
    head: u32,
    framing: u32,
    unslotted: u32,
    /// A masked block was read.
    masked_blocks: bool,
    /// The mask bits touched ([`FieldCosts::total`]).
    touched: u16,
    blocks_end: u32,
    bits_end: u32,
    fields_end: u32,
}

impl Renderings for CostsAhead {
    fn count(&self) -> usize {
        self.datagrams.len()
    }
    fn size(&self) -> usize {
        self.datagrams.len() * size_of::<DatagramAhead>()
            + self.blocks.len() * size_of::<Block>()
            + self.bits.len() * size_of::<(u32, u32)>()
            + self.fields.len() * size_of::<(&'static Field, u32, u32)>()
    }
    fn capacity(&self) -> usize {
        self.datagrams.capacity() * size_of::<DatagramAhead>()
            + self.blocks.capacity() * size_of::<Block>()
            + self.bits.capacity() * size_of::<(u32, u32)>()
            + self.fields.capacity() * size_of::<(&'static Field, u32, u32)>()
    }
    fn clear(&mut self) {
        self.datagrams.clear();
        self.blocks.clear();
        self.bits.clear();
        self.fields.clear();
    }
}

/// The costs are found on the workers; the positions the timelines sample are read in the ordered
/// stage, where the sampling is decided.
impl RenderAhead for FieldCosts {
    type Rendered = CostsAhead;

    fn ahead(&self) -> Option<Self> {
        // The workers walk with the run's layout: a conversation read with another is walked
        // again in the ordered stage. Slots are registered in the same order, so the layouts'
        // slots hold.
        let mut copy = FieldCosts::empty();
        copy.layouts.clone_from(&self.layouts);
        for slot in &self.slots {
            copy.register(slot.field, slot.bit);
        }
        Some(copy)
    }

    fn drain_rendered(&mut self, out: &mut CostsAhead) {
        out.blocks.extend_from_slice(&self.blocks);
        let touched = self.total();
        out.bits
            .extend(bit_indices(touched).map(|bit| self.bits[bit]));
        for &s in &self.touched {
            let (bytes, present) = self.cost(s);
            out.fields
                .push((self.slots[usize::from(s)].field, bytes, present));
        }
        out.datagrams.push(DatagramAhead {
            head: self.head,
            framing: self.framing,
            unslotted: self.unslotted,
            masked_blocks: self.masked_blocks,
            touched,
            blocks_end: out.blocks.len() as u32,
            bits_end: out.bits.len() as u32,
            fields_end: out.fields.len() as u32,
        });
        self.reset();
    }

    fn take_rendered(&mut self, all: &CostsAhead, index: usize) {
        let Some(&d) = all.datagrams.get(index) else {
            return;
        };
        let (blocks_start, bits_start, fields_start) =
            match index.checked_sub(1).map(|i| all.datagrams[i]) {
                Some(before) => (before.blocks_end, before.bits_end, before.fields_end),
                None => (0, 0, 0),
            };
        self.head = d.head;
        self.framing = d.framing;
        self.unslotted = d.unslotted;
        self.masked_blocks = d.masked_blocks;
        let blocks = all.blocks.get(blocks_start as usize..d.blocks_end as usize);
        self.blocks.extend_from_slice(blocks.unwrap_or_default());
        let bits = all.bits.get(bits_start as usize..d.bits_end as usize);
        for (bit, cost) in bit_indices(d.touched).zip(bits.unwrap_or_default()) {
            self.bits[bit] = *cost;
        }
        self.totalled = Some(d.touched);
        let fields = all.fields.get(fields_start as usize..d.fields_end as usize);
        for &(field, bytes, present) in fields.unwrap_or_default() {
            match self.slot(field) {
                Some((s, _)) => self.add(s, bytes, present),
                None => self.unslotted += bytes,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datagram::rtype;
    use crate::message::decode_message;
    use crate::proto::rtype as desc;

    fn walk(costs: &mut FieldCosts, payload: &[u8]) {
        let mut findings = Vec::new();
        decode_message(
            desc::message(desc::SNAPSHOT).unwrap(),
            payload,
            17,
            rtype::ENDIAN,
            &Profile::document(),
            &rtype::MESSAGE_RULES,
            costs,
            &mut findings,
        );
    }

    /// Two entities: the first with type, x and y (f32), the second with health only; then
    /// one with reserved bit 7, which leaves the rest undecoded.
    fn snapshot(reserved: bool) -> Vec<u8> {
        let mut payload = vec![0, if reserved { 3 } else { 2 }];
        payload.extend(7u32.to_be_bytes());
        payload.extend(0x0007u16.to_be_bytes());
        payload.push(3);
        payload.extend(1.5f32.to_be_bytes());
        payload.extend((-2.0f32).to_be_bytes());
        payload.extend(9u32.to_be_bytes());
        payload.extend(0x0020u16.to_be_bytes());
        payload.extend(77u16.to_be_bytes());
        if reserved {
            payload.extend(11u32.to_be_bytes());
            payload.extend(0x0082u16.to_be_bytes());
            payload.extend([1, 2, 3, 4, 5, 6]);
        }
        payload
    }

    fn bits(costs: &mut FieldCosts) -> Vec<(usize, (u32, u32))> {
        let touched = costs.total();
        (0..MASK_BITS)
            .filter(|b| touched & (1 << b) != 0)
            .map(|b| (b, costs.bit_cost(b)))
            .collect()
    }

    #[test]
    fn a_snapshot_is_its_head_framing_and_fields() {
        let payload = snapshot(false);
        let mut costs = FieldCosts::new(&[Profile::document()]);
        walk(&mut costs, &payload);
        assert_eq!((costs.head, costs.framing), (2, 12));
        // entity_type, pos_x, pos_y, health.
        assert_eq!(
            bits(&mut costs),
            [(0, (1, 1)), (1, (4, 1)), (2, (4, 1)), (5, (2, 1))]
        );
        let mut expected = [
            Block {
                id: 7,
                at: 2,
                end: 17,
                mask: 0x0007,
                fields_at: 8,
                x: None,
                y: None,
            },
            Block {
                id: 0,
                at: 17,
                end: 25,
                mask: 0x0020,
                fields_at: 23,
                x: None,
                y: None,
            },
        ];
        // The walk reads no position: they are read from the blocks when asked for.
        assert_eq!(costs.blocks, expected);
        costs.read_positions(&payload, rtype::ENDIAN);
        (expected[0].x, expected[0].y) = (Some(1.5), Some(-2.0));
        assert_eq!(costs.blocks, expected);
        assert_eq!(
            u64::from(costs.head) + costs.in_blocks(),
            payload.len() as u64
        );
        costs.reset();
        assert!(costs.blocks.is_empty() && bits(&mut costs).is_empty());
    }

    /// A position is read at its place in the block, after the fields of the bits before it,
    /// whichever bits are set; a block without the bit has none.
    #[test]
    fn positions_are_read_at_their_place_whatever_the_mask() {
        let mut payload = vec![0, 4];
        for (id, mask, fields) in [
            (1u32, 0x0006u16, vec![1.25f32, 2.5]), // pos_x, pos_y
            (2, 0x0004, vec![-3.0]),               // pos_y only
            (3, 0x0001, vec![]),                   // entity_type only
            (4, 0x0025, vec![8.75]),               // entity_type, pos_y, health
        ] {
            payload.extend(id.to_be_bytes());
            payload.extend(mask.to_be_bytes());
            if mask & 1 != 0 {
                payload.push(9);
            }
            for f in fields {
                payload.extend(f.to_be_bytes());
            }
            if mask & 0x20 != 0 {
                payload.extend(100u16.to_be_bytes());
            }
        }
        let mut costs = FieldCosts::new(&[Profile::document()]);
        walk(&mut costs, &payload);
        costs.read_positions(&payload, rtype::ENDIAN);
        let positions: Vec<_> = costs.blocks.iter().map(|b| (b.x, b.y)).collect();
        assert_eq!(
            positions,
            [
                (Some(1.25), Some(2.5)),
                (None, Some(-3.0)),
                (None, None),
                (None, Some(8.75)),
            ]
        );
    }

    /// Costs found on a worker's copy, several datagrams in a batch, are taken back in the
    /// ordered stage as they would be found there: blocks, head, framing and each bit's bytes.
    #[test]
    fn costs_found_ahead_are_taken_back_as_found_in_place() {
        let profile = Profile::document();
        let mut taken = FieldCosts::new(std::slice::from_ref(&profile));
        let mut worker = taken.ahead().unwrap();
        let mut batch = CostsAhead::default();
        let payloads = [snapshot(false), snapshot(true), snapshot(false)];
        for p in &payloads {
            worker.start_rendering(&mut batch);
            walk(&mut worker, p);
            worker.drain_rendered(&mut batch);
        }
        assert_eq!(batch.count(), 3);
        for (i, p) in payloads.iter().enumerate() {
            let mut here = FieldCosts::new(std::slice::from_ref(&profile));
            walk(&mut here, p);
            taken.reset();
            taken.take_rendered(&batch, i);
            assert_eq!(bits(&mut taken), bits(&mut here), "datagram {i}");
            // Positions too, when the timelines sample them.
            taken.read_positions(p, rtype::ENDIAN);
            here.read_positions(p, rtype::ENDIAN);
            assert_eq!(
                (taken.head, taken.framing, taken.unslotted, &taken.blocks),
                (here.head, here.framing, here.unslotted, &here.blocks)
            );
            assert_eq!(taken.blocks[0].x, Some(1.5));
            assert_eq!(taken.in_blocks(), here.in_blocks());
        }
    }

    #[test]
    fn a_block_the_walk_cannot_finish_is_undecoded() {
        let payload = snapshot(true);
        let mut costs = FieldCosts::new(&[Profile::document()]);
        walk(&mut costs, &payload);
        // The third entity, which the walk cannot read whole, is not counted: its 12 bytes are
        // undecoded (its id is the pipeline's to tell).
        assert_eq!((costs.head, costs.framing, costs.blocks.len()), (2, 12, 2));
        assert_eq!(bits(&mut costs).len(), 4);
        let counted = u64::from(costs.head) + costs.in_blocks();
        assert_eq!(payload.len() as u64 - counted, 12);
    }
}
