//! A dialect of JSON messages (`payload.kind: json`): rtnp's message list and JSON schemas.

use std::fmt::Write as _;

use super::binary::Dialect;
use super::*;

const JSON_TYPES: &[(&str, &str)] = &[
    ("string", "String"),
    ("integer", "Integer"),
    ("number", "Number"),
    ("boolean", "Boolean"),
    ("object", "Object"),
    ("array", "Array"),
];

pub(super) fn compile(root: &Node) -> Result<String> {
    map(
        root,
        "a JSON dialect",
        &[
            "meta",
            "detect",
            "framing",
            "payload",
            "session",
            "entity-values",
            "messages",
            "rules",
        ],
    )?;
    let mut code = String::from(
        "// Compiled by build.rs from the dialect's description: edit that, not this.\n",
    );
    let detect = required(root, "detect", "a dialect")?;
    let ports = items(required(detect, "ports", "detect")?, "the ports")?;
    let Some(port) = ports.first() else {
        return err(detect.pos, "a JSON dialect has its server's port");
    };
    let framing = required(root, "framing", "a dialect")?;
    map(framing, "framing", &["max-datagram"])?;
    let payload = required(root, "payload", "a dialect")?;
    map(
        payload,
        "payload",
        &["kind", "envelope", "type-key", "missing-rule"],
    )?;
    if text(required(payload, "kind", "payload")?, "a kind")? != "json" {
        return err(payload.pos, "the payload kind is json");
    }
    if text(required(payload, "envelope", "payload")?, "an envelope")? != "capnp-text" {
        return err(payload.pos, "the envelope is capnp-text");
    }
    let session = required(root, "session", "a dialect")?;
    map(session, "session", &["client-timeout-ms"])?;
    let _ = writeln!(
        code,
        "/// The port the server listens on unless configured otherwise.\n\
         pub const SERVER_PORT: u16 = {};\n\
         /// Datagrams must not exceed this size.\n\
         pub const MAX_DATAGRAM: usize = {};\n\
         /// The key whose value names a message.\n\
         pub const TYPE_KEY: &str = {};\n\
         /// The server must drop a client silent for this long.\n\
         pub const CLIENT_TIMEOUT_NANOS: i64 = {} * 1_000_000;",
        integer(port, "a port")?,
        integer(required(framing, "max-datagram", "framing")?, "a size")?,
        lit(text(required(payload, "type-key", "payload")?, "a key")?),
        integer(
            required(session, "client-timeout-ms", "session")?,
            "a timeout"
        )?,
    );
    let missing = rule(required(payload, "missing-rule", "payload")?)?;

    let mut values = Vec::new();
    for v in items(
        required(root, "entity-values", "a dialect")?,
        "entity-values",
    )? {
        map(
            v,
            "an entity value",
            &["id", "label", "type", "role", "paths"],
        )?;
        let paths: Vec<String> = items(required(v, "paths", "an entity value")?, "paths")?
            .iter()
            .map(|p| {
                let keys: Vec<String> = text(p, "a path")?.split('.').map(lit).collect();
                Ok(format!("&[{}]", keys.join(", ")))
            })
            .collect::<Result<_>>()?;
        let field = Dialect::empty().field(v)?;
        values.push(format!("(&[{}], {field})", paths.join(", ")));
    }
    let _ = writeln!(
        code,
        "/// The values of a snapshot's entities the world keeps, each at the first of its paths an entity has.\n\
         pub static ENTITY_VALUES: [(&[&[&str]], Field); {}] = [{}];",
        values.len(),
        values.join(", ")
    );

    let messages = required(root, "messages", "a dialect")?;
    let Some(entries) = messages.entries() else {
        return err(
            messages.pos,
            "`messages` is a map of type names to messages",
        );
    };
    let mut out = String::new();
    for (code_index, (name, m)) in entries.iter().enumerate() {
        map(
            m,
            "a message",
            &[
                "direction",
                "section",
                "fields",
                "keepalive",
                "seen-rule",
                "role",
                "full-state",
            ],
        )?;
        let name = text(name, "a message name")?;
        let direction = direction(m)?;
        let seen = match get(m, "seen-rule") {
            Some(r) => format!("Some({})", rule(r)?),
            None => "None".into(),
        };
        if flag(m, "keepalive")? {
            let _ = writeln!(
                code,
                "/// A keep-alive text real peers send instead of JSON.\npub const {}: &str = {};",
                name.to_uppercase(),
                lit(name)
            );
        }
        let fields = match get(m, "fields") {
            Some(f) => self::fields(f, "", &missing, 0)?,
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "    JsonMessage {{ message: Message {{ code: {code_index}, name: {n}, short: {n}, direction: {direction}, section: {}, body: &[], variants: &[], seen_rule: {seen}, role: {}, full_state: {} }}, fields: &[{fields}] }},",
            lit(text(required(m, "section", "a message")?, "a section")?),
            message_role(m)?,
            flag(m, "full-state")?,
            n = lit(name),
        );
    }
    let _ = writeln!(
        code,
        "/// Every message type, in the description's order; `code` is the entry's index.\n\
         pub const MESSAGES: &[JsonMessage] = &[\n{out}];"
    );
    Ok(code)
}

/// The properties of an object (or of an array's items) at `parent`'s path.
fn fields(list: &Node, parent: &str, missing: &str, depth: usize) -> Result<String> {
    if depth > 8 {
        return err(list.pos, "properties nest deeper than 8");
    }
    let mut out = String::new();
    for f in items(list, "fields")? {
        map(
            f,
            "a property",
            &[
                "key",
                "type",
                "required",
                "minimum",
                "missing-rule",
                "fields",
            ],
        )?;
        let key = text(required(f, "key", "a property")?, "a key")?;
        let path = format!("{parent}{key}");
        let ty_node = required(f, "type", "a property")?;
        let ty_name = text(ty_node, "a JSON type")?;
        let Some((_, ty)) = JSON_TYPES.iter().find(|t| t.0 == ty_name) else {
            return err(
                ty_node.pos,
                format!("`{ty_name}` is not a JSON Schema type"),
            );
        };
        let required = flag(f, "required")?;
        let minimum = match get(f, "minimum") {
            Some(m) => format!("Some({:?})", integer(m, "a minimum")? as f64),
            None => "None".into(),
        };
        let rule = match get(f, "missing-rule") {
            Some(r) => rule(r)?,
            None => missing.to_string(),
        };
        let nested = match get(f, "fields") {
            Some(list) => {
                let child = if *ty == "Array" {
                    format!("{path}[].")
                } else {
                    format!("{path}.")
                };
                fields(list, &child, missing, depth + 1)?
            }
            None => String::new(),
        };
        let _ = write!(
            out,
            "JsonField {{ path: {}, ty: JsonType::{ty}, required: {required}, minimum: {minimum}, missing: {rule}, fields: &[{nested}] }}, ",
            lit(&path)
        );
    }
    Ok(out)
}
