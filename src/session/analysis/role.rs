//! What a message means to a session, whatever the dialect: a handshake step, a ping, a
//! snapshot... Everything else in the analysis works on these roles, so a new dialect only has to
//! say here which of its messages play which role.

use crate::datagram::Dialect;
use crate::proto::Direction;
use crate::session::event::DatagramEvent;

/// The steps of a session, in the order the rtype handshake takes them (001, 002 §5):
/// HELLO → SERVER_HELLO → JOIN_REQUEST → JOIN_ACCEPT or JOIN_DENY → READY → ALL_READY /
/// COUNTDOWN → GAME_START → LEVEL_INIT → … → GAME_END → DISCONNECT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Hello,
    ServerHello,
    JoinRequest,
    JoinAccept,
    JoinDeny,
    Ready,
    AllReady,
    Countdown,
    GameStart,
    LevelInit,
    GameEnd,
    /// The client's DISCONNECT.
    Disconnect,
    /// The server ending the session: SERVER_DISCONNECT, KICK or BAN.
    ServerEnd,
}

impl Step {
    pub const ALL: [Step; 13] = [
        Step::Hello,
        Step::ServerHello,
        Step::JoinRequest,
        Step::JoinAccept,
        Step::JoinDeny,
        Step::Ready,
        Step::AllReady,
        Step::Countdown,
        Step::GameStart,
        Step::LevelInit,
        Step::GameEnd,
        Step::Disconnect,
        Step::ServerEnd,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            Step::Hello => "HELLO",
            Step::ServerHello => "SERVER_HELLO",
            Step::JoinRequest => "JOIN_REQUEST",
            Step::JoinAccept => "JOIN_ACCEPT",
            Step::JoinDeny => "JOIN_DENY",
            Step::Ready => "READY",
            Step::AllReady => "ALL_READY",
            Step::Countdown => "COUNTDOWN",
            Step::GameStart => "GAME_START",
            Step::LevelInit => "LEVEL_INIT",
            Step::GameEnd => "GAME_END",
            Step::Disconnect => "DISCONNECT",
            Step::ServerEnd => "SERVER_DISCONNECT",
        }
    }

    pub const fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// What one message is to the session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Step(Step),
    Ping,
    Pong,
    Input,
    /// The client acknowledging a reliable message (CLIENT_ACKNOWLEDGE).
    Ack,
    Snapshot,
    SnapshotChunk,
    /// Another periodic stream the server sends (rt's health and weapon snapshots).
    Periodic,
    /// Other game state the server sends once the game runs (spawns, destroys, level events).
    GameState,
    Other,
}

impl Role {
    /// The role of a decoded datagram's message.
    pub fn of(event: &DatagramEvent<'_>) -> Role {
        match (event.dialect, event.code) {
            (Dialect::Rtype, Some(code)) => rtype(code),
            _ => by_name(event.name, event.direction),
        }
    }
}

/// rtype message types (002 §5, 001 §2).
fn rtype(code: u8) -> Role {
    match code {
        0x01 => Role::Step(Step::Hello),
        0x02 => Role::Step(Step::JoinRequest),
        0x03 => Role::Step(Step::Ready),
        0x04 => Role::Ping,
        0x05 => Role::Input,
        0x06 => Role::Ack,
        0x07 => Role::Step(Step::Disconnect),
        0x10 => Role::Step(Step::ServerHello),
        0x11 => Role::Step(Step::JoinAccept),
        0x12 => Role::Step(Step::JoinDeny),
        0x13 => Role::Pong,
        0x14 => Role::Snapshot,
        0x15 => Role::Step(Step::GameStart),
        0x16 => Role::Step(Step::GameEnd),
        0x17 | 0x18 | 0x1A => Role::Step(Step::ServerEnd),
        0x1D | 0x1E | 0x32 => Role::GameState,
        0x1F => Role::Step(Step::AllReady),
        0x20 => Role::Step(Step::Countdown),
        0x21 => Role::SnapshotChunk,
        0x30 => Role::Step(Step::LevelInit),
        _ => Role::Other,
    }
}

/// Who sends a named message that plays a role.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sender {
    Client,
    Server,
}

