//! The rt dialect's part of the pipeline: the header in the byte order of its magic, the payload
//! decoded by the description, the direction from which side is the server (rt has no direction
//! bit), and RELIABLE packets matched with ACKNOWLEDGMENTs.

use std::collections::HashSet;
use std::net::SocketAddr;

use super::{Named, Sink, State, Types, Udp, Walked, HEADER_GROUP};
use crate::datagram::{rt, Dialect};
use crate::finding::{add_finding, Detail, Finding};
use crate::message::{
    choose_layout, decode_message_as, decode_nodes, Facts, Open, Tap, Value, Visitor,
};
use crate::proto::rt as desc;
use crate::proto::schema::{Field, Role};
use crate::proto::{Direction, Message, Rule};
use crate::session::analysis::bytes_hash;
use crate::session::dialect_state::{DialectState, Pending, RtConversation};
use crate::session::event::{DatagramEvent, Decoded, DescribedRole, LooseFinding};
use crate::session::SnapshotLayout;

/// At most this many server endpoints are remembered; past it, direction falls back to guesses.
pub const MAX_SERVERS: usize = 4096;
/// Reliable packets awaiting an acknowledgment, per conversation: an ACK comes within the
/// retransmit timeout (100-500 ms) or not at all, so older ones are counted as unacknowledged.
const MAX_PENDING_PER_CONVERSATION: usize = 1024;
/// Reliable packets awaiting an acknowledgment, over all conversations (16 bytes each).
const MAX_PENDING: usize = 1 << 20;

/// Server endpoints learned from the traffic: the side that received CLIENT_CONNECT or sent
/// SERVER_ACCEPT (rt), or that a one-way message type names (rtnp). Bounded.
#[derive(Debug, Default)]
pub(super) struct Servers {
    set: HashSet<SocketAddr>,
}

impl Servers {
    /// The direction of a datagram from `src` to `dst`, when either is a known server.
    pub(super) fn side(&self, src: SocketAddr, dst: SocketAddr) -> Option<Direction> {
        if self.set.contains(&src) {
            Some(Direction::ServerToClient)
        } else if self.set.contains(&dst) {
            Some(Direction::ClientToServer)
        } else {
            None
        }
    }

    pub(super) fn learn(&mut self, server: SocketAddr) {
        if self.set.len() < MAX_SERVERS {
            self.set.insert(server);
        }
    }
}

/// The last resort for a datagram's direction: the lower port is the server's (well-known ports
/// are low, clients' ephemeral ports high).
pub(super) fn lower_port_is_server(src: SocketAddr, dst: SocketAddr) -> Direction {
    if src.port() > dst.port() {
        Direction::ClientToServer
    } else {
        Direction::ServerToClient
    }
}

/// The rt arm's state across datagrams.
#[derive(Debug, Default)]
pub(super) struct RtState {
    servers: Servers,
    /// Reliable packets awaiting an acknowledgment, over all conversations.
    pending: usize,
}

impl RtState {
    /// The datagram's direction, and whether it comes from a known server (so that the message
    /// type's own direction can be judged against it).
    fn direction(
        &mut self,
        src: SocketAddr,
        dst: SocketAddr,
        message: Option<&'static Message>,
    ) -> (Direction, bool) {
        if let Some(direction) = self.servers.side(src, dst) {
            return (direction, true);
        }
        match message {
            Some(m) if m.code == desc::CLIENT_CONNECT => self.servers.learn(dst),
            Some(m) if m.code == desc::SERVER_ACCEPT || m.code == desc::SERVER_REJECT => {
                self.servers.learn(src)
            }
            _ => {}
        }
        let direction = match message {
            Some(m) if !desc::both_ways(m.code) => m.direction,
            _ => lower_port_is_server(src, dst),
        };
        (direction, false)
    }

    fn sent_reliable(&mut self, c: &mut RtConversation, pending: Pending) {
        c.reliable += 1;
        if c.pending.len() >= MAX_PENDING_PER_CONVERSATION
            || (self.pending >= MAX_PENDING && !c.pending.is_empty())
        {
            if let Some(old) = c.pending.pop_front() {
                c.first_expired.get_or_insert(old.frame);
                self.pending -= 1;
            }
        }
        if self.pending < MAX_PENDING {
            c.pending.push_back(pending);
            self.pending += 1;
        } else {
            c.first_expired.get_or_insert(pending.frame);
        }
    }

