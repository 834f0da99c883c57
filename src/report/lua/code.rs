//! The Lua code of the layouts: header functions, message tables and the functions walking
//! each message's fields, as `message::walk` does.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::lua_runtime::lua_str;
use crate::proto::profile::{BitSlot, BUNDLED, MASK_BITS};
use crate::proto::registry::snapshot_message;
use crate::proto::rtype::{COMPRESSED_BIT, HEADER, HEADER_15, MESSAGES};
use crate::proto::schema::{Check, Display, Field, Message, Node, Role, Ty};
use crate::proto::{rt, rtnp};

use super::*;

impl Gen {
    /// The header layouts, the message tables (rtype's, the reassembled snapshot's layout, rt's),
    /// each profile's masked fields and rtnp's schemas, as Lua.
    pub(super) fn code(&mut self) -> String {
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
}
