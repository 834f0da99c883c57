//! Visitors that turn a decoded message into JSON (for `export`) or an indented tree (for
//! `packets -V`). Both write into a buffer reused across datagrams; keys and labels come from
//! the protocol description.

use std::fmt::Write as _;

use super::render;
use crate::datagram::Dialect;
use crate::message::{Open, Value, Visitor};
use crate::pipeline::{RenderAhead, Renderings, HEADER_GROUP};
use crate::proto::schema::{Display, Field, Group, Role};
use crate::session::{Archetypes, Conversations};

/// LevelInit sprites of the conversation being decoded, copied when they change, with each
/// type's JSON member (`,"sprite":"…"`) written once for the records that repeat it.
#[derive(Default)]
pub struct Sprites {
    key: (u32, usize),
    list: Archetypes,
    /// The members, end to end.
    members: String,
    /// Each named type's member in `members`, in the archetypes' order (the first of a type
    /// wins, as in [`Archetypes::sprite`]).
    spans: Vec<(u64, u32, u32)>,
}

impl Sprites {
    /// The LevelInit sprite of entity type `type_id`, when it named one.
    pub fn name(&self, type_id: u64) -> Option<&str> {
        self.list.sprite(type_id)
    }

    pub fn refresh(&mut self, conversations: &Conversations, conversation: u32) {
        let Some(c) = conversations.get(conversation) else {
            self.list.clear();
            self.key = (0, 0);
            self.members.clear();
            self.spans.clear();
            return;
        };
        // The conversations of one server mostly share their LevelInit: when the datagrams
        // alternate between them, the members are kept.
        let key = (conversation, c.archetypes.len());
        if self.key != key {
            self.key = key;
            if self.list == c.archetypes {
                return;
            }
            self.list.clone_from(&c.archetypes);
            self.members.clear();
            self.spans.clear();
            for t in self.list.types() {
                if self.spans.iter().any(|s| s.0 == t) {
                    continue;
                }
                if let Some(sprite) = self.list.sprite(t) {
                    let start = self.members.len() as u32;
                    push_sprite(&mut self.members, sprite);
                    self.spans.push((t, start, self.members.len() as u32));
                }
            }
        }
    }
    /// The `,"sprite":"…"` member of entity type `t`'s sprite.
    fn member(&self, t: u64) -> Option<&str> {
        let &(_, start, end) = self.spans.iter().find(|s| s.0 == t)?;
        self.members.get(start as usize..end as usize)
    }

    /// [`Sprites::member`] of a record whose sprite members took `bytes` so far: counted there,
    /// or in `omitted` when it would take them past [`MAX_SPRITES_JSON`].
    fn within(&self, t: u64, bytes: &mut usize, omitted: &mut Omitted) -> Option<&str> {
        let member = self.member(t)?;
        if *bytes + member.len() > MAX_SPRITES_JSON {
            omitted.sprites += 1;
            return None;
        }
        *bytes += member.len();
        Some(member)
    }
    fn of(&self, field: &Field, value: Value<'_>) -> Option<&str> {
        if field.role != Role::EntityType {
            return None;
        }
        self.of_type(value.as_u64()?)
    }
    /// The sprite of entity type `t` in the conversation.
    pub fn of_type(&self, t: u64) -> Option<&str> {
        self.list.sprite(t)
    }
}

/// Bytes of JSON one record's fields may take, sprite names aside: far above real records (the
/// largest datagram record of the real captures is 11 KB), and a bound on what a crafted payload
/// renders to (a 288-byte datagram inflating to 64 KiB of zeros gave 131 KB). Past it, fields are
/// left out and counted in the record's `omitted` member ([`Omitted`]).
pub const MAX_FIELDS_JSON: usize = 64 * 1024;
/// Bytes of sprite names one record may repeat after its entity types; past it they are left out
/// (and counted).
pub const MAX_SPRITES_JSON: usize = 16 * 1024;

