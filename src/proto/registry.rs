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

use std::collections::{HashMap, HashSet};

use super::profile::{BitSlot, Profile, MASK_BITS};
use super::rules::{Rule, CATALOG};
use super::schema::{Check, Display, Field, Group, Message, Named, Node, Role, Ty};
use super::{rt, rtype};

/// The protocols of the dissector are the dialects, by their filter names: one enum for one idea.
use crate::datagram::Dialect;

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

/// The rows a field is declared in, while the builder walks the description.
#[derive(Clone, Debug)]
struct Row {
    table: String,
    /// The filter names' prefix that the column names drop, with its dot.
    prefix: String,
    /// Put before the column name (`header_`).
    column_prefix: &'static str,
    depth: usize,
}

impl Row {
    fn of_scope(scope: Scope, prefix: &str) -> Row {
        Row {
            table: scope_table(scope).into(),
            prefix: format!("{prefix}."),
            column_prefix: if matches!(scope, Scope::Header(_)) {
                "header_"
            } else {
                ""
            },
            depth: 0,
        }
    }

    fn column(&self, name: &str) -> Column {
        let rest = name.strip_prefix(&self.prefix).unwrap_or(name);
        Column {
            table: self.table.clone(),
            name: format!("{}{}", self.column_prefix, rest.replace('.', "_")),
            row_depth: self.depth,
        }
    }
}

/// Every filter field, by name.
#[derive(Debug)]
pub struct Registry {
    pub fields: Vec<FilterField>,
    index: HashMap<String, usize>,
}

/// Severities as Wireshark's `_ws.expert.severity` names them (its `PI_*` values), from the
/// dissector's mapping of the catalog's (error → Error, warning → Warning, info → Note).
pub const EXPERT_SEVERITIES: &[Named] = &[
    Named {
        value: 0x0010_0000,
        name: "Comment",
    },
    Named {
        value: 0x0020_0000,
        name: "Chat",
    },
    Named {
        value: 0x0040_0000,
        name: "Note",
    },
    Named {
        value: 0x0060_0000,
        name: "Warning",
    },
    Named {
        value: 0x0080_0000,
        name: "Error",
    },
];

/// The catalog's severities as rtype-inspect's violation fields number them (in their order).
pub const SEVERITIES: &[Named] = &[
    Named {
        value: 1,
        name: "info",
    },
    Named {
        value: 2,
        name: "warning",
    },
    Named {
        value: 3,
        name: "error",
    },
];

const CRC_STATUS: &[Named] = &[
    Named {
        value: 0,
        name: "Bad",
    },
    Named {
        value: 1,
        name: "Good",
    },
    Named {
        value: 2,
        name: "Unverified",
    },
];

/// A field of the dissector's runtime (not of the description): the generated dissector declares
/// them in [`DISSECTOR_RUNTIME`]'s order (report::lua adds each its Lua key and description).
pub struct RuntimeField {
    pub name: &'static str,
    pub label: &'static str,
    pub ty: FieldType,
    /// Shown in hexadecimal.
    pub hex: bool,
    pub values: Values,
    runtime: Runtime,
}

const fn runtime(
    name: &'static str,
    label: &'static str,
    ty: FieldType,
    runtime: Runtime,
) -> RuntimeField {
    RuntimeField {
        name,
        label,
        ty,
        hex: false,
        values: Values::None,
        runtime,
    }
}

