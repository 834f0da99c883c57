//! The `rtnp` dialect (document 004): JSON messages, optionally wrapped in a Cap'n Proto message
//! with one Text field. Its message list (§6.1) and JSON schemas (Appendix B, and §6.5-6.6 for the
//! two types Appendix B leaves out) are compiled by build.rs from its description,
//! `dialects/rtnp.yaml`: the checker in `datagram::rtnp` walks these tables, and reports name
//! fields by their paths.

use super::rules::Rule;
use super::schema::{Check, Direction, Display, Field, Message, MessageRole, Quantity, Role, Ty};

/// JSON texts larger than this are not parsed (SECURITY.md: bounded work per datagram).
pub const MAX_JSON: usize = 64 * 1024;
/// JSON nested deeper than this is not parsed.
pub const MAX_DEPTH: usize = 32;

/// A JSON Schema `type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonType {
    String,
    /// A number with no fractional part (JSON Schema draft-07 counts `1.0` as an integer).
    Integer,
    Number,
    Boolean,
    Object,
    Array,
}

impl JsonType {
    pub const fn name(self) -> &'static str {
        match self {
            JsonType::String => "string",
            JsonType::Integer => "integer",
            JsonType::Number => "number",
            JsonType::Boolean => "boolean",
            JsonType::Object => "object",
            JsonType::Array => "array",
        }
    }
}

/// One property of a schema.
#[derive(Debug)]
pub struct JsonField {
    /// Where it is, as reported: `keys.up`, `entities[].networkId`. The key is the last segment.
    pub path: &'static str,
    pub ty: JsonType,
    pub required: bool,
    /// The schema's `minimum`, for numbers.
    pub minimum: Option<f64>,
    /// The rule a missing required field breaks.
    pub missing: Rule,
    /// An object's properties, or an array's item properties (items are objects here).
    pub fields: &'static [JsonField],
}

impl JsonField {
    /// The JSON key: the last segment of the path.
    pub fn key(&self) -> &'static str {
        self.path.rsplit('.').next().unwrap_or(self.path)
    }
}

/// A message type: its descriptor (name, direction, section) and its JSON properties besides
/// `type`, which every message has.
#[derive(Debug)]
pub struct JsonMessage {
    pub message: Message,
    pub fields: &'static [JsonField],
}

include!(concat!(env!("OUT_DIR"), "/rtnp.rs"));

/// The message type named `name`, if the document (or, for PING/PONG, spec-notes) defines it.
pub fn message(name: &str) -> Option<&'static JsonMessage> {
    MESSAGES.iter().find(|m| m.message.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_indexed_and_keys_come_from_paths() {
        for (i, m) in MESSAGES.iter().enumerate() {
            assert_eq!(m.message.code as usize, i);
        }
        assert_eq!(
            message("snapshot").unwrap().message.direction,
            Direction::ServerToClient
        );
        assert_eq!(
            message("PING").unwrap().message.seen_rule,
            Some(Rule::RtnpKeepaliveText)
        );
        assert!(message("lobby_state").is_none());
        let snapshot = message("snapshot").unwrap();
        assert_eq!(snapshot.fields[0].key(), "epoch");
        assert_eq!(snapshot.fields[1].fields[0].key(), "networkId");
        assert_eq!(snapshot.fields[1].fields[4].fields[2].key(), "scale");
    }
}
