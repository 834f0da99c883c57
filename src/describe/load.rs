//! From YAML to a [`Description`]: every key checked, every name resolved, every error placed at
//! its line and column with the nearest known name.

use std::collections::HashMap;

use super::expr::{self, Expr};
use super::model::*;
use super::yaml::{self, Node, Pos, Yaml};
use crate::proto::near::hint;
use crate::proto::Severity;

/// The deepest nesting of user types within one another.
pub const MAX_TYPE_DEPTH: usize = 8;
/// The most messages of one description.
pub const MAX_MESSAGES: usize = 4096;
/// The widest fixed size a field may give (bytes).
pub const MAX_FIXED_SIZE: i64 = 65_535;

/// A description's error: where, and what.
#[derive(Debug, PartialEq, Eq)]
pub struct LoadError {
    pub pos: Pos,
    pub message: String,
}

impl LoadError {
    /// `FILE:LINE:COLUMN: message`, as compilers write it.
    pub fn in_file(&self, file: &str) -> String {
        format!(
            "{file}:{}:{}: {}",
            self.pos.line, self.pos.column, self.message
        )
    }
}

type Result<T> = std::result::Result<T, LoadError>;

fn err<T>(node: &Node, message: impl Into<String>) -> Result<T> {
    Err(LoadError {
        pos: node.pos,
        message: message.into(),
    })
}

/// Loads a description from its text.
pub fn load(text: &str) -> Result<Description> {
    let root = yaml::parse(text).map_err(|e| LoadError {
        pos: e.pos,
        message: e.message,
    })?;
    Loader::default().description(&root)
}

/// A map's entries by key, checked against the keys it may have.
struct Keys<'a> {
    map: &'a Node,
    entries: &'a [(Node, Node)],
}

impl<'a> Keys<'a> {
    fn of(node: &'a Node, what: &str, allowed: &[&str]) -> Result<Keys<'a>> {
        let Some(entries) = node.entries() else {
            return err(node, format!("{what} must be a map, not {}", node.kind()));
        };
        for (k, _) in entries {
            let key = k.text().unwrap_or_default();
            if !allowed.contains(&key) {
                return err(
                    k,
                    format!(
                        "`{key}` is not a key of {what}{}",
                        hint(key, allowed.iter().copied())
                    ),
                );
            }
        }
        Ok(Keys { map: node, entries })
    }

    fn get(&self, key: &str) -> Option<&'a Node> {
        self.entries
            .iter()
            .find(|(k, _)| k.text() == Some(key))
            .map(|(_, v)| v)
    }

    fn need(&self, key: &str, what: &str) -> Result<&'a Node> {
        match self.get(key) {
            Some(v) => Ok(v),
            None => err(self.map, format!("{what} needs `{key}`")),
        }
    }
}

fn text<'a>(node: &'a Node, what: &str) -> Result<&'a str> {
    match node.text() {
        Some(t) => Ok(t),
        None => err(node, format!("{what} must be a value, not {}", node.kind())),
    }
}

fn integer(node: &Node, what: &str) -> Result<i64> {
    match node.integer() {
        Some(i) => Ok(i),
        None => err(node, format!("{what} must be an integer")),
    }
}

fn identifier(node: &Node, what: &str) -> Result<String> {
    let t = text(node, what)?;
    let ok = t.len() <= 64
        && t.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && t.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !ok {
        return err(
            node,
            format!("{what} `{t}` must be lowercase letters, digits and `_`, starting with a letter or `_`"),
        );
    }
    Ok(t.to_string())
}

/// A word of a closed list.
fn choice<T: Copy>(node: &Node, what: &str, list: &[(T, &str)]) -> Result<T> {
    let t = text(node, what)?;
    match list.iter().find(|(_, name)| *name == t) {
        Some((v, _)) => Ok(*v),
        None => {
            let near = hint(t, list.iter().map(|x| x.1));
            let all = list.iter().map(|x| x.1).collect::<Vec<_>>().join(", ");
            let list = if near.is_empty() {
                format!("; one of: {all}")
            } else {
                near
            };
            err(node, format!("`{t}` is not {what}{list}"))
        }
    }
}

