//! A described datagram as people and programs read it: the packet list's Info, the verbose
//! tree, and JSON nested as the description's types nest. The one rendering that `packets`,
//! `export` and the `dialect` commands share.

use std::fmt::Write;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde_json::{json, Map, Value as Json};

use super::decode::{Decoded, Item, Value};
use super::names::Names;
use super::Described;

/// A value as people read it: enum names, scaled fixed point, quoted text, bytes in hex.
pub fn text(d: &Described, item: &Item) -> String {
    let field = &d.names.fields[item.field];
    match &item.value {
        Value::Int(i) => {
            let base = match field.divisor {
                Some(div) => format!("{}", *i as f64 / div),
                None => i.to_string(),
            };
            match field
                .enumeration
                .and_then(|e| d.description.enums[e].name_of(*i))
            {
                Some(name) => format!("{name} ({base})"),
                None => base,
            }
        }
        Value::UInt(u) => u.to_string(),
        Value::Float(f) => format!("{f}"),
        Value::Text(t) => format!("{t:?}"),
        Value::Bytes(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
        Value::Group => String::new(),
    }
}

/// The packet list's Info after the message name: the body's first fields, `name=value`.
pub fn info(d: &Described, decoded: &Decoded<'_>, out: &mut String) {
    let id = d.description.id.as_str();
    let own = |name: &str| {
        name.strip_prefix(id)
            .is_some_and(|rest| !rest.starts_with(".header.") && !rest.starts_with(".footer."))
    };
    let body = decoded
        .items
        .iter()
        .filter(|i| i.depth == 0 && i.value != Value::Group && own(&d.names.fields[i.field].name));
    for item in body.take(6) {
        let _ = write!(
            out,
            " {}={}",
            leaf(&d.names.fields[item.field].name),
            text(d, item)
        );
    }
}

/// Every field, one line each, indented by its depth: label, value, filter name, offset and
/// length (in the decompressed body when it was compressed).
pub fn tree(d: &Described, decoded: &Decoded<'_>, indent: &str, out: &mut String) {
    for i in &decoded.items {
        let f = &d.names.fields[i.field];
        let depth = "  ".repeat(usize::from(i.depth));
        let at = if i.decompressed {
            " (decompressed)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "{indent}{depth}{}: {} [{}] @{}+{}{at}",
            f.label,
            text(d, i),
            f.name,
            i.offset,
            i.len
        );
    }
}

/// A value as JSON: the scaled number of a fixed-point field, text, bytes in hex.
pub fn value(names: &Names, item: &Item) -> Json {
    let field = &names.fields[item.field];
    match &item.value {
        Value::Int(i) => match field.divisor {
            Some(div) => json!(*i as f64 / div),
            None => json!(i),
        },
        Value::UInt(u) => json!(u),
        Value::Float(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
        Value::Text(t) => json!(t),
        Value::Bytes(b) => json!(b.iter().map(|x| format!("{x:02x}")).collect::<String>()),
        Value::Group => Json::Object(Map::new()),
    }
}

/// The last segment of a filter name: the JSON key.
pub fn leaf(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// A header's, a message's or a footer's fields: an object whose keys are the description's
/// field names (the last segment of each filter name).
#[derive(Default, Serialize)]
#[serde(transparent)]
pub struct FieldValues(pub Map<String, Json>);

impl JsonSchema for FieldValues {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "FieldValues".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "An object of field values, keyed by the description's field names: a number (a fixed-point field scaled), text, bytes in hex, a user type's object of field values, a list of them for a repeated field; null for a float that is not a number.",
            "type": "object",
            "additionalProperties": {
                "type": ["number", "string", "object", "array", "null"]
            }
        })
    }
}

/// One message of a datagram, decoded.
// The fields are in the order serde_json's sorted maps wrote them before.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Message {
    /// The message code (null when the message has none); absent when the datagram's framing
    /// found no message for these fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<Option<i64>>,
    pub fields: FieldValues,
    pub header: FieldValues,
    /// The message's name (null for a code the description does not name); absent as `code`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<Option<String>>,
}

