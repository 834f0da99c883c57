//! The `rtype` dialect (documents 002 and 001, with spec-notes), described once.

use super::rules::Rule;
use super::schema::{
    fixed_len, index_by_code, Case, Check, Direction, Display, Field, Group, Message, Named, Node,
    Quantity, Role, Ty, Variant,
};
use Direction::{ClientToServer as C2S, ServerToClient as S2C};

/// The four bytes every rtype datagram starts with.
pub const MAGIC: [u8; 4] = [0xA3, 0x5F, 0xC8, 0x1D];
/// The CRC32 footer's width.
pub const CRC_LEN: usize = 4;
/// Bit 7 of the version byte: the payload is LZ4-compressed.
pub const COMPRESSED_BIT: u8 = 0x80;
/// The protocol version the documents define.
pub const VERSION: u8 = 1;
/// Payloads of this size or less must not be compressed (002 §9; spec-notes A).
pub const COMPRESS_THRESHOLD: usize = 64;
/// Message codes the pipeline treats specially.
pub const SNAPSHOT: u8 = 0x14;
pub const SNAPSHOT_CHUNK: u8 = 0x21;
pub const LEVEL_INIT: u8 = 0x30;
pub const LEVEL_EVENT: u8 = 0x32;
/// Packet type values of the header.
pub const PACKET_CLIENT: u8 = 0x01;
pub const PACKET_SERVER: u8 = 0x02;

const fn hex(name: &'static str, label: &'static str, ty: Ty) -> Field {
    Field::new(name, label, ty).display(Display::Hex)
}

pub const PACKET_TYPES: &[Named] = &[
    Named {
        value: 1,
        name: "client_to_server",
    },
    Named {
        value: 2,
        name: "server_to_client",
    },
];

const VERSION_BITS: &[Named] = &[
    Named {
        value: 0x80,
        name: "compressed",
    },
    Named {
        value: 0x7F,
        name: "version",
    },
];

/// The 17-byte header of document 002 §4.
pub const HEADER: &[Node] = &[
    Node::Field(hex("magic", "Magic", Ty::U32).role(Role::Magic)),
    Node::Field(
        Field::new("version_byte", "Version", Ty::U8)
            .display(Display::Flags(VERSION_BITS))
            .role(Role::VersionByte),
    ),
    Node::Field(
        Field::new("packet_type", "Packet Type", Ty::U8)
            .display(Display::Enum(PACKET_TYPES))
            .role(Role::PacketType),
    ),
    Node::Field(
        hex("msg_type", "Message Type", Ty::U8)
            .display(Display::MessageType)
            .role(Role::MessageType),
    ),
    Node::Field(Field::new("sequence", "Sequence ID", Ty::U16).role(Role::Sequence)),
    Node::Field(Field::new("tick", "Tick ID", Ty::U32).role(Role::Tick)),
    Node::Field(Field::new("payload_len", "Payload Len", Ty::U16).role(Role::PayloadLen)),
    Node::Field(Field::new("orig_size", "Orig. Size", Ty::U16).role(Role::OrigSize)),
];

/// The older 15-byte header (spec-notes B): the same fields without Orig. Size.
pub const HEADER_15: &[Node] = HEADER.split_at(HEADER.len() - 1).0;
pub const HEADER_LEN: usize = fixed_len(HEADER);
pub const HEADER_15_LEN: usize = fixed_len(HEADER_15);

pub const REASON_CODES: &[Named] = &[
    Named {
        value: 0x00,
        name: "unknown",
    },
    Named {
        value: 0x01,
        name: "requested_by_client",
    },
    Named {
        value: 0x10,
        name: "inactivity",
    },
    Named {
        value: 0x11,
        name: "protocol_violation",
    },
    Named {
        value: 0x12,
        name: "overflow_spam",
    },
    Named {
        value: 0x13,
        name: "unauthorized_action",
    },
    Named {
        value: 0x20,
        name: "cheating_detected",
    },
    Named {
        value: 0x21,
        name: "manual_ban",
    },
    Named {
        value: 0x30,
        name: "server_shutdown",
    },
    Named {
        value: 0x31,
        name: "server_restart",
    },
];

