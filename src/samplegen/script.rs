//! The building blocks of generated sessions: peers, a clock, a sink for datagrams, a script that
//! encodes messages by the description and sends them, and a small game world for snapshots.
//!
//! Conventions follow real traffic (spec-notes B): clients send from `10.0.0.X:4100X` to the
//! server's listening port 50010, the server answers from an ephemeral port (49316); client
//! sequence numbers grow per client, server replies echo the client's, snapshots carry the tick,
//! chunks tick + chunkIndex, everything else 0.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use serde_json::{json, Value};

use super::encode::encode_message;
use super::pcap::{udp_frame, Link, PcapWriter};
use super::rtype::RtypeBuilder;
use crate::datagram::rtype::HeaderLayout;
use crate::proto::profile::Profile;
use crate::proto::rtype::MESSAGES;
use crate::proto::schema::Message;
use crate::proto::Rule;

/// 2026-01-01T00:00:00Z, where every sample's clock starts, in microseconds since the epoch.
pub const T0_US: u64 = 1_767_225_600 * 1_000_000;
/// Server simulation rate.
pub const TICK_HZ: u64 = 60;
/// Gap between two datagrams sent in the same tick, so capture order is time order.
const GAP_US: u64 = 40;

/// The port the server listens on.
pub const SERVER_LISTEN: SocketAddr =
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 50010));
/// The ephemeral port the server answers from.
pub const SERVER_REPLY: SocketAddr =
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 49316));

/// Start of a tick, in capture time.
pub fn tick_time(tick: u32) -> u64 {
    T0_US + u64::from(tick) * 1_000_000 / TICK_HZ
}

/// A game client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Client {
    pub addr: SocketAddr,
    pub player_id: u32,
}

impl Client {
    /// Client number `n` (0-based): host 10.0.0.(n+2), port 41000 + host, player id n + 1.
    pub fn numbered(n: u32) -> io::Result<Client> {
        let host = n + 2;
        let port = u16::try_from(41_000 + host).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "too many clients for distinct ports",
            )
        })?;
        let ip = Ipv4Addr::new(10, 0, (host >> 8) as u8, host as u8);
        Ok(Client {
            addr: SocketAddr::V4(SocketAddrV4::new(ip, port)),
            player_id: n + 1,
        })
    }
}

/// Where generated datagrams go, in capture order.
pub trait Sink {
    fn datagram(
        &mut self,
        ts_us: u64,
        from: SocketAddr,
        to: SocketAddr,
        bytes: &[u8],
    ) -> io::Result<()>;
}

/// One generated datagram, kept in memory (for the small samples and tests).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub ts_us: u64,
    pub from: SocketAddr,
    pub to: SocketAddr,
    pub bytes: Vec<u8>,
}

impl Sink for Vec<Record> {
    fn datagram(
        &mut self,
        ts_us: u64,
        from: SocketAddr,
        to: SocketAddr,
        bytes: &[u8],
    ) -> io::Result<()> {
        self.push(Record {
            ts_us,
            from,
            to,
            bytes: bytes.to_vec(),
        });
        Ok(())
    }
}

/// Streams datagrams into a pcap as Ethernet/IP/UDP frames.
pub struct PcapSink<W: Write>(PcapWriter<W>);

impl<W: Write> PcapSink<W> {
    pub fn new(out: W) -> io::Result<Self> {
        Ok(PcapSink(PcapWriter::new(out, Link::Ethernet.linktype())?))
    }
    pub fn finish(self) -> io::Result<W> {
        self.0.finish()
    }
}

impl<W: Write> Sink for PcapSink<W> {
    fn datagram(
        &mut self,
        ts_us: u64,
        from: SocketAddr,
        to: SocketAddr,
        bytes: &[u8],
    ) -> io::Result<()> {
        self.0
            .record(ts_us, &udp_frame(Link::Ethernet, from, to, bytes)?)
    }
}

/// Expected findings: rule id to count, sorted by rule id.
pub type Expected = BTreeMap<&'static str, u64>;

pub(crate) fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

/// The message whose short name is `short` (e.g. `snapshot`).
pub(crate) fn message(short: &str) -> io::Result<&'static Message> {
    MESSAGES
        .iter()
        .find(|m| m.short == short)
        .ok_or_else(|| invalid(format!("no message `{short}`")))
}

/// A session being written: encodes messages by the description, numbers and times them, sends
/// them to the sink, and keeps the findings the sample is expected to produce.
pub struct Script<'s> {
    sink: &'s mut dyn Sink,
    pub profile: Profile,
    /// The header every datagram of the script gets.
    pub layout: HeaderLayout,
    now_us: u64,
    tick: u32,
    client_seq: BTreeMap<SocketAddr, u16>,
    expected: Expected,
    sent: u64,
    /// Datagrams beyond this many are dropped (for captures of an exact size).
    limit: u64,
}