/// Dialects that name their messages (rt's document names, rtnp's JSON `type` and keep-alive
/// strings): the names of documents 003 and 004 (and of real servers) that play a session role,
/// and who sends them. rt's handshake is CLIENT_CONNECT → SERVER_ACCEPT (003); rtnp's is any
/// first client message → assign_id (004 §7.1).
const NAMED: &[(&str, Sender, Role)] = {
    use Sender::{Client as C, Server as S};
    &[
        ("CLIENT_CONNECT", C, Role::Step(Step::Hello)),
        ("connect_request", C, Role::Step(Step::Hello)),
        ("SERVER_ACCEPT", S, Role::Step(Step::JoinAccept)),
        ("assign_id", S, Role::Step(Step::JoinAccept)),
        ("SERVER_REJECT", S, Role::Step(Step::JoinDeny)),
        ("PLAYER_IS_READY", C, Role::Step(Step::Ready)),
        ("GAME_START", S, Role::Step(Step::GameStart)),
        ("LEVEL_START", S, Role::Step(Step::GameStart)),
        ("game_started", S, Role::Step(Step::GameStart)),
        ("GAME_END", S, Role::Step(Step::GameEnd)),
        ("CLIENT_DISCONNECT", C, Role::Step(Step::Disconnect)),
        ("disconnect", C, Role::Step(Step::Disconnect)),
        ("leave_lobby", C, Role::Step(Step::Disconnect)),
        ("PING", C, Role::Ping),
        ("PONG", S, Role::Pong),
        ("PLAYER_INPUT", C, Role::Input),
        ("player_input", C, Role::Input),
        ("TRANSFORM_SNAPSHOT", S, Role::Snapshot),
        ("snapshot", S, Role::Snapshot),
        // rt's other component snapshots: periodic streams of the same ticks, judged on their own.
        ("HEALTH_SNAPSHOT", S, Role::Periodic),
        ("WEAPON_SNAPSHOT", S, Role::Periodic),
    ]
};

/// The entry of [`NAMED`] for a message sent in `direction`: a name sent the wrong way plays no
/// role.
fn named(
    name: &str,
    direction: Option<Direction>,
) -> Option<&'static (&'static str, Sender, Role)> {
    let sender = match direction? {
        Direction::ClientToServer => Sender::Client,
        Direction::ServerToClient => Sender::Server,
    };
    NAMED.iter().find(|(n, s, _)| *n == name && *s == sender)
}

fn by_name(name: &str, direction: Option<Direction>) -> Role {
    named(name, direction).map_or(Role::Other, |(_, _, role)| *role)
}

/// The name of a datagram's message as it lives for the whole run (steps keep it): the
/// description's, or for a name only real traffic uses, the entry of [`NAMED`].
pub fn static_name(event: &DatagramEvent<'_>) -> Option<&'static str> {
    event
        .message
        .map(|m| m.name)
        .or_else(|| named(event.name, event.direction).map(|(n, _, _)| *n))
}

/// How soon a byte-identical repeat of a datagram must follow to be a duplicate, in nanoseconds.
/// In dialects whose headers carry sequence numbers (rtype, rt) any repeat within
/// [`super::DUPLICATE_WINDOW_NANOS`] is a resend. rtnp has none: its messages that carry no
/// count of their own (inputs, which are stateless (004 §6.3), keep-alives, snapshots without
/// `epoch`) legitimately repeat unchanged from one tick to the next, so only a copy within
/// [`BURST_NANOS`], far less than a tick, is one; its other messages are judged as rtype's.
pub fn duplicate_window(event: &DatagramEvent<'_>) -> i64 {
    if event.dialect != Dialect::Rtnp || event.sequence.is_some() {
        return super::DUPLICATE_WINDOW_NANOS;
    }
    match Role::of(event) {
        Role::Input | Role::Ping | Role::Pong | Role::Snapshot => BURST_NANOS,
        _ => super::DUPLICATE_WINDOW_NANOS,
    }
}

/// A repeat this soon is a copy, not the next tick's message: a tenth of a 60 Hz tick.
pub const BURST_NANOS: i64 = 1_600_000;
