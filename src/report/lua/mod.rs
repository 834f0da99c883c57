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

use crate::lua_runtime::{lua_str, BYTES, CRC32, LZ4, RANGE, UTF8};
use crate::proto::profile::{Profile, BUNDLED};
use crate::proto::registry::{
    shareable, FieldType, Registry, RuntimeField, Source, Values, DISSECTOR_RUNTIME, MALFORMED,
};
use crate::proto::rtnp::JsonField;
use crate::proto::schema::{Check, Direction, Field, Node, Role, Ty};
use crate::proto::{rt, rtnp, rtype, Rule, CATALOG};

/// UDP port the rtype dissector registers by default (the reference server's).
pub const DEFAULT_PORT: u16 = 50010;

/// Filter name of the rtype protocol and prefix of its fields.
const PROTO: &str = "rtype";
/// Filter names of the rt and rtnp protocols.
const PROTO_RT: &str = "rt";
const PROTO_RTNP: &str = "rtnp";

use crate::datagram::rtnp::MAX_WORDS as RTNP_MAX_WORDS;
use crate::pipeline::RT_MAX_SERVERS;

const MALFORMED_SUMMARY: &str = "malformed packet: the dissector stopped early";

const PRELUDE: &str = include_str!("prelude.lua");
const WALKER: &str = include_str!("walker.lua");
const RECOGNISE: &str = include_str!("recognise.lua");
const DRIVER: &str = include_str!("driver.lua");
const DRIVER_RT: &str = include_str!("rt.lua");
const DRIVER_RTNP: &str = include_str!("rtnp.lua");
const REGISTER: &str = include_str!("register.lua");

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
        for id in MALFORMED {
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
mod code;
mod declare;
#[cfg(test)]
mod tests;
