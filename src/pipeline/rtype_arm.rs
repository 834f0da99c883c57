//! The rtype dialect's part of the pipeline: checks, decoding, archetypes and chunk sets.
use super::{
    EntityTypeAt, Named, RenderAhead, RenderedOf, Sink, State, Types, Udp, Unpack, Walked,
    HEADER_GROUP,
};
use crate::datagram::{rtype, Dialect};
use crate::display_filter::Context;
use crate::finding::{add_finding, Detail, Finding};
use crate::message::{
    choose_layout, decode_message, decode_message_as, decode_nodes, Facts, Layout, Open, Value,
    Visitor,
};
use crate::proto::profile::Profile;
use crate::proto::rtype as desc;
use crate::proto::schema::{Field, Group, Role};
use crate::proto::{Direction, Message, Rule};
use crate::session::analysis::bytes_hash;
use crate::session::chunks::{Chunk, Reassembled};
use crate::session::event::{DatagramEvent, Decoded, DescribedRole, EntityRef, ReassembledEvent};
use crate::session::{Archetypes, SnapshotLayout, TypeSet};

impl State {
    pub(super) fn rtype<S: Sink>(
        &mut self,
        udp: &Udp<'_>,
        unpack: Unpack<'_, RenderedOf<S>>,
        sink: &mut S,
    ) {
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
        // `scratch` holds the decompressed payload.
        let (parsed, scratch, walked, hash): (_, &[u8], _, _) = match unpack {
            Unpack::Here(scratch) => (
                rtype::parse(bytes, scratch, &mut self.findings),
                scratch,
                None,
                bytes_hash(bytes),
            ),
            Unpack::Ahead(ahead) => {
                self.findings.extend_from_slice(ahead.header_findings);
                let parsed = ahead.checked.map(|c| c.attach(bytes));
                (parsed, ahead.payload, ahead.walked.as_ref(), ahead.hash)
            }
        };
        let message = parsed.and_then(|d| d.message);
        // Direction: the header's packet type (of a cut datagram, as far as the capture holds its
        // header), else the message's, else the lower port is the server.
        let header = parsed.map(|d| d.header).or_else(|| {
            cut.then(|| rtype::Header::new_checked(bytes, rtype::HeaderLayout::Standard))
                .flatten()
        });
        let direction = header
            .and_then(|h| match h.packet_type() {
                desc::PACKET_CLIENT => Some(Direction::ClientToServer),
                desc::PACKET_SERVER => Some(Direction::ServerToClient),
                _ => None,
            })
            .or(message.map(|m| m.direction));
        let guess = direction.unwrap_or(if src.port() > dst.port() {
            Direction::ClientToServer
        } else {
            Direction::ServerToClient
        });
        let conversation = conversation.unwrap_or_else(|| {
            self.conversations
                .lookup(src, dst, guess, frame, Dialect::Rtype)
        });
        if let Some(d) = &parsed {
            if d.header.layout() == rtype::HeaderLayout::Old15 {
                self.once_per_conversation(conversation);
            }
        }
        // The sink learns the conversation's layout, decided first.
        let departure = self.decide_layout(conversation, parsed.as_ref(), message, scratch, cut);
        sink.begin(&self.conversations, conversation);
        let known = self.conversations.get(conversation);
        let read_with = known.map_or_else(SnapshotLayout::default, |c| c.layout);
        let profile = self.layouts.profile(&self.profile, read_with);
        let archetypes = known.map_or(&NO_ARCHETYPES, |c| &c.archetypes);
        let usual = known
            .zip(message)
            .and_then(|(c, m)| c.usual_variant(m.code));
        let mut facts = Facts::default();
        let mut payload = None;
        let mut rendered = None;
        let mut layout = None;
        if let Some(d) = &parsed {
            payload = d.payload(scratch);
            let fields = sink.fields();
            // The worker knew no conversation: its walk is this one's unless the conversation's
            // usual layout decides how a payload that fits none is read.
            // It walked with the run's profile: a conversation read with another is walked again.
            let walked = walked.filter(|w| {
                read_with.index() == 0 && w.layout.is_none_or(|l| l.whole || usual.is_none())
            });
            (layout, facts) = match walked {
                Some(w) => {
                    if let Some((all, index)) = w.rendered {
                        fields.take_rendered(all, index);
                    }
                    rendered = w.rendered;
                    self.findings.extend_from_slice(w.findings);
                    self.entities.extend_from_slice(w.entities);
                    check_entity_types(w.types, Some(&w.type_set), archetypes, &mut self.findings);
                    (w.layout, w.facts)
                }
                None => {
                    let walk = Walk {
                        d,
                        payload,
                        profile,
                        findings: &mut self.findings,
                        entities: &mut self.entities,
                        types: Types::Listed(&mut self.types),
                    };
                    let layout = walk.layout(usual);
                    header_fields(d, profile, fields);
                    let facts = walk.checked(layout, fields);
                    check_entity_types(&self.types, None, archetypes, &mut self.findings);
                    (layout, facts)
                }
            };
        }
        if let (Some(m), false, true) = (message, cut, self.layouts.choosing()) {
            let snapshot = matches!(m.code, desc::SNAPSHOT | desc::SNAPSHOT_CHUNK);
            let rules = &rtype::MESSAGE_RULES;
            if snapshot && self.findings.iter().any(|f| rules.misfit(f.rule)) {
                if let Some(c) = self.conversations.get_mut(conversation) {
                    c.unfit = true;
                }
            }
        }
        if let Some((name, at)) = departure {
            let f = Finding::new(Rule::RtypeSnapshotLayout, at, Detail::Layout(name));
            add_finding(&mut self.findings, f);
        }
        if cut {
            // Only what the header shows is judged (see `judged_when_cut`); the message is not
            // remembered nor reassembled, nor its layout taken as the conversation's.
            self.findings.retain(|f| super::judged_when_cut(f.rule));
            facts.entities_at = None;
        }
        if let (Some(m), Some(l), Some(c), false) = (
            message,
            layout,
            self.conversations.get_mut(conversation),
            cut,
        ) {
            c.fitted(m.code, l);
        }
        if let (Some(m), Some(p), false) = (message, payload, cut) {
            if m.code == desc::LEVEL_INIT {
                self.remember_archetypes(conversation, m, p);
            }
        }
        self.entity_events(message);
        if let (Some(d), Some(m), Some(p), Some(l)) = (&parsed, message, payload, layout) {
            let how = Walked {
                message: m,
                variant: l.variant,
                base: d.payload_at,
                endian: rtype::ENDIAN,
                layout: read_with,
                rules: &rtype::MESSAGE_RULES,
            };
            self.compare_clients(conversation, frame, d.header.tick(), p, how);
        }
        // Chunks join their set before the datagram is reported, so that chunk findings are the
        // datagram's own; the snapshot they complete is reported right after it.
        let mut reassembled = None;
        if let (Some(m), Some(p), Some(d), Some(at)) = (message, payload, parsed, facts.entities_at)
        {
            if m.code == desc::SNAPSHOT_CHUNK {
                let chunk = Chunk {
                    conversation,
                    tick: d.header.tick(),
                    frame,
                    ts_nanos,
                    total: facts.total_chunks.unwrap_or(0),
                    index: facts.chunk_index.unwrap_or(0),
                    entity_count: facts.entity_count.unwrap_or(0),
                    blocks: &p[at.min(p.len())..],
                    at: d.payload_at as u32,
                };
                reassembled = self
                    .chunks
                    .push(chunk, &mut self.findings, &mut self.closed);
            }
        }
        let event = DatagramEvent {
            frame,
            ts_nanos,
            src,
            dst,
            bytes,
            hash,
            dialect: Dialect::Rtype,
            conversation,
            direction,
            decoded: parsed.map(Decoded::Rtype),
            code: parsed.map(|d| d.header.msg_type()),
            sequence: parsed.map(|d| d.header.sequence().into()),
            tick: parsed.map(|d| d.header.tick()),
            message,
            role: message.and_then(DescribedRole::of),
            ack: None,
            name: message.map_or("UNKNOWN", |m| m.name),
            payload,
            facts,
            findings: &self.findings,
            session: &[],
            entities: &self.entities,
        };
        let profile = self.layouts.profile(&self.profile, read_with);
        let context = Context {
            first_ts: self.first_ts.unwrap_or(ts_nanos),
            profile,
            reassembled: reassembled.as_ref().map(|r| r.payload),
            frame: frame_fields,
        };
        let (raised, shown) = (&mut self.raised, &mut self.shown);
        let judges = (&mut self.analysis, &mut self.clients, &self.conversations);
        let shown = super::report(judges, raised, shown, (context, rendered), event, sink);
        if let (
            true,
            Some(Reassembled {
                tick,
                chunks,
                first_frame,
                payload,
            }),
        ) = (shown, reassembled)
        {
            let snapshot = desc::message(desc::SNAPSHOT).expect("SERVER_SNAPSHOT is described");
            sink.begin(&self.conversations, conversation);
            let mut ignored = Vec::new();
            // Entity-level findings were already reported on the chunks themselves.
            decode_message(
                snapshot,
                payload,
                0,
                rtype::ENDIAN,
                self.layouts.profile(&self.profile, read_with),
                &rtype::MESSAGE_RULES,
                sink.fields(),
                &mut ignored,
            );
            sink.reassembled(&ReassembledEvent {
                frame,
                conversation,
                tick,
                chunks,
                first_frame,
                payload,
            });
        }
    }