/// Bytes as a list of integers 0-255 or a string of ASCII.
fn bytes(node: &Node, what: &str) -> Result<Vec<u8>> {
    match &node.value {
        Yaml::Scalar(s, _) if node.integer().is_none() => Ok(s.as_bytes().to_vec()),
        Yaml::Seq(items) => items
            .iter()
            .map(|i| match i.integer() {
                Some(b @ 0..=255) => Ok(b as u8),
                _ => err(
                    i,
                    format!("{what}: each byte must be an integer from 0 to 255"),
                ),
            })
            .collect(),
        _ => err(node, format!("{what} must be a list of bytes or a string")),
    }
}

const FIELD_KEYS: &[&str] = &[
    "id",
    "type",
    "size",
    "size-eos",
    "encoding",
    "contents",
    "repeat",
    "repeat-expr",
    "if",
    "enum",
    "valid",
    "label",
    "divisor",
    "role",
    "doc",
];

#[derive(Default)]
struct Loader {
    vars: Vec<String>,
    var_index: HashMap<String, u16>,
    /// Every expression's names, to check once every field is known.
    references: Vec<(u16, Pos)>,
    type_names: Vec<String>,
    enum_names: Vec<String>,
    /// Rule IDs a `valid` names, resolved after `rules` is read.
    rules: Vec<Rule>,
    endian: Option<Endian>,
}

