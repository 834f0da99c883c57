//! The field registry: every display-filter field, by the name the generated Wireshark dissector
//! registers it under, with its type, label, value strings and where its value comes from. It
//! is Wireshark's `hf` table for the Rust side: built once from the description (and the
//! snapshot profile, whose mask bits are fields too), then used by reference by the display
//! filter compiler, `rtype-inspect fields` and the protocol reference.
//!
//! The names follow the dissector's rule (`<protocol>.<message>.<groups…>.<field>`, flag bits
//! under their field, a scaled field's raw integer under `.raw`, a name already taken by another
//! field numbered `_2`), in the same order, so that both name every field alike; a test holds the
//! dissector's ProtoFields equal to this table. Besides them: the protocols themselves, the
//! rules (Wireshark registers each expert info's ID as a field), the frame, IP and UDP fields
//! Wireshark provides, and what only rtype-inspect knows (conversations, violations raised by the
//! session).

use std::collections::HashMap;

use super::profile::{BitSlot, Profile, MASK_BITS};
use super::rules::{Rule, CATALOG};
use super::schema::{Check, Display, Field, Group, Message, Named, Node, Role, Ty};
use super::{rt, rtype};

/// The protocols of the dissector are the dialects, by their filter names: one enum for one idea.
use crate::datagram::Dialect;

mod build;
mod runtime;

use build::Builder;
use runtime::{runtime_field, WIRESHARK_FIELDS};
pub use runtime::{RuntimeField, DISSECTOR_RUNTIME, EXPERT_SEVERITIES, SEVERITIES};

/// A field's type, as Wireshark's `FT_*` types name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    /// A protocol: only present or not.
    Protocol,
    /// No value, only present or not (an expert info).
    None,
    /// A flag: true or false, present whenever the field it is a bit of is.
    Boolean,
    Unsigned(u8),
    Signed(u8),
    /// A single-precision float (the wire's f32), compared as a double.
    Float,
    Double,
    String,
    Bytes,
    /// A frame number.
    FrameNum,
    /// Seconds relative to the first frame, kept in nanoseconds.
    RelativeTime,
    Ipv4,
    Ipv6,
}

impl FieldType {
    /// Wireshark's name of the type (`tshark -G fields`).
    pub const fn ft_name(self) -> &'static str {
        match self {
            FieldType::Protocol => "FT_PROTOCOL",
            FieldType::None => "FT_NONE",
            FieldType::Boolean => "FT_BOOLEAN",
            FieldType::Unsigned(8) => "FT_UINT8",
            FieldType::Unsigned(16) => "FT_UINT16",
            FieldType::Unsigned(_) => "FT_UINT32",
            FieldType::Signed(8) => "FT_INT8",
            FieldType::Signed(16) => "FT_INT16",
            FieldType::Signed(_) => "FT_INT32",
            FieldType::Float => "FT_FLOAT",
            FieldType::Double => "FT_DOUBLE",
            FieldType::String => "FT_STRING",
            FieldType::Bytes => "FT_BYTES",
            FieldType::FrameNum => "FT_FRAMENUM",
            FieldType::RelativeTime => "FT_RELATIVE_TIME",
            FieldType::Ipv4 => "FT_IPv4",
            FieldType::Ipv6 => "FT_IPv6",
        }
    }

    /// How people call the type (error messages, `fields`).
    pub const fn describe(self) -> &'static str {
        match self {
            FieldType::Protocol => "protocol",
            FieldType::None => "label",
            FieldType::Boolean => "boolean",
            FieldType::Unsigned(8) => "unsigned integer (1 byte)",
            FieldType::Unsigned(16) => "unsigned integer (2 bytes)",
            FieldType::Unsigned(_) => "unsigned integer (4 bytes)",
            FieldType::Signed(8) => "signed integer (1 byte)",
            FieldType::Signed(16) => "signed integer (2 bytes)",
            FieldType::Signed(_) => "signed integer (4 bytes)",
            FieldType::Float => "single-precision float",
            FieldType::Double => "double-precision float",
            FieldType::String => "character string",
            FieldType::Bytes => "byte sequence",
            FieldType::FrameNum => "frame number",
            FieldType::RelativeTime => "time offset",
            FieldType::Ipv4 => "IPv4 address",
            FieldType::Ipv6 => "IPv6 address",
        }
    }

    pub const fn is_integer(self) -> bool {
        matches!(
            self,
            FieldType::Unsigned(_) | FieldType::Signed(_) | FieldType::FrameNum
        )
    }
}

