//! The visitor that collects the entities and entity types a message names while passing its
//! structure on to the sink's fields.

use crate::message::{Open, Value, Visitor};
use crate::proto::schema::{Field, Group};
use crate::session::event::{EntityEvent, EntityRef};
use crate::session::TypeSet;

/// Passes a message's structure on to `inner` and collects the entities it names: an id starts
/// an [`EntityRef`] (located `at` + its offset in the datagram), the entity type that follows
/// gives it its type and goes to `types` too.
pub(super) struct Named<'a, V> {
    pub(super) inner: &'a mut V,
    pub(super) at: usize,
    /// Where the entities go, after those of other messages (a worker's batch).
    pub(super) entities: &'a mut Vec<EntityRef>,
    /// Where this message's entities start in `entities`.
    pub(super) first: usize,
    pub(super) types: Types<'a>,
}

/// Where the entity types a message names go, for the check against LevelInit's archetypes.
pub(super) enum Types<'a> {
    /// Not checked (the rt dialect has no archetypes).
    Unchecked,
    /// Listed with where they are, for the findings of those LevelInit did not declare.
    Listed(&'a mut Vec<EntityTypeAt>),
    /// Listed, and gathered as a set, on a worker, which knows no archetypes: a set the
    /// conversation's archetypes cover needs no look at the list.
    Gathered(&'a mut Vec<EntityTypeAt>, &'a mut TypeSet),
}

/// An entity type a message names, and where (its byte offset in the datagram).
pub(super) type EntityTypeAt = (u64, u32);

impl<V: Visitor> Visitor for Named<'_, V> {
    const WANTS_FIELDS: bool = V::WANTS_FIELDS;
    const WANTS_MASKS: bool = V::WANTS_MASKS;
    const WANTS_ENTITIES: bool = true;
    #[inline]
    fn wants(&self, field: &'static Field) -> bool {
        self.inner.wants(field)
    }
    #[inline]
    fn masked(&mut self, item: usize, mask: u16, at: usize, len: usize) {
        self.inner.masked(item, mask, at, len);
    }
    #[inline]
    fn entity(&mut self, id: u32, at: usize) {
        self.entities.push(EntityRef {
            id,
            event: EntityEvent::Update,
            type_id: None,
            at: (self.at + at) as u32,
        });
    }
    #[inline]
    fn entity_type(&mut self, type_id: u64, at: usize) {
        let named = self.entities.len();
        if named > self.first {
            self.entities[named - 1].type_id = Some(type_id as u16);
        }
        match &mut self.types {
            Types::Unchecked => {}
            Types::Listed(list) => list.push((type_id, (self.at + at) as u32)),
            Types::Gathered(list, set) => {
                list.push((type_id, (self.at + at) as u32));
                set.insert(type_id);
            }
        }
    }
    #[inline]
    fn field(&mut self, field: &'static Field, at: usize, len: usize, value: Value<'_>) {
        self.inner.field(field, at, len, value);
    }
    #[inline]
    fn open(&mut self, group: &'static Group, how: Open, at: usize) {
        self.inner.open(group, how, at);
    }
    #[inline]
    fn close(&mut self, how: Open) {
        self.inner.close(how);
    }
    #[inline]
    fn undecoded(&mut self, at: usize, bytes: &[u8]) {
        self.inner.undecoded(at, bytes);
    }
}
