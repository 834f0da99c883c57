//! The Wireshark Lua dissector, generated from the protocol description.
//!
//! [`generate`] compiles the description of the three dialects into one Lua file holding three
//! protocols: `rtype` (its `HEADER`, `HEADER_15`, `MESSAGES` and the snapshot profile's mask bits),
//! `rt` (its `HEADER` and `MESSAGES`, with their variants) and `rtnp` (its message schemas), plus
//! the rule `CATALOG`: a `ProtoField` per described field, a `ProtoExpert` per rule a single
//! datagram can break, and a Lua function per message layout that reads the fields in the
//! description's order, exactly as `message::walk` does. The only hand-written Lua is the fixed
//! runtime in `lua/`: CRC-32, LZ4, JSON, the per-field reader, the datagram checks, the chunk
//! reassembly and the per-conversation decisions. No field layout is written by hand.
//!
//! The output runs in Wireshark/tshark 4.0 (Lua 5.2) and later (Lua 5.4): it uses Wireshark's
//! `bit` module, never `bit32` nor the Lua 5.3 operators.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;

use crate::datagram::rtype::{MAX_PAYLOAD, MESSAGE_RULES};
use crate::proto::profile::{BitSlot, Profile, MASK_BITS};
use crate::proto::rtnp::{JsonField, MAX_DATAGRAM, MAX_DEPTH, MAX_JSON, PING, PONG};
use crate::proto::rtype::{
    COMPRESSED_BIT, COMPRESS_THRESHOLD, CRC_LEN, HEADER, HEADER_15, LEVEL_INIT, MAGIC, MESSAGES,
    PACKET_CLIENT, PACKET_SERVER, SNAPSHOT_CHUNK, VERSION,
};
use crate::proto::schema::{Check, Direction, Display, Field, Message, Named, Node, Role, Ty};
use crate::proto::{rt, rtnp, Rule, Severity, CATALOG};
use crate::session::chunks::{MAX_AGE_NANOS, MAX_CHUNKS, MAX_OPEN_SETS, MAX_SET_BYTES};

/// UDP port the rtype dissector registers by default (the reference server's).
pub const DEFAULT_PORT: u16 = 50010;

/// Filter name of the rtype protocol and prefix of its fields.
const PROTO: &str = "rtype";
/// Filter names of the rt and rtnp protocols.
const PROTO_RT: &str = "rt";
const PROTO_RTNP: &str = "rtnp";

use crate::datagram::rtnp::MAX_WORDS as RTNP_MAX_WORDS;
use crate::pipeline::RT_MAX_SERVERS;

/// Expert infos raised when a dissector itself fails (never expected; a safety net).
const MALFORMED: &[(&str, &str)] = &[
    ("rtype", "rtype.malformed"),
    ("rt", "rt.malformed"),
    ("rtnp", "rtnp.malformed"),
];
const MALFORMED_SUMMARY: &str = "malformed packet: the dissector stopped early";

const PRELUDE: &str = include_str!("lua/prelude.lua");
const WALKER: &str = include_str!("lua/walker.lua");
const DRIVER: &str = include_str!("lua/driver.lua");
const DRIVER_RT: &str = include_str!("lua/rt.lua");
const DRIVER_RTNP: &str = include_str!("lua/rtnp.lua");

/// A field of the runtime (not of the description).
struct RuntimeField {
    proto: &'static str,
    /// Name in the protocol's `PF` table.
    key: &'static str,
    filter: &'static str,
    /// `ProtoField` constructor.
    kind: &'static str,
    label: &'static str,
    /// The constructor's arguments after filter name and label (base, value string).
    rest: &'static str,
}

impl RuntimeField {
    fn constructor(&self) -> String {
        format!(
            "ProtoField.{}(\"{}\", \"{}\"{})",
            self.kind, self.filter, self.label, self.rest
        )
    }
}

const fn rf(
    proto: &'static str,
    key: &'static str,
    filter: &'static str,
    kind: &'static str,
    label: &'static str,
    rest: &'static str,
) -> RuntimeField {
    RuntimeField {
        proto,
        key,
        filter,
        kind,
        label,
        rest,
    }
}

const RUNTIME_FIELDS: &[RuntimeField] = &[
    rf(
        "rtype",
        "header_len",
        "rtype.header_len",
        "uint8",
        "Header Length",
        ", base.DEC",
    ),
    rf("rtype", "crc", "rtype.crc", "uint32", "CRC32", ", base.HEX"),
    rf(
        "rtype",
        "crc_status",
        "rtype.crc.status",
        "uint8",
        "CRC32 Status",
        ", base.DEC, { [0] = \"Bad\", [1] = \"Good\", [2] = \"Unverified\" }",
    ),
    rf("rtype", "payload", "rtype.payload", "bytes", "Payload", ""),
    rf(
        "rtype",
        "undecoded",
        "rtype.undecoded",
        "bytes",
        "Undecoded",
        "",
    ),
    rf(
        "rtype",
        "reassembled_in",
        "rtype.chunk.reassembled_in",
        "framenum",
        "Reassembled in",
        "",
    ),
    rf(
        "rtype",
        "chunk_frame",
        "rtype.chunk.frame",
        "framenum",
        "Chunk in frame",
        "",
    ),
    rf(
        "rtype",
        "reassembled_length",
        "rtype.reassembled.length",
        "uint32",
        "Reassembled Length",
        ", base.DEC",
    ),
    rf(
        "rtype",
        "reassembled_undecoded",
        "rtype.reassembled.undecoded",
        "bytes",
        "Undecoded",
        "",
    ),
    rf("rt", "undecoded", "rt.undecoded", "bytes", "Undecoded", ""),
    rf("rtnp", "framing", "rtnp.framing", "string", "Framing", ""),
    rf(
        "rtnp",
        "segments",
        "rtnp.envelope.segments",
        "uint32",
        "Segment Count - 1",
        ", base.DEC",
    ),
    rf(
        "rtnp",
        "words",
        "rtnp.envelope.words",
        "uint32",
        "Segment Words",
        ", base.DEC",
    ),
    rf(
        "rtnp",
        "text_bytes",
        "rtnp.envelope.text",
        "bytes",
        "Text (with its NUL)",
        "",
    ),
    rf(
        "rtnp",
        "keepalive",
        "rtnp.keepalive",
        "string",
        "Keep-alive Text",
        "",
    ),
    rf(
        "rtnp",
        "text",
        "rtnp.text",
        "string",
        "Message Text (not JSON)",
        "",
    ),
    rf("rtnp", "type", "rtnp.type", "string", "Message Type", ""),
];