pub const DISSECTOR_RUNTIME: &[RuntimeField] = &[
    runtime(
        "rtype.header_len",
        "Header Length",
        FieldType::Unsigned(8),
        Runtime::RtypeHeaderLen,
    ),
    RuntimeField {
        hex: true,
        ..runtime(
            "rtype.crc",
            "CRC32",
            FieldType::Unsigned(32),
            Runtime::RtypeCrc,
        )
    },
    RuntimeField {
        values: Values::Named(CRC_STATUS),
        ..runtime(
            "rtype.crc.status",
            "CRC32 Status",
            FieldType::Unsigned(8),
            Runtime::RtypeCrcStatus,
        )
    },
    runtime(
        "rtype.payload",
        "Payload",
        FieldType::Bytes,
        Runtime::RtypePayload,
    ),
    runtime(
        "rtype.undecoded",
        "Undecoded",
        FieldType::Bytes,
        Runtime::Undecoded(Dialect::Rtype),
    ),
    runtime(
        "rtype.chunk.reassembled_in",
        "Reassembled in",
        FieldType::FrameNum,
        Runtime::RtypeReassembledIn,
    ),
    runtime(
        "rtype.chunk.frame",
        "Chunk in frame",
        FieldType::FrameNum,
        Runtime::RtypeChunkFrame,
    ),
    runtime(
        "rtype.reassembled.length",
        "Reassembled Length",
        FieldType::Unsigned(32),
        Runtime::RtypeReassembledLength,
    ),
    runtime(
        "rtype.reassembled.undecoded",
        "Undecoded",
        FieldType::Bytes,
        Runtime::ReassembledUndecoded,
    ),
    runtime(
        "rtype.conversation",
        "Conversation",
        FieldType::Unsigned(32),
        Runtime::Conversation(Dialect::Rtype),
    ),
    runtime(
        "rtype.stream.time_delta",
        STREAM_DELTA_LABEL,
        FieldType::RelativeTime,
        Runtime::StreamDelta(Dialect::Rtype),
    ),
    runtime(
        "rt.undecoded",
        "Undecoded",
        FieldType::Bytes,
        Runtime::Undecoded(Dialect::Rt),
    ),
    runtime(
        "rt.conversation",
        "Conversation",
        FieldType::Unsigned(32),
        Runtime::Conversation(Dialect::Rt),
    ),
    runtime(
        "rt.stream.time_delta",
        STREAM_DELTA_LABEL,
        FieldType::RelativeTime,
        Runtime::StreamDelta(Dialect::Rt),
    ),
    runtime(
        "rtnp.framing",
        "Framing",
        FieldType::String,
        Runtime::RtnpFraming,
    ),
    runtime(
        "rtnp.envelope.segments",
        "Segment Count - 1",
        FieldType::Unsigned(32),
        Runtime::RtnpSegments,
    ),
    runtime(
        "rtnp.envelope.words",
        "Segment Words",
        FieldType::Unsigned(32),
        Runtime::RtnpWords,
    ),
    runtime(
        "rtnp.envelope.text",
        "Text",
        FieldType::String,
        Runtime::RtnpEnvelopeText,
    ),
    runtime(
        "rtnp.keepalive",
        "Keep-alive Text",
        FieldType::String,
        Runtime::RtnpKeepalive,
    ),
    runtime(
        "rtnp.text",
        "Message Text (not JSON)",
        FieldType::String,
        Runtime::RtnpText,
    ),
    runtime(
        "rtnp.type",
        "Message Type",
        FieldType::String,
        Runtime::RtnpType,
    ),
    runtime(
        "rtnp.conversation",
        "Conversation",
        FieldType::Unsigned(32),
        Runtime::Conversation(Dialect::Rtnp),
    ),
    runtime(
        "rtnp.stream.time_delta",
        STREAM_DELTA_LABEL,
        FieldType::RelativeTime,
        Runtime::StreamDelta(Dialect::Rtnp),
    ),
];

/// A stream is one direction of one conversation (as `udp.time_delta` is one UDP stream's): a
/// stall in it shows as one long delta (`session.snapshot-stall` says which ticks it lost).
const STREAM_DELTA_LABEL: &str =
    "Time since the previous datagram of the stream (conversation and direction)";