/// Input flag bits as the reference game uses them (spec-notes A).
pub const INPUT_FLAGS: &[Named] = &[
    Named {
        value: 0x0001,
        name: "up",
    },
    Named {
        value: 0x0002,
        name: "down",
    },
    Named {
        value: 0x0004,
        name: "left",
    },
    Named {
        value: 0x0008,
        name: "right",
    },
    Named {
        value: 0x0010,
        name: "fire",
    },
    Named {
        value: 0x0020,
        name: "charge1",
    },
    Named {
        value: 0x0040,
        name: "charge2",
    },
    Named {
        value: 0x0080,
        name: "charge3",
    },
    Named {
        value: 0x0100,
        name: "charge4",
    },
    Named {
        value: 0x0200,
        name: "charge5",
    },
];
/// Input flag bits the game leaves unused.
pub const INPUT_UNUSED_BITS: u32 = 0xFC00;

pub const STATUS_FLAGS: &[Named] = &[Named {
    value: 0x02,
    name: "invincible",
}];

pub const EVENT_TYPES: &[Named] = &[
    Named {
        value: 1,
        name: "set_scroll",
    },
    Named {
        value: 2,
        name: "set_background",
    },
    Named {
        value: 3,
        name: "set_music",
    },
    Named {
        value: 4,
        name: "set_camera_bounds",
    },
    Named {
        value: 5,
        name: "gate_open",
    },
    Named {
        value: 6,
        name: "gate_close",
    },
];

const SCROLL_MODES: &[Named] = &[
    Named {
        value: 0,
        name: "constant",
    },
    Named {
        value: 1,
        name: "stopped",
    },
    Named {
        value: 2,
        name: "curve",
    },
];

const fn reason() -> Node {
    Node::Field(
        hex("reason", "Reason Code", Ty::U8)
            .display(Display::Enum(REASON_CODES))
            .role(Role::ReasonCode)
            .check(Check::Known(Rule::RtypeReason)),
    )
}

const ACK: &[Node] = &[
    Node::Field(
        Field::new("ack_sequence", "Acknowledged Sequence ID", Ty::U16).role(Role::AckSequence),
    ),
    Node::Field(
        hex("ack_msg_type", "Acknowledged Message Type", Ty::U8)
            .display(Display::MessageType)
            .role(Role::AckMessageType),
    ),
];

const CLIENT_TIME: &[Node] = &[Node::Field(
    Field::new("client_time", "Client Time", Ty::U32).role(Role::ClientTime),
)];

const fn player_id(label: &'static str) -> Node {
    Node::Field(Field::new("player_id", label, Ty::U32).role(Role::PlayerId))
}

const fn str8(name: &'static str, label: &'static str) -> Node {
    Node::Field(Field::new(name, label, Ty::Str8))
}

const fn f32(name: &'static str, label: &'static str) -> Node {
    Node::Field(Field::new(name, label, Ty::F32))
}

const fn input_float(name: &'static str, label: &'static str) -> Node {
    Node::Field(Field::new(name, label, Ty::F32).check(Check::Finite(Rule::RtypeInputNonFinite)))
}

/// The entity blocks shared by SERVER_SNAPSHOT and SERVER_SNAPSHOT_CHUNK (001 §6.1).
const ENTITY: Group = Group {
    name: "entities",
    filter: "entity",
    label: "Entity",
    nodes: &[
        Node::Field(Field::new("id", "Entity ID", Ty::U32).role(Role::EntityId)),
        Node::Field(hex("update_mask", "Update Mask", Ty::U16).role(Role::UpdateMask)),
        Node::Masked,
    ],
};

const fn entities(count_name: &'static str, count_label: &'static str) -> Node {
    Node::Repeat {
        count: Field::new(count_name, count_label, Ty::U16).role(Role::EntityCount),
        item: ENTITY,
    }
}

/// A LevelEvent case carrying one identifier string.
macro_rules! id_event {
    ($case:literal, $name:literal, $field:literal, $label:literal) => {
        Case {
            value: $case,
            group: Group {
                name: $name,
                filter: $name,
                label: $name,
                nodes: &[str8($field, $label)],
            },
        }
    };
}

