//! A dialect description, loaded: the types the decoder, the Kaitai export and the Lua generator
//! read. Names are resolved to indices when the file loads, so decoding never looks a name up.

use super::expr::Expr;
use crate::proto::Severity;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endian {
    Little,
    Big,
}

/// How a field's bytes are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An integer of 1, 2, 4 or 8 bytes.
    Int { width: u8, signed: bool },
    /// An IEEE float of 4 or 8 bytes.
    Float { width: u8 },
    /// A bit field of 1 to 32 bits, read from the current bit position.
    Bits { width: u8 },
    /// Text of `size` bytes (or to the end), shown up to its first NUL.
    Str,
    /// Text up to a NUL byte, which is consumed.
    Strz,
    /// Raw bytes of `size` (or to the end).
    Bytes,
    /// A sequence of `types`, by index.
    User(usize),
}

impl Kind {
    /// Width of a number on the wire.
    pub fn number_width(self) -> Option<usize> {
        match self {
            Kind::Int { width, .. } | Kind::Float { width } => Some(width as usize),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Ascii,
    Utf8,
}

/// How many times a field repeats.
#[derive(Clone, Debug, PartialEq)]
pub enum Repeat {
    Once,
    Count(Expr),
    UntilEnd,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Size {
    /// A number's or a user type's own width.
    Natural,
    Bytes(Expr),
    ToEnd,
}

/// The values a field may take (Kaitai's `valid`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Valid {
    pub eq: Option<i64>,
    pub min: Option<i64>,
    pub max: Option<i64>,
    pub any_of: Vec<i64>,
    /// The rule broken, by index in [`Description::rules`].
    pub rule: usize,
}

impl Valid {
    pub fn accepts(&self, v: i64) -> bool {
        self.eq.is_none_or(|e| e == v)
            && self.min.is_none_or(|m| v >= m)
            && self.max.is_none_or(|m| v <= m)
            && (self.any_of.is_empty() || self.any_of.contains(&v))
    }

    /// What was expected, as a finding says it.
    pub fn expected(&self) -> String {
        let mut parts = Vec::new();
        if let Some(e) = self.eq {
            parts.push(format!("{e}"));
        }
        if let Some(m) = self.min {
            parts.push(format!(">= {m}"));
        }
        if let Some(m) = self.max {
            parts.push(format!("<= {m}"));
        }
        if !self.any_of.is_empty() {
            let list: Vec<String> = self.any_of.iter().map(|v| v.to_string()).collect();
            parts.push(format!("one of {}", list.join(", ")));
        }
        parts.join(" and ")
    }
}

/// What a field means to the tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldRole {
    MessageType,
    Length,
    Sequence,
    Ack,
    AckBits,
    Tick,
    Time,
    Flags,
    Checksum,
    ChunkIndex,
    ChunkTotal,
    EntityId,
    EntityType,
    PositionX,
    PositionY,
    VelocityX,
    VelocityY,
    Health,
}

impl FieldRole {
    pub const ALL: &'static [(FieldRole, &'static str)] = &[
        (FieldRole::MessageType, "message-type"),
        (FieldRole::Length, "length"),
        (FieldRole::Sequence, "sequence"),
        (FieldRole::Ack, "ack"),
        (FieldRole::AckBits, "ack-bits"),
        (FieldRole::Tick, "tick"),
        (FieldRole::Time, "time"),
        (FieldRole::Flags, "flags"),
        (FieldRole::Checksum, "checksum"),
        (FieldRole::ChunkIndex, "chunk-index"),
        (FieldRole::ChunkTotal, "chunk-total"),
        (FieldRole::EntityId, "entity-id"),
        (FieldRole::EntityType, "entity-type"),
        (FieldRole::PositionX, "position-x"),
        (FieldRole::PositionY, "position-y"),
        (FieldRole::VelocityX, "velocity-x"),
        (FieldRole::VelocityY, "velocity-y"),
        (FieldRole::Health, "health"),
    ];

    pub fn name(self) -> &'static str {
        FieldRole::ALL
            .iter()
            .find(|r| r.0 == self)
            .map_or("", |r| r.1)
    }
}

pub use crate::proto::schema::MessageRole;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    ClientToServer,
    ServerToClient,
    Both,
}