/// The fields Wireshark itself provides that filters on our traffic need.
const WIRESHARK_FIELDS: &[RuntimeField] = &[
    runtime("frame", "Frame", FieldType::Protocol, Runtime::Frame),
    runtime(
        "frame.number",
        "Frame Number",
        FieldType::Unsigned(32),
        Runtime::FrameNumber,
    ),
    runtime(
        "frame.len",
        "Frame length on the wire",
        FieldType::Unsigned(32),
        Runtime::FrameLen,
    ),
    runtime(
        "frame.cap_len",
        "Frame length stored into the capture file",
        FieldType::Unsigned(32),
        Runtime::FrameCapLen,
    ),
    runtime(
        "frame.time_relative",
        "Time since reference or first frame",
        FieldType::RelativeTime,
        Runtime::TimeRelative,
    ),
    runtime(
        "frame.time_delta",
        "Time delta from previous captured frame",
        FieldType::RelativeTime,
        Runtime::TimeDelta,
    ),
    runtime(
        "frame.time_epoch",
        "Epoch Time",
        FieldType::RelativeTime,
        Runtime::TimeEpoch,
    ),
    runtime(
        "ip",
        "Internet Protocol Version 4",
        FieldType::Protocol,
        Runtime::Ip,
    ),
    runtime("ip.src", "Source Address", FieldType::Ipv4, Runtime::IpSrc),
    runtime(
        "ip.dst",
        "Destination Address",
        FieldType::Ipv4,
        Runtime::IpDst,
    ),
    runtime(
        "ip.addr",
        "Source or Destination Address",
        FieldType::Ipv4,
        Runtime::IpAddr,
    ),
    runtime(
        "ipv6",
        "Internet Protocol Version 6",
        FieldType::Protocol,
        Runtime::Ipv6,
    ),
    runtime(
        "ipv6.src",
        "Source Address",
        FieldType::Ipv6,
        Runtime::Ipv6Src,
    ),
    runtime(
        "ipv6.dst",
        "Destination Address",
        FieldType::Ipv6,
        Runtime::Ipv6Dst,
    ),
    runtime(
        "ipv6.addr",
        "Source or Destination Address",
        FieldType::Ipv6,
        Runtime::Ipv6Addr,
    ),
    runtime(
        "udp",
        "User Datagram Protocol",
        FieldType::Protocol,
        Runtime::Udp,
    ),
    runtime(
        "udp.srcport",
        "Source Port",
        FieldType::Unsigned(16),
        Runtime::UdpSrcPort,
    ),
    runtime(
        "udp.dstport",
        "Destination Port",
        FieldType::Unsigned(16),
        Runtime::UdpDstPort,
    ),
    runtime(
        "udp.port",
        "Source or Destination Port",
        FieldType::Unsigned(16),
        Runtime::UdpPort,
    ),
    runtime(
        "udp.length",
        "Length",
        FieldType::Unsigned(16),
        Runtime::UdpLength,
    ),
    runtime(
        "_ws.expert",
        "Expert Info",
        FieldType::Protocol,
        Runtime::Expert,
    ),
    RuntimeField {
        hex: true,
        values: Values::Named(EXPERT_SEVERITIES),
        ..runtime(
            "_ws.expert.severity",
            "Severity level",
            FieldType::Unsigned(32),
            Runtime::ExpertSeverity,
        )
    },
];

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

fn runtime_field(f: &RuntimeField, provider: Provider) -> FilterField {
    FilterField {
        column: None,
        name: f.name.into(),
        label: f.label.into(),
        ty: f.ty,
        hex: f.hex,
        values: f.values,
        source: Source::Runtime(f.runtime),
        provider,
    }
}

/// Builds the registry by walking the description in the dissector generator's order, naming
/// fields by its rules.
struct Builder<'p> {
    /// The snapshot layouts whose masked fields are declared, the first's by name first.
    layouts: &'p [Profile],
    fields: Vec<FilterField>,
    index: HashMap<String, usize>,
    /// Names taken: the runtime's, the protocols', the rules' and every field's.
    used: HashSet<String>,
    /// The signature (the declaration's `Debug`) each described name was declared with, and the
    /// extra keys of fields sharing a name.
    signatures: HashMap<String, String>,
    /// Described fields another of the same name and another integer type may share.
    shareable: HashMap<String, &'static Field>,
    /// The rows the fields being declared go to.
    row: Row,
    /// The described fields of each role of [`ROLE_FIELDS`], with their protocol.
    roles: Vec<(Dialect, Role, usize)>,
}

