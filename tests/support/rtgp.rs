//! An independent encoder of RTGP, the R-Type Game Protocol of
//! <https://github.com/My-Epitech-Organisation/Rtype> (commit
//! 561a58caeab6df25fd5c61443d70b2bf568bca4a), written from that project's C++ and not from
//! examples/dialects/rtgp.yaml: the test that holds the description to it
//! (tests/dialect_example.rs) would prove nothing if both came from the same reading.
//!
//! What each part mirrors, in the project:
//! - [`Header`], [`flags`]: lib/network/src/protocol/Header.hpp (16 bytes, `#pragma pack(1)`);
//! - [`OpCode`]: lib/network/src/protocol/OpCode.hpp (values, names, `isReliable`);
//! - the payload structs: lib/network/src/protocol/Payloads.hpp, serialised as
//!   `Serializer::serializeForNetwork` does (lib/network/src/Serializer.hpp) through
//!   lib/network/src/protocol/ByteOrderSpec.hpp: a struct with its own `toNetwork` overload has
//!   its numbers made big-endian one by one (or not at all: `InputPayload` is returned as it is,
//!   so its mask stays little-endian), any other struct goes through the generic template, which
//!   byte-swaps its in-memory bytes 4 at a time and then 2 at a time ([`generic_to_network`]);
//! - [`lz4_frame`], [`Compressor`]: lib/network/src/compression/Compressor.cpp (an LZ4 *frame*
//!   with the content size, for payloads of 64 bytes or more, kept only when not larger);
//! - [`Client`]: lib/network/src/connection/Connection.cpp (`buildPacket`, `buildConnectPacket`,
//!   `buildDisconnectPacket`, `buildAckPacketInternal`, `processPacket`) and
//!   src/client/network/NetworkClient.cpp (`sendAck` on every reliable opcode received,
//!   `requestLobbyList`);
//! - [`Server`]: src/server/network/NetworkServer.cpp (`buildPacket`, `sendToClient`,
//!   `broadcastToAll`, `processIncomingPacket`'s PONG for every reliable client packet,
//!   `handleConnect`, `handleJoinLobby`, `handlePing`, `handleDisconnect`, `quantize` with
//!   scale 16) and
//!   src/server/lobby/LobbyDiscoveryServer.cpp (`buildLobbyListPacket`).
//!
//! The machine the project runs on is taken to be little-endian (x86-64): "host order" below is
//! little-endian, which is what its `memcpy` of a struct puts on the wire when no `toNetwork`
//! converts it.
//!
//! The capture is Ethernet/IPv4/UDP on 127.0.0.1, microsecond pcap. Its IPv4 and UDP length
//! fields and IPv4 checksum are filled by `faults::with_payload` (tests/support/faults.rs), which
//! the including test file declares as `mod faults` at its root; tests/support/datagrams.rs's
//! `write_pcap` writes raw IPv4 (link type 101) with one-second timestamps, not this.

#![allow(dead_code)]

use std::path::Path;

/// Header.hpp: `kMagicByte`, `kHeaderSize`, `kServerUserId`, `kUnassignedUserId`.
pub const MAGIC_BYTE: u8 = 0xA1;
pub const HEADER_SIZE: usize = 16;
pub const SERVER_USER_ID: u32 = 0xFFFF_FFFF;
pub const UNASSIGNED_USER_ID: u32 = 0;

/// The lobby discovery service (LobbyManager::Config::basePort, Header.hpp's `kDefaultPort`) and
/// the first lobby instance, the game server (`basePort + 1 + i`, LobbyManager.cpp).
pub const DISCOVERY_PORT: u16 = 4242;
pub const GAME_PORT: u16 = 4243;
/// The clients' ephemeral ports: each binds a new socket (port 0) for the discovery request and
/// another for the game (NetworkClient::connect recreates its socket).
pub const A_DISCOVERY_PORT: u16 = 50100;
pub const A_GAME_PORT: u16 = 50101;
pub const B_DISCOVERY_PORT: u16 = 50200;
pub const B_GAME_PORT: u16 = 50201;

/// The first datagram's time: 2026-01-01T00:00:00Z.
pub const START_SECONDS: u64 = 1_767_225_600;

/// Header.hpp's `Flags`.
pub mod flags {
    pub const NONE: u8 = 0x00;
    pub const RELIABLE: u8 = 0x01;
    pub const IS_ACK: u8 = 0x02;
    pub const COMPRESSED: u8 = 0x04;
}

/// OpCode.hpp's `OpCode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum OpCode {
    CConnect = 0x01,
    SAccept = 0x02,
    Disconnect = 0x03,
    CGetUsers = 0x04,
    RGetUsers = 0x05,
    SUpdateState = 0x06,
    SGameOver = 0x07,
    CReady = 0x08,
    SGameStart = 0x09,
    SPlayerReadyState = 0x0A,
    CRequestLobbies = 0x0B,
    SLobbyList = 0x0C,
    CJoinLobby = 0x0D,
    SJoinLobbyResponse = 0x0E,
    SEntitySpawn = 0x10,
    SEntityMove = 0x11,
    SEntityDestroy = 0x12,
    SEntityHealth = 0x13,
    SPowerupEvent = 0x14,
    SEntityMoveBatch = 0x15,
    CSetBandwidthMode = 0x16,
    SBandwidthModeChanged = 0x17,
    SLevelAnnounce = 0x18,
    CInput = 0x20,
    SUpdatePos = 0x21,
    CChat = 0x30,
    SChat = 0x31,
    CAdminCommand = 0xD0,
    SAdminResponse = 0xD1,
    Ping = 0xF0,
    Pong = 0xF1,
    Ack = 0xF2,
}

impl OpCode {
    pub const ALL: [OpCode; 32] = [
        OpCode::CConnect,
        OpCode::SAccept,
        OpCode::Disconnect,
        OpCode::CGetUsers,
        OpCode::RGetUsers,
        OpCode::SUpdateState,
        OpCode::SGameOver,
        OpCode::CReady,
        OpCode::SGameStart,
        OpCode::SPlayerReadyState,
        OpCode::CRequestLobbies,
        OpCode::SLobbyList,
        OpCode::CJoinLobby,
        OpCode::SJoinLobbyResponse,
        OpCode::SEntitySpawn,
        OpCode::SEntityMove,
        OpCode::SEntityDestroy,
        OpCode::SEntityHealth,
        OpCode::SPowerupEvent,
        OpCode::SEntityMoveBatch,
        OpCode::CSetBandwidthMode,
        OpCode::SBandwidthModeChanged,
        OpCode::SLevelAnnounce,
        OpCode::CInput,
        OpCode::SUpdatePos,
        OpCode::CChat,
        OpCode::SChat,
        OpCode::CAdminCommand,
        OpCode::SAdminResponse,
        OpCode::Ping,
        OpCode::Pong,
        OpCode::Ack,
    ];

    /// OpCode.hpp's `isValidOpCode`, as a lookup.
    pub fn from_u8(v: u8) -> Option<OpCode> {
        OpCode::ALL.into_iter().find(|op| *op as u8 == v)
    }

