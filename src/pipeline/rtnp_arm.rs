//! The rtnp dialect's part of the pipeline: the envelope, the JSON (parsed into a slot reused
//! across datagrams and lent to the sink whole), its judgement against Appendix B, and what
//! only the conversation shows: the assigned client_id, the epoch sequence, silent clients.

use std::net::SocketAddr;

use serde_json::Value;

use super::rt_arm::{lower_port_is_server, Servers};
use super::{Sink, State, Udp};
use crate::datagram::{rtnp, Dialect};
use crate::finding::{add_finding, Detail, Finding};
use crate::message::Facts;
use crate::proto::rtnp::{
    self as desc, JsonMessage, CLIENT_TIMEOUT_NANOS, PING, PONG, SERVER_PORT, TYPE_KEY,
};
use crate::proto::{Direction, Rule};
use crate::session::analysis::bytes_hash;
use crate::session::entities::lifecycle;
use crate::session::event::{DatagramEvent, Decoded, DescribedRole, EntityEvent, EntityRef};

/// `player_name`'s length in characters (§6.5).
const PLAYER_NAME_CHARS: std::ops::RangeInclusive<usize> = 1..=32;

/// The rtnp arm's state across datagrams.
#[derive(Debug, Default)]
pub(super) struct RtnpState {
    servers: Servers,
    /// The current datagram's JSON, lent to the sink in its event.
    json: Option<Value>,
}

/// The datagram's direction, and whether it comes from what identifies the server (a known
/// server, or the document's port) rather than from the message type itself.
fn direction(
    servers: &mut Servers,
    src: SocketAddr,
    dst: SocketAddr,
    message: Option<&'static JsonMessage>,
) -> (Direction, bool) {
    if let Some(direction) = servers.side(src, dst) {
        return (direction, true);
    }
    let (direction, known) = if src.port() == SERVER_PORT && dst.port() != SERVER_PORT {
        (Direction::ServerToClient, true)
    } else if dst.port() == SERVER_PORT && src.port() != SERVER_PORT {
        (Direction::ClientToServer, true)
    } else if let Some(m) = message {
        (m.message.direction, false)
    } else {
        return (lower_port_is_server(src, dst), false);
    };
    servers.learn(if direction == Direction::ServerToClient {
        src
    } else {
        dst
    });
    (direction, known)
}

/// The entities a snapshot updates (`entities[]`, by `networkId` as document 004 names it, or
/// `id` as real servers do) and destroys (the `destroyed` list of ids real servers send), all
/// located at the JSON text.
fn snapshot_entities(json: &Value, at: usize, entities: &mut Vec<EntityRef>) {
    let id = |v: &Value| v.as_u64().and_then(|i| u32::try_from(i).ok());
    let list = |key: &str| {
        json.get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
    };
    let mut push = |id: u32, event| {
        entities.push(EntityRef {
            id,
            event,
            type_id: None,
            at: at as u32,
        })
    };
    for e in list("entities") {
        if let Some(i) = e.get("networkId").or_else(|| e.get("id")).and_then(id) {
            push(i, EntityEvent::Update);
        }
    }
    for d in list("destroyed") {
        if let Some(i) = id(d) {
            push(i, EntityEvent::Destroy);
        }
    }
}