impl<'p> Builder<'p> {
    /// A described dialect's fields, named as its description's field registry names them (the
    /// one naming algorithm of `describe::names`), read by the pipeline's interpreter.
    fn described_dialect(&mut self, index: u8, loaded: &crate::describe::loaded::Loaded) {
        use crate::describe::model::Kind;
        use crate::describe::names;
        let dialect = Dialect::Described(index);
        for (i, f) in loaded.described.names.fields.iter().enumerate() {
            let (ty, runtime) = match i {
                names::PROTOCOL => (FieldType::Protocol, Runtime::Protocol(dialect)),
                names::MESSAGE => (FieldType::String, Runtime::DescribedMessage(index)),
                names::VIOLATION => (FieldType::String, Runtime::Violation(dialect)),
                _ => {
                    let ty = match (f.kind, f.divisor) {
                        (Kind::Int { .. } | Kind::Bits { .. }, Some(_)) => FieldType::Double,
                        (
                            Kind::Int {
                                width,
                                signed: false,
                            },
                            _,
                        ) => FieldType::Unsigned(width * 8),
                        (
                            Kind::Int {
                                width,
                                signed: true,
                            },
                            _,
                        ) => FieldType::Signed(width * 8),
                        (Kind::Bits { width }, _) => {
                            FieldType::Unsigned(width.next_power_of_two().max(8))
                        }
                        (Kind::Float { width: 4 }, _) => FieldType::Float,
                        (Kind::Float { .. }, _) => FieldType::Double,
                        (Kind::Str | Kind::Strz, _) => FieldType::String,
                        (Kind::Bytes, _) => FieldType::Bytes,
                        (Kind::User(_), _) => FieldType::None,
                    };
                    (ty, Runtime::DescribedField(index, i as u16))
                }
            };
            let values = f
                .enumeration
                .and_then(|e| loaded.enum_names.get(e))
                .map_or(Values::None, |n| Values::Named(n));
            self.push(FilterField {
                column: None,
                name: f.name.clone(),
                label: f.label.clone(),
                ty,
                hex: false,
                values,
                source: Source::Runtime(runtime),
                provider: Provider::Dissector,
            });
        }
    }

    fn new(layouts: &'p [Profile]) -> Self {
        let mut used: HashSet<String> = DISSECTOR_RUNTIME
            .iter()
            .map(|f| f.name.to_string())
            .collect();
        used.extend(Dialect::ALL.iter().map(|p| p.name().to_string()));
        used.extend(CATALOG.iter().map(|r| r.id.to_string()));
        used.extend(MALFORMED.iter().map(|id| id.to_string()));
        for p in Dialect::ALL {
            used.extend(ROLE_FIELDS.iter().map(|r| role_field_name(p, r)));
        }
        Builder {
            layouts,
            fields: Vec::new(),
            index: HashMap::new(),
            used,
            signatures: HashMap::new(),
            shareable: HashMap::new(),
            row: Row::of_scope(Scope::Reassembled, ""),
            roles: Vec::new(),
        }
    }

    /// The fields of [`ROLE_FIELDS`], for each protocol whose described fields have the role.
    fn role_fields(&mut self) {
        for p in Dialect::ALL {
            for r in ROLE_FIELDS {
                let of: Vec<usize> = self
                    .roles
                    .iter()
                    .filter(|(q, role, _)| *q == p && *role == r.role)
                    .map(|x| x.2)
                    .collect();
                if of.is_empty() {
                    continue;
                }
                let ty = self.fields[of[0]].ty;
                self.push(FilterField {
                    column: None,
                    name: role_field_name(p, r),
                    label: r.label.into(),
                    ty,
                    hex: false,
                    values: Values::None,
                    source: Source::Role { role: r.role, of },
                    provider: Provider::Dissector,
                });
            }
        }
    }

    fn push(&mut self, field: FilterField) -> usize {
        let id = self.fields.len();
        self.index.insert(field.name.clone(), id);
        self.fields.push(field);
        id
    }

    fn finish(self) -> Registry {
        Registry {
            fields: self.fields,
            index: self.index,
        }
    }

    /// Every field of the description, in the generator's order: the headers, rtype's messages
    /// (body, then variants), the reassembled snapshot, rt's messages.
    fn described(&mut self) {
        for nodes in [rtype::HEADER, rtype::HEADER_15] {
            self.header(nodes, Dialect::Rtype);
        }
        self.header(rt::HEADER, Dialect::Rt);
        self.messages(Dialect::Rtype, rtype::MESSAGES);
        let snapshot = snapshot_message();
        let mut path = Vec::new();
        self.row = Row::of_scope(Scope::Reassembled, "rtype.reassembled");
        self.nodes(
            snapshot.body,
            "rtype.reassembled",
            Scope::Reassembled,
            &mut path,
        );
        self.messages(Dialect::Rt, rt::MESSAGES);
    }