const LEVEL_EVENT_BODY: &[Node] = &[Node::Switch {
    tag: Field::new("event_type", "Event Type", Ty::U8)
        .display(Display::Enum(EVENT_TYPES))
        .role(Role::EventType),
    unknown: Rule::RtypeUnknownEvent,
    cases: &[
        Case {
            value: 1,
            group: Group {
                name: "set_scroll",
                filter: "set_scroll",
                label: "set_scroll",
                nodes: &[
                    Node::Field(
                        Field::new("mode", "Mode", Ty::U8).display(Display::Enum(SCROLL_MODES)),
                    ),
                    f32("speed_x", "Speed X"),
                    Node::Repeat {
                        count: Field::new("keyframe_count", "Keyframe Count", Ty::U8),
                        item: Group {
                            name: "keyframes",
                            filter: "keyframe",
                            label: "Keyframe",
                            nodes: &[
                                Node::Field(
                                    Field::new("time", "Time", Ty::F32)
                                        .check(Check::Ascending(Rule::RtypeUnsortedKeyframes)),
                                ),
                                f32("speed_x", "Speed X"),
                            ],
                        },
                    },
                ],
            },
        },
        id_event!(2, "set_background", "background_id", "Background ID"),
        id_event!(3, "set_music", "music_id", "Music ID"),
        Case {
            value: 4,
            group: Group {
                name: "set_camera_bounds",
                filter: "set_camera_bounds",
                label: "set_camera_bounds",
                nodes: &[
                    f32("min_x", "Min X"),
                    f32("max_x", "Max X"),
                    f32("min_y", "Min Y"),
                    f32("max_y", "Max Y"),
                ],
            },
        },
        id_event!(5, "gate_open", "gate_id", "Gate ID"),
        id_event!(6, "gate_close", "gate_id", "Gate ID"),
    ],
}];

const LEVEL_INIT_BODY: &[Node] = &[
    Node::Field(Field::new("level_id", "Level ID", Ty::U16)),
    Node::Field(Field::new("seed", "Seed", Ty::U32)),
    str8("background_id", "Background ID"),
    str8("music_id", "Music ID"),
    Node::Repeat {
        count: Field::new("archetype_count", "Archetype Count", Ty::U8),
        item: Group {
            name: "archetypes",
            filter: "archetype",
            label: "Archetype",
            nodes: &[
                Node::Field(Field::new("type_id", "Type ID", Ty::U16).role(Role::ArchetypeTypeId)),
                Node::Field(
                    Field::new("sprite_id", "Sprite ID", Ty::Str8).role(Role::ArchetypeSpriteId),
                ),
                str8("anim_id", "Animation ID"),
                Node::Field(Field::new("layer", "Layer", Ty::U8)),
            ],
        },
    },
];

/// The boss trailer real servers append to LevelInit (spec-notes B).
const BOSS_TRAILER: &[Node] = &[Node::Repeat {
    count: Field::new("boss_count", "Boss Count", Ty::U8),
    item: Group {
        name: "bosses",
        filter: "boss",
        label: "Boss",
        nodes: &[
            Node::Field(Field::new("type_id", "Type ID", Ty::U16)),
            str8("name", "Name"),
            f32("scale_x", "Scale X"),
            f32("scale_y", "Scale Y"),
        ],
    },
}];

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