/// What a record left out to stay within [`MAX_FIELDS_JSON`] and [`MAX_SPRITES_JSON`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Omitted {
    /// Offset (in the payload, or in the text) of the first field or byte left out.
    pub offset: Option<u64>,
    /// Field values left out.
    pub fields: u64,
    /// Bytes (undecoded, or of text) not shown.
    pub bytes: u64,
    /// Sprite names left out after their entity types.
    pub sprites: u64,
}

impl Omitted {
    pub fn add(&mut self, at: usize, fields: u64, bytes: u64) {
        self.offset.get_or_insert(at as u64);
        self.fields += fields;
        self.bytes += bytes;
    }

    /// Appends the record member `,"omitted":{…}` when anything was left out.
    pub fn push_json(&self, out: &mut String) {
        if *self == Omitted::default() {
            return;
        }
        out.push_str(",\"omitted\":{");
        if let Some(offset) = self.offset {
            let _ = write!(out, "\"offset\":{offset},");
        }
        let _ = write!(
            out,
            "\"fields\":{},\"bytes\":{},\"sprites\":{}}}",
            self.fields, self.bytes, self.sprites
        );
    }
}

/// JSON text a field renders to, written once from the description and kept by the field's
/// address and a value: each field's key with its separator (`,"name":`), each enum value's name
/// member (`,"name_name":"…"`). A member is then one copy. Set-associative: a set holds the last
/// [`MEMO_WAYS`] texts that came to it, the last used first, so that only more pairs than that
/// sharing a set make each other be written again (with one way, where the fields' addresses
/// happened to fall decided how many of every record's keys were written again). Buffers are
/// reused, so the memory is bounded by the slots and the longest text.
struct Memo {
    slots: Box<[(usize, u64, String); MEMO_SLOTS]>,
}

/// Slots of a [`Memo`]: more than the fields of a dialect's messages and the profile's mask bits.
const MEMO_SLOTS: usize = 1024;
/// Slots of a set.
const MEMO_WAYS: usize = 4;

impl Default for Memo {
    fn default() -> Self {
        Memo {
            slots: Box::new(std::array::from_fn(|_| (0, 0, String::new()))),
        }
    }
}

