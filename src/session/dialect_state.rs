//! What only a conversation's dialect judges across its datagrams, kept in the conversation's one
//! record ([`super::Conversation::dialect_state`]): rt's byte order and reliable packets awaiting
//! their acknowledgment, rtnp's client id, epochs and the client's silences.

use std::collections::VecDeque;

use crate::datagram::Dialect;
use crate::proto::schema::Endian;
use crate::proto::Direction;

/// A conversation's dialect state, by its dialect.
#[derive(Debug)]
pub enum DialectState {
    /// Dialects whose judging needs nothing of the datagrams before (rtype's state is the
    /// record's own: archetypes, layouts) or keeps it in the session analysis (described).
    Stateless,
    Rt(RtConversation),
    Rtnp(RtnpConversation),
}

impl DialectState {
    /// The state a new conversation of `dialect` starts with.
    pub fn new(dialect: Dialect) -> DialectState {
        match dialect {
            Dialect::Rt => DialectState::Rt(RtConversation::default()),
            Dialect::Rtnp => DialectState::Rtnp(RtnpConversation::default()),
            Dialect::Rtype | Dialect::Described(_) => DialectState::Stateless,
        }
    }
}

/// What one conversation's rt traffic has shown so far.
#[derive(Debug, Default)]
pub struct RtConversation {
    /// The byte order of its first datagram, which later ones are read in.
    pub order: Option<Endian>,
    pub byte_order_reported: bool,
    pub pending: VecDeque<Pending>,
    pub reliable: u64,
    pub acknowledged: u64,
    /// The first reliable packet that left the window unacknowledged.
    pub first_expired: Option<u64>,
}

/// A reliable rt packet awaiting its acknowledgment.
#[derive(Clone, Copy, Debug)]
pub struct Pending {
    pub direction: Direction,
    pub sequence: u32,
    pub frame: u64,
}

/// What one conversation's rtnp traffic has shown so far.
#[derive(Debug, Default)]
pub struct RtnpConversation {
    /// The client_id assign_id gave the client.
    pub assigned: Option<u64>,
    pub last_epoch: Option<u64>,
    /// When the client last sent anything, and whether its current silence was reported.
    pub last_client_ts: Option<i64>,
    pub silence_reported: bool,
}
