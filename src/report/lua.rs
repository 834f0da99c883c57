//! The Wireshark Lua dissector, generated from the protocol description.
//!
//! [`generate`] compiles the description of the three dialects into one Lua file holding three
//! protocols: `rtype` (its `HEADER`, `HEADER_15`, `MESSAGES` and the snapshot profiles' mask bits),
//! `rt` (its `HEADER` and `MESSAGES`, with their variants) and `rtnp` (its message schemas), plus
//! the rule `CATALOG`: a `ProtoField` per described field (with a description written from the
//! description), a `ProtoExpert` per rule a single datagram can break, and a Lua function per
//! message layout that reads the fields in the description's order, exactly as `message::walk`
//! does. Every bundled snapshot profile is compiled in, chosen by a preference. The only
//! hand-written Lua is the fixed runtime: in `lua/`, JSON, the field readers, the datagram checks,
//! the chunk reassembly, the per-conversation decisions, the statistics and the registration; in
//! [`crate::lua_runtime`] (shared with the described dialects' generator), bytes, CRC-32, LZ4,
//! UTF-8 and clamped ranges. No field layout is written by hand.
//!
//! The output runs in Wireshark/tshark 4.0 (Lua 5.2) and later (Lua 5.4): it uses Wireshark's
//! `bit` module, never `bit32` nor the Lua 5.3 operators (but in one CRC loop compiled with
//! `load` on Lua 5.3+). Field descriptors are flat tables built once at load; the message
//! functions read a table of the payload's bytes and touch the tree only when one is drawn.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;

use crate::datagram::rtype::MAX_PAYLOAD;
use crate::lua_runtime::{lua_str, BYTES, CRC32, LZ4, RANGE, UTF8};
use crate::proto::profile::{BitSlot, Profile, BUNDLED, MASK_BITS};
use crate::proto::registry::{
    snapshot_message, FieldType, Registry, RuntimeField, Source, Values, DISSECTOR_RUNTIME,
};
use crate::proto::rtnp::{JsonField, MAX_DATAGRAM, MAX_DEPTH, MAX_JSON, PING, PONG};
use crate::proto::rtype::{
    COMPRESSED_BIT, COMPRESS_THRESHOLD, CRC_LEN, HEADER, HEADER_15, LEVEL_INIT, MAGIC, MESSAGES,
    PACKET_CLIENT, PACKET_SERVER, SNAPSHOT_CHUNK, VERSION,
};
use crate::proto::schema::{Check, Direction, Display, Field, Message, Named, Node, Role, Ty};
use crate::proto::{rt, rtnp, rtype, Rule, Severity, CATALOG};
use crate::session::chunks::{MAX_AGE_NANOS, MAX_CHUNKS, MAX_OPEN_SETS, MAX_SET_BYTES};
use crate::session::MAX_CONVERSATIONS;

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
const RECOGNISE: &str = include_str!("lua/recognise.lua");
const DRIVER: &str = include_str!("lua/driver.lua");
const DRIVER_RT: &str = include_str!("lua/rt.lua");
const DRIVER_RTNP: &str = include_str!("lua/rtnp.lua");
const REGISTER: &str = include_str!("lua/register.lua");

/// The one expert info that is not a rule of the catalog: a conversation's snapshots do not fit
/// the selected profile and a bundled one reads them (its ID, summary).
const PROFILE_SUGGESTED: (&str, &str) = (
    "rtype.profile.suggested",
    "snapshots fail to decode with the selected profile and this bundled profile reads them: \
     Edit > Preferences > Protocols > RTYPE > Snapshot profile, or tshark -o rtype.profile:NAME",
);

/// What the Lua dissector adds to each field of its runtime (the registry's
/// [`DISSECTOR_RUNTIME`], which has name, label, type and values): its key in the protocol's `PF`
/// table and its description (empty for none), by filter name.
const RUNTIME_LUA: &[(&str, &str, &str)] = &[
    (
        "rtype.header_len",
        "header_len",
        "Length of the header layout the datagram fits: 17 (document 002) or 15 (the older build)",
    ),
    (
        "rtype.crc",
        "crc",
        "CRC-32 footer over header and payload (document 002 §4)",
    ),
    (
        "rtype.crc.status",
        "crc_status",
        "Unverified: the check is off, or the capture does not hold the footer",
    ),
    ("rtype.payload", "payload", ""),
    (
        "rtype.undecoded",
        "undecoded",
        "Bytes the description cannot interpret",
    ),
    (
        "rtype.chunk.reassembled_in",
        "reassembled_in",
        "The frame whose chunk completed this chunk's set",
    ),
    (
        "rtype.chunk.frame",
        "chunk_frame",
        "A frame holding one chunk of the reassembled snapshot",
    ),
    ("rtype.reassembled.length", "reassembled_length", ""),
    ("rtype.reassembled.undecoded", "reassembled_undecoded", ""),
    ("rtype.conversation", "conversation", CONVERSATION_BLURB),
    ("rtype.stream.time_delta", "stream_delta", STREAM_BLURB),
    ("rt.undecoded", "undecoded", ""),
    ("rt.conversation", "conversation", CONVERSATION_BLURB),
    ("rt.stream.time_delta", "stream_delta", STREAM_BLURB),
    (
        "rtnp.framing",
        "framing",
        "envelope (Cap'n Proto, document 004 §4) or raw (JSON alone)",
    ),
    ("rtnp.envelope.segments", "segments", ""),
    ("rtnp.envelope.words", "words", ""),
    (
        "rtnp.envelope.text",
        "text_bytes",
        "The envelope's Text field (its bytes include the NUL)",
    ),
    ("rtnp.keepalive", "keepalive", ""),
    ("rtnp.text", "text", ""),
    ("rtnp.type", "type", ""),
    ("rtnp.conversation", "conversation", CONVERSATION_BLURB),
    ("rtnp.stream.time_delta", "stream_delta", STREAM_BLURB),
];

/// What a stream is.
const STREAM_BLURB: &str = "A stream is one direction of one rtype-inspect conversation; none \
    for its first datagram";

/// What a conversation number is.
const CONVERSATION_BLURB: &str = "rtype-inspect's conversation number: the client's address \
    and port with the server's address, numbered in order of first appearance (0 past the limit)";

/// The protocol a runtime field belongs to: the first segment of its name.
fn runtime_proto(f: &RuntimeField) -> &'static str {
    f.name.split('.').next().unwrap_or(f.name)
}

/// The `ProtoField` constructor of a runtime field: Wireshark's type (ProtoField's are its
/// names in lower case), base and value string from the registry, `blurb` from [`RUNTIME_LUA`].
fn runtime_constructor(f: &RuntimeField, blurb: &str) -> String {
    let kind =
        f.ty.ft_name()
            .trim_start_matches("FT_")
            .to_ascii_lowercase();
    let values = match f.values {
        Values::Named(list) => {
            let entries: Vec<String> = list
                .iter()
                .map(|n| format!("[{}] = {}", n.value, lua_str(n.name)))
                .collect();
            format!("{{ {} }}", entries.join(", "))
        }
        _ => "nil".into(),
    };
    let base = if f.hex { "base.HEX" } else { "base.DEC" };
    let rest = match (f.ty, blurb) {
        (FieldType::Unsigned(_) | FieldType::Signed(_), "") if values == "nil" => {
            format!(", {base}")
        }
        (FieldType::Unsigned(_) | FieldType::Signed(_), _) => {
            format!(", {base}, {values}, nil, \"{blurb}\"")
        }
        (_, "") => String::new(),
        (FieldType::FrameNum, _) => format!(", base.NONE, nil, nil, \"{blurb}\""),
        _ => format!(", nil, \"{blurb}\""),
    };
    format!("ProtoField.{kind}(\"{}\", \"{}\"{rest})", f.name, f.label)
}