    /// Decides the snapshot layout of `conversation` at a snapshot not cut short, while it is
    /// undecided ([`Layouts::decide`](super::layouts::Layouts::decide)). Returns the layout's
    /// name and where the payload begins, for the `rtype.snapshot.layout` finding, when it
    /// departs from the document's.
    fn decide_layout(
        &mut self,
        conversation: u32,
        parsed: Option<&rtype::Datagram<'_>>,
        message: Option<&'static Message>,
        scratch: &[u8],
        cut: bool,
    ) -> Option<(&'static str, u32)> {
        let (Some(d), Some(m), false) = (parsed, message, cut) else {
            return None;
        };
        if !matches!(m.code, desc::SNAPSHOT | desc::SNAPSHOT_CHUNK) {
            return None;
        }
        let payload = d.payload(scratch)?;
        let c = self.conversations.get_mut(conversation)?;
        let name = self
            .layouts
            .decide(&self.profile, &mut c.layout, m, payload)?;
        Some((name, d.payload_at as u32))
    }

    /// Keeps the 15-byte-header finding only for a conversation's first such datagram.
    fn once_per_conversation(&mut self, conversation: u32) {
        let Some(c) = self.conversations.get_mut(conversation) else {
            return;
        };
        if c.old_header_reported {
            self.findings.retain(|f| f.rule != Rule::RtypeOldHeader);
        }
        c.old_header_reported = true;
    }

