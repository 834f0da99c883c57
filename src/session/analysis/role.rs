//! What a message means to a session, whatever the dialect: a handshake step, a ping, a
//! snapshot... Everything else in the analysis works on these roles, which the dialects'
//! descriptions give their messages (`role`).

use crate::datagram::Dialect;
use crate::proto::schema::MessageRole;
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
    /// The role of a decoded datagram's message: its description's, else (an rtnp name only
    /// real traffic uses) [`NAMED`]'s.
    pub fn of(event: &DatagramEvent<'_>) -> Role {
        let Some(described) = event.role else {
            return match event.dialect {
                Dialect::Rtnp => by_name(event.name, event.direction),
                _ => Role::Other,
            };
        };
        // rtype's messages play their role by their type code, whoever sends them; the other
        // dialects' only from the side the description says sends them, or from either side
        // when it names none.
        let direction = match (described.sender, event.direction) {
            (Some(sender), _) if event.dialect == Dialect::Rtype => sender,
            (Some(sender), Some(sent)) if sent == sender => sender,
            (None, Some(sent)) => sent,
            _ => return Role::Other,
        };
        of_message(described.role, direction)
    }
}

/// What a message role of the description is to the session, for a message sent `direction`:
/// a server's HELLO answers the client's, and a server's DISCONNECT (KICK, BAN) ends the session.
fn of_message(role: MessageRole, direction: Direction) -> Role {
    let server = direction == Direction::ServerToClient;
    match role {
        MessageRole::Hello if server => Role::Step(Step::ServerHello),
        MessageRole::Hello => Role::Step(Step::Hello),
        MessageRole::Join => Role::Step(Step::JoinRequest),
        MessageRole::Accept => Role::Step(Step::JoinAccept),
        MessageRole::Deny => Role::Step(Step::JoinDeny),
        MessageRole::Ready => Role::Step(Step::Ready),
        MessageRole::AllReady => Role::Step(Step::AllReady),
        MessageRole::Countdown => Role::Step(Step::Countdown),
        MessageRole::Start => Role::Step(Step::GameStart),
        MessageRole::Level => Role::Step(Step::LevelInit),
        MessageRole::End => Role::Step(Step::GameEnd),
        MessageRole::Disconnect if server => Role::Step(Step::ServerEnd),
        MessageRole::Disconnect => Role::Step(Step::Disconnect),
        MessageRole::Ping => Role::Ping,
        MessageRole::Pong => Role::Pong,
        MessageRole::Input => Role::Input,
        MessageRole::Ack => Role::Ack,
        MessageRole::Snapshot => Role::Snapshot,
        MessageRole::Chunk => Role::SnapshotChunk,
        MessageRole::Periodic => Role::Periodic,
        MessageRole::Spawn | MessageRole::Destroy | MessageRole::Event => Role::GameState,
        MessageRole::Update => Role::Other,
    }
}

/// Who sends a named message that plays a role.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sender {
    Client,
    Server,
}

/// Names real rtnp servers use that document 004 does not define, the role each plays and who
/// sends it (spec-notes B). Every message the descriptions define has its role there.
const NAMED: &[(&str, Sender, Role)] = &[
    ("game_started", Sender::Server, Role::Step(Step::GameStart)),
    ("leave_lobby", Sender::Client, Role::Step(Step::Disconnect)),
];

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

/// The name of a datagram's message that plays a role, as it lives for the whole run (steps
/// keep it): the description's, or for a name only real traffic uses, the entry of [`NAMED`].
pub fn static_name(event: &DatagramEvent<'_>) -> Option<&'static str> {
    event
        .role
        .map(|r| r.name)
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
