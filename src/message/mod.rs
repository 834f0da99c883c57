//! Message fields: decoding a payload by walking the protocol description.
//!
//! The walker reads each field once, checks lengths before every read, and hands values to a
//! [`Visitor`]; consumers that only count (the summary, `check`) pass [`NoFields`] and the
//! compiler removes the calls. Problems become [`Finding`]s, never panics.

mod walk;

pub use crate::proto::schema::MessageRules;
pub use walk::{
    choose_layout, decode_message, decode_message_as, decode_nodes, misreads, plain_number, Layout,
};

use crate::proto::schema::{Field, Group};

/// A decoded value, borrowed from the payload where it is text.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    U(u64),
    I(i64),
    F(f64),
    Str(&'a str),
    /// A string field whose bytes are not UTF-8.
    Bytes(&'a [u8]),
}

impl Value<'_> {
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U(v) => Some(v),
            Value::I(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }
}

/// How a group is entered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Open {
    /// The list of a repeat (JSON array); `count` items follow.
    List { count: u32 },
    /// One item of a repeat.
    Item { index: u32 },
    /// The chosen case of a switch (JSON object).
    Case,
}

/// Receives a message's structure as the decoder walks it.
pub trait Visitor {
    /// False for visitors that ignore fields, so decoding skips building values for them.
    const WANTS_FIELDS: bool = true;
    /// Whether the walker should build `field`'s value and call [`Visitor::field`] with it: every
    /// field when [`Visitor::WANTS_FIELDS`]; a visitor that only looks at some fields says which,
    /// so the walker skips the rest without building their values.
    #[inline]
    fn wants(&self, _field: &'static Field) -> bool {
        Self::WANTS_FIELDS
    }
    /// Whether the visitor takes an update mask's fields as one block (see [`Visitor::masked`]).
    const WANTS_MASKS: bool = false;
    /// The fields an update mask gates, when the walk reads them in one go (every set bit gates
    /// a plain number and all of them fit): the repeated item they belong to starts at `item`,
    /// and they are `mask` and the `len` bytes they take at `at`. Fields the visitor wants are
    /// still visited one by one after it; a block the walk has to read field by field (an
    /// unknown bit, a cut) gets no call, only those visits. For visitors that count bytes per
    /// field, this is one call per entity instead of one per field.
    #[inline]
    fn masked(&mut self, _item: usize, _mask: u16, _at: usize, _len: usize) {}
    /// Whether the visitor follows the entities a message names (see [`Visitor::entity`]).
    const WANTS_ENTITIES: bool = false;
    /// A field of role `EntityId`, at `at` in the payload, whether or not the visitor
    /// [`wants`](Visitor::wants) it: the walk reads entity ids anyway and hands them over as
    /// numbers, which costs a follower of entities nothing per field it does not want.
    #[inline]
    fn entity(&mut self, _id: u32, _at: usize) {}
    /// A field of role `EntityType` (a whole number; its entity's id came before it).
    #[inline]
    fn entity_type(&mut self, _type_id: u64, _at: usize) {}
    /// A field's value; `at` and `len` locate it in the payload.
    fn field(&mut self, field: &'static Field, at: usize, len: usize, value: Value<'_>);
    fn open(&mut self, group: &'static Group, how: Open, at: usize);
    fn close(&mut self, how: Open);
    /// Bytes the decoder could not interpret (after an unknown mask bit or event type).
    fn undecoded(&mut self, at: usize, bytes: &[u8]);
}

/// A visitor for consumers that only need the findings and facts.
#[derive(Debug, Default)]
pub struct NoFields;

impl Visitor for NoFields {
    const WANTS_FIELDS: bool = false;
    #[inline]
    fn field(&mut self, _: &'static Field, _: usize, _: usize, _: Value<'_>) {}
    #[inline]
    fn open(&mut self, _: &'static Group, _: Open, _: usize) {}
    #[inline]
    fn close(&mut self, _: Open) {}
    #[inline]
    fn undecoded(&mut self, _: usize, _: &[u8]) {}
}

/// Facts the session layer reads from a message, collected by field role while decoding.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Facts {
    pub player_id: Option<u32>,
    pub client_time: Option<u32>,
    pub ack_sequence: Option<u16>,
    pub ack_msg_type: Option<u8>,
    pub reason: Option<u8>,
    pub total_chunks: Option<u16>,
    pub chunk_index: Option<u16>,
    pub entity_count: Option<u16>,
    /// Offset in the payload where the entity blocks start.
    pub entities_at: Option<usize>,
    pub event_type: Option<u8>,
    /// The entity, and the type of the one component, that a message adds or removes (rt).
    pub component: Option<(u32, u8)>,
    /// The variant of the message the payload was decoded as (an index into its variants), when
    /// not the document's layout.
    pub variant: Option<u8>,
}

/// Passes a message's structure on to `inner` while `on_field` also sees the fields `watch`
/// selects: how the pipeline reads a field on its way to a report (rt's acknowledged sequence)
/// without a forwarding visitor of its own. Entities have their own calls ([`Visitor::entity`]).
pub struct Tap<'a, V, W, F> {
    inner: &'a mut V,
    watch: W,
    on_field: F,
}

impl<'a, V, W, F> Tap<'a, V, W, F>
where
    V: Visitor,
    W: Fn(&'static Field) -> bool,
    F: FnMut(&'static Field, usize, Value<'_>),
{
    pub fn new(inner: &'a mut V, watch: W, on_field: F) -> Self {
        Tap {
            inner,
            watch,
            on_field,
        }
    }
}

impl<V, W, F> Visitor for Tap<'_, V, W, F>
where
    V: Visitor,
    W: Fn(&'static Field) -> bool,
    F: FnMut(&'static Field, usize, Value<'_>),
{
    const WANTS_FIELDS: bool = V::WANTS_FIELDS;
    const WANTS_MASKS: bool = V::WANTS_MASKS;
    #[inline]
    fn wants(&self, field: &'static Field) -> bool {
        self.inner.wants(field) || (self.watch)(field)
    }
    #[inline]
    fn masked(&mut self, item: usize, mask: u16, at: usize, len: usize) {
        self.inner.masked(item, mask, at, len);
    }
    #[inline(always)]
    fn field(&mut self, field: &'static Field, at: usize, len: usize, value: Value<'_>) {
        // A field the tap does not watch came because the inner visitor wants it.
        let watched = (self.watch)(field);
        if watched {
            (self.on_field)(field, at, value);
        }
        if !watched || self.inner.wants(field) {
            self.inner.field(field, at, len, value);
        }
    }
    fn open(&mut self, group: &'static Group, how: Open, at: usize) {
        if V::WANTS_FIELDS {
            self.inner.open(group, how, at);
        }
    }
    fn close(&mut self, how: Open) {
        if V::WANTS_FIELDS {
            self.inner.close(how);
        }
    }
    fn undecoded(&mut self, at: usize, bytes: &[u8]) {
        if V::WANTS_FIELDS {
            self.inner.undecoded(at, bytes);
        }
    }
}
