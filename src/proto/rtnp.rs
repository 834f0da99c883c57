//! The `rtnp` dialect (document 004): JSON messages, optionally wrapped in a Cap'n Proto message
//! with one Text field. Its message list (§6.1) and JSON schemas (Appendix B, and §6.5-6.6 for the
//! two types Appendix B leaves out) as data: the checker in `datagram::rtnp` walks these tables,
//! and reports name fields by their paths.

use super::rules::Rule;
use super::schema::{Direction, Field, Message, Quantity, Ty};
use Direction::{ClientToServer as C2S, ServerToClient as S2C};

/// The port the server MUST listen on unless configured otherwise (§4.2).
pub const SERVER_PORT: u16 = 4242;
/// Datagrams MUST NOT exceed this size (§4.3).
pub const MAX_DATAGRAM: usize = 8192;
/// The server MUST drop a client silent for this long (§7.3, §9.1).
pub const CLIENT_TIMEOUT_NANOS: i64 = 30_000_000_000;
/// JSON texts larger than this are not parsed (SECURITY.md: bounded work per datagram).
pub const MAX_JSON: usize = 64 * 1024;
/// JSON nested deeper than this is not parsed.
pub const MAX_DEPTH: usize = 32;
/// The keep-alive texts real peers send instead of JSON (spec-notes B).
pub const PING: &str = "PING";
pub const PONG: &str = "PONG";

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

const fn f(path: &'static str, ty: JsonType, required: bool) -> JsonField {
    JsonField {
        path,
        ty,
        required,
        minimum: None,
        missing: Rule::RtnpMissingField,
        fields: &[],
    }
}

const fn min(field: JsonField, minimum: f64) -> JsonField {
    JsonField {
        minimum: Some(minimum),
        ..field
    }
}

const fn with(field: JsonField, fields: &'static [JsonField]) -> JsonField {
    JsonField { fields, ..field }
}

/// A message type: its descriptor (name, direction, section) and its JSON properties besides
/// `type`, which every message has.
#[derive(Debug)]
pub struct JsonMessage {
    pub message: Message,
    pub fields: &'static [JsonField],
}

/// rtnp has no type codes: `code` is the entry's index in [`MESSAGES`], for tables only.
const fn msg(code: u8, name: &'static str, direction: Direction, section: &'static str) -> Message {
    Message {
        code,
        name,
        short: name,
        direction,
        section,
        body: &[],
        variants: &[],
        seen_rule: None,
    }
}

/// Every message type of document 004, then the keep-alive texts real peers send.
pub const MESSAGES: &[JsonMessage] = &[
    JsonMessage {
        message: msg(0, "assign_id", S2C, "004 §6.2, B.1"),
        fields: &[min(f("client_id", JsonType::Integer, true), 0.0)],
    },
    JsonMessage {
        message: msg(1, "player_input", C2S, "004 §6.3, B.2"),
        fields: &[
            min(f("client_id", JsonType::Integer, true), 0.0),
            with(
                f("keys", JsonType::Object, true),
                &[
                    f("keys.up", JsonType::Boolean, true),
                    f("keys.down", JsonType::Boolean, true),
                    f("keys.left", JsonType::Boolean, true),
                    f("keys.right", JsonType::Boolean, true),
                    f("keys.space", JsonType::Boolean, true),
                ],
            ),
        ],
    },
    JsonMessage {
        message: msg(2, "snapshot", S2C, "004 §6.4, B.3"),
        fields: &[
            JsonField {
                missing: Rule::RtnpEpochMissing,
                ..min(f("epoch", JsonType::Integer, true), 0.0)
            },
            with(
                f("entities", JsonType::Array, true),
                &[
                    min(f("entities[].networkId", JsonType::Integer, true), 0.0),
                    f("entities[].type", JsonType::String, true),
                    with(
                        f("entities[].position", JsonType::Object, false),
                        &[
                            f("entities[].position.x", JsonType::Number, false),
                            f("entities[].position.y", JsonType::Number, false),
                        ],
                    ),
                    with(
                        f("entities[].velocity", JsonType::Object, false),
                        &[
                            f("entities[].velocity.x", JsonType::Number, false),
                            f("entities[].velocity.y", JsonType::Number, false),
                        ],
                    ),
                    with(
                        f("entities[].sprite", JsonType::Object, false),
                        &[
                            min(
                                f("entities[].sprite.spriteId", JsonType::Integer, false),
                                0.0,
                            ),
                            min(
                                f("entities[].sprite.spriteSheetId", JsonType::Integer, false),
                                0.0,
                            ),
                            min(f("entities[].sprite.scale", JsonType::Number, false), 0.0),
                            f("entities[].sprite.rotation", JsonType::Number, false),
                        ],
                    ),
                    f("entities[].health", JsonType::Integer, false),
                    min(f("entities[].maxHealth", JsonType::Integer, false), 1.0),
                ],
            ),
        ],
    },
    JsonMessage {
        message: msg(3, "connect_request", C2S, "004 §6.5"),
        fields: &[
            f("player_name", JsonType::String, true),
            f("version", JsonType::String, false),
        ],
    },
    JsonMessage {
        message: msg(4, "disconnect", C2S, "004 §6.6"),
        fields: &[
            min(f("client_id", JsonType::Integer, true), 0.0),
            f("reason", JsonType::String, false),
        ],
    },
    JsonMessage {
        message: Message {
            seen_rule: Some(Rule::RtnpKeepaliveText),
            ..msg(5, PING, C2S, "spec-notes B")
        },
        fields: &[],
    },
    JsonMessage {
        message: Message {
            seen_rule: Some(Rule::RtnpKeepaliveText),
            ..msg(6, PONG, S2C, "spec-notes B")
        },
        fields: &[],
    },
];

/// The message type named `name`, if the document (or, for PING/PONG, spec-notes) defines it.
pub fn message(name: &str) -> Option<&'static JsonMessage> {
    MESSAGES.iter().find(|m| m.message.name == name)
}

/// The values of a snapshot's `entities[]` the world keeps: each quantity, at the document's
/// path (004 §7: `position`, `velocity`, `health`) or the real servers' (`transform`,
/// `health.hp`); the first path an entity has is read.
pub static ENTITY_VALUES: [(&[&[&str]], Field); 5] = [
    (
        &[&["position", "x"], &["transform", "x"]],
        Field::new("pos_x", "Position X", Ty::F32).quantity(Quantity::PosX),
    ),
    (
        &[&["position", "y"], &["transform", "y"]],
        Field::new("pos_y", "Position Y", Ty::F32).quantity(Quantity::PosY),
    ),
    (
        &[&["velocity", "x"]],
        Field::new("vel_x", "Velocity X", Ty::F32).quantity(Quantity::VelX),
    ),
    (
        &[&["velocity", "y"]],
        Field::new("vel_y", "Velocity Y", Ty::F32).quantity(Quantity::VelY),
    ),
    (
        &[&["health"], &["health", "hp"]],
        Field::new("health", "Health", Ty::I32).quantity(Quantity::Health),
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_indexed_and_keys_come_from_paths() {
        for (i, m) in MESSAGES.iter().enumerate() {
            assert_eq!(m.message.code as usize, i);
        }
        assert_eq!(message("snapshot").unwrap().message.direction, S2C);
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