    /// OpCode.hpp's `toString`.
    pub fn name(self) -> &'static str {
        match self {
            OpCode::CConnect => "C_CONNECT",
            OpCode::SAccept => "S_ACCEPT",
            OpCode::Disconnect => "DISCONNECT",
            OpCode::CGetUsers => "C_GET_USERS",
            OpCode::RGetUsers => "R_GET_USERS",
            OpCode::SUpdateState => "S_UPDATE_STATE",
            OpCode::SGameOver => "S_GAME_OVER",
            OpCode::CReady => "C_READY",
            OpCode::SGameStart => "S_GAME_START",
            OpCode::SPlayerReadyState => "S_PLAYER_READY_STATE",
            OpCode::CRequestLobbies => "C_REQUEST_LOBBIES",
            OpCode::SLobbyList => "S_LOBBY_LIST",
            OpCode::CJoinLobby => "C_JOIN_LOBBY",
            OpCode::SJoinLobbyResponse => "S_JOIN_LOBBY_RESPONSE",
            OpCode::SEntitySpawn => "S_ENTITY_SPAWN",
            OpCode::SEntityMove => "S_ENTITY_MOVE",
            OpCode::SEntityDestroy => "S_ENTITY_DESTROY",
            OpCode::SEntityHealth => "S_ENTITY_HEALTH",
            OpCode::SPowerupEvent => "S_POWERUP_EVENT",
            OpCode::SEntityMoveBatch => "S_ENTITY_MOVE_BATCH",
            OpCode::CSetBandwidthMode => "C_SET_BANDWIDTH_MODE",
            OpCode::SBandwidthModeChanged => "S_BANDWIDTH_MODE_CHANGED",
            OpCode::SLevelAnnounce => "S_LEVEL_ANNOUNCE",
            OpCode::CInput => "C_INPUT",
            OpCode::SUpdatePos => "S_UPDATE_POS",
            OpCode::CChat => "C_CHAT",
            OpCode::SChat => "S_CHAT",
            OpCode::CAdminCommand => "C_ADMIN_COMMAND",
            OpCode::SAdminResponse => "S_ADMIN_RESPONSE",
            OpCode::Ping => "PING",
            OpCode::Pong => "PONG",
            OpCode::Ack => "ACK",
        }
    }

    /// OpCode.hpp's `isReliable`.
    pub fn is_reliable(self) -> bool {
        !matches!(
            self,
            OpCode::SEntityMove
                | OpCode::SEntityMoveBatch
                | OpCode::CInput
                | OpCode::SUpdatePos
                | OpCode::Ping
                | OpCode::Pong
                | OpCode::Ack
        )
    }
}

/// Header.hpp's `Header`, in host order; [`Header::to_network`] is ByteOrderSpec's
/// `toNetwork(const Header&)` followed by the `memcpy` of the 16 packed bytes.
#[derive(Clone, Copy, Debug, Default)]
pub struct Header {
    pub magic: u8,
    pub opcode: u8,
    pub payload_size: u16,
    pub user_id: u32,
    pub seq_id: u16,
    pub ack_id: u16,
    pub flags: u8,
    pub reserved: [u8; 3],
}

impl Header {
    pub fn to_network(self) -> [u8; HEADER_SIZE] {
        let mut b = [0u8; HEADER_SIZE];
        b[0] = self.magic;
        b[1] = self.opcode;
        b[2..4].copy_from_slice(&self.payload_size.to_be_bytes());
        b[4..8].copy_from_slice(&self.user_id.to_be_bytes());
        b[8..10].copy_from_slice(&self.seq_id.to_be_bytes());
        b[10..12].copy_from_slice(&self.ack_id.to_be_bytes());
        b[12] = self.flags;
        b[13..16].copy_from_slice(&self.reserved);
        b
    }

    /// The same 16 bytes `memcpy`'d without `toNetwork`: NetworkClient::requestLobbyList sends
    /// `Header::create(C_REQUEST_LOBBIES, 0, 0, 0)` so.
    pub fn host_order(&self) -> [u8; HEADER_SIZE] {
        let mut b = [0u8; HEADER_SIZE];
        b[0] = self.magic;
        b[1] = self.opcode;
        b[2..4].copy_from_slice(&self.payload_size.to_le_bytes());
        b[4..8].copy_from_slice(&self.user_id.to_le_bytes());
        b[8..10].copy_from_slice(&self.seq_id.to_le_bytes());
        b[10..12].copy_from_slice(&self.ack_id.to_le_bytes());
        b[12] = self.flags;
        b[13..16].copy_from_slice(&self.reserved);
        b
    }
}

/// ByteOrderSpec's generic `toNetwork` for a trivially copyable struct without its own overload:
/// the struct's bytes (host order) swapped 4 at a time, then the rest 2 at a time, the odd last
/// byte left.
pub fn generic_to_network(host: &[u8]) -> Vec<u8> {
    let mut b = host.to_vec();
    let mut at = 0;
    while at + 4 <= b.len() {
        b[at..at + 4].reverse();
        at += 4;
    }
    while at + 2 <= b.len() {
        b[at..at + 2].reverse();
        at += 2;
    }
    b
}

/// A `char[N]` filled as the project does (`memcpy`/`strncpy` into a zeroed array).
pub fn chars<const N: usize>(s: &str) -> [u8; N] {
    let mut a = [0u8; N];
    let n = s.len().min(N);
    a[..n].copy_from_slice(&s.as_bytes()[..n]);
    a
}

// ---- Payloads.hpp, each with the serialisation the project gives it ------------------------

/// `AcceptPayload` (own overload: `newUserId` big-endian).
pub struct AcceptPayload {
    pub new_user_id: u32,
}
impl AcceptPayload {
    pub fn serialize_for_network(&self) -> Vec<u8> {
        self.new_user_id.to_be_bytes().to_vec()
    }
}

/// `DisconnectPayload`: one byte, sent with `Serializer::serialize` (a plain `memcpy`).
pub struct DisconnectPayload {
    pub reason: u8,
}
impl DisconnectPayload {
    pub fn serialize(&self) -> Vec<u8> {
        vec![self.reason]
    }
}

/// ConnectionEvents.hpp's `DisconnectReason`.
pub mod disconnect_reason {
    pub const TIMEOUT: u8 = 0;
    pub const MAX_RETRIES_EXCEEDED: u8 = 1;
    pub const PROTOCOL_ERROR: u8 = 2;
    pub const REMOTE_REQUEST: u8 = 3;
    pub const LOCAL_REQUEST: u8 = 4;
    pub const BANNED: u8 = 5;
}

/// `UpdateStatePayload` (own overload, one byte) and `GameState`.
pub struct UpdateStatePayload {
    pub state_id: u8,
}
impl UpdateStatePayload {
    pub fn serialize_for_network(&self) -> Vec<u8> {
        vec![self.state_id]
    }
}
pub mod game_state {
    pub const LOBBY: u8 = 0;
    pub const RUNNING: u8 = 1;
    pub const PAUSED: u8 = 2;
    pub const GAME_OVER: u8 = 3;
}

/// `EntityType`.
pub mod entity_type {
    pub const PLAYER: u8 = 0;
    pub const BYDOS: u8 = 1;
    pub const MISSILE: u8 = 2;
    pub const PICKUP: u8 = 3;
    pub const OBSTACLE: u8 = 4;
    pub const FORCE_POD: u8 = 5;
    pub const LASER_BEAM: u8 = 6;
    pub const BOSS: u8 = 7;
    pub const BOSS_PART: u8 = 8;
}

