//! A datagram's fields on their way to the tables: the sink's visitor notes the walk as it goes
//! (groups, fields, undecoded bytes, text copied once into a buffer reused across datagrams),
//! and once the datagram's event says which message it was, the notes are placed in rows by
//! that message's route. The walk is the pipeline's; nothing walks the message again.

use std::ops::Range;

use super::tables::{Route, Routes, Target};
use super::writer::TableWriter;
use crate::message::{Open, Value, Visitor};
use crate::pipeline::{RenderAhead, HEADER_GROUP};
use crate::proto::registry::Scope;
use crate::proto::schema::{Field, Group, Role};
use crate::proto::trie::{DEAD, ROOT};
use crate::report::fields::Sprites;
use crate::session::entities::Resolved;
use crate::session::event::EntityRef;

/// A value as noted: text and bytes are ranges of [`Recorder::text`].
#[derive(Clone, Copy, Debug)]
enum Noted {
    U(u64),
    I(i64),
    F(f64),
    Str(u32, u32),
    Bytes(u32, u32),
}

#[derive(Clone, Copy, Debug)]
enum Step {
    Open(&'static Group, Open),
    Close(Open),
    Field(&'static Field, Noted),
    Undecoded(u32, u32, u32),
}

/// The sink's fields visitor: one datagram's walk, noted.
#[derive(Debug, Default)]
pub struct Recorder {
    steps: Vec<Step>,
    text: Vec<u8>,
    /// Open groups while placing (reused).
    stack: Vec<Open3>,
}

/// An open group while placing: its trie node, and the table and row its fields go to.
#[derive(Clone, Copy, Debug)]
struct Open3 {
    node: usize,
    table: usize,
    row: u32,
    /// Of an item: the entity id its fields named, and whether they named its type.
    entity: Option<u32>,
    typed: bool,
}

/// The entity types the session analysis resolved for a datagram's entities (the message's,
/// else the one the entity's life last had), for the entity rows whose block left its type out:
/// delta masks rarely set bit 0, and a row without its entity's type counts for no type.
pub struct Carried<'a> {
    /// The entity rows' table, and where their type goes.
    pub target: Option<Target>,
    /// The datagram's entities, and what each resolved to (one per entity, or none).
    pub refs: &'a [EntityRef],
    pub resolved: &'a [Resolved],
}

impl Carried<'_> {
    /// The resolved type of entity `id`, the next of the datagram's entities from `cursor` on.
    fn type_of(&self, id: u32, cursor: &mut usize) -> Option<u16> {
        if self.refs.len() != self.resolved.len() {
            return None;
        }
        let k = *cursor + self.refs.get(*cursor..)?.iter().position(|r| r.id == id)?;
        *cursor = k + 1;
        self.resolved[k].type_id
    }
}

impl Recorder {
    /// Starts a new datagram.
    pub fn clear(&mut self) {
        self.steps.clear();
        self.text.clear();
    }

    fn note(&mut self, bytes: &[u8]) -> (u32, u32) {
        let start = self.text.len() as u32;
        self.text.extend_from_slice(bytes);
        (start, self.text.len() as u32)
    }

    /// Walks the noted datagram into `v` (with no offsets), for a second consumer of the walk.
    pub fn replay(&self, v: &mut impl Visitor) {
        for step in &self.steps {
            match *step {
                Step::Open(group, how) => v.open(group, how, 0),
                Step::Close(how) => v.close(how),
                Step::Field(field, noted) => v.field(field, 0, 0, self.value(noted)),
                Step::Undecoded(at, a, b) => {
                    v.undecoded(at as usize, &self.text[a as usize..b as usize]);
                }
            }
        }
    }

    fn value(&self, noted: Noted) -> Value<'_> {
        let text = |r: Range<u32>| &self.text[r.start as usize..r.end as usize];
        match noted {
            Noted::U(n) => Value::U(n),
            Noted::I(n) => Value::I(n),
            Noted::F(f) => Value::F(f),
            // Noted from a `&str`.
            Noted::Str(a, b) => Value::Str(std::str::from_utf8(text(a..b)).unwrap_or_default()),
            Noted::Bytes(a, b) => Value::Bytes(text(a..b)),
        }
    }
}

impl Visitor for Recorder {
    fn field(&mut self, field: &'static Field, _at: usize, _len: usize, value: Value<'_>) {
        let noted = match value {
            Value::U(n) => Noted::U(n),
            Value::I(n) => Noted::I(n),
            Value::F(f) => Noted::F(f),
            Value::Str(s) => {
                let (a, b) = self.note(s.as_bytes());
                Noted::Str(a, b)
            }
            Value::Bytes(bytes) => {
                let (a, b) = self.note(bytes);
                Noted::Bytes(a, b)
            }
        };
        self.steps.push(Step::Field(field, noted));
    }

    fn open(&mut self, group: &'static Group, how: Open, _at: usize) {
        self.steps.push(Step::Open(group, how));
    }

    fn close(&mut self, how: Open) {
        self.steps.push(Step::Close(how));
    }

    fn undecoded(&mut self, at: usize, bytes: &[u8]) {
        let (a, b) = self.note(bytes);
        self.steps.push(Step::Undecoded(at as u32, a, b));
    }
}

impl RenderAhead for Recorder {
    type Rendered = ();
}