/// Filter prefix of the snapshot rebuilt from SNAPSHOT_CHUNK datagrams.
const REASSEMBLED_PREFIX: &str = "rtype.reassembled";

/// The rules the rtype runtime raises, by what they are about (the walker's first).
fn rtype_rules() -> Vec<(&'static str, Rule)> {
    let r = &MESSAGE_RULES;
    vec![
        ("truncated", r.truncated),
        ("trailing", r.trailing),
        ("size", r.size),
        ("utf8", r.utf8),
        ("reserved_bit", r.reserved_bit),
        ("undefined_bit", r.undefined_bit),
        ("unknown_entity_type", Rule::RtypeUnknownEntityType),
        ("short", Rule::RtypeShortDatagram),
        ("old_header", Rule::RtypeOldHeader),
        ("version", Rule::RtypeVersion),
        ("packet_type", Rule::RtypePacketType),
        ("length", Rule::RtypeLength),
        ("crc", Rule::RtypeCrc),
        ("compress_small", Rule::RtypeCompressSmall),
        ("compress_not_smaller", Rule::RtypeCompressNotSmaller),
        ("orig_size_set", Rule::RtypeOrigSizeSet),
        ("lz4", Rule::RtypeLz4),
        ("orig_size", Rule::RtypeOrigSize),
        ("unknown_type", Rule::RtypeUnknownType),
        ("direction", Rule::RtypeDirection),
        ("chunk_total_zero", Rule::RtypeChunkTotalZero),
        ("chunk_index", Rule::RtypeChunkIndex),
        ("chunk_total_mismatch", Rule::RtypeChunkTotalMismatch),
        ("chunk_duplicate", Rule::RtypeChunkDuplicate),
        ("chunk_limit", Rule::RtypeChunkLimit),
    ]
}

/// The rules the rt runtime raises.
fn rt_rules() -> Vec<(&'static str, Rule)> {
    let r = &crate::datagram::rt::MESSAGE_RULES;
    vec![
        ("truncated", r.truncated),
        ("trailing", r.trailing),
        ("size", r.size),
        ("utf8", r.utf8),
        ("reserved_bit", r.reserved_bit),
        ("undefined_bit", r.undefined_bit),
        ("short", Rule::RtShort),
        ("byte_order", Rule::RtByteOrder),
        ("packet_type", Rule::RtPacketType),
        ("unknown_type", Rule::RtUnknownType),
        ("reserved_flags", Rule::RtReservedFlags),
        ("opaque", Rule::RtOpaquePayload),
        ("datagram_size", Rule::RtDatagramSize),
        ("disconnect_unreliable", Rule::RtDisconnectUnreliable),
        ("reliable_flag_missing", Rule::RtReliableFlagMissing),
        ("direction", Rule::RtDirection),
    ]
}

/// The rules the rtnp runtime raises.
fn rtnp_rules() -> Vec<(&'static str, Rule)> {
    vec![
        ("datagram_size", Rule::RtnpDatagramSize),
        ("envelope", Rule::RtnpEnvelope),
        ("json_invalid", Rule::RtnpJsonInvalid),
        ("json_limit", Rule::RtnpJsonLimit),
        ("json_non_ascii", Rule::RtnpJsonNonAscii),
        ("type_missing", Rule::RtnpTypeMissing),
        ("type_not_first", Rule::RtnpTypeNotFirst),
        ("unknown_type", Rule::RtnpUnknownType),
        ("wrong_type", Rule::RtnpWrongType),
        ("range", Rule::RtnpRange),
    ]
}

/// Every rule the generated dissector raises: the runtime's, and those the description attaches
/// to its fields, variants, switches, messages and schemas. Rules about a whole conversation or
/// capture (a chunk set never completed, sequence and timing, unacknowledged packets, ...) are
/// left to rtype-inspect; so are the rtnp rules that need the conversation (direction, client_id,
/// player_name, epoch sequence, silent clients).
pub fn dissector_rules() -> Vec<Rule> {
    let mut rules = BTreeSet::new();
    for (_, rule) in rtype_rules()
        .into_iter()
        .chain(rt_rules())
        .chain(rtnp_rules())
    {
        rules.insert(rule);
    }
    fn nodes(list: &'static [Node], rules: &mut BTreeSet<Rule>) {
        for node in list {
            match node {
                Node::Field(f) => field(f, rules),
                Node::Repeat { count, item } => {
                    field(count, rules);
                    nodes(item.nodes, rules);
                }
                Node::Switch {
                    tag,
                    cases,
                    unknown,
                } => {
                    field(tag, rules);
                    rules.insert(*unknown);
                    for case in *cases {
                        nodes(case.group.nodes, rules);
                    }
                }
                Node::Masked => {}
            }
        }
    }
    fn field(f: &Field, rules: &mut BTreeSet<Rule>) {
        match f.check {
            Check::None => {}
            Check::Finite(r)
            | Check::Ascending(r)
            | Check::Known(r)
            | Check::Unused { rule: r, .. } => {
                rules.insert(r);
            }
        }
    }
    for m in MESSAGES.iter().chain(rt::MESSAGES) {
        nodes(m.body, &mut rules);
        for v in m.variants {
            rules.insert(v.rule);
            nodes(v.nodes, &mut rules);
        }
        rules.extend(m.seen_rule);
    }
    fn json(fields: &'static [JsonField], rules: &mut BTreeSet<Rule>) {
        for f in fields {
            rules.insert(f.missing);
            json(f.fields, rules);
        }
    }
    for m in rtnp::MESSAGES {
        rules.extend(m.message.seen_rule);
        json(m.fields, &mut rules);
    }
    rules.into_iter().collect()
}

