//! What each field of a snapshot costs: the visitor the walker hands every field to, with its
//! offset and length, noting per datagram the bytes before the entity list, each entity's block
//! (its framing, its type, where it starts and ends) and the bytes of each field. Nothing is
//! allocated per datagram once the buffers have grown to the largest snapshot.

use crate::message::{Open, Value, Visitor};
use crate::pipeline::RenderAhead;
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
    EntityType,
    /// The position fields the entity timelines plot.
    X,
    Y,
}

/// One entity block of the datagram.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Block {
    pub id: u32,
    /// Where its id starts, and where its last field ends, in the payload.
    pub at: u32,
    pub end: u32,
    pub x: Option<f64>,
    pub y: Option<f64>,
}

/// The fields of one snapshot, as the walker visits them.
pub struct FieldCosts {
    /// The fields met so far, by slot.
    fields: Vec<(&'static Field, Kind)>,
    cache: Box<[(usize, u16); CACHE]>,
    slots: IdMap<usize, u16>,
    /// An entity count was read: the entity list started.
    active: bool,
    /// Bytes of the fields before the entity list, the count included.
    pub head: u32,
    /// Bytes of the entities' ids and update masks.
    pub framing: u32,
    pub blocks: Vec<Block>,
    /// Per slot: bytes and presences in this datagram; the slots touched.
    bytes: Vec<u32>,
    present: Vec<u32>,
    pub touched: Vec<u16>,
    /// Fields past [`MAX_SLOTS`]' bytes.
    pub unslotted: u32,
}

impl Default for FieldCosts {
    fn default() -> Self {
        FieldCosts {
            fields: Vec::new(),
            cache: Box::new([(0, 0); CACHE]),
            slots: IdMap::default(),
            active: false,
            head: 0,
            framing: 0,
            blocks: Vec::new(),
            bytes: Vec::new(),
            present: Vec::new(),
            touched: Vec::new(),
            unslotted: 0,
        }
    }
}

impl FieldCosts {
    /// Forgets the last datagram's fields.
    pub fn reset(&mut self) {
        for slot in self.touched.drain(..) {
            self.bytes[usize::from(slot)] = 0;
            self.present[usize::from(slot)] = 0;
        }
        self.active = false;
        self.head = 0;
        self.framing = 0;
        self.unslotted = 0;
        self.blocks.clear();
    }

    /// The field in a slot.
    pub fn field(&self, slot: u16) -> &'static Field {
        self.fields[usize::from(slot)].0
    }

    /// Bytes and presences of a touched slot in this datagram.
    pub fn cost(&self, slot: u16) -> (u32, u32) {
        (
            self.bytes[usize::from(slot)],
            self.present[usize::from(slot)],
        )
    }

    /// The bytes of the fields visited inside the entity list.
    pub fn in_blocks(&self) -> u64 {
        let fields: u64 = self
            .touched
            .iter()
            .map(|s| u64::from(self.cost(*s).0))
            .sum();
        fields + u64::from(self.framing) + u64::from(self.unslotted)
    }

