//! What the pipeline tells the session layer and the reports about each datagram: the event
//! types every stage below the reports shares. They live here, below both the pipeline that
//! makes them and the session analysis that reads them.

use std::net::SocketAddr;

use crate::datagram::{rt, rtnp, rtype, Dialect};
use crate::finding::Finding;
use crate::message::Facts;
use crate::proto::schema::MessageRole;
use crate::proto::{Direction, Message};

/// What the pipeline knows of one datagram once it is decoded.
#[derive(Debug)]
pub struct DatagramEvent<'a> {
    pub frame: u64,
    pub ts_nanos: i64,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    /// The UDP payload.
    pub bytes: &'a [u8],
    /// `bytes`' [`bytes_hash`](crate::session::analysis::bytes_hash), by which duplicates are
    /// found: computed where the bytes are first read (an rtype datagram's, on a worker thread).
    pub hash: u64,
    pub dialect: Dialect,
    pub conversation: u32,
    pub direction: Option<Direction>,
    /// The dialect's checked header, when the datagram is long enough to carry one.
    pub decoded: Option<Decoded<'a>>,
    /// The message type as on the wire, known or not (binary dialects).
    pub code: Option<u8>,
    /// The header's sequence number and tick (or timestamp), where the dialect has them.
    pub sequence: Option<u32>,
    pub tick: Option<u32>,
    /// The peer's sequence number the header acknowledges, where the dialect has one (a
    /// described header's `ack` field): a pong answers the ping it names.
    pub ack: Option<u32>,
    pub message: Option<&'static Message>,
    /// The role the message's description gives it, for the session analysis.
    pub role: Option<DescribedRole>,
    /// The message's name: the description's, or the type text of dialects that name types in text.
    pub name: &'a str,
    /// The message payload that was decoded (decompressed when it was compressed).
    pub payload: Option<&'a [u8]>,
    pub facts: Facts,
    pub findings: &'a [Finding],
    /// The session findings this datagram raised (a duplicate, a step out of order...): the sink
    /// gets them as loose findings right after the datagram, and filters see them here.
    pub session: &'a [LooseFinding],
    /// The entities the message spawns, updates or destroys, in payload order.
    pub entities: &'a [EntityRef],
}

/// The role a message plays as its description says: the role, the side that sends it in that
/// role (`None`: either side), and the message's name, which the session's steps keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DescribedRole {
    pub role: MessageRole,
    pub sender: Option<Direction>,
    pub name: &'static str,
}

impl DescribedRole {
    /// A bundled message's role: its description names the one side that sends it.
    pub fn of(message: &'static Message) -> Option<DescribedRole> {
        message.role.map(|role| DescribedRole {
            role,
            sender: Some(message.direction),
            name: message.name,
        })
    }
}

/// What the capture says of a datagram's frame that only display filters read (Wireshark's
/// `frame.len`, `frame.cap_len`, `udp.length` and `frame.time_delta`): the frame's length on the
/// wire and as captured, the UDP length field, and the time since the frame before it in the
/// file. For a datagram reassembled from IP fragments, the frame is the last fragment's.
#[derive(Clone, Copy, Debug)]
pub struct FrameFields<'a> {
    /// The frame's captured bytes (`frame contains`, `frame[0:2]`).
    pub bytes: &'a [u8],
    pub len: u32,
    pub cap_len: u32,
    pub udp_len: u32,
    /// Nanoseconds (0 for the first frame).
    pub time_delta: i64,
    /// Nanoseconds since the previous datagram of the same conversation and direction (none for
    /// a stream's first), once the session analysis saw the datagram.
    pub stream_delta: Option<i64>,
}

/// What a message does to an entity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntityEvent {
    /// ENTITY_SPAWN.
    Spawn,
    /// An entity block of a snapshot (or a snapshot chunk, or an rt component snapshot).
    Update,
    /// ENTITY_DESTROYED (rt ENTITY_DESTROY, an rtnp snapshot's `destroyed` list).
    Destroy,
}

/// One entity a message names: its id, what the message does to it, its type when the message
/// says, and where its id is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntityRef {
    pub id: u32,
    pub event: EntityEvent,
    pub type_id: Option<u16>,
    /// Byte offset of the id in the UDP payload (the datagram).
    pub at: u32,
}

/// A dialect's checked header and footer.
#[derive(Clone, Copy, Debug)]
pub enum Decoded<'a> {
    Rtype(rtype::Datagram<'a>),
    Rt(rt::Datagram<'a>),
    /// An rtnp message: its framing, its text (when UTF-8), and its JSON (when it parsed), whole.
    Rtnp {
        framing: rtnp::Framing,
        text: Option<&'a str>,
        json: Option<&'a serde_json::Value>,
    },
    /// A described dialect's datagram (`Dialect::Described(index)`), as its interpreter read it.
    Described {
        index: u8,
        decoded: &'a crate::describe::decode::Decoded<'static>,
    },
}

impl DatagramEvent<'_> {
    /// Whether the datagram's integrity check (CRC) failed.
    pub fn crc_failed(&self) -> bool {
        match self.decoded {
            Some(Decoded::Rtype(d)) => !d.crc_ok(),
            Some(Decoded::Described { decoded, .. }) => decoded.problems.iter().any(|p| {
                p.rule
                    == crate::describe::Description::rule_index(
                        crate::describe::model::Check::Checksum,
                    )
            }),
            Some(Decoded::Rt(_) | Decoded::Rtnp { .. }) | None => false,
        }
    }
    /// Whether the payload was compressed on the wire.
    pub fn compressed(&self) -> bool {
        match self.decoded {
            Some(Decoded::Rtype(d)) => d.header.compressed(),
            Some(Decoded::Rt(d)) => d.header.compressed(),
            Some(Decoded::Described { decoded, .. }) => {
                decoded.messages.iter().any(|m| m.compressed)
            }
            Some(Decoded::Rtnp { .. }) | None => false,
        }
    }
}

/// A snapshot put back together from its chunks, reported right after the chunk that completed it.
#[derive(Debug)]
pub struct ReassembledEvent<'a> {
    pub frame: u64,
    pub conversation: u32,
    pub tick: u32,
    pub chunks: u16,
    pub first_frame: u64,
    pub payload: &'a [u8],
}

/// A finding that belongs to no single decoded datagram: the capture's, or a session's.
#[derive(Clone, Copy, Debug)]
pub struct LooseFinding {
    pub frame: u64,
    pub conversation: u32,
    pub finding: Finding,
}

/// Frame counts by what became of them.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct FrameCounts {
    pub frames: u64,
    pub udp: u64,
    pub datagrams: u64,
    pub other_udp: u64,
    pub not_udp: u64,
    pub unsupported_link: u64,
    pub malformed: u64,
    pub reassembled_fragments: u64,
}