/// `InputMask`.
pub mod input_mask {
    pub const UP: u16 = 0x01;
    pub const DOWN: u16 = 0x02;
    pub const LEFT: u16 = 0x04;
    pub const RIGHT: u16 = 0x08;
    pub const SHOOT: u16 = 0x10;
    pub const FORCE_POD: u16 = 0x20;
    pub const CHARGE_LEVEL_1: u16 = 0x40;
    pub const CHARGE_LEVEL_2: u16 = 0x80;
    pub const WEAPON_SWITCH: u16 = 0x100;
}

/// `LobbyReadyPayload` (own overload returning it as it is).
pub struct LobbyReadyPayload {
    pub is_ready: u8,
}
impl LobbyReadyPayload {
    pub fn serialize_for_network(&self) -> Vec<u8> {
        vec![self.is_ready]
    }
}

/// `GameStartPayload` (own overload: the float's bits big-endian).
pub struct GameStartPayload {
    pub countdown_duration: f32,
}
impl GameStartPayload {
    pub fn serialize_for_network(&self) -> Vec<u8> {
        self.countdown_duration.to_bits().to_be_bytes().to_vec()
    }
}

/// `PlayerReadyStatePayload` (own overload: `userId` big-endian).
pub struct PlayerReadyStatePayload {
    pub user_id: u32,
    pub is_ready: u8,
}
impl PlayerReadyStatePayload {
    pub fn serialize_for_network(&self) -> Vec<u8> {
        let mut v = self.user_id.to_be_bytes().to_vec();
        v.push(self.is_ready);
        v
    }
}

/// `LobbyInfo`, appended by LobbyDiscoveryServer::buildLobbyListPacket as its raw bytes, `port`
/// made big-endian by hand first.
pub struct LobbyInfo {
    pub code: [u8; 6],
    pub port: u16,
    pub player_count: u8,
    pub max_players: u8,
    pub is_active: u8,
    pub level_name: [u8; 16],
}
impl LobbyInfo {
    pub fn bytes(&self) -> Vec<u8> {
        let mut v = self.code.to_vec();
        v.extend(self.port.to_be_bytes());
        v.extend([self.player_count, self.max_players, self.is_active]);
        v.extend(self.level_name);
        assert_eq!(v.len(), 27, "sizeof(LobbyInfo)");
        v
    }
}

/// `JoinLobbyPayload` (own overload returning it as it is).
pub struct JoinLobbyPayload {
    pub code: [u8; 6],
}
impl JoinLobbyPayload {
    pub fn serialize_for_network(&self) -> Vec<u8> {
        self.code.to_vec()
    }
}

/// `JoinLobbyResponsePayload` (own overload returning it as it is).
pub struct JoinLobbyResponsePayload {
    pub accepted: u8,
    pub reason: u8,
    pub level_name: [u8; 16],
}
impl JoinLobbyResponsePayload {
    pub fn serialize_for_network(&self) -> Vec<u8> {
        let mut v = vec![self.accepted, self.reason];
        v.extend(self.level_name);
        v
    }
}

/// `EntitySpawnPayload` (own overload: id and the floats' bits big-endian).
pub struct EntitySpawnPayload {
    pub entity_id: u32,
    pub kind: u8,
    pub sub_type: u8,
    pub pos_x: f32,
    pub pos_y: f32,
}
impl EntitySpawnPayload {
    pub fn serialize_for_network(&self) -> Vec<u8> {
        let mut v = self.entity_id.to_be_bytes().to_vec();
        v.extend([self.kind, self.sub_type]);
        v.extend(self.pos_x.to_bits().to_be_bytes());
        v.extend(self.pos_y.to_bits().to_be_bytes());
        assert_eq!(v.len(), 14, "sizeof(EntitySpawnPayload)");
        v
    }
}

/// `EntityMovePayload` (own overload, every field big-endian).
pub struct EntityMovePayload {
    pub entity_id: u32,
    pub server_tick: u32,
    pub pos_x: i16,
    pub pos_y: i16,
    pub vel_x: i16,
    pub vel_y: i16,
}
impl EntityMovePayload {
    pub fn serialize_for_network(&self) -> Vec<u8> {
        let mut v = self.entity_id.to_be_bytes().to_vec();
        v.extend(self.server_tick.to_be_bytes());
        for q in [self.pos_x, self.pos_y, self.vel_x, self.vel_y] {
            v.extend(q.to_be_bytes());
        }
        v
    }
}

/// `EntityMoveBatchHeader` and `EntityMoveBatchEntry` (own overloads, big-endian).
pub struct EntityMoveBatchEntry {
    pub entity_id: u32,
    pub pos_x: i16,
    pub pos_y: i16,
    pub vel_x: i16,
    pub vel_y: i16,
}
impl EntityMoveBatchEntry {
    pub fn serialize_for_network(&self) -> Vec<u8> {
        let mut v = self.entity_id.to_be_bytes().to_vec();
        for q in [self.pos_x, self.pos_y, self.vel_x, self.vel_y] {
            v.extend(q.to_be_bytes());
        }
        v
    }
}

/// `EntityDestroyPayload` (own overload).
pub struct EntityDestroyPayload {
    pub entity_id: u32,
}
impl EntityDestroyPayload {
    pub fn serialize_for_network(&self) -> Vec<u8> {
        self.entity_id.to_be_bytes().to_vec()
    }
}

/// `EntityHealthPayload` (own overload, big-endian).
pub struct EntityHealthPayload {
    pub entity_id: u32,
    pub current: i32,
    pub max: i32,
}
impl EntityHealthPayload {
    pub fn serialize_for_network(&self) -> Vec<u8> {
        let mut v = self.entity_id.to_be_bytes().to_vec();
        v.extend(self.current.to_be_bytes());
        v.extend(self.max.to_be_bytes());
        v
    }
}

/// `PowerUpEventPayload`: no overload of its own, so the generic swap of its 9 bytes: the id
/// comes out big-endian, then `powerUpType` and the float's first three bytes are reversed as one
/// word, the float's last byte left after them.
pub struct PowerUpEventPayload {
    pub player_id: u32,
    pub power_up_type: u8,
    pub duration: f32,
}
impl PowerUpEventPayload {
    pub fn serialize_for_network(&self) -> Vec<u8> {
        let mut host = self.player_id.to_le_bytes().to_vec();
        host.push(self.power_up_type);
        host.extend(self.duration.to_le_bytes());
        generic_to_network(&host)
    }
}

/// `BandwidthModePayload` (one byte: the generic template leaves it) and `BandwidthMode`.
pub struct BandwidthModePayload {
    pub mode: u8,
}
impl BandwidthModePayload {
    pub fn serialize_for_network(&self) -> Vec<u8> {
        generic_to_network(&[self.mode])
    }
}
pub mod bandwidth_mode {
    pub const NORMAL: u8 = 0;
    pub const LOW: u8 = 1;
}

/// `BandwidthModeChangedPayload`: NetworkServer::handleBandwidthMode stores
/// `toNetwork(userId)`, then the generic template swaps the 4 bytes back (host order again) and
/// swaps `mode` with `activeCount`.
pub struct BandwidthModeChangedPayload {
    pub user_id: u32,
    pub mode: u8,
    pub active_count: u8,
}
impl BandwidthModeChangedPayload {
    pub fn serialize_for_network(&self) -> Vec<u8> {
        let mut host = self.user_id.to_be().to_le_bytes().to_vec(); // toNetwork(userId)
        host.extend([self.mode, self.active_count]);
        generic_to_network(&host)
    }
}