impl Direction {
    pub fn name(self) -> &'static str {
        match self {
            Direction::ClientToServer => "client-to-server",
            Direction::ServerToClient => "server-to-client",
            Direction::Both => "both",
        }
    }

    /// The one side that sends the message, if the description names one.
    pub fn sender(self) -> Option<crate::proto::Direction> {
        match self {
            Direction::ClientToServer => Some(crate::proto::Direction::ClientToServer),
            Direction::ServerToClient => Some(crate::proto::Direction::ServerToClient),
            Direction::Both => None,
        }
    }
}

/// One field of a sequence.
#[derive(Clone, Debug)]
pub struct Field {
    pub id: String,
    /// The name expressions know it by.
    pub var: u16,
    pub label: String,
    pub doc: String,
    pub kind: Kind,
    /// For numbers: the byte order (the file's unless the type says).
    pub endian: Endian,
    pub size: Size,
    pub encoding: Encoding,
    pub contents: Option<Vec<u8>>,
    pub repeat: Repeat,
    pub cond: Option<Expr>,
    /// Index in [`Description::enums`].
    pub enumeration: Option<usize>,
    pub valid: Option<Valid>,
    pub divisor: Option<f64>,
    pub role: Option<FieldRole>,
    /// Line of the field in the description, for `dialect check`'s messages.
    pub line: u32,
}

/// A named sequence of fields (`types`).
#[derive(Clone, Debug)]
pub struct TypeDef {
    pub id: String,
    pub seq: Vec<Field>,
}

#[derive(Clone, Debug)]
pub struct EnumDef {
    pub id: String,
    pub values: Vec<(i64, String)>,
}

impl EnumDef {
    pub fn name_of(&self, v: i64) -> Option<&str> {
        self.values.iter().find(|x| x.0 == v).map(|x| x.1.as_str())
    }
}

#[derive(Clone, Debug)]
pub struct Message {
    pub code: i64,
    pub id: String,
    pub name: String,
    pub role: Option<MessageRole>,
    pub direction: Direction,
    pub section: String,
    pub seq: Vec<Field>,
}

/// The checks the mechanism makes; each is one rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    Magic,
    Truncated,
    Length,
    Checksum,
    Compression,
    UnknownType,
    Trailing,
    Contents,
    Valid,
    Enum,
    Encoding,
    Direction,
}

impl Check {
    pub const ALL: &'static [(Check, &'static str, Severity, &'static str)] = &[
        (
            Check::Magic,
            "magic",
            Severity::Error,
            "a datagram on the dialect's port does not start with its magic",
        ),
        (
            Check::Truncated,
            "truncated",
            Severity::Error,
            "the datagram ends inside a field",
        ),
        (
            Check::Length,
            "length",
            Severity::Error,
            "the length field disagrees with the bytes there are",
        ),
        (
            Check::Checksum,
            "checksum",
            Severity::Error,
            "the checksum does not match the bytes it covers",
        ),
        (
            Check::Compression,
            "compression",
            Severity::Error,
            "the compressed body does not decompress, or to another size",
        ),
        (
            Check::UnknownType,
            "unknown-type",
            Severity::Error,
            "no message of the description has this type value",
        ),
        (
            Check::Trailing,
            "trailing",
            Severity::Warning,
            "bytes are left after the message body",
        ),
        (
            Check::Contents,
            "contents",
            Severity::Error,
            "a field does not hold the bytes its `contents` gives",
        ),
        (
            Check::Valid,
            "valid",
            Severity::Error,
            "a value is outside what its `valid` allows",
        ),
        (
            Check::Enum,
            "enum",
            Severity::Warning,
            "an enum field holds a value the enum does not name",
        ),
        (
            Check::Encoding,
            "encoding",
            Severity::Warning,
            "a string is not valid in its encoding",
        ),
        (
            Check::Direction,
            "direction",
            Severity::Warning,
            "a message goes the other way than its `direction`",
        ),
    ];

    pub fn name(self) -> &'static str {
        Check::ALL.iter().find(|c| c.0 == self).map_or("", |c| c.1)
    }
}

