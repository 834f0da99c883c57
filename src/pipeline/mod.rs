//! The pipeline: frames from the capture layer, through dialect detection, datagram checks and
//! message decoding, into the session layer, and out to a report [`Sink`].
//!
//! Buffers (decompression scratch, findings) are reused across datagrams: steady traffic
//! allocates nothing per datagram. Each dialect's part of the pipeline is in its own file.

mod described_arm;
mod frame;
pub mod layouts;
mod named;
mod rt_arm;
/// How many rt server endpoints the pipeline remembers (the Lua dissector keeps the same bound).
pub use rt_arm::MAX_SERVERS as RT_MAX_SERVERS;
mod rtnp_arm;
mod rtype_arm;
mod sink;
mod watch;
mod worker;
pub use sink::{unfit_note, RenderAhead, Rendering, Renderings, RunEnd, Sink, MIXED_LAYOUTS};
pub use watch::{Watch, Watched};

use frame::{judged_when_cut, recognise_cut, Udp};
use named::{EntityTypeAt, Named, Types};
use sink::{common_layout, RenderedOf};

use std::ops::ControlFlow;

use crate::capture::{self, thread_cpu_nanos, CaptureInfo, Defragmenter, Frame, ReadEnd, StageCpu};
use crate::datagram::{rtype, Dialect};
use crate::display_filter::{Context, DisplayFilter};
use crate::finding::{Detail, Finding};
use crate::message::{decode_message_as, MessageRules};
use crate::proto::profile::Profile;
use crate::proto::rtype as desc;
use crate::proto::schema::Endian;
use crate::proto::schema::Group;
use crate::proto::{Message, Rule};
use crate::session::analysis::{self, Analysis};
use crate::session::chunks::{ChunkSets, Closed};
use crate::session::entities::lifecycle;
use crate::session::event::{
    DatagramEvent, EntityEvent, EntityRef, FrameCounts, FrameFields, LooseFinding,
};
use crate::session::{Conversations, SnapshotLayout};
use crate::world::{Clients, Gather, Sent};

/// The group the header's fields are reported in.
pub static HEADER_GROUP: Group = Group {
    name: "header",
    filter: "",
    label: "Header",
    nodes: desc::HEADER,
};

/// Decoding state carried across datagrams.
pub struct Pipeline {
    /// Decompression buffer; apart from the rest so decoded payloads can borrow it.
    scratch: Vec<u8>,
    /// Threads that decode, the calling thread one of them; 1 runs everything on it, unbatched.
    threads: usize,
    state: State,
}

/// How a message was walked: what it takes to walk its bytes again for [`Clients`].
#[derive(Clone, Copy, Debug)]
pub struct Walked {
    pub message: &'static Message,
    pub variant: Option<u8>,
    /// The payload's offset in the datagram.
    pub base: usize,
    pub endian: Endian,
    /// The conversation's snapshot layout.
    pub layout: SnapshotLayout,
    pub rules: &'static MessageRules,
}

/// Everything but the scratch buffer.
struct State {
    /// The run's profile: the named one, else the one the scan before a file's reading found,
    /// else the document's; the first of the layouts conversations choose from.
    profile: Profile,
    layouts: layouts::Layouts,
    config: Option<std::path::PathBuf>,
    port: Option<u16>,
    findings: Vec<Finding>,
    /// The session findings of the datagram being reported.
    raised: Vec<LooseFinding>,
    /// Whether the clients of one server agree (`session.clients-disagree`).
    clients: Clients,
    /// The entities the current datagram names.
    entities: Vec<EntityRef>,
    /// The entity types it names, checked against its conversation's archetypes.
    types: Vec<EntityTypeAt>,
    closed: Vec<Closed>,
    conversations: Conversations,
    analysis: Analysis,
    chunks: ChunkSets,
    defrag: Defragmenter,
    counts: FrameCounts,
    first_ts: Option<i64>,
    last_ts: Option<i64>,
    rt: rt_arm::RtState,
    rtnp: rtnp_arm::RtnpState,
    described: described_arm::DescribedState,
    shown: Shown,
}

