//! The vocabulary of the protocol description.
//!
//! Like a Wireshark dissector's field table, every field is declared once here (name, label, wire
//! type, display, semantic role) and then used by reference: the decoder walks these nodes, the
//! JSON writer takes its keys from them, the Lua generator compiles them, and the docs list them.

use super::rules::Rule;

/// How a value is laid out on the wire. Integers and floats follow the dialect's byte order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    U8,
    U16,
    U32,
    I16,
    I32,
    F32,
    /// A `u8` length followed by that many bytes of UTF-8 text.
    Str8,
}

impl Ty {
    /// Width on the wire, or `None` for variable-length types.
    pub const fn width(self) -> Option<usize> {
        match self {
            Ty::U8 => Some(1),
            Ty::U16 | Ty::I16 => Some(2),
            Ty::U32 | Ty::I32 | Ty::F32 => Some(4),
            Ty::Str8 => None,
        }
    }

    /// Name used in profiles, docs and the Lua generator.
    pub const fn name(self) -> &'static str {
        match self {
            Ty::U8 => "u8",
            Ty::U16 => "u16",
            Ty::U32 => "u32",
            Ty::I16 => "i16",
            Ty::I32 => "i32",
            Ty::F32 => "f32",
            Ty::Str8 => "str8",
        }
    }
}

/// A named value or bit range, for enums and flag sets.
#[derive(Clone, Copy, Debug)]
pub struct Named {
    pub value: u32,
    pub name: &'static str,
}

/// How a value is shown to people (JSON always carries the raw number).
#[derive(Clone, Copy, Debug)]
pub enum Display {
    Dec,
    Hex,
    Float,
    Text,
    /// The number names one of these values.
    Enum(&'static [Named]),
    /// Each entry's `value` is a bit mask; a mask of several bits is a small number (e.g. a level).
    Flags(&'static [Named]),
    /// The number is a message type of the dialect: named from its message table.
    MessageType,
}

/// What the session layer and the checks need to recognise a field by, without comparing names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    None,
    Magic,
    VersionByte,
    PacketType,
    MessageType,
    Sequence,
    Tick,
    PayloadLen,
    OrigSize,
    PlayerId,
    ClientTime,
    AckSequence,
    AckMessageType,
    ReasonCode,
    EntityId,
    EntityType,
    EntityCount,
    UpdateMask,
    TotalChunks,
    ChunkIndex,
    ArchetypeTypeId,
    ArchetypeSpriteId,
    EventType,
    /// The one component a message adds to or removes from an entity (rt).
    ComponentType,
    /// A header's flag bits (rt).
    Flags,
    /// A header's timestamp in milliseconds (rt), as opposed to a game tick.
    Timestamp,
}

/// What an entity's field measures, where the world's views show it in a column of its own
/// (`world`'s position, velocity and health). Apart from [`Role`], which the walk, the checks
/// and the generators act on: a quantity changes nothing of how a field is decoded or shown.
/// The same quantity may come from several fields (a spawn's f32 position, a snapshot's i16
/// one): the world keeps one value for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Quantity {
    None,
    PosX,
    PosY,
    VelX,
    VelY,
    Health,
}

impl Quantity {
    /// Every quantity, with its name: the profile format's vocabulary (as `entity_type` is), and
    /// the world's columns.
    pub const NAMED: [(Quantity, &'static str); 5] = [
        (Quantity::PosX, "pos_x"),
        (Quantity::PosY, "pos_y"),
        (Quantity::VelX, "vel_x"),
        (Quantity::VelY, "vel_y"),
        (Quantity::Health, "health"),
    ];

    /// A snapshot profile's field named `name` measures this ([`crate::proto::profile`]).
    pub fn of_profile_name(name: &str) -> Quantity {
        Quantity::NAMED
            .iter()
            .find(|q| q.1 == name)
            .map_or(Quantity::None, |q| q.0)
    }

    /// Its name (none for [`Quantity::None`]).
    pub fn name(self) -> Option<&'static str> {
        Quantity::NAMED.iter().find(|q| q.0 == self).map(|q| q.1)
    }
}