/// Every message type of documents 002 and 001, in code order.
pub const MESSAGES: &[Message] = &[
    msg(0x01, "CLIENT_HELLO", "hello", C2S, "002 §5.1", &[]),
    msg(
        0x02,
        "CLIENT_JOIN_REQUEST",
        "join_request",
        C2S,
        "002 §5.1",
        &[],
    ),
    msg(0x03, "CLIENT_READY", "ready", C2S, "002 §5.1", &[]),
    msg(0x04, "CLIENT_PING", "ping", C2S, "002 §5.1", CLIENT_TIME),
    msg(
        0x05,
        "CLIENT_INPUT",
        "input",
        C2S,
        "002 §6.2",
        &[
            player_id("Player ID"),
            Node::Field(
                hex("input_flags", "Input Flags", Ty::U16)
                    .display(Display::Flags(INPUT_FLAGS))
                    .check(Check::Unused {
                        mask: INPUT_UNUSED_BITS,
                        rule: Rule::RtypeInputUnusedBits,
                    }),
            ),
            input_float("pos_x", "Position X"),
            input_float("pos_y", "Position Y"),
            input_float("angle", "Angle"),
        ],
    ),
    msg(0x06, "CLIENT_ACKNOWLEDGE", "ack", C2S, "002 §5.1", ACK),
    msg(
        0x07,
        "CLIENT_DISCONNECT",
        "disconnect",
        C2S,
        "002 §5.1",
        &[reason()],
    ),
    msg(0x10, "SERVER_HELLO", "server_hello", S2C, "002 §5.2", &[]),
    msg(
        0x11,
        "SERVER_JOIN_ACCEPT",
        "join_accept",
        S2C,
        "002 §5.2",
        &[],
    ),
    msg(0x12, "SERVER_JOIN_DENY", "join_deny", S2C, "002 §5.2", &[]),
    Message {
        variants: &[Variant {
            extends_body: false,
            nodes: &[],
            rule: Rule::RtypeEmptyPong,
        }],
        ..msg(0x13, "SERVER_PONG", "pong", S2C, "002 §5.2", CLIENT_TIME)
    },
    msg(
        0x14,
        "SERVER_SNAPSHOT",
        "snapshot",
        S2C,
        "001 §6",
        &[entities("entity_count", "Entity Count")],
    ),
    msg(
        0x15,
        "SERVER_GAME_START",
        "game_start",
        S2C,
        "002 §5.2",
        &[],
    ),
    msg(
        0x16,
        "SERVER_GAME_END",
        "game_end",
        S2C,
        "002 §5.2",
        &[player_id("Winning Player ID")],
    ),
    msg(0x17, "SERVER_KICK", "kick", S2C, "002 §5.2", &[reason()]),
    msg(0x18, "SERVER_BAN", "ban", S2C, "002 §5.2", &[reason()]),
    msg(
        0x19,
        "SERVER_BROADCAST",
        "broadcast",
        S2C,
        "002 §5.2",
        &[str8("text", "Text")],
    ),
    msg(
        0x1A,
        "SERVER_DISCONNECT",
        "server_disconnect",
        S2C,
        "002 §5.2",
        &[reason()],
    ),
    msg(
        0x1B,
        "SERVER_ACKNOWLEDGE",
        "server_ack",
        S2C,
        "002 §5.2",
        ACK,
    ),
    msg(
        0x1C,
        "SERVER_PLAYER_DISCONNECTED",
        "player_disconnected",
        S2C,
        "002 §5.2",
        &[player_id("Player ID")],
    ),
    msg(
        0x1D,
        "SERVER_ENTITY_SPAWN",
        "entity_spawn",
        S2C,
        "002 §5.2",
        &[
            Node::Field(Field::new("entity_id", "Entity ID", Ty::U32).role(Role::EntityId)),
            Node::Field(Field::new("entity_type", "Entity Type", Ty::U8).role(Role::EntityType)),
            Node::Field(Field::new("pos_x", "Position X", Ty::F32).quantity(Quantity::PosX)),
            Node::Field(Field::new("pos_y", "Position Y", Ty::F32).quantity(Quantity::PosY)),
        ],
    ),
    msg(
        0x1E,
        "SERVER_ENTITY_DESTROYED",
        "entity_destroyed",
        S2C,
        "002 §5.2",
        &[Node::Field(
            Field::new("entity_id", "Entity ID", Ty::U32).role(Role::EntityId),
        )],
    ),
    msg(0x1F, "SERVER_ALL_READY", "all_ready", S2C, "002 §5.2", &[]),
    msg(
        0x20,
        "SERVER_COUNTDOWN_TICK",
        "countdown",
        S2C,
        "002 §5.2",
        &[Node::Field(Field::new("value", "Value", Ty::U8))],
    ),
    msg(
        0x21,
        "SERVER_SNAPSHOT_CHUNK",
        "snapshot_chunk",
        S2C,
        "001 §7",
        &[
            Node::Field(
                Field::new("total_chunks", "Total Chunks", Ty::U16).role(Role::TotalChunks),
            ),
            Node::Field(Field::new("chunk_index", "Chunk Index", Ty::U16).role(Role::ChunkIndex)),
            entities("entity_count", "Entity Count in Chunk"),
        ],
    ),
    Message {
        variants: &[Variant {
            extends_body: true,
            nodes: BOSS_TRAILER,
            rule: Rule::RtypeBossTrailer,
        }],
        ..msg(
            0x30,
            "SERVER_LEVEL_INIT",
            "levelinit",
            S2C,
            "001 §3",
            LEVEL_INIT_BODY,
        )
    },
    Message {
        seen_rule: Some(Rule::RtypeLevelTransition),
        ..msg(
            0x31,
            "SERVER_LEVEL_TRANSITION",
            "leveltransition",
            S2C,
            "001 §5",
            &[],
        )
    },
    msg(
        0x32,
        "SERVER_LEVEL_EVENT",
        "levelevent",
        S2C,
        "001 §4",
        LEVEL_EVENT_BODY,
    ),
];

/// The message with this code, if the documents define one.
pub fn message(code: u8) -> Option<&'static Message> {
    MESSAGE_BY_CODE[code as usize].map(|i| &MESSAGES[i as usize])
}

const MESSAGE_BY_CODE: [Option<u8>; 256] = index_by_code(MESSAGES);