impl Loader {
    fn description(mut self, root: &Node) -> Result<Description> {
        let top = Keys::of(
            root,
            "the description",
            &[
                "meta", "detect", "header", "framing", "messages", "footer", "types", "enums",
                "rules",
            ],
        )?;
        let meta = Keys::of(
            top.need("meta", "the description")?,
            "meta",
            &["id", "title", "endian", "bit-endian", "document"],
        )?;
        let id = identifier(meta.need("id", "meta")?, "meta.id")?;
        if id.len() > 16 || id.starts_with('_') {
            return err(
                meta.need("id", "meta")?,
                "meta.id must start with a letter and have at most 16 characters",
            );
        }
        let endian = match meta.get("endian") {
            Some(n) => choice(
                n,
                "an endianness",
                &[(Endian::Little, "le"), (Endian::Big, "be")],
            )?,
            None => Endian::Little,
        };
        self.endian = Some(endian);
        let bits_big_endian = match meta.get("bit-endian") {
            Some(n) => choice(n, "a bit order", &[(false, "le"), (true, "be")])?,
            None => true,
        };
        let opt_text = |keys: &Keys, key: &str| -> Result<String> {
            keys.get(key)
                .map_or(Ok(String::new()), |n| text(n, key).map(str::to_string))
        };
        let title = opt_text(&meta, "title")?;
        let document = opt_text(&meta, "document")?;

        // Names first, so that types and enums may be used before the place they are defined.
        let type_nodes = match top.get("types") {
            Some(n) => match n.entries() {
                Some(e) => e,
                None => return err(n, "types must be a map of type names to types"),
            },
            None => &[][..],
        };
        for (k, _) in type_nodes {
            self.type_names.push(identifier(k, "a type name")?);
        }
        let enum_nodes = match top.get("enums") {
            Some(n) => match n.entries() {
                Some(e) => e,
                None => return err(n, "enums must be a map of enum names to value maps"),
            },
            None => &[][..],
        };
        let mut enums = Vec::new();
        for (k, v) in enum_nodes {
            let id = identifier(k, "an enum name")?;
            self.enum_names.push(id.clone());
            let Some(entries) = v.entries() else {
                return err(v, format!("enum `{id}` must map values to names"));
            };
            let mut values = Vec::new();
            for (value, name) in entries {
                let n = match name.entries() {
                    Some(_) => Keys::of(name, "an enum value", &["id", "doc"])?
                        .need("id", "an enum value")?,
                    None => name,
                };
                values.push((
                    integer(value, "an enum value")?,
                    identifier(n, "an enum name")?,
                ));
            }
            enums.push(EnumDef { id, values });
        }
        // The mechanism's rules, then the description's.
        self.rules = Check::ALL
            .iter()
            .map(|(_, kind, severity, summary)| Rule {
                id: format!("{id}.{kind}"),
                severity: *severity,
                section: String::new(),
                summary: (*summary).to_string(),
            })
            .collect();
        if let Some(rules) = top.get("rules") {
            self.rule_list(rules, &id)?;
        }

        let detect = Keys::of(
            top.need("detect", "the description")?,
            "detect",
            &["magic", "ports", "min-length"],
        )?;
        let magic = match detect.get("magic") {
            Some(n) => bytes(n, "detect.magic")?,
            None => Vec::new(),
        };
        if magic.len() > 16 {
            return err(
                detect.need("magic", "detect")?,
                "detect.magic has more than 16 bytes",
            );
        }
        let ports = match detect.get("ports") {
            Some(n) => match n.items() {
                Some(items) => items
                    .iter()
                    .map(|p| match p.integer() {
                        Some(p @ 1..=65535) => Ok(p as u16),
                        _ => err(p, "a port must be an integer from 1 to 65535"),
                    })
                    .collect::<Result<Vec<u16>>>()?,
                None => return err(n, "detect.ports must be a list of ports"),
            },
            None => Vec::new(),
        };
        if magic.is_empty() && ports.is_empty() {
            return err(detect.map, "detect needs a `magic`, `ports`, or both: without either, every UDP datagram would be claimed");
        }

        let header_node = top.need("header", "the description")?;
        let header = self.seq(header_node, "header")?;
        let footer = match top.get("footer") {
            Some(n) => self.seq(n, "footer")?,
            None => Vec::new(),
        };
        let mut types = Vec::new();
        for (k, v) in type_nodes {
            let keys = Keys::of(v, "a type", &["seq", "doc"])?;
            let seq = self.seq(keys.need("seq", "a type")?, "seq")?;
            types.push(TypeDef {
                id: k.text().unwrap_or_default().to_string(),
                seq,
            });
        }
        check_type_depth(&types, type_nodes)?;
        for (seq, node, what) in [
            (&header, header_node, "header"),
            (&footer, top.get("footer").unwrap_or(header_node), "footer"),
        ] {
            if fixed_width(seq, &types).is_none() {
                return err(node, format!("every field of the {what} must have a fixed width (no `if`, `repeat` or variable size)"));
            }
        }
        let type_field = match header
            .iter()
            .position(|f| f.role == Some(FieldRole::MessageType))
        {
            Some(i) => i,
            None => {
                return err(
                    header_node,
                    "one header field needs `role: message-type`: it chooses the message",
                )
            }
        };
        if !matches!(
            header[type_field].kind,
            Kind::Int { .. } | Kind::Bits { .. }
        ) {
            return err(
                header_node,
                "the message-type field must be an integer or bit field",
            );
        }

        let messages = self.messages(top.need("messages", "the description")?)?;
        let (length, checksum, compression, many) = match top.get("framing") {
            Some(n) => self.framing(n, &header, &footer)?,
            None => (None, None, None, false),
        };
        let header_len = fixed_width(&header, &types).unwrap_or(0);
        let min_length = match detect.get("min-length") {
            Some(n) => match n.integer() {
                Some(m @ 0..=65535) => m as usize,
                _ => return err(n, "detect.min-length must be an integer from 0 to 65535"),
            },
            None => header_len.max(magic.len()),
        };
        for (var, pos) in &self.references {
            if !self.defined(*var, &header, &footer, &messages, &types) {
                let name = &self.vars[*var as usize];
                return Err(LoadError {
                    pos: *pos,
                    message: format!("no field is named `{name}`"),
                });
            }
        }
        Ok(Description {
            id,
            title,
            document,
            endian,
            bits_big_endian,
            magic,
            ports,
            min_length,
            header,
            footer,
            type_field,
            length,
            checksum,
            compression,
            many_per_datagram: many,
            messages,
            types,
            enums,
            rules: self.rules,
            vars: self.vars,
        })
    }

    fn defined(
        &self,
        var: u16,
        header: &[Field],
        footer: &[Field],
        messages: &[Message],
        types: &[TypeDef],
    ) -> bool {
        let has = |seq: &[Field]| seq.iter().any(|f| f.var == var);
        has(header)
            || has(footer)
            || messages.iter().any(|m| has(&m.seq))
            || types.iter().any(|t| has(&t.seq))
    }

