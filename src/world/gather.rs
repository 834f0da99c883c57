//! The fields visitor of the world's reports: it collects, from one datagram's walk, the blocks
//! of fields each named entity carries and LevelInit's archetypes, for [`World::apply`] to
//! apply once the datagram's event says what the message does to each entity.
//!
//! Its buffers are reused from one datagram to the next: steady traffic allocates nothing.
//!
//! [`World::apply`]: super::World::apply

use crate::message::{Open, Value, Visitor};
use crate::pipeline::RenderAhead;
use crate::proto::rtnp;
use crate::proto::schema::{Field, Group, Quantity, Role};
use crate::session::event::EntityRef;
use crate::session::Archetypes;

use super::life::Num;

/// The fields one entity id of a message carries, in [`Gather::values`].
#[derive(Clone, Copy, Debug)]
pub(super) struct Block {
    pub id: u32,
    /// How many entity ids the message named before this one: its place in the datagram
    /// event's entities.
    pub ordinal: u32,
    /// The entity type the block names, and its field (whose enum may name it).
    pub type_id: Option<(u64, &'static Field)>,
    /// Its values: `values[first..end]`.
    pub first: u32,
    pub end: u32,
    /// The group depth its id was read at: closing below it ends the block.
    depth: u32,
}

/// Collects a datagram's entity blocks (see the module's documentation).
#[derive(Debug, Default)]
pub struct Gather {
    /// Only this entity's blocks are kept, when set.
    pub(super) follow: Option<u32>,
    pub(super) blocks: Vec<Block>,
    pub(super) values: Vec<(&'static Field, Num)>,
    /// Entity ids named so far.
    named: u32,
    /// Whether the last block is kept and still takes fields.
    open: bool,
    depth: u32,
    /// LevelInit's archetypes, when the datagram carried them.
    pub(super) archetypes: Option<Archetypes>,
    /// A buffer for the next LevelInit's archetypes, kept from the last one.
    spare: Archetypes,
}

impl Gather {
    /// Starts over, for the next datagram's walk.
    pub(super) fn clear(&mut self) {
        self.blocks.clear();
        self.values.clear();
        self.named = 0;
        self.open = false;
        self.depth = 0;
        if let Some(mut a) = self.archetypes.take() {
            a.clear();
            self.spare = a;
        }
    }

    /// Gathers an rtnp snapshot's entities from its JSON (which no walk visits): each entity
    /// with an id (`networkId`, or `id` as real servers send it) is a block, with the values
    /// [`rtnp::ENTITY_VALUES`] finds, then each id of its `destroyed` list, in the order the
    /// datagram's event names them.
    pub(super) fn json_entities(&mut self, json: &serde_json::Value) {
        let entities = json.get("entities").and_then(serde_json::Value::as_array);
        for entity in entities.into_iter().flatten() {
            let id = entity.get("networkId").or_else(|| entity.get("id"));
            let Some(id) = id
                .and_then(serde_json::Value::as_u64)
                .and_then(|i| u32::try_from(i).ok())
            else {
                continue;
            };
            if !self.name(id, 0) {
                continue;
            }
            for (paths, field) in &rtnp::ENTITY_VALUES {
                let found = paths.iter().find_map(|path| {
                    path.iter()
                        .try_fold(entity, |v, key| v.get(key))
                        .and_then(serde_json::Value::as_f64)
                });
                if let Some(v) = found {
                    let num = match field.quantity {
                        Quantity::Health => Num::I(v as i64),
                        _ => Num::F(v),
                    };
                    self.values.push((field, num));
                }
            }
            if let Some(block) = self.blocks.last_mut() {
                block.end = self.values.len() as u32;
            }
        }
        // Then the ids it destroys, as the event names them after the entities.
        let destroyed = json.get("destroyed").and_then(serde_json::Value::as_array);
        for id in destroyed.into_iter().flatten() {
            let Some(id) = id.as_u64().and_then(|i| u32::try_from(i).ok()) else {
                continue;
            };
            self.name(id, 0);
        }
    }

    /// Entity `id` named (at group depth `depth`): it takes the datagram's next ordinal, and an
    /// empty block when it is followed; returns whether it is.
    fn name(&mut self, id: u32, depth: u32) -> bool {
        let ordinal = self.named;
        self.named = self.named.saturating_add(1);
        let followed = self.follow.is_none_or(|f| f == id);
        if followed {
            let at = self.values.len() as u32;
            self.blocks.push(Block {
                id,
                ordinal,
                type_id: None,
                first: at,
                end: at,
                depth,
            });
        }
        followed
    }

    /// Each block with the entity the datagram's event names at its place (`entities`, in
    /// payload order), when they agree on the id.
    pub(super) fn named<'a>(
        &'a self,
        entities: &'a [EntityRef],
    ) -> impl Iterator<Item = (&'a Block, &'a EntityRef)> {
        self.blocks.iter().filter_map(|block| {
            let r = entities.get(block.ordinal as usize)?;
            (block.id == r.id).then_some((block, r))
        })
    }

    /// The values of `block`.
    pub(super) fn values_of(&self, block: &Block) -> &[(&'static Field, Num)] {
        self.values
            .get(block.first as usize..block.end as usize)
            .unwrap_or_default()
    }
}

impl Visitor for Gather {
    #[inline]
    fn field(&mut self, field: &'static Field, _at: usize, _len: usize, value: Value<'_>) {
        match field.role {
            Role::EntityId => {
                let id = value.as_u64().map_or(0, |v| v as u32);
                self.open = self.name(id, self.depth);
            }
            Role::EntityType if self.open => {
                if let (Some(t), Some(block)) = (value.as_u64(), self.blocks.last_mut()) {
                    block.type_id = Some((t, field));
                }
            }
            Role::None if self.open => {
                let Some(num) = Num::of(value) else {
                    return;
                };
                self.values.push((field, num));
                if let Some(block) = self.blocks.last_mut() {
                    block.end = self.values.len() as u32;
                }
            }
            Role::ArchetypeTypeId => {
                let spare = &mut self.spare;
                let staged = self.archetypes.get_or_insert_with(|| std::mem::take(spare));
                staged.push(value.as_u64().map_or(0, |v| v as u16));
            }
            Role::ArchetypeSpriteId => {
                if let (Some(staged), Value::Str(s)) = (&mut self.archetypes, value) {
                    staged.name_last(s);
                }
            }
            _ => {}
        }
    }

    #[inline]
    fn open(&mut self, _group: &'static Group, _how: Open, _at: usize) {
        self.depth = self.depth.saturating_add(1);
    }

    #[inline]
    fn close(&mut self, _how: Open) {
        self.depth = self.depth.saturating_sub(1);
        if self.open && self.blocks.last().is_some_and(|b| self.depth < b.depth) {
            self.open = false;
        }
    }

    fn undecoded(&mut self, _at: usize, _bytes: &[u8]) {}
}

/// Walked on the ordered stage: the world's state needs the datagrams in order.
impl RenderAhead for Gather {
    type Rendered = ();
}