    /// The slot of a field, registered the first time it is met.
    fn slot(&mut self, field: &'static Field) -> Option<(u16, Kind)> {
        let key = field as *const Field as usize;
        let line = (key >> 3) % CACHE;
        let (cached, slot) = self.cache[line];
        if cached == key {
            return Some((slot, self.fields[usize::from(slot)].1));
        }
        let slot = match self.slots.get(&key) {
            Some(slot) => *slot,
            None if self.fields.len() < MAX_SLOTS => {
                let slot = self.fields.len() as u16;
                let kind = match (field.role, field.name) {
                    (Role::EntityType, _) => Kind::EntityType,
                    (_, "pos_x") => Kind::X,
                    (_, "pos_y") => Kind::Y,
                    _ => Kind::Plain,
                };
                self.fields.push((field, kind));
                self.bytes.push(0);
                self.present.push(0);
                self.slots.insert(key, slot);
                slot
            }
            None => return None,
        };
        self.cache[line] = (key, slot);
        Some((slot, self.fields[usize::from(slot)].1))
    }
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
    #[inline]
    fn wants(&self, _: &'static Field) -> bool {
        true
    }
    fn field(&mut self, field: &'static Field, at: usize, len: usize, value: Value<'_>) {
        let end = (at + len) as u32;
        if !self.active {
            self.head += len as u32;
            self.active = field.role == Role::EntityCount;
            return;
        }
        match field.role {
            Role::EntityId => {
                self.framing += len as u32;
                self.blocks.push(Block {
                    id: value.as_u64().map_or(0, |v| v as u32),
                    at: at as u32,
                    end,
                    x: None,
                    y: None,
                });
                return;
            }
            Role::UpdateMask => self.framing += len as u32,
            _ => match self.slot(field) {
                Some((slot, kind)) => {
                    let s = usize::from(slot);
                    if self.present[s] == 0 {
                        self.touched.push(slot);
                    }
                    self.bytes[s] += len as u32;
                    self.present[s] += 1;
                    if let Some(block) = self.blocks.last_mut() {
                        match kind {
                            Kind::X => block.x = number(value),
                            Kind::Y => block.y = number(value),
                            _ => {}
                        }
                    }
                }
                None => self.unslotted += len as u32,
            },
        }
        if let Some(block) = self.blocks.last_mut() {
            block.end = end;
        }
    }
    fn open(&mut self, _: &'static Group, _: Open, _: usize) {}
    fn close(&mut self, _: Open) {}
    fn undecoded(&mut self, _: usize, _: &[u8]) {}
}

impl RenderAhead for FieldCosts {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datagram::rtype;
    use crate::message::decode_message;
    use crate::proto::profile::Profile;
    use crate::proto::rtype as desc;

    #[test]
    fn a_snapshot_is_its_head_framing_and_fields() {
        // Two entities: the first with type, x and y (f32), the second with health only.
        let mut payload = vec![0, 2];
        payload.extend(7u32.to_be_bytes());
        payload.extend(0x0007u16.to_be_bytes());
        payload.push(3);
        payload.extend(1.5f32.to_be_bytes());
        payload.extend((-2.0f32).to_be_bytes());
        payload.extend(9u32.to_be_bytes());
        payload.extend(0x0020u16.to_be_bytes());
        payload.extend(77u16.to_be_bytes());
        let mut costs = FieldCosts::default();
        let mut findings = Vec::new();
        decode_message(
            desc::message(desc::SNAPSHOT).unwrap(),
            &payload,
            17,
            rtype::ENDIAN,
            &Profile::document(),
            &rtype::MESSAGE_RULES,
            &mut costs,
            &mut findings,
        );
        assert!(findings.is_empty(), "{findings:?}");
        assert_eq!((costs.head, costs.framing), (2, 12));
        let fields: Vec<(&str, u32, u32)> = costs
            .touched
            .iter()
            .map(|s| {
                let (bytes, present) = costs.cost(*s);
                (costs.field(*s).name, bytes, present)
            })
            .collect();
        assert_eq!(
            fields,
            [
                ("entity_type", 1, 1),
                ("pos_x", 4, 1),
                ("pos_y", 4, 1),
                ("health", 2, 1)
            ]
        );
        assert_eq!(
            costs.blocks,
            [
                Block {
                    id: 7,
                    at: 2,
                    end: 17,
                    x: Some(1.5),
                    y: Some(-2.0)
                },
                Block {
                    id: 9,
                    at: 17,
                    end: 25,
                    x: None,
                    y: None
                }
            ]
        );
        assert_eq!(
            u64::from(costs.head) + costs.in_blocks(),
            payload.len() as u64
        );
        costs.reset();
        assert!(costs.touched.is_empty() && costs.blocks.is_empty());
        assert_eq!(costs.cost(0), (0, 0));
    }
}