/// What the text of a datagram turned out to be.
enum Content {
    Keepalive(&'static str),
    Json,
    Nothing,
}

impl State {
    pub(super) fn rtnp<S: Sink>(&mut self, udp: &Udp<'_>, sink: &mut S) {
        let Udp {
            frame,
            ts_nanos,
            src,
            dst,
            bytes,
            frame_fields,
            conversation,
            cut,
        } = *udp;
        let parsed = rtnp::parse(bytes, &mut self.findings);
        let at = parsed.text_at;
        self.rtnp.json = None;
        let content = match parsed.text {
            Some(t) if t == PING.as_bytes() => Content::Keepalive(PING),
            Some(t) if t == PONG.as_bytes() => Content::Keepalive(PONG),
            Some(t) => match rtnp::parse_json(t, at, &mut self.findings) {
                Some(json) => {
                    self.rtnp.json = Some(json);
                    Content::Json
                }
                None => Content::Nothing,
            },
            None => Content::Nothing,
        };
        let text = parsed.text.and_then(|t| std::str::from_utf8(t).ok());
        let type_name = self
            .rtnp
            .json
            .as_ref()
            .and_then(|j| j.get(TYPE_KEY))
            .and_then(Value::as_str);
        let message = match content {
            Content::Keepalive(name) => desc::message(name),
            // A JSON message typed "PING" is not the keep-alive text.
            Content::Json => type_name
                .and_then(desc::message)
                .filter(|m| m.message.seen_rule.is_none()),
            Content::Nothing => None,
        };
        let mut report =
            |rule, detail| add_finding(&mut self.findings, Finding::new(rule, at as u32, detail));
        if let Some(rule) = message.and_then(|m| m.message.seen_rule) {
            report(rule, Detail::None);
        }
        if let (Content::Json, Some(json)) = (&content, &self.rtnp.json) {
            match type_name {
                None => report(Rule::RtnpTypeMissing, Detail::Field(TYPE_KEY)),
                Some(_) => {
                    if text
                        .and_then(rtnp::first_key)
                        .is_some_and(|k| k != TYPE_KEY)
                    {
                        report(Rule::RtnpTypeNotFirst, Detail::Field(TYPE_KEY));
                    }
                    match message {
                        Some(m) => rtnp::check_schema(json, m, at, &mut self.findings),
                        None => report(Rule::RtnpUnknownType, Detail::None),
                    }
                }
            }
        }
        let (direction, known) = direction(&mut self.rtnp.servers, src, dst, message);
        if message.is_some_and(|m| known && m.message.direction != direction) {
            add_finding(
                &mut self.findings,
                Finding::new(Rule::RtnpDirection, at as u32, Detail::None),
            );
        }
        let conversation = conversation.unwrap_or_else(|| {
            self.conversations
                .lookup(src, dst, direction, frame, Dialect::Rtnp)
        });
        self.rtnp_conversation(conversation, direction, ts_nanos, at, message);
        sink.begin(&self.conversations, conversation);
        let json = self.rtnp.json.as_ref();
        let name = match content {
            Content::Keepalive(name) => name,
            Content::Json => json
                .and_then(|j| j.get(TYPE_KEY))
                .and_then(Value::as_str)
                .unwrap_or("UNKNOWN"),
            Content::Nothing => "UNKNOWN",
        };
        if direction == Direction::ServerToClient
            && lifecycle(message.and_then(|m| m.message.role)) == Some(EntityEvent::Update)
        {
            if let Some(json) = json {
                snapshot_entities(json, at, &mut self.entities);
            }
        }
        let epoch = json.and_then(|j| j.get("epoch")).and_then(Value::as_u64);
        if cut {
            // Only what the header shows is judged (see `judged_when_cut`).
            self.findings.retain(|f| super::judged_when_cut(f.rule));
        }
        let event = DatagramEvent {
            frame,
            ts_nanos,
            src,
            dst,
            bytes,
            hash: bytes_hash(bytes),
            dialect: Dialect::Rtnp,
            conversation,
            direction: Some(direction),
            decoded: Some(Decoded::Rtnp {
                framing: parsed.framing,
                text,
                json,
            }),
            code: None,
            sequence: epoch.and_then(|e| u32::try_from(e).ok()),
            tick: None,
            message: message.map(|m| &m.message),
            role: message.and_then(|m| DescribedRole::of(&m.message)),
            ack: None,
            name,
            payload: parsed.text,
            facts: Facts::default(),
            findings: &self.findings,
            session: &[],
            entities: &self.entities,
        };
        let seen = super::unrendered::<S>(
            self.first_ts.unwrap_or(ts_nanos),
            &self.profile,
            frame_fields,
        );
        let (raised, shown) = (&mut self.raised, &mut self.shown);
        let judges = (&mut self.analysis, &mut self.clients, &self.conversations);
        super::report(judges, raised, shown, seen, event, sink);
    }

    /// The checks that need the conversation: client_id against assign_id, player_name, the
    /// epoch sequence, and a server still sending to a client silent for 30 s.
    fn rtnp_conversation(
        &mut self,
        conversation: u32,
        direction: Direction,
        ts_nanos: i64,
        at: usize,
        message: Option<&'static JsonMessage>,
    ) {
        let Some(c) = self.conversations.rtnp(conversation) else {
            return;
        };
        let json = self.rtnp.json.as_ref();
        let number = |key: &str| json.and_then(|j| j.get(key)).and_then(Value::as_u64);
        let mut report =
            |rule, detail| add_finding(&mut self.findings, Finding::new(rule, at as u32, detail));
        let name = message.map(|m| m.message.name);
        match direction {
            Direction::ClientToServer => {
                c.last_client_ts = Some(ts_nanos);
                c.silence_reported = false;
                if let (Some(assigned), Some(id)) = (c.assigned, number("client_id")) {
                    if id != assigned {
                        report(
                            Rule::RtnpClientId,
                            Detail::Sizes {
                                expected: assigned,
                                found: id,
                            },
                        );
                    }
                }
                if name == Some("connect_request") {
                    if let Some(player) = json
                        .and_then(|j| j.get("player_name"))
                        .and_then(Value::as_str)
                    {
                        let chars = player.chars().count();
                        if !PLAYER_NAME_CHARS.contains(&chars) {
                            report(Rule::RtnpPlayerName, Detail::Value(chars as u64));
                        }
                    }
                }
            }
            Direction::ServerToClient => {
                if let Some(last) = c.last_client_ts {
                    if ts_nanos.saturating_sub(last) > CLIENT_TIMEOUT_NANOS && !c.silence_reported {
                        c.silence_reported = true;
                        report(
                            Rule::RtnpClientSilent,
                            Detail::Value((ts_nanos.saturating_sub(last) / 1_000_000_000) as u64),
                        );
                    }
                }
                match name {
                    Some("assign_id") => c.assigned = number("client_id").or(c.assigned),
                    Some("snapshot") => {
                        if let Some(epoch) = number("epoch") {
                            if let Some(last) =
                                c.last_epoch.filter(|l| l.checked_add(1) != Some(epoch))
                            {
                                report(
                                    Rule::RtnpEpochSequence,
                                    Detail::Sizes {
                                        expected: last.saturating_add(1),
                                        found: epoch,
                                    },
                                );
                            }
                            c.last_epoch = Some(epoch);
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}