/// The display filter, if any, and how many datagrams it passed.
#[derive(Default)]
struct Shown {
    filter: Option<DisplayFilter>,
    passed: u64,
}

impl Shown {
    /// Hands a finding that belongs to no datagram to the sink, when the filter passes it.
    fn loose<S: Sink>(&mut self, sink: &mut S, f: &LooseFinding) {
        if self.filter.as_mut().is_none_or(|d| d.matches_loose(f)) {
            sink.loose(f);
        }
    }

    /// [`Shown::loose`] of the finding that reading stopped early, with why.
    fn cut<S: Sink>(&mut self, sink: &mut S, f: &LooseFinding, reason: &str) {
        if self.filter.as_mut().is_none_or(|d| d.matches_loose(f)) {
            sink.cut(f, reason);
        }
    }
}

impl Pipeline {
    pub fn new(profile: Profile, port: Option<u16>) -> Pipeline {
        Pipeline {
            scratch: vec![0; rtype::MAX_PAYLOAD],
            threads: 1,
            state: State {
                profile,
                layouts: layouts::Layouts::default(),
                config: None,
                port,
                findings: Vec::with_capacity(64),
                raised: Vec::new(),
                clients: Clients::default(),
                entities: Vec::new(),
                types: Vec::new(),
                closed: Vec::new(),
                conversations: Conversations::default(),
                analysis: Analysis::default(),
                chunks: ChunkSets::default(),
                defrag: Defragmenter::new(),
                counts: FrameCounts::default(),
                first_ts: None,
                last_ts: None,
                rt: rt_arm::RtState::default(),
                rtnp: rtnp_arm::RtnpState::default(),
                described: described_arm::DescribedState::default(),
                shown: Shown::default(),
            },
        }
    }

    /// Names the configuration file the run's settings came from, for the reports.
    pub fn with_config(mut self, config: Option<std::path::PathBuf>) -> Pipeline {
        self.state.config = config;
        self
    }

    /// Reads each rtype conversation with the first of the run's profile, the document's and
    /// `candidates` that reads its snapshots ([`layouts`]), a departure from the document's
    /// layout being one `rtype.snapshot.layout` finding per conversation.
    pub fn with_layouts(mut self, candidates: impl IntoIterator<Item = Profile>) -> Pipeline {
        self.state.layouts = layouts::Layouts::new(&self.state.profile, candidates);
        self
    }

    /// Passes the sink only the datagrams (and loose findings) `filter` matches.
    pub fn with_filter(mut self, filter: Option<DisplayFilter>) -> Pipeline {
        self.state.shown.filter = filter;
        self
    }

    /// Judges sessions against `config` (nominal snapshot rate) instead of the defaults.
    pub fn with_analysis(mut self, config: analysis::Config) -> Pipeline {
        self.state.analysis = Analysis::new(config);
        self.state.clients = Clients::on(config.compare_clients);
        self
    }

    /// Spreads the stateless work of each frame over `threads` threads, the calling thread one
    /// of them (with one, the whole run is on it). Outputs are the same whatever their number.
    pub fn with_threads(mut self, threads: usize) -> Pipeline {
        self.threads = threads.clamp(1, MAX_THREADS);
        self
    }