    fn remember_archetypes(
        &mut self,
        conversation: u32,
        message: &'static Message,
        payload: &[u8],
    ) {
        let mut collect = Collect::default();
        let mut ignored = Vec::new();
        decode_message(
            message,
            payload,
            0,
            rtype::ENDIAN,
            &self.profile,
            &rtype::MESSAGE_RULES,
            &mut collect,
            &mut ignored,
        );
        if let Some(c) = self.conversations.get_mut(conversation) {
            collect.0.shrink_to_fit();
            c.archetypes = collect.0;
        }
    }
}

/// A conversation's archetypes before any LevelInit.
static NO_ARCHETYPES: Archetypes = Archetypes::new();

/// Collects LevelInit's archetypes (typeId, spriteId).
#[derive(Default)]
struct Collect(Archetypes);

impl Visitor for Collect {
    fn field(&mut self, field: &'static Field, _: usize, _: usize, value: Value<'_>) {
        match (field.role, value) {
            (Role::ArchetypeTypeId, Value::U(id)) => self.0.push(id as u16),
            (Role::ArchetypeSpriteId, Value::Str(s)) => self.0.name_last(s),
            _ => {}
        }
    }
    fn open(&mut self, _: &'static Group, _: Open, _: usize) {}
    fn close(&mut self, _: Open) {}
    fn undecoded(&mut self, _: usize, _: &[u8]) {}
}

/// A datagram's header fields, for a visitor that wants them.
fn header_fields<V: Visitor>(d: &rtype::Datagram<'_>, profile: &Profile, fields: &mut V) {
    if V::WANTS_FIELDS {
        fields.open(&HEADER_GROUP, Open::Case, 0);
        decode_nodes(
            d.header.layout().nodes(),
            d.header.bytes(),
            rtype::ENDIAN,
            profile,
            &rtype::MESSAGE_RULES,
            fields,
        );
        fields.close(Open::Case);
    }
}

/// Walks a datagram's message on a worker thread as the ordered stage would for a conversation
/// with no usual layout (`scratch` holds its decompressed payload), into `fields` after the
/// header's: the walk's findings, entities and entity types are collected for the ordered stage,
/// the types also gathered in a set, which it checks against the conversation's archetypes.
pub(super) fn walk_ahead<V: Visitor>(
    d: &rtype::Datagram<'_>,
    scratch: &[u8],
    profile: &Profile,
    fields: &mut V,
    (findings, entities, (types, type_set)): (
        &mut Vec<Finding>,
        &mut Vec<EntityRef>,
        (&mut Vec<EntityTypeAt>, &mut TypeSet),
    ),
) -> (Option<Layout>, Facts) {
    header_fields(d, profile, fields);
    let walk = Walk {
        d,
        payload: d.payload(scratch),
        profile,
        findings,
        entities,
        types: Types::Gathered(types, type_set),
    };
    let layout = walk.layout(None);
    (layout, walk.checked(layout, fields))
}

/// Every entity of a type LevelInit did not declare breaks the rule: one finding at the first,
/// counted, after the walk's findings. Before any LevelInit every type is allowed. A worker's
/// `set` of the types answers at once for most messages.
fn check_entity_types(
    types: &[EntityTypeAt],
    set: Option<&TypeSet>,
    archetypes: &Archetypes,
    findings: &mut Vec<Finding>,
) {
    if archetypes.is_empty() || set.is_some_and(|s| archetypes.covers(s)) {
        return;
    }
    let mut unknown = types.iter().filter(|(t, _)| !archetypes.contains(*t));
    if let Some(&(t, at)) = unknown.next() {
        let mut f = Finding::new(Rule::RtypeUnknownEntityType, at, Detail::Value(t));
        f.count = f.count.saturating_add(unknown.count() as u32);
        add_finding(findings, f);
    }
}

/// A datagram's message walk.
struct Walk<'a, 'd> {
    d: &'a rtype::Datagram<'d>,
    payload: Option<&'a [u8]>,
    profile: &'a Profile,
    findings: &'a mut Vec<Finding>,
    /// Where the entities the message names are collected.
    entities: &'a mut Vec<EntityRef>,
    /// Where the entity types it names go.
    types: Types<'a>,
}

impl Walk<'_, '_> {
    /// The layout of the message, given the one its conversation has been using.
    fn layout(&self, usual: Option<u8>) -> Option<Layout> {
        let (message, p) = (self.d.message?, self.payload?);
        let rules = &rtype::MESSAGE_RULES;
        Some(choose_layout(
            message,
            p,
            rtype::ENDIAN,
            self.profile,
            rules,
            usual,
        ))
    }

    /// Walks the message in `layout` into `fields`; the entities and entity types it names are
    /// collected on their way.
    fn checked<V: Visitor>(self, layout: Option<Layout>, fields: &mut V) -> Facts {
        let (Some(message), Some(p), Some(layout)) = (self.d.message, self.payload, layout) else {
            return Facts::default();
        };
        let (at, entities, types) = (self.d.payload_at, self.entities, self.types);
        let mut collect = Named {
            inner: fields,
            at,
            first: entities.len(),
            entities,
            types,
        };
        decode_message_as(
            message,
            layout.variant,
            p,
            at,
            rtype::ENDIAN,
            self.profile,
            &rtype::MESSAGE_RULES,
            &mut collect,
            self.findings,
        )
    }
}