    fn rule_list(&mut self, node: &Node, dialect: &str) -> Result<()> {
        let Some(items) = node.items() else {
            return err(node, "rules must be a list");
        };
        let checks: Vec<(Check, &str)> = Check::ALL.iter().map(|c| (c.0, c.1)).collect();
        for item in items {
            let keys = Keys::of(
                item,
                "a rule",
                &["id", "kind", "severity", "section", "summary"],
            )?;
            let id_node = keys.need("id", "a rule")?;
            let id = text(id_node, "a rule id")?.to_string();
            let good = id.len() <= 64
                && id.split('.').all(|p| {
                    !p.is_empty()
                        && p.chars().all(|c| {
                            c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_'
                        })
                });
            if !good || !id.starts_with(&format!("{dialect}.")) {
                return err(id_node, format!("a rule id is `{dialect}.` then dot-separated lowercase words (`{dialect}.crc.mismatch`)"));
            }
            let severity = match keys.get("severity") {
                Some(n) => choice(
                    n,
                    "a severity",
                    &[
                        (Severity::Error, "error"),
                        (Severity::Warning, "warning"),
                        (Severity::Info, "info"),
                    ],
                )?,
                None => Severity::Error,
            };
            let opt = |key: &str| -> Result<Option<String>> {
                keys.get(key)
                    .map(|n| text(n, key).map(str::to_string))
                    .transpose()
            };
            let (section, summary) = (opt("section")?, opt("summary")?);
            let index = match keys.get("kind") {
                Some(n) => {
                    let check = choice(n, "a rule kind", &checks)?;
                    Description::rule_index(check)
                }
                None => {
                    if self.rules.iter().any(|r| r.id == id) {
                        return err(id_node, format!("rule `{id}` is given twice"));
                    }
                    self.rules.push(Rule {
                        id: id.clone(),
                        severity,
                        section: String::new(),
                        summary: String::new(),
                    });
                    self.rules.len() - 1
                }
            };
            let rule = &mut self.rules[index];
            rule.id = id;
            if keys.get("severity").is_some() || index >= Check::ALL.len() {
                rule.severity = severity;
            }
            if let Some(s) = section {
                rule.section = s;
            }
            if let Some(s) = summary {
                rule.summary = s;
            }
        }
        Ok(())
    }

    fn messages(&mut self, node: &Node) -> Result<Vec<Message>> {
        let Some(entries) = node.entries() else {
            return err(node, "messages must map type values to messages");
        };
        if entries.len() > MAX_MESSAGES {
            return err(node, format!("more than {MAX_MESSAGES} messages"));
        }
        let mut out: Vec<Message> = Vec::new();
        for (k, v) in entries {
            let code = integer(k, "a message type value")?;
            let keys = Keys::of(
                v,
                "a message",
                &["id", "name", "role", "direction", "section", "seq", "doc"],
            )?;
            let id = identifier(keys.need("id", "a message")?, "a message id")?;
            if let Some(other) = out.iter().find(|m| m.id == id || m.code == code) {
                return err(
                    k,
                    format!(
                        "message `{id}` ({code:#x}) repeats the id or type value of `{}`",
                        other.id
                    ),
                );
            }
            let name = match keys.get("name") {
                Some(n) => text(n, "a message name")?.to_string(),
                None => id.to_uppercase(),
            };
            let roles: Vec<(MessageRole, &str)> = MessageRole::ALL.to_vec();
            let role = keys
                .get("role")
                .map(|n| choice(n, "a message role", &roles))
                .transpose()?;
            let direction = match keys.get("direction") {
                Some(n) => choice(
                    n,
                    "a direction",
                    &[
                        (Direction::ClientToServer, "client-to-server"),
                        (Direction::ServerToClient, "server-to-client"),
                        (Direction::Both, "both"),
                    ],
                )?,
                None => Direction::Both,
            };
            let section = match keys.get("section") {
                Some(n) => text(n, "a section")?.to_string(),
                None => String::new(),
            };
            let seq = match keys.get("seq") {
                Some(n) => self.seq(n, "seq")?,
                None => Vec::new(),
            };
            out.push(Message {
                code,
                id,
                name,
                role,
                direction,
                section,
                seq,
            });
        }
        Ok(out)
    }