/// Where the rows of a datagram's walk are: what its items' key columns say.
pub struct Place<'a> {
    pub frame: i64,
    pub time_us: i64,
    pub conversation: u32,
    /// The message carrying the items.
    pub message: &'a str,
}

/// A scope of the walk and the row its own fields go to.
#[derive(Clone, Copy)]
pub struct ScopeRow {
    /// `None` for a message the description does not have (only undecoded bytes can follow).
    pub scope: Option<Scope>,
    pub table: usize,
    pub row: u32,
}

impl Recorder {
    /// Places the noted walk in rows: the header's fields in `header`'s row, the message's in
    /// `body`'s, each repeated item in a new row of its table, an entity row without its type
    /// given the one `carried` resolved.
    #[allow(clippy::too_many_arguments)]
    pub fn place(
        &mut self,
        routes: &Routes,
        header: Option<ScopeRow>,
        body: ScopeRow,
        place: &Place<'_>,
        tables: &mut [TableWriter],
        sprites: &Sprites,
        carried: &Carried<'_>,
    ) {
        let mut cursor = 0;
        let body_route = body.scope.and_then(|s| routes.get(s));
        let mut route = body_route;
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        stack.push(Open3 {
            node: ROOT,
            table: body.table,
            row: body.row,
            entity: None,
            typed: false,
        });
        let mut in_header = false;
        for i in 0..self.steps.len() {
            let top = *stack.last().unwrap_or(&Open3 {
                node: DEAD,
                table: body.table,
                row: body.row,
                entity: None,
                typed: false,
            });
            match self.steps[i] {
                Step::Open(group, _) if std::ptr::eq(group, &HEADER_GROUP) => {
                    let (table, row) = header.map_or((body.table, body.row), |h| (h.table, h.row));
                    route = header.and_then(|h| h.scope).and_then(|s| routes.get(s));
                    in_header = true;
                    stack.push(Open3 {
                        node: ROOT,
                        table,
                        row,
                        entity: None,
                        typed: false,
                    });
                }
                Step::Open(group, Open::List { .. } | Open::Case) => stack.push(Open3 {
                    node: route.map_or(DEAD, |r| r.trie.child(top.node, group.filter)),
                    ..top
                }),
                Step::Open(_, Open::Item { index }) => {
                    let items = route.and_then(|r: &Route| r.items_table(top.node));
                    stack.push(match items {
                        Some(table) => {
                            let t = &mut tables[table];
                            let row = t.new_row();
                            t.col(0).set_int(row, place.frame);
                            t.col(1).set_int(row, place.time_us);
                            t.col(2).set_int(row, place.conversation.into());
                            t.col(3).set_str(row, place.message);
                            t.col(4).set_int(row, index.into());
                            Open3 {
                                node: top.node,
                                table,
                                row,
                                entity: None,
                                typed: false,
                            }
                        }
                        None => Open3 { node: DEAD, ..top },
                    });
                }
                Step::Close(_) => {
                    let closed = stack.pop();
                    match (closed, stack.last_mut()) {
                        // A group within a row: what it named is the row's.
                        (Some(inner), Some(open))
                            if (open.table, open.row) == (inner.table, inner.row) =>
                        {
                            open.entity = open.entity.or(inner.entity);
                            open.typed |= inner.typed;
                        }
                        // A row's end: an entity row without its type gets the resolved one.
                        (Some(row), _) => {
                            let type_id = carried
                                .target
                                .filter(|t| t.table as usize == row.table && !row.typed)
                                .and(row.entity)
                                .and_then(|id| carried.type_of(id, &mut cursor));
                            if let (Some(t), Some(target)) = (type_id, carried.target) {
                                self.set(target, row.row, Noted::U(t.into()), tables, sprites);
                            }
                        }
                        (None, _) => {}
                    }
                    if in_header && stack.len() == 1 {
                        in_header = false;
                        route = body_route;
                    }
                }
                Step::Field(field, noted) => {
                    if let Some(target) = route.and_then(|r| r.trie.get(top.node, field)) {
                        self.set(*target, top.row, noted, tables, sprites);
                    }
                    if let Some(open) = stack.last_mut() {
                        match (field.role, noted) {
                            (Role::EntityId, Noted::U(id)) => open.entity = u32::try_from(id).ok(),
                            (Role::EntityType, _) => open.typed = true,
                            _ => {}
                        }
                    }
                }
                Step::Undecoded(at, a, b) => {
                    let t = &mut tables[top.table];
                    if let Some(c) = t.spec_undecoded() {
                        t.col(c - 1).set_int(top.row, at.into());
                        t.col(c)
                            .set_bytes(top.row, &self.text[a as usize..b as usize]);
                    }
                }
            }
        }
        self.stack = stack;
    }

    fn set(
        &self,
        target: Target,
        row: u32,
        noted: Noted,
        tables: &mut [TableWriter],
        sprites: &Sprites,
    ) {
        let table = &mut tables[target.table as usize];
        let value = self.value(noted);
        table.col(target.column as usize).set_value(row, value);
        let n = value.as_u64();
        if let (Some((column, values)), Some(n)) = (target.name, n) {
            if let Some(name) = u32::try_from(n).ok().and_then(|n| values.name_of(n)) {
                table.col(column as usize).set_str(row, name);
            }
        }
        if let (Some(column), Some(n)) = (target.sprite, n) {
            if let Some(sprite) = sprites.of_type(n) {
                table.col(column as usize).set_str(row, sprite);
            }
        }
    }
}