/// The names of a field's values.
#[derive(Clone, Copy, Debug)]
pub enum Values {
    None,
    Named(&'static [Named]),
    /// rtype's message types (the dissector's `VS_MSG`).
    MessageTypes,
}

impl Values {
    /// The value named `name` (case-insensitively, as Wireshark matches value strings).
    pub fn value_of(self, name: &str) -> Option<u32> {
        match self {
            Values::None => None,
            Values::Named(list) => list
                .iter()
                .find(|n| n.name.eq_ignore_ascii_case(name))
                .map(|n| n.value),
            Values::MessageTypes => rtype::MESSAGES
                .iter()
                .find(|m| m.name.eq_ignore_ascii_case(name))
                .map(|m| m.code.into()),
        }
    }

    /// The name of `value`, if it has one.
    pub fn name_of(self, value: u32) -> Option<&'static str> {
        match self {
            Values::None => None,
            Values::Named(list) => list.iter().find(|n| n.value == value).map(|n| n.name),
            Values::MessageTypes => u8::try_from(value)
                .ok()
                .and_then(rtype::message)
                .map(|m| m.name),
        }
    }

    /// Every (value, name), for listings.
    pub fn list(self) -> Vec<(u32, &'static str)> {
        match self {
            Values::None => Vec::new(),
            Values::Named(list) => list.iter().map(|n| (n.value, n.name)).collect(),
            Values::MessageTypes => rtype::MESSAGES
                .iter()
                .map(|m| (u32::from(m.code), m.name))
                .collect(),
        }
    }
}

/// Who provides a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    /// The generated dissector registers it (a ProtoField, or an expert info's ID).
    Dissector,
    /// Wireshark itself (frame, IP, UDP, expert infos as a whole).
    Wireshark,
    /// Only rtype-inspect: facts of the whole capture the dissector does not keep.
    Inspect,
}

/// Where a message field sits: under which header or message of which protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The protocol's header (rtype's 17- and 15-byte layouts alike).
    Header(Dialect),
    /// The body (or a variant) of one message type.
    Message(Dialect, u8),
    /// rtype's snapshot rebuilt from its chunks (laid out as SERVER_SNAPSHOT).
    Reassembled,
}

/// A value the pipeline knows about a datagram rather than reads from a described field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// The protocol is in the datagram.
    Protocol(Dialect),
    Frame,
    FrameNumber,
    /// The frame's length on the wire, and as captured.
    FrameLen,
    FrameCapLen,
    TimeRelative,
    /// Since the frame before it in the file, and since the epoch.
    TimeDelta,
    TimeEpoch,
    Ip,
    IpSrc,
    IpDst,
    /// Source or destination (Wireshark's any-of field).
    IpAddr,
    Ipv6,
    Ipv6Src,
    Ipv6Dst,
    Ipv6Addr,
    Udp,
    UdpSrcPort,
    UdpDstPort,
    UdpPort,
    /// The UDP length field: the header's 8 bytes and the payload.
    UdpLength,
    /// Any expert info (the datagram's own findings, as the dissector raises them).
    Expert,
    ExpertSeverity,
    /// rtype-inspect's conversation number, under the datagram's protocol.
    Conversation(Dialect),
    /// The time since the previous datagram of the same stream (its conversation and direction),
    /// under the datagram's protocol.
    StreamDelta(Dialect),
    /// Every violation of the datagram, its own and the session's, by rule ID.
    Violation(Dialect),
    ViolationSeverity(Dialect),
    RtypeHeaderLen,
    RtypeCrc,
    RtypeCrcStatus,
    RtypePayload,
    /// Bytes the description could not interpret, in the protocol's message.
    Undecoded(Dialect),
    /// Bytes the description could not interpret in the reassembled snapshot.
    ReassembledUndecoded,
    RtypeReassembledIn,
    RtypeChunkFrame,
    RtypeReassembledLength,
    RtnpFraming,
    RtnpSegments,
    RtnpWords,
    RtnpEnvelopeText,
    RtnpKeepalive,
    RtnpText,
    RtnpType,
    /// A field of a described dialect (by its place among the run's, and in its names).
    DescribedField(u8, u16),
    /// A described dialect's message name.
    DescribedMessage(u8),
}