/// `LevelAnnouncePayload`: three `char[32]`, no overload: the generic template reverses each
/// 4-byte group of the names.
pub struct LevelAnnouncePayload {
    pub level_name: [u8; 32],
    pub background: [u8; 32],
    pub level_music: [u8; 32],
}
impl LevelAnnouncePayload {
    pub fn serialize_for_network(&self) -> Vec<u8> {
        let mut host = self.level_name.to_vec();
        host.extend(self.background);
        host.extend(self.level_music);
        generic_to_network(&host)
    }
}

/// `InputPayload`: its overload returns it as it is, so the mask goes out in host order.
pub struct InputPayload {
    pub input_mask: u16,
}
impl InputPayload {
    pub fn serialize_for_network(&self) -> Vec<u8> {
        self.input_mask.to_le_bytes().to_vec()
    }
}

/// `UpdatePosPayload` (own overload, the floats' bits big-endian).
pub struct UpdatePosPayload {
    pub pos_x: f32,
    pub pos_y: f32,
}
impl UpdatePosPayload {
    pub fn serialize_for_network(&self) -> Vec<u8> {
        let mut v = self.pos_x.to_bits().to_be_bytes().to_vec();
        v.extend(self.pos_y.to_bits().to_be_bytes());
        v
    }
}

/// `ChatPayload` (own overload: `userId` swapped to big-endian). The client never sets `userId`
/// (0); NetworkServer::broadcastChat stores `toNetwork(senderId)` before the overload swaps it
/// again, so the server's goes out little-endian. `stored_user_id` is what the struct holds
/// before `serializeForNetwork`.
pub struct ChatPayload {
    pub stored_user_id: u32,
    pub message: [u8; 256],
}
impl ChatPayload {
    pub fn serialize_for_network(&self) -> Vec<u8> {
        let mut v = self.stored_user_id.to_be_bytes().to_vec();
        v.extend(self.message);
        v
    }
}

/// `AdminCommandPayload`: two bytes, no overload: swapped.
pub struct AdminCommandPayload {
    pub command_type: u8,
    pub param: u8,
}
impl AdminCommandPayload {
    pub fn serialize_for_network(&self) -> Vec<u8> {
        generic_to_network(&[self.command_type, self.param])
    }
}

/// `AdminResponsePayload`: 64 bytes, no overload: sixteen words reversed.
pub struct AdminResponsePayload {
    pub command_type: u8,
    pub success: u8,
    pub new_state: u8,
    pub message: [u8; 61],
}
impl AdminResponsePayload {
    pub fn serialize_for_network(&self) -> Vec<u8> {
        let mut host = vec![self.command_type, self.success, self.new_state];
        host.extend(self.message);
        generic_to_network(&host)
    }
}

/// `GameOverPayload` (own overload: the score big-endian; the padding zero).
pub struct GameOverPayload {
    pub final_score: u32,
    pub is_victory: u8,
}
impl GameOverPayload {
    pub fn serialize_for_network(&self) -> Vec<u8> {
        let mut v = self.final_score.to_be_bytes().to_vec();
        v.extend([self.is_victory, 0, 0, 0]);
        v
    }
}

/// NetworkServer::quantize with `kPosQuantScale`/`kVelQuantScale` = 16: `llround(value * 16)`,
/// clamped to i16.
pub fn quantize(value: f32) -> i16 {
    let rounded = (value * 16.0).round() as i64;
    rounded.clamp(i16::MIN as i64, i16::MAX as i64) as i16
}

// ---- LZ4 frames (Compressor.cpp) ------------------------------------------------------------

/// XXH32 (seed 0), for the LZ4 frame descriptor's header checksum.
pub fn xxh32(input: &[u8], seed: u32) -> u32 {
    const P1: u32 = 0x9E37_79B1;
    const P2: u32 = 0x85EB_CA77;
    const P3: u32 = 0xC2B2_AE3D;
    const P4: u32 = 0x27D4_EB2F;
    const P5: u32 = 0x1656_67B1;
    let round = |acc: u32, lane: u32| {
        acc.wrapping_add(lane.wrapping_mul(P2))
            .rotate_left(13)
            .wrapping_mul(P1)
    };
    let word = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let mut at = 0;
    let mut h = if input.len() >= 16 {
        let mut v = [
            seed.wrapping_add(P1).wrapping_add(P2),
            seed.wrapping_add(P2),
            seed,
            seed.wrapping_sub(P1),
        ];
        while at + 16 <= input.len() {
            for (i, lane) in v.iter_mut().enumerate() {
                *lane = round(*lane, word(&input[at + 4 * i..]));
            }
            at += 16;
        }
        v[0].rotate_left(1)
            .wrapping_add(v[1].rotate_left(7))
            .wrapping_add(v[2].rotate_left(12))
            .wrapping_add(v[3].rotate_left(18))
    } else {
        seed.wrapping_add(P5)
    };
    h = h.wrapping_add(input.len() as u32);
    while at + 4 <= input.len() {
        h = h
            .wrapping_add(word(&input[at..]).wrapping_mul(P3))
            .rotate_left(17)
            .wrapping_mul(P4);
        at += 4;
    }
    while at < input.len() {
        h = h
            .wrapping_add(u32::from(input[at]).wrapping_mul(P5))
            .rotate_left(11)
            .wrapping_mul(P1);
        at += 1;
    }
    h ^= h >> 15;
    h = h.wrapping_mul(P2);
    h ^= h >> 13;
    h = h.wrapping_mul(P3);
    h ^= h >> 16;
    h
}

/// What `LZ4F_compressFrame` makes of a payload with Compressor.cpp's preferences (level 0,
/// autoflush, `contentSize` set, the other fields zero): one independent block (the payload fits
/// the default 64 KiB block, so liblz4 makes it independent), the content size, no checksums.
/// The block is lz4_flex's compression, a valid LZ4 block though not necessarily liblz4's bytes;
/// stored raw (size's high bit) when compressing does not shrink it, as liblz4 does.
pub fn lz4_frame(payload: &[u8]) -> Vec<u8> {
    let mut f = 0x184D_2204u32.to_le_bytes().to_vec();
    // FLG: version 01, block independence, content size present.
    let mut descriptor = vec![0b0110_1000u8, 0x40]; // BD: 64 KiB blocks
    descriptor.extend((payload.len() as u64).to_le_bytes());
    let hc = ((xxh32(&descriptor, 0) >> 8) & 0xFF) as u8;
    f.extend(&descriptor);
    f.push(hc);
    let block = lz4_flex::block::compress(payload);
    if block.len() < payload.len() {
        f.extend((block.len() as u32).to_le_bytes());
        f.extend(block);
    } else {
        f.extend((payload.len() as u32 | 0x8000_0000).to_le_bytes());
        f.extend(payload);
    }
    f.extend(0u32.to_le_bytes()); // end mark
    f
}

/// Compressor.cpp with its default `Config` (64-byte threshold, expansion ratio at most 1.0).
pub struct Compressor;
impl Compressor {
    pub const MIN_SIZE_THRESHOLD: usize = 64;