    /// Reads a whole capture into `sink`; returns the CPU time each stage used.
    pub fn run<S: Sink>(
        mut self,
        reader: &mut capture::CaptureReader,
        sink: &mut S,
    ) -> Result<StageCpu, capture::CaptureError> {
        sink.start(reader.info());
        let flow = |sink: &S| {
            if sink.done() {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let (read, cpu) = if self.threads == 1 {
            let before = thread_cpu_nanos();
            let read = reader.for_each_frame_until(|frame| {
                self.state.frame(&mut self.scratch, frame, None, sink);
                flow(sink)
            })?;
            let ordered = thread_cpu_nanos().saturating_sub(before);
            let cpu = StageCpu {
                ordered,
                frames: read.frames,
                ..StageCpu::default()
            };
            (read, cpu)
        } else {
            let profile = &self.state.profile;
            let workers = (0..self.threads)
                .map(|_| worker::Worker::new(sink.fields(), profile))
                .collect();
            reader.for_each_frame_parallel(
                workers,
                |frame, worked: &worker::Worked<_>, index| {
                    let ahead = worked.frame(index, frame.data);
                    self.state
                        .frame(&mut self.scratch, frame, ahead.as_ref(), sink);
                    flow(sink)
                },
            )?
        };
        self.finish(reader.info(), &read, sink);
        Ok(cpu)
    }

    /// The end of a capture read frame by frame with [`Pipeline::frame`] (a file, or a live
    /// capture when it stops): reports a cut capture, closes chunk sets and sessions, reports what
    /// they left, and calls `sink.end`. The caller called `sink.start(info)` before the frames.
    pub fn finish<S: Sink>(mut self, info: &CaptureInfo, read: &ReadEnd, sink: &mut S) {
        for overrun in &read.overruns {
            let detail = Detail::Sizes {
                expected: u64::from(overrun.snaplen),
                found: u64::from(overrun.caplen),
            };
            let f = LooseFinding {
                frame: overrun.frame,
                conversation: 0,
                finding: Finding::new(Rule::CaptureOversizedRecord, 0, detail),
            };
            self.state.shown.loose(sink, &f);
        }
        for skipped in &read.skipped {
            let finding = match skipped.packet_too_long {
                Some((caplen, room)) => {
                    let detail = Detail::Sizes {
                        expected: room.into(),
                        found: caplen.into(),
                    };
                    Finding::new(Rule::CapturePacketExceedsBlock, 0, detail)
                }
                None => {
                    let detail = Detail::Block {
                        block: skipped.block,
                        offset: skipped.offset,
                    };
                    Finding::new(Rule::CaptureBlockSkipped, 0, detail)
                }
            };
            let f = LooseFinding {
                frame: skipped.frame,
                conversation: 0,
                finding,
            };
            self.state.shown.loose(sink, &f);
        }
        if let Some(cut) = &read.truncated {
            let finding = Finding::new(
                if cut.corrupt {
                    Rule::CaptureCorrupt
                } else {
                    Rule::CaptureTruncated
                },
                0,
                Detail::At(cut.offset),
            );
            // A block that is no packet's stops reading after the last frame read.
            let f = LooseFinding {
                frame: cut.frame.unwrap_or(read.frames),
                conversation: 0,
                finding,
            };
            self.state.shown.cut(sink, &f, &cut.reason);
        }
        // Datagrams whose fragments never all arrived are lost too, like those dropped on the way.
        for _ in 0..self.state.defrag.unfinished() {
            let finding = Finding::new(Rule::CaptureFragmentDropped, 0, Detail::None);
            let f = LooseFinding {
                frame: read.frames,
                conversation: 0,
                finding,
            };
            self.state.shown.loose(sink, &f);
        }
        self.state.chunks.finish(&mut self.state.closed);
        self.state.flush_closed(sink);
        self.state.rt_finish(sink);
        let shown = &mut self.state.shown;
        self.state.analysis.finish(&mut |f| shown.loose(sink, &f));
        if let Some(frame) = self.state.conversations.overflow {
            let limit = crate::session::MAX_CONVERSATIONS as u64;
            let finding = Finding::new(Rule::SessionConversationLimit, 0, Detail::Value(limit));
            let f = LooseFinding {
                frame,
                conversation: 0,
                finding,
            };
            self.state.shown.loose(sink, &f);
        }
        // A check that saw nothing must not pass: an empty capture, or the wrong one.
        if self.state.counts.datagrams == 0 {
            let f = LooseFinding {
                frame: read.frames,
                conversation: 0,
                finding: Finding::new(Rule::CaptureNoDatagrams, 0, Detail::None),
            };
            self.state.shown.loose(sink, &f);
        }
        let stats = self.state.defrag.stats();
        self.state.counts.reassembled_fragments = stats.reassembled;
        let layouts: Vec<&str> = self.state.layouts.names(&self.state.profile).collect();
        sink.end(&RunEnd {
            info,
            read,
            counts: self.state.counts,
            first_ts: self.state.first_ts,
            last_ts: self.state.last_ts,
            conversations: &self.state.conversations,
            snapshots_reassembled: self.state.chunks.completed,
            analysis: &self.state.analysis,
            profile: common_layout(&layouts, &self.state.conversations),
            layouts: &layouts,
            config: self.state.config.as_deref(),
            displayed: self
                .state
                .shown
                .filter
                .as_ref()
                .map(|f| (f.text(), self.state.shown.passed)),
        });
    }

    /// Handles one captured frame.
    pub fn frame<S: Sink>(&mut self, frame: &Frame<'_>, sink: &mut S) {
        self.state.frame(&mut self.scratch, frame, None, sink);
    }

    /// The conversations so far, for a view of a run that is still going (`proxy`).
    pub fn conversations(&self) -> &Conversations {
        &self.state.conversations
    }

    /// The session analysis so far, for a view of a run that is still going (`proxy`).
    pub fn analysis(&self) -> &Analysis {
        &self.state.analysis
    }
}

/// What [`report`] gets of a datagram beyond its event: what the display filter sees, and its
/// fields rendered ahead, if they were.
type Seen<'c, S> = (Context<'c>, Option<Rendering<'c, S>>);

/// [`Seen`] of a datagram that completed no snapshot and was not rendered ahead (rt, rtnp).
fn unrendered<'a, S: Sink>(
    first_ts: i64,
    profile: &'a Profile,
    frame: FrameFields<'a>,
) -> Seen<'a, S> {
    let context = Context {
        first_ts,
        profile,
        reassembled: None,
        frame,
    };
    (context, None)
}

