//! One life of an entity id in a conversation: from its spawn (or first update) to the spawn
//! that replaces it, with the last value of each of its fields and when that value came.

use crate::message::Value;
use crate::proto::schema::{Display, Field, Quantity};

/// A field's value as the world keeps it: numbers only (no entity field of the dialects the
/// world follows is text).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    U(u64),
    I(i64),
    F(f64),
}

impl Num {
    /// The number a decoded value holds, if it is one.
    pub fn of(value: Value<'_>) -> Option<Num> {
        match value {
            Value::U(n) => Some(Num::U(n)),
            Value::I(n) => Some(Num::I(n)),
            Value::F(f) => Some(Num::F(f)),
            Value::Str(_) | Value::Bytes(_) => None,
        }
    }

    /// As the reports' renderers take it.
    pub fn value(self) -> Value<'static> {
        match self {
            Num::U(n) => Value::U(n),
            Num::I(n) => Value::I(n),
            Num::F(f) => Value::F(f),
        }
    }

    /// Whether `other` is another value. Numbers of two kinds (a spawn's unsigned position, a
    /// snapshot's signed one) compare as numbers; floats by their bits, so that a NaN that
    /// stays a NaN is no change.
    fn differs(self, other: Num) -> bool {
        match (self, other) {
            (Num::U(a), Num::U(b)) => a != b,
            (Num::I(a), Num::I(b)) => a != b,
            (a, b) => a.as_f64().to_bits() != b.as_f64().to_bits(),
        }
    }

    /// As a float (the dataset's float columns).
    pub fn as_f64(self) -> f64 {
        match self {
            Num::U(n) => n as f64,
            Num::I(n) => n as f64,
            Num::F(f) => f,
        }
    }
}

impl Num {
    /// As a whole number (the dataset's integer columns; a float is truncated).
    pub fn as_i64(self) -> i64 {
        match self {
            Num::U(n) => i64::try_from(n).unwrap_or(i64::MAX),
            Num::I(n) => n,
            Num::F(f) => f as i64,
        }
    }
}

/// Where something happened: the frame, its capture time, and the header's tick (or
/// timestamp, in the rt dialect), when the datagram has one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stamp {
    pub frame: u64,
    pub ts_nanos: i64,
    pub tick: Option<u32>,
}

/// A field's last value, and when it last changed.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    /// The field that last set it (a spawn's or a snapshot's, for a quantity both carry).
    pub field: &'static Field,
    pub value: Num,
    pub changed: Stamp,
}

impl Slot {
    /// Whether a value of `field` goes in this slot: the same quantity, or the same field.
    fn holds(&self, field: &'static Field) -> bool {
        match field.quantity {
            Quantity::None => std::ptr::eq(self.field, field),
            q => self.field.quantity == q,
        }
    }
}

/// One life of an entity id.
#[derive(Debug)]
pub struct Life {
    pub id: u32,
    /// Its entity type, and the field that named it last.
    pub type_id: Option<u64>,
    type_field: Option<&'static Field>,
    /// Its spawn, or its first update when no spawn was seen.
    pub born: Stamp,
    pub spawned: bool,
    pub destroyed: Option<Stamp>,
    /// Its last spawn or update.
    pub last: Stamp,
    pub(super) slots: Vec<Slot>,
}

impl Life {
    pub(super) fn new(id: u32, born: Stamp, spawned: bool, slots: Vec<Slot>) -> Life {
        Life {
            id,
            type_id: None,
            type_field: None,
            born,
            spawned,
            destroyed: None,
            last: born,
            slots,
        }
    }

    /// Its fields' last values, in the order they first came.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// The slot of `quantity`.
    pub fn measured(&self, quantity: Quantity) -> Option<&Slot> {
        self.slots.iter().find(|s| s.field.quantity == quantity)
    }

    /// The name its type has: the conversation's LevelInit sprite for it (`sprite`), else the
    /// name the type field gives the value (the rt dialect's entity types).
    pub fn type_name<'a>(&self, sprite: impl Fn(u64) -> Option<&'a str>) -> Option<&'a str> {
        let t = self.type_id?;
        sprite(t).or_else(|| match self.type_field?.display {
            Display::Enum(names) => names
                .iter()
                .find(|n| u64::from(n.value) == t)
                .map(|n| n.name),
            _ => None,
        })
    }

    /// Takes a block's type and values at `at`; what changed goes to `changed` (the type, then
    /// the fields, as `(field, new value)`).
    pub(super) fn take(
        &mut self,
        type_id: Option<(u64, &'static Field)>,
        values: &[(&'static Field, Num)],
        at: Stamp,
        changed: &mut Vec<(&'static Field, Num)>,
    ) {
        if let Some((t, field)) = type_id {
            if self.type_id != Some(t) {
                self.type_id = Some(t);
                changed.push((field, Num::U(t)));
            }
            self.type_field = Some(field);
        }
        for &(field, value) in values {
            match self.slots.iter_mut().find(|s| s.holds(field)) {
                Some(slot) => {
                    slot.field = field;
                    if slot.value.differs(value) {
                        slot.value = value;
                        slot.changed = at;
                        changed.push((field, value));
                    }
                }
                None => {
                    self.slots.push(Slot {
                        field,
                        value,
                        changed: at,
                    });
                    changed.push((field, value));
                }
            }
        }
        self.last = at;
    }
}
