//! The `rtype` dialect (documents 002 and 001, with spec-notes): its tables, compiled by
//! build.rs from its description, `dialects/rtype.yaml`, and what follows from them.

use super::rules::Rule;
use super::schema::{
    code_of, fixed_len, index_by_code, value_of, Case, Check, Direction, Display, Field, Group,
    Message, MessageRole, MessageRules, Named, Node, Quantity, Role, Ty, Variant,
};

include!(concat!(env!("OUT_DIR"), "/rtype.rs"));

/// The older 15-byte header (spec-notes B): the same fields without Orig. Size.
pub const HEADER_15: &[Node] = HEADER.split_at(HEADER.len() - 1).0;
pub const HEADER_LEN: usize = fixed_len(HEADER);
pub const HEADER_15_LEN: usize = fixed_len(HEADER_15);
/// Message codes the pipeline treats specially.
pub const SNAPSHOT: u8 = code_of(MESSAGES, "snapshot");
pub const SNAPSHOT_CHUNK: u8 = code_of(MESSAGES, "snapshot_chunk");
pub const LEVEL_INIT: u8 = code_of(MESSAGES, "levelinit");
pub const LEVEL_EVENT: u8 = code_of(MESSAGES, "levelevent");
/// Packet type values of the header.
pub const PACKET_CLIENT: u8 = value_of(PACKET_TYPES, "client_to_server") as u8;
pub const PACKET_SERVER: u8 = value_of(PACKET_TYPES, "server_to_client") as u8;

/// The message with this code, if the documents define one.
pub fn message(code: u8) -> Option<&'static Message> {
    MESSAGE_BY_CODE[code as usize].map(|i| &MESSAGES[i as usize])
}

const MESSAGE_BY_CODE: [Option<u8>; 256] = index_by_code(MESSAGES);