    fn header(&mut self, nodes: &'static [Node], protocol: Dialect) {
        self.row = Row::of_scope(Scope::Header(protocol), protocol.name());
        for node in nodes {
            if let Node::Field(f) = node {
                let abbrev = format!("{}.{}", protocol.name(), f.name);
                self.declare(abbrev, f, protocol.name(), Scope::Header(protocol), &[]);
            }
        }
    }

    fn messages(&mut self, protocol: Dialect, messages: &'static [Message]) {
        for m in messages {
            let prefix = format!("{}.{}", protocol.name(), m.short);
            let scope = Scope::Message(protocol, m.code);
            // A message's own table drops the message from its columns' names; its protocol's
            // table keeps it (`input_pos_x`).
            let own = OWN_TABLES.iter().any(|(s, _)| *s == scope);
            self.row = Row::of_scope(scope, if own { &prefix } else { protocol.name() });
            let mut path = Vec::new();
            self.nodes(m.body, &prefix, scope, &mut path);
            for v in m.variants {
                if v.extends_body {
                    self.nodes(m.body, &prefix, scope, &mut path);
                }
                self.nodes(v.nodes, &prefix, scope, &mut path);
            }
        }
    }

    fn nodes(
        &mut self,
        nodes: &'static [Node],
        prefix: &str,
        scope: Scope,
        path: &mut Vec<&'static str>,
    ) {
        for node in nodes {
            match node {
                Node::Field(f) => {
                    self.declare(format!("{prefix}.{}", f.name), f, "", scope, path);
                }
                Node::Repeat { count, item } => {
                    self.declare(format!("{prefix}.{}", count.name), count, "", scope, path);
                    path.push(item.filter);
                    let items = format!("{prefix}.{}", item.filter);
                    let outer = std::mem::replace(
                        &mut self.row,
                        Row {
                            table: items_table(scope, item),
                            prefix: format!("{items}."),
                            column_prefix: "",
                            depth: path.len(),
                        },
                    );
                    self.nodes(item.nodes, &items, scope, path);
                    self.row = outer;
                    path.pop();
                }
                Node::Switch { tag, cases, .. } => {
                    self.declare(format!("{prefix}.{}", tag.name), tag, "", scope, path);
                    for case in *cases {
                        path.push(case.group.filter);
                        let inner = format!("{prefix}.{}", case.group.filter);
                        self.nodes(case.group.nodes, &inner, scope, path);
                        path.pop();
                    }
                }
                Node::Masked => {
                    for (i, layout) in self.layouts.iter().enumerate() {
                        for bit in 0..MASK_BITS {
                            let BitSlot::Field(f) = layout.bits()[bit] else {
                                continue;
                            };
                            let abbrev = format!("{prefix}.{}", f.name);
                            if i > 0 && self.also_declares(&abbrev, f) {
                                continue;
                            }
                            self.declare(abbrev, f, "", scope, path);
                        }
                    }
                }
            }
        }
    }

