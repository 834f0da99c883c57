//! The `rt` dialect (document 003, with spec-notes), described once.
//!
//! Every packet is a 12-byte header and a payload. The document writes each packet as a C struct
//! that starts with the header; here a message's body is what follows the header. Where the
//! document's stated total size exceeds the sum of its fields (PLAYER_INPUT: 24 for 22,
//! AI_STATE: 30 for 28), the difference is described as trailing padding, so that the size check
//! holds traffic to the size the document states.
//!
//! Real servers depart from the document (spec-notes B); each departure is a [`Variant`] the
//! walker falls back to when the document's layout does not fit, and reports by its rule.

use super::rules::Rule;
use super::schema::{
    fixed_len, index_by_code, Case, Direction, Display, Field, Group, Message, Named, Node,
    Quantity, Role, Ty, Variant,
};
use Direction::{ClientToServer as C2S, ServerToClient as S2C};

/// The protocol identifier 0x5254 ('RT').
pub const MAGIC: u16 = 0x5254;
/// The magic as the document sends it (big-endian).
pub const MAGIC_BE: [u8; 2] = MAGIC.to_be_bytes();
/// The magic as the real server sends it (little-endian, spec-notes B).
pub const MAGIC_LE: [u8; 2] = MAGIC.to_le_bytes();
/// Largest payload the document allows ("Payload (variable, 0-1188 bytes)").
pub const MAX_PAYLOAD: usize = 1188;

pub const FLAG_RELIABLE: u8 = 0x01;
pub const FLAG_COMPRESSED: u8 = 0x02;
pub const FLAG_ENCRYPTED: u8 = 0x04;
pub const FLAG_FRAGMENTED: u8 = 0x08;
pub const FLAG_PRIORITY: u8 = 0x10;
/// Bits 5-7, "reserved for future use".
pub const RESERVED_FLAGS: u8 = 0xE0;

/// Packet types the pipeline treats specially.
pub const CLIENT_CONNECT: u8 = 0x01;
pub const SERVER_ACCEPT: u8 = 0x02;
pub const SERVER_REJECT: u8 = 0x03;
pub const CLIENT_DISCONNECT: u8 = 0x04;
pub const PLAYER_INPUT: u8 = 0x10;
pub const ACKNOWLEDGMENT: u8 = 0x70;

/// Types both sides send: CLIENT_DISCONNECT ("sent by either client or server"), ACKNOWLEDGMENT
/// (whoever received a reliable packet), and PLAYER_INPUT, which real servers relay to the other
/// clients. Their direction comes from which side is the server, never from the type.
pub const BOTH_WAYS: &[u8] = &[CLIENT_DISCONNECT, PLAYER_INPUT, ACKNOWLEDGMENT];

/// Types whose struct the document marks `FLAG_RELIABLE`.
pub const RELIABLE_TYPES: &[u8] = &[
    0x04, 0x21, 0x22, 0x2A, 0x2B, 0x2E, 0x40, 0x41, 0x43, 0x60, 0x61, 0x62, 0x63,
];

pub const PACKET_FLAGS: &[Named] = &[
    Named {
        value: FLAG_RELIABLE as u32,
        name: "reliable",
    },
    Named {
        value: FLAG_COMPRESSED as u32,
        name: "compressed",
    },
    Named {
        value: FLAG_ENCRYPTED as u32,
        name: "encrypted",
    },
    Named {
        value: FLAG_FRAGMENTED as u32,
        name: "fragmented",
    },
    Named {
        value: FLAG_PRIORITY as u32,
        name: "priority",
    },
];

/// Packet type names, built from [`MESSAGES`] at compile time. The header shows its packet type
/// through this table (rather than `Display::MessageType`) so that every view names rt types from
/// rt's own table without having to know the dialect.
pub const TYPE_NAMES: [Named; MESSAGES.len()] = {
    let mut table = [Named { value: 0, name: "" }; MESSAGES.len()];
    let mut i = 0;
    while i < MESSAGES.len() {
        table[i] = Named {
            value: MESSAGES[i].code as u32,
            name: MESSAGES[i].name,
        };
        i += 1;
    }
    table
};

/// The header's fields, its packet type shown by `$types`, followed by `$rest`: the header itself,
/// and CLIENT_CONNECT as real clients send it (a second copy of the header, then the document's
/// fields). The copy inside CLIENT_CONNECT shows its packet type in hex: naming it from
/// [`TYPE_NAMES`] would make [`MESSAGES`] depend on itself.
macro_rules! with_header {
    ($types:expr $(, $rest:expr)* $(,)?) => {
        &[
            Node::Field(Field::new("magic", "Magic", Ty::U16).display(Display::Hex).role(Role::Magic)),
            Node::Field(Field::new("packet_type", "Packet Type", Ty::U8).display($types).role(Role::MessageType)),
            Node::Field(Field::new("flags", "Flags", Ty::U8).display(Display::Flags(PACKET_FLAGS)).role(Role::Flags)),
            Node::Field(Field::new("sequence_number", "Sequence Number", Ty::U32).role(Role::Sequence)),
            Node::Field(Field::new("timestamp", "Timestamp (ms)", Ty::U32).role(Role::Timestamp)),
            $($rest),*
        ]
    };
}