/// Analyses a decoded datagram, then hands it to the sink with the session findings it raised (so
/// that a filter on them shows it), and those findings on their own after it. With a display
/// filter, the analysis still sees every datagram (sessions are judged whole) and the sink only
/// those the filter passes. Returns whether the sink got it.
// Always inlined: called once per datagram from each arm, an outlined call cost 47
// instructions per datagram (callgrind, summary).
#[inline(always)]
fn report<'a, S: Sink>(
    (analysis, clients, conversations): (&mut Analysis, &mut Clients, &Conversations),
    raised: &'a mut Vec<LooseFinding>,
    shown: &mut Shown,
    (mut context, rendered): Seen<'_, S>,
    mut event: DatagramEvent<'a>,
    sink: &mut S,
) -> bool {
    raised.clear();
    analysis.observe(&event, &mut |f| raised.push(f));
    clients.judge(&event, conversations, |f| raised.push(f));
    context.frame.stream_delta = analysis.last().stream_delta_nanos;
    let raised: &'a [LooseFinding] = raised;
    event.session = raised;
    if let Some(filter) = &mut shown.filter {
        if !filter.matches(&event, &context) {
            sink.skipped(&event);
            return false;
        }
        shown.passed += 1;
    }
    sink.datagram_in(&event, &context, rendered);
    for f in raised {
        sink.loose(f);
    }
    sink.analysed(&event, analysis);
    true
}

/// The most threads a run takes: each has up to two batches of frames and their results in
/// flight (256 KiB each, with this many threads).
pub const MAX_THREADS: usize = 16;

