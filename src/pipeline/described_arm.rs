//! A described dialect's part of the pipeline: the description's interpreter decodes the
//! datagram, its problems become findings under the description's rules, and the message and
//! field roles say the direction, the sequence, the tick and what happens to entities.

use std::net::SocketAddr;

use super::rt_arm::{lower_port_is_server, Servers};
use super::{Sink, State, Udp};
use crate::datagram::Dialect;
use crate::describe::decode::{self, Decoded as Interpreted};
use crate::describe::loaded::{self, Loaded};
use crate::describe::model::{self, FieldRole};
use crate::finding::{add_finding, Detail, Finding};
use crate::message::Facts;
use crate::proto::Direction;
use crate::session::analysis::bytes_hash;
use crate::session::entities::lifecycle;
use crate::session::event::{DatagramEvent, Decoded, DescribedRole, EntityRef};

/// The described arm's state across datagrams.
#[derive(Debug, Default)]
pub(super) struct DescribedState {
    servers: Servers,
    /// The current datagram, decoded; lent to the sink in its event.
    decoded: Interpreted<'static>,
}

/// The first described dialect that claims a datagram no bundled dialect recognised.
pub(super) fn recognise(bytes: &[u8], src: SocketAddr, dst: SocketAddr) -> Option<Dialect> {
    loaded::all()
        .iter()
        .position(|l| decode::claims(&l.described.description, bytes, src.port(), dst.port()))
        .map(|i| Dialect::Described(i as u8))
}

/// The direction: a known server, else the side on one of the description's ports, else the
/// message's `direction`, else the lower port's side is the server.
fn direction(
    servers: &mut Servers,
    d: &model::Description,
    src: SocketAddr,
    dst: SocketAddr,
    message: Option<&model::Message>,
) -> Direction {
    if let Some(direction) = servers.side(src, dst) {
        return direction;
    }
    let direction = if d.ports.contains(&src.port()) && !d.ports.contains(&dst.port()) {
        Direction::ServerToClient
    } else if d.ports.contains(&dst.port()) && !d.ports.contains(&src.port()) {
        Direction::ClientToServer
    } else {
        message
            .and_then(|m| m.direction.sender())
            .unwrap_or_else(|| lower_port_is_server(src, dst))
    };
    servers.learn(if direction == Direction::ServerToClient {
        src
    } else {
        dst
    });
    direction
}

/// The value of the first header field with `role`, when it was read.
fn header_value(l: &Loaded, decoded: &Interpreted<'_>, role: FieldRole) -> Option<i64> {
    let d = &l.described;
    let i = d
        .description
        .header
        .iter()
        .position(|f| f.role == Some(role))?;
    let field = d.names.header.slots[i].field;
    decoded
        .items
        .iter()
        .find(|item| item.field == field)
        .and_then(|item| item.value.integer())
}

impl State {
    pub(super) fn described<S: Sink>(&mut self, index: u8, udp: &Udp<'_>, sink: &mut S) {
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
        let Some(l) = loaded::all().get(usize::from(index)) else {
            return;
        };
        let (description, names) = (&l.described.description, &l.described.names);
        // Direction first, from what identifies the server; the message's own direction is a
        // last resort, read from the header's type before the body is decoded.
        let code = decode::header_integer(description, bytes, description.type_field);
        let message = code.and_then(|c| description.message(c));
        let dialect = Dialect::Described(index);
        let direction = direction(&mut self.described.servers, description, src, dst, message);
        let from_client = Some(direction == Direction::ClientToServer);
        decode::decode(
            description,
            names,
            bytes,
            from_client,
            &mut self.described.decoded,
        );
        let decoded = &self.described.decoded;
        for p in &decoded.problems {
            let detail = if p.field.is_empty() {
                Detail::None
            } else {
                Detail::Field(p.field)
            };
            add_finding(
                &mut self.findings,
                Finding::new(l.rule(p.rule), p.offset, detail),
            );
        }
        let first = decoded.messages.first();
        let message = first
            .and_then(|m| m.message)
            .map(|i| &description.messages[i]);
        // Entities: the ids a spawn, destroy or snapshot names, by the fields' roles.
        if let Some(event) = lifecycle(message.and_then(|m| m.role)) {
            for item in &decoded.items {
                let is_id = names.fields[item.field].role == Some(FieldRole::EntityId);
                if let (true, Some(id)) = (is_id, item.value.integer()) {
                    if let Ok(id) = u32::try_from(id) {
                        let at = item.offset;
                        self.entities.push(EntityRef {
                            id,
                            event,
                            type_id: None,
                            at,
                        });
                    }
                }
            }
        }
        let conversation = conversation.unwrap_or_else(|| {
            self.conversations
                .lookup(src, dst, direction, frame, dialect)
        });
        sink.begin(&self.conversations, conversation);
        if cut {
            self.findings.retain(|f| super::judged_when_cut(f.rule));
        }
        let name = message.map_or("UNKNOWN", |m| m.name.as_str());
        let sequence = header_value(l, decoded, FieldRole::Sequence);
        let tick = header_value(l, decoded, FieldRole::Tick);
        let ack = header_value(l, decoded, FieldRole::Ack);
        let body_at = first.map_or(0, |m| m.offset as usize + description.header_len());
        let event = DatagramEvent {
            frame,
            ts_nanos,
            src,
            dst,
            bytes,
            hash: bytes_hash(bytes),
            dialect,
            conversation,
            direction: Some(direction),
            decoded: Some(Decoded::Described { index, decoded }),
            code: first
                .and_then(|m| m.code)
                .and_then(|c| u8::try_from(c).ok()),
            sequence: sequence.and_then(|s| u32::try_from(s).ok()),
            tick: tick.and_then(|t| u32::try_from(t).ok()),
            ack: ack.and_then(|a| u32::try_from(a).ok()),
            message: None,
            role: message.and_then(|m| {
                Some(DescribedRole {
                    role: m.role?,
                    sender: m.direction.sender(),
                    name: m.name.as_str(),
                })
            }),
            name,
            payload: bytes.get(body_at.min(bytes.len())..),
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
}