    /// The payload to send and whether it is compressed.
    pub fn compress(payload: &[u8]) -> (Vec<u8>, bool) {
        if payload.len() < Self::MIN_SIZE_THRESHOLD {
            return (payload.to_vec(), false);
        }
        let frame = lz4_frame(payload);
        if frame.len() > payload.len() {
            return (payload.to_vec(), false);
        }
        (frame, true)
    }
}

/// A datagram as the project's `buildPacket`s assemble it: header then payload.
fn packet(header: Header, payload: &[u8]) -> Vec<u8> {
    let mut p = header.to_network().to_vec();
    p.extend_from_slice(payload);
    p
}

// ---- The client: Connection.cpp and NetworkClient.cpp ----------------------------------------

/// One client's connection state (Connection's `sequenceId_`, ReliableChannel's
/// `lastReceivedSeqId_`, the state machine's user id) and its queue of packets waiting for
/// `flushOutgoing`.
pub struct Client {
    pub port: u16,
    pub user_id: Option<u32>,
    sequence_id: u16,
    last_received_seq_id: u16,
    outgoing: Vec<Vec<u8>>,
    /// After its DISCONNECT: NetworkClient::disconnect resets the connection and closes the
    /// socket, so what still comes to its port is answered by nobody.
    closed: bool,
}

impl Client {
    pub fn new(port: u16) -> Client {
        Client {
            port,
            user_id: None,
            sequence_id: 0,
            last_received_seq_id: 0,
            outgoing: Vec::new(),
            closed: false,
        }
    }

    fn next_sequence_id(&mut self) -> u16 {
        let s = self.sequence_id;
        self.sequence_id = self.sequence_id.wrapping_add(1);
        s
    }

    /// Connection::buildPacket: every data packet carries IS_ACK, RELIABLE when its opcode is,
    /// COMPRESSED when the compressor kept its frame.
    pub fn build_packet(&mut self, opcode: OpCode, payload: &[u8]) -> Vec<u8> {
        let (body, compressed) = Compressor::compress(payload);
        let mut flags = flags::IS_ACK;
        if opcode.is_reliable() {
            flags |= self::flags::RELIABLE;
        }
        if compressed {
            flags |= self::flags::COMPRESSED;
        }
        let header = Header {
            magic: MAGIC_BYTE,
            opcode: opcode as u8,
            payload_size: body.len() as u16,
            user_id: self.user_id.expect("connected"),
            seq_id: self.next_sequence_id(),
            ack_id: self.last_received_seq_id,
            flags,
            reserved: [0; 3],
        };
        packet(header, &body)
    }

    /// Connection::buildConnectPacket: unassigned user, RELIABLE | IS_ACK, empty.
    pub fn build_connect(&mut self) -> Vec<u8> {
        let header = Header {
            magic: MAGIC_BYTE,
            opcode: OpCode::CConnect as u8,
            payload_size: 0,
            user_id: UNASSIGNED_USER_ID,
            seq_id: self.next_sequence_id(),
            ack_id: self.last_received_seq_id,
            flags: flags::RELIABLE | flags::IS_ACK,
            reserved: [0; 3],
        };
        packet(header, &[])
    }

    /// Connection::buildDisconnectPacket: RELIABLE | IS_ACK and an *empty* payload (the server's
    /// DISCONNECT carries the one-byte reason, the client's none).
    pub fn build_disconnect(&mut self) -> Vec<u8> {
        self.closed = true;
        let header = Header {
            magic: MAGIC_BYTE,
            opcode: OpCode::Disconnect as u8,
            payload_size: 0,
            user_id: self.user_id.unwrap_or(UNASSIGNED_USER_ID),
            seq_id: self.next_sequence_id(),
            ack_id: self.last_received_seq_id,
            flags: flags::RELIABLE | flags::IS_ACK,
            reserved: [0; 3],
        };
        packet(header, &[])
    }

    /// Connection::buildAckPacketInternal: opcode ACK, IS_ACK, empty.
    fn build_ack(&mut self, user_id: u32, ack_id: u16) -> Vec<u8> {
        let header = Header {
            magic: MAGIC_BYTE,
            opcode: OpCode::Ack as u8,
            payload_size: 0,
            user_id,
            seq_id: self.next_sequence_id(),
            ack_id,
            flags: flags::IS_ACK,
            reserved: [0; 3],
        };
        packet(header, &[])
    }

    /// NetworkClient::requestLobbyList: `Header::create(C_REQUEST_LOBBIES, 0, 0, 0)` sent in host
    /// order without `toNetwork` (all its multi-byte fields are zero), RELIABLE since the opcode
    /// is; Connection's sequence is not used.
    pub fn build_request_lobbies() -> Vec<u8> {
        Header {
            magic: MAGIC_BYTE,
            opcode: OpCode::CRequestLobbies as u8,
            payload_size: 0,
            user_id: 0,
            seq_id: 0,
            ack_id: 0,
            flags: flags::RELIABLE,
            reserved: [0; 3],
        }
        .host_order()
        .to_vec()
    }

    /// NetworkClient::processIncomingPacket for a datagram from the game server: what it sends at
    /// once. Connection::processPacket first records a RELIABLE packet and queues an ACK of the
    /// last received sequence (when the user id is known: for S_ACCEPT it is known only after,
    /// and `handleConnectAccept` queues that ACK); then, for a reliable opcode,
    /// NetworkClient::sendAck sends an ACK of that packet's sequence at once.
    pub fn receive(&mut self, datagram: &[u8]) -> Vec<Vec<u8>> {
        if self.closed {
            return Vec::new();
        }
        let opcode = OpCode::from_u8(datagram[1]).expect("a known opcode");
        let seq = u16::from_be_bytes([datagram[8], datagram[9]]);
        let header_flags = datagram[12];
        if header_flags & flags::RELIABLE != 0 {
            self.last_received_seq_id = seq; // recordReceived: the sequences only grow here
            if let Some(uid) = self.user_id {
                let ack = self.build_ack(uid, self.last_received_seq_id);
                self.outgoing.push(ack);
            }
        }
        if opcode == OpCode::SAccept {
            let uid = u32::from_be_bytes(datagram[16..20].try_into().unwrap());
            self.user_id = Some(uid);
            let ack = self.build_ack(uid, self.last_received_seq_id);
            self.outgoing.push(ack);
        }
        let mut now = Vec::new();
        if opcode.is_reliable() {
            if let Some(uid) = self.user_id {
                now.push(self.build_ack(uid, seq));
            }
        }
        now
    }

    /// NetworkClient::flushOutgoing (once a frame): the queued packets, in order.
    pub fn flush(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.outgoing)
    }
}

// ---- The servers: NetworkServer.cpp and LobbyDiscoveryServer.cpp ------------------------------

/// NetworkServer's `ClientConnection`: endpoint, user id, its own sequence counter and the last
/// reliable sequence received from it.
pub struct ClientConnection {
    pub port: u16,
    pub user_id: u32,
    next_seq_id: u16,
    last_received_seq_id: u16,
    pub joined: bool,
}

pub struct Server {
    pub clients: Vec<ClientConnection>,
    next_user_id: u32,
    server_tick: u32,
    pub expected_lobby_code: String,
    pub level_id: String,
}

impl Server {
    pub fn new(code: &str, level_id: &str) -> Server {
        Server {
            clients: Vec::new(),
            next_user_id: 1,
            server_tick: 0,
            expected_lobby_code: code.into(),
            level_id: level_id.into(),
        }
    }