    /// Matches an ACKNOWLEDGMENT sent in `direction` with the oldest pending packet of the other
    /// direction that has the acknowledged sequence number.
    fn acknowledged(&mut self, c: &mut RtConversation, direction: Direction, sequence: u32) {
        if let Some(i) = c
            .pending
            .iter()
            .position(|p| p.direction != direction && p.sequence == sequence)
        {
            c.pending.remove(i);
            c.acknowledged += 1;
            self.pending -= 1;
        }
    }
}

impl State {
    pub(super) fn rt<S: Sink>(&mut self, udp: &Udp<'_>, sink: &mut S) {
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
        // A conversation keeps the byte order of its first datagram.
        let order = conversation
            .and_then(|c| self.conversations.rt(c))
            .and_then(|c| c.order);
        let parsed = rt::parse(bytes, order, &mut self.findings);
        let message = parsed.and_then(|d| d.message);
        let (direction, known) = self.rt.direction(src, dst, message);
        let conversation = conversation.unwrap_or_else(|| {
            self.conversations
                .lookup(src, dst, direction, frame, Dialect::Rt)
        });
        if let (Some(d), Some(c)) = (&parsed, self.conversations.rt(conversation)) {
            c.order.get_or_insert(d.header.endian());
        }
        if let Some(m) =
            message.filter(|m| known && !desc::both_ways(m.code) && m.direction != direction)
        {
            add_finding(
                &mut self.findings,
                Finding::new(Rule::RtDirection, 2, Detail::Value(m.code.into())),
            );
        }
        // The byte order is the document's rule broken by the whole conversation: say it once.
        if self.findings.iter().any(|f| f.rule == Rule::RtByteOrder) {
            match self.conversations.rt(conversation) {
                Some(c) if !c.byte_order_reported => c.byte_order_reported = true,
                _ => self.findings.retain(|f| f.rule != Rule::RtByteOrder),
            }
        }
        sink.begin(&self.conversations, conversation);
        let mut facts = Facts::default();
        let mut acked = None;
        let mut variant = None;
        if let Some(d) = &parsed {
            let fields = sink.fields();
            let endian = d.header.endian();
            // A payload that fits no layout whole is read as the conversation's usual one.
            let layout = message.filter(|_| d.decodable()).map(|m| {
                let usual = self
                    .conversations
                    .get(conversation)
                    .and_then(|c| c.usual_variant(m.code));
                let rules = &rt::MESSAGE_RULES;
                choose_layout(m, d.payload, endian, &self.profile, rules, usual)
            });
            variant = layout.and_then(|l| l.variant);
            if S::Fields::WANTS_FIELDS {
                fields.open(&HEADER_GROUP, Open::Case, 0);
                decode_nodes(
                    desc::HEADER,
                    d.header.bytes(),
                    endian,
                    &self.profile,
                    &rt::MESSAGE_RULES,
                    fields,
                );
                fields.close(Open::Case);
            }
            match message {
                Some(m) if d.decodable() && m.code == desc::ACKNOWLEDGMENT => {
                    // The walker's facts keep rtype's 16-bit acknowledged sequence: read rt's whole.
                    let mut sequence = None;
                    let mut ack = Tap::new(
                        fields,
                        |f: &'static Field| f.role == Role::AckSequence,
                        |_, _, value: Value<'_>| {
                            sequence = value.as_u64().and_then(|v| u32::try_from(v).ok());
                        },
                    );
                    facts = decode_message_as(
                        m,
                        variant,
                        d.payload,
                        d.payload_at,
                        endian,
                        &self.profile,
                        &rt::MESSAGE_RULES,
                        &mut ack,
                        &mut self.findings,
                    );
                    acked = sequence;
                }
                Some(m) if d.decodable() => {
                    let (entities, at) = (&mut self.entities, d.payload_at);
                    let mut named = Named {
                        inner: fields,
                        at,
                        first: entities.len(),
                        entities,
                        types: Types::Unchecked,
                    };
                    facts = decode_message_as(
                        m,
                        variant,
                        d.payload,
                        d.payload_at,
                        endian,
                        &self.profile,
                        &rt::MESSAGE_RULES,
                        &mut named,
                        &mut self.findings,
                    );
                }
                _ if S::Fields::WANTS_FIELDS && !d.payload.is_empty() => {
                    fields.undecoded(0, d.payload)
                }
                _ => {}
            }
            if let (Some(m), Some(l), Some(c)) =
                (message, layout, self.conversations.get_mut(conversation))
            {
                c.fitted(m.code, l);
            }
        }
        if cut {
            // Only what the header shows is judged (see `judged_when_cut`).
            self.findings.retain(|f| super::judged_when_cut(f.rule));
        }
        self.entity_events(message);
        if let (Some(d), Some(m)) = (&parsed, message) {
            let how = Walked {
                message: m,
                variant,
                base: d.payload_at,
                endian: d.header.endian(),
                layout: SnapshotLayout::default(),
                rules: &rt::MESSAGE_RULES,
            };
            let tick = d.header.sequence();
            self.compare_clients(conversation, frame, tick, d.payload, how);
        }
        let event = DatagramEvent {
            frame,
            ts_nanos,
            src,
            dst,
            bytes,
            hash: bytes_hash(bytes),
            dialect: Dialect::Rt,
            conversation,
            direction: Some(direction),
            decoded: parsed.map(Decoded::Rt),
            code: parsed.map(|d| d.header.packet_type()),
            sequence: parsed.map(|d| d.header.sequence()),
            // The header's timestamp is milliseconds since connection, not a game tick: rt carries
            // its tick in the sequence number (spec-notes B).
            tick: None,
            message,
            role: message.and_then(DescribedRole::of),
            ack: None,
            name: message.map_or("UNKNOWN", |m| m.name),
            payload: parsed.map(|d| d.payload),
            facts,
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
        if let (Some(d), Some(c)) = (parsed, self.conversations.rt(conversation)) {
            if d.header.reliable() {
                self.rt.sent_reliable(
                    c,
                    Pending {
                        direction,
                        sequence: d.header.sequence(),
                        frame,
                    },
                );
            }
            if let Some(sequence) = acked {
                self.rt.acknowledged(c, direction, sequence);
            }
        }
    }