/// The 12-byte packet header.
pub const HEADER: &[Node] = with_header!(Display::Enum(&TYPE_NAMES));
pub const HEADER_LEN: usize = fixed_len(HEADER);

pub const REJECT_CODES: &[Named] = &[
    Named {
        value: 0x00,
        name: "server_full",
    },
    Named {
        value: 0x01,
        name: "incompatible_protocol_version",
    },
    Named {
        value: 0x02,
        name: "invalid_player_name",
    },
    Named {
        value: 0x03,
        name: "banned_client",
    },
    Named {
        value: 0xFF,
        name: "generic_error",
    },
];

pub const DISCONNECT_REASONS: &[Named] = &[
    Named {
        value: 0x00,
        name: "normal_disconnect",
    },
    Named {
        value: 0x01,
        name: "timeout",
    },
    Named {
        value: 0x02,
        name: "kicked_by_server",
    },
    Named {
        value: 0x03,
        name: "client_error",
    },
    Named {
        value: 0xFF,
        name: "generic_error",
    },
];

pub const INPUT_FLAGS: &[Named] = &[
    Named {
        value: 0x0001,
        name: "move_up",
    },
    Named {
        value: 0x0002,
        name: "move_down",
    },
    Named {
        value: 0x0004,
        name: "move_left",
    },
    Named {
        value: 0x0008,
        name: "move_right",
    },
    Named {
        value: 0x0010,
        name: "fire_primary",
    },
    Named {
        value: 0x0020,
        name: "fire_secondary",
    },
    Named {
        value: 0x0040,
        name: "action_special",
    },
];

pub const ENTITY_TYPES: &[Named] = &[
    Named {
        value: 0x01,
        name: "player",
    },
    Named {
        value: 0x02,
        name: "enemy",
    },
    Named {
        value: 0x03,
        name: "enemy_boss",
    },
    Named {
        value: 0x04,
        name: "projectile_player",
    },
    Named {
        value: 0x05,
        name: "projectile_enemy",
    },
    Named {
        value: 0x06,
        name: "powerup",
    },
    Named {
        value: 0x07,
        name: "obstacle",
    },
    Named {
        value: 0x08,
        name: "bg_element",
    },
];

pub const DESTROY_REASONS: &[Named] = &[
    Named {
        value: 0x00,
        name: "killed_by_player",
    },
    Named {
        value: 0x01,
        name: "killed_by_enemy",
    },
    Named {
        value: 0x02,
        name: "out_of_bounds",
    },
    Named {
        value: 0x03,
        name: "timeout_despawn",
    },
    Named {
        value: 0x04,
        name: "level_transition",
    },
];

pub const COMPONENT_TYPES: &[Named] = &[
    Named {
        value: 0x01,
        name: "transform",
    },
    Named {
        value: 0x02,
        name: "velocity",
    },
    Named {
        value: 0x03,
        name: "health",
    },
    Named {
        value: 0x04,
        name: "weapon",
    },
    Named {
        value: 0x05,
        name: "ai",
    },
    Named {
        value: 0x06,
        name: "force",
    },
    Named {
        value: 0x07,
        name: "collision",
    },
    Named {
        value: 0x08,
        name: "sprite",
    },
    Named {
        value: 0x09,
        name: "animation",
    },
    Named {
        value: 0x0A,
        name: "powerup",
    },
    Named {
        value: 0x0B,
        name: "score",
    },
    Named {
        value: 0x0C,
        name: "input",
    },
    Named {
        value: 0x0D,
        name: "physics",
    },
    Named {
        value: 0x0E,
        name: "lifetime",
    },
    Named {
        value: 0x0F,
        name: "parent",
    },
];

pub const SCORE_REASONS: &[Named] = &[
    Named {
        value: 0x00,
        name: "enemy_kill",
    },
    Named {
        value: 0x01,
        name: "boss_kill",
    },
    Named {
        value: 0x02,
        name: "powerup_collected",
    },
    Named {
        value: 0x03,
        name: "level_completed",
    },
    Named {
        value: 0x04,
        name: "bonus_survival",
    },
    Named {
        value: 0x05,
        name: "took_damage",
    },
];

pub const POWERUP_TYPES: &[Named] = &[
    Named {
        value: 0x00,
        name: "speed_boost",
    },
    Named {
        value: 0x01,
        name: "weapon_upgrade",
    },
    Named {
        value: 0x02,
        name: "force",
    },
    Named {
        value: 0x03,
        name: "shield",
    },
    Named {
        value: 0x04,
        name: "extra_life",
    },
    Named {
        value: 0x05,
        name: "invincibility",
    },
];

/// FORCE_STATE's attachment points (the `ForceAttachmentPoint` enum).
pub const FORCE_ATTACHMENT_POINTS: &[Named] = &[
    Named {
        value: 0x00,
        name: "detached",
    },
    Named {
        value: 0x01,
        name: "front",
    },
    Named {
        value: 0x02,
        name: "back",
    },
    Named {
        value: 0x03,
        name: "orbiting",
    },
];

