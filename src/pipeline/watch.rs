//! A report watched on its way: something that looks at what a sink gets (counts its findings,
//! stops after N datagrams, notes the frames a cut keeps) without being a sink itself, so that
//! the forwarding of every [`Sink`] method is written once, here.

use super::{Rendering, RunEnd, Sink};
use crate::capture::CaptureInfo;
use crate::display_filter::Context;
use crate::session::analysis::Analysis;
use crate::session::event::{DatagramEvent, LooseFinding, ReassembledEvent};
use crate::session::Conversations;

/// What watches a sink's traffic; every method has a default that only lets it through.
pub trait Watch {
    /// A datagram on its way to the sink, `shown` when the display filter passed it (otherwise
    /// the sink gets it as [`Sink::skipped`]); false keeps it from the sink.
    fn datagram(&mut self, _event: &DatagramEvent<'_>, _shown: bool) -> bool {
        true
    }
    fn loose(&mut self, _finding: &LooseFinding) {}
    fn end(&mut self, _end: &RunEnd<'_>) {}
    /// Whether reading may stop, the sink being done or not.
    fn done(&self, sink_done: bool) -> bool {
        sink_done
    }
}

/// `sink`, with `watch` looking at what it gets.
pub struct Watched<'a, S, W> {
    pub sink: &'a mut S,
    pub watch: W,
}

impl<S: Sink, W: Watch> Sink for Watched<'_, S, W> {
    type Fields = S::Fields;
    fn fields(&mut self) -> &mut S::Fields {
        self.sink.fields()
    }
    fn start(&mut self, info: &CaptureInfo) {
        self.sink.start(info);
    }
    fn begin(&mut self, conversations: &Conversations, conversation: u32) {
        self.sink.begin(conversations, conversation);
    }
    fn datagram(&mut self, event: &DatagramEvent<'_>) {
        if self.watch.datagram(event, true) {
            self.sink.datagram(event);
        }
    }
    fn datagram_in(
        &mut self,
        event: &DatagramEvent<'_>,
        context: &Context<'_>,
        rendered: Option<Rendering<'_, Self>>,
    ) {
        if self.watch.datagram(event, true) {
            self.sink.datagram_in(event, context, rendered);
        }
    }
    fn skipped(&mut self, event: &DatagramEvent<'_>) {
        if self.watch.datagram(event, false) {
            self.sink.skipped(event);
        }
    }
    fn analysed(&mut self, event: &DatagramEvent<'_>, analysis: &Analysis) {
        self.sink.analysed(event, analysis);
    }
    fn reassembled(&mut self, event: &ReassembledEvent<'_>) {
        self.sink.reassembled(event);
    }
    fn loose(&mut self, finding: &LooseFinding) {
        self.watch.loose(finding);
        self.sink.loose(finding);
    }
    fn cut(&mut self, finding: &LooseFinding, reason: &str) {
        self.watch.loose(finding);
        self.sink.cut(finding, reason);
    }
    fn end(&mut self, end: &RunEnd<'_>) {
        self.watch.end(end);
        self.sink.end(end);
    }
    fn done(&self) -> bool {
        self.watch.done(self.sink.done())
    }
}