/// Where a field's value comes from.
#[derive(Clone, Debug)]
pub enum Source {
    /// A field of the description: in `scope`, under the repeats and switch cases whose filter
    /// segments are `path`, declared by one of `decls` (variants may declare it again).
    Described {
        scope: Scope,
        path: Vec<&'static str>,
        decls: Vec<&'static Field>,
    },
    /// Bits `mask` of another field: a flag (boolean) or a small number, shifted down.
    Bits {
        of: usize,
        mask: u32,
    },
    /// The raw integer of a scaled field (the field shows it divided).
    Raw {
        of: usize,
    },
    Runtime(Runtime),
    /// Present when the datagram broke the rule (Wireshark registers every expert info's ID).
    Rule(Rule),
    /// Every occurrence of the described fields `of`, which are the protocol's fields of `role`
    /// ([`ROLE_FIELDS`]), in the order the walk meets them.
    Role {
        role: Role,
        of: Vec<usize>,
    },
}

/// A field for every field of a role, whatever message carries it, under each protocol whose
/// description has the role (`rtype.entity.id`, `rt.entity.id`): one name to follow one thing
/// across messages, as Wireshark's `udp.port` is either port. Its name after the protocol's,
/// and its label.
pub struct RoleField {
    pub role: Role,
    pub suffix: &'static str,
    pub label: &'static str,
}

pub const ROLE_FIELDS: &[RoleField] = &[RoleField {
    role: Role::EntityId,
    suffix: "entity.id",
    label: "Entity ID (any message)",
}];

impl Scope {
    /// The protocol whose fields the scope holds.
    pub fn protocol(self) -> Dialect {
        match self {
            Scope::Header(p) | Scope::Message(p, _) => p,
            Scope::Reassembled => Dialect::Rtype,
        }
    }
}

/// One filter field.
#[derive(Clone, Debug)]
pub struct FilterField {
    pub name: String,
    pub label: String,
    pub ty: FieldType,
    /// Shown in hex (for listings, as the dissector's `base.HEX`).
    pub hex: bool,
    pub values: Values,
    pub source: Source,
    pub provider: Provider,
    /// Where a described field's values go in the Parquet dataset (`None` for the rest: a flag
    /// bit or a raw integer is a view of a column, the runtime's fields are the tables' own).
    pub column: Option<Column>,
}

/// A described field's place in the Parquet dataset: a table and a column, named from the
/// field's filter name as the JSON's keys are from the description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The table of its rows: its scope's ([`scope_table`]) or, under a repeat, the innermost
    /// repeat's items' ([`items_table`]).
    pub table: String,
    /// The filter name after the row's prefix (the protocol, the message for a scope's own row,
    /// the repeat for its items), dots as underscores; a header field's starts with `header_`,
    /// as the JSON has it under `header`.
    pub name: String,
    /// How many segments of the field's path lead to the repeat whose items are the rows (0: the
    /// scope's own row).
    pub row_depth: usize,
}

/// Messages whose fields have a table of their own rather than their protocol's: LevelEvent's
/// switch of event types reads best as rows of events.
const OWN_TABLES: &[(Scope, &str)] = &[(
    Scope::Message(Dialect::Rtype, rtype::LEVEL_EVENT),
    "level_events",
)];

