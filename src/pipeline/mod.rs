//! The pipeline: frames from the capture layer, through dialect detection, datagram checks and
//! message decoding, into the session layer, and out to a report [`Sink`].
//!
//! Buffers (decompression scratch, findings) are reused across datagrams: steady traffic
//! allocates nothing per datagram. Each dialect's part of the pipeline is in its own file.

mod described_arm;
pub mod layouts;
mod rt_arm;
/// How many rt server endpoints the pipeline remembers (the Lua dissector keeps the same bound).
pub use rt_arm::MAX_SERVERS as RT_MAX_SERVERS;
mod rtnp_arm;
mod rtype_arm;
mod watch;
mod worker;
pub use watch::{Watch, Watched};

use std::net::SocketAddr;
use std::ops::ControlFlow;

use crate::capture::{
    self, thread_cpu_nanos, CaptureInfo, Defragmenter, Frame, LinkOutcome, ReadEnd, StageCpu,
};
use crate::datagram::{rtype, Dialect};
use crate::display_filter::{Context, DisplayFilter};
use crate::finding::{Detail, Finding};
use crate::message::{decode_message_as, MessageRules, Open, Value, Visitor};
use crate::proto::profile::Profile;
use crate::proto::rtype as desc;
use crate::proto::schema::Endian;
use crate::proto::schema::{Field, Group};
use crate::proto::{Message, Rule};
use crate::session::analysis::{self, Analysis};
use crate::session::chunks::{ChunkSets, Closed};
use crate::session::entities::lifecycle;
use crate::session::event::{
    DatagramEvent, EntityEvent, EntityRef, FrameCounts, FrameFields, LooseFinding, ReassembledEvent,
};
use crate::session::{Conversation, Conversations, SnapshotLayout, TypeSet};
use crate::world::{Clients, Gather, Sent};

/// The group the header's fields are reported in.
pub static HEADER_GROUP: Group = Group {
    name: "header",
    filter: "",
    label: "Header",
    nodes: desc::HEADER,
};

/// Passes a message's structure on to `inner` and collects the entities it names: an id starts
/// an [`EntityRef`] (located `at` + its offset in the datagram), the entity type that follows
/// gives it its type and goes to `types` too.
struct Named<'a, V> {
    inner: &'a mut V,
    at: usize,
    /// Where the entities go, after those of other messages (a worker's batch).
    entities: &'a mut Vec<EntityRef>,
    /// Where this message's entities start in `entities`.
    first: usize,
    types: Types<'a>,
}

/// Where the entity types a message names go, for the check against LevelInit's archetypes.
enum Types<'a> {
    /// Not checked (the rt dialect has no archetypes).
    Unchecked,
    /// Listed with where they are, for the findings of those LevelInit did not declare.
    Listed(&'a mut Vec<EntityTypeAt>),
    /// Listed, and gathered as a set, on a worker, which knows no archetypes: a set the
    /// conversation's archetypes cover needs no look at the list.
    Gathered(&'a mut Vec<EntityTypeAt>, &'a mut TypeSet),
}

/// An entity type a message names, and where (its byte offset in the datagram).
type EntityTypeAt = (u64, u32);

