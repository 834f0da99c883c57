//! Sessions: which conversation a datagram belongs to, what each conversation announced
//! (LevelInit archetypes), the chunk sets being reassembled, and the entities' lifecycles.

pub mod analysis;
pub mod chunks;
pub mod dialect_state;
pub mod entities;
pub mod event;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use self::dialect_state::{DialectState, RtConversation, RtnpConversation};
use crate::datagram::Dialect;
use crate::message::Layout;
use crate::proto::Direction;

/// At most this many conversations are tracked (as many as the analysis keeps, bounding memory to
/// a few tens of MB); datagrams of further ones share conversation 0, reported once.
pub const MAX_CONVERSATIONS: usize = crate::session::analysis::MAX_ANALYSED;
/// Archetypes remembered per conversation: all that LevelInit can carry (its count is a u8).
pub const MAX_ARCHETYPES: usize = 255;
/// Bytes of sprite names remembered per conversation (LevelInit can carry 255 × 255): enough for
/// every archetype of real levels (17 names of about 10 bytes), small enough that a crafted
/// capture of 4,096 conversations with the longest names holds 12 MB of them, not 270 MB. Names
/// past it are not remembered: their entity types are still known, only not shown with a sprite.
pub const MAX_SPRITE_BYTES: usize = 2048;
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
    pub archetypes: Archetypes,
    /// The older 15-byte header was already reported for this conversation.
    pub old_header_reported: bool,
    /// The snapshot layout it is read with, when the run chooses one per conversation.
    pub layout: SnapshotLayout,
    /// A snapshot of it was misread by the layout it was read with, the run choosing: no
    /// configured or bundled profile reads them all.
    pub unfit: bool,
    /// Another conversation has the same server address: its clients can be compared
    /// (`session.clients-disagree`). Known when the conversations are made, so that a capture
    /// of one client per server pays nothing per datagram for the comparison.
    pub shares_server: bool,
    /// Message codes whose last datagram fitted one of the message's variants whole, with the
    /// variant (others fitted the document's layout, or none was seen): what a cut datagram is
    /// judged against.
    usual_variants: Vec<(u8, u8)>,
    /// What only its dialect judges across its datagrams.
    pub dialect_state: DialectState,
}

impl Conversation {
    /// The layout this conversation's datagrams of message `code` have been using: a variant's
    /// index, or None for the document's.
    pub fn usual_variant(&self, code: u8) -> Option<u8> {
        self.usual_variants
            .iter()
            .find(|u| u.0 == code)
            .map(|u| u.1)
    }

    /// Remembers the layout a datagram of message `code` fitted whole.
    pub fn fitted(&mut self, code: u8, layout: Layout) {
        if !layout.whole {
            return;
        }
        let at = self.usual_variants.iter().position(|u| u.0 == code);
        match (at, layout.variant) {
            (Some(i), Some(v)) => self.usual_variants[i].1 = v,
            (Some(i), None) => {
                self.usual_variants.swap_remove(i);
            }
            (None, Some(v)) => self.usual_variants.push((code, v)),
            (None, None) => {}
        }
    }
}

/// Which of the run's snapshot layouts a conversation is read with, when no profile was named:
/// the pipeline decides at its first snapshot that some layout misreads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotLayout {
    /// No snapshot told the layouts apart yet (this many were looked at): read with the run's
    /// first layout.
    Undecided(u8),
    /// Read with the run's layout of this index.
    Read(u8),
}

impl Default for SnapshotLayout {
    fn default() -> Self {
        SnapshotLayout::Undecided(0)
    }
}

impl SnapshotLayout {
    /// The index of the run's layout it is read with (the first while undecided).
    pub fn index(self) -> usize {
        match self {
            SnapshotLayout::Undecided(_) => 0,
            SnapshotLayout::Read(i) => usize::from(i),
        }
    }
}