impl Message {
    /// The message as a JSON object, as export writes it.
    fn into_json(self) -> Json {
        let mut obj = Map::new();
        obj.insert("header".into(), Json::Object(self.header.0));
        obj.insert("fields".into(), Json::Object(self.fields.0));
        if let Some(code) = self.code {
            obj.insert("code".into(), json!(code));
        }
        if let Some(name) = self.name {
            obj.insert("name".into(), json!(name));
        }
        Json::Object(obj)
    }
}

/// Each message of the datagram as `{"code", "name", "header", "fields"}`, and the footer.
pub fn messages(d: &Described, decoded: &Decoded<'_>) -> (Vec<Json>, Map<String, Json>) {
    let (messages, footer) = typed_messages(d, decoded);
    let messages = messages.into_iter().map(Message::into_json).collect();
    (messages, footer.0)
}

/// Each message of the datagram, and the footer.
pub fn typed_messages(d: &Described, decoded: &Decoded<'_>) -> (Vec<Message>, FieldValues) {
    let desc = &d.description;
    let prefix_header = format!("{}.header.", desc.id);
    let prefix_footer = format!("{}.footer.", desc.id);
    let mut header = Map::new();
    let mut footer = Map::new();
    let mut messages: Vec<Message> = Vec::new();
    let mut body = Map::new();
    // The open user-type objects: key, members, depth, repeated.
    let mut stack: Vec<(String, Map<String, Json>, u8, bool)> = Vec::new();
    let close = |stack: &mut Vec<(String, Map<String, Json>, u8, bool)>,
                 to: u8,
                 body: &mut Map<String, Json>| {
        while stack.last().is_some_and(|s| s.2 >= to) {
            let (key, obj, _, repeated) = stack.pop().expect("checked");
            let parent = match stack.last_mut() {
                Some(p) => &mut p.1,
                None => &mut *body,
            };
            insert(parent, &key, Json::Object(obj), repeated);
        }
    };
    let first_header_field = d.names.header.slots.first().map(|s| s.field);
    for item in &decoded.items {
        let name = &d.names.fields[item.field].name;
        let key = leaf(name).to_string();
        if name.starts_with(&prefix_header) && item.depth == 0 {
            close(&mut stack, 0, &mut body);
            // The header's first field begins the next message (several per datagram).
            if first_header_field == Some(item.field) && !header.is_empty() {
                messages.push(Message {
                    code: None,
                    fields: FieldValues(std::mem::take(&mut body)),
                    header: FieldValues(std::mem::take(&mut header)),
                    name: None,
                });
            }
            insert(&mut header, &key, value(&d.names, item), false);
            continue;
        }
        if name.starts_with(&prefix_footer) && item.depth == 0 {
            close(&mut stack, 0, &mut body);
            insert(&mut footer, &key, value(&d.names, item), false);
            continue;
        }
        close(&mut stack, item.depth + 1, &mut body);
        let repeated = d.names.fields[item.field].repeated;
        if item.value == Value::Group {
            stack.push((key, Map::new(), item.depth + 1, repeated));
            continue;
        }
        let target = match stack.last_mut() {
            Some(s) => &mut s.1,
            None => &mut body,
        };
        insert(target, &key, value(&d.names, item), repeated);
    }
    close(&mut stack, 0, &mut body);
    if !header.is_empty() || !body.is_empty() {
        messages.push(Message {
            code: None,
            fields: FieldValues(body),
            header: FieldValues(header),
            name: None,
        });
    }
    for (m, seen) in messages.iter_mut().zip(&decoded.messages) {
        m.code = Some(seen.code);
        m.name = Some(seen.message.map(|i| desc.messages[i].name.clone()));
    }
    (messages, FieldValues(footer))
}

/// A repeated field's values are a list, even of one; a field met twice otherwise (several
/// messages' fields are kept apart, so only a description's own repeats do this) becomes one too.
fn insert(map: &mut Map<String, Json>, key: &str, value: Json, repeated: bool) {
    match map.get_mut(key) {
        None if repeated => {
            map.insert(key.to_string(), Json::Array(vec![value]));
        }
        None => {
            map.insert(key.to_string(), value);
        }
        Some(Json::Array(list)) if repeated => list.push(value),
        Some(existing) => {
            let first = existing.take();
            *existing = Json::Array(vec![first, value]);
        }
    }
}