impl<V: Visitor> Visitor for Named<'_, V> {
    const WANTS_FIELDS: bool = V::WANTS_FIELDS;
    const WANTS_MASKS: bool = V::WANTS_MASKS;
    const WANTS_ENTITIES: bool = true;
    #[inline]
    fn wants(&self, field: &'static Field) -> bool {
        self.inner.wants(field)
    }
    #[inline]
    fn masked(&mut self, item: usize, mask: u16, at: usize, len: usize) {
        self.inner.masked(item, mask, at, len);
    }
    #[inline]
    fn entity(&mut self, id: u32, at: usize) {
        self.entities.push(EntityRef {
            id,
            event: EntityEvent::Update,
            type_id: None,
            at: (self.at + at) as u32,
        });
    }
    #[inline]
    fn entity_type(&mut self, type_id: u64, at: usize) {
        let named = self.entities.len();
        if named > self.first {
            self.entities[named - 1].type_id = Some(type_id as u16);
        }
        match &mut self.types {
            Types::Unchecked => {}
            Types::Listed(list) => list.push((type_id, (self.at + at) as u32)),
            Types::Gathered(list, set) => {
                list.push((type_id, (self.at + at) as u32));
                set.insert(type_id);
            }
        }
    }
    #[inline]
    fn field(&mut self, field: &'static Field, at: usize, len: usize, value: Value<'_>) {
        self.inner.field(field, at, len, value);
    }
    #[inline]
    fn open(&mut self, group: &'static Group, how: Open, at: usize) {
        self.inner.open(group, how, at);
    }
    #[inline]
    fn close(&mut self, how: Open) {
        self.inner.close(how);
    }
    #[inline]
    fn undecoded(&mut self, at: usize, bytes: &[u8]) {
        self.inner.undecoded(at, bytes);
    }
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
    /// Per-conversation session analysis (handshake, rates, RTT, loss...).
    pub analysis: &'a Analysis,
    /// The snapshot profile every rtype conversation was read with (`document` for the
    /// document's table), or [`MIXED_LAYOUTS`] when they were read with several.
    pub profile: &'a str,
    /// The snapshot profiles the run's conversations were read with, by index
    /// ([`SnapshotLayout::index`](crate::session::SnapshotLayout::index)): see [`RunEnd::layout`].
    pub layouts: &'a [&'a str],
    /// The configuration file the run read, if any.
    pub config: Option<&'a std::path::Path>,
    /// With a display filter: its text, and how many datagrams it passed to the sink.
    pub displayed: Option<(&'a str, u64)>,
}

/// [`RunEnd::profile`] when the rtype conversations were read with several snapshot profiles.
pub const MIXED_LAYOUTS: &str = "mixed";

impl RunEnd<'_> {
    /// The snapshot profile conversation `c` was read with.
    pub fn layout(&self, c: &Conversation) -> &str {
        self.layouts
            .get(c.layout.index())
            .copied()
            .unwrap_or(self.profile)
    }

    /// The conversations whose snapshots no layout reads ([`Conversation::unfit`]).
    pub fn unfit(&self) -> usize {
        self.conversations.all().iter().filter(|c| c.unfit).count()
    }
}

/// What a run says last, on standard error, when the snapshots of `unfit` conversations decode
/// with no layout ([`RunEnd::unfit`]): their findings stand, and a profile would read them.
pub fn unfit_note(unfit: usize) -> Option<String> {
    (unfit > 0).then(|| {
        let (n, has) = match unfit {
            1 => ("1 conversation".to_string(), "has"),
            n => (format!("{n} conversations"), "have"),
        };
        format!(
            "{n} {has} snapshots that neither the document's layout nor any configured or bundled \
             profile reads: their findings stand (a profile of this build's layout reads them: \
             --profile FILE.toml, as in samples/profiles/)"
        )
    })
}

/// The snapshot profile every rtype conversation was read with (the run's first of `layouts`
/// when there is none), or [`MIXED_LAYOUTS`].
fn common_layout<'a>(layouts: &[&'a str], conversations: &Conversations) -> &'a str {
    let mut read = conversations
        .all()
        .iter()
        .filter(|c| c.dialect == Dialect::Rtype)
        .map(|c| c.layout.index());
    let first = read.next().unwrap_or(0);
    match read.all(|i| i == first) {
        true => layouts.get(first).copied().unwrap_or(MIXED_LAYOUTS),
        false => MIXED_LAYOUTS,
    }
}