    /// `nextServerTick`: the counter's next value, from 1.
    pub fn next_server_tick(&mut self) -> u32 {
        self.server_tick += 1;
        self.server_tick
    }

    /// NetworkServer::buildPacket: IS_ACK always, RELIABLE when asked, COMPRESSED when kept.
    pub fn build_packet(
        opcode: OpCode,
        payload: &[u8],
        user_id: u32,
        seq_id: u16,
        ack_id: u16,
        reliable: bool,
    ) -> Vec<u8> {
        let (body, compressed) = Compressor::compress(payload);
        let mut f = flags::IS_ACK;
        if reliable {
            f |= flags::RELIABLE;
        }
        if compressed {
            f |= flags::COMPRESSED;
        }
        let header = Header {
            magic: MAGIC_BYTE,
            opcode: opcode as u8,
            payload_size: body.len() as u16,
            user_id,
            seq_id,
            ack_id,
            flags: f,
            reserved: [0; 3],
        };
        packet(header, &body)
    }

    fn index(&self, port: u16) -> Option<usize> {
        self.clients.iter().position(|c| c.port == port)
    }

    /// NetworkServer::sendToClient: the client's next sequence, the last one received from it.
    pub fn send_to_client(&mut self, i: usize, opcode: OpCode, payload: &[u8]) -> (u16, Vec<u8>) {
        let c = &mut self.clients[i];
        let seq = c.next_seq_id;
        c.next_seq_id = c.next_seq_id.wrapping_add(1);
        let p = Self::build_packet(
            opcode,
            payload,
            SERVER_USER_ID,
            seq,
            c.last_received_seq_id,
            opcode.is_reliable(),
        );
        (c.port, p)
    }

    /// NetworkServer::broadcastToAll: every connected client, in the order they connected.
    pub fn broadcast(&mut self, opcode: OpCode, payload: &[u8]) -> Vec<(u16, Vec<u8>)> {
        (0..self.clients.len())
            .map(|i| self.send_to_client(i, opcode, payload))
            .collect()
    }

    /// NetworkServer::processIncomingPacket for a datagram from `port`: what the server sends back
    /// (the game's reactions, which go through its callbacks, are the session's business).
    pub fn receive(&mut self, port: u16, datagram: &[u8]) -> Vec<(u16, Vec<u8>)> {
        let opcode = OpCode::from_u8(datagram[1]).expect("a known opcode");
        let seq = u16::from_be_bytes([datagram[8], datagram[9]]);
        let mut out = Vec::new();
        // Every reliable opcode from a known client is recorded and answered with an empty PONG.
        if opcode.is_reliable() {
            if let Some(i) = self.index(port) {
                self.clients[i].last_received_seq_id = seq;
                out.push(self.send_to_client(i, OpCode::Pong, &[]));
            }
        }
        match opcode {
            OpCode::CConnect => {
                assert!(
                    self.index(port).is_none(),
                    "handleConnect's reconnection path"
                );
                let user_id = self.next_user_id;
                self.next_user_id += 1;
                self.clients.push(ClientConnection {
                    port,
                    user_id,
                    next_seq_id: 0,
                    last_received_seq_id: seq,
                    joined: false,
                });
                let i = self.clients.len() - 1;
                let accept = AcceptPayload {
                    new_user_id: user_id,
                };
                out.push(self.send_to_client(i, OpCode::SAccept, &accept.serialize_for_network()));
            }
            OpCode::CJoinLobby => {
                let i = self.index(port).expect("joined after connecting");
                let code = String::from_utf8_lossy(&datagram[16..22]).into_owned();
                assert_eq!(
                    code, self.expected_lobby_code,
                    "the session joins with the code"
                );
                self.clients[i].joined = true;
                // sendUserList: count, then each id big-endian, built by hand.
                let ids: Vec<u32> = self.clients.iter().map(|c| c.user_id).collect();
                let mut users = vec![ids.len() as u8];
                for id in ids {
                    users.extend(id.to_be_bytes());
                }
                out.push(self.send_to_client(i, OpCode::RGetUsers, &users));
                let resp = JoinLobbyResponsePayload {
                    accepted: 1,
                    reason: 0,
                    level_name: chars::<16>(&self.level_id),
                };
                out.push(self.send_to_client(
                    i,
                    OpCode::SJoinLobbyResponse,
                    &resp.serialize_for_network(),
                ));
            }
            OpCode::Ping => {
                // handlePing: a PONG of the client's next sequence, acknowledging the PING's.
                let i = self.index(port).expect("a known client");
                let c = &mut self.clients[i];
                let s = c.next_seq_id;
                c.next_seq_id = c.next_seq_id.wrapping_add(1);
                out.push((
                    port,
                    Self::build_packet(OpCode::Pong, &[], SERVER_USER_ID, s, seq, false),
                ));
            }
            OpCode::Disconnect => {
                // handleDisconnect: a DISCONNECT with the reason, sequence 0, acknowledging the
                // client's, not reliable; then the client is forgotten.
                let i = self.index(port).expect("a known client");
                let reason = DisconnectPayload {
                    reason: disconnect_reason::REMOTE_REQUEST,
                };
                out.push((
                    port,
                    Self::build_packet(
                        OpCode::Disconnect,
                        &reason.serialize(),
                        SERVER_USER_ID,
                        0,
                        seq,
                        false,
                    ),
                ));
                self.clients.remove(i);
            }
            _ => {}
        }
        out
    }

    /// LobbyDiscoveryServer::buildLobbyListPacket: a zeroed header with RELIABLE only, the server
    /// user id, sequence and ack 0; count then each `LobbyInfo`.
    pub fn lobby_list(lobbies: &[LobbyInfo]) -> Vec<u8> {
        let mut payload = vec![lobbies.len() as u8];
        for l in lobbies {
            payload.extend(l.bytes());
        }
        let header = Header {
            magic: MAGIC_BYTE,
            opcode: OpCode::SLobbyList as u8,
            payload_size: payload.len() as u16,
            user_id: SERVER_USER_ID,
            seq_id: 0,
            ack_id: 0,
            flags: flags::RELIABLE,
            reserved: [0; 3],
        };
        packet(header, &payload)
    }
}

// ---- A session --------------------------------------------------------------------------------

/// One UDP datagram of the capture.
#[derive(Clone, Debug)]
pub struct Datagram {
    /// Microseconds since [`START_SECONDS`].
    pub time_us: u64,
    pub src_port: u16,
    pub dst_port: u16,
    pub bytes: Vec<u8>,
}

impl Datagram {
    /// The project's name of the datagram's opcode (OpCode.hpp's `toString`), or None.
    pub fn name(&self) -> Option<&'static str> {
        OpCode::from_u8(self.bytes[1]).map(OpCode::name)
    }

    pub fn opcode(&self) -> u8 {
        self.bytes[1]
    }

    pub fn to_server(&self) -> bool {
        matches!(self.dst_port, DISCOVERY_PORT | GAME_PORT)
    }
}

/// Builds the capture: who sends what, when, and what the peers answer.
struct Script {
    out: Vec<Datagram>,
    now_us: u64,
    server: Server,
    a: Client,
    b: Client,
}

/// The two clients.
#[derive(Clone, Copy, PartialEq)]
enum Who {
    A,
    B,
}

