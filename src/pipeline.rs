//! The pipeline: frames from the capture layer, through dialect detection, datagram checks and
//! message decoding, into the session layer, and out to a report [`Sink`].
//!
//! Buffers (decompression scratch, findings) are reused across datagrams: steady traffic
//! allocates nothing per datagram.

use std::net::SocketAddr;

use crate::capture::{self, CaptureInfo, Defragmenter, Frame, LinkOutcome, ReadEnd};
use crate::datagram::{rtype, Dialect};
use crate::message::{decode_message, decode_nodes, Detail, Facts, Finding, Open, Value, Visitor};
use crate::proto::profile::Profile;
use crate::proto::rtype as desc;
use crate::proto::schema::{Field, Group, Role};
use crate::proto::{Direction, Message, Rule};
use crate::session::chunks::{Chunk, ChunkSets, Closed, Reassembled};
use crate::session::Conversations;

/// The group the header's fields are reported in.
pub static HEADER_GROUP: Group = Group { name: "header", filter: "", label: "Header", nodes: desc::HEADER };

/// What the pipeline knows of one datagram once it is decoded.
#[derive(Debug)]
pub struct DatagramEvent<'a> {
    pub frame: u64,
    pub ts_nanos: i64,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    /// The UDP payload.
    pub bytes: &'a [u8],
    pub dialect: Dialect,
    pub conversation: u32,
    pub direction: Option<Direction>,
    pub rtype: Option<rtype::Datagram<'a>>,
    pub message: Option<&'static Message>,
    /// The message payload that was decoded (decompressed when it was compressed).
    pub payload: Option<&'a [u8]>,
    pub facts: Facts,
    pub findings: &'a [Finding],
}

/// A snapshot put back together from its chunks, reported right after the chunk that completed it.
#[derive(Debug)]
pub struct ReassembledEvent<'a> {
    pub frame: u64,
    pub conversation: u32,
    pub tick: u32,
    pub chunks: u16,
    pub first_frame: u64,
    pub payload: &'a [u8],
    pub findings: &'a [Finding],
}

/// A finding that belongs to no single decoded datagram: the capture's, or a session's.
#[derive(Clone, Copy, Debug)]
pub struct LooseFinding {
    pub frame: u64,
    pub conversation: u32,
    pub finding: Finding,
}

/// Frame counts by what became of them.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct FrameCounts {
    pub frames: u64,
    pub udp: u64,
    pub datagrams: u64,
    pub other_udp: u64,
    pub not_udp: u64,
    pub unsupported_link: u64,
    pub malformed: u64,
    pub reassembled_fragments: u64,
}

/// The end of a run.
#[derive(Debug)]
pub struct RunEnd<'a> {
    pub info: &'a CaptureInfo,
    pub read: &'a ReadEnd,
    pub counts: FrameCounts,
    pub first_ts: Option<i64>,
    pub last_ts: Option<i64>,
    pub conversations: &'a Conversations,
    pub snapshots_reassembled: u64,
}