/// A check the decoder applies to a field's value as it reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    None,
    /// The float must be finite (raises the rule when it is not).
    Finite(Rule),
    /// Within one repeated group, the value must not decrease.
    Ascending(Rule),
    /// The value must be one the field's [`Display::Enum`] names.
    Known(Rule),
    /// These bits must be clear.
    Unused {
        mask: u32,
        rule: Rule,
    },
}

/// One field, declared once.
#[derive(Debug)]
pub struct Field {
    /// JSON key and last segment of the display-filter name.
    pub name: &'static str,
    /// Human label, as Wireshark shows it.
    pub label: &'static str,
    pub ty: Ty,
    pub display: Display,
    pub role: Role,
    pub check: Check,
    /// Divide the raw integer by this to get the value (1 = no scaling); profiles use it for fixed point.
    pub divisor: u32,
    /// For `Ty::U8` only: a fixed array of this many bytes, as C declares `char name[32]` or
    /// `uint8_t data[7]`; 0 for a single value. Shown as text up to the first NUL when the
    /// display is [`Display::Text`], as bytes otherwise. An attribute rather than a `Ty` variant
    /// so that code matching `Ty` exhaustively keeps compiling; use [`Field::width`] for sizes.
    pub array: u16,
    /// What the field measures, for the world's views ([`Quantity`]).
    pub quantity: Quantity,
}

impl Field {
    pub const fn new(name: &'static str, label: &'static str, ty: Ty) -> Field {
        Field {
            name,
            label,
            ty,
            display: match ty {
                Ty::F32 => Display::Float,
                Ty::Str8 => Display::Text,
                _ => Display::Dec,
            },
            role: Role::None,
            check: Check::None,
            divisor: 1,
            array: 0,
            quantity: Quantity::None,
        }
    }
    /// A fixed byte array of `len` bytes (see [`Field::array`]).
    pub const fn array(mut self, len: u16) -> Field {
        self.array = len;
        self
    }
    /// Width on the wire, or `None` for variable-length fields; counts a byte array whole.
    pub const fn width(&self) -> Option<usize> {
        if self.array > 0 {
            return Some(self.array as usize);
        }
        self.ty.width()
    }
    pub const fn display(mut self, display: Display) -> Field {
        self.display = display;
        self
    }
    pub const fn role(mut self, role: Role) -> Field {
        self.role = role;
        self
    }
    pub const fn check(mut self, check: Check) -> Field {
        self.check = check;
        self
    }
    pub const fn quantity(mut self, quantity: Quantity) -> Field {
        self.quantity = quantity;
        self
    }
}

/// A named sequence of nodes: a message body, a repeated item, a switch case.
#[derive(Debug)]
pub struct Group {
    /// JSON key (array name for repeats, object name for switch cases).
    pub name: &'static str,
    /// Display-filter segment, e.g. `archetype` in `rtype.levelinit.archetype.sprite_id`.
    pub filter: &'static str,
    pub label: &'static str,
    pub nodes: &'static [Node],
}

/// One case of a [`Node::Switch`].
#[derive(Debug)]
pub struct Case {
    pub value: u32,
    pub group: Group,
}

/// The structure of a payload.
#[derive(Debug)]
pub enum Node {
    Field(Field),
    /// A count field, then that many repetitions of `item`.
    Repeat {
        count: Field,
        item: Group,
    },
    /// A tag field choosing one case; an unknown tag raises `unknown` and leaves the rest undecoded.
    Switch {
        tag: Field,
        cases: &'static [Case],
        unknown: Rule,
    },
    /// The fields gated by the last [`Role::UpdateMask`] value, laid out by the snapshot profile.
    Masked,
}

/// Who sends a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    ClientToServer,
    ServerToClient,
}

impl Direction {
    pub const fn name(self) -> &'static str {
        match self {
            Direction::ClientToServer => "client_to_server",
            Direction::ServerToClient => "server_to_client",
        }
    }
    pub const fn arrow(self) -> &'static str {
        match self {
            Direction::ClientToServer => "C→S",
            Direction::ServerToClient => "S→C",
        }
    }
}