    fn seq(&mut self, node: &Node, what: &str) -> Result<Vec<Field>> {
        let Some(items) = node.items() else {
            return err(node, format!("{what} must be a list of fields"));
        };
        let mut out: Vec<Field> = Vec::new();
        for item in items {
            let f = self.field(item)?;
            if out.iter().any(|o| o.id == f.id) {
                return err(
                    item,
                    format!("two fields of one sequence are named `{}`", f.id),
                );
            }
            out.push(f);
        }
        Ok(out)
    }

    fn intern(&mut self, name: &str) -> u16 {
        if let Some(v) = self.var_index.get(name) {
            return *v;
        }
        let v = self.vars.len() as u16;
        self.vars.push(name.to_string());
        self.var_index.insert(name.to_string(), v);
        v
    }

    fn expression(&mut self, node: &Node, what: &str) -> Result<Expr> {
        if let Some(n) = node.integer() {
            return Ok(Expr::Num(n));
        }
        let source = text(node, what)?.to_string();
        let mut names = Vec::new();
        let parsed = {
            let mut intern = |name: &str| -> std::result::Result<u16, String> {
                if self.vars.len() >= u16::MAX as usize {
                    return Err("too many names".into());
                }
                let v = self.intern(name);
                names.push(v);
                Ok(v)
            };
            expr::parse(&source, &mut intern)
        };
        let e = match parsed {
            Ok(e) => e,
            Err(m) => return err(node, format!("{what}: {m}")),
        };
        self.references
            .extend(names.into_iter().map(|v| (v, node.pos)));
        Ok(e)
    }