/// Where decoded traffic goes: a report.
pub trait Sink {
    /// The visitor receiving each message's fields (header first, in [`HEADER_GROUP`]).
    type Fields: RenderAhead;
    fn fields(&mut self) -> &mut Self::Fields;
    /// Called once the capture's header has been read, before any frame.
    fn start(&mut self, _info: &CaptureInfo) {}
    /// Called before a datagram's fields are visited, with its conversation's archetypes.
    fn begin(&mut self, _conversations: &Conversations, _conversation: u32) {}
    fn datagram(&mut self, event: &DatagramEvent<'_>);
    /// [`Sink::datagram`], with what the display filter saw of it (the first frame's time, the
    /// profile, the snapshot it completed), for a sink that reads fields as the filter does; and
    /// the fields' rendering, when a worker rendered them ahead ([`Rendering`]), for a sink that
    /// writes it out from the batch it is in. By default the fields put it in their output
    /// ([`RenderAhead::fill_rendered`]) and the sink takes it from there.
    fn datagram_in(
        &mut self,
        event: &DatagramEvent<'_>,
        _context: &Context<'_>,
        rendered: Option<Rendering<'_, Self>>,
    ) {
        if let Some((all, index)) = rendered {
            self.fields().fill_rendered(all, index);
        }
        self.datagram(event);
    }
    /// A datagram the display filter did not pass (its fields were visited all the same): the
    /// sink may note its time, so that times stay relative to the same first datagram.
    fn skipped(&mut self, _event: &DatagramEvent<'_>) {}
    /// Called after the session analysis saw the datagram, with what it made of it
    /// ([`Analysis::last`], the entities' [`Analysis::entities`]).
    fn analysed(&mut self, _event: &DatagramEvent<'_>, _analysis: &Analysis) {}
    /// A reassembled snapshot, whose fields were just visited.
    fn reassembled(&mut self, _event: &ReassembledEvent<'_>) {}
    fn loose(&mut self, finding: &LooseFinding);
    /// The finding that reading stopped early (`capture.corrupt`, `capture.truncated`), with why
    /// in words: a view that shows findings' details shows it after the detail.
    fn cut(&mut self, finding: &LooseFinding, _reason: &str) {
        self.loose(finding);
    }
    fn end(&mut self, end: &RunEnd<'_>);
    /// True once the sink wants nothing more (its output failed, or was closed by `| head`):
    /// reading stops at the next frame instead of decoding the rest of the capture for nothing.
    fn done(&self) -> bool {
        false
    }
}

/// A fields visitor whose output can be rendered on the worker threads, ahead of the ordered
/// stage, and taken back in frame order: export's JSON, most of an export's work. Visitors that
/// do not render keep the defaults.
pub trait RenderAhead: Visitor + Send + Sized {
    /// True for a visitor that sees nothing of a message (it takes no field, opens no group):
    /// the workers then walk the messages for the ordered stage, as fast as the walk goes for
    /// nobody.
    fn unseen(&self) -> bool {
        false
    }
    /// The renderings of a batch's datagrams, end to end (`()` for a visitor that does not
    /// render ahead).
    type Rendered: Renderings;
    /// A copy that renders on a worker thread, or `None` when this visitor cannot.
    fn ahead(&self) -> Option<Self> {
        None
    }
    /// In a copy, before a datagram's walk: where its rendering may go straight into `out`
    /// (rather than be copied there by [`RenderAhead::drain_rendered`]).
    fn start_rendering(&mut self, _out: &mut Self::Rendered) {}
    /// In a copy, after the walk that [`RenderAhead::start_rendering`] began: ends the
    /// datagram's rendering in `out`, and starts over.
    fn drain_rendered(&mut self, _out: &mut Self::Rendered) {}
    /// Takes rendering `index` of `all` (in the order [`RenderAhead::drain_rendered`] appended
    /// them), in frame order.
    fn take_rendered(&mut self, _all: &Self::Rendered, _index: usize) {}
    /// Puts the rendering taken ([`RenderAhead::take_rendered`]) in this visitor's output, for
    /// a sink that reads it from there rather than from the batch ([`Sink::datagram_in`]).
    fn fill_rendered(&mut self, _all: &Self::Rendered, _index: usize) {}
}

/// A batch's renderings: what they hold counts toward the batch's bounded size.
pub trait Renderings: Default + Send {
    /// How many datagrams' renderings they hold.
    fn count(&self) -> usize;
    /// Bytes they hold.
    fn size(&self) -> usize;
    /// Bytes their buffers hold on to.
    fn capacity(&self) -> usize;
    fn clear(&mut self);
}

impl Renderings for () {
    fn count(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        0
    }
    fn capacity(&self) -> usize {
        0
    }
    fn clear(&mut self) {}
}

/// The renderings of the sink `S`'s fields.
type RenderedOf<S> = <<S as Sink>::Fields as RenderAhead>::Rendered;
/// A datagram's fields rendered ahead: its batch's renderings, and its index in them.
pub type Rendering<'a, S> = (&'a RenderedOf<S>, usize);

impl RenderAhead for crate::message::NoFields {
    fn unseen(&self) -> bool {
        true
    }
    type Rendered = ();
}

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

/// One UDP payload on its way through a dialect's arm.
#[derive(Clone, Copy)]
struct Udp<'a> {
    frame: u64,
    ts_nanos: i64,
    src: SocketAddr,
    dst: SocketAddr,
    bytes: &'a [u8],
    frame_fields: FrameFields<'a>,
    /// The recognised conversation it belongs to; `None` for the first datagram of a new one.
    conversation: Option<u32>,
    /// The capture holds less of it than was sent (its snap length): what the missing bytes would
    /// show is not judged (see [`judged_when_cut`]).
    cut: bool,
}

/// The [`FrameFields`] of a datagram of `payload` bytes (as sent) in `frame`, `time_delta` after
/// the frame before.
fn frame_fields<'a>(frame: &Frame<'a>, payload: u32, time_delta: i64) -> FrameFields<'a> {
    FrameFields {
        bytes: frame.data,
        len: frame.orig_len,
        cap_len: frame.data.len() as u32,
        udp_len: payload.saturating_add(8),
        time_delta,
        stream_delta: None,
    }
}

/// Whether a datagram the capture cut short is still judged on `rule`: only its header's rules
/// are (the descriptions' `header-rules` and their messages' `seen-rule`; `capture.snaplen` says
/// the rest is missing); its lengths, CRC, compressed block, message and chunk are not, nor
/// (rtnp) its text.
pub(super) fn judged_when_cut(rule: Rule) -> bool {
    use crate::proto::{rt, rtype};
    rtype::HEADER_RULES.contains(&rule)
        || rt::HEADER_RULES.contains(&rule)
        || rtype::MESSAGES
            .iter()
            .chain(rt::MESSAGES)
            .any(|m| m.seen_rule == Some(rule))
}

/// The dialect of a datagram the capture cut short, by what it holds: the magic and a whole
/// header of known values (rtype, rt), or the first bytes of rtnp. [`Dialect::recognise`] cannot
/// judge it, having no length, CRC or whole text to check.
fn recognise_cut(bytes: &[u8]) -> Option<Dialect> {
    Dialect::detect(bytes).filter(|dialect| match dialect {
        Dialect::Rtype => rtype::Header::new_checked(bytes, rtype::HeaderLayout::Standard)
            .is_some_and(|h| {
                h.version() == crate::proto::rtype::VERSION
                    && matches!(
                        h.packet_type(),
                        crate::proto::rtype::PACKET_CLIENT | crate::proto::rtype::PACKET_SERVER
                    )
                    && crate::proto::rtype::message(h.msg_type()).is_some()
            }),
        Dialect::Rt => crate::datagram::rt::Header::new_checked(bytes).is_some_and(|h| {
            h.flags() & crate::proto::rt::RESERVED_FLAGS == 0
                && crate::proto::rt::message(h.packet_type()).is_some()
        }),
        Dialect::Rtnp => true,
        Dialect::Described(_) => false,
    })
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
    /// Handles one frame; `ahead` is its work done on a worker thread.
    fn frame<S: Sink>(
        &mut self,
        scratch: &mut [u8],
        frame: &Frame<'_>,
        ahead: Option<&worker::FrameAhead<'_, RenderedOf<S>>>,
        sink: &mut S,
    ) {
        self.counts.frames += 1;
        self.first_ts.get_or_insert(frame.ts_nanos);
        let previous = self.last_ts.replace(frame.ts_nanos);
        let time_delta = frame
            .ts_nanos
            .saturating_sub(previous.unwrap_or(frame.ts_nanos));
        let loose = |shown: &mut Shown, sink: &mut S, rule, at: usize, detail| {
            let finding = Finding::new(rule, at as u32, detail);
            let f = LooseFinding {
                frame: frame.number,
                conversation: 0,
                finding,
            };
            shown.loose(sink, &f);
        };
        let (link, rtype) = match ahead {
            Some(ahead) => (ahead.link, ahead.rtype.as_ref()),
            None => (capture::udp_from_frame(frame.link_type, frame.data), None),
        };
        let unpack = rtype.map(Unpack::Ahead);
        match link {
            LinkOutcome::Udp(udp) => {
                if udp.truncated_by > 0 {
                    loose(
                        &mut self.shown,
                        sink,
                        Rule::CaptureSnaplen,
                        udp.payload_offset,
                        Detail::Value(udp.truncated_by.into()),
                    );
                }
                let unpack = unpack.unwrap_or(Unpack::Here(scratch));
                let udp = Udp {
                    frame: frame.number,
                    ts_nanos: frame.ts_nanos,
                    src: udp.src,
                    dst: udp.dst,
                    bytes: udp.payload,
                    frame_fields: frame_fields(
                        frame,
                        udp.payload.len() as u32 + udp.truncated_by,
                        time_delta,
                    ),
                    conversation: None,
                    cut: udp.truncated_by > 0,
                };
                self.datagram(udp, unpack, sink);
            }
            LinkOutcome::Fragment => {
                // Datagrams evicted (set or byte limit) or expired while this fragment was kept
                // are dropped too: one finding for each, as for this fragment when it is dropped.
                let dropped = |s: capture::DefragStats| {
                    s.expired + s.dropped_over_limit + s.overlapping + s.dropped_invalid
                };
                let before = dropped(self.defrag.stats());
                let outcome = self
                    .defrag
                    .push(frame.link_type, frame.data, frame.ts_nanos);
                let mut lost = dropped(self.defrag.stats()) - before;
                if matches!(outcome, capture::DefragOutcome::Dropped { .. }) {
                    lost = lost.max(1);
                }
                for _ in 0..lost {
                    loose(
                        &mut self.shown,
                        sink,
                        Rule::CaptureFragmentDropped,
                        0,
                        Detail::None,
                    );
                }
                if let capture::DefragOutcome::Complete(udp) = outcome {
                    let udp = Udp {
                        frame: frame.number,
                        ts_nanos: frame.ts_nanos,
                        src: udp.src,
                        dst: udp.dst,
                        bytes: &udp.payload,
                        frame_fields: frame_fields(frame, udp.payload.len() as u32, time_delta),
                        conversation: None,
                        cut: false,
                    };
                    self.datagram(udp, Unpack::Here(scratch), sink);
                }
            }
            LinkOutcome::NotUdp => self.counts.not_udp += 1,
            LinkOutcome::UnsupportedLink => {
                self.counts.unsupported_link += 1;
                if frame.link_type == capture::LinkType::UNKNOWN {
                    let rule = Rule::CaptureUndescribedInterface;
                    loose(&mut self.shown, sink, rule, 0, Detail::None);
                }
            }
            LinkOutcome::Malformed { offset, what } => {
                self.counts.malformed += 1;
                loose(
                    &mut self.shown,
                    sink,
                    Rule::CaptureMalformedPacket,
                    offset,
                    Detail::Field(what),
                );
            }
        }
    }

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