impl Script {
    fn at_ms(&mut self, ms: u64) {
        self.now_us = self.now_us.max(ms * 1000);
    }

    fn emit(&mut self, src_port: u16, dst_port: u16, bytes: Vec<u8>) {
        self.out.push(Datagram {
            time_us: self.now_us,
            src_port,
            dst_port,
            bytes,
        });
        self.now_us += 40;
    }

    fn client(&mut self, who: Who) -> &mut Client {
        match who {
            Who::A => &mut self.a,
            Who::B => &mut self.b,
        }
    }

    fn who(&self, port: u16) -> Who {
        if port == self.a.port {
            Who::A
        } else {
            assert_eq!(port, self.b.port);
            Who::B
        }
    }

    /// Server datagrams delivered: each client answers what it must at once, then flushes its
    /// queue (its next frame, 1 ms later).
    fn deliver(&mut self, from_server: Vec<(u16, Vec<u8>)>) {
        let mut flushes = Vec::new();
        for (port, bytes) in from_server {
            self.emit(GAME_PORT, port, bytes.clone());
            let who = self.who(port);
            let replies = self.client(who).receive(&bytes);
            for r in replies {
                self.emit(port, GAME_PORT, r);
            }
            if !flushes.contains(&who) {
                flushes.push(who);
            }
        }
        self.now_us += 1000;
        for who in flushes {
            let port = self.client(who).port;
            for p in self.client(who).flush() {
                self.emit(port, GAME_PORT, p);
            }
        }
    }

    /// A client datagram to the game server, and what follows from it.
    fn send(&mut self, who: Who, bytes: Vec<u8>) {
        let port = self.client(who).port;
        self.emit(port, GAME_PORT, bytes.clone());
        self.now_us += 110;
        let answers = self.server.receive(port, &bytes);
        self.deliver(answers);
    }

    fn send_packet(&mut self, who: Who, opcode: OpCode, payload: &[u8]) {
        let p = self.client(who).build_packet(opcode, payload);
        self.send(who, p);
    }

    fn broadcast(&mut self, opcode: OpCode, payload: &[u8]) {
        let out = self.server.broadcast(opcode, payload);
        self.deliver(out);
    }

    /// The discovery exchange on port 4242 (no ACK: the client is not connected yet, so
    /// NetworkClient::sendAck has no endpoint and Connection has no user id).
    fn discover(&mut self, client_port: u16, players: u8) {
        self.emit(client_port, DISCOVERY_PORT, Client::build_request_lobbies());
        self.now_us += 90;
        let list = Server::lobby_list(&[LobbyInfo {
            code: chars::<6>(LOBBY_CODE),
            port: GAME_PORT,
            player_count: players,
            max_players: 4,
            is_active: 1,
            level_name: chars::<16>(LEVEL_ID),
        }]);
        self.emit(DISCOVERY_PORT, client_port, list);
    }

    /// Connect, join the lobby with its code, say ready; the server's game logic then broadcasts
    /// the player's ready state (ServerApp's `setOnPlayerReadyStateChanged` callback).
    fn join(&mut self, who: Who) {
        let p = self.client(who).build_connect();
        self.send(who, p);
        let join = JoinLobbyPayload {
            code: chars::<6>(LOBBY_CODE),
        };
        self.now_us += 20_000;
        self.send_packet(who, OpCode::CJoinLobby, &join.serialize_for_network());
        self.now_us += 30_000;
        let ready = LobbyReadyPayload { is_ready: 1 };
        self.send_packet(who, OpCode::CReady, &ready.serialize_for_network());
        let user_id = self.client(who).user_id.unwrap();
        let state = PlayerReadyStatePayload {
            user_id,
            is_ready: 1,
        };
        self.broadcast(OpCode::SPlayerReadyState, &state.serialize_for_network());
    }

    fn spawn(&mut self, entity_id: u32, kind: u8, sub_type: u8, x: f32, y: f32) {
        let p = EntitySpawnPayload {
            entity_id,
            kind,
            sub_type,
            pos_x: x,
            pos_y: y,
        };
        self.broadcast(OpCode::SEntitySpawn, &p.serialize_for_network());
    }

    fn destroy(&mut self, entity_id: u32) {
        let p = EntityDestroyPayload { entity_id };
        self.broadcast(OpCode::SEntityDestroy, &p.serialize_for_network());
    }

    /// NetworkServer::moveEntitiesBatch: count, a shared tick, the entries.
    fn move_batch(&mut self, entities: &[(u32, f32, f32, f32, f32)]) {
        let tick = self.server.next_server_tick();
        let mut payload = vec![entities.len() as u8];
        payload.extend(tick.to_be_bytes());
        for &(id, x, y, vx, vy) in entities {
            let e = EntityMoveBatchEntry {
                entity_id: id,
                pos_x: quantize(x),
                pos_y: quantize(y),
                vel_x: quantize(vx),
                vel_y: quantize(vy),
            };
            payload.extend(e.serialize_for_network());
        }
        self.broadcast(OpCode::SEntityMoveBatch, &payload);
    }
}

pub const LOBBY_CODE: &str = "K7QX2M";
pub const LEVEL_ID: &str = "level_1";