impl<'s> Script<'s> {
    pub fn new(sink: &'s mut dyn Sink) -> Script<'s> {
        Script {
            sink,
            profile: Profile::document(),
            layout: HeaderLayout::Standard,
            now_us: T0_US,
            tick: 0,
            client_seq: BTreeMap::new(),
            expected: Expected::new(),
            sent: 0,
            limit: u64::MAX,
        }
    }

    pub fn limit(mut self, limit: u64) -> Self {
        self.limit = limit;
        self
    }

    /// Datagrams sent so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Datagrams that can still be sent before the limit.
    pub fn room(&self) -> u64 {
        self.limit - self.sent
    }

    pub fn tick(&self) -> u32 {
        self.tick
    }

    /// Moves the clock to `tick` (never backwards).
    pub fn at(&mut self, tick: u32) {
        self.tick = tick;
        self.now_us = self.now_us.max(tick_time(tick));
    }

    /// Records that the sample must produce `count` more findings of `rule`.
    pub fn expect(&mut self, rule: Rule, count: u64) {
        *self.expected.entry(rule.id()).or_default() += count;
    }

    pub fn expected(&self) -> &Expected {
        &self.expected
    }

    /// The payload of message `short` encoded from `value` by the description.
    pub fn payload(&self, short: &str, value: &Value) -> io::Result<Vec<u8>> {
        encode_message(message(short)?, value, &self.profile).map_err(invalid)
    }

    /// A header for `short` sent by `client`, with the client's next sequence number.
    pub fn client_header(&mut self, client: &Client, short: &str) -> io::Result<RtypeBuilder> {
        let seq = self.client_seq.entry(client.addr).or_insert(0);
        *seq = seq.wrapping_add(1);
        let seq = *seq;
        Ok(RtypeBuilder::for_message(message(short)?)
            .sequence(seq)
            .tick(self.tick)
            .layout(self.layout))
    }

    /// A header for `short` sent by the server with sequence number `seq`.
    pub fn server_header(&self, short: &str, seq: u16) -> io::Result<RtypeBuilder> {
        Ok(RtypeBuilder::for_message(message(short)?)
            .sequence(seq)
            .tick(self.tick)
            .layout(self.layout))
    }

    /// Sends a conforming `short` message from `client`; returns its sequence number.
    pub fn client(&mut self, client: &Client, short: &str, value: Value) -> io::Result<u16> {
        let payload = self.payload(short, &value)?;
        let header = self.client_header(client, short)?;
        let seq = self.client_seq[&client.addr];
        self.client_raw(client, &header.build(&payload).map_err(invalid)?)?;
        Ok(seq)
    }

    /// Sends a conforming `short` message from the server to `client`.
    pub fn server(
        &mut self,
        client: &Client,
        short: &str,
        seq: u16,
        value: Value,
    ) -> io::Result<()> {
        let payload = self.payload(short, &value)?;
        let datagram = self
            .server_header(short, seq)?
            .build(&payload)
            .map_err(invalid)?;
        self.server_raw(client, &datagram)
    }

    /// HELLO, SERVER_HELLO, JOIN_REQUEST and JOIN_ACCEPT for `client`, at the current tick.
    pub fn join(&mut self, client: &Client) -> io::Result<()> {
        let seq = self.client(client, "hello", json!({}))?;
        self.server(client, "server_hello", seq, json!({}))?;
        let seq = self.client(client, "join_request", json!({}))?;
        self.server(client, "join_accept", seq, json!({}))
    }

    /// Sends the same server message to every client in `clients` (one datagram, built once).
    pub fn broadcast(
        &mut self,
        clients: &[Client],
        short: &str,
        seq: u16,
        value: Value,
    ) -> io::Result<()> {
        let payload = self.payload(short, &value)?;
        let datagram = self
            .server_header(short, seq)?
            .build(&payload)
            .map_err(invalid)?;
        clients
            .iter()
            .try_for_each(|c| self.server_raw(c, &datagram))
    }

    /// Sends prepared bytes from `client` to the server.
    pub fn client_raw(&mut self, client: &Client, bytes: &[u8]) -> io::Result<()> {
        self.send(client.addr, SERVER_LISTEN, bytes)
    }

    /// Sends prepared bytes from the server to `client`.
    pub fn server_raw(&mut self, client: &Client, bytes: &[u8]) -> io::Result<()> {
        self.send(SERVER_REPLY, client.addr, bytes)
    }

    /// Sends a datagram written elsewhere, at its own time (which must not go back).
    pub fn replay(&mut self, record: &Record) -> io::Result<()> {
        self.now_us = self.now_us.max(record.ts_us);
        self.send(record.from, record.to, &record.bytes)
    }

    /// Sends any bytes between any addresses, at the script's clock.
    pub fn send(&mut self, from: SocketAddr, to: SocketAddr, bytes: &[u8]) -> io::Result<()> {
        if self.sent >= self.limit {
            return Ok(());
        }
        self.sink.datagram(self.now_us, from, to, bytes)?;
        self.now_us += GAP_US;
        self.sent += 1;
        Ok(())
    }
}

/// Content ids a level announces (typeId, sprite, animation, layer), as LevelInit carries them.
pub const ARCHETYPES: &[(u16, &str, &str, u8)] = &[
    (1, "player_ship", "ship_idle", 2),
    (2, "bydo_scout", "scout_fly", 1),
    (3, "wave_shot", "", 3),
    (4, "pow_armor", "pow_walk", 1),
];
pub const TYPE_PLAYER: u8 = 1;
pub const TYPE_SCOUT: u8 = 2;
pub const TYPE_SHOT: u8 = 3;
pub const TYPE_POWERUP: u8 = 4;

/// The LevelInit the samples send: stage 1 with [`ARCHETYPES`], no boss trailer.
pub fn level_init() -> Value {
    let archetypes: Vec<Value> = ARCHETYPES
        .iter()
        .map(|(type_id, sprite, anim, layer)| json!({"type_id": type_id, "sprite_id": sprite, "anim_id": anim, "layer": layer}))
        .collect();
    json!({
        "level_id": 1,
        "seed": 0x00C0_FFEE,
        "background_id": "bg_space_01",
        "music_id": "stage1_theme",
        "archetypes": archetypes,
    })
}

/// Update masks: which mask bits each kind of entity sends (bits 0-6 and 9 only: the ones the
/// document defines with a width).
pub const MASK_PLAYER: u16 = 0x027F;
pub const MASK_ENEMY: u16 = 0x003F;
pub const MASK_SHOT: u16 = 0x001F;
pub const MASK_ITEM: u16 = 0x0007;

/// One entity of the game world.
#[derive(Clone, Debug, PartialEq)]
pub struct Entity {
    pub id: u32,
    pub type_id: u8,
    pub mask: u16,
    pub x: f32,
    pub y: f32,
    pub vx: f32,
    pub vy: f32,
    pub health: u16,
    pub status: u8,
    pub lives: u8,
}

impl Entity {
    pub fn new(id: u32, type_id: u8, mask: u16, x: f32, y: f32) -> Entity {
        Entity {
            id,
            type_id,
            mask,
            x,
            y,
            vx: 0.0,
            vy: 0.0,
            health: 0,
            status: 0,
            lives: 0,
        }
    }