/// The Force component's attachment point, which the document numbers differently from
/// [`FORCE_ATTACHMENT_POINTS`] ("0=front, 1=back, 2=detached").
pub const FORCE_COMPONENT_ATTACHMENT: &[Named] = &[
    Named {
        value: 0,
        name: "front",
    },
    Named {
        value: 1,
        name: "back",
    },
    Named {
        value: 2,
        name: "detached",
    },
];

pub const AI_BEHAVIOR_TYPES: &[Named] = &[
    Named {
        value: 0x00,
        name: "idle",
    },
    Named {
        value: 0x01,
        name: "patrol",
    },
    Named {
        value: 0x02,
        name: "chase",
    },
    Named {
        value: 0x03,
        name: "flee",
    },
    Named {
        value: 0x04,
        name: "attack_pattern_1",
    },
    Named {
        value: 0x05,
        name: "attack_pattern_2",
    },
    Named {
        value: 0x06,
        name: "attack_pattern_3",
    },
    Named {
        value: 0x07,
        name: "boss_phase_1",
    },
    Named {
        value: 0x08,
        name: "boss_phase_2",
    },
    Named {
        value: 0x09,
        name: "boss_phase_3",
    },
    Named {
        value: 0x0A,
        name: "kamikaze",
    },
];

const fn field(name: &'static str, label: &'static str, ty: Ty) -> Node {
    Node::Field(Field::new(name, label, ty))
}

/// A field that measures `quantity` of its entity (see [`Quantity`]).
const fn measured(name: &'static str, label: &'static str, ty: Ty, quantity: Quantity) -> Node {
    Node::Field(Field::new(name, label, ty).quantity(quantity))
}

const fn u8f(name: &'static str, label: &'static str) -> Node {
    field(name, label, Ty::U8)
}

const fn u16f(name: &'static str, label: &'static str) -> Node {
    field(name, label, Ty::U16)
}

const fn i16f(name: &'static str, label: &'static str) -> Node {
    field(name, label, Ty::I16)
}

const fn u32f(name: &'static str, label: &'static str) -> Node {
    field(name, label, Ty::U32)
}

const fn enum8(name: &'static str, label: &'static str, table: &'static [Named]) -> Node {
    Node::Field(Field::new(name, label, Ty::U8).display(Display::Enum(table)))
}

/// A fixed `char name[len]`, NUL-terminated or NUL-padded.
const fn chars(name: &'static str, label: &'static str, len: u16) -> Node {
    Node::Field(
        Field::new(name, label, Ty::U8)
            .array(len)
            .display(Display::Text),
    )
}

/// Bytes the document counts in its stated size but gives no field for.
const fn padding(len: u16) -> Node {
    Node::Field(
        Field::new("padding", "Padding (the document's stated size)", Ty::U8)
            .array(len)
            .display(Display::Hex),
    )
}

const fn player_id(label: &'static str) -> Node {
    Node::Field(Field::new("player_id", label, Ty::U32).role(Role::PlayerId))
}

const fn entity_id() -> Node {
    Node::Field(Field::new("entity_id", "Entity ID", Ty::U32).role(Role::EntityId))
}

const fn entity_type() -> Node {
    Node::Field(
        Field::new("entity_type", "Entity Type", Ty::U8)
            .display(Display::Enum(ENTITY_TYPES))
            .role(Role::EntityType),
    )
}

const fn client_id() -> Node {
    u32f("client_id", "Client ID")
}

const fn world_tick() -> Node {
    u32f("world_tick", "World Tick")
}

const fn data_size() -> Node {
    u8f("data_size", "Data Size")
}

const fn component_type() -> Field {
    Field::new("component_type", "Component Type", Ty::U8).display(Display::Enum(COMPONENT_TYPES))
}

/// The type of the one component a message adds or removes (the list shows it).
const fn the_component_type() -> Field {
    component_type().role(Role::ComponentType)
}

/// `entity_count` entries of `item`.
const fn entries(item: Group) -> Node {
    Node::Repeat {
        count: Field::new("entity_count", "Entity Count", Ty::U16).role(Role::EntityCount),
        item,
    }
}

/// Declares a component's data structure once, as the entry of its snapshots (`entity_id`
/// first) and as its case in COMPONENT_ADD and ENTITY_FULL_STATE (`data_size` first).
macro_rules! component {
    ($entry:ident, $case:ident, $code:literal, $name:literal, $label:literal, [$($node:expr),* $(,)?]) => {
        #[allow(dead_code)] // The Force component has no snapshot type.
        const $entry: Group = Group { name: "entities", filter: "entity", label: "Entity", nodes: &[entity_id(), $($node),*] };
        const $case: Case = Case {
            value: $code,
            group: Group { name: $name, filter: $name, label: $label, nodes: &[data_size(), $($node),*] },
        };
    };
}