/// Filter prefix of the snapshot rebuilt from SNAPSHOT_CHUNK datagrams.
const REASSEMBLED_PREFIX: &str = "rtype.reassembled";

/// A datagram the capture cut short, which every dialect's runtime reports.
const CUT: &[(&str, Rule)] = &[("snaplen", Rule::CaptureSnaplen)];

/// The rules each dialect's runtime raises, by key: its description's `DATAGRAM_RULES`, the
/// key being the rule's kind with `_` for `-`, and [`CUT`].
fn runtime_rules(dialect: &'static [(&'static str, Rule)]) -> impl Iterator<Item = (String, Rule)> {
    dialect
        .iter()
        .chain(CUT)
        .map(|(kind, rule)| (kind.replace('-', "_"), *rule))
}

/// Every rule the generated dissector raises: those one datagram decides, which the runtime and
/// the description's fields, variants, switches, messages and schemas raise. Rules about a whole
/// conversation or capture (a chunk set never completed, sequence and timing, unacknowledged
/// packets, the rtnp rules that need the conversation, ...) are left to rtype-inspect.
pub fn dissector_rules() -> Vec<Rule> {
    let rules: BTreeSet<Rule> = [
        rtype::DATAGRAM_RULES,
        rt::DATAGRAM_RULES,
        rtnp::DATAGRAM_RULES,
        CUT,
    ]
    .iter()
    .flat_map(|table| table.iter().map(|(_, rule)| *rule))
    .collect();
    rules.into_iter().collect()
}

/// The protocol a filter name or rule ID belongs to: its first segment (rules of the capture,
/// which every dialect raises, are registered with rtype's).
fn proto_of(name: &str) -> &str {
    match name.split('.').next().unwrap_or(name) {
        p @ (PROTO_RT | PROTO_RTNP) => p,
        _ => PROTO,
    }
}