/// Where decoded traffic goes: a report.
pub trait Sink {
    /// The visitor receiving each message's fields (header first, in [`HEADER_GROUP`]).
    type Fields: Visitor;
    fn fields(&mut self) -> &mut Self::Fields;
    /// Called before a datagram's fields are visited, with its conversation's archetypes.
    fn begin(&mut self, _conversations: &Conversations, _conversation: u32) {}
    fn datagram(&mut self, event: &DatagramEvent<'_>);
    /// A reassembled snapshot, whose fields were just visited.
    fn reassembled(&mut self, _event: &ReassembledEvent<'_>) {}
    fn loose(&mut self, finding: &LooseFinding);
    fn end(&mut self, end: &RunEnd<'_>);
}

/// Decoding state carried across datagrams.
pub struct Pipeline {
    /// Decompression buffer; apart from the rest so decoded payloads can borrow it.
    scratch: Vec<u8>,
    state: State,
}

/// Everything but the scratch buffer.
struct State {
    profile: Profile,
    port: Option<u16>,
    findings: Vec<Finding>,
    closed: Vec<Closed>,
    conversations: Conversations,
    chunks: ChunkSets,
    defrag: Defragmenter,
    counts: FrameCounts,
    first_ts: Option<i64>,
    last_ts: Option<i64>,
}

impl Pipeline {
    pub fn new(profile: Profile, port: Option<u16>) -> Pipeline {
        Pipeline { scratch: vec![0; rtype::MAX_PAYLOAD], state: State {
            profile,
            port,
            findings: Vec::with_capacity(64),
            closed: Vec::new(),
            conversations: Conversations::default(),
            chunks: ChunkSets::default(),
            defrag: Defragmenter::new(),
            counts: FrameCounts::default(),
            first_ts: None,
            last_ts: None,
        } }
    }

    /// Reads a whole capture into `sink`.
    pub fn run<S: Sink>(mut self, reader: &mut capture::CaptureReader, sink: &mut S) -> Result<(), capture::CaptureError> {
        let read = reader.for_each_frame(|frame| self.frame(frame, sink))?;
        if let Some(cut) = &read.truncated {
            let finding = Finding { rule: Rule::CaptureTruncated, at: 0, detail: Detail::Value(cut.offset) };
            sink.loose(&LooseFinding { frame: cut.frame, conversation: 0, finding });
        }
        self.state.chunks.finish(&mut self.state.closed);
        self.state.flush_closed(sink);
        let stats = self.state.defrag.stats();
        self.state.counts.reassembled_fragments = stats.reassembled;
        sink.end(&RunEnd {
            info: reader.info(),
            read: &read,
            counts: self.state.counts,
            first_ts: self.state.first_ts,
            last_ts: self.state.last_ts,
            conversations: &self.state.conversations,
            snapshots_reassembled: self.state.chunks.completed,
        });
        Ok(())
    }

    /// Handles one captured frame.
    pub fn frame<S: Sink>(&mut self, frame: &Frame<'_>, sink: &mut S) {
        self.state.frame(&mut self.scratch, frame, sink);
    }
}

impl State {
    fn frame<S: Sink>(&mut self, scratch: &mut [u8], frame: &Frame<'_>, sink: &mut S) {
        self.counts.frames += 1;
        self.first_ts.get_or_insert(frame.ts_nanos);
        self.last_ts = Some(frame.ts_nanos);
        let loose = |sink: &mut S, rule, at: usize, detail| {
            let finding = Finding { rule, at: at as u32, detail };
            sink.loose(&LooseFinding { frame: frame.number, conversation: 0, finding });
        };
        match capture::udp_from_frame(frame.link_type, frame.data) {
            LinkOutcome::Udp(udp) => {
                if udp.truncated_by > 0 {
                    loose(sink, Rule::CaptureSnaplen, udp.payload_offset, Detail::Value(udp.truncated_by.into()));
                }
                self.datagram(scratch, frame.number, frame.ts_nanos, udp.src, udp.dst, udp.payload, sink);
            }
            LinkOutcome::Fragment => match self.defrag.push(frame.link_type, frame.data, frame.ts_nanos) {
                capture::DefragOutcome::Complete(udp) => {
                    self.datagram(scratch, frame.number, frame.ts_nanos, udp.src, udp.dst, &udp.payload, sink);
                }
                capture::DefragOutcome::Pending => {}
                capture::DefragOutcome::Dropped { .. } => loose(sink, Rule::CaptureFragmentDropped, 0, Detail::None),
            },
            LinkOutcome::NotUdp => self.counts.not_udp += 1,
            LinkOutcome::UnsupportedLink => self.counts.unsupported_link += 1,
            LinkOutcome::Malformed { offset, what } => {
                self.counts.malformed += 1;
                loose(sink, Rule::CaptureMalformedPacket, offset, Detail::Field(what));
            }
        }
    }

    fn datagram<S: Sink>(&mut self, scratch: &mut [u8], frame: u64, ts_nanos: i64, src: SocketAddr, dst: SocketAddr, bytes: &[u8], sink: &mut S) {
        self.counts.udp += 1;
        if self.port.is_some_and(|p| src.port() != p && dst.port() != p) {
            return;
        }
        let Some(dialect) = Dialect::detect(bytes) else {
            self.counts.other_udp += 1;
            return;
        };
        self.counts.datagrams += 1;
        self.findings.clear();
        match dialect {
            Dialect::Rtype => self.rtype(scratch, frame, ts_nanos, src, dst, bytes, sink),
        }
        self.flush_closed(sink);
    }

    fn rtype<S: Sink>(&mut self, scratch: &mut [u8], frame: u64, ts_nanos: i64, src: SocketAddr, dst: SocketAddr, bytes: &[u8], sink: &mut S) {
        let parsed = rtype::parse(bytes, scratch, &mut self.findings);
        let scratch: &[u8] = scratch;
        let message = parsed.and_then(|d| d.message);
        // Direction: the header's packet type, else the message's, else the lower port is the server.
        let direction = parsed
            .and_then(|d| match d.header.packet_type() {
                desc::PACKET_CLIENT => Some(Direction::ClientToServer),
                desc::PACKET_SERVER => Some(Direction::ServerToClient),
                _ => None,
            })
            .or(message.map(|m| m.direction));
        let guess = direction.unwrap_or(if src.port() > dst.port() { Direction::ClientToServer } else { Direction::ServerToClient });
        let conversation = self.conversations.lookup(src, dst, guess, frame);
        if let Some(d) = &parsed {
            if d.header.layout() == rtype::HeaderLayout::Old15 {
                self.once_per_conversation(conversation);
            }
        }
        sink.begin(&self.conversations, conversation);
        let archetypes = self.conversations.get(conversation).map_or(&[][..], |c| &c.archetypes[..]);
        let mut facts = Facts::default();
        let mut payload = None;
        if let Some(d) = &parsed {
            let fields = sink.fields();
            if S::Fields::WANTS_FIELDS {
                fields.open(&HEADER_GROUP, Open::Case, 0);
                decode_nodes(d.header.layout().nodes(), d.header.bytes(), rtype::ENDIAN, &self.profile, &rtype::MESSAGE_RULES, fields);
                fields.close(Open::Case);
            }
            payload = d.payload(scratch);
            if let (Some(message), Some(p)) = (message, payload) {
                let mut check = EntityTypes { inner: fields, archetypes, findings: Vec::new(), at: d.payload_at };
                facts = decode_message(message, p, d.payload_at, rtype::ENDIAN, &self.profile, &rtype::MESSAGE_RULES, &mut check, &mut self.findings);
                self.findings.append(&mut check.findings);
            }
        }
        if let (Some(m), Some(p)) = (message, payload) {
            if m.code == 0x30 {
                self.remember_archetypes(conversation, m, p);
            }
        }
        let event = DatagramEvent {
            frame,
            ts_nanos,
            src,
            dst,
            bytes,
            dialect: Dialect::Rtype,
            conversation,
            direction,
            rtype: parsed,
            message,
            payload,
            facts,
            findings: &self.findings,
        };
        sink.datagram(&event);
        if let (Some(m), Some(p), Some(d)) = (message, payload, parsed) {
            if m.code == 0x21 {
                let chunk = Chunk {
                    conversation,
                    tick: d.header.tick(),
                    frame,
                    ts_nanos,
                    total: facts.total_chunks.unwrap_or(0),
                    index: facts.chunk_index.unwrap_or(0),
                    entity_count: facts.entity_count.unwrap_or(0),
                    blocks: facts.entities_at.map_or(&[][..], |at| &p[at.min(p.len())..]),
                    at: d.payload_at as u32,
                };
                if facts.entities_at.is_some() {
                    self.chunk(chunk, sink);
                }
            }
        }
    }

    fn chunk<S: Sink>(&mut self, chunk: Chunk<'_>, sink: &mut S) {
        let mut findings = Vec::new();
        let (frame, conversation) = (chunk.frame, chunk.conversation);
        let done = self.chunks.push(chunk, &mut findings, &mut self.closed);
        for finding in findings.drain(..) {
            sink.loose(&LooseFinding { frame, conversation, finding });
        }
        if let Some(Reassembled { tick, chunks, first_frame, payload }) = done {
            let snapshot = desc::message(0x14).expect("SERVER_SNAPSHOT is described");
            let archetypes = self.conversations.get(conversation).map_or(&[][..], |c| &c.archetypes[..]);
            sink.begin(&self.conversations, conversation);
            let mut check = EntityTypes { inner: sink.fields(), archetypes, findings: Vec::new(), at: 0 };
            let mut found = Vec::new();
            decode_message(snapshot, payload, 0, rtype::ENDIAN, &self.profile, &rtype::MESSAGE_RULES, &mut check, &mut found);
            // Entity-level findings were already reported on the chunks themselves.
            let event = ReassembledEvent { frame, conversation, tick, chunks, first_frame, payload, findings: &[] };
            sink.reassembled(&event);
        }
    }

    /// Keeps the 15-byte-header finding only for a conversation's first such datagram.
    fn once_per_conversation(&mut self, conversation: u32) {
        let Some(c) = self.conversations.get_mut(conversation) else { return };
        if c.old_header_reported {
            self.findings.retain(|f| f.rule != Rule::RtypeOldHeader);
        }
        c.old_header_reported = true;
    }

    fn remember_archetypes(&mut self, conversation: u32, message: &'static Message, payload: &[u8]) {
        let mut collect = Archetypes::default();
        let mut ignored = Vec::new();
        decode_message(message, payload, 0, rtype::ENDIAN, &self.profile, &rtype::MESSAGE_RULES, &mut collect, &mut ignored);
        if let Some(c) = self.conversations.get_mut(conversation) {
            c.archetypes = collect.list;
        }
    }

    fn flush_closed<S: Sink>(&mut self, sink: &mut S) {
        for closed in self.closed.drain(..) {
            sink.loose(&LooseFinding { frame: closed.frame, conversation: closed.conversation, finding: closed.finding });
        }
    }
}

/// Collects LevelInit's archetypes (typeId, spriteId).
#[derive(Default)]
struct Archetypes {
    list: Vec<(u16, String)>,
}

impl Visitor for Archetypes {
    fn field(&mut self, field: &'static Field, _: usize, _: usize, value: Value<'_>) {
        match (field.role, value) {
            (Role::ArchetypeTypeId, Value::U(id)) if self.list.len() < crate::session::MAX_ARCHETYPES => {
                self.list.push((id as u16, String::new()))
            }
            (Role::ArchetypeSpriteId, Value::Str(s)) => {
                if let Some(last) = self.list.last_mut() {
                    last.1 = s.to_owned();
                }
            }
            _ => {}
        }
    }
    fn open(&mut self, _: &'static Group, _: Open, _: usize) {}
    fn close(&mut self, _: Open) {}
    fn undecoded(&mut self, _: usize, _: &[u8]) {}
}

/// Passes fields on to the sink's visitor, checking entity types against the LevelInit archetypes.
struct EntityTypes<'a, V> {
    inner: &'a mut V,
    archetypes: &'a [(u16, String)],
    findings: Vec<Finding>,
    at: usize,
}

impl<V: Visitor> Visitor for EntityTypes<'_, V> {
    fn field(&mut self, field: &'static Field, at: usize, len: usize, value: Value<'_>) {
        if field.role == Role::EntityType && !self.archetypes.is_empty() {
            if let Some(t) = value.as_u64() {
                if !self.archetypes.iter().any(|a| u64::from(a.0) == t) {
                    let finding = Finding { rule: Rule::RtypeUnknownEntityType, at: (self.at + at) as u32, detail: Detail::Value(t) };
                    self.findings.push(finding);
                }
            }
        }
        if V::WANTS_FIELDS {
            self.inner.field(field, at, len, value);
        }
    }
    fn open(&mut self, group: &'static Group, how: Open, at: usize) {
        if V::WANTS_FIELDS {
            self.inner.open(group, how, at);
        }
    }
    fn close(&mut self, how: Open) {
        if V::WANTS_FIELDS {
            self.inner.close(how);
        }
    }
    fn undecoded(&mut self, at: usize, bytes: &[u8]) {
        if V::WANTS_FIELDS {
            self.inner.undecoded(at, bytes);
        }
    }
}