    fn field(&mut self, node: &Node) -> Result<Field> {
        let keys = Keys::of(node, "a field", FIELD_KEYS)?;
        let id = identifier(keys.need("id", "a field")?, "a field id")?;
        let endian_default = self.endian.unwrap_or(Endian::Little);
        let mut endian = endian_default;
        let contents = keys
            .get("contents")
            .map(|n| bytes(n, "contents"))
            .transpose()?;
        let kind = match keys.get("type") {
            None => Kind::Bytes,
            Some(t) => {
                let name = text(t, "a type")?;
                match primitive(name) {
                    Some((kind, e)) => {
                        if let Some(e) = e {
                            endian = e;
                        }
                        kind
                    }
                    None => match self.type_names.iter().position(|n| n == name) {
                        Some(i) => Kind::User(i),
                        None => {
                            let known = PRIMITIVES
                                .iter()
                                .copied()
                                .chain(self.type_names.iter().map(String::as_str));
                            return err(t, format!("`{name}` is not a type{}", hint(name, known)));
                        }
                    },
                }
            }
        };
        let size = match (keys.get("size"), keys.get("size-eos")) {
            (Some(_), Some(n)) => return err(n, "a field has `size` or `size-eos`, not both"),
            (Some(n), None) => {
                let e = self.expression(n, "size")?;
                if let Expr::Num(v) = e {
                    if !(0..=MAX_FIXED_SIZE).contains(&v) {
                        return err(n, format!("size must be from 0 to {MAX_FIXED_SIZE}"));
                    }
                }
                Size::Bytes(e)
            }
            (None, Some(n)) => match text(n, "size-eos")? {
                "true" => Size::ToEnd,
                _ => return err(n, "size-eos must be true"),
            },
            (None, None) => match (&kind, &contents) {
                (Kind::Bytes, Some(c)) => Size::Bytes(Expr::Num(c.len() as i64)),
                _ => Size::Natural,
            },
        };
        if matches!(kind, Kind::Str | Kind::Bytes) && size == Size::Natural {
            return err(
                node,
                format!(
                    "field `{id}` needs `size` or `size-eos` (its type has no width of its own)"
                ),
            );
        }
        if matches!(
            kind,
            Kind::Int { .. } | Kind::Float { .. } | Kind::Bits { .. } | Kind::Strz
        ) && size != Size::Natural
        {
            return err(
                node,
                format!("field `{id}`: a number or `strz` has no `size`"),
            );
        }
        let encoding = match keys.get("encoding") {
            Some(n) => choice(
                n,
                "an encoding",
                &[
                    (Encoding::Ascii, "ASCII"),
                    (Encoding::Utf8, "UTF-8"),
                    (Encoding::Ascii, "ascii"),
                    (Encoding::Utf8, "utf-8"),
                    (Encoding::Utf8, "UTF8"),
                ],
            )?,
            None => Encoding::Utf8,
        };
        let repeat = match keys.get("repeat") {
            None => {
                if let Some(n) = keys.get("repeat-expr") {
                    return err(n, "repeat-expr goes with `repeat: expr`");
                }
                Repeat::Once
            }
            Some(n) => match text(n, "repeat")? {
                "expr" => Repeat::Count(
                    self.expression(keys.need("repeat-expr", "`repeat: expr`")?, "repeat-expr")?,
                ),
                "eos" => Repeat::UntilEnd,
                other => {
                    return err(
                        n,
                        format!(
                            "`repeat: {other}` is not supported; use expr or eos{}",
                            hint(other, ["expr", "eos"])
                        ),
                    )
                }
            },
        };
        let cond = keys
            .get("if")
            .map(|n| self.expression(n, "if"))
            .transpose()?;
        let enumeration = match keys.get("enum") {
            None => None,
            Some(n) => {
                let name = text(n, "an enum")?;
                match self.enum_names.iter().position(|e| e == name) {
                    Some(i) => Some(i),
                    None => {
                        return err(
                            n,
                            format!(
                                "no enum is named `{name}`{}",
                                hint(name, self.enum_names.iter().map(String::as_str))
                            ),
                        )
                    }
                }
            }
        };
        let valid = keys.get("valid").map(|n| self.valid(n)).transpose()?;
        if (valid.is_some() || enumeration.is_some())
            && !matches!(kind, Kind::Int { .. } | Kind::Bits { .. })
        {
            return err(
                node,
                format!("field `{id}`: `valid` and `enum` apply to integers"),
            );
        }
        let divisor = match keys.get("divisor") {
            Some(n) => match n.number() {
                Some(d) if d != 0.0 => Some(d),
                _ => return err(n, "divisor must be a number other than 0"),
            },
            None => None,
        };
        let roles: Vec<(FieldRole, &str)> = FieldRole::ALL.to_vec();
        let role = keys
            .get("role")
            .map(|n| choice(n, "a field role", &roles))
            .transpose()?;
        let label = match keys.get("label") {
            Some(n) => text(n, "a label")?.to_string(),
            None => label_of(&id),
        };
        let doc = match keys.get("doc") {
            Some(n) => text(n, "doc")?.trim().to_string(),
            None => String::new(),
        };
        let var = self.intern(&id);
        Ok(Field {
            id,
            var,
            label,
            doc,
            kind,
            endian,
            size,
            encoding,
            contents,
            repeat,
            cond,
            enumeration,
            valid,
            divisor,
            role,
            line: node.pos.line,
        })
    }

    fn valid(&mut self, node: &Node) -> Result<Valid> {
        let mut v = Valid {
            rule: Description::rule_index(Check::Valid),
            ..Valid::default()
        };
        if let Some(eq) = node.integer() {
            v.eq = Some(eq);
            return Ok(v);
        }
        let keys = Keys::of(node, "valid", &["eq", "min", "max", "any-of", "rule"])?;
        v.eq = keys.get("eq").map(|n| integer(n, "valid.eq")).transpose()?;
        v.min = keys
            .get("min")
            .map(|n| integer(n, "valid.min"))
            .transpose()?;
        v.max = keys
            .get("max")
            .map(|n| integer(n, "valid.max"))
            .transpose()?;
        if let Some(n) = keys.get("any-of") {
            let Some(items) = n.items() else {
                return err(n, "valid.any-of must be a list");
            };
            v.any_of = items
                .iter()
                .map(|i| integer(i, "valid.any-of"))
                .collect::<Result<_>>()?;
        }
        if let Some(n) = keys.get("rule") {
            let id = text(n, "valid.rule")?;
            match self.rules.iter().position(|r| r.id == id) {
                Some(i) => v.rule = i,
                None => {
                    return err(
                        n,
                        format!(
                            "no rule is named `{id}`{}",
                            hint(id, self.rules.iter().map(|r| r.id.as_str()))
                        ),
                    )
                }
            }
        }
        Ok(v)
    }

