//! The Lua declarations: constants, rule tables, expert infos, value strings, ProtoFields and
//! field descriptors, each declared once.

use std::fmt::Write as _;

use crate::datagram::rtype::MAX_PAYLOAD;
use crate::lua_runtime::lua_str;
use crate::proto::registry::{flags_of, DISSECTOR_RUNTIME};
use crate::proto::rtnp::{MAX_DATAGRAM, MAX_DEPTH, MAX_JSON, PING, PONG};
use crate::proto::rtype::{
    COMPRESSED_BIT, COMPRESS_THRESHOLD, CRC_LEN, LEVEL_INIT, MAGIC, MESSAGES, PACKET_CLIENT,
    PACKET_SERVER, SNAPSHOT_CHUNK, VERSION,
};
use crate::proto::schema::{Check, Display, Field, Named, Role, Ty};
use crate::proto::{rt, rtnp, rtype, Severity};
use crate::session::chunks::{MAX_AGE_NANOS, MAX_CHUNKS, MAX_OPEN_SETS, MAX_SET_BYTES};
use crate::session::MAX_CONVERSATIONS;

use super::*;

impl Gen {
    /// Constants, rules, experts, value strings, ProtoFields and field descriptors.
    pub(super) fn declarations(&self, out: &mut String, default: Option<usize>) {
        Gen::constants(out);
        Gen::rule_tables(out);
        Gen::experts(out);
        self.value_string_tables(out);
        self.field_tables(out, default);
    }

    /// The constants of the three runtimes, from the descriptions and the tool's limits.
    fn constants(out: &mut String) {
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
    }

    /// The rule tables: the rules each runtime raises, by key (see [`runtime_rules`]).
    fn rule_tables(out: &mut String) {
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
                .find(|id| proto_of(id) == proto)
                .map_or("", |id| id);
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
    }

    /// One expert info per rule the dissector raises, registered with its dialect's protocol.
    fn experts(out: &mut String) {
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
        for id in MALFORMED {
            let _ = writeln!(
                out,
                "expert_info({}, {}, {}, expert.group.MALFORMED, expert.severity.ERROR, \"error\", \"\")",
                lua_str(proto_of(id)),
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
    }

    /// The message names and the value-string tables.
    fn value_string_tables(&self, out: &mut String) {
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
    }

    /// The fields: the runtime's, then every described field, each registered once with its
    /// protocol; the role fields; the field descriptors and the profiles.
    fn field_tables(&self, out: &mut String, default: Option<usize>) {
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

    /// Declares the field `f` under `abbrev` and returns its descriptor index: once per field (a
    /// different field wanting the same filter name gets a numbered one, unless it belongs to
    /// another snapshot profile, whose fields may reuse the names of the others'). Flag bits are
    /// named under `bits_prefix`, or under the field's own name when it is empty; flags whose value
    /// is in `drop` are left out.
    pub(super) fn declare_with(
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
            let parent = if bits_prefix.is_empty() {
                name.clone()
            } else {
                bits_prefix.to_string()
            };
            let width_bits = f.ty.width().unwrap_or(0) * 8;
            let mut list = Vec::new();
            for flag in flags_of(named, f.ty) {
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
    pub(super) fn value_string(&mut self, named: &'static [Named]) -> String {
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