/// Writes the complete Lua dissector: every bundled snapshot profile, and `profile` (the
/// default of the preference). Without one the preference's default is `auto`: the document's
/// table, or per conversation the bundled profile its snapshots fit, as rtype-inspect reads.
pub fn generate(profile: Option<&Profile>) -> String {
    let mut profiles = vec![Profile::document()];
    for (name, _) in BUNDLED {
        if let Some(p) = Profile::bundled(name) {
            profiles.push(p);
        }
    }
    let default =
        profile.map(
            |profile| match profiles.iter().position(|p| p.name == profile.name) {
                Some(i)
                    if profile.name == "document"
                        || BUNDLED.iter().any(|(n, _)| *n == profile.name) =>
                {
                    i
                }
                _ => {
                    profiles.push(profile.clone());
                    profiles.len() - 1
                }
            },
        );
    let mut g = Gen::new(profiles);
    // Compiling declares the fields, which the declarations then list.
    let code = g.code();
    let mut out = String::with_capacity(512 * 1024);
    let _ = write!(
        out,
        "-- R-Type UDP protocols dissector for Wireshark/tshark 4.0+ (Lua 5.2 to 5.4): the `rtype`\n\
         -- dialect (documents 002/001), `rt` (document 003) and `rtnp` (document 004).\n\
         --\n\
         -- GENERATED by rtype-inspect from its protocol description (src/proto), with the snapshot\n\
         -- profiles {names} (preference rtype.profile, default {default}). Do not edit: regenerate with\n\
         --     rtype-inspect dissector -o wireshark/rtype.lua\n\
         -- Install: copy to ~/.local/lib/wireshark/plugins/, or run tshark -X lua_script:rtype.lua\n\
         -- (see wireshark/README.md).\n\n\
         local rtype = Proto(\"{PROTO}\", \"R-Type UDP Protocol\")\n\
         local rt = Proto(\"{PROTO_RT}\", \"R-Type RT Protocol (document 003)\")\n\
         local rtnp = Proto(\"{PROTO_RTNP}\", \"R-Type RTNP Protocol (document 004)\")\n\n",
        names = g
            .profiles
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        default = default.map_or("auto", |i| &g.profiles[i].name),
    );
    out.push_str(PRELUDE);
    out.push('\n');
    for chunk in [BYTES, CRC32, LZ4, UTF8, RANGE] {
        out.push_str(chunk);
        out.push('\n');
    }
    g.declarations(&mut out, default);
    out.push_str(WALKER);
    out.push('\n');
    out.push_str(&code);
    for part in [RECOGNISE, DRIVER, DRIVER_RT, DRIVER_RTNP, REGISTER] {
        out.push_str(part);
        out.push('\n');
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

/// A declared field: its signature (to share it), its descriptor index, and the profile it
/// belongs to (`None`: every profile).
struct Declared {
    signature: String,
    index: usize,
    profile: Option<usize>,
}

/// State of one generation: the fields declared so far and the value strings.
struct Gen {
    profiles: Vec<Profile>,
    /// Filter names registered, with the fields behind each (profiles may give one name
    /// different fields).
    abbrevs: HashMap<String, Vec<Declared>>,
    /// Filter names of the runtime, the protocols and the rules.
    reserved: HashSet<String>,
    /// Value-string tables by content; the Lua name is `VS[index + 1]`.
    value_strings: Vec<Vec<(u32, &'static str)>>,
    /// Flag-bit ProtoField constructors, and the profiles whose fields they belong to (none: every
    /// profile); the Lua name is `FB[index + 1]`.
    bit_fields: Vec<(String, Vec<String>)>,
    /// Field descriptor declarations (`fd(index, ...)`), in first-use order; index = position + 1.
    fields: Vec<String>,
    /// Fields another of the same name and another integer type may share (see `Gen::share`):
    /// the field and its descriptor index.
    shareable: HashMap<String, (&'static Field, usize)>,
    /// The prefixes the masked fields are compiled under (`PROFILE[k]` for the k-th).
    masked: Vec<String>,
    /// What the fields being declared belong to, for their descriptions: the message (or header)
    /// and its document section.
    context: String,
    /// The registry's role fields ([`crate::proto::registry::ROLE_FIELDS`]): each one's protocol,
    /// role, filter name, label and Lua name (`PF.entity_id`).
    roles: Vec<RoleLua>,
}

/// A role field as the Lua registers it.
struct RoleLua {
    proto: &'static str,
    role: Role,
    name: String,
    label: String,
    ty: FieldType,
    pf: String,
}

impl RoleLua {
    /// Every role field of the registry.
    fn all() -> Vec<RoleLua> {
        let registry = Registry::new(&Profile::document());
        let pf_tables = [(PROTO, "PF"), (PROTO_RT, "PF_RT"), (PROTO_RTNP, "PF_RTNP")];
        registry
            .fields
            .iter()
            .filter_map(|f| {
                let Source::Role { role, .. } = f.source else {
                    return None;
                };
                let (proto, table) = *pf_tables.iter().find(|(p, _)| *p == proto_of(&f.name))?;
                let key = f.name[proto.len() + 1..].replace('.', "_");
                Some(RoleLua {
                    proto,
                    role,
                    name: f.name.clone(),
                    label: f.label.clone(),
                    ty: f.ty,
                    pf: format!("{table}.{key}"),
                })
            })
            .collect()
    }
}

impl Gen {
    fn new(profiles: Vec<Profile>) -> Self {
        let mut reserved = HashSet::new();
        for field in DISSECTOR_RUNTIME {
            reserved.insert(field.name.to_string());
        }
        for name in [PROTO, PROTO_RT, PROTO_RTNP] {
            reserved.insert(name.to_string());
        }
        for rule in CATALOG {
            reserved.insert(rule.id.to_string());
        }
        for (_, id) in MALFORMED {
            reserved.insert(id.to_string());
        }
        reserved.insert(PROFILE_SUGGESTED.0.to_string());
        let roles = RoleLua::all();
        reserved.extend(roles.iter().map(|r| r.name.clone()));
        Gen {
            profiles,
            abbrevs: HashMap::new(),
            reserved,
            value_strings: Vec::new(),
            bit_fields: Vec::new(),
            fields: Vec::new(),
            shareable: HashMap::new(),
            masked: Vec::new(),
            context: String::new(),
            roles,
        }
    }

    /// Constants, rules, experts, value strings, ProtoFields and field descriptors.
    fn declarations(&mut self, out: &mut String, default: Option<usize>) {
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
             CHUNK_MAX_AGE = {age}, CHUNK_MAX_CHUNKS = {MAX_CHUNKS}, CHUNK_MAX_OPEN = {MAX_OPEN_SETS}, CHUNK_MAX_BYTES = {MAX_SET_BYTES},\n    \
             MAX_CONVERSATIONS = {MAX_CONVERSATIONS},\n}}",
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
             PING = {}, PONG = {}, SERVER_PORT = {}, TYPE_KEY = {},\n}}\n",
            lua_str(PING),
            lua_str(PONG),
            rtnp::SERVER_PORT,
            lua_str(rtnp::TYPE_KEY),
        );

        // The rules each runtime raises, by what they are about.
        for (table, rules, proto) in [
            ("RULE", rtype::DATAGRAM_RULES, PROTO),
            ("RULE_RT", rt::DATAGRAM_RULES, PROTO_RT),
            ("RULE_RTNP", rtnp::DATAGRAM_RULES, PROTO_RTNP),
        ] {
            let _ = writeln!(out, "local {table} = {{");
            for (key, rule) in runtime_rules(rules) {
                let _ = writeln!(out, "    {key} = {},", lua_str(rule.id()));
            }
            let malformed = MALFORMED
                .iter()
                .find(|(p, _)| *p == proto)
                .map_or("", |m| m.1);
            let _ = writeln!(out, "    malformed = {},", lua_str(malformed));
            if proto == PROTO {
                let _ = writeln!(
                    out,
                    "    profile_suggested = {},",
                    lua_str(PROFILE_SUGGESTED.0)
                );
            }
            out.push_str("}\n");
        }
        out.push('\n');

        // One expert info per rule the dissector raises, registered with its dialect's protocol.
        out.push_str(
            "local EX, SUMMARY, SEVERITY, SECTION, EXPERTS = {}, {}, {}, {}, { rtype = {}, rt = {}, rtnp = {} }\n",
        );
        out.push_str(
            "local function expert_info(proto, id, summary, group, severity, level, section)\n",
        );
        out.push_str("    SUMMARY[id], SEVERITY[id], SECTION[id] = summary, level, section\n");
        out.push_str(
            "    EX[id] = ProtoExpert.new(id, \"[\" .. id .. \"] \" .. summary, group, severity)\n",
        );
        out.push_str("    EXPERTS[proto][#EXPERTS[proto] + 1] = EX[id]\n");
        out.push_str("end\n");
        let raised = dissector_rules();
        for rule in raised {
            let info = rule.info();
            let (severity, level) = match info.severity {
                Severity::Error => ("ERROR", "error"),
                Severity::Warning => ("WARN", "warning"),
                Severity::Info => ("NOTE", "info"),
            };
            let _ = writeln!(
                out,
                "expert_info({}, {}, {}, expert.group.{}, expert.severity.{severity}, \"{level}\", {})",
                lua_str(proto_of(info.id)),
                lua_str(info.id),
                lua_str(info.summary),
                expert_group(rule),
                lua_str(info.section),
            );
        }
        for (proto, id) in MALFORMED {
            let _ = writeln!(
                out,
                "expert_info({}, {}, {}, expert.group.MALFORMED, expert.severity.ERROR, \"error\", \"\")",
                lua_str(proto),
                lua_str(id),
                lua_str(MALFORMED_SUMMARY)
            );
        }
        let _ = writeln!(
            out,
            "expert_info(\"{PROTO}\", {}, {}, expert.group.PROTOCOL, expert.severity.NOTE, \"info\", \"\")",
            lua_str(PROFILE_SUGGESTED.0),
            lua_str(PROFILE_SUGGESTED.1)
        );
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
            for f in DISSECTOR_RUNTIME
                .iter()
                .filter(|f| runtime_proto(f) == proto)
            {
                // Every runtime field has its Lua entry (tests::every_runtime_field_has_its_lua_key).
                let Some((_, key, blurb)) = RUNTIME_LUA.iter().find(|(name, ..)| *name == f.name)
                else {
                    continue;
                };
                let _ = writeln!(
                    out,
                    "    {key} = reg({}, {}),",
                    lua_str(proto),
                    runtime_constructor(f, blurb)
                );
            }
            out.push_str("}\n");
        }
        // The role fields, hidden beside each field of their role; FOLLOW: the entity ones, which
        // the Follow R-Type entity menu filters on.
        for r in &self.roles {
            let kind =
                r.ty.ft_name()
                    .trim_start_matches("FT_")
                    .to_ascii_lowercase();
            let _ = writeln!(
                out,
                "{} = reg({}, ProtoField.{kind}({}, {}, base.DEC))",
                r.pf,
                lua_str(r.proto),
                lua_str(&r.name),
                lua_str(&r.label)
            );
        }
        let follow: Vec<String> = self
            .roles
            .iter()
            .filter(|r| r.role == Role::EntityId)
            .map(|r| lua_str(&r.name))
            .collect();
        let _ = writeln!(out, "local FOLLOW = {{ {} }}", follow.join(", "));
        out.push_str("RULE.undecoded_pf, RULE_RT.undecoded_pf = PF.undecoded, PF_RT.undecoded\n");
        out.push_str("local RULE_REASSEMBLED = setmetatable({ undecoded_pf = PF.reassembled_undecoded }, { __index = RULE })\n\n");
        out.push_str(
            "-- Field descriptors, by field number: ProtoField, name, flag-bit ProtoFields, raw ProtoField and\n\
             -- divisor of a scaled field, whether the ProtoField is given its value (see walker).\n",
        );
        out.push_str("local FPF, FNAME, FBITS, FRAW, FDIV, FEXPLICIT = {}, {}, {}, {}, {}, {}\n");
        out.push_str("local function fd(i, pf, name, bits, raw, div, explicit)\n");
        out.push_str("    FPF[i], FNAME[i], FBITS[i], FRAW[i], FDIV[i], FEXPLICIT[i] = pf, name, bits, raw, div, explicit\n");
        out.push_str("end\n");
        out.push_str("local FB = {}\n");
        for (i, (ctor, profiles)) in self.bit_fields.iter().enumerate() {
            let _ = write!(out, "FB[{}] = {ctor}", i + 1);
            if !profiles.is_empty() {
                let _ = write!(out, " -- profile {}", profiles.join(" "));
            }
            out.push('\n');
        }
        for line in &self.fields {
            out.push_str(line);
            out.push('\n');
        }
        out.push('\n');
        out.push_str(
            "rtype.fields, rt.fields, rtnp.fields = FIELDS.rtype, FIELDS.rt, FIELDS.rtnp\n\
             rtype.experts, rt.experts, rtnp.experts = EXPERTS.rtype, EXPERTS.rt, EXPERTS.rtnp\n\n",
        );
        let _ = writeln!(
            out,
            "-- The snapshot profiles (their masked fields are compiled below), the selected one, the CRC\n\
             -- check; set from the preferences (DEFAULT_PROFILE 0: auto).\n\
             local PROFILES, DEFAULT_PROFILE, CHECK_CRC = {{}}, {}, true\nlocal PROFILE, AUTO\n",
            default.map_or(0, |i| i + 1)
        );
    }

    /// The header layouts, the message tables (rtype's, the reassembled snapshot's layout, rt's),
    /// each profile's masked fields and rtnp's schemas, as Lua.
    fn code(&mut self) -> String {
        let mut text = String::new();
        let out = &mut text;
        out.push_str(
            "-- ---------------------------------------------------------------------------------------------\n",
        );
        out.push_str("-- Layouts, compiled from the protocol description (one function per layout). Each returns\n");
        out.push_str("-- true when its nodes were all read, false when the walk stopped.\n");
        out.push_str(
            "-- ---------------------------------------------------------------------------------------------\n",
        );
        out.push_str("local HEADERS = {\n");
        for (nodes, label) in [
            (HEADER, "rtype header (17-byte layout, document 002 §4)"),
            (
                HEADER_15,
                "rtype header (15-byte layout of the older build, spec-notes B)",
            ),
        ] {
            self.context = label.to_string();
            self.header(out, nodes, PROTO);
        }
        out.push_str("}\nlocal RT_HEADER = ");
        self.context = "rt header (document 003 §3)".to_string();
        self.header(out, rt::HEADER, PROTO_RT);
        out.truncate(out.trim_end_matches([',', '\n']).len());
        out.push_str("\n\n");

        self.messages(out, "MSG", PROTO, MESSAGES);
        let snapshot = snapshot_message();
        out.push_str("\n-- The snapshot rebuilt from a complete set of SNAPSHOT_CHUNK datagrams: laid out as\n");
        let _ = writeln!(
            out,
            "-- {} and shown under `{REASSEMBLED_PREFIX}.`.",
            snapshot.name
        );
        out.push_str("local REASSEMBLED = {\n    name = \"Reassembled snapshot\", variants = {},\n    body = ");
        self.context = format!("reassembled {} ({})", snapshot.name, snapshot.section);
        self.function(out, &[snapshot.body], REASSEMBLED_PREFIX, 1, None);
        out.push_str("}\n\n");
        self.messages(out, "MSG_RT", PROTO_RT, rt::MESSAGES);
        out.push('\n');

        out.push_str("-- Each snapshot profile's masked fields: the function reading them under each prefix.\n");
        for p in 0..self.profiles.len() {
            let (name, label) = {
                let profile = &self.profiles[p];
                let label = if profile.name == "document" {
                    "The document's table (001 §6.2)".to_string()
                } else if BUNDLED.iter().any(|(n, _)| *n == profile.name) {
                    format!("The bundled profile {}", profile.name)
                } else {
                    format!("The profile {}", profile.name)
                };
                (profile.name.clone(), label)
            };
            let skip: Vec<String> = self.profiles[p]
                .bits()
                .iter()
                .enumerate()
                .map(|(bit, slot)| {
                    let w = match slot {
                        BitSlot::Field(f) => skip_width(f),
                        _ => 0,
                    };
                    if w == 0 {
                        format!("[{bit}] = false")
                    } else {
                        format!("[{bit}] = {w}")
                    }
                })
                .collect();
            let profile = &self.profiles[p];
            let bundled = BUNDLED.iter().any(|(n, _)| *n == name);
            let differs = profile.differs.as_deref().map_or("nil".into(), lua_str);
            let _ = writeln!(
                out,
                "PROFILES[{}] = {{\n    name = {}, label = {}, bundled = {bundled}, differs = {differs},\n    \
                 skip = {{ w = {{}}, e = {{}}, d = {{ {} }} }},",
                p + 1,
                lua_str(&name),
                lua_str(&label),
                skip.join(", ")
            );
            for k in 0..self.masked.len() {
                let prefix = self.masked[k].clone();
                self.context = format!("snapshot profile {name}");
                let _ = writeln!(out, "    [{}] = function(c, t)", k + 1);
                out.push_str("        local v\n");
                self.masked_bits(out, p, &prefix, "t", 2);
                out.push_str("        return true\n    end,\n");
            }
            out.push_str("}\n");
        }
        out.push_str(
            "PROFILE, AUTO = PROFILES[DEFAULT_PROFILE] or PROFILES[1], DEFAULT_PROFILE == 0\n\n",
        );

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

    /// One header layout: its length, whether it has the compression bit, the function reading
    /// its fields into a tree, and where each role's field is.
    fn header(&mut self, out: &mut String, nodes: &'static [Node], proto: &str) {
        let mut at = Vec::new();
        let mut offset = 0;
        let compression = nodes
            .iter()
            .any(|n| matches!(n, Node::Field(f) if f.role == Role::OrigSize));
        for node in nodes {
            let Node::Field(f) = node else {
                panic!("a header holds fields only")
            };
            let width = f.width().expect("header fields have fixed widths");
            if f.role != Role::None {
                at.push(format!("{:?} = {{ {offset}, {width} }}", f.role));
            }
            offset += width;
        }
        let _ = writeln!(
            out,
            "    {{\n        len = {offset}, compression = {compression},"
        );
        let _ = writeln!(out, "        at = {{ {} }},", at.join(", "));
        out.push_str("        read = function(c, t)\n            local v\n");
        for node in nodes {
            let Node::Field(f) = node else { continue };
            // Without Orig. Size the version byte has no compression bit.
            let drop = if compression || f.role != Role::VersionByte {
                0
            } else {
                u32::from(COMPRESSED_BIT)
            };
            let index = self.declare_with(format!("{proto}.{}", f.name), f, proto, None, drop);
            let call = self.read_call(f, index, "t");
            let _ = writeln!(out, "            if {call} == nil then return false end");
        }
        out.push_str("            return true\n        end,\n    },\n");
    }

    /// A dialect's message table `table`: each message's name, direction, fixed size, the rule
    /// its mere sight breaks, whether it holds masked fields, its body and its variants.
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
            self.context = format!("{} ({})", m.name, m.section);
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
            // The payload sizes a datagram of it can have (`Message::size_fits`; none: any).
            if let Some(sizes) = m.layout_sizes().collect::<Option<BTreeSet<_>>>() {
                let sizes: Vec<String> = sizes.iter().map(|n| format!("[{n}] = true")).collect();
                let _ = writeln!(out, "    sizes = {{ {} }},", sizes.join(", "));
            }
            if let Some(rule) = m.seen_rule {
                let _ = writeln!(out, "    seen = {},", lua_str(rule.id()));
            }
            if has_masked(m.body) {
                out.push_str("    masked = true,\n");
            }
            out.push_str("    body = ");
            self.function(out, &[m.body], &prefix, 1, None);
            out.push_str("    variants = {");
            for v in m.variants {
                let _ = write!(out, "\n        {{ rule = {}, fn = ", lua_str(v.rule.id()));
                let parts: Vec<&'static [Node]> = if v.extends_body {
                    vec![m.body, v.nodes]
                } else {
                    vec![v.nodes]
                };
                self.context = format!("{} ({}), as {}", m.name, m.section, v.rule.id());
                self.function(out, &parts, &prefix, 2, None);
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
        profile: Option<usize>,
    ) {
        out.push_str("function(c, t)\n");
        let _ = writeln!(out, "{}local v", pad(indent + 1));
        for nodes in parts {
            self.nodes(out, nodes, prefix, "t", indent + 1, 0, profile);
        }
        let _ = writeln!(out, "{}return true\n{}end,", pad(indent + 1), pad(indent));
    }

    /// The Lua call reading field `f` (descriptor `index`) into tree variable `t`: nil when the
    /// walk stops, else the raw value (0 for text, bytes and floats nothing checks).
    fn read_call(&self, f: &Field, index: usize, t: &str) -> String {
        if f.array > 0 {
            let reader = if matches!(f.display, Display::Text) {
                "TEXT"
            } else {
                "BYTES"
            };
            return format!("{reader}(c, {t}, {index}, {})", f.array);
        }
        match f.ty {
            Ty::Str8 => format!("STR8(c, {t}, {index})"),
            Ty::F32 if matches!(f.check, Check::Finite(_) | Check::Ascending(_)) => {
                format!("F32V(c, {t}, {index})")
            }
            Ty::F32 => format!("F32(c, {t}, {index})"),
            ty if f.divisor != 1 => {
                let (read, width, sign) = match ty {
                    Ty::U8 => ("U8", 1, 0u64),
                    Ty::U16 => ("U16", 2, 0),
                    Ty::U32 => ("U32", 4, 0),
                    Ty::I16 => ("U16", 2, 1 << 15),
                    Ty::I32 => ("U32", 4, 1 << 31),
                    Ty::F32 | Ty::Str8 => unreachable!("handled above"),
                };
                format!("SCALED(c, {t}, {index}, {read}, {width}, {sign})")
            }
            Ty::U8 => format!("U8(c, {t}, {index})"),
            Ty::U16 => format!("U16(c, {t}, {index})"),
            Ty::U32 => format!("U32(c, {t}, {index})"),
            Ty::I16 => format!("I16(c, {t}, {index})"),
            Ty::I32 => format!("I32(c, {t}, {index})"),
        }
    }

    /// Statements reading field `f` into tree variable `t`, then its role and check.
    /// `want` keeps the value in `v` for the statements after (a count, a switch tag).
    #[allow(clippy::too_many_arguments)]
    fn field(
        &mut self,
        out: &mut String,
        f: &'static Field,
        abbrev: String,
        t: &str,
        p: &str,
        profile: Option<usize>,
        want: bool,
    ) {
        let role = self
            .roles
            .iter()
            .find(|r| r.role == f.role && r.proto == proto_of(&abbrev))
            .map(|r| r.pf.clone());
        let index = self.declare_with(abbrev, f, "", profile, 0);
        let call = self.read_call(f, index, t);
        let width = f.width().unwrap_or(0);
        let plain_unsigned =
            matches!(f.ty, Ty::U8 | Ty::U16 | Ty::U32) && f.divisor == 1 && f.array == 0;
        let mut after = Vec::new();
        match f.role {
            Role::UpdateMask => after.push("c.mask = v".to_string()),
            Role::EntityId => after.push("c.entity = v".to_string()),
            Role::TotalChunks => after.push("c.total_chunks = v".to_string()),
            Role::ChunkIndex => after.push("c.chunk_index = v".to_string()),
            Role::EntityType if plain_unsigned => {
                after.push(format!("entity_type(c, {index}, v, {width})"))
            }
            Role::ArchetypeTypeId => after.push("archetype_type(c, v)".to_string()),
            _ => {}
        }
        if let Some(pf) = role {
            after.push(format!("role_item(c, {t}, {pf}, {width}, v)"));
        }
        match f.check {
            Check::None => {}
            Check::Finite(rule) if f.ty == Ty::F32 => after.push(format!(
                "check_finite(c, {index}, v, {width}, {})",
                lua_str(rule.id())
            )),
            Check::Ascending(rule) if f.ty == Ty::F32 => after.push(format!(
                "check_ascending(c, {index}, v, {width}, {})",
                lua_str(rule.id())
            )),
            Check::Known(rule) => {
                if let (true, Display::Enum(named)) = (plain_unsigned, f.display) {
                    let vs = self.value_string(named);
                    after.push(format!(
                        "check_known(c, {index}, v, {width}, {vs}, {})",
                        lua_str(rule.id())
                    ));
                }
            }
            Check::Unused { mask, rule } if plain_unsigned => after.push(format!(
                "check_unused(c, {index}, v, {width}, 0x{mask:X}, {})",
                lua_str(rule.id())
            )),
            _ => {}
        }
        if f.role == Role::ArchetypeSpriteId && f.ty == Ty::Str8 {
            let _ = writeln!(out, "{p}v = c.pos");
            let _ = writeln!(out, "{p}if {call} == nil then return false end");
            let _ = writeln!(out, "{p}archetype_sprite(c, v)");
        } else if after.is_empty() && !want {
            let _ = writeln!(out, "{p}if {call} == nil then return false end");
        } else {
            let _ = writeln!(out, "{p}v = {call}");
            let _ = writeln!(out, "{p}if v == nil then return false end");
            for line in after {
                let _ = writeln!(out, "{p}{line}");
            }
        }
    }

    /// Statements reading `nodes` into tree variable `t`; each returns false when the walk stops.
    #[allow(clippy::too_many_arguments)]
    fn nodes(
        &mut self,
        out: &mut String,
        nodes: &'static [Node],
        prefix: &str,
        t: &str,
        indent: usize,
        depth: usize,
        profile: Option<usize>,
    ) {
        let p = pad(indent);
        for node in nodes {
            match node {
                Node::Field(f) => self.field(
                    out,
                    f,
                    format!("{prefix}.{}", f.name),
                    t,
                    &p,
                    profile,
                    false,
                ),
                Node::Repeat { count, item } => {
                    let abbrev = format!("{prefix}.{}", count.name);
                    self.field(out, count, abbrev, t, &p, profile, true);
                    let (n, l, s, i, g, ti) = (
                        format!("n{depth}"),
                        format!("l{depth}"),
                        format!("s{depth}"),
                        format!("i{depth}"),
                        format!("g{depth}"),
                        format!("t{depth}"),
                    );
                    let _ = writeln!(out, "{p}do");
                    let _ = writeln!(out, "{p}    local {n}, {s} = v, c.pos");
                    if count.role == Role::EntityCount {
                        let _ = writeln!(
                            out,
                            "{p}    if c.entities_at == nil then c.entity_count, c.entities_at = {n}, c.pos end"
                        );
                    }
                    let _ = writeln!(out, "{p}    c.prev = nil");
                    let _ = writeln!(
                        out,
                        "{p}    local {l} = {t} and open(c, {t}, {}, {n}, \"]\")",
                        lua_str(&format!("{} [", item.name))
                    );
                    let _ = writeln!(out, "{p}    for {i} = 0, {n} - 1 do");
                    let _ = writeln!(out, "{p}        local {g} = c.pos");
                    let _ = writeln!(
                        out,
                        "{p}        local {ti} = {l} and open(c, {l}, {}, {i})",
                        lua_str(&format!("{} ", item.label))
                    );
                    let inner = format!("{prefix}.{}", item.filter);
                    self.nodes(out, item.nodes, &inner, &ti, indent + 2, depth + 1, profile);
                    let _ = writeln!(out, "{p}        if {ti} then close(c, {ti}, {g}) end");
                    let _ = writeln!(out, "{p}    end");
                    let _ = writeln!(out, "{p}    if {l} then close(c, {l}, {s}) end");
                    let _ = writeln!(out, "{p}end");
                }
                Node::Switch {
                    tag,
                    cases,
                    unknown,
                } => {
                    let abbrev = format!("{prefix}.{}", tag.name);
                    self.field(out, tag, abbrev, t, &p, profile, true);
                    let (g, ti) = (format!("g{depth}"), format!("t{depth}"));
                    for (k, case) in cases.iter().enumerate() {
                        let kw = if k == 0 { "if" } else { "elseif" };
                        let _ = writeln!(out, "{p}{kw} v == {} then", case.value);
                        let _ = writeln!(out, "{p}    local {g} = c.pos");
                        let _ = writeln!(
                            out,
                            "{p}    local {ti} = {t} and open(c, {t}, {}, \"\")",
                            lua_str(case.group.label)
                        );
                        let inner = format!("{prefix}.{}", case.group.filter);
                        self.nodes(
                            out,
                            case.group.nodes,
                            &inner,
                            &ti,
                            indent + 1,
                            depth + 1,
                            profile,
                        );
                        let _ = writeln!(out, "{p}    if {ti} then close(c, {ti}, {g}) end");
                    }
                    let call = format!(
                        "return unknown_case(c, {t}, {}, v, {})",
                        lua_str(tag.name),
                        lua_str(unknown.id())
                    );
                    if cases.is_empty() {
                        let _ = writeln!(out, "{p}{call}");
                    } else {
                        let _ = writeln!(out, "{p}else\n{p}    {call}\n{p}end");
                    }
                }
                Node::Masked => {
                    let k = match self.masked.iter().position(|m| m == prefix) {
                        Some(k) => k,
                        None => {
                            self.masked.push(prefix.to_string());
                            self.masked.len() - 1
                        }
                    };
                    let _ = writeln!(
                        out,
                        "{p}if not PROFILE[{}](c, {t}) then return false end",
                        k + 1
                    );
                }
            }
        }
    }

    /// The fields profile `profile` gates by the update mask, read under `prefix`: each set bit
    /// in order, tested with arithmetic (`m % 2^(bit+1) >= 2^bit`, no C call).
    fn masked_bits(
        &mut self,
        out: &mut String,
        profile: usize,
        prefix: &str,
        t: &str,
        indent: usize,
    ) {
        let p = pad(indent);
        let _ = writeln!(out, "{p}local m = c.mask");
        // Without a tree, a mask whose fields only need skipping (no value checked or kept but
        // the entity type's) is passed over in one step: its width is computed once per mask
        // value (`skip_width`) and kept in the profile's `skip` table.
        let _ = writeln!(out, "{p}if {t} == nil then");
        let _ = writeln!(out, "{p}    local s = PROFILES[{}].skip", profile + 1);
        let _ = writeln!(out, "{p}    local w = s.w[m]");
        let _ = writeln!(out, "{p}    if w == nil then w = skip_width(s, m) end");
        let _ = writeln!(out, "{p}    local at = c.pos");
        let _ = writeln!(out, "{p}    if w and c.len - at >= w then");
        if let Some((bit, f)) =
            self.profiles[profile]
                .bits()
                .iter()
                .enumerate()
                .find_map(|(bit, slot)| match slot {
                    BitSlot::Field(f) if skip_width(f) < 0 => Some((bit, *f)),
                    _ => None,
                })
        {
            let index = self.declare_with(format!("{prefix}.{}", f.name), f, "", Some(profile), 0);
            let width = f.width().unwrap_or(0);
            let _ = writeln!(out, "{p}        local e = s.e[m]");
            let _ = writeln!(out, "{p}        if e and c.archetypes then");
            let _ = writeln!(out, "{p}            -- bit {bit}: the entity type, checked");
            let _ = writeln!(out, "{p}            c.pos = at + e - {width}");
            let _ = writeln!(
                out,
                "{p}            entity_type(c, {index}, {}, {width})",
                self.read_call(f, index, "nil")
            );
            let _ = writeln!(out, "{p}        end");
        }
        let _ = writeln!(out, "{p}        c.pos = at + w");
        let _ = writeln!(out, "{p}        return true");
        let _ = writeln!(out, "{p}    end");
        let _ = writeln!(out, "{p}end");
        let last = MASK_BITS - 1;
        for bit in 0..MASK_BITS {
            let test = format!("{p}if m % {} >= {} then", 1u32 << (bit + 1), 1u32 << bit);
            match self.profiles[profile].bits()[bit] {
                BitSlot::Field(f) => {
                    let _ = writeln!(out, "{test}");
                    let saved = std::mem::take(&mut self.context);
                    self.context = format!("{saved}, update-mask bit {bit}");
                    let abbrev = format!("{prefix}.{}", f.name);
                    self.field(out, f, abbrev, t, &pad(indent + 1), Some(profile), false);
                    self.context = saved;
                    let _ = writeln!(out, "{p}end");
                }
                BitSlot::Reserved => {
                    let _ = writeln!(
                        out,
                        "{test} return unknown_bit(c, {t}, {bit}, c.rules.reserved_bit) end"
                    );
                }
                BitSlot::Undefined => {
                    let _ = writeln!(
                        out,
                        "{test} return unknown_bit(c, {t}, {bit}, c.rules.undefined_bit) end"
                    );
                }
            }
            if bit < last && bit % 4 == 3 {
                // No bit left above: done (most masks set the low bits only).
                let _ = writeln!(out, "{p}if m < {} then return true end", 1u32 << (bit + 1));
            }
        }
    }

    /// Declares the field `f` under `abbrev` and returns its descriptor index: once per field (a
    /// different field wanting the same filter name gets a numbered one, unless it belongs to
    /// another snapshot profile, whose fields may reuse the names of the others'). Flag bits are
    /// named under `bits_prefix`, or under the field's own name when it is empty; flags whose value
    /// is in `drop` are left out.
    fn declare_with(
        &mut self,
        abbrev: String,
        f: &'static Field,
        bits_prefix: &str,
        profile: Option<usize>,
        drop: u32,
    ) -> usize {
        let signature = format!("{f:?} drop {drop}");
        if drop == 0 {
            if let Some(index) = self.share(&abbrev, f, &signature) {
                return index;
            }
        }
        let mut name = abbrev.clone();
        let mut n = 1;
        let mut shared_pf = None;
        loop {
            match self.abbrevs.get(&name) {
                Some(list) => {
                    if let Some(d) = list.iter().find(|d| d.signature == signature) {
                        let index = d.index;
                        if let Some(p) = profile {
                            // One field of several profiles: each is named on its line, and on
                            // its flags' lines.
                            let name = self.profiles[p].name.clone();
                            let line = &mut self.fields[index - 1];
                            if line.contains(" -- profile ")
                                && !line.split(' ').any(|word| word == name)
                            {
                                line.push(' ');
                                line.push_str(&name);
                            }
                            let flags: Vec<usize> = line
                                .split("FB[")
                                .skip(1)
                                .filter_map(|rest| rest.split(']').next()?.parse().ok())
                                .collect();
                            for k in flags {
                                let profiles = &mut self.bit_fields[k - 1].1;
                                if !profiles.is_empty() && !profiles.contains(&name) {
                                    profiles.push(name.clone());
                                }
                            }
                        }
                        return index;
                    }
                    // The same field without some flags (the 15-byte version byte): its ProtoField.
                    if drop != 0 {
                        if let Some(d) =
                            list.iter().find(|d| d.signature == format!("{f:?} drop 0"))
                        {
                            shared_pf = Some(d.index);
                            break;
                        }
                    }
                    let clash = list
                        .iter()
                        .any(|d| profile.is_none() || d.profile.is_none() || d.profile == profile);
                    if !clash {
                        break;
                    }
                }
                None if !self.reserved.contains(&name) => break,
                None => {}
            }
            n += 1;
            name = format!("{abbrev}_{n}");
        }
        let index = self.fields.len() + 1;
        self.abbrevs
            .entry(name.clone())
            .or_default()
            .push(Declared {
                signature,
                index,
                profile,
            });

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
        let label = lua_str(f.label);
        let blurb = lua_str(&self.blurb(f));
        let pf = match f.ty {
            _ if text_array => format!(
                "ProtoField.string({}, {label}, nil, {blurb})",
                lua_str(&name)
            ),
            _ if array => format!(
                "ProtoField.bytes({}, {label}, nil, {blurb})",
                lua_str(&name)
            ),
            Ty::F32 => format!(
                "ProtoField.float({}, {label}, nil, {blurb})",
                lua_str(&name)
            ),
            Ty::Str8 => format!(
                "ProtoField.string({}, {label}, nil, {blurb})",
                lua_str(&name)
            ),
            _ if scaled => format!(
                "ProtoField.double({}, {label}, nil, {blurb})",
                lua_str(&name)
            ),
            ty => format!(
                "ProtoField.{}({}, {label}, {base}, {}, nil, {blurb})",
                int_ctor(ty),
                lua_str(&name),
                vs.as_deref().unwrap_or("nil")
            ),
        };
        let proto = proto_of(&name);
        let pf = match shared_pf {
            Some(i) => format!("FPF[{i}]"),
            None => format!("reg(\"{proto}\", {pf})"),
        };
        let mut raw = "nil".to_string();
        let mut div = "nil".to_string();
        if scaled {
            let raw_name = format!("{name}.raw");
            self.reserved.insert(raw_name.clone());
            div = f.divisor.to_string();
            raw = format!(
                "reg(\"{proto}\", ProtoField.{}({}, {}, {base}))",
                int_ctor(f.ty),
                lua_str(&raw_name),
                lua_str(&format!("{} (raw)", f.label))
            );
        }
        // Flag bits: only on plain unsigned integers (scaled and signed ones are numbers).
        let mut bits = "nil".to_string();
        if let (Display::Flags(named), true, false, false) = (f.display, unsigned, scaled, array) {
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
            let mut list = Vec::new();
            for flag in named.iter().filter(|n| n.value != 0 && n.value & !max == 0) {
                let bit_abbrev = format!("{parent}.{}", flag.name);
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
                let ctor = format!("reg(\"{proto}\", {ctor})");
                // One ProtoField per flag filter name (the layout without a flag shares the rest).
                let k = match self.bit_fields.iter().position(|(c, _)| *c == ctor) {
                    Some(k) => k,
                    None => {
                        self.bit_fields.push((ctor, Vec::new()));
                        self.bit_fields.len() - 1
                    }
                };
                if let Some(p) = profile {
                    // A profile's flag is marked as its fields are (see `declare_with`).
                    let name = self.profiles[p].name.clone();
                    if !self.bit_fields[k].1.contains(&name) {
                        self.bit_fields[k].1.push(name);
                    }
                }
                if flag.value & drop == 0 {
                    list.push(format!("FB[{}]", k + 1));
                }
            }
            if !list.is_empty() {
                bits = format!("{{ {} }}", list.join(", "));
            }
        }
        if shareable(f) && profile.is_none() {
            self.shareable.insert(name.clone(), (f, index));
        }
        let mut line = format!(
            "fd({index}, {pf}, {}, {bits}, {raw}, {div})",
            lua_str(f.name)
        );
        if let Some(p) = profile {
            // Fields of one profile may share their filter names with another's (the tests read
            // each profile's field types by this mark).
            let _ = write!(line, " -- profile {}", self.profiles[p].name);
        }
        self.fields.push(line);
        index
    }

    /// A field's description (its blurb): wire type, how it is shown, where it is, its check.
    fn blurb(&self, f: &Field) -> String {
        let mut ty = if f.array > 0 {
            format!("u8[{}]", f.array)
        } else {
            f.ty.name().to_string()
        };
        if f.divisor != 1 && f.array == 0 {
            let _ = write!(ty, " fixed point, ÷ {}", f.divisor);
        }
        let shown = match f.display {
            Display::Enum(named) => format!(
                ", one of {}",
                named
                    .iter()
                    .map(|n| format!("{}={}", n.value, n.name))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            Display::Flags(named) => format!(
                ", flags {}",
                named
                    .iter()
                    .map(|n| format!("0x{:X}={}", n.value, n.name))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            Display::MessageType => ", message type".to_string(),
            Display::Text if f.array > 0 => ", text up to the first NUL".to_string(),
            Display::Text => ", length-prefixed UTF-8".to_string(),
            _ => String::new(),
        };
        let check = match f.check {
            Check::None => String::new(),
            Check::Finite(r) => format!("; must be finite ({})", r.id()),
            Check::Ascending(r) => format!("; must not decrease ({})", r.id()),
            Check::Known(r) => format!("; must be a listed value ({})", r.id()),
            Check::Unused { mask, rule } => {
                format!("; bits 0x{mask:X} unused ({})", rule.id())
            }
        };
        let mut text = format!("{ty}{shown} in {}{check}", self.context);
        if text.len() > 240 {
            let mut cut = 237;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str("...");
        }
        text
    }

    /// A field of a variant that has the filter name of another field of the same message and
    /// only differs from it by its integer type (PLAYER_INPUT's aim is u16 in the document, i16
    /// in real traffic): both get one ProtoField, an int32 given each value as its own type
    /// reads it, so that the filter name is the same whichever layout the datagram has. Returns
    /// the descriptor index, `None` when the field is not such a one.
    fn share(&mut self, abbrev: &str, f: &'static Field, signature: &str) -> Option<usize> {
        let (first, first_index) = *self.shareable.get(abbrev)?;
        let list = self.abbrevs.get(abbrev)?;
        if !shareable(f) || list.iter().any(|d| d.signature == signature) {
            return None;
        }
        let key = format!("{abbrev}#{}", f.ty.name());
        if let Some(d) = self.abbrevs.get(&key).and_then(|l| l.first()) {
            return Some(d.index);
        }
        let index = self.fields.len() + 1;
        self.abbrevs.entry(key).or_default().push(Declared {
            signature: signature.to_string(),
            index,
            profile: None,
        });
        let ctor = |ty: Ty| format!("ProtoField.{}(", int_ctor(ty));
        let shared = &mut self.fields[first_index - 1];
        if !shared.ends_with(", true)") {
            *shared = shared.replacen(&ctor(first.ty), "ProtoField.int32(", 1);
            shared.truncate(shared.len() - 1);
            shared.push_str(", true)");
        }
        self.fields.push(format!(
            "fd({index}, FPF[{first_index}], {}, nil, nil, nil, true)",
            lua_str(f.name)
        ));
        Some(index)
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

/// How a masked field is passed over without a tree: its width when nothing needs its value, the
/// negated width for the entity type (whose value is checked), 0 when it must be read.
fn skip_width(f: &Field) -> i64 {
    let plain_unsigned =
        matches!(f.ty, Ty::U8 | Ty::U16 | Ty::U32) && f.divisor == 1 && f.array == 0;
    match (f.width(), f.check, f.role) {
        (Some(w), Check::None, Role::None) => w as i64,
        (Some(w), Check::None, Role::EntityType) if plain_unsigned => -(w as i64),
        _ => 0,
    }
}

/// Whether `nodes` (or the groups in them) hold the masked fields.
fn has_masked(nodes: &[Node]) -> bool {
    nodes.iter().any(|n| match n {
        Node::Masked => true,
        Node::Repeat { item, .. } => has_masked(item.nodes),
        Node::Switch { cases, .. } => cases.iter().any(|c| has_masked(c.group.nodes)),
        Node::Field(_) => false,
    })
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

/// The expert group of a rule: a broken structure is malformed, a bad checksum a checksum
/// problem, the rest protocol departures.
fn expert_group(rule: Rule) -> &'static str {
    match rule {
        Rule::RtypeCrc => "CHECKSUM",
        Rule::RtypeShort
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The number of the field descriptor (`fd(N, ...)`) whose line holds `constructor`.
    fn field_number<'a>(lua: &'a str, constructor: &str) -> &'a str {
        lua.lines()
            .find(|l| l.contains(constructor))
            .and_then(|l| l.strip_prefix("fd("))
            .and_then(|l| l.split(',').next())
            .unwrap_or_else(|| panic!("no field descriptor with {constructor}"))
    }

    #[test]
    fn every_runtime_field_has_its_lua_key() {
        let names: Vec<&str> = super::DISSECTOR_RUNTIME.iter().map(|f| f.name).collect();
        let lua: Vec<&str> = super::RUNTIME_LUA.iter().map(|(name, ..)| *name).collect();
        assert_eq!(names, lua);
    }

    #[test]
    fn declares_the_documented_filter_names() {
        let lua = generate(None);
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
        let shared = field_number(&lua, "ProtoField.int32(\"rt.input.aim_direction_x\"");
        assert!(lua.contains(&format!(
            ", FPF[{shared}], \"aim_direction_x\", nil, nil, nil, true)"
        )));
        assert!(!lua.contains("aim_direction_x_2"));
    }

    /// Every rule key the hand-written runtime names (`RULE.crc`, `RULE_RT.opaque`, ...) is one
    /// its dialect's description declares, as its table is generated from it.
    #[test]
    fn runtime_rule_keys_are_declared() {
        let runtime = [
            PRELUDE,
            WALKER,
            RECOGNISE,
            DRIVER,
            DRIVER_RT,
            DRIVER_RTNP,
            REGISTER,
        ]
        .concat();
        for (table, rules) in [
            ("RULE.", rtype::DATAGRAM_RULES),
            ("RULE_RT.", rt::DATAGRAM_RULES),
            ("RULE_RTNP.", rtnp::DATAGRAM_RULES),
        ] {
            let keys: Vec<String> = runtime_rules(rules).map(|(key, _)| key).collect();
            let mut named = 0;
            for (at, _) in runtime.match_indices(table) {
                if at > 0 && runtime.as_bytes()[at - 1].is_ascii_alphanumeric() {
                    continue;
                }
                let key: String = runtime[at + table.len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if key != "profile_suggested" {
                    assert!(keys.contains(&key), "{table}{key} is not declared");
                    named += 1;
                }
            }
            assert!(named >= 10, "{table}: {named}");
        }
    }

    /// Every rule the descriptions attach to a field, variant, switch, message or schema is one
    /// the dissector registers (its description says one datagram decides it).
    #[test]
    fn description_rules_are_datagram_rules() {
        let mut rules = BTreeSet::new();
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
        let raised = dissector_rules();
        let stray: Vec<&Rule> = rules.iter().filter(|r| !raised.contains(r)).collect();
        assert!(stray.is_empty(), "{stray:?}");
        assert!(rules.contains(&Rule::RtypeEmptyPong) && rules.contains(&Rule::RtnpMissingField));
    }

    #[test]
    fn profile_bits_are_compiled() {
        let profile = Profile::parse(
            "name = \"fixed\"\n[bits]\n1 = { name = \"pos_x\", type = \"i16\", divisor = 10 }\n\
             6 = { name = \"status\", type = \"u8\", flags = { status = 0xF0, lives = 0x0F } }\n\
             10 = { name = \"score\", type = \"i32\" }\n",
        )
        .unwrap();
        let lua = generate(Some(&profile));
        assert!(lua.contains("ProtoField.double(\"rtype.snapshot.entity.pos_x\""));
        assert!(lua.contains("ProtoField.int16(\"rtype.snapshot.entity.pos_x.raw\""));
        assert!(lua.contains(", 10) -- profile fixed"));
        assert!(lua.contains("ProtoField.int32(\"rtype.snapshot.entity.score\""));
        assert!(lua.contains("ProtoField.uint8(\"rtype.snapshot.entity.status.lives\", \"lives\", base.DEC, nil, 0xF)"));
        let score = field_number(&lua, "ProtoField.int32(\"rtype.snapshot.entity.score\"");
        assert!(lua.contains(&format!(
            "if m % 2048 >= 1024 then\n            if I32(c, t, {score}) == nil then return false end"
        )));
        // Every bundled profile is compiled in too, the given one the preference's default.
        assert!(lua.contains("name = \"reference-17byte\""));
        assert!(lua.contains("DEFAULT_PROFILE, CHECK_CRC = {}, 4, true"));
    }
}