/// LevelInit's archetypes, compact and bounded: the type ids, and their sprite names end to end
/// in one string (at most [`MAX_ARCHETYPES`] and [`MAX_SPRITE_BYTES`]).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Archetypes {
    /// Each archetype's type id and where its sprite name ends in `names` ([`UNNAMED`] set when
    /// its name was not remembered).
    types: Vec<(u16, u16)>,
    names: String,
    /// The type ids below 256 that are in `types`: every entity of every snapshot is checked
    /// against them.
    small: SmallTypes,
}

/// Entity type ids below 256, a bit each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct SmallTypes([u64; 4]);

impl SmallTypes {
    /// Adds `type_id`; false when it is 256 or more, which these bits cannot hold.
    #[inline]
    fn insert(&mut self, type_id: u64) -> bool {
        let small = type_id < 256;
        if small {
            self.0[type_id as usize / 64 % 4] |= 1 << (type_id % 64);
        }
        small
    }
    /// Whether `type_id` is in; None when it is 256 or more.
    fn contains(&self, type_id: u64) -> Option<bool> {
        let word = self.0.get(type_id as usize / 64).filter(|_| type_id < 256);
        word.map(|bits| bits & (1 << (type_id % 64)) != 0)
    }
    /// Whether every type of `self` is in `all`.
    fn within(&self, all: &SmallTypes) -> bool {
        self.0.iter().zip(all.0).all(|(s, a)| s & !a == 0)
    }
}

/// The entity types a message names, as a set: those below 256 a bit each, and whether there
/// is any other. Made on a worker, it lets the ordered stage check a whole message's types
/// against a conversation's archetypes in four steps ([`Archetypes::covers`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TypeSet {
    small: SmallTypes,
    large: bool,
}

impl TypeSet {
    #[inline]
    pub fn insert(&mut self, type_id: u64) {
        self.large |= !self.small.insert(type_id);
    }
}

/// The bit of an archetype's name end that says its name did not fit.
const UNNAMED: u16 = 0x8000;
const _: () = assert!(MAX_SPRITE_BYTES < UNNAMED as usize);

impl Clone for Archetypes {
    fn clone(&self) -> Self {
        let mut copy = Archetypes::new();
        copy.clone_from(self);
        copy
    }
    /// Reuses the buffers: the reports copy a conversation's archetypes when they change.
    fn clone_from(&mut self, source: &Self) {
        self.types.clone_from(&source.types);
        self.names.clone_from(&source.names);
        self.small = source.small;
    }
}

impl Archetypes {
    pub const fn new() -> Archetypes {
        Archetypes {
            types: Vec::new(),
            names: String::new(),
            small: SmallTypes([0; 4]),
        }
    }
    /// Adds an archetype, with an empty sprite name until [`Archetypes::name_last`] (past
    /// [`MAX_ARCHETYPES`], nothing).
    pub fn push(&mut self, type_id: u16) {
        if self.types.len() < MAX_ARCHETYPES {
            self.types.push((type_id, self.names.len() as u16));
            self.small.insert(type_id.into());
        }
    }
    /// Names the last archetype's sprite; a name that does not fit in [`MAX_SPRITE_BYTES`] is
    /// not remembered.
    pub fn name_last(&mut self, sprite: &str) {
        let Some(last) = self.types.last_mut() else {
            return;
        };
        if last.1 != self.names.len() as u16 {
            return;
        }
        if self.names.len() + sprite.len() <= MAX_SPRITE_BYTES {
            self.names.push_str(sprite);
            last.1 = self.names.len() as u16;
        } else {
            last.1 |= UNNAMED;
        }
    }
    pub fn clear(&mut self) {
        self.types.clear();
        self.names.clear();
        self.small = SmallTypes::default();
    }
    /// Gives back what collecting them reserved beyond what they hold.
    pub fn shrink_to_fit(&mut self) {
        self.types.shrink_to_fit();
        self.names.shrink_to_fit();
    }
    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }
    pub fn len(&self) -> usize {
        self.types.len()
    }
    /// The archetypes' type ids, in LevelInit's order.
    pub fn types(&self) -> impl Iterator<Item = u64> + '_ {
        self.types.iter().map(|a| u64::from(a.0))
    }
    /// Whether LevelInit announced this entity type.
    pub fn contains(&self, type_id: u64) -> bool {
        self.small
            .contains(type_id)
            .unwrap_or_else(|| self.types.iter().any(|a| u64::from(a.0) == type_id))
    }
    /// Whether LevelInit announced every type of `set` (false when unsure: a type of 256 or
    /// more, which only [`Archetypes::contains`] can tell).
    pub fn covers(&self, set: &TypeSet) -> bool {
        !set.large && set.small.within(&self.small)
    }
    /// The sprite name of the first archetype of this type, when one was remembered.
    pub fn sprite(&self, type_id: u64) -> Option<&str> {
        let i = self.types.iter().position(|a| u64::from(a.0) == type_id)?;
        let end = self.types[i].1;
        if end & UNNAMED != 0 {
            return None;
        }
        let start = self.types[..i]
            .last()
            .map_or(0, |p| usize::from(p.1 & !UNNAMED));
        self.names.get(start..usize::from(end))
    }
}

