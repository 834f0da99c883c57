//! The `rt` dialect (document 003, with spec-notes): its tables, compiled by build.rs from its
//! description, `dialects/rt.yaml` (which says how the document's C structs are described), and
//! what follows from them.

use super::rules::Rule;
use super::schema::{
    code_of, fixed_len, index_by_code, value_of, Case, Check, Direction, Display, Field, Group,
    Message, MessageRole, MessageRules, Named, Node, Quantity, Role, Ty, Variant,
};

include!(concat!(env!("OUT_DIR"), "/rt.rs"));

/// The magic as the document sends it (big-endian).
pub const MAGIC_BE: [u8; 2] = MAGIC;
/// The magic as the real server sends it (little-endian, spec-notes B).
pub const MAGIC_LE: [u8; 2] = [MAGIC[1], MAGIC[0]];

pub const FLAG_RELIABLE: u8 = value_of(PACKET_FLAGS, "reliable") as u8;
pub const FLAG_COMPRESSED: u8 = value_of(PACKET_FLAGS, "compressed") as u8;
pub const FLAG_ENCRYPTED: u8 = value_of(PACKET_FLAGS, "encrypted") as u8;
pub const FLAG_FRAGMENTED: u8 = value_of(PACKET_FLAGS, "fragmented") as u8;
pub const FLAG_PRIORITY: u8 = value_of(PACKET_FLAGS, "priority") as u8;

/// Packet types the pipeline treats specially.
pub const CLIENT_CONNECT: u8 = code_of(MESSAGES, "connect");
pub const SERVER_ACCEPT: u8 = code_of(MESSAGES, "accept");
pub const SERVER_REJECT: u8 = code_of(MESSAGES, "reject");
pub const CLIENT_DISCONNECT: u8 = code_of(MESSAGES, "disconnect");
pub const PLAYER_INPUT: u8 = code_of(MESSAGES, "input");
pub const ACKNOWLEDGMENT: u8 = code_of(MESSAGES, "ack");

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

pub const HEADER_LEN: usize = fixed_len(HEADER);

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
        // The real peers' layouts.
        for (code, size) in [(0x01, 49), (0x10, 10), (0x70, 8), (0x71, 4)] {
            let variant = &message(code).unwrap().variants[0];
            assert_eq!(nodes_fixed_size(variant.nodes), Some(size));
        }
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
