//! The pipeline's contract with a report: the [`Sink`] decoded traffic goes to, the fields
//! visitor that may render on the worker threads ([`RenderAhead`]), and what a run ends with
//! ([`RunEnd`]).

use crate::capture::{CaptureInfo, ReadEnd};
use crate::datagram::Dialect;
use crate::display_filter::Context;
use crate::message::Visitor;
use crate::session::analysis::Analysis;
use crate::session::event::{DatagramEvent, FrameCounts, LooseFinding, ReassembledEvent};
use crate::session::{Conversation, Conversations};

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
pub(super) fn common_layout<'a>(layouts: &[&'a str], conversations: &Conversations) -> &'a str {
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
pub(super) type RenderedOf<S> = <<S as Sink>::Fields as RenderAhead>::Rendered;
/// A datagram's fields rendered ahead: its batch's renderings, and its index in them.
pub type Rendering<'a, S> = (&'a RenderedOf<S>, usize);

impl RenderAhead for crate::message::NoFields {
    fn unseen(&self) -> bool {
        true
    }
    type Rendered = ();
}
