//! A dialect of binary messages: its header, enums, types and messages as schema tables.

use std::fmt::Write as _;

use super::*;

/// The schema's `Role` for a field role of the description.
const ROLES: &[(&str, &str)] = &[
    ("magic", "Magic"),
    ("version-byte", "VersionByte"),
    ("packet-type", "PacketType"),
    ("message-type", "MessageType"),
    ("sequence", "Sequence"),
    ("tick", "Tick"),
    ("length", "PayloadLen"),
    ("original-size", "OrigSize"),
    ("player-id", "PlayerId"),
    ("client-time", "ClientTime"),
    ("ack", "AckSequence"),
    ("ack-message-type", "AckMessageType"),
    ("reason", "ReasonCode"),
    ("entity-id", "EntityId"),
    ("entity-type", "EntityType"),
    ("entity-count", "EntityCount"),
    ("update-mask", "UpdateMask"),
    ("chunk-total", "TotalChunks"),
    ("chunk-index", "ChunkIndex"),
    ("archetype-type-id", "ArchetypeTypeId"),
    ("archetype-sprite-id", "ArchetypeSpriteId"),
    ("event-type", "EventType"),
    ("component-type", "ComponentType"),
    ("flags", "Flags"),
    ("time", "Timestamp"),
];

/// The roles that say what an entity's field measures (the schema's `Quantity`).
const QUANTITIES: &[(&str, &str)] = &[
    ("position-x", "PosX"),
    ("position-y", "PosY"),
    ("velocity-x", "VelX"),
    ("velocity-y", "VelY"),
    ("health", "Health"),
];

const TYPES: &[(&str, &str)] = &[
    ("u1", "U8"),
    ("u2", "U16"),
    ("u4", "U32"),
    ("s2", "I16"),
    ("s4", "I32"),
    ("f4", "F32"),
    ("str8", "Str8"),
];

const FIELD_KEYS: &[&str] = &[
    "id",
    "type",
    "label",
    "display",
    "enum",
    "flags",
    "role",
    "check",
    "size",
    "repeat",
    "repeat-expr",
    "unknown-rule",
    "masked",
    "switch",
];

static EMPTY_NODE: Node = Node {
    pos: Pos { line: 0, column: 0 },
    value: yaml::Yaml::Seq(Vec::new()),
};

/// A dialect being compiled: its file's tree and the code written so far.
pub(super) struct Dialect<'a> {
    root: &'a Node,
    types: &'a [(Node, Node)],
    enums: &'a [(Node, Node)],
    code: String,
    /// Set while a variant's copy of the header is compiled: its message type is shown in hex,
    /// as naming it from the message table would make the table depend on itself.
    header_copy: std::cell::Cell<bool>,
}

pub(super) fn compile(root: &Node) -> Result<String> {
    map(
        root,
        "a dialect",
        &[
            "meta",
            "detect",
            "header",
            "footer",
            "framing",
            "header-rules",
            "enums",
            "types",
            "switches",
            "messages",
            "rules",
        ],
    )?;
    let empty: &[(Node, Node)] = &[];
    let mut d = Dialect {
        root,
        types: get(root, "types")
            .and_then(|t| t.entries())
            .unwrap_or(empty),
        enums: get(root, "enums")
            .and_then(|t| t.entries())
            .unwrap_or(empty),
        code: String::from(
            "// Compiled by build.rs from the dialect's description: edit that, not this.\n",
        ),
        header_copy: Default::default(),
    };
    d.constants()?;
    d.header_rules()?;
    d.enumerations()?;
    let header = d.nodes(required(root, "header", "a dialect")?, 0)?;
    let _ = writeln!(d.code, "pub const HEADER: &[Node] = &[{header}];");
    d.messages()?;
    Ok(d.code)
}