#[derive(Clone, Debug)]
pub struct Rule {
    pub id: String,
    pub severity: Severity,
    pub section: String,
    pub summary: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LengthCovers {
    Body,
    Message,
    Datagram,
}

#[derive(Clone, Debug)]
pub struct LengthRule {
    /// Index of the header field.
    pub field: usize,
    pub covers: LengthCovers,
    pub adjust: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChecksumAlgorithm {
    Crc32,
    Crc32c,
    Sum8,
    Xor8,
}

impl ChecksumAlgorithm {
    pub const ALL: &'static [(ChecksumAlgorithm, &'static str)] = &[
        (ChecksumAlgorithm::Crc32, "crc32"),
        (ChecksumAlgorithm::Crc32c, "crc32c"),
        (ChecksumAlgorithm::Sum8, "sum8"),
        (ChecksumAlgorithm::Xor8, "xor8"),
    ];
}

/// Where a header or footer field is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Header(usize),
    Footer(usize),
}

#[derive(Clone, Debug)]
pub struct ChecksumRule {
    pub algorithm: ChecksumAlgorithm,
    pub field: Place,
    /// Offsets in the datagram; negative ones count from its end.
    pub from: i64,
    pub to: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompressionAlgorithm {
    Lz4Block,
    Lz4Frame,
    Zlib,
}

#[derive(Clone, Debug)]
pub struct CompressionRule {
    pub algorithm: CompressionAlgorithm,
    pub flag: usize,
    pub mask: u64,
    pub original_size: Option<usize>,
}

#[derive(Clone, Debug)]
pub struct Description {
    pub id: String,
    pub title: String,
    pub document: String,
    pub endian: Endian,
    pub bits_big_endian: bool,
    pub magic: Vec<u8>,
    pub ports: Vec<u16>,
    pub min_length: usize,
    pub header: Vec<Field>,
    pub footer: Vec<Field>,
    /// Index of the header field whose role is `message-type`.
    pub type_field: usize,
    pub length: Option<LengthRule>,
    pub checksum: Option<ChecksumRule>,
    pub compression: Option<CompressionRule>,
    pub many_per_datagram: bool,
    pub messages: Vec<Message>,
    pub types: Vec<TypeDef>,
    pub enums: Vec<EnumDef>,
    /// The mechanism's rules first, one per [`Check`] in its order, then the description's own.
    pub rules: Vec<Rule>,
    /// Field names by the number expressions know them by.
    pub vars: Vec<String>,
}

impl Description {
    /// The rule index of a mechanism check.
    pub fn rule_index(check: Check) -> usize {
        Check::ALL.iter().position(|c| c.0 == check).unwrap_or(0)
    }

    /// The message of a type value.
    pub fn message(&self, code: i64) -> Option<&Message> {
        self.messages.iter().find(|m| m.code == code)
    }

    /// Width of the header (every header field is fixed-width).
    pub fn header_len(&self) -> usize {
        fixed_width(&self.header, &self.types).unwrap_or(0)
    }

    pub fn footer_len(&self) -> usize {
        fixed_width(&self.footer, &self.types).unwrap_or(0)
    }
}

/// The width of a sequence when every field is fixed (bit fields counted whole bytes at the
/// end of a run), `None` when any part varies.
pub fn fixed_width(seq: &[Field], types: &[TypeDef]) -> Option<usize> {
    fixed_width_depth(seq, types, 0)
}

fn fixed_width_depth(seq: &[Field], types: &[TypeDef], depth: usize) -> Option<usize> {
    if depth > super::load::MAX_TYPE_DEPTH {
        return None;
    }
    let mut bytes = 0usize;
    let mut bits = 0usize;
    for f in seq {
        if f.cond.is_some() || f.repeat != Repeat::Once {
            return None;
        }
        if let Kind::Bits { width } = f.kind {
            bits += width as usize;
            continue;
        }
        bytes += bits.div_ceil(8);
        bits = 0;
        bytes += match (&f.kind, &f.size) {
            (Kind::Int { width, .. } | Kind::Float { width }, _) => *width as usize,
            (_, Size::Bytes(Expr::Num(n))) => usize::try_from(*n).ok()?,
            (Kind::User(t), Size::Natural) => fixed_width_depth(&types[*t].seq, types, depth + 1)?,
            _ => return None,
        };
    }
    Some(bytes + bits.div_ceil(8))
}