component!(
    TRANSFORM_ENTRY,
    TRANSFORM_CASE,
    0x01,
    "transform",
    "Transform",
    [
        measured("pos_x", "Position X", Ty::I16, Quantity::PosX),
        measured("pos_y", "Position Y", Ty::I16, Quantity::PosY),
        u16f("rotation", "Rotation (0-65535 = 0-360°)"),
        u16f("scale", "Scale (1000 = 1.0x)"),
    ]
);
component!(
    VELOCITY_ENTRY,
    VELOCITY_CASE,
    0x02,
    "velocity",
    "Velocity",
    [
        measured("vel_x", "Velocity X", Ty::I16, Quantity::VelX),
        measured("vel_y", "Velocity Y", Ty::I16, Quantity::VelY),
        i16f("acceleration_x", "Acceleration X"),
        i16f("acceleration_y", "Acceleration Y"),
    ]
);
component!(
    HEALTH_ENTRY,
    HEALTH_CASE,
    0x03,
    "health",
    "Health",
    [
        measured("current_health", "Current Health", Ty::U8, Quantity::Health),
        u8f("max_health", "Max Health"),
        u8f("current_shield", "Current Shield"),
        u8f("max_shield", "Max Shield"),
    ]
);
component!(
    WEAPON_ENTRY,
    WEAPON_CASE,
    0x04,
    "weapon",
    "Weapon",
    [
        u8f("weapon_type", "Weapon Type"),
        u8f("ammo_count", "Ammo Count"),
        u16f("cooldown_remaining", "Cooldown Remaining (ms)"),
        u8f("power_level", "Power Level (1-5)"),
    ]
);
component!(
    AI_ENTRY,
    AI_CASE,
    0x05,
    "ai",
    "AI",
    [
        u8f("ai_state", "AI State"),
        enum8("behavior_type", "Behavior Type", AI_BEHAVIOR_TYPES),
        u32f("target_entity_id", "Target Entity ID (0 = none)"),
        u16f("state_timer", "State Timer (ms)"),
    ]
);
component!(
    FORCE_ENTRY,
    FORCE_CASE,
    0x06,
    "force",
    "Force",
    [
        u32f("parent_ship_id", "Parent Ship ID"),
        enum8(
            "attachment_point",
            "Attachment Point",
            FORCE_COMPONENT_ATTACHMENT
        ),
        u8f("force_level", "Force Level"),
        u8f("charge_state", "Charge State"),
    ]
);
// The document gives the animation component's size (7 bytes) but not its fields.
component!(
    ANIMATION_ENTRY,
    ANIMATION_CASE,
    0x09,
    "animation",
    "Animation",
    [Node::Field(
        Field::new("animation_data", "Animation Data", Ty::U8)
            .array(7)
            .display(Display::Hex)
    ),]
);

/// Weapon entries as the real server sends them (spec-notes B).
const WEAPON_ENTRY_REAL: Group = Group {
    name: "entities",
    filter: "entity",
    label: "Entity",
    nodes: &[
        entity_id(),
        u16f("fire_rate_ms", "Fire Rate (ms)"),
        u8f("damage", "Damage"),
        u8f("projectile_type", "Projectile Type"),
        u8f("ammo", "Ammo (255 = infinite)"),
    ],
};

/// One component with its data, `tag` its type, as COMPONENT_ADD and ENTITY_FULL_STATE carry it.
/// Components the document gives no structure for leave the rest undecoded.
const fn component(tag: Field) -> Node {
    Node::Switch {
        tag,
        cases: &[
            TRANSFORM_CASE,
            VELOCITY_CASE,
            HEALTH_CASE,
            WEAPON_CASE,
            AI_CASE,
            FORCE_CASE,
            ANIMATION_CASE,
        ],
        unknown: Rule::RtUnknownComponent,
    }
}

const CLIENT_CONNECT_BODY: &[Node] = &[
    u8f("protocol_version", "Protocol Version"),
    chars("player_name", "Player Name", 32),
    client_id(),
];

/// CLIENT_CONNECT as real clients send it: the whole 49-byte struct, header copy included.
const CLIENT_CONNECT_WITH_HEADER: &[Node] = with_header!(
    Display::Hex,
    u8f("protocol_version", "Protocol Version"),
    chars("player_name", "Player Name", 32),
    client_id(),
);

const PLAYER_INPUT_BODY: &[Node] = &[
    player_id("Player ID"),
    Node::Field(
        Field::new("input_state", "Input State", Ty::U16).display(Display::Flags(INPUT_FLAGS)),
    ),
    u16f("aim_direction_x", "Aim Direction X"),
    u16f("aim_direction_y", "Aim Direction Y"),
    padding(2),
];

/// PLAYER_INPUT as real clients send it (spec-notes B): 10 bytes, signed aim.
const PLAYER_INPUT_REAL: &[Node] = &[
    player_id("Player ID"),
    Node::Field(
        Field::new("input_state", "Input State", Ty::U16).display(Display::Flags(INPUT_FLAGS)),
    ),
    i16f("aim_direction_x", "Aim Direction X"),
    i16f("aim_direction_y", "Aim Direction Y"),
];

