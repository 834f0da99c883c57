//! The `entity_states` table: each entity's state after each change, as the world rebuilds it
//! from the wire ([`crate::world`]): one row per spawn, update and destroy the world reports
//! (the events of `rtype-inspect entity`), with every field of the life's state in a column of
//! its own ([`StateColumns`]; null until a message gives it) and the columns the change set.
//!
//! The world takes every datagram (a filter chooses the rows, not the state). Its memory is
//! bounded ([`crate::world::MAX_HELD`]), and so is the count of lives per id the rows number
//! their life by ([`MAX_COUNTED`] ids; past it, a new id's rows have no life number).

use super::columns::Kind;
use super::micros;
use super::record::Recorder;
use super::writer::TableWriter;
use crate::proto::schema::Role;
use crate::session::entities::IdMap;
use crate::session::event::DatagramEvent;
use crate::world::{StateColumns, World};

/// The table's name.
pub const TABLE: &str = "entity_states";

/// What the table holds.
pub const ABOUT: &str = "One row per change of an entity as the client rebuilt it from the wire (the events of `rtype-inspect entity`: each spawn, update and destroy, rtype and rt): the entity's state after it, one column per field of the life (its quantities, then the other fields of the description's entity blocks, by name; null until a message gave it), and the columns it changed.";

/// The key columns, before the state's.
pub const KEYS: &[(&str, Kind, &str)] = &[
    ("frame", Kind::I64, "the frame of the datagram that changed the entity"),
    ("time", Kind::Timestamp, "its capture time"),
    ("conversation", Kind::U32, "its conversation (`conversations.id`)"),
    ("tick", Kind::U32, "its header's tick (rtype) or timestamp (rt)"),
    ("message", Kind::Str, "its message (`datagrams.name`)"),
    ("entity", Kind::U32, "the entity id"),
    ("life", Kind::U32, "which life of the id in its conversation, from 1 (a spawn, or an update no spawn announced, starts the next), as `rtype-inspect entity` numbers them"),
    ("event", Kind::Str, "`spawn`, `update`, `destroy`, or what departs from a life's course (`spawn-over-live`, `update-after-destroy`, `update-unspawned`, `destroy-again`, `destroy-unknown`), as `rtype-inspect entity` names them"),
    ("entity_type", Kind::U32, "the life's entity type (null until a message gives it)"),
    ("type_name", Kind::Str, "its name: the sprite of its archetype in the conversation's LevelInit, or the type field's value name (rt)"),
    ("changed", Kind::Str, "the columns the change set to a new value, comma-separated in the order the message gave them (`entity_type` when the type changed); empty when nothing changed (a destroy, a repeated update)"),
];

const FRAME: usize = 0;
const TIME: usize = 1;
const CONVERSATION: usize = 2;
const TICK: usize = 3;
const MESSAGE: usize = 4;
const ENTITY: usize = 5;
const LIFE: usize = 6;
const EVENT: usize = 7;
const ENTITY_TYPE: usize = 8;
const TYPE_NAME: usize = 9;
const CHANGED: usize = 10;

/// Ids whose lives are counted, over all conversations.
pub const MAX_COUNTED: usize = 1 << 20;

/// The world, and what the rows need besides it.
pub struct States {
    world: World,
    columns: StateColumns,
    /// The state columns' names in the table.
    names: Vec<String>,
    /// Lives per (conversation, id).
    lives: IdMap<u64, u32>,
    /// The changed column of a row (reused).
    changed: String,
}

impl States {
    /// The rows of `columns`, named `names` in the table.
    pub fn new(columns: StateColumns, names: Vec<String>) -> States {
        States {
            world: World::new(None),
            columns,
            names,
            lives: IdMap::default(),
            changed: String::new(),
        }
    }

    /// Applies datagram `e`, whose walk `fields` noted; each change is a row of `table`, when
    /// the datagram has rows.
    pub fn apply(
        &mut self,
        e: &DatagramEvent<'_>,
        fields: &Recorder,
        mut table: Option<&mut TableWriter>,
    ) {
        self.world.begin();
        fields.replay(self.world.fields());
        let (columns, names) = (&self.columns, &self.names);
        let (lives, changed) = (&mut self.lives, &mut self.changed);
        self.world.apply(e, |c| {
            let key = u64::from(c.conversation) << 32 | u64::from(c.id);
            let counted = lives.len() < MAX_COUNTED || lives.contains_key(&key);
            let life = if c.happened.starts_life() && counted {
                let n = lives.entry(key).or_default();
                *n += 1;
                Some(*n)
            } else {
                lives.get(&key).copied()
            };
            let Some(t) = table.as_deref_mut() else {
                return;
            };
            let row = t.new_row();
            t.col(FRAME).set_int(row, c.at.frame as i64);
            t.col(TIME).set_int(row, micros(c.at.ts_nanos));
            t.col(CONVERSATION).set_int(row, c.conversation.into());
            if let Some(tick) = c.at.tick {
                t.col(TICK).set_int(row, tick.into());
            }
            t.col(MESSAGE).set_str(row, e.name);
            t.col(ENTITY).set_int(row, c.id.into());
            if let Some(n) = life {
                t.col(LIFE).set_int(row, n.into());
            }
            t.col(EVENT).set_str(row, c.happened.name());
            changed.clear();
            for (f, _) in c.changed {
                let name = match (f.role, columns.column_of(f)) {
                    (Role::EntityType, _) => KEYS[ENTITY_TYPE].0,
                    (_, Some(k)) => &names[k],
                    (_, None) => continue,
                };
                if !changed.split(',').any(|n| n == name) {
                    if !changed.is_empty() {
                        changed.push(',');
                    }
                    changed.push_str(name);
                }
            }
            t.col(CHANGED).set_str(row, changed);
            let Some(l) = c.life else {
                return;
            };
            if let Some(type_id) = l.type_id {
                t.col(ENTITY_TYPE).set_int(row, type_id as i64);
            }
            if let Some(name) = l.type_name(|id| c.archetypes.sprite(id)) {
                t.col(TYPE_NAME).set_str(row, name);
            }
            for (k, value) in columns.values(l.slots()) {
                let col = t.col(KEYS.len() + k);
                if columns.columns[k].float {
                    col.set_float(row, value.as_f64());
                } else {
                    col.set_int(row, value.as_i64());
                }
            }
        });
    }
}