    #[allow(clippy::type_complexity)]
    fn framing(
        &mut self,
        node: &Node,
        header: &[Field],
        footer: &[Field],
    ) -> Result<(
        Option<LengthRule>,
        Option<ChecksumRule>,
        Option<CompressionRule>,
        bool,
    )> {
        let keys = Keys::of(
            node,
            "framing",
            &["length", "checksum", "compression", "messages-per-datagram"],
        )?;
        let header_field = |n: &Node| -> Result<usize> {
            let name = text(n, "a header field")?;
            match header.iter().position(|f| f.id == name) {
                Some(i) if matches!(header[i].kind, Kind::Int { .. } | Kind::Bits { .. }) => Ok(i),
                Some(_) => err(n, format!("`{name}` must be an integer field")),
                None => err(
                    n,
                    format!(
                        "the header has no field `{name}`{}",
                        hint(name, header.iter().map(|f| f.id.as_str()))
                    ),
                ),
            }
        };
        let length = match keys.get("length") {
            None => None,
            Some(n) => {
                let k = Keys::of(n, "framing.length", &["field", "covers", "adjust"])?;
                let field = header_field(k.need("field", "framing.length")?)?;
                let covers = match k.get("covers") {
                    Some(c) => choice(
                        c,
                        "what a length covers",
                        &[
                            (LengthCovers::Body, "body"),
                            (LengthCovers::Message, "message"),
                            (LengthCovers::Datagram, "datagram"),
                        ],
                    )?,
                    None => LengthCovers::Body,
                };
                let adjust = k
                    .get("adjust")
                    .map(|a| integer(a, "adjust"))
                    .transpose()?
                    .unwrap_or(0);
                Some(LengthRule {
                    field,
                    covers,
                    adjust,
                })
            }
        };
        let checksum = match keys.get("checksum") {
            None => None,
            Some(n) => {
                let k = Keys::of(n, "framing.checksum", &["algorithm", "field", "covers"])?;
                let algorithm = choice(
                    k.need("algorithm", "framing.checksum")?,
                    "a checksum algorithm",
                    ChecksumAlgorithm::ALL,
                )?;
                let fnode = k.need("field", "framing.checksum")?;
                let name = text(fnode, "a field")?;
                let field = match (
                    header.iter().position(|f| f.id == name),
                    footer.iter().position(|f| f.id == name),
                ) {
                    (Some(i), _) => Place::Header(i),
                    (None, Some(i)) => Place::Footer(i),
                    _ => {
                        return err(
                            fnode,
                            format!(
                                "no header or footer field is named `{name}`{}",
                                hint(name, header.iter().chain(footer).map(|f| f.id.as_str()))
                            ),
                        )
                    }
                };
                let (from, to) = match k.get("covers") {
                    None => (0, -4),
                    Some(c) => match c.items() {
                        Some([a, b]) => (integer(a, "covers")?, integer(b, "covers")?),
                        _ => return err(c, "covers is [from, to]: byte offsets in the datagram, negative from its end"),
                    },
                };
                Some(ChecksumRule {
                    algorithm,
                    field,
                    from,
                    to,
                })
            }
        };
        let compression = match keys.get("compression") {
            None => None,
            Some(n) => {
                let k = Keys::of(
                    n,
                    "framing.compression",
                    &["algorithm", "flag", "mask", "original-size"],
                )?;
                let algorithm = choice(
                    k.need("algorithm", "framing.compression")?,
                    "a compression",
                    &[
                        (CompressionAlgorithm::Lz4Block, "lz4-block"),
                        (CompressionAlgorithm::Lz4Frame, "lz4-frame"),
                        (CompressionAlgorithm::Zlib, "zlib"),
                    ],
                )?;
                let flag = header_field(k.need("flag", "framing.compression")?)?;
                let mask = match k.get("mask") {
                    Some(m) => integer(m, "mask")? as u64,
                    None => u64::MAX,
                };
                let original_size = k.get("original-size").map(header_field).transpose()?;
                if algorithm == CompressionAlgorithm::Lz4Block && original_size.is_none() {
                    return err(n, "lz4-block needs `original-size`: an LZ4 block does not say how large it decompresses");
                }
                Some(CompressionRule {
                    algorithm,
                    flag,
                    mask,
                    original_size,
                })
            }
        };
        let many = match keys.get("messages-per-datagram") {
            Some(n) => choice(n, "a count", &[(false, "one"), (true, "many")])?,
            None => false,
        };
        Ok((length, checksum, compression, many))
    }
}

