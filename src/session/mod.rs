//! Sessions: which conversation a datagram belongs to, what each conversation announced
//! (LevelInit archetypes), the chunk sets being reassembled, and the entities' lifecycles.

pub mod analysis;
pub mod chunks;
pub mod entities;
pub mod event;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use crate::datagram::Dialect;
use crate::proto::Direction;

/// At most this many conversations are tracked (as many as the analysis keeps, bounding memory to
/// a few tens of MB); datagrams of further ones share conversation 0, reported once.
pub const MAX_CONVERSATIONS: usize = crate::session::analysis::MAX_ANALYSED;
/// At most this many archetypes are remembered per conversation.
pub const MAX_ARCHETYPES: usize = 1024;
/// Up to this many conversations, a datagram's is found by comparing addresses with each, which
/// is quicker than hashing them.
const FEW_CONVERSATIONS: usize = 8;

/// One client ↔ server pair. The reference server replies from another port than the one it
/// listens on, so a conversation is the client's address and port with the server's address.
#[derive(Debug)]
pub struct Conversation {
    pub id: u32,
    /// The dialect its first datagram was recognised as; every later datagram is judged as it.
    pub dialect: Dialect,
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub first_frame: u64,
    /// LevelInit's archetypes: typeId → spriteId.
    pub archetypes: Vec<(u16, String)>,
    /// The older 15-byte header was already reported for this conversation.
    pub old_header_reported: bool,
}

impl Conversation {
    pub fn sprite(&self, type_id: u16) -> Option<&str> {
        self.archetypes
            .iter()
            .find(|a| a.0 == type_id)
            .map(|a| a.1.as_str())
    }
}

/// The conversations of a capture, in order of first appearance (ids from 1).
#[derive(Debug, Default)]
pub struct Conversations {
    index: HashMap<(SocketAddr, IpAddr), u32>,
    list: Vec<Conversation>,
    /// The first frame whose conversation was past [`MAX_CONVERSATIONS`].
    pub overflow: Option<u64>,
}

impl Conversations {
    /// The conversation with this client and server address, if there is one.
    fn get_by(&self, client: SocketAddr, server: IpAddr) -> Option<&Conversation> {
        if self.list.len() <= FEW_CONVERSATIONS {
            self.list
                .iter()
                .find(|c| c.client == client && c.server.ip() == server)
        } else {
            self.index
                .get(&(client, server))
                .and_then(|id| self.get(*id))
        }
    }

    /// The recognised conversation a datagram from `src` to `dst` belongs to, either way round.
    pub fn find(&self, src: SocketAddr, dst: SocketAddr) -> Option<&Conversation> {
        self.get_by(src, dst.ip())
            .or_else(|| self.get_by(dst, src.ip()))
    }

    /// The conversation of a datagram from `src` to `dst` travelling in `direction`, recognised
    /// as `dialect` when it is new.
    pub fn lookup(
        &mut self,
        src: SocketAddr,
        dst: SocketAddr,
        direction: Direction,
        frame: u64,
        dialect: Dialect,
    ) -> u32 {
        let (client, server) = match direction {
            Direction::ClientToServer => (src, dst),
            Direction::ServerToClient => (dst, src),
        };
        if let Some(c) = self.get_by(client, server.ip()) {
            return c.id;
        }
        if self.list.len() >= MAX_CONVERSATIONS {
            self.overflow.get_or_insert(frame);
            return 0;
        }
        let id = self.list.len() as u32 + 1;
        self.index.insert((client, server.ip()), id);
        self.list.push(Conversation {
            id,
            dialect,
            client,
            server,
            first_frame: frame,
            archetypes: Vec::new(),
            old_header_reported: false,
        });
        id
    }

    pub fn get(&self, id: u32) -> Option<&Conversation> {
        id.checked_sub(1).and_then(|i| self.list.get(i as usize))
    }

    pub fn get_mut(&mut self, id: u32) -> Option<&mut Conversation> {
        id.checked_sub(1)
            .and_then(|i| self.list.get_mut(i as usize))
    }

    pub fn all(&self) -> &[Conversation] {
        &self.list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_reply_port_joins_the_clients_conversation() {
        let mut c = Conversations::default();
        let client: SocketAddr = "10.0.0.2:41000".parse().unwrap();
        let listen: SocketAddr = "10.0.0.1:50010".parse().unwrap();
        let reply: SocketAddr = "10.0.0.1:49316".parse().unwrap();
        let a = c.lookup(client, listen, Direction::ClientToServer, 1, Dialect::Rtype);
        let b = c.lookup(reply, client, Direction::ServerToClient, 2, Dialect::Rtype);
        let other = c.lookup(
            "10.0.0.3:41000".parse().unwrap(),
            listen,
            Direction::ClientToServer,
            3,
            Dialect::Rt,
        );
        assert_eq!((a, b, other), (1, 1, 2));
        assert_eq!(c.get(1).unwrap().server, listen);
        assert_eq!(c.find(reply, client).map(|c| c.id), Some(1));
        assert_eq!(
            c.find(client, "10.0.0.1:9".parse().unwrap()).map(|c| c.id),
            Some(1)
        );
        assert_eq!(
            c.find("10.0.0.3:41000".parse().unwrap(), listen)
                .map(|c| c.dialect),
            Some(Dialect::Rt)
        );
        assert!(c.find("10.0.0.4:41000".parse().unwrap(), listen).is_none());
    }
}