    /// The entity block's values; the encoder takes the ones the mask selects.
    pub fn json(&self) -> Value {
        json!({
            "id": self.id,
            "update_mask": self.mask,
            "entity_type": self.type_id,
            "pos_x": self.x,
            "pos_y": self.y,
            "vel_x": self.vx,
            "vel_y": self.vy,
            "health": self.health,
            "status_flags": self.status,
            "lives": self.lives,
        })
    }

    /// The ENTITY_SPAWN announcing it.
    pub fn spawn_json(&self) -> Value {
        json!({"entity_id": self.id, "entity_type": self.type_id, "pos_x": self.x, "pos_y": self.y})
    }
}

/// The entities alive, in id order.
#[derive(Clone, Debug, Default)]
pub struct World {
    pub entities: Vec<Entity>,
}

impl World {
    pub fn add(&mut self, entity: Entity) {
        let at = self.entities.partition_point(|e| e.id < entity.id);
        self.entities.insert(at, entity);
    }

    pub fn remove(&mut self, id: u32) -> Option<Entity> {
        let at = self.entities.iter().position(|e| e.id == id)?;
        Some(self.entities.remove(at))
    }

    pub fn get_mut(&mut self, id: u32) -> Option<&mut Entity> {
        self.entities.iter_mut().find(|e| e.id == id)
    }

    /// Moves everything by its velocity over one tick.
    pub fn step(&mut self) {
        let dt = 1.0 / TICK_HZ as f32;
        for e in &mut self.entities {
            e.x += e.vx * dt;
            e.y += e.vy * dt;
        }
    }

    /// A SERVER_SNAPSHOT of every entity.
    pub fn snapshot(&self) -> Value {
        json!({"entities": self.entities.iter().map(Entity::json).collect::<Vec<_>>()})
    }

    /// The full state as `total` SERVER_SNAPSHOT_CHUNKs (some may be empty).
    pub fn chunks(&self, total: u16) -> Vec<Value> {
        let per = self
            .entities
            .len()
            .div_ceil(usize::from(total.max(1)))
            .max(1);
        (0..total)
            .map(|index| {
                let part: Vec<Value> = self
                    .entities
                    .iter()
                    .skip(usize::from(index) * per)
                    .take(per)
                    .map(Entity::json)
                    .collect();
                json!({"total_chunks": total, "chunk_index": index, "entities": part})
            })
            .collect()
    }
}

/// A tiny deterministic PRNG (xorshift64), so samples need no `rand` and never change.
#[derive(Clone, Debug)]
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> XorShift {
        XorShift(seed.max(1))
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}