    /// At the end of the run: one finding per conversation whose reliable packets were not all
    /// acknowledged, at the first one left unacknowledged, with how many of how many were.
    pub(super) fn rt_finish<S: Sink>(&mut self, sink: &mut S) {
        for conversation in self.conversations.all() {
            let DialectState::Rt(c) = &conversation.dialect_state else {
                continue;
            };
            if c.acknowledged == c.reliable {
                continue;
            }
            let first = c
                .first_expired
                .or(c.pending.front().map(|p| p.frame))
                .unwrap_or(0);
            let detail = Detail::Sizes {
                expected: c.reliable,
                found: c.acknowledged,
            };
            let finding = Finding::new(Rule::RtUnacknowledged, 0, detail);
            let f = LooseFinding {
                frame: first,
                conversation: conversation.id,
                finding,
            };
            self.shown.loose(sink, &f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn direction_from_the_server_side() {
        let mut state = RtState::default();
        let (client, server) = (addr("127.0.0.1:49308"), addr("127.0.0.1:4242"));
        let input = desc::message(desc::PLAYER_INPUT);
        // Before the handshake, a both-ways type is judged by port.
        assert_eq!(
            state.direction(server, client, input),
            (Direction::ServerToClient, false)
        );
        assert_eq!(
            state.direction(client, server, desc::message(desc::CLIENT_CONNECT)),
            (Direction::ClientToServer, false)
        );
        assert_eq!(
            state.direction(server, client, input),
            (Direction::ServerToClient, true)
        );
        assert_eq!(
            state.direction(client, server, input),
            (Direction::ClientToServer, true)
        );
        let high = addr("127.0.0.1:60000");
        assert_eq!(
            state.direction(addr("127.0.0.1:1000"), high, None),
            (Direction::ServerToClient, false)
        );
    }

    #[test]
    fn reliable_packets_matched_and_bounded() {
        let mut state = RtState::default();
        let (mut one, mut two) = (RtConversation::default(), RtConversation::default());
        let c2s = Direction::ClientToServer;
        for seq in 0..3 {
            state.sent_reliable(
                &mut one,
                Pending {
                    direction: c2s,
                    sequence: seq,
                    frame: u64::from(seq) + 10,
                },
            );
        }
        // An ACK in the same direction acknowledges nothing; one in the other direction matches.
        state.acknowledged(&mut one, c2s, 1);
        state.acknowledged(&mut one, Direction::ServerToClient, 1);
        let c = &one;
        assert_eq!(
            (c.reliable, c.acknowledged, c.pending.len(), state.pending),
            (3, 1, 2, 2)
        );
        for seq in 0..(MAX_PENDING_PER_CONVERSATION as u32 + 5) {
            state.sent_reliable(
                &mut two,
                Pending {
                    direction: c2s,
                    sequence: seq,
                    frame: u64::from(seq),
                },
            );
        }
        let c = &two;
        assert_eq!(
            (c.pending.len(), c.first_expired),
            (MAX_PENDING_PER_CONVERSATION, Some(0))
        );
        assert_eq!(state.pending, 2 + MAX_PENDING_PER_CONVERSATION);
    }
}