const PRIMITIVES: &[&str] = &[
    "u1", "u2", "u4", "u8", "s1", "s2", "s4", "s8", "f4", "f8", "str", "strz",
];

/// A primitive type name: its kind and, when it says one, its byte order.
fn primitive(name: &str) -> Option<(Kind, Option<Endian>)> {
    match name {
        "str" => return Some((Kind::Str, None)),
        "strz" => return Some((Kind::Strz, None)),
        _ => {}
    }
    if let Some(bits) = name.strip_prefix('b') {
        return match bits.parse::<u8>() {
            Ok(w @ 1..=32) if !bits.starts_with('0') => Some((Kind::Bits { width: w }, None)),
            _ => None,
        };
    }
    let (base, endian) = if let Some(b) = name.strip_suffix("le") {
        (b, Some(Endian::Little))
    } else if let Some(b) = name.strip_suffix("be") {
        (b, Some(Endian::Big))
    } else {
        (name, None)
    };
    let kind = match base {
        "u1" => Kind::Int {
            width: 1,
            signed: false,
        },
        "u2" => Kind::Int {
            width: 2,
            signed: false,
        },
        "u4" => Kind::Int {
            width: 4,
            signed: false,
        },
        "u8" => Kind::Int {
            width: 8,
            signed: false,
        },
        "s1" => Kind::Int {
            width: 1,
            signed: true,
        },
        "s2" => Kind::Int {
            width: 2,
            signed: true,
        },
        "s4" => Kind::Int {
            width: 4,
            signed: true,
        },
        "s8" => Kind::Int {
            width: 8,
            signed: true,
        },
        "f4" => Kind::Float { width: 4 },
        "f8" => Kind::Float { width: 8 },
        _ => return None,
    };
    Some((kind, endian))
}

/// `entity_id` → `Entity Id`.
fn label_of(id: &str) -> String {
    id.split('_')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// User types may nest at most [`MAX_TYPE_DEPTH`] deep, and never in a cycle (each type's depth
/// is computed once, so a wide description costs no more than its fields).
fn check_type_depth(types: &[TypeDef], nodes: &[(Node, Node)]) -> Result<()> {
    const TOO_DEEP: usize = MAX_TYPE_DEPTH + 1;
    /// `None`: not computed; `Some(TOO_DEEP)` also marks a type being computed (a cycle).
    fn depth(types: &[TypeDef], t: usize, memo: &mut [Option<usize>], level: usize) -> usize {
        if let Some(d) = memo[t] {
            return d;
        }
        if level > MAX_TYPE_DEPTH {
            return TOO_DEEP;
        }
        memo[t] = Some(TOO_DEEP);
        let mut d = 0;
        for f in &types[t].seq {
            if let Kind::User(u) = f.kind {
                d = d.max(1 + depth(types, u, memo, level + 1)).min(TOO_DEEP);
            }
        }
        memo[t] = Some(d);
        d
    }
    let mut memo = vec![None; types.len()];
    for t in 0..types.len() {
        if depth(types, t, &mut memo, 0) >= TOO_DEEP {
            return err(
                &nodes[t].0,
                format!(
                    "type `{}` contains itself or nests deeper than {MAX_TYPE_DEPTH} types",
                    types[t].id
                ),
            );
        }
    }
    Ok(())
}