/// A layout real traffic uses instead of the document's, recognised when the document's does not fit.
#[derive(Debug)]
pub struct Variant {
    /// True when the variant is the document's body followed by `nodes`; false when `nodes` replace it.
    pub extends_body: bool,
    pub nodes: &'static [Node],
    /// The departure reported when this variant is the one that fits.
    pub rule: Rule,
}

/// What a message means to a session and to its entities: the description's `role` of a
/// message, one vocabulary for the bundled and the described dialects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageRole {
    Hello,
    Join,
    Accept,
    Deny,
    Ready,
    AllReady,
    Countdown,
    Start,
    Level,
    End,
    Disconnect,
    Ping,
    Pong,
    Input,
    Ack,
    Snapshot,
    Chunk,
    /// Another periodic stream of entity updates (rt's health and weapon snapshots).
    Periodic,
    /// Entity updates that play no part in the session (rt's other component snapshots).
    Update,
    Spawn,
    Destroy,
    Event,
}

impl MessageRole {
    pub const ALL: &'static [(MessageRole, &'static str)] = &[
        (MessageRole::Hello, "hello"),
        (MessageRole::Join, "join"),
        (MessageRole::Accept, "accept"),
        (MessageRole::Deny, "deny"),
        (MessageRole::Ready, "ready"),
        (MessageRole::AllReady, "all-ready"),
        (MessageRole::Countdown, "countdown"),
        (MessageRole::Start, "start"),
        (MessageRole::Level, "level"),
        (MessageRole::End, "end"),
        (MessageRole::Disconnect, "disconnect"),
        (MessageRole::Ping, "ping"),
        (MessageRole::Pong, "pong"),
        (MessageRole::Input, "input"),
        (MessageRole::Ack, "ack"),
        (MessageRole::Snapshot, "snapshot"),
        (MessageRole::Chunk, "chunk"),
        (MessageRole::Periodic, "periodic"),
        (MessageRole::Update, "update"),
        (MessageRole::Spawn, "spawn"),
        (MessageRole::Destroy, "destroy"),
        (MessageRole::Event, "event"),
    ];

    pub fn name(self) -> &'static str {
        MessageRole::ALL
            .iter()
            .find(|r| r.0 == self)
            .map_or("", |r| r.1)
    }

    /// The role of this name, at compile time: the bundled dialects' tables (build.rs) name
    /// their messages' roles, and a name the vocabulary lacks fails the build.
    pub const fn named(name: &str) -> MessageRole {
        let mut i = 0;
        while i < MessageRole::ALL.len() {
            if same(MessageRole::ALL[i].1.as_bytes(), name.as_bytes()) {
                return MessageRole::ALL[i].0;
            }
            i += 1;
        }
        panic!("a bundled dialect names a message role the vocabulary lacks")
    }
}

/// One message type of a dialect.
#[derive(Debug)]
pub struct Message {
    pub code: u8,
    /// The document's name, e.g. `SERVER_SNAPSHOT`.
    pub name: &'static str,
    /// Filter segment and short name, e.g. `snapshot`.
    pub short: &'static str,
    pub direction: Direction,
    /// The document's section defining it.
    pub section: &'static str,
    pub body: &'static [Node],
    pub variants: &'static [Variant],
    /// Raised whenever the message is seen at all (e.g. a reserved type that is "not emitted").
    pub seen_rule: Option<Rule>,
    /// What it means to a session and to its entities.
    pub role: Option<MessageRole>,
    /// It names every entity the server holds (a chunk of them, when chunked).
    pub full_state: bool,
}

impl Message {
    /// The payload size when every node has a fixed width (the document's fixed-size messages).
    pub fn fixed_size(&self) -> Option<usize> {
        nodes_fixed_size(self.body)
    }

    /// Whether a payload of `len` bytes can be this message: any length when its layout (or one
    /// of its variants') varies, else one of the fixed sizes of the document or a variant.
    pub fn size_fits(&self, len: usize) -> bool {
        self.layout_sizes()
            .any(|size| size.is_none_or(|size| size == len))
    }

