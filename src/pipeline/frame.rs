//! A frame's way to the dialects' arms: its link layers, IP fragments and UDP, the findings of
//! the capture layer, and the dialect of a datagram that starts no known conversation.

use std::net::SocketAddr;

use super::{worker, RenderedOf, Shown, Sink, State, Unpack};
use crate::capture::{self, Frame, LinkOutcome};
use crate::datagram::{rtype, Dialect};
use crate::finding::{Detail, Finding};
use crate::proto::Rule;
use crate::session::event::{FrameFields, LooseFinding};

/// One UDP payload on its way through a dialect's arm.
#[derive(Clone, Copy)]
pub(super) struct Udp<'a> {
    pub(super) frame: u64,
    pub(super) ts_nanos: i64,
    pub(super) src: SocketAddr,
    pub(super) dst: SocketAddr,
    pub(super) bytes: &'a [u8],
    pub(super) frame_fields: FrameFields<'a>,
    /// The recognised conversation it belongs to; `None` for the first datagram of a new one.
    pub(super) conversation: Option<u32>,
    /// The capture holds less of it than was sent (its snap length): what the missing bytes would
    /// show is not judged (see [`judged_when_cut`]).
    pub(super) cut: bool,
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
pub(super) fn recognise_cut(bytes: &[u8]) -> Option<Dialect> {
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

impl State {
    /// Handles one frame; `ahead` is its work done on a worker thread.
    pub(super) fn frame<S: Sink>(
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
}