    /// Declares `f` under `abbrev` as the generator does (once; another field wanting the same
    /// name gets a numbered one, unless it may share it), with its raw value and flag bits.
    fn declare(
        &mut self,
        abbrev: String,
        f: &'static Field,
        bits_prefix: &str,
        scope: Scope,
        path: &[&'static str],
    ) {
        let signature = format!("{f:?}");
        if self.share(&abbrev, f, &signature) {
            return;
        }
        let mut name = abbrev.clone();
        let mut n = 1;
        loop {
            match self.signatures.get(&name) {
                Some(sig) if *sig == signature => {
                    // The same field again (a variant repeating the body): one more declaration.
                    let id = self.index[&name];
                    if let Source::Described { decls, .. } = &mut self.fields[id].source {
                        if !decls.iter().any(|d| std::ptr::eq(*d, f)) {
                            decls.push(f);
                        }
                    }
                    return;
                }
                None if !self.used.contains(&name) => break,
                _ => {
                    n += 1;
                    name = format!("{abbrev}_{n}");
                }
            }
        }
        self.signatures.insert(name.clone(), signature);
        self.used.insert(name.clone());

        let signed = matches!(f.ty, Ty::I16 | Ty::I32);
        let unsigned = matches!(f.ty, Ty::U8 | Ty::U16 | Ty::U32);
        let hex = matches!(
            f.display,
            Display::Hex | Display::Flags(_) | Display::MessageType
        ) && !signed;
        let array = f.array > 0;
        let text_array = array && matches!(f.display, Display::Text);
        let scaled = !array && f.divisor != 1 && f.ty != Ty::F32 && f.ty != Ty::Str8;
        let ty = match f.ty {
            _ if text_array => FieldType::String,
            _ if array => FieldType::Bytes,
            Ty::F32 => FieldType::Float,
            Ty::Str8 => FieldType::String,
            _ if scaled => FieldType::Double,
            ty => integer_type(ty),
        };
        let values = match (ty.is_integer(), f.display) {
            (true, Display::Enum(named)) => Values::Named(named),
            (true, Display::MessageType) => Values::MessageTypes,
            _ => Values::None,
        };
        let id = self.push(FilterField {
            column: Some(self.row.column(&name)),
            name: name.clone(),
            label: f.label.into(),
            ty,
            hex: hex && !scaled,
            values,
            source: Source::Described {
                scope,
                path: path.to_vec(),
                decls: vec![f],
            },
            provider: Provider::Dissector,
        });
        if f.role != Role::None && ROLE_FIELDS.iter().any(|r| r.role == f.role) {
            self.roles.push((scope.protocol(), f.role, id));
        }
        if scaled {
            let raw = self.unique(format!("{name}.raw"));
            self.push(FilterField {
                column: None,
                name: raw,
                label: format!("{} (raw)", f.label),
                ty: integer_type(f.ty),
                hex,
                values: Values::None,
                source: Source::Raw { of: id },
                provider: Provider::Dissector,
            });
        }
        let plain_unsigned = unsigned && !scaled && !array;
        if let (Display::Flags(named), true) = (f.display, plain_unsigned) {
            let parent = if bits_prefix.is_empty() {
                name.clone()
            } else {
                bits_prefix.to_string()
            };
            for flag in flags_of(named, f.ty) {
                let bit_name = self.unique(format!("{parent}.{}", flag.name));
                let ty = if flag.value.count_ones() == 1 {
                    FieldType::Boolean
                } else {
                    integer_type(f.ty)
                };
                self.push(FilterField {
                    column: None,
                    name: bit_name,
                    label: flag.name.into(),
                    ty,
                    hex: false,
                    values: Values::None,
                    source: Source::Bits {
                        of: id,
                        mask: flag.value,
                    },
                    provider: Provider::Dissector,
                });
            }
        }
        if shareable(f) {
            self.shareable.insert(name, f);
        }
    }

    /// A field of a variant with the name of another field of the same message that only
    /// differs from it by its integer type: both are one signed 32-bit field (the generator's
    /// `share`). Returns whether `f` was such a field.
    fn share(&mut self, abbrev: &str, f: &'static Field, signature: &str) -> bool {
        if !self.shareable.contains_key(abbrev)
            || !shareable(f)
            || self.signatures.get(abbrev).is_some_and(|s| s == signature)
        {
            return false;
        }
        let mut n = 2;
        let key = loop {
            let key = format!("{abbrev}#{n}");
            match self.signatures.get(&key) {
                Some(s) if s == signature => return true,
                Some(_) => n += 1,
                None => break key,
            }
        };
        self.signatures.insert(key, signature.to_string());
        let id = self.index[abbrev];
        let shared = &mut self.fields[id];
        shared.ty = FieldType::Signed(32);
        if let Source::Described { decls, .. } = &mut shared.source {
            decls.push(f);
        }
        true
    }

    /// Adds `f` (another layout's masked field) to the declarations of the field already named
    /// `abbrev`, if there is one.
    fn also_declares(&mut self, abbrev: &str, f: &'static Field) -> bool {
        let Some(&id) = self.index.get(abbrev) else {
            return false;
        };
        if let Source::Described { decls, .. } = &mut self.fields[id].source {
            if !decls.iter().any(|d| std::ptr::eq(*d, f)) {
                decls.push(f);
            }
        }
        true
    }

    /// A name nobody has taken yet, based on `abbrev`.
    fn unique(&mut self, abbrev: String) -> String {
        let mut name = abbrev.clone();
        let mut n = 1;
        while self.used.contains(&name) {
            n += 1;
            name = format!("{abbrev}_{n}");
        }
        self.used.insert(name.clone());
        name
    }
}

fn integer_type(ty: Ty) -> FieldType {
    match ty {
        Ty::U8 => FieldType::Unsigned(8),
        Ty::U16 => FieldType::Unsigned(16),
        Ty::U32 => FieldType::Unsigned(32),
        Ty::I16 => FieldType::Signed(16),
        Ty::I32 => FieldType::Signed(32),
        Ty::F32 | Ty::Str8 => unreachable!("not an integer type"),
    }
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
mod tests {
    use super::*;

    #[test]
    fn names_and_types_follow_the_dissector() {
        let r = Registry::new(&Profile::document());
        let ty = |name: &str| r.field(r.get(name).unwrap()).ty;
        assert_eq!(ty("rtype.msg_type"), FieldType::Unsigned(8));
        assert_eq!(ty("rtype.compressed"), FieldType::Boolean);
        assert_eq!(ty("rtype.version"), FieldType::Unsigned(8));
        assert_eq!(ty("rtype.snapshot.entity.pos_x"), FieldType::Float);
        assert_eq!(ty("rt.input.aim_direction_x"), FieldType::Signed(32));
        assert_eq!(ty("rt.connect.player_name"), FieldType::String);
        assert_eq!(
            ty("rt.animation_snapshot.entity.animation_data"),
            FieldType::Bytes
        );
        assert_eq!(ty("rtype.crc.mismatch"), FieldType::None);
        assert_eq!(ty("frame.time_relative"), FieldType::RelativeTime);
        let msg = r.field(r.get("rtype.msg_type").unwrap());
        assert_eq!(msg.values.value_of("server_snapshot"), Some(0x14));
        assert!(r.get("rtype.snapshot.entitiy.id").is_none());
        assert_eq!(
            r.nearest("rtype.snapshot.entitiy.id", 1),
            ["rtype.snapshot.entity.id"]
        );
        // Both layouts of PLAYER_INPUT's aim read into the one field.
        let Source::Described { decls, .. } =
            &r.field(r.get("rt.input.aim_direction_x").unwrap()).source
        else {
            panic!()
        };
        assert_eq!(decls.len(), 2);
        // Every entity id of a protocol, under one name.
        let id = r.get("rtype.entity.id").unwrap();
        let Source::Role { role, of } = &r.field(id).source else {
            panic!()
        };
        assert_eq!(*role, Role::EntityId);
        let names: Vec<&str> = of.iter().map(|&f| r.field(f).name.as_str()).collect();
        assert_eq!(
            names,
            [
                "rtype.snapshot.entity.id",
                "rtype.entity_spawn.entity_id",
                "rtype.entity_destroyed.entity_id",
                "rtype.snapshot_chunk.entity.id",
                "rtype.reassembled.entity.id"
            ]
        );
        assert_eq!(r.field(id).ty, FieldType::Unsigned(32));
        let Source::Role { of, .. } = &r.field(r.get("rt.entity.id").unwrap()).source else {
            panic!()
        };
        assert!(of.len() > 10, "{}", of.len());
        assert!(r.get("rtnp.entity.id").is_none());
        let scaled = Registry::new(&Profile::bundled("reference-17byte").unwrap());
        let pos_x = scaled.get("rtype.snapshot.entity.pos_x").unwrap();
        assert_eq!(scaled.field(pos_x).ty, FieldType::Double);
        let raw = scaled.get("rtype.snapshot.entity.pos_x.raw").unwrap();
        assert!(matches!(scaled.field(raw).source, Source::Raw { of } if of == pos_x));
    }
}