impl Dialect<'_> {
    /// A dialect with no types or enums, for fields that name none.
    pub(super) fn empty() -> Dialect<'static> {
        Dialect {
            root: &EMPTY_NODE,
            types: &[],
            enums: &[],
            code: String::new(),
            header_copy: Default::default(),
        }
    }

    /// The values the mechanisms take from `detect`, `footer` and `framing`.
    fn constants(&mut self) -> Result<()> {
        let detect = required(self.root, "detect", "a dialect")?;
        let magic = items(required(detect, "magic", "detect")?, "the magic")?;
        let bytes: Vec<String> = magic
            .iter()
            .map(|b| integer(b, "a magic byte").map(|v| format!("{v:#04X}")))
            .collect::<Result<_>>()?;
        let _ = writeln!(
            self.code,
            "/// The bytes every datagram starts with.\npub const MAGIC: [u8; {}] = [{}];",
            bytes.len(),
            bytes.join(", ")
        );
        if let Some(footer) = get(self.root, "footer") {
            let mut footer_len = 0;
            for f in items(footer, "the footer")? {
                let ty = text(required(f, "type", "a footer field")?, "a type")?;
                footer_len += match ty {
                    "u1" => 1,
                    "u2" => 2,
                    "u4" => 4,
                    _ => return err(f.pos, "a footer field is u1, u2 or u4"),
                };
            }
            let _ = writeln!(
                self.code,
                "/// The checksum footer's width.\npub const CRC_LEN: usize = {footer_len};"
            );
        }
        let framing = required(self.root, "framing", "a dialect")?;
        map(
            framing,
            "framing",
            &[
                "length",
                "checksum",
                "compression",
                "version",
                "max-payload",
                "reserved-flags",
            ],
        )?;
        if let Some(compression) = get(framing, "compression") {
            let mask = integer(required(compression, "mask", "compression")?, "the mask")?;
            let threshold = integer(
                required(compression, "threshold", "compression")?,
                "the threshold",
            )?;
            let _ = writeln!(
                self.code,
                "/// The header bit that says the payload is compressed.\n\
                 pub const COMPRESSED_BIT: u8 = {mask:#04X};\n\
                 /// Payloads of this size or less must not be compressed.\n\
                 pub const COMPRESS_THRESHOLD: usize = {threshold};"
            );
        }
        if let Some(version) = get(framing, "version") {
            let value = integer(required(version, "value", "version")?, "the version")?;
            let _ = writeln!(
                self.code,
                "/// The protocol version the documents define.\npub const VERSION: u8 = {value};"
            );
        }
        if let Some(max) = get(framing, "max-payload") {
            let _ = writeln!(
                self.code,
                "/// The largest payload the document allows.\npub const MAX_PAYLOAD: usize = {};",
                integer(max, "a size")?
            );
        }
        if let Some(bits) = get(framing, "reserved-flags") {
            let _ = writeln!(
                self.code,
                "/// The flag bits the document reserves.\npub const RESERVED_FLAGS: u8 = {:#04X};",
                integer(bits, "a mask")?
            );
        }
        Ok(())
    }

    /// The rules the header alone decides (`header-rules`).
    fn header_rules(&mut self) -> Result<()> {
        let Some(list) = get(self.root, "header-rules") else {
            return Ok(());
        };
        let rules: Vec<String> = items(list, "header-rules")?
            .iter()
            .map(rule)
            .collect::<Result<_>>()?;
        let _ = writeln!(
            self.code,
            "/// The rules a datagram's header alone decides: one the capture cut short is still judged on them.\n\
             pub const HEADER_RULES: &[Rule] = &[{}];",
            rules.join(", ")
        );
        Ok(())
    }

    /// Each enum as a `Named` table called by its id in capitals.
    fn enumerations(&mut self) -> Result<()> {
        for (key, values) in self.enums {
            let Some(entries) = values.entries() else {
                return err(values.pos, "an enum is a map of values to names");
            };
            let mut named = String::new();
            for (v, name) in entries {
                let _ = write!(
                    named,
                    "Named {{ value: {}, name: {} }}, ",
                    integer(v, "an enum value")?,
                    lit(text(name, "an enum name")?)
                );
            }
            let _ = writeln!(
                self.code,
                "pub const {}: &[Named] = &[{named}];",
                text(key, "an enum id")?.to_uppercase()
            );
        }
        Ok(())
    }

    fn enum_const(&self, node: &Node) -> Result<String> {
        let id = text(node, "an enum")?;
        if !self.enums.iter().any(|(k, _)| k.text() == Some(id)) {
            return err(node.pos, format!("no enum `{id}`"));
        }
        Ok(id.to_uppercase())
    }

    fn type_def(&self, node: &Node) -> Result<&Node> {
        let id = text(node, "a type")?;
        self.types
            .iter()
            .find(|(k, _)| k.text() == Some(id))
            .map(|(_, v)| v)
            .ok_or_else(|| yaml::Error::at(node.pos, format!("no type `{id}`")))
    }

    /// The fields of a `seq`, types named alone spliced in place: a `seq` is a list whose
    /// items are fields or type ids, or one type id.
    fn flatten<'n>(&'n self, seq: &'n Node, depth: usize, out: &mut Vec<&'n Node>) -> Result<()> {
        if depth > 16 {
            return err(seq.pos, "types nest deeper than 16");
        }
        if seq.text().is_some() {
            let def = self.type_def(seq)?;
            return self.flatten(required(def, "seq", "a type")?, depth + 1, out);
        }
        for item in items(seq, "a seq")? {
            if item.text().is_some() {
                self.flatten(item, depth + 1, out)?;
            } else {
                map(item, "a field", FIELD_KEYS)?;
                out.push(item);
            }
        }
        Ok(())
    }

    /// A `seq` as schema nodes.
    fn nodes(&self, seq: &Node, depth: usize) -> Result<String> {
        if depth > 16 {
            return err(seq.pos, "types nest deeper than 16");
        }
        let mut fields = Vec::new();
        self.flatten(seq, depth, &mut fields)?;
        let mut out = String::new();
        let mut i = 0;
        while i < fields.len() {
            let f = fields[i];
            if let Some(gate) = get(f, "masked") {
                let before = i.checked_sub(1).map(|j| fields[j]);
                let mask = before.and_then(|b| get(b, "id")).and_then(|n| n.text());
                let role = before.and_then(|b| get(b, "role")).and_then(|r| r.text());
                if mask != gate.text() || role != Some("update-mask") {
                    return err(f.pos, "`masked` names the update-mask field just before it");
                }
                out.push_str("Node::Masked, ");
                i += 1;
                continue;
            }
            // A repeat or a switch takes the field before it as its count or tag.
            let next = fields.get(i + 1).copied();
            let id = text(required(f, "id", "a field")?, "an id")?;
            if let Some((next, count)) = next.and_then(|n| Some((n, get(n, "repeat-expr")?))) {
                if count.text() != Some(id) {
                    return err(count.pos, "`repeat-expr` names the count field just before");
                }
                let item_type = required(next, "type", "a repeated field")?;
                let def = self.type_def(item_type)?;
                let type_id = text(item_type, "a type")?;
                let _ = write!(
                    out,
                    "Node::Repeat {{ count: {}, item: {} }}, ",
                    self.field(f)?,
                    self.group(
                        def,
                        text(required(next, "id", "a field")?, "an id")?,
                        type_id,
                        depth
                    )?
                );
                i += 2;
                continue;
            }
            if let Some(next) = next.filter(|n| {
                get(n, "switch").is_some() || get(n, "type").is_some_and(|t| t.entries().is_some())
            }) {
                let (on, cases, unknown) = self.switch(next)?;
                if on.is_some_and(|on| on.text() != Some(id)) {
                    return err(next.pos, "`switch-on` names the tag field just before");
                }
                let Some(cases) = cases.entries() else {
                    return err(cases.pos, "`cases` is a map of values to types");
                };
                let mut out_cases = String::new();
                for (value, ty) in cases {
                    let def = self.type_def(ty)?;
                    let type_id = text(ty, "a type")?;
                    let name = get(def, "name").and_then(|n| n.text()).unwrap_or(type_id);
                    let _ = write!(
                        out_cases,
                        "Case {{ value: {}, group: {} }}, ",
                        integer(value, "a case value")?,
                        self.group(def, name, name, depth)?
                    );
                }
                let _ = write!(
                    out,
                    "Node::Switch {{ tag: {}, cases: &[{out_cases}], unknown: {} }}, ",
                    self.field(f)?,
                    rule(unknown)?
                );
                i += 2;
                continue;
            }
            let _ = write!(out, "Node::Field({}), ", self.field(f)?);
            i += 1;
        }
        Ok(out)
    }

    /// A switch field's `switch-on` (inline switches name it), cases and unknown-value rule:
    /// inline (`type: {switch-on, cases}` with `unknown-rule`) or from `switches` (`switch: NAME`).
    fn switch<'n>(&'n self, f: &'n Node) -> Result<(Option<&'n Node>, &'n Node, &'n Node)> {
        if let Some(name) = get(f, "switch") {
            let id = text(name, "a switch")?;
            let switches = get(self.root, "switches")
                .and_then(|s| s.entries())
                .unwrap_or(&[]);
            let Some((_, def)) = switches.iter().find(|(k, _)| k.text() == Some(id)) else {
                return err(name.pos, format!("no switch `{id}`"));
            };
            map(def, "a switch", &["cases", "unknown-rule"])?;
            return Ok((
                None,
                required(def, "cases", "a switch")?,
                required(def, "unknown-rule", "a switch")?,
            ));
        }
        let ty = required(f, "type", "a switch")?;
        map(ty, "a switch", &["switch-on", "cases"])?;
        Ok((
            Some(required(ty, "switch-on", "a switch")?),
            required(ty, "cases", "a switch")?,
            required(f, "unknown-rule", "a switch")?,
        ))
    }

    /// A repeated item's or a switch case's group: `name` its JSON key; the display-filter
    /// segment is the type's `filter`, else `filter`; the label the type's `label`, else `filter`.
    fn group(&self, def: &Node, name: &str, filter: &str, depth: usize) -> Result<String> {
        map(def, "a type", &["name", "filter", "label", "seq"])?;
        let filter = get(def, "filter").and_then(|l| l.text()).unwrap_or(filter);
        let label = get(def, "label").and_then(|l| l.text()).unwrap_or(filter);
        Ok(format!(
            "Group {{ name: {}, filter: {}, label: {}, nodes: &[{}] }}",
            lit(name),
            lit(filter),
            lit(label),
            self.nodes(required(def, "seq", "a type")?, depth + 1)?
        ))
    }

    /// One field as a `Field` literal.
    pub(super) fn field(&self, f: &Node) -> Result<String> {
        let id = text(required(f, "id", "a field")?, "an id")?;
        // A `str` of fixed size is a `char name[N]`; a field with a size and no type, raw bytes.
        let array = match get(f, "size") {
            Some(size) => integer(size, "a size")?,
            None => 0,
        };
        let ty_name = match get(f, "type") {
            Some(t) => text(t, "a field's type")?,
            None if array > 0 => "bytes",
            None => return err(f.pos, "a field needs `type`, or `size` for raw bytes"),
        };
        let ty: &str = match (ty_name, array) {
            ("str" | "bytes", 1..=0xFFFF) => "U8",
            (_, 0) => match TYPES.iter().find(|t| t.0 == ty_name) {
                Some((_, ty)) => ty,
                None => {
                    return err(
                        f.pos,
                        format!("`{ty_name}` is not a type of a bundled field"),
                    )
                }
            },
            _ => return err(f.pos, "`size` is for a `str` or raw bytes, of 1 to 65535"),
        };
        let label = get(f, "label")
            .map(|l| text(l, "a label").map(str::to_string))
            .transpose()?
            .unwrap_or_else(|| label_of(id));
        let mut display = match (ty, ty_name) {
            ("F32", _) => "Display::Float".to_string(),
            ("Str8", _) | (_, "str") => "Display::Text".to_string(),
            (_, "bytes") => "Display::Hex".to_string(),
            _ => "Display::Dec".to_string(),
        };
        if let Some(d) = get(f, "display") {
            display = match text(d, "a display")? {
                "hex" => "Display::Hex".into(),
                "message-type" => "Display::MessageType".into(),
                // The message table's names, as an enum (`TYPE_NAMES`, which the dialect's
                // module builds from `MESSAGES`).
                "type-names" if self.header_copy.get() => "Display::Hex".into(),
                "type-names" => "Display::Enum(&TYPE_NAMES)".into(),
                other => {
                    return err(
                        d.pos,
                        format!("`{other}` is not a display (hex, message-type, type-names)"),
                    )
                }
            };
        }
        if let Some(e) = get(f, "enum") {
            display = format!("Display::Enum({})", self.enum_const(e)?);
        }
        if let Some(e) = get(f, "flags") {
            display = format!("Display::Flags({})", self.enum_const(e)?);
        }
        let (mut role, mut quantity) = ("None", "None");
        if let Some(r) = get(f, "role") {
            let name = text(r, "a role")?;
            if let Some((_, q)) = QUANTITIES.iter().find(|q| q.0 == name) {
                quantity = q;
            } else if let Some((_, x)) = ROLES.iter().find(|x| x.0 == name) {
                role = x;
            } else {
                return err(r.pos, format!("`{name}` is not a field role"));
            }
        }
        let check = match get(f, "check") {
            None => "Check::None".to_string(),
            Some(c) => {
                map(c, "a check", &["kind", "rule", "mask"])?;
                let r = rule(required(c, "rule", "a check")?)?;
                match text(required(c, "kind", "a check")?, "a check's kind")? {
                    "finite" => format!("Check::Finite({r})"),
                    "ascending" => format!("Check::Ascending({r})"),
                    "known" => format!("Check::Known({r})"),
                    "unused-bits" => format!(
                        "Check::Unused {{ mask: {:#X}, rule: {r} }}",
                        integer(required(c, "mask", "an unused-bits check")?, "a mask")?
                    ),
                    other => {
                        return err(
                            c.pos,
                            format!(
                                "`{other}` is not a check (finite, ascending, known, unused-bits)"
                            ),
                        )
                    }
                }
            }
        };
        Ok(format!(
            "Field {{ name: {}, label: {}, ty: Ty::{ty}, display: {display}, role: Role::{role}, check: {check}, divisor: 1, array: {array}, quantity: Quantity::{quantity} }}",
            lit(id),
            lit(&label)
        ))
    }

    fn messages(&mut self) -> Result<()> {
        let messages = required(self.root, "messages", "a dialect")?;
        let Some(entries) = messages.entries() else {
            return err(
                messages.pos,
                "`messages` is a map of type values to messages",
            );
        };
        let mut out = String::new();
        let (mut reliable, mut both_ways) = (Vec::new(), Vec::new());
        for (code, m) in entries {
            map(
                m,
                "a message",
                &[
                    "id",
                    "name",
                    "direction",
                    "section",
                    "seq",
                    "variants",
                    "seen-rule",
                    "reliable",
                    "both-ways",
                    "role",
                    "full-state",
                ],
            )?;
            let code = integer(code, "a message type")?;
            if !(0..=255).contains(&code) {
                return err(m.pos, "a message type is one byte");
            }
            let direction = direction(m)?;
            for (key, list) in [("reliable", &mut reliable), ("both-ways", &mut both_ways)] {
                if flag(m, key)? {
                    list.push(format!("{code:#04X}"));
                }
            }
            let body = match get(m, "seq") {
                Some(seq) => self.nodes(seq, 0)?,
                None => String::new(),
            };
            let mut variants = String::new();
            if let Some(list) = get(m, "variants") {
                for v in items(list, "variants")? {
                    map(v, "a variant", &["layout", "seq", "rule", "with-header"])?;
                    let extends = match text(required(v, "layout", "a variant")?, "a layout")? {
                        "extends" => true,
                        "replaces" => false,
                        _ => return err(v.pos, "a variant's layout extends or replaces the body"),
                    };
                    // `with-header`: the body starts with a copy of the header.
                    let mut nodes = String::new();
                    if flag(v, "with-header")? {
                        self.header_copy.set(true);
                        nodes = self.nodes(required(self.root, "header", "a dialect")?, 0)?;
                        self.header_copy.set(false);
                    }
                    nodes += &self.nodes(required(v, "seq", "a variant")?, 0)?;
                    let _ = write!(
                        variants,
                        "Variant {{ extends_body: {extends}, nodes: &[{nodes}], rule: {} }}, ",
                        rule(required(v, "rule", "a variant")?)?
                    );
                }
            }
            let seen = match get(m, "seen-rule") {
                Some(r) => format!("Some({})", rule(r)?),
                None => "None".into(),
            };
            let _ = writeln!(
                out,
                "    Message {{ code: {code:#04X}, name: {}, short: {}, direction: {direction}, section: {}, body: &[{body}], variants: &[{variants}], seen_rule: {seen}, role: {}, full_state: {} }},",
                lit(text(required(m, "name", "a message")?, "a name")?),
                lit(text(required(m, "id", "a message")?, "an id")?),
                lit(text(required(m, "section", "a message")?, "a section")?),
                message_role(m)?,
                flag(m, "full-state")?,
            );
        }
        let _ = writeln!(
            self.code,
            "/// Every message type, in the description's order.\npub const MESSAGES: &[Message] = &[\n{out}];"
        );
        if !reliable.is_empty() || !both_ways.is_empty() {
            let _ = writeln!(
                self.code,
                "/// The types the document marks reliable.\npub const RELIABLE_TYPES: &[u8] = &[{}];\n\
                 /// The types both sides send: their direction comes from which side is the server.\n\
                 pub const BOTH_WAYS: &[u8] = &[{}];",
                reliable.join(", "),
                both_ways.join(", ")
            );
        }
        Ok(())
    }
}