/// Where an rtype datagram's CRC and decompression ([`rtype::unpack`]) are done.
enum Unpack<'s, R> {
    /// Here, decompressing into this scratch buffer.
    Here(&'s mut [u8]),
    /// Ahead, on a worker thread (borrowed: the work is large, and read in place).
    Ahead(&'s worker::RtypeAhead<'s, R>),
}

impl State {
    /// Judges a UDP payload that belongs to a recognised conversation, or that proves its
    /// dialect by itself (which starts a conversation); anything else is other UDP, not judged.
    fn datagram<S: Sink>(
        &mut self,
        mut udp: Udp<'_>,
        unpack: Unpack<'_, RenderedOf<S>>,
        sink: &mut S,
    ) {
        self.counts.udp += 1;
        if self
            .port
            .is_some_and(|p| udp.src.port() != p && udp.dst.port() != p)
        {
            return;
        }
        let known = self.conversations.find(udp.src, udp.dst);
        udp.conversation = known.map(|c| c.id);
        let Some(dialect) = known
            .map(|c| c.dialect)
            .or_else(|| Dialect::recognise(udp.bytes))
            .or_else(|| described_arm::recognise(udp.bytes, udp.src, udp.dst))
            .or_else(|| udp.cut.then(|| recognise_cut(udp.bytes)).flatten())
        else {
            self.counts.other_udp += 1;
            return;
        };
        self.counts.datagrams += 1;
        self.findings.clear();
        self.entities.clear();
        self.types.clear();
        match dialect {
            Dialect::Rtype => self.rtype(&udp, unpack, sink),
            Dialect::Rt => self.rt(&udp, sink),
            Dialect::Rtnp => self.rtnp(&udp, sink),
            Dialect::Described(i) => self.described(i, &udp, sink),
        }
        self.flush_closed(sink);
    }

    /// Compares the clients of a server ([`Clients::sent`]) when the run does (`check`) and the
    /// datagram just walked updates entities of a conversation that shares its server: its
    /// message (`payload`, walked as `how`, of server tick `tick`) is walked once more when
    /// another conversation was sent other bytes at that tick, and so is theirs, which waited.
    /// A server that sends each client the same bytes pays a comparison of bytes.
    #[inline]
    fn compare_clients(
        &mut self,
        conversation: u32,
        frame: u64,
        tick: u32,
        payload: &[u8],
        how: Walked,
    ) {
        if !self.clients.compares() {
            return;
        }
        let updates = self.entities.first().map(|r| r.event) == Some(EntityEvent::Update);
        let shared = self
            .conversations
            .get(conversation)
            .filter(|c| updates && c.shares_server);
        let Some(server) = shared.map(|c| c.server) else {
            return;
        };
        let (layouts, run) = (&self.layouts, &self.profile);
        let walk = |how: &Walked, bytes: &[u8], gather: &mut Gather, ignored: &mut Vec<Finding>| {
            let profile = layouts.profile(run, how.layout);
            let (m, rules) = (how.message, how.rules);
            decode_message_as(
                m,
                how.variant,
                bytes,
                how.base,
                how.endian,
                profile,
                rules,
                gather,
                ignored,
            );
        };
        let sent = Sent {
            server,
            conversation,
            frame,
            tick,
            bytes: payload,
            how,
        };
        self.clients.sent(sent, &self.entities, walk);
    }

    /// Keeps the entities the walk collected when the message spawns, updates or destroys them,
    /// as [`lifecycle`] says; other messages that name entities change nothing.
    fn entity_events(&mut self, message: Option<&Message>) {
        match lifecycle(message.and_then(|m| m.role)) {
            Some(event) => self.entities.iter_mut().for_each(|e| e.event = event),
            None => self.entities.clear(),
        }
    }

    fn flush_closed<S: Sink>(&mut self, sink: &mut S) {
        for closed in self.closed.drain(..) {
            let f = LooseFinding {
                frame: closed.frame,
                conversation: closed.conversation,
                finding: closed.finding,
            };
            self.shown.loose(sink, &f);
        }
    }
}