/// The table of a scope's own rows: one per datagram (its protocol's, or its message's own), or
/// per reassembled snapshot.
pub fn scope_table(scope: Scope) -> &'static str {
    if let Some((_, table)) = OWN_TABLES.iter().find(|(s, _)| *s == scope) {
        return table;
    }
    match scope {
        Scope::Header(Dialect::Rtype) | Scope::Message(Dialect::Rtype, _) => "datagrams",
        Scope::Header(Dialect::Rt) | Scope::Message(Dialect::Rt, _) => "rt_messages",
        Scope::Header(Dialect::Rtnp) | Scope::Message(Dialect::Rtnp, _) => "rtnp_messages",
        // A described dialect's fields are not in this registry: `dialect fields` lists them.
        Scope::Header(Dialect::Described(_)) | Scope::Message(Dialect::Described(_), _) => {
            "datagrams"
        }
        Scope::Reassembled => "reassembled",
    }
}

/// The table of a repeat's items: the items' JSON name (`entities`, `archetypes`), after the
/// protocol's or the reassembled snapshot's prefix.
pub fn items_table(scope: Scope, item: &Group) -> String {
    let prefix = match scope {
        Scope::Reassembled => "reassembled_",
        Scope::Header(Dialect::Rt) | Scope::Message(Dialect::Rt, _) => "rt_",
        Scope::Header(Dialect::Rtnp) | Scope::Message(Dialect::Rtnp, _) => "rtnp_",
        Scope::Header(Dialect::Rtype | Dialect::Described(_))
        | Scope::Message(Dialect::Rtype | Dialect::Described(_), _) => "",
    };
    format!("{prefix}{}", item.name)
}

/// Every filter field, by name.
#[derive(Debug)]
pub struct Registry {
    pub fields: Vec<FilterField>,
    index: HashMap<String, usize>,
}

/// Filter names of the expert infos the dissector raises when it fails itself (never expected;
/// a safety net), one per protocol.
pub const MALFORMED: &[&str] = &["rtype.malformed", "rt.malformed", "rtnp.malformed"];

impl Registry {
    /// The registry for a run decoding snapshots with `profile`.
    pub fn new(profile: &Profile) -> Registry {
        Registry::for_layouts(std::slice::from_ref(profile))
    }

    /// The registry for a run whose conversations are read with any of `layouts` (the first the
    /// run's): a masked field of another layout is one more declaration of the first's field of
    /// its name, so that a display filter names it alike whichever layout read it.
    pub fn for_layouts(layouts: &[Profile]) -> Registry {
        let mut b = Builder::new(layouts);
        for p in Dialect::ALL {
            b.push(FilterField {
                column: None,
                name: p.name().into(),
                label: match p {
                    Dialect::Rtype => "R-Type UDP Protocol",
                    Dialect::Rt => "R-Type RT Protocol (document 003)",
                    Dialect::Rtnp => "R-Type RTNP Protocol (document 004)",
                    Dialect::Described(_) => "a described dialect",
                }
                .into(),
                ty: FieldType::Protocol,
                hex: false,
                values: Values::None,
                source: Source::Runtime(Runtime::Protocol(p)),
                provider: Provider::Dissector,
            });
        }
        for f in DISSECTOR_RUNTIME {
            b.push(runtime_field(f, Provider::Dissector));
        }
        b.described();
        b.role_fields();
        for rule in Rule::all() {
            b.push(FilterField {
                column: None,
                name: rule.id().into(),
                label: rule.info().summary.into(),
                ty: FieldType::None,
                hex: false,
                values: Values::None,
                source: Source::Rule(*rule),
                // The dissector raises the cut datagram's capture.snaplen too.
                provider: if (rule.id().starts_with("capture.")
                    || rule.id().starts_with("session."))
                    && *rule != Rule::CaptureSnaplen
                {
                    Provider::Inspect
                } else {
                    Provider::Dissector
                },
            });
        }
        for f in WIRESHARK_FIELDS {
            b.push(runtime_field(f, Provider::Wireshark));
        }
        for p in Dialect::ALL {
            let name = p.name();
            for (suffix, label, ty, values, runtime) in [
                (
                    "violation",
                    "Violation (rule ID), the datagram's and the session's",
                    FieldType::String,
                    Values::None,
                    Runtime::Violation(p),
                ),
                (
                    "violation.severity",
                    "Violation severity",
                    FieldType::Unsigned(8),
                    Values::Named(SEVERITIES),
                    Runtime::ViolationSeverity(p),
                ),
            ] {
                b.push(FilterField {
                    column: None,
                    name: format!("{name}.{suffix}"),
                    label: label.into(),
                    ty,
                    hex: false,
                    values,
                    source: Source::Runtime(runtime),
                    provider: Provider::Inspect,
                });
            }
        }
        for (i, loaded) in crate::describe::loaded::all().iter().enumerate() {
            b.described_dialect(i as u8, loaded);
        }
        b.finish()
    }