/// The protocol a filter name or rule ID belongs to: its first segment.
fn proto_of(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// Writes the complete Lua dissector for `profile`'s snapshot layout.
pub fn generate(profile: &Profile) -> String {
    let mut g = Gen::new(profile);
    // Compiling declares the fields, which the declarations then list.
    let headers = g.headers();
    let code = g.message_code();
    let mut out = String::with_capacity(256 * 1024);
    let _ = write!(
        out,
        "-- R-Type UDP protocols dissector for Wireshark/tshark 4.0+ (Lua 5.2 to 5.4): the `rtype`\n\
         -- dialect (documents 002/001), `rt` (document 003) and `rtnp` (document 004).\n\
         --\n\
         -- GENERATED by rtype-inspect from its protocol description (src/proto) with the snapshot\n\
         -- profile {profile_name}. Do not edit: regenerate with\n\
         --     rtype-inspect dissector -o wireshark/rtype.lua\n\
         -- Install: copy to ~/.local/lib/wireshark/plugins/, or run tshark -X lua_script:rtype.lua\n\
         -- (see wireshark/README.md).\n\n\
         local rtype = Proto(\"{PROTO}\", \"R-Type UDP Protocol\")\n\
         local rt = Proto(\"{PROTO_RT}\", \"R-Type RT Protocol (document 003)\")\n\
         local rtnp = Proto(\"{PROTO_RTNP}\", \"R-Type RTNP Protocol (document 004)\")\n\n",
        profile_name = lua_str(&profile.name),
    );
    out.push_str(PRELUDE);
    out.push('\n');
    g.declarations(&mut out, &headers);
    out.push_str(WALKER);
    out.push('\n');
    out.push_str(&code);
    out.push_str(DRIVER);
    out.push('\n');
    out.push_str(DRIVER_RT);
    out.push('\n');
    out.push_str(DRIVER_RTNP);
    out
}

/// State of one generation: the fields declared so far and the value strings.
struct Gen<'p> {
    profile: &'p Profile,
    /// Every filter name registered, with the signature of the field behind it.
    abbrevs: HashMap<String, String>,
    used: HashSet<String>,
    /// Value-string tables by content; the Lua name is `VS[index + 1]`.
    value_strings: Vec<Vec<(u32, &'static str)>>,
    /// Field descriptor declarations (`F[...] = {...}`), in first-use order.
    fields: Vec<String>,
    /// Fields another of the same name and another integer type may share (see `Gen::share`):
    /// the field and the index of its declaration.
    shareable: HashMap<String, (&'static Field, usize)>,
}

impl<'p> Gen<'p> {
    fn new(profile: &'p Profile) -> Self {
        let mut used = HashSet::new();
        for field in RUNTIME_FIELDS {
            used.insert(field.filter.to_string());
        }
        for name in [PROTO, PROTO_RT, PROTO_RTNP] {
            used.insert(name.to_string());
        }
        for rule in CATALOG {
            used.insert(rule.id.to_string());
        }
        for (_, id) in MALFORMED {
            used.insert(id.to_string());
        }
        Gen {
            profile,
            abbrevs: HashMap::new(),
            used,
            value_strings: Vec::new(),
            fields: Vec::new(),
            shareable: HashMap::new(),
        }
    }

    /// Constants, rules, experts, value strings, ProtoFields, field descriptors and header layouts.
    fn declarations(&mut self, out: &mut String, headers: &str) {
        out.push_str(
            "-- ---------------------------------------------------------------------------------------------\n",
        );
        out.push_str("-- Generated from the protocol description.\n");
        out.push_str(
            "-- ---------------------------------------------------------------------------------------------\n",
        );
        let magic = u32::from_be_bytes(MAGIC);
        let _ = writeln!(
            out,
            "local C = {{\n    MAGIC = 0x{magic:08X}, CRC_LEN = {CRC_LEN}, VERSION = {VERSION}, COMPRESSED_BIT = 0x{COMPRESSED_BIT:02X},\n    \
             COMPRESS_THRESHOLD = {COMPRESS_THRESHOLD}, PACKET_CLIENT = {PACKET_CLIENT}, PACKET_SERVER = {PACKET_SERVER},\n    \
             MAX_PAYLOAD = {MAX_PAYLOAD}, DEFAULT_PORT = {DEFAULT_PORT}, LEVEL_INIT = 0x{LEVEL_INIT:02X}, SNAPSHOT_CHUNK = 0x{SNAPSHOT_CHUNK:02X},\n    \
             CHUNK_MAX_AGE = {age}, CHUNK_MAX_CHUNKS = {MAX_CHUNKS}, CHUNK_MAX_OPEN = {MAX_OPEN_SETS}, CHUNK_MAX_BYTES = {MAX_SET_BYTES},\n}}",
            age = MAX_AGE_NANOS as f64 / 1e9,
        );
        let codes = |list: &[u8]| {
            list.iter()
                .map(|c| format!("[0x{c:02X}] = true"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "local C_RT = {{\n    MAGIC_BE = 0x{:04X}, MAGIC_LE = 0x{:04X}, HEADER_LEN = {}, MAX_PAYLOAD = {},\n    \
             FLAG_RELIABLE = 0x{:02X}, RESERVED_FLAGS = 0x{:02X}, OPAQUE_FLAGS = 0x{:02X}, CLIENT = {PACKET_CLIENT},\n    \
             CLIENT_CONNECT = 0x{:02X}, SERVER_ACCEPT = 0x{:02X}, SERVER_REJECT = 0x{:02X}, CLIENT_DISCONNECT = 0x{:02X},\n    \
             MAX_SERVERS = {RT_MAX_SERVERS},\n    BOTH_WAYS = {{ {} }},\n    RELIABLE = {{ {} }},\n}}",
            u16::from_be_bytes(rt::MAGIC_BE),
            u16::from_be_bytes(rt::MAGIC_LE),
            rt::HEADER_LEN,
            rt::MAX_PAYLOAD,
            rt::FLAG_RELIABLE,
            rt::RESERVED_FLAGS,
            rt::FLAG_COMPRESSED | rt::FLAG_ENCRYPTED | rt::FLAG_FRAGMENTED,
            rt::CLIENT_CONNECT,
            rt::SERVER_ACCEPT,
            rt::SERVER_REJECT,
            rt::CLIENT_DISCONNECT,
            codes(rt::BOTH_WAYS),
            codes(rt::RELIABLE_TYPES),
        );
        let _ = writeln!(
            out,
            "local C_RTNP = {{\n    MAX_DATAGRAM = {MAX_DATAGRAM}, MAX_JSON = {MAX_JSON}, MAX_DEPTH = {MAX_DEPTH}, MAX_WORDS = {RTNP_MAX_WORDS},\n    \
             PING = {}, PONG = {},\n}}\n",
            lua_str(PING),
            lua_str(PONG),
        );

        // The rules each runtime raises, by what they are about.
        for (table, rules, proto) in [
            ("RULE", rtype_rules(), PROTO),
            ("RULE_RT", rt_rules(), PROTO_RT),
            ("RULE_RTNP", rtnp_rules(), PROTO_RTNP),
        ] {
            let _ = writeln!(out, "local {table} = {{");
            for (key, rule) in rules {
                let _ = writeln!(out, "    {key} = {},", lua_str(rule.id()));
            }
            let malformed = MALFORMED
                .iter()
                .find(|(p, _)| *p == proto)
                .map_or("", |m| m.1);
            let _ = writeln!(out, "    malformed = {},\n}}", lua_str(malformed));
        }
        out.push('\n');

        // One expert info per rule the dissector raises, registered with its dialect's protocol.
        out.push_str("local EX, SUMMARY, EXPERTS = {}, {}, { rtype = {}, rt = {}, rtnp = {} }\n");
        out.push_str("local function expert_info(proto, id, summary, group, severity)\n");
        out.push_str("    SUMMARY[id] = summary\n");
        out.push_str(
            "    EX[id] = ProtoExpert.new(id, \"[\" .. id .. \"] \" .. summary, group, severity)\n",
        );
        out.push_str("    EXPERTS[proto][#EXPERTS[proto] + 1] = EX[id]\n");
        out.push_str("end\n");
        let raised = dissector_rules();
        for rule in raised {
            let info = rule.info();
            let severity = match info.severity {
                Severity::Error => "ERROR",
                Severity::Warning => "WARN",
                Severity::Info => "NOTE",
            };
            let _ = writeln!(
                out,
                "expert_info({}, {}, {}, expert.group.{}, expert.severity.{severity})",
                lua_str(proto_of(info.id)),
                lua_str(info.id),
                lua_str(info.summary),
                expert_group(rule),
            );
        }
        for (proto, id) in MALFORMED {
            let _ = writeln!(
                out,
                "expert_info({}, {}, {}, expert.group.MALFORMED, expert.severity.ERROR)",
                lua_str(proto),
                lua_str(id),
                lua_str(MALFORMED_SUMMARY)
            );
        }
        out.push('\n');

        // Value strings.
        out.push_str("local VS_MSG = {\n");
        for m in MESSAGES {
            let _ = writeln!(out, "    [0x{:02X}] = {},", m.code, lua_str(m.name));
        }
        out.push_str("}\nlocal VS = {\n");
        for table in &self.value_strings {
            out.push_str("    {");
            for (i, (value, name)) in table.iter().enumerate() {
                let sep = if i == 0 { " " } else { ", " };
                let _ = write!(out, "{sep}[{value}] = {}", lua_str(name));
            }
            out.push_str(" },\n");
        }
        out.push_str("}\n\n");

        // Fields: the runtime's, then every described field, each registered once with its protocol.
        out.push_str("local FIELDS = { rtype = {}, rt = {}, rtnp = {} }\n");
        out.push_str(
            "local function reg(proto, field)\n    FIELDS[proto][#FIELDS[proto] + 1] = field\n    return field\nend\n",
        );
        for (table, proto) in [("PF", PROTO), ("PF_RT", PROTO_RT), ("PF_RTNP", PROTO_RTNP)] {
            let _ = writeln!(out, "local {table} = {{");
            for f in RUNTIME_FIELDS.iter().filter(|f| f.proto == proto) {
                let _ = writeln!(
                    out,
                    "    {} = reg({}, {}),",
                    f.key,
                    lua_str(f.proto),
                    f.constructor()
                );
            }
            out.push_str("}\n");
        }
        out.push_str("RULE.undecoded_pf, RULE_RT.undecoded_pf = PF.undecoded, PF_RT.undecoded\n");
        out.push_str("local RULE_REASSEMBLED = setmetatable({ undecoded_pf = PF.reassembled_undecoded }, { __index = RULE })\n\n");
        out.push_str(
            "-- Field descriptors: ProtoField, wire type, width, name, role and checks.\n",
        );
        out.push_str("local F = {}\n");
        for line in &self.fields {
            out.push_str(line);
            out.push('\n');
        }
        out.push('\n');
        out.push_str(headers);
        out.push_str(
            "rtype.fields, rt.fields, rtnp.fields = FIELDS.rtype, FIELDS.rt, FIELDS.rtnp\n\
             rtype.experts, rt.experts, rtnp.experts = EXPERTS.rtype, EXPERTS.rt, EXPERTS.rtnp\n\n",
        );
    }

    /// The header layouts: `HEADERS[1]` is rtype's 17-byte one, `HEADERS[2]` the older 15-byte
    /// one; `RT_HEADER` is rt's.
    fn headers(&mut self) -> String {
        let mut out = String::from("local HEADERS = {\n");
        for nodes in [HEADER, HEADER_15] {
            self.header(&mut out, nodes, PROTO);
        }
        out.push_str("}\nlocal RT_HEADER = ");
        self.header(&mut out, rt::HEADER, PROTO_RT);
        out.truncate(out.trim_end_matches([',', '\n']).len());
        out.push_str("\n\n");
        out
    }

    /// One header layout: its length, whether it has the compression bit, its fields in order
    /// and where each role's field is.
    fn header(&mut self, out: &mut String, nodes: &'static [Node], proto: &str) {
        let mut fields = Vec::new();
        let mut at = Vec::new();
        let mut offset = 0;
        for node in nodes {
            let Node::Field(f) = node else {
                panic!("a header holds fields only")
            };
            let width = f.width().expect("header fields have fixed widths");
            let abbrev = self.declare(format!("{proto}.{}", f.name), f, proto);
            fields.push(format!("F[{}]", lua_str(&abbrev)));
            if f.role != Role::None {
                at.push(format!("{:?} = {{ {offset}, {width} }}", f.role));
            }
            offset += width;
        }
        let compression = nodes
            .iter()
            .any(|n| matches!(n, Node::Field(f) if f.role == Role::OrigSize));
        let _ = writeln!(
            out,
            "    {{\n        len = {offset}, compression = {compression},"
        );
        let _ = writeln!(out, "        fields = {{ {} }},", fields.join(", "));
        let _ = writeln!(out, "        at = {{ {} }},\n    }},", at.join(", "));
    }

    /// The message tables (rtype's, the reassembled snapshot's layout, rt's) and rtnp's schemas,
    /// as Lua.
    fn message_code(&mut self) -> String {
        let mut text = String::new();
        let out = &mut text;
        out.push_str(
            "-- ---------------------------------------------------------------------------------------------\n",
        );
        out.push_str("-- Message layouts, compiled from the protocol description (one function per layout).\n");
        out.push_str(
            "-- Each returns true when its nodes were all read, false when the walk stopped.\n",
        );
        out.push_str(
            "-- ---------------------------------------------------------------------------------------------\n",
        );
        self.messages(out, "MSG", PROTO, MESSAGES);
        let snapshot = snapshot_message();
        out.push_str("\n-- The snapshot rebuilt from a complete set of SNAPSHOT_CHUNK datagrams: laid out as\n");
        let _ = writeln!(
            out,
            "-- {} and shown under `{REASSEMBLED_PREFIX}.`.",
            snapshot.name
        );
        out.push_str("local REASSEMBLED = {\n    name = \"Reassembled snapshot\", variants = {},\n    body = ");
        self.function(out, &[snapshot.body], REASSEMBLED_PREFIX, 1);
        out.push_str("}\n\n");
        self.messages(out, "MSG_RT", PROTO_RT, rt::MESSAGES);
        out.push('\n');
        out.push_str("-- rtnp message types and their JSON schemas (document 004, Appendix B).\n");
        out.push_str("local RTNP_MESSAGES = {\n");
        for m in rtnp::MESSAGES {
            let _ = write!(
                out,
                "    [{}] = {{ name = {}, dir = ",
                lua_str(m.message.name),
                lua_str(m.message.name)
            );
            out.push_str(direction(m.message.direction));
            if let Some(rule) = m.message.seen_rule {
                let _ = write!(out, ", seen = {}", lua_str(rule.id()));
            }
            out.push_str(", fields = ");
            json_fields(out, m.fields, 2);
            out.push_str(" },\n");
        }
        out.push_str("}\n\n");
        text
    }

    /// A dialect's message table `table`: each message's name, direction, fixed size, the rule
    /// its mere sight breaks, its body and its variants.
    fn messages(
        &mut self,
        out: &mut String,
        table: &str,
        proto: &str,
        messages: &'static [Message],
    ) {
        let _ = writeln!(out, "local {table} = {{}}");
        for m in messages {
            let prefix = format!("{proto}.{}", m.short);
            let _ = writeln!(out, "{table}[0x{:02X}] = {{", m.code);
            let _ = writeln!(
                out,
                "    code = 0x{:02X}, name = {}, short = {}, dir = {},",
                m.code,
                lua_str(m.name),
                lua_str(m.short),
                direction(m.direction)
            );
            if let Some(size) = m.fixed_size() {
                let _ = writeln!(out, "    fixed = {size},");
            }
            if let Some(rule) = m.seen_rule {
                let _ = writeln!(out, "    seen = {},", lua_str(rule.id()));
            }
            out.push_str("    body = ");
            self.function(out, &[m.body], &prefix, 1);
            out.push_str("    variants = {");
            for v in m.variants {
                let _ = write!(out, "\n        {{ rule = {}, fn = ", lua_str(v.rule.id()));
                let parts: Vec<&'static [Node]> = if v.extends_body {
                    vec![m.body, v.nodes]
                } else {
                    vec![v.nodes]
                };
                self.function(out, &parts, &prefix, 2);
                out.push_str("        },");
            }
            out.push_str(if m.variants.is_empty() {
                "},\n}\n"
            } else {
                "\n    },\n}\n"
            });
        }
    }

    /// A Lua function walking `parts` one after the other.
    fn function(
        &mut self,
        out: &mut String,
        parts: &[&'static [Node]],
        prefix: &str,
        indent: usize,
    ) {
        out.push_str("function(c, t)\n");
        for nodes in parts {
            self.nodes(out, nodes, prefix, "t", indent + 1, 0);
        }
        let _ = writeln!(out, "{}return true\n{}end,", pad(indent + 1), pad(indent));
    }

    /// Statements reading `nodes` into tree variable `t`; each returns false when the walk stops.
    fn nodes(
        &mut self,
        out: &mut String,
        nodes: &'static [Node],
        prefix: &str,
        t: &str,
        indent: usize,
        depth: usize,
    ) {
        let p = pad(indent);
        for node in nodes {
            match node {
                Node::Field(f) => {
                    let abbrev = self.declare(format!("{prefix}.{}", f.name), f, "");
                    let _ = writeln!(
                        out,
                        "{p}if rd(c, {t}, F[{}]) == nil then return false end",
                        lua_str(&abbrev)
                    );
                }
                Node::Repeat { count, item } => {
                    let abbrev = self.declare(format!("{prefix}.{}", count.name), count, "");
                    let (n, l, tl, i, g, ti) = (
                        format!("n{depth}"),
                        format!("l{depth}"),
                        format!("tl{depth}"),
                        format!("i{depth}"),
                        format!("g{depth}"),
                        format!("t{depth}"),
                    );
                    let _ = writeln!(out, "{p}do");
                    let _ = writeln!(
                        out,
                        "{p}    local {n} = rd(c, {t}, F[{}])",
                        lua_str(&abbrev)
                    );
                    let _ = writeln!(out, "{p}    if {n} == nil then return false end");
                    if count.role == Role::EntityCount {
                        let _ = writeln!(
                            out,
                            "{p}    if c.entities_at == nil then c.entity_count, c.entities_at = {n}, c.pos end"
                        );
                    }
                    let _ = writeln!(out, "{p}    c.prev = nil");
                    let _ = writeln!(
                        out,
                        "{p}    local {l} = open(c, {t}, {} .. {n} .. \"]\")",
                        lua_str(&format!("{} [", item.name))
                    );
                    let _ = writeln!(out, "{p}    local {tl} = {l} and {l}.item");
                    let _ = writeln!(out, "{p}    for {i} = 0, {n} - 1 do");
                    let _ = writeln!(
                        out,
                        "{p}        local {g} = open(c, {tl}, {} .. {i})",
                        lua_str(&format!("{} ", item.label))
                    );
                    let _ = writeln!(out, "{p}        local {ti} = {g} and {g}.item");
                    let inner = format!("{prefix}.{}", item.filter);
                    self.nodes(out, item.nodes, &inner, &ti, indent + 2, depth + 1);
                    let _ = writeln!(out, "{p}        close(c, {g})");
                    let _ = writeln!(out, "{p}    end");
                    let _ = writeln!(out, "{p}    close(c, {l})");
                    let _ = writeln!(out, "{p}end");
                }
                Node::Switch {
                    tag,
                    cases,
                    unknown,
                } => {
                    let abbrev = self.declare(format!("{prefix}.{}", tag.name), tag, "");
                    let (v, g, ti) = (
                        format!("v{depth}"),
                        format!("g{depth}"),
                        format!("t{depth}"),
                    );
                    let _ = writeln!(out, "{p}do");
                    let _ = writeln!(
                        out,
                        "{p}    local {v} = rd(c, {t}, F[{}])",
                        lua_str(&abbrev)
                    );
                    let _ = writeln!(out, "{p}    if {v} == nil then return false end");
                    for (k, case) in cases.iter().enumerate() {
                        let kw = if k == 0 { "if" } else { "elseif" };
                        let _ = writeln!(out, "{p}    {kw} {v} == {} then", case.value);
                        let _ = writeln!(
                            out,
                            "{p}        local {g} = open(c, {t}, {})",
                            lua_str(case.group.label)
                        );
                        let _ = writeln!(out, "{p}        local {ti} = {g} and {g}.item");
                        let inner = format!("{prefix}.{}", case.group.filter);
                        self.nodes(out, case.group.nodes, &inner, &ti, indent + 2, depth + 1);
                        let _ = writeln!(out, "{p}        close(c, {g})");
                    }
                    let call = format!(
                        "return unknown_case(c, {t}, {}, {v}, {})",
                        lua_str(tag.name),
                        lua_str(unknown.id())
                    );
                    if cases.is_empty() {
                        let _ = writeln!(out, "{p}    {call}");
                    } else {
                        let _ = writeln!(out, "{p}    else\n{p}        {call}\n{p}    end");
                    }
                    let _ = writeln!(out, "{p}end");
                }
                Node::Masked => {
                    let _ = writeln!(out, "{p}do");
                    let _ = writeln!(out, "{p}    local m = c.mask");
                    for bit in 0..MASK_BITS {
                        let test = format!("{p}    if band(m, 0x{:04X}) ~= 0 then", 1u32 << bit);
                        match self.profile.bits[bit] {
                            BitSlot::Field(f) => {
                                let abbrev = self.declare(format!("{prefix}.{}", f.name), f, "");
                                let _ = writeln!(
                                    out,
                                    "{test} if rd(c, {t}, F[{}]) == nil then return false end end",
                                    lua_str(&abbrev)
                                );
                            }
                            BitSlot::Reserved => {
                                let _ =
                                    writeln!(out, "{test} return unknown_bit(c, {t}, {bit}, c.rules.reserved_bit) end");
                            }
                            BitSlot::Undefined => {
                                let _ = writeln!(
                                    out,
                                    "{test} return unknown_bit(c, {t}, {bit}, c.rules.undefined_bit) end"
                                );
                            }
                        }
                    }
                    let _ = writeln!(out, "{p}end");
                }
            }
        }
    }

    /// Declares the field `f` under `abbrev` (once; a different field wanting the same filter name
    /// gets a numbered one) and returns the filter name used. Flag bits are named under
    /// `bits_prefix`, or under the field's own name when it is empty.
    fn declare(&mut self, abbrev: String, f: &'static Field, bits_prefix: &str) -> String {
        let signature = format!("{f:?}");
        if let Some(key) = self.share(&abbrev, f, &signature) {
            return key;
        }
        let mut name = abbrev.clone();
        let mut n = 1;
        loop {
            match self.abbrevs.get(&name) {
                Some(sig) if *sig == signature => return name,
                None if !self.used.contains(&name) => break,
                _ => {
                    n += 1;
                    name = format!("{abbrev}_{n}");
                }
            }
        }
        self.abbrevs.insert(name.clone(), signature);
        self.used.insert(name.clone());

        let label = lua_str(f.label);
        let mut desc = Vec::new();
        let vs = match f.display {
            Display::Enum(named) => Some(self.value_string(named)),
            Display::MessageType => Some("VS_MSG".to_string()),
            _ => None,
        };
        let signed = matches!(f.ty, Ty::I16 | Ty::I32);
        let unsigned = matches!(f.ty, Ty::U8 | Ty::U16 | Ty::U32);
        let base = match f.display {
            Display::Hex | Display::Flags(_) | Display::MessageType if !signed => "base.HEX",
            _ => "base.DEC",
        };
        let array = f.array > 0;
        let text_array = array && matches!(f.display, Display::Text);
        let scaled = !array && f.divisor != 1 && f.ty != Ty::F32 && f.ty != Ty::Str8;
        let (pf, ty) = match f.ty {
            _ if text_array => (
                format!("ProtoField.string({}, {label})", lua_str(&name)),
                "text",
            ),
            _ if array => (
                format!("ProtoField.bytes({}, {label})", lua_str(&name)),
                "bytes",
            ),
            Ty::F32 => (
                format!("ProtoField.float({}, {label})", lua_str(&name)),
                "f32",
            ),
            Ty::Str8 => (
                format!("ProtoField.string({}, {label})", lua_str(&name)),
                "str8",
            ),
            ty if scaled => (
                format!("ProtoField.double({}, {label})", lua_str(&name)),
                ty.name(),
            ),
            ty => (
                format!(
                    "ProtoField.{}({}, {label}, {base}{})",
                    int_ctor(ty),
                    lua_str(&name),
                    vs.as_ref().map(|v| format!(", {v}")).unwrap_or_default()
                ),
                ty.name(),
            ),
        };
        let proto = proto_of(&name);
        desc.push(format!("pf = reg(\"{proto}\", {pf})"));
        desc.push(format!("ty = \"{ty}\""));
        if let Some(w) = f.width() {
            desc.push(format!("w = {w}"));
        }
        desc.push(format!("name = {}", lua_str(f.name)));
        if f.role != Role::None {
            desc.push(format!("role = \"{:?}\"", f.role));
        }
        if scaled {
            let raw = self.unique(format!("{name}.raw"));
            desc.push(format!("div = {}", f.divisor));
            desc.push(format!(
                "raw_pf = reg(\"{proto}\", ProtoField.{}({}, {}, {base}))",
                int_ctor(f.ty),
                lua_str(&raw),
                lua_str(&format!("{} (raw)", f.label))
            ));
        }
        // The walker checks integers only when they are not scaled (its value is then unsigned).
        let plain_unsigned = unsigned && !scaled && !array;
        match f.check {
            Check::None => {}
            Check::Finite(rule) => desc.push(format!("finite = {}", lua_str(rule.id()))),
            Check::Ascending(rule) => desc.push(format!("ascending = {}", lua_str(rule.id()))),
            Check::Known(rule) => {
                if let (true, Some(vs)) = (plain_unsigned, &vs) {
                    desc.push(format!(
                        "known = {vs}, unknown_rule = {}",
                        lua_str(rule.id())
                    ));
                }
            }
            Check::Unused { mask, rule } => {
                if plain_unsigned {
                    desc.push(format!(
                        "unused = 0x{mask:X}, unused_rule = {}",
                        lua_str(rule.id())
                    ));
                }
            }
        }
        if let (Display::Flags(named), true) = (f.display, plain_unsigned) {
            let width_bits = f.ty.width().unwrap_or(0) * 8;
            let max = if width_bits >= 32 {
                u32::MAX
            } else {
                (1u32 << width_bits) - 1
            };
            let parent = if bits_prefix.is_empty() {
                name.clone()
            } else {
                bits_prefix.to_string()
            };
            let mut bits = Vec::new();
            for flag in named.iter().filter(|n| n.value != 0 && n.value & !max == 0) {
                let bit_abbrev = self.unique(format!("{parent}.{}", flag.name));
                let ctor = if flag.value.count_ones() == 1 {
                    format!(
                        "ProtoField.bool({}, {}, {width_bits}, nil, 0x{:X})",
                        lua_str(&bit_abbrev),
                        lua_str(flag.name),
                        flag.value
                    )
                } else {
                    format!(
                        "ProtoField.{}({}, {}, base.DEC, nil, 0x{:X})",
                        int_ctor(f.ty),
                        lua_str(&bit_abbrev),
                        lua_str(flag.name),
                        flag.value
                    )
                };
                bits.push(format!("reg(\"{proto}\", {ctor})"));
            }
            if !bits.is_empty() {
                desc.push(format!("bits = {{ {} }}", bits.join(", ")));
            }
        }
        if shareable(f) {
            self.shareable.insert(name.clone(), (f, self.fields.len()));
        }
        self.fields
            .push(format!("F[{}] = {{ {} }}", lua_str(&name), desc.join(", ")));
        name
    }

    /// A field of a variant that has the filter name of another field of the same message and
    /// only differs from it by its integer type (PLAYER_INPUT's aim is u16 in the document, i16
    /// in real traffic): both get one ProtoField, an int32 given each value as its own type
    /// reads it, so that the filter name is the same whichever layout the datagram has. Returns
    /// the key of the field's descriptor, `None` when the field is not such a one.
    fn share(&mut self, abbrev: &str, f: &'static Field, signature: &str) -> Option<String> {
        let (first, line) = *self.shareable.get(abbrev)?;
        if !shareable(f) || self.abbrevs.get(abbrev).is_some_and(|s| s == signature) {
            return None;
        }
        let mut n = 2;
        let key = loop {
            let key = format!("{abbrev}#{n}");
            match self.abbrevs.get(&key) {
                Some(s) if s == signature => return Some(key),
                Some(_) => n += 1,
                None => break key,
            }
        };
        self.abbrevs.insert(key.clone(), signature.to_string());
        let ctor = |ty: Ty| {
            format!(
                "ProtoField.{}(",
                if matches!(ty, Ty::U8) {
                    "uint8"
                } else {
                    int_ctor(ty)
                }
            )
        };
        let shared = &mut self.fields[line];
        if !shared.ends_with(", explicit = true }") {
            *shared = shared.replacen(&ctor(first.ty), "ProtoField.int32(", 1);
            shared.truncate(shared.len() - 2);
            shared.push_str(", explicit = true }");
        }
        let mut desc = vec![
            format!("pf = F[{}].pf", lua_str(abbrev)),
            format!("ty = \"{}\"", f.ty.name()),
            format!("w = {}", f.ty.width().unwrap_or(0)),
            format!("name = {}", lua_str(f.name)),
        ];
        if f.role != Role::None {
            desc.push(format!("role = \"{:?}\"", f.role));
        }
        desc.push("explicit = true".into());
        self.fields
            .push(format!("F[{}] = {{ {} }}", lua_str(&key), desc.join(", ")));
        Some(key)
    }

    /// A filter name nobody has taken yet, based on `abbrev`.
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

    /// The Lua expression of the value-string table for `named`.
    fn value_string(&mut self, named: &'static [Named]) -> String {
        let table: Vec<(u32, &'static str)> = named.iter().map(|n| (n.value, n.name)).collect();
        let index = match self.value_strings.iter().position(|t| *t == table) {
            Some(i) => i,
            None => {
                self.value_strings.push(table);
                self.value_strings.len() - 1
            }
        };
        format!("VS[{}]", index + 1)
    }
}

/// The ProtoField constructor of an integer type.
fn int_ctor(ty: Ty) -> &'static str {
    match ty {
        Ty::U8 => "uint8",
        Ty::U16 => "uint16",
        Ty::U32 => "uint32",
        Ty::I16 => "int16",
        Ty::I32 => "int32",
        Ty::F32 | Ty::Str8 => unreachable!("not an integer type"),
    }
}

/// Whether a field can share its ProtoField with another of the same name and another integer
/// type (see `Gen::share`): a plain decimal integer that an int32 holds.
fn shareable(f: &Field) -> bool {
    matches!(f.ty, Ty::U8 | Ty::U16 | Ty::I16 | Ty::I32)
        && f.array == 0
        && f.divisor == 1
        && matches!(f.display, Display::Dec)
        && f.check == Check::None
}

/// The Lua expression of a message's direction: the rtype packet type it travels with.
fn direction(d: Direction) -> &'static str {
    match d {
        Direction::ClientToServer => "C.PACKET_CLIENT",
        Direction::ServerToClient => "C.PACKET_SERVER",
    }
}

/// An rtnp schema as a Lua list: each property's path, key, JSON type, whether it is required,
/// its minimum, the rule its absence breaks, and its own properties.
fn json_fields(out: &mut String, fields: &'static [JsonField], indent: usize) {
    if fields.is_empty() {
        out.push_str("{}");
        return;
    }
    out.push_str("{\n");
    for f in fields {
        let _ = write!(
            out,
            "{}{{ path = {}, key = {}, ty = {}, required = {}, ",
            pad(indent),
            lua_str(f.path),
            lua_str(f.key()),
            lua_str(f.ty.name()),
            f.required
        );
        if let Some(min) = f.minimum {
            let _ = write!(out, "minimum = {min:?}, ");
        }
        let _ = write!(out, "missing = {}, fields = ", lua_str(f.missing.id()));
        json_fields(out, f.fields, indent + 1);
        out.push_str(" },\n");
    }
    let _ = write!(out, "{}}}", pad(indent - 1));
}

/// The message whose body is one entity repeat: SERVER_SNAPSHOT, the shape chunks reassemble to.
fn snapshot_message() -> &'static Message {
    MESSAGES
        .iter()
        .find(|m| matches!(m.body, [Node::Repeat { count, .. }] if count.role == Role::EntityCount))
        .expect("the description has a snapshot message")
}

/// The expert group of a rule: a broken structure is malformed, a bad checksum a checksum
/// problem, the rest protocol departures.
fn expert_group(rule: Rule) -> &'static str {
    match rule {
        Rule::RtypeCrc => "CHECKSUM",
        Rule::RtypeShortDatagram
        | Rule::RtypeLength
        | Rule::RtypeLz4
        | Rule::RtypeOrigSize
        | Rule::RtypeTruncated
        | Rule::RtypeTrailing
        | Rule::RtypeSize
        | Rule::RtypeUtf8
        | Rule::RtShort
        | Rule::RtTruncated
        | Rule::RtTrailing
        | Rule::RtSize
        | Rule::RtUtf8
        | Rule::RtnpEnvelope
        | Rule::RtnpJsonInvalid => "MALFORMED",
        _ => "PROTOCOL",
    }
}

fn pad(indent: usize) -> String {
    "    ".repeat(indent)
}

/// A double-quoted Lua string literal for `s` (any bytes).
fn lua_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for b in s.bytes() {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            0x20..=0x7E => out.push(b as char),
            _ => {
                let _ = write!(out, "\\{b:03}");
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lua_strings_are_escaped() {
        assert_eq!(lua_str("a\"b\\c\n→"), "\"a\\\"b\\\\c\\n\\226\\134\\146\"");
    }

    #[test]
    fn declares_the_documented_filter_names() {
        let lua = generate(&Profile::document());
        for name in [
            "rtype.magic",
            "rtype.version",
            "rtype.compressed",
            "rtype.packet_type",
            "rtype.msg_type",
            "rtype.sequence",
            "rtype.tick",
            "rtype.payload_len",
            "rtype.orig_size",
            "rtype.crc",
            "rtype.crc.status",
            "rtype.input.player_id",
            "rtype.snapshot.entity.id",
            "rtype.snapshot.entity.pos_x",
            "rtype.snapshot_chunk.entity.pos_x",
            "rtype.levelinit.archetype.sprite_id",
            "rtype.levelinit.boss.name",
            "rtype.levelevent.set_scroll.keyframe.time",
            "rtype.reassembled.entity.id",
            "rt.magic",
            "rt.packet_type",
            "rt.flags",
            "rt.reliable",
            "rt.sequence_number",
            "rt.connect.player_name",
            "rt.transform_snapshot.entity.pos_x",
            "rt.full_state.component.transform.pos_x",
            "rtnp.type",
            "rtnp.framing",
        ] {
            assert!(lua.contains(&format!("(\"{name}\"")), "{name} not declared");
        }
        let raised = dissector_rules();
        for rule in CATALOG.iter().filter(|r| {
            r.id.starts_with("rtype.") || r.id.starts_with("rt.") || r.id.starts_with("rtnp.")
        }) {
            let declared = lua.contains(&format!(
                "expert_info(\"{}\", \"{}\"",
                proto_of(rule.id),
                rule.id
            ));
            let should = raised.contains(&Rule::from_id(rule.id).unwrap());
            assert_eq!(
                declared, should,
                "{}: expert info declared {declared}, raised {should}",
                rule.id
            );
        }
        // The rules left to rtype-inspect are the ones about conversations, captures and budgets.
        let left: Vec<&str> = CATALOG
            .iter()
            .filter(|r| {
                !["capture.", "session.", "budget."]
                    .iter()
                    .any(|p| r.id.starts_with(p))
            })
            .filter(|r| !raised.contains(&Rule::from_id(r.id).unwrap()))
            .map(|r| r.id)
            .collect();
        assert_eq!(
            left,
            [
                "rtype.chunk.missing",
                "rt.reliable.unacknowledged",
                "rtnp.message.direction",
                "rtnp.epoch.sequence",
                "rtnp.client-id.mismatch",
                "rtnp.player-name.length",
                "rtnp.client.silent",
            ]
        );
        assert!(!lua.contains("bit32.") && !lua.contains(" // "));
        // The real PLAYER_INPUT's signed aim has the document's filter name.
        assert!(lua.contains("ProtoField.int32(\"rt.input.aim_direction_x\""));
        assert!(
            lua.contains("F[\"rt.input.aim_direction_x#2\"] = { pf = F[\"rt.input.aim_direction_x\"].pf, ty = \"i16\"")
        );
        assert!(!lua.contains("aim_direction_x_2"));
    }

    #[test]
    fn profile_bits_are_compiled() {
        let profile = Profile::parse(
            "name = \"fixed\"\n[bits]\n1 = { name = \"pos_x\", type = \"i16\", divisor = 10 }\n\
             6 = { name = \"status\", type = \"u8\", flags = { status = 0xF0, lives = 0x0F } }\n\
             10 = { name = \"score\", type = \"i32\" }\n",
        )
        .unwrap();
        let lua = generate(&profile);
        assert!(lua.contains("ProtoField.double(\"rtype.snapshot.entity.pos_x\""));
        assert!(lua.contains("ProtoField.int16(\"rtype.snapshot.entity.pos_x.raw\""));
        assert!(lua.contains("div = 10"));
        assert!(lua.contains("ProtoField.int32(\"rtype.snapshot.entity.score\""));
        assert!(lua.contains("ProtoField.uint8(\"rtype.snapshot.entity.status.lives\", \"lives\", base.DEC, nil, 0xF)"));
        assert!(lua.contains(
            "if band(m, 0x0400) ~= 0 then if rd(c, t0, F[\"rtype.snapshot.entity.score\"])"
        ));
    }
}