/// The session: two clients find the lobby on 4242, connect to it on 4243, join, get ready; the
/// game starts (countdown, state, level announce), spawns both ships, runs 14 frames of inputs
/// and batched moves with two Bydos spawned, one hit and destroyed, a PING from each client, a
/// chat line, a bandwidth-mode change; then A leaves (its ship destroyed for B) and B leaves.
pub fn session() -> Vec<Datagram> {
    let mut s = Script {
        out: Vec::new(),
        now_us: 0,
        server: Server::new(LOBBY_CODE, LEVEL_ID),
        a: Client::new(A_GAME_PORT),
        b: Client::new(B_GAME_PORT),
    };
    s.discover(A_DISCOVERY_PORT, 0);
    s.at_ms(100);
    s.join(Who::A);
    s.at_ms(1_000);
    s.discover(B_DISCOVERY_PORT, 1);
    s.at_ms(1_100);
    s.join(Who::B);

    // Everybody ready: the countdown (ServerApp's setOnCountdownStarted), then the game.
    s.at_ms(1_300);
    let start = GameStartPayload {
        countdown_duration: 3.0,
    };
    s.broadcast(OpCode::SGameStart, &start.serialize_for_network());
    s.at_ms(4_300);
    let running = UpdateStatePayload {
        state_id: game_state::RUNNING,
    };
    s.broadcast(OpCode::SUpdateState, &running.serialize_for_network());
    // The names of the project's config/game/levels/level1-custom.toml.
    let announce = LevelAnnouncePayload {
        level_name: chars::<32>("MonPtit1"),
        background: chars::<32>("SpatialStation"),
        level_music: chars::<32>("ChillMusic"),
    };
    s.broadcast(OpCode::SLevelAnnounce, &announce.serialize_for_network());
    s.spawn(1, entity_type::PLAYER, 0, 100.0, 300.0);
    s.spawn(2, entity_type::PLAYER, 1, 100.0, 600.0);

    let (mut ax, mut bx) = (100.0f32, 100.0f32);
    let mut enemies: Vec<(u32, f32, f32)> = Vec::new();
    for frame in 0..14u64 {
        s.at_ms(4_400 + frame * 16);
        let a_mask = if frame % 3 == 2 {
            input_mask::RIGHT | input_mask::SHOOT
        } else {
            input_mask::RIGHT
        };
        let b_mask = if frame < 7 {
            input_mask::UP | input_mask::RIGHT
        } else {
            input_mask::RIGHT | input_mask::CHARGE_LEVEL_1
        };
        s.send_packet(
            Who::A,
            OpCode::CInput,
            &InputPayload { input_mask: a_mask }.serialize_for_network(),
        );
        s.send_packet(
            Who::B,
            OpCode::CInput,
            &InputPayload { input_mask: b_mask }.serialize_for_network(),
        );
        ax += 4.0;
        bx += 4.0;
        let mut moves = vec![
            (1, ax, 300.0, 240.0, 0.0),
            (2, bx, 600.0 - frame as f32 * 2.5, 240.0, -150.0),
        ];
        for e in &mut enemies {
            e.1 -= 3.25;
            moves.push((e.0, e.1, e.2, -195.0, 0.0));
        }
        s.move_batch(&moves);
        match frame {
            3 => {
                s.spawn(100, entity_type::BYDOS, 1, 1900.0, 250.0);
                s.spawn(101, entity_type::BYDOS, 2, 1900.0, 700.5);
                enemies = vec![(100, 1900.0, 250.0), (101, 1900.0, 700.5)];
            }
            5 => {
                let p = s.a.build_packet(OpCode::Ping, &[]);
                s.send(Who::A, p);
            }
            6 => {
                let p = s.b.build_packet(OpCode::Ping, &[]);
                s.send(Who::B, p);
            }
            8 => {
                let hit = EntityHealthPayload {
                    entity_id: 100,
                    current: 1,
                    max: 3,
                };
                s.broadcast(OpCode::SEntityHealth, &hit.serialize_for_network());
            }
            9 => {
                // NetworkClient::sendChat: a zeroed payload, `userId` never set.
                let chat = ChatPayload {
                    stored_user_id: 0,
                    message: chars::<256>("gl hf, watch the top lane"),
                };
                s.send_packet(Who::A, OpCode::CChat, &chat.serialize_for_network());
                // The game's chat callback: NetworkServer::broadcastChat(senderId = 1, text).
                let echo = ChatPayload {
                    stored_user_id: 1u32.to_be(),
                    message: chars::<256>("gl hf, watch the top lane"),
                };
                s.broadcast(OpCode::SChat, &echo.serialize_for_network());
            }
            10 => {
                s.destroy(100);
                enemies.retain(|e| e.0 != 100);
            }
            11 => {
                let low = BandwidthModePayload {
                    mode: bandwidth_mode::LOW,
                };
                s.send_packet(
                    Who::B,
                    OpCode::CSetBandwidthMode,
                    &low.serialize_for_network(),
                );
                let changed = BandwidthModeChangedPayload {
                    user_id: 2,
                    mode: bandwidth_mode::LOW,
                    active_count: 1,
                };
                s.broadcast(
                    OpCode::SBandwidthModeChanged,
                    &changed.serialize_for_network(),
                );
            }
            12 => {
                // NetworkServer::moveEntity, the unbatched update.
                let tick = s.server.next_server_tick();
                let m = EntityMovePayload {
                    entity_id: 101,
                    server_tick: tick,
                    pos_x: quantize(enemies[0].1),
                    pos_y: quantize(enemies[0].2),
                    vel_x: quantize(-195.0),
                    vel_y: quantize(12.5),
                };
                s.broadcast(OpCode::SEntityMove, &m.serialize_for_network());
            }
            _ => {}
        }
    }

    // A leaves: its DISCONNECT, the server's PONG and DISCONNECT; its ship destroyed for B.
    s.at_ms(4_800);
    let p = s.a.build_disconnect();
    s.send(Who::A, p);
    s.destroy(1);
    s.at_ms(5_200);
    let p = s.b.build_disconnect();
    s.send(Who::B, p);
    s.out
}

// ---- Faults -----------------------------------------------------------------------------------

/// An opcode OpCode.hpp does not define.
pub const UNKNOWN_OPCODE: u8 = 0x7E;

/// The session with the `payload_size` of the S_ENTITY_SPAWN of Bydos 100 to client A claiming
/// 4 more bytes than follow the header; and that datagram's frame number (1-based).
pub fn with_wrong_length() -> (Vec<Datagram>, u64) {
    let mut d = session();
    let i = d
        .iter()
        .position(|g| {
            g.opcode() == OpCode::SEntitySpawn as u8
                && g.dst_port == A_GAME_PORT
                && g.bytes[16..20] == 100u32.to_be_bytes()
        })
        .unwrap();
    let size = u16::from_be_bytes([d[i].bytes[2], d[i].bytes[3]]);
    d[i].bytes[2..4].copy_from_slice(&(size + 4).to_be_bytes());
    (d, i as u64 + 1)
}

/// The session with the opcode of client B's 10th C_INPUT replaced by [`UNKNOWN_OPCODE`]; and
/// that datagram's frame number.
pub fn with_unknown_type() -> (Vec<Datagram>, u64) {
    let mut d = session();
    let i = d
        .iter()
        .enumerate()
        .filter(|(_, g)| g.opcode() == OpCode::CInput as u8 && g.src_port == B_GAME_PORT)
        .nth(9)
        .unwrap()
        .0;
    d[i].bytes[1] = UNKNOWN_OPCODE;
    (d, i as u64 + 1)
}

// RTGP has no checksum: there is no checksum fault to make.

// ---- The capture ------------------------------------------------------------------------------

/// The datagrams as a little-endian microsecond pcap of Ethernet/IPv4/UDP frames, every address
/// 127.0.0.1 (a loopback capture), IPv4 identifications counting up.
pub fn pcap(datagrams: &[Datagram]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend(0xA1B2_C3D4u32.to_le_bytes());
    out.extend(2u16.to_le_bytes());
    out.extend(4u16.to_le_bytes());
    out.extend([0u8; 8]);
    out.extend(65535u32.to_le_bytes());
    out.extend(1u32.to_le_bytes()); // LINKTYPE_ETHERNET
    for (n, d) in datagrams.iter().enumerate() {
        let mut template = vec![0u8; 12];
        template.extend([0x08, 0x00]);
        let id = (n as u16).wrapping_add(0x3a00).to_be_bytes();
        template.extend([0x45, 0, 0, 0, id[0], id[1], 0x40, 0, 64, 17, 0, 0]);
        template.extend([127, 0, 0, 1, 127, 0, 0, 1]);
        template.extend(d.src_port.to_be_bytes());
        template.extend(d.dst_port.to_be_bytes());
        template.extend([0, 0, 0, 0]);
        let frame = crate::faults::with_payload(&template, &d.bytes);
        let ts = START_SECONDS * 1_000_000 + d.time_us;
        out.extend(((ts / 1_000_000) as u32).to_le_bytes());
        out.extend(((ts % 1_000_000) as u32).to_le_bytes());
        out.extend((frame.len() as u32).to_le_bytes());
        out.extend((frame.len() as u32).to_le_bytes());
        out.extend(frame);
    }
    out
}

/// Writes [`pcap`] of `datagrams` to `path`.
pub fn write_capture(path: &Path, datagrams: &[Datagram]) {
    std::fs::write(path, pcap(datagrams)).unwrap();
}
