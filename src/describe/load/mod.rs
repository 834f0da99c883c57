//! From YAML to a [`Description`]: every key checked, every name resolved, every error placed at
//! its line and column with the nearest known name.

mod field;
mod keys;
mod message;

use std::collections::HashMap;

use super::model::*;
use super::yaml::{self, Node, Pos};
use field::check_type_depth;
use keys::{bytes, choice, identifier, integer, text, Keys};

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

/// What `meta` gives.
struct Meta {
    id: String,
    title: String,
    document: String,
    endian: Endian,
    bits_big_endian: bool,
}

/// What `detect` gives.
struct Detect<'a> {
    keys: Keys<'a>,
    magic: Vec<u8>,
    ports: Vec<u16>,
}

impl Loader {
    /// The whole description: names first (types and enums may be used before they are
    /// defined), then the rules `valid` may name, then the layout, then every name checked.
    fn description(mut self, root: &Node) -> Result<Description> {
        let top = Keys::of(
            root,
            "the description",
            &[
                "meta", "detect", "header", "framing", "messages", "footer", "types", "enums",
                "rules",
            ],
        )?;
        let Meta {
            id,
            title,
            document,
            endian,
            bits_big_endian,
        } = meta(top.need("meta", "the description")?)?;
        self.endian = Some(endian);
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
        let enums = match top.get("enums") {
            Some(n) => self.enums(n)?,
            None => Vec::new(),
        };
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
        let Detect { keys, magic, ports } = detect(top.need("detect", "the description")?)?;

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
        let type_field = type_field(&header, header_node)?;

        let messages = self.messages(top.need("messages", "the description")?)?;
        let (length, checksum, compression, many) = match top.get("framing") {
            Some(n) => self.framing(n, &header, &footer)?,
            None => (None, None, None, false),
        };
        let header_len = fixed_width(&header, &types).unwrap_or(0);
        let min_length = match keys.get("min-length") {
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

    /// `enums`: each enum's values and names, its name known to the fields that use it.
    fn enums(&mut self, node: &Node) -> Result<Vec<EnumDef>> {
        let Some(enum_nodes) = node.entries() else {
            return err(node, "enums must be a map of enum names to value maps");
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
        Ok(enums)
    }

    /// Whether a field of the description is named `var`.
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
}

/// `meta`: the dialect's id, title, document, and byte and bit orders.
fn meta(node: &Node) -> Result<Meta> {
    let meta = Keys::of(
        node,
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
    let bits_big_endian = match meta.get("bit-endian") {
        Some(n) => choice(n, "a bit order", &[(false, "le"), (true, "be")])?,
        None => true,
    };
    let opt_text = |key: &str| -> Result<String> {
        meta.get(key)
            .map_or(Ok(String::new()), |n| text(n, key).map(str::to_string))
    };
    Ok(Meta {
        id,
        title: opt_text("title")?,
        document: opt_text("document")?,
        endian,
        bits_big_endian,
    })
}

/// `detect`: the magic and the ports that claim a datagram; one of them at least.
fn detect(node: &Node) -> Result<Detect<'_>> {
    let keys = Keys::of(node, "detect", &["magic", "ports", "min-length"])?;
    let magic = match keys.get("magic") {
        Some(n) => bytes(n, "detect.magic")?,
        None => Vec::new(),
    };
    if magic.len() > 16 {
        return err(
            keys.need("magic", "detect")?,
            "detect.magic has more than 16 bytes",
        );
    }
    let ports = match keys.get("ports") {
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
        return err(keys.map, "detect needs a `magic`, `ports`, or both: without either, every UDP datagram would be claimed");
    }
    Ok(Detect { keys, magic, ports })
}

/// The header field with `role: message-type`, an integer: it chooses the message.
fn type_field(header: &[Field], node: &Node) -> Result<usize> {
    let Some(i) = header
        .iter()
        .position(|f| f.role == Some(FieldRole::MessageType))
    else {
        return err(
            node,
            "one header field needs `role: message-type`: it chooses the message",
        );
    };
    if !matches!(header[i].kind, Kind::Int { .. } | Kind::Bits { .. }) {
        return err(
            node,
            "the message-type field must be an integer or bit field",
        );
    }
    Ok(i)
}