impl Memo {
    /// The set of the pair (`field`'s address, `value`): Fibonacci hashing, the top bits of the
    /// product with 2^64 / φ.
    fn set(address: usize, value: u64) -> usize {
        let hash = (address as u64 ^ value.rotate_left(32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (hash >> (64 - (MEMO_SLOTS / MEMO_WAYS).trailing_zeros())) as usize
    }

    /// The text of `field` with `value`, rendered by `render` the first time.
    #[inline]
    fn get(&mut self, field: &'static Field, value: u64, render: impl FnOnce(&mut String)) -> &str {
        let address = std::ptr::from_ref(field) as usize;
        let start = Memo::set(address, value) * MEMO_WAYS;
        let set = &mut self.slots[start..start + MEMO_WAYS];
        let is = |slot: &(usize, u64, String)| slot.0 == address && slot.1 == value;
        if !is(&set[0]) {
            // Found further on, or written over the least recently used: it comes first.
            let way = set.iter().position(is).unwrap_or(MEMO_WAYS - 1);
            set[..=way].rotate_right(1);
            if !is(&set[0]) {
                (set[0].0, set[0].1) = (address, value);
                set[0].2.clear();
                render(&mut set[0].2);
            }
        }
        &set[0].2
    }
}

/// Writes a message's fields as JSON members: `,"header":{…},"fields":{…}`, to follow the
/// members of an object the caller has opened; then `,"omitted":{…}` when the fields went past
/// [`MAX_FIELDS_JSON`].
pub struct JsonFields {
    pub out: String,
    /// For each open level, whether it is a list.
    levels: Vec<bool>,
    /// Whether the innermost open level (the caller's object when none is) has no member yet.
    first: bool,
    /// Keys with their separator, and the name members of enum values.
    keys: Memo,
    names: Memo,
    pub dialect: Dialect,
    pub sprites: Sprites,
    /// In a copy rendering on a worker thread ([`RenderAhead`]), which knows no conversation:
    /// where a sprite would follow, and the entity type it would be of.
    sprite_points: Option<Vec<(u32, u64)>>,
    /// Where this datagram's text starts in `out`: after the batch's text before it, in a copy
    /// rendering on a worker thread (`out` is then the batch's, [`RenderAhead::start_rendering`]).
    base: usize,
    /// Bytes of `out` that are sprite names (not counted in [`MAX_FIELDS_JSON`], so that a
    /// rendering ahead, which has none, stops where this one does).
    sprite_bytes: usize,
    /// Groups opened past the limit, whose closing must be skipped too.
    skipped: usize,
    omitted: Omitted,
}

impl Default for JsonFields {
    fn default() -> Self {
        JsonFields {
            out: String::with_capacity(4096),
            levels: Vec::new(),
            first: false,
            keys: Memo::default(),
            names: Memo::default(),
            dialect: Dialect::Rtype,
            sprites: Sprites::default(),
            sprite_points: None,
            base: 0,
            sprite_bytes: 0,
            skipped: 0,
            omitted: Omitted::default(),
        }
    }
}

/// JSON renderings made on a worker thread, end to end: each datagram's text, with the points
/// where a sprite name goes after an entity type (the sprites are the conversation's, known in
/// the ordered stage), and what it left out.
#[derive(Default)]
pub struct RenderedJson {
    json: String,
    /// (offset in its datagram's text, entity type).
    points: Vec<(u32, u64)>,
    /// Where each datagram's text and points end, and what it omitted.
    ends: Vec<(u32, u32, Omitted)>,
}

impl Renderings for RenderedJson {
    fn count(&self) -> usize {
        self.ends.len()
    }
    fn size(&self) -> usize {
        self.json.len()
            + self.points.len() * size_of::<(u32, u64)>()
            + self.ends.len() * size_of::<(u32, u32, Omitted)>()
    }
    fn capacity(&self) -> usize {
        self.json.capacity()
            + self.points.capacity() * size_of::<(u32, u64)>()
            + self.ends.capacity() * size_of::<(u32, u32, Omitted)>()
    }
    fn clear(&mut self) {
        self.json.clear();
        self.points.clear();
        self.ends.clear();
    }
}

impl RenderAhead for JsonFields {
    type Rendered = RenderedJson;

    fn ahead(&self) -> Option<Self> {
        Some(JsonFields {
            dialect: self.dialect,
            sprite_points: Some(Vec::new()),
            ..JsonFields::default()
        })
    }

    fn start_rendering(&mut self, all: &mut RenderedJson) {
        // A copy starts clear, and `drain_rendered` leaves it so.
        std::mem::swap(&mut self.out, &mut all.json);
        self.base = self.out.len();
    }

    fn drain_rendered(&mut self, all: &mut RenderedJson) {
        self.close_levels();
        let points = self.sprite_points.get_or_insert_with(Vec::new);
        all.points.append(points);
        // The text is in place: the batch's buffer goes back to it.
        std::mem::swap(&mut self.out, &mut all.json);
        // Sprites are only omitted once the rendering is taken.
        let omitted = self.omitted;
        all.ends
            .push((all.json.len() as u32, all.points.len() as u32, omitted));
        self.clear();
    }

    fn fill_rendered(&mut self, all: &RenderedJson, index: usize) {
        self.clear();
        let out = &mut self.out;
        self.omitted = all.pieces(index, &self.sprites, |piece| out.push_str(piece));
    }
}

impl RenderedJson {
    /// Rendering `index`, in the pieces a record is made of: its text between the points where
    /// a sprite goes, and the conversation's sprite member at each point (within
    /// [`MAX_SPRITES_JSON`]). Returns what it omitted: the worker's, and the sprites left out.
    pub fn pieces<'r>(
        &'r self,
        index: usize,
        sprites: &'r Sprites,
        mut piece: impl FnMut(&'r str),
    ) -> Omitted {
        let Some(&(json_end, points_end, mut omitted)) = self.ends.get(index) else {
            return Omitted::default();
        };
        let (json_start, points_start) = match index.checked_sub(1).map(|i| self.ends[i]) {
            Some((json, points, _)) => (json, points),
            None => (0, 0),
        };
        let json = self
            .json
            .get(json_start as usize..json_end as usize)
            .unwrap_or_default();
        let points = self
            .points
            .get(points_start as usize..points_end as usize)
            .unwrap_or_default();
        let (mut from, mut sprite_bytes) = (0, 0);
        for &(at, t) in points {
            // A point is always at a character boundary (after a number).
            let Some(before) = json.get(from..at as usize) else {
                break;
            };
            piece(before);
            from = at as usize;
            if let Some(member) = sprites.within(t, &mut sprite_bytes, &mut omitted) {
                piece(member);
            }
        }
        piece(json.get(from..).unwrap_or_default());
        omitted
    }
}

/// The sprite member after an entity type, which was just written in its level: so a comma
/// always comes first.
fn push_sprite(out: &mut String, sprite: &str) {
    out.push_str(",\"sprite\":");
    render::json_str(out, sprite);
}

impl JsonFields {
    /// Starts a new datagram.
    pub fn clear(&mut self) {
        self.out.clear();
        self.base = 0;
        self.levels.clear();
        self.first = false;
        self.sprite_bytes = 0;
        self.skipped = 0;
        self.omitted = Omitted::default();
    }

    /// Closes what is open, and says what was omitted; the buffer then holds complete members.
    pub fn finish(&mut self) -> &str {
        self.close_levels();
        self.omitted.push_json(&mut self.out);
        self.omitted = Omitted::default();
        &self.out
    }

    fn close_levels(&mut self) {
        while self.levels.last().is_some() {
            self.close_level();
        }
    }

    /// Opens a level with `bracket` (`{` or `[`) after its key, if any.
    fn open_level(&mut self, bracket: char) {
        self.out.push(bracket);
        self.levels.push(bracket == '[');
        self.first = true;
    }

    /// Closes the innermost level, a member of the one around it.
    fn close_level(&mut self) {
        if let Some(list) = self.levels.pop() {
            self.out.push(if list { ']' } else { '}' });
            self.first = false;
        }
    }

    /// Bytes of this datagram's fields so far, sprite names aside (what [`MAX_FIELDS_JSON`]
    /// bounds).
    fn len(&self) -> usize {
        self.out.len() - self.base - self.sprite_bytes
    }

    /// Whether the fields reached [`MAX_FIELDS_JSON`] (or a group opened past it is open).
    fn full(&self) -> bool {
        self.skipped > 0 || self.len() >= MAX_FIELDS_JSON
    }

    /// The sprite of entity type `t` after its field, within [`MAX_SPRITES_JSON`].
    fn sprite_after(&mut self, t: u64) {
        if let Some(member) = self
            .sprites
            .within(t, &mut self.sprite_bytes, &mut self.omitted)
        {
            self.out.push_str(member);
        }
    }

    /// Opens `"fields":{` before the first member outside the header.
    fn ensure_fields(&mut self) {
        if self.levels.is_empty() {
            self.out.push_str(",\"fields\":");
            self.open_level('{');
        }
    }

    /// A comma unless this is the level's first member (the caller's object always has members).
    fn separate(&mut self) {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
    }

    fn key(&mut self, name: &str) {
        self.separate();
        render::json_key(&mut self.out, name);
    }

    /// The `"…_name"` member after an enum's or a message type's number (a member of the same
    /// level, so after a comma), when it names one.
    fn value_name(&mut self, field: &'static Field, value: Value<'_>) {
        let Some(n) = value.as_u64() else {
            return;
        };
        let dialect = self.dialect;
        // A message type's name is the dialect's: the dialect is kept above the type's bits.
        let id = match field.display {
            Display::MessageType => n | dialect.ordinal() << 32,
            _ => n,
        };
        let member = self.names.get(field, id, |member| {
            let name = match field.display {
                Display::Enum(table) => render::enum_name(table, n),
                Display::MessageType => render::message_name(dialect, n),
                _ => None,
            };
            if let Some(name) = name {
                member.push_str(",\"");
                member.push_str(field.name);
                member.push_str("_name\":");
                render::json_str(member, name);
            }
        });
        self.out.push_str(member);
    }
}

impl Visitor for JsonFields {
    fn field(&mut self, field: &'static Field, at: usize, _len: usize, value: Value<'_>) {
        if self.full() {
            self.omitted.add(at, 1, 0);
            return;
        }
        self.ensure_fields();
        let key = self.keys.get(field, 0, |key| {
            key.push(',');
            render::json_key(key, field.name);
        });
        // The separator is the key's first character.
        self.out.push_str(if self.first { &key[1..] } else { key });
        self.first = false;
        render::json_value(&mut self.out, field, value);
        // Most fields have neither a name for their value nor a sprite after it.
        if matches!(field.display, Display::Enum(_) | Display::MessageType) {
            self.value_name(field, value);
        }
        if field.role != Role::EntityType {
            return;
        }
        match (&mut self.sprite_points, value.as_u64()) {
            (Some(points), Some(t)) => points.push(((self.out.len() - self.base) as u32, t)),
            (None, Some(t)) => self.sprite_after(t),
            (_, None) => {}
        }
    }

    fn open(&mut self, group: &'static Group, how: Open, at: usize) {
        if self.full() {
            self.skipped += 1;
            self.omitted.add(at, 0, 0);
            return;
        }
        if std::ptr::eq(group, &HEADER_GROUP) {
            self.key("header");
            self.open_level('{');
            return;
        }
        self.ensure_fields();
        match how {
            Open::List { .. } => {
                self.key(group.name);
                self.open_level('[');
            }
            Open::Item { .. } => {
                self.separate();
                self.open_level('{');
            }
            Open::Case => {
                self.key(group.name);
                self.open_level('{');
            }
        }
    }

    fn close(&mut self, _how: Open) {
        if self.skipped > 0 {
            self.skipped -= 1;
        } else {
            self.close_level();
        }
    }

    fn undecoded(&mut self, at: usize, bytes: &[u8]) {
        if self.full() {
            self.omitted.add(at, 0, bytes.len() as u64);
            return;
        }
        self.ensure_fields();
        self.key("undecoded");
        let _ = write!(
            self.out,
            "{{\"offset\":{at},\"length\":{},\"hex\":\"",
            bytes.len()
        );
        // Two characters a byte: as many as the limit leaves room for.
        let room = MAX_FIELDS_JSON.saturating_sub(self.len()) / 2;
        let shown = bytes.len().min(room);
        render::hex(&mut self.out, &bytes[..shown]);
        self.out.push_str("\"}");
        if shown < bytes.len() {
            self.omitted
                .add(at + shown, 0, (bytes.len() - shown) as u64);
        }
    }
}

/// Writes a message as an indented tree of labelled fields, for `packets -V`.
pub struct TreeFields {
    pub out: String,
    depth: usize,
    fields_open: bool,
    pub dialect: Dialect,
    pub sprites: Sprites,
}

impl Default for TreeFields {
    fn default() -> Self {
        TreeFields {
            out: String::with_capacity(4096),
            depth: 0,
            fields_open: false,
            dialect: Dialect::Rtype,
            sprites: Sprites::default(),
        }
    }
}

/// Indentation of the message's top level under the frame line.
const BASE_INDENT: usize = 2;

impl TreeFields {
    pub fn clear(&mut self) {
        self.out.clear();
        self.depth = 0;
        self.fields_open = false;
    }
    /// Puts the message's own fields under a "Fields" heading, after the header.
    fn ensure_fields(&mut self) {
        if self.depth == 0 && !self.fields_open {
            self.fields_open = true;
            self.indent();
            self.out.push_str("Fields\n");
        }
        if self.depth == 0 {
            self.depth = 1;
        }
    }
    fn indent(&mut self) {
        for _ in 0..BASE_INDENT + 2 * self.depth {
            self.out.push(' ');
        }
    }
}

impl Visitor for TreeFields {
    fn field(&mut self, field: &'static Field, at: usize, _len: usize, value: Value<'_>) {
        self.ensure_fields();
        self.indent();
        let _ = write!(self.out, "{}: ", field.label);
        let dialect = self.dialect;
        render::text_value(&mut self.out, field, value, |n| {
            render::message_name(dialect, n)
        });
        if let Some(sprite) = self.sprites.of(field, value) {
            let _ = write!(self.out, " → sprite {sprite:?}");
        }
        let _ = writeln!(self.out, "  [@{at}]");
    }

    fn open(&mut self, group: &'static Group, how: Open, _at: usize) {
        if !std::ptr::eq(group, &HEADER_GROUP) {
            self.ensure_fields();
        }
        self.indent();
        let _ = match how {
            Open::List { count } => writeln!(self.out, "{} list ({count})", group.label),
            Open::Item { index } => writeln!(self.out, "{} #{index}", group.label),
            Open::Case => writeln!(self.out, "{}", group.label),
        };
        self.depth += 1;
    }

    fn close(&mut self, _how: Open) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn undecoded(&mut self, at: usize, bytes: &[u8]) {
        self.ensure_fields();
        self.indent();
        let shown = &bytes[..bytes.len().min(32)];
        let _ = write!(self.out, "Undecoded: {} bytes at @{at}: ", bytes.len());
        render::hex(&mut self.out, shown);
        let _ = writeln!(
            self.out,
            "{}",
            if shown.len() < bytes.len() { "…" } else { "" }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::schema::Node;

    /// A memo gives each field and value its own text, also when many share its slots (more
    /// pairs than slots, asked for in turn, so that they evict each other).
    #[test]
    fn memo_texts_are_each_pairs_own() {
        let fields: Vec<&'static Field> = (0..=255)
            .filter_map(crate::proto::rtype::message)
            .flat_map(|m| m.body)
            .chain(crate::proto::rtype::HEADER)
            .filter_map(|node| match node {
                Node::Field(f) => Some(f),
                _ => None,
            })
            .collect();
        assert!(fields.len() > 20, "{} fields", fields.len());
        let mut memo = Memo::default();
        let mut rendered = 0;
        for round in 0..3 {
            for value in 0..40u64 {
                for &field in &fields {
                    let expected = format!("{}={value}", field.name);
                    let text = memo.get(field, value, |s| {
                        rendered += 1;
                        s.push_str(&expected);
                    });
                    assert_eq!(text, expected, "round {round}");
                }
            }
        }
        // More pairs than slots: some were written again, but not all of them every time.
        let pairs = fields.len() * 40;
        assert!(pairs > MEMO_SLOTS);
        assert!(rendered > pairs && rendered <= 3 * pairs, "{rendered}");
        // A dialect's keys are each written once, wherever their fields lie.
        let mut keys = Memo::default();
        let mut written = 0;
        for _ in 0..3 {
            for &field in &fields {
                keys.get(field, 0, |s| {
                    written += 1;
                    s.push_str(field.name);
                });
            }
        }
        let mut distinct: Vec<*const Field> =
            fields.iter().map(|f| std::ptr::from_ref(*f)).collect();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(written, distinct.len());
        // As many keys as a set holds, all in one set, are each written once too.
        let pool: &'static [Field] = (0..64 * MEMO_SLOTS)
            .map(|_| Field::new("crowd", "Crowd", crate::proto::schema::Ty::U32))
            .collect::<Vec<_>>()
            .leak();
        let set = Memo::set(std::ptr::from_ref(&pool[0]) as usize, 0);
        let crowd: Vec<&'static Field> = pool
            .iter()
            .filter(|f| Memo::set(std::ptr::from_ref(*f) as usize, 0) == set)
            .take(MEMO_WAYS)
            .collect();
        assert_eq!(crowd.len(), MEMO_WAYS);
        let (mut crowded, mut written) = (Memo::default(), 0);
        for _ in 0..3 {
            for &field in &crowd {
                crowded.get(field, 0, |_| written += 1);
            }
        }
        assert_eq!(written, MEMO_WAYS);
        // Asked again at once, a pair's text is kept.
        let before = rendered;
        for _ in 0..2 {
            memo.get(fields[0], 1000, |s| {
                rendered += 1;
                s.push('x');
            });
        }
        assert_eq!(rendered, before + 1);
    }
}