/// The conversations of a capture, in order of first appearance (ids from 1).
#[derive(Debug, Default)]
pub struct Conversations {
    index: HashMap<(SocketAddr, IpAddr), u32>,
    list: Vec<Conversation>,
    /// Each server address's first conversation (for [`Conversation::shares_server`]).
    servers: HashMap<SocketAddr, u32>,
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
        let first = *self.servers.entry(server).or_insert(id);
        let shares_server = first != id;
        if let Some(c) = self.get_mut(first).filter(|_| shares_server) {
            c.shares_server = true;
        }
        self.list.push(Conversation {
            id,
            dialect,
            client,
            server,
            first_frame: frame,
            archetypes: Archetypes::default(),
            old_header_reported: false,
            layout: SnapshotLayout::default(),
            unfit: false,
            shares_server,
            usual_variants: Vec::new(),
            dialect_state: DialectState::new(dialect),
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

    /// The rt state of conversation `id`; none past [`MAX_CONVERSATIONS`], where datagrams of
    /// many conversations share id 0 and no judging across datagrams could be right.
    pub fn rt(&mut self, id: u32) -> Option<&mut RtConversation> {
        match self.get_mut(id).map(|c| &mut c.dialect_state) {
            Some(DialectState::Rt(rt)) => Some(rt),
            _ => None,
        }
    }

    /// The rtnp state of conversation `id`, as [`Conversations::rt`].
    pub fn rtnp(&mut self, id: u32) -> Option<&mut RtnpConversation> {
        match self.get_mut(id).map(|c| &mut c.dialect_state) {
            Some(DialectState::Rtnp(rtnp)) => Some(rtnp),
            _ => None,
        }
    }

    pub fn all(&self) -> &[Conversation] {
        &self.list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archetypes_know_small_and_large_type_ids() {
        let mut a = Archetypes::new();
        for t in [0, 3, 63, 64, 255, 256, 300, 65535] {
            a.push(t);
        }
        let known: Vec<u64> = (0..70_000).filter(|t| a.contains(*t)).collect();
        assert_eq!(known, [0, 3, 63, 64, 255, 256, 300, 65535]);
        assert!(
            !a.contains((1 << 32) + 3),
            "no type id wraps onto a small one"
        );
        let mut copy = Archetypes::new();
        copy.clone_from(&a);
        assert!(copy.contains(255) && copy.contains(300));
        a.clear();
        assert!(!a.contains(3) && !a.contains(300));
    }

    #[test]
    fn archetypes_cover_a_set_of_small_types_they_all_know() {
        let mut a = Archetypes::new();
        for t in [3, 70, 255, 300] {
            a.push(t);
        }
        let covers = |types: &[u64]| {
            let mut set = TypeSet::default();
            types.iter().for_each(|t| set.insert(*t));
            a.covers(&set)
        };
        assert!(covers(&[]));
        assert!(covers(&[3, 70, 3, 255]));
        assert!(!covers(&[3, 71]));
        assert!(!covers(&[0]));
        // A type of 256 or more is left to `contains`, known or not.
        assert!(!covers(&[300]));
        assert!(!covers(&[3, (1 << 32) + 3]));
    }

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
