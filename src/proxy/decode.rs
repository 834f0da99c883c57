//! What the endpoints got, decoded: each side of the proxy (the record's two interfaces) goes
//! through a pipeline of its own, frame by frame as the record has it, and each client's figures
//! are read from the session analysis of its conversation on each side. On the client side (the
//! client and the proxy) are the snapshots the client was delivered, their loss and gaps, and the
//! round trips its pings took through the proxy both ways; on the server side, the loss of what
//! the server was delivered. So the figures are those `stats` finds in the record (the frames get
//! the record's microsecond timestamps). A pipeline per side, rather than one for both, keeps
//! every client (at most 4,096) within the analysis' 4,096 conversations.
//!
//! Memory is the pipelines' (their bounds are in SECURITY.md: per conversation a fixed record,
//! shared buffers and capped sets) and one finding count per conversation; steady traffic
//! allocates nothing per datagram.

use std::net::SocketAddr;

use crate::capture::{CaptureFormat, CaptureInfo, Frame, LinkType, ReadEnd};
use crate::message::NoFields;
use crate::pipeline::{Pipeline, RunEnd, Sink};
use crate::proto::profile::Profile;
use crate::session::analysis::{Sequence, Session};
use crate::session::event::{DatagramEvent, LooseFinding};

use super::record::Side;

/// Where a client's conversations are: on each side, its two ends' addresses (the record's).
#[derive(Clone, Copy, Debug)]
pub struct Ends {
    /// The client and the proxy's listening address.
    pub client_side: (SocketAddr, SocketAddr),
    /// The client's upstream socket and the server.
    pub server_side: (SocketAddr, SocketAddr),
}

/// The two sides' decoding.
pub struct Decoder {
    sides: [Decoding; 2],
}

/// One side's decoding.
struct Decoding {
    pipeline: Pipeline,
    findings: Findings,
    frames: u64,
}

impl Decoding {
    fn new() -> Decoding {
        Decoding {
            pipeline: Pipeline::new(Profile::document(), None),
            findings: Findings::default(),
            frames: 0,
        }
    }

    /// The conversation between `ends`, once a datagram of it was recognised.
    fn conversation(&self, (a, b): (SocketAddr, SocketAddr)) -> Option<u32> {
        self.pipeline.conversations().find(a, b).map(|c| c.id)
    }

    fn session(&self, conversation: Option<u32>) -> Option<&Session> {
        self.pipeline.analysis().session(conversation?)
    }
}

impl Default for Decoder {
    fn default() -> Decoder {
        Decoder {
            sides: [Decoding::new(), Decoding::new()],
        }
    }
}

impl Decoder {
    /// One frame of the record (an Ethernet frame) on `side`, at `ts_ns` since the epoch.
    pub fn frame(&mut self, side: Side, ts_ns: u64, data: &[u8]) {
        let d = &mut self.sides[side as usize];
        d.frames += 1;
        let frame = Frame {
            number: d.frames,
            ts_nanos: (ts_ns / 1000 * 1000) as i64,
            link_type: LinkType::ETHERNET,
            data,
            orig_len: data.len() as u32,
            file_offset: 0,
        };
        d.pipeline.frame(&frame, &mut d.findings);
    }

    /// Each side's conversation of the client at `ends`.
    fn conversations(&self, ends: &Ends) -> [Option<u32>; 2] {
        [
            self.sides[0].conversation(ends.client_side),
            self.sides[1].conversation(ends.server_side),
        ]
    }

    /// The figures so far of the client at `ends`.
    pub fn figures(&self, ends: &Ends) -> Figures {
        let ids = self.conversations(ends);
        let findings = [0, 1].map(|i| self.sides[i].findings.of(ids[i]));
        Figures::of(
            self.sides[0].session(ids[0]),
            self.sides[1].session(ids[1]),
            findings,
        )
    }

    /// Ends both runs (the findings judged at the end, such as the snapshot rate, are counted);
    /// the figures of the clients at `ends`, in their order.
    pub fn finish(self, ends: &[Ends]) -> Vec<Figures> {
        let ids: Vec<_> = ends.iter().map(|e| self.conversations(e)).collect();
        let mut figures: Vec<_> = ends.iter().map(|e| self.figures(e)).collect();
        let info = CaptureInfo {
            format: CaptureFormat::PcapNg,
            gzip: false,
            nanosecond: false,
            big_endian: false,
            link_types: vec![LinkType::ETHERNET],
        };
        for (i, mut d) in self.sides.into_iter().enumerate() {
            let end = ReadEnd::complete(d.frames);
            d.pipeline.finish(&info, &end, &mut d.findings);
            for (f, id) in figures.iter_mut().zip(&ids) {
                f.findings[i] = d.findings.of(id[i]);
            }
        }
        figures
    }
}