    /// The payload size of the document's layout and of each variant (`None`: it varies).
    pub fn layout_sizes(&self) -> impl Iterator<Item = Option<usize>> + '_ {
        let body = self.fixed_size();
        std::iter::once(body).chain(self.variants.iter().map(move |v| {
            let nodes = nodes_fixed_size(v.nodes);
            if v.extends_body {
                body.zip(nodes).map(|(b, n)| b + n)
            } else {
                nodes
            }
        }))
    }
}

/// Fixed width of a node sequence, `None` when any part varies.
pub fn nodes_fixed_size(nodes: &[Node]) -> Option<usize> {
    nodes.iter().try_fold(0usize, |sum, node| match node {
        Node::Field(f) => f.width().map(|w| sum + w),
        _ => None,
    })
}

/// Byte range of the field with `role` in a fixed-width node sequence, computed at compile time
/// so that typed header views read the layout from the description instead of restating it.
pub const fn field_range(nodes: &[Node], role: Role) -> core::ops::Range<usize> {
    let mut at = 0;
    let mut i = 0;
    while i < nodes.len() {
        if let Node::Field(f) = &nodes[i] {
            let width = match f.width() {
                Some(w) => w,
                None => panic!("field_range over a variable-width field"),
            };
            if f.role as u8 == role as u8 {
                return at..at + width;
            }
            at += width;
        } else {
            panic!("field_range over a non-field node");
        }
        i += 1;
    }
    panic!("no field with that role")
}

/// Width of a fixed-width node sequence (a header), computed at compile time.
pub const fn fixed_len(nodes: &[Node]) -> usize {
    let mut at = 0;
    let mut i = 0;
    while i < nodes.len() {
        match &nodes[i] {
            Node::Field(f) => match f.width() {
                Some(w) => at += w,
                None => panic!("fixed_len over a variable-width field"),
            },
            _ => panic!("fixed_len over a non-field node"),
        }
        i += 1;
    }
    at
}

/// Index of each code's message in `messages`, built at compile time so looking a message up by
/// its wire code is one array read.
pub const fn index_by_code(messages: &[Message]) -> [Option<u8>; 256] {
    let mut table = [None; 256];
    let mut i = 0;
    while i < messages.len() {
        table[messages[i].code as usize] = Some(i as u8);
        i += 1;
    }
    table
}

/// The code of the message whose short name is `short`, at compile time: code names a message
/// the description defines by its name, never by a number written a second time.
pub const fn code_of(messages: &[Message], short: &str) -> u8 {
    let mut i = 0;
    while i < messages.len() {
        if same(messages[i].short.as_bytes(), short.as_bytes()) {
            return messages[i].code;
        }
        i += 1;
    }
    panic!("no message of that short name")
}

/// The value `name` has in `named`, at compile time.
pub const fn value_of(named: &[Named], name: &str) -> u32 {
    let mut i = 0;
    while i < named.len() {
        if same(named[i].name.as_bytes(), name.as_bytes()) {
            return named[i].value;
        }
        i += 1;
    }
    panic!("no value of that name")
}

/// Byte-wise equality, usable in a `const fn`.
pub const fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The rules the message walker raises, which each dialect's description names by kind
/// (build/rules.rs compiles its `MESSAGE_RULES`).
#[derive(Debug)]
pub struct MessageRules {
    pub truncated: Rule,
    pub trailing: Rule,
    pub size: Rule,
    pub utf8: Rule,
    pub reserved_bit: Rule,
    pub undefined_bit: Rule,
}

impl MessageRules {
    /// Whether `rule` says a masked message's layout is not the profile's: a field cut short,
    /// bytes left over, or a mask bit the profile reserves or does not define.
    pub fn misfit(&self, rule: Rule) -> bool {
        [
            self.truncated,
            self.trailing,
            self.reserved_bit,
            self.undefined_bit,
        ]
        .contains(&rule)
    }
}

/// Byte order of a dialect's numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endian {
    Big,
    Little,
}