    pub fn get(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    pub fn field(&self, id: usize) -> &FilterField {
        &self.fields[id]
    }

    /// The ProtoField names of the dissector, for `protocol` (every field the generated Lua
    /// registers with that protocol).
    pub fn dissector_fields(&self, protocol: Dialect) -> impl Iterator<Item = &FilterField> {
        let prefix = format!("{}.", protocol.name());
        self.fields.iter().filter(move |f| {
            f.provider == Provider::Dissector
                && f.name.starts_with(&prefix)
                && !matches!(f.source, Source::Rule(_))
        })
    }

    /// Every field's filter name.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|f| f.name.as_str())
    }

    /// Names close to `name`, best first, for "did you mean".
    pub fn nearest(&self, name: &str, max: usize) -> Vec<&str> {
        super::near::nearest(name, self.names(), max)
    }
}

/// The filter name of role field `r` under protocol `p`.
pub fn role_field_name(p: Dialect, r: &RoleField) -> String {
    format!("{}.{}", p.name(), r.suffix)
}

/// The flags of a flags field of type `ty` that are fields of their own: those with bits set,
/// all within the field's width.
pub fn flags_of(named: &'static [Named], ty: Ty) -> impl Iterator<Item = &'static Named> {
    let width_bits = ty.width().unwrap_or(0) * 8;
    let max = if width_bits >= 32 {
        u32::MAX
    } else {
        (1u32 << width_bits) - 1
    };
    named
        .iter()
        .filter(move |n| n.value != 0 && n.value & !max == 0)
}

/// Whether a field may share its name (and the dissector's ProtoField) with another of another
/// integer type: a plain decimal integer that a signed 32-bit one holds.
pub fn shareable(f: &Field) -> bool {
    matches!(f.ty, Ty::U8 | Ty::U16 | Ty::I16 | Ty::I32)
        && f.array == 0
        && f.divisor == 1
        && matches!(f.display, Display::Dec)
        && f.check == Check::None
}

/// The message whose body is one entity repeat: SERVER_SNAPSHOT, the shape chunks reassemble to.
pub fn snapshot_message() -> &'static Message {
    rtype::MESSAGES
        .iter()
        .find(|m| matches!(m.body, [Node::Repeat { count, .. }] if count.role == Role::EntityCount))
        .expect("the description has a snapshot message")
}

/// Whether two declarations are the same field (as the generator compares them, by content).
pub fn same_field(a: &Field, b: &Field) -> bool {
    if std::ptr::eq(a, b) {
        return true;
    }
    let named = |x: &[Named], y: &[Named]| {
        x.len() == y.len()
            && x.iter()
                .zip(y)
                .all(|(p, q)| p.value == q.value && p.name == q.name)
    };
    let display = match (a.display, b.display) {
        (Display::Enum(x), Display::Enum(y)) | (Display::Flags(x), Display::Flags(y)) => {
            named(x, y)
        }
        (x, y) => std::mem::discriminant(&x) == std::mem::discriminant(&y),
    };
    a.name == b.name
        && a.label == b.label
        && a.ty == b.ty
        && display
        && a.role == b.role
        && a.check == b.check
        && a.divisor == b.divisor
        && a.array == b.array
}

#[cfg(test)]
mod tests;