const TRANSFORM_SNAPSHOT_BODY: &[Node] = &[world_tick(), entries(TRANSFORM_ENTRY)];
const VELOCITY_SNAPSHOT_BODY: &[Node] = &[world_tick(), entries(VELOCITY_ENTRY)];
const HEALTH_SNAPSHOT_BODY: &[Node] = &[world_tick(), entries(HEALTH_ENTRY)];
const WEAPON_SNAPSHOT_BODY: &[Node] = &[world_tick(), entries(WEAPON_ENTRY)];
const AI_SNAPSHOT_BODY: &[Node] = &[world_tick(), entries(AI_ENTRY)];
const ANIMATION_SNAPSHOT_BODY: &[Node] = &[world_tick(), entries(ANIMATION_ENTRY)];

/// The same snapshot without its leading `world_tick` (spec-notes B).
const fn without_world_tick(body: &'static [Node]) -> &'static [Node] {
    body.split_at(1).1
}

const ACKNOWLEDGMENT_BODY: &[Node] = &[
    Node::Field(
        Field::new("acked_sequence", "Acknowledged Sequence", Ty::U32).role(Role::AckSequence),
    ),
    u32f("received_timestamp", "Received Timestamp"),
    client_id(),
];

const PING_BODY: &[Node] = &[
    Node::Field(Field::new("client_timestamp", "Client Timestamp", Ty::U32).role(Role::ClientTime)),
    client_id(),
];

/// The body without its last field (`client_id`), as real peers send ACK and PING.
const fn without_client_id(body: &'static [Node]) -> &'static [Node] {
    body.split_at(body.len() - 1).0
}

/// A message with the document's layout only (shorter than `Message::new` in the tables below).
const fn msg(
    code: u8,
    name: &'static str,
    short: &'static str,
    direction: Direction,
    section: &'static str,
    body: &'static [Node],
) -> Message {
    Message::new(code, name, short, direction, section, body)
}

/// A component snapshot, which real servers send without `world_tick`.
macro_rules! snapshot {
    ($code:literal, $name:literal, $short:literal, $body:expr) => {
        snapshot!($code, $name, $short, $body, without_world_tick($body))
    };
    ($code:literal, $name:literal, $short:literal, $body:expr, $real:expr) => {
        Message {
            variants: &[Variant {
                extends_body: false,
                nodes: $real,
                rule: Rule::RtSnapshotNoWorldTick,
            }],
            ..msg($code, $name, $short, S2C, concat!("003 ", $name), $body)
        }
    };
}

/// Every packet type of document 003 and the two real servers add, in code order.
pub const MESSAGES: &[Message] = &[
    Message {
        variants: &[Variant {
            extends_body: false,
            nodes: CLIENT_CONNECT_WITH_HEADER,
            rule: Rule::RtConnectHeaderCopy,
        }],
        ..msg(
            CLIENT_CONNECT,
            "CLIENT_CONNECT",
            "connect",
            C2S,
            "003 CLIENT_CONNECT",
            CLIENT_CONNECT_BODY,
        )
    },
    msg(
        SERVER_ACCEPT,
        "SERVER_ACCEPT",
        "accept",
        S2C,
        "003 SERVER_ACCEPT",
        &[
            u32f("assigned_player_id", "Assigned Player ID"),
            u8f("max_players", "Max Players"),
            u32f("game_instance_id", "Game Instance ID"),
            u16f("server_tickrate", "Server Tick Rate (Hz)"),
        ],
    ),
    msg(
        SERVER_REJECT,
        "SERVER_REJECT",
        "reject",
        S2C,
        "003 SERVER_REJECT",
        &[
            enum8("reject_code", "Reject Code", REJECT_CODES),
            chars("reason_message", "Reason Message", 64),
        ],
    ),
    msg(
        CLIENT_DISCONNECT,
        "CLIENT_DISCONNECT",
        "disconnect",
        C2S,
        "003 CLIENT_DISCONNECT",
        &[
            client_id(),
            // No `Role::ReasonCode`: that role means rtype's reason table to the views.
            enum8("reason", "Reason", DISCONNECT_REASONS),
        ],
    ),
    msg(
        0x05,
        "HEARTBEAT",
        "heartbeat",
        C2S,
        "003 HEARTBEAT",
        &[player_id("Player ID")],
    ),
    Message {
        variants: &[Variant {
            extends_body: false,
            nodes: PLAYER_INPUT_REAL,
            rule: Rule::RtInput10Byte,
        }],
        ..msg(
            PLAYER_INPUT,
            "PLAYER_INPUT",
            "input",
            C2S,
            "003 PLAYER_INPUT",
            PLAYER_INPUT_BODY,
        )
    },
    Message {
        seen_rule: Some(Rule::RtUndocumentedType),
        ..msg(
            0x11,
            "PLAYER_IS_READY",
            "ready",
            C2S,
            "spec-notes B",
            &[player_id("Player ID")],
        )
    },
    Message {
        seen_rule: Some(Rule::RtUndocumentedType),
        ..msg(
            0x12,
            "PLAYER_NOT_READY",
            "not_ready",
            C2S,
            "spec-notes B",
            &[player_id("Player ID")],
        )
    },
    msg(
        0x21,
        "ENTITY_SPAWN",
        "spawn",
        S2C,
        "003 ENTITY_SPAWN",
        &[
            entity_id(),
            entity_type(),
            measured("position_x", "Position X", Ty::U16, Quantity::PosX),
            measured("position_y", "Position Y", Ty::U16, Quantity::PosY),
            u8f("mob_variant", "Mob Variant"),
            measured("initial_health", "Initial Health", Ty::U8, Quantity::Health),
            measured(
                "initial_velocity_x",
                "Initial Velocity X",
                Ty::U16,
                Quantity::VelX,
            ),
            measured(
                "initial_velocity_y",
                "Initial Velocity Y",
                Ty::U16,
                Quantity::VelY,
            ),
            u8f("is_playable", "Is Playable (0 = NPC)"),
        ],
    ),
    msg(
        0x22,
        "ENTITY_DESTROY",
        "destroy",
        S2C,
        "003 ENTITY_DESTROY",
        &[
            entity_id(),
            enum8("destroy_reason", "Destroy Reason", DESTROY_REASONS),
            u16f("final_position_x", "Final Position X"),
            u16f("final_position_y", "Final Position Y"),
        ],
    ),
    snapshot!(
        0x24,
        "TRANSFORM_SNAPSHOT",
        "transform_snapshot",
        TRANSFORM_SNAPSHOT_BODY
    ),
    snapshot!(
        0x25,
        "VELOCITY_SNAPSHOT",
        "velocity_snapshot",
        VELOCITY_SNAPSHOT_BODY
    ),
    snapshot!(
        0x26,
        "HEALTH_SNAPSHOT",
        "health_snapshot",
        HEALTH_SNAPSHOT_BODY
    ),
    snapshot!(
        0x27,
        "WEAPON_SNAPSHOT",
        "weapon_snapshot",
        WEAPON_SNAPSHOT_BODY,
        &[entries(WEAPON_ENTRY_REAL)]
    ),
    snapshot!(0x28, "AI_SNAPSHOT", "ai_snapshot", AI_SNAPSHOT_BODY),
    snapshot!(
        0x29,
        "ANIMATION_SNAPSHOT",
        "animation_snapshot",
        ANIMATION_SNAPSHOT_BODY
    ),
    msg(
        0x2A,
        "COMPONENT_ADD",
        "component_add",
        S2C,
        "003 COMPONENT_ADD",
        &[entity_id(), component(the_component_type())],
    ),
    msg(
        0x2B,
        "COMPONENT_REMOVE",
        "component_remove",
        S2C,
        "003 COMPONENT_REMOVE",
        &[entity_id(), Node::Field(the_component_type())],
    ),
    msg(
        0x2C,
        "TRANSFORM_SNAPSHOT_DELTA",
        "transform_delta",
        S2C,
        "003 TRANSFORM_SNAPSHOT_DELTA",
        &[
            world_tick(),
            u32f("base_tick", "Base Tick"),
            entries(TRANSFORM_ENTRY),
        ],
    ),
    msg(
        0x2D,
        "HEALTH_SNAPSHOT_DELTA",
        "health_delta",
        S2C,
        "003 HEALTH_SNAPSHOT_DELTA",
        &[
            world_tick(),
            u32f("base_tick", "Base Tick"),
            entries(HEALTH_ENTRY),
        ],
    ),
    msg(
        0x2E,
        "ENTITY_FULL_STATE",
        "full_state",
        S2C,
        "003 ENTITY_FULL_STATE",
        &[
            entity_id(),
            entity_type(),
            Node::Repeat {
                count: Field::new("component_count", "Component Count", Ty::U8),
                item: Group {
                    name: "components",
                    filter: "component",
                    label: "Component",
                    nodes: &[component(component_type())],
                },
            },
        ],
    ),
    msg(
        0x40,
        "PLAYER_HIT",
        "player_hit",
        S2C,
        "003 PLAYER_HIT",
        &[
            player_id("Player ID"),
            u32f("attacker_id", "Attacker ID"),
            u8f("damage", "Damage"),
            u8f("remaining_health", "Remaining Health"),
            u8f("remaining_shield", "Remaining Shield"),
            i16f("hit_pos_x", "Hit Position X"),
            i16f("hit_pos_y", "Hit Position Y"),
        ],
    ),
    msg(
        0x41,
        "PLAYER_DEATH",
        "player_death",
        S2C,
        "003 PLAYER_DEATH",
        &[
            player_id("Player ID"),
            u32f("killer_id", "Killer ID"),
            u32f("score_before_death", "Score Before Death"),
            i16f("death_pos_x", "Death Position X"),
            i16f("death_pos_y", "Death Position Y"),
        ],
    ),
    msg(
        0x42,
        "SCORE_UPDATE",
        "score_update",
        S2C,
        "003 SCORE_UPDATE",
        &[
            player_id("Player ID"),
            u32f("new_score", "New Score"),
            i16f("score_delta", "Score Delta"),
            enum8("reason", "Reason", SCORE_REASONS),
        ],
    ),
    msg(
        0x43,
        "POWERUP_PICKUP",
        "powerup_pickup",
        S2C,
        "003 POWERUP_PICKUP",
        &[
            player_id("Player ID"),
            u32f("powerup_id", "Powerup ID"),
            enum8("powerup_type", "Powerup Type", POWERUP_TYPES),
            u8f("duration", "Duration (s, 0 = permanent)"),
        ],
    ),
    msg(
        0x44,
        "WEAPON_FIRE",
        "weapon_fire",
        S2C,
        "003 WEAPON_FIRE",
        &[
            u32f("shooter_id", "Shooter ID"),
            u32f("projectile_id", "Projectile ID"),
            i16f("origin_x", "Origin X"),
            i16f("origin_y", "Origin Y"),
            i16f("direction_x", "Direction X (×1000)"),
            i16f("direction_y", "Direction Y (×1000)"),
            u8f("weapon_type", "Weapon Type"),
        ],
    ),
    msg(
        0x50,
        "VISUAL_EFFECT",
        "visual_effect",
        S2C,
        "003 VISUAL_EFFECT",
        &[
            u8f("effect_type", "Effect Type"),
            i16f("pos_x", "Position X"),
            i16f("pos_y", "Position Y"),
            u16f("duration_ms", "Duration (ms)"),
            u8f("scale", "Scale (100 = 1.0x)"),
            u8f("color_tint_r", "Color Tint R"),
            u8f("color_tint_g", "Color Tint G"),
            u8f("color_tint_b", "Color Tint B"),
        ],
    ),
    msg(
        0x51,
        "AUDIO_EFFECT",
        "audio_effect",
        S2C,
        "003 AUDIO_EFFECT",
        &[
            u8f("effect_type", "Effect Type"),
            i16f("pos_x", "Position X"),
            i16f("pos_y", "Position Y"),
            u8f("volume", "Volume"),
            u8f("pitch", "Pitch (100 = normal)"),
        ],
    ),
    msg(
        0x52,
        "PARTICLE_SPAWN",
        "particle_spawn",
        S2C,
        "003 PARTICLE_SPAWN",
        &[
            u16f("particle_system_id", "Particle System ID"),
            i16f("pos_x", "Position X"),
            i16f("pos_y", "Position Y"),
            i16f("velocity_x", "Velocity X"),
            i16f("velocity_y", "Velocity Y"),
            u16f("particle_count", "Particle Count"),
            u16f("lifetime_ms", "Lifetime (ms)"),
            u8f("color_start_r", "Start Color R"),
            u8f("color_start_g", "Start Color G"),
            u8f("color_start_b", "Start Color B"),
            u8f("color_end_r", "End Color R"),
            u8f("color_end_g", "End Color G"),
            u8f("color_end_b", "End Color B"),
        ],
    ),
    msg(
        0x60,
        "GAME_START",
        "game_start",
        S2C,
        "003 GAME_START",
        &[
            u32f("game_instance_id", "Game Instance ID"),
            u8f("player_count", "Player Count"),
            u32f("player_id_1", "Player ID 1"),
            u32f("player_id_2", "Player ID 2"),
            u32f("player_id_3", "Player ID 3"),
            u32f("player_id_4", "Player ID 4"),
            u8f("level_id", "Level ID"),
            u8f("difficulty", "Difficulty"),
        ],
    ),
    msg(
        0x61,
        "GAME_END",
        "game_end",
        S2C,
        "003 GAME_END",
        &[
            u8f("end_reason", "End Reason"),
            u32f("final_score_1", "Final Score 1"),
            u32f("final_score_2", "Final Score 2"),
            u32f("final_score_3", "Final Score 3"),
            u32f("final_score_4", "Final Score 4"),
            u8f("winner_id", "Winner ID"),
            u32f("play_time", "Play Time (s)"),
        ],
    ),
    msg(
        0x62,
        "LEVEL_COMPLETE",
        "level_complete",
        S2C,
        "003 LEVEL_COMPLETE",
        &[
            u8f("completed_level", "Completed Level"),
            u8f("next_level", "Next Level (0xFF = game end)"),
            u32f("bonus_score", "Bonus Score"),
            u16f("completion_time", "Completion Time (s)"),
        ],
    ),
    msg(
        0x63,
        "LEVEL_START",
        "level_start",
        S2C,
        "003 LEVEL_START",
        &[
            u8f("level_id", "Level ID"),
            chars("level_name", "Level Name", 32),
            u16f("estimated_duration", "Estimated Duration (s)"),
        ],
    ),
    msg(
        0x64,
        "FORCE_STATE",
        "force_state",
        S2C,
        "003 FORCE_STATE",
        &[
            u32f("force_entity_id", "Force Entity ID"),
            u32f("parent_ship_id", "Parent Ship ID (0 = detached)"),
            enum8(
                "attachment_point",
                "Attachment Point",
                FORCE_ATTACHMENT_POINTS,
            ),
            u8f("power_level", "Power Level (1-5)"),
            u8f("charge_percentage", "Charge (%)"),
            u8f("is_firing", "Is Firing"),
        ],
    ),
    msg(
        0x65,
        "AI_STATE",
        "ai_state",
        S2C,
        "003 AI_STATE",
        &[
            entity_id(),
            u8f("current_state", "Current State"),
            enum8("behavior_type", "Behavior Type", AI_BEHAVIOR_TYPES),
            u32f("target_entity_id", "Target Entity ID (0 = none)"),
            i16f("waypoint_x", "Waypoint X"),
            i16f("waypoint_y", "Waypoint Y"),
            u16f("state_timer", "State Timer"),
            padding(2),
        ],
    ),
    Message {
        variants: &[Variant {
            extends_body: false,
            nodes: without_client_id(ACKNOWLEDGMENT_BODY),
            rule: Rule::RtAckNoClientId,
        }],
        ..msg(
            ACKNOWLEDGMENT,
            "ACKNOWLEDGMENT",
            "ack",
            C2S,
            "003 ACKNOWLEDGMENT",
            ACKNOWLEDGMENT_BODY,
        )
    },
    Message {
        variants: &[Variant {
            extends_body: false,
            nodes: without_client_id(PING_BODY),
            rule: Rule::RtPingNoClientId,
        }],
        ..msg(0x71, "PING", "ping", C2S, "003 PING", PING_BODY)
    },
    msg(
        0x72,
        "PONG",
        "pong",
        S2C,
        "003 PONG",
        &[
            Node::Field(
                Field::new("client_timestamp", "Client Timestamp", Ty::U32).role(Role::ClientTime),
            ),
            u32f("server_timestamp", "Server Timestamp"),
        ],
    ),
];

/// The message with this packet type, if the document (or spec-notes) defines one.
pub fn message(code: u8) -> Option<&'static Message> {
    MESSAGE_BY_CODE[code as usize].map(|i| &MESSAGES[i as usize])
}

const MESSAGE_BY_CODE: [Option<u8>; 256] = index_by_code(MESSAGES);

/// Whether the document marks packets of this type `FLAG_RELIABLE`.
pub fn documented_reliable(code: u8) -> bool {
    RELIABLE_TYPES.contains(&code)
}

/// Whether both sides send packets of this type.
pub fn both_ways(code: u8) -> bool {
    BOTH_WAYS.contains(&code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::schema::{field_range, nodes_fixed_size};

    #[test]
    fn header_layout_and_sizes_match_the_document() {
        assert_eq!(HEADER_LEN, 12);
        assert_eq!(field_range(HEADER, Role::Magic), 0..2);
        assert_eq!(field_range(HEADER, Role::MessageType), 2..3);
        assert_eq!(field_range(HEADER, Role::Flags), 3..4);
        assert_eq!(field_range(HEADER, Role::Sequence), 4..8);
        assert_eq!(field_range(HEADER, Role::Timestamp), 8..12);
        // The document's stated total sizes, header included.
        for (code, total) in [
            (0x01, 49),
            (0x02, 23),
            (0x03, 77),
            (0x04, 17),
            (0x05, 16),
            (0x10, 24),
            (0x21, 28),
            (0x22, 21),
            (0x2B, 17),
            (0x40, 27),
            (0x41, 28),
            (0x42, 23),
            (0x43, 22),
            (0x44, 29),
            (0x50, 23),
            (0x51, 19),
            (0x52, 32),
            (0x60, 35),
            (0x61, 34),
            (0x62, 20),
            (0x63, 47),
            (0x64, 24),
            (0x65, 30),
            (0x70, 24),
            (0x71, 20),
            (0x72, 20),
        ] {
            let m = message(code).unwrap();
            assert_eq!(
                m.fixed_size().map(|s| s + HEADER_LEN),
                Some(total),
                "{}",
                m.name
            );
        }
        assert_eq!(nodes_fixed_size(CLIENT_CONNECT_WITH_HEADER), Some(49));
        assert_eq!(nodes_fixed_size(PLAYER_INPUT_REAL), Some(10));
        assert_eq!(
            nodes_fixed_size(without_client_id(ACKNOWLEDGMENT_BODY)),
            Some(8)
        );
        assert_eq!(nodes_fixed_size(without_client_id(PING_BODY)), Some(4));
    }

    #[test]
    fn type_names_follow_the_table() {
        assert_eq!(TYPE_NAMES.len(), MESSAGES.len());
        assert_eq!(message(0x11).unwrap().name, "PLAYER_IS_READY");
        assert!(message(0x23).is_none());
        assert!(TYPE_NAMES
            .iter()
            .any(|n| n.value == 0x44 && n.name == "WEAPON_FIRE"));
        assert_eq!(MAGIC_BE, [0x52, 0x54]);
        assert_eq!(MAGIC_LE, [0x54, 0x52]);
    }
}