/// The sink of a side's pipeline: the findings of each conversation, counted as `check` counts
/// them (a rule broken several times in one datagram counts each time).
#[derive(Default)]
struct Findings {
    /// By conversation id − 1.
    counts: Vec<u64>,
    no_fields: NoFields,
}

impl Findings {
    fn add(&mut self, conversation: u32, n: u64) {
        let Some(i) = (conversation as usize).checked_sub(1) else {
            return;
        };
        if self.counts.len() <= i {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += n;
    }

    fn of(&self, conversation: Option<u32>) -> u64 {
        conversation
            .and_then(|c| self.counts.get((c as usize).checked_sub(1)?))
            .copied()
            .unwrap_or(0)
    }
}

impl Sink for Findings {
    type Fields = NoFields;
    fn fields(&mut self) -> &mut NoFields {
        &mut self.no_fields
    }
    fn datagram(&mut self, e: &DatagramEvent<'_>) {
        let n = e.findings.iter().map(|f| u64::from(f.count)).sum();
        if n > 0 {
            self.add(e.conversation, n);
        }
    }
    fn loose(&mut self, f: &LooseFinding) {
        self.add(f.conversation, u64::from(f.finding.count));
    }
    fn end(&mut self, _: &RunEnd<'_>) {}
}

/// Numbers of one sequence family as it was delivered.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Loss {
    /// Distinct numbers delivered.
    pub received: u64,
    /// Numbers skipped and never delivered.
    pub lost: u64,
    /// `lost` as a fraction of the numbers expected.
    pub ratio: f64,
}

impl Loss {
    fn of(s: &Sequence) -> Option<Loss> {
        s.started().then(|| Loss {
            received: s.received,
            lost: s.lost,
            ratio: s.loss_ratio(),
        })
    }
}

/// A client's figures, from the session analysis of its two conversations.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Figures {
    /// Snapshot ticks delivered to the client, and their rate over the time they arrived in.
    pub snapshots: u64,
    pub snapshot_hz: Option<f64>,
    /// The gaps between the snapshot ticks the client was delivered: 95th percentile, largest.
    pub gap_p95_ms: Option<f64>,
    pub gap_max_ms: Option<f64>,
    /// Sequence loss of what was delivered, client to server first (the client's messages as
    /// the server got them, the snapshot ticks as the client got them); none before a number.
    pub loss: [Option<Loss>; 2],
    /// Round trips from the client's ping reaching the proxy to the pong delivered to it.
    pub rtt_pairs: u64,
    pub rtt_p50_ms: Option<f64>,
    pub rtt_max_ms: Option<f64>,
    /// Findings of the client's conversation on the client side, then on the server side.
    pub findings: [u64; 2],
}

impl Figures {
    fn of(client: Option<&Session>, server: Option<&Session>, findings: [u64; 2]) -> Figures {
        Figures {
            snapshots: client.map_or(0, Session::snapshot_tick_count),
            snapshot_hz: client.and_then(Session::snapshot_rate_hz),
            gap_p95_ms: client.and_then(|s| s.snapshot_gaps.quantile_ms(0.95)),
            gap_max_ms: client.and_then(|s| s.snapshot_gaps.max_ms()),
            loss: [
                server.and_then(|s| Loss::of(&s.client_sequence)),
                client.and_then(|s| Loss::of(&s.snapshot_ticks)),
            ],
            rtt_pairs: client.map_or(0, |s| s.rtt.count()),
            rtt_p50_ms: client.and_then(|s| s.rtt.quantile_ms(0.5)),
            rtt_max_ms: client.and_then(|s| s.rtt.max_ms()),
            findings,
        }
    }

    /// The figures in a few words each, and whether each is worth the eye (loss, findings): the
    /// live view colours those, the summary lists them all.
    pub fn words(&self) -> [(String, bool); 5] {
        let ms = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.1} ms"));
        let pct =
            |l: Option<Loss>| l.map_or_else(|| "-".into(), |l| format!("{:.2}%", l.ratio * 100.0));
        let lossy = self.loss.iter().flatten().any(|l| l.lost > 0);
        let findings = self.findings[0] + self.findings[1];
        [
            (
                match self.snapshot_hz {
                    Some(hz) => format!("snapshots {hz:.1} Hz"),
                    None => "snapshots -".into(),
                },
                false,
            ),
            (
                format!("loss up {} down {}", pct(self.loss[0]), pct(self.loss[1])),
                lossy,
            ),
            (format!("RTT p50 {}", ms(self.rtt_p50_ms)), false),
            (format!("gap max {}", ms(self.gap_max_ms)), false),
            (format!("findings {findings}"), findings > 0),
        ]
    }
}
