//! What the endpoints got, decoded: each side of the proxy (the record's two interfaces) goes
//! through a pipeline of its own, frame by frame as the record has it, and each client's figures
//! are read from the session analysis of its conversation on each side. On the client side (the
//! client and the proxy) are the snapshots the client was delivered, their loss and gaps, and the
//! round trips its pings took through the proxy both ways; on the server side, the loss of what
//! the server was delivered. So the figures are those `stats` finds in the record (the frames get
//! the record's microsecond timestamps). A pipeline per side, rather than one for both, keeps
//! every client (at most 4,096) within the analysis' 4,096 conversations.
//!
//! The live view shows each client's figures over the last second ([`Second`]): differences of
//! the analysis' run-wide counters between two readings, and the largest round trip and snapshot
//! gap since the last one, taken as each datagram is analysed. The summary's figures stay
//! run-wide ([`Figures`]).
//!
//! Memory is the pipelines' (their bounds are in SECURITY.md: per conversation a fixed record,
//! shared buffers and capped sets) and per conversation a finding count and the counters of the
//! last reading ([`Tally`]); steady traffic allocates nothing per datagram.

use std::net::SocketAddr;

use schemars::JsonSchema;
use serde::Serialize;

use crate::capture::{CaptureFormat, CaptureInfo, Frame, LinkType, ReadEnd};
use crate::message::NoFields;
use crate::pipeline::{Pipeline, RunEnd, Sink};
use crate::proto::profile::Profile;
use crate::session::analysis::{Observed, Sequence, Session};
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
    tally: Tally,
    frames: u64,
}

impl Decoding {
    fn new() -> Decoding {
        Decoding {
            pipeline: Pipeline::new(Profile::document(), None),
            tally: Tally::default(),
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
        d.tally.last = None;
        d.pipeline.frame(&frame, &mut d.tally);
        if let Some(conversation) = d.tally.last {
            let observed = d.pipeline.analysis().last();
            if let Some(e) = d.tally.entry(conversation) {
                e.peaks(observed);
            }
        }
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
        let findings = [0, 1].map(|i| self.sides[i].tally.findings(ids[i]));
        Figures::of(
            self.sides[0].session(ids[0]),
            self.sides[1].session(ids[1]),
            findings,
        )
    }

    /// The figures of the client at `ends` since they were last read (or since its
    /// conversations began), `now_ns` being the record's clock (ns since the epoch); reading
    /// them starts the next interval.
    pub fn second(&mut self, ends: &Ends, now_ns: u64) -> Second {
        let ids = self.conversations(ends);
        let [client, server] = [0, 1].map(|i| {
            let d = &mut self.sides[i];
            let id = ids[i]?;
            let session = d.pipeline.analysis().session(id)?;
            let entry = d.tally.entry(id)?;
            Some((entry.mark.read(session, now_ns), entry.findings))
        });
        Second::of(client, server)
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
            d.pipeline.finish(&info, &end, &mut d.tally);
            for (f, id) in figures.iter_mut().zip(&ids) {
                f.findings[i] = d.tally.findings(id[i]);
            }
        }
        figures
    }
}

/// The sink of a side's pipeline: per conversation, its findings counted as `check` counts them
/// (a rule broken several times in one datagram counts each time) and its [`Mark`].
#[derive(Default)]
struct Tally {
    /// By conversation id − 1.
    conversations: Vec<Entry>,
    /// The conversation of the datagram the pipeline just analysed, if the frame held one.
    last: Option<u32>,
    no_fields: NoFields,
}

#[derive(Clone, Copy, Default)]
struct Entry {
    findings: u64,
    mark: Mark,
}

impl Entry {
    /// The largest round trip and snapshot gap since the last reading, with one datagram's.
    fn peaks(&mut self, o: Observed) {
        let m = &mut self.mark;
        m.rtt_max_us = m.rtt_max_us.max(o.rtt_micros);
        m.gap_max_us = m.gap_max_us.max(o.snapshot_gap_micros);
    }
}

impl Tally {
    /// The entry of a conversation (none for conversation 0, past the conversations' limit).
    fn entry(&mut self, conversation: u32) -> Option<&mut Entry> {
        let i = (conversation as usize).checked_sub(1)?;
        if self.conversations.len() <= i {
            self.conversations.resize(i + 1, Entry::default());
        }
        Some(&mut self.conversations[i])
    }

    fn add(&mut self, conversation: u32, n: u64) {
        if let Some(e) = self.entry(conversation) {
            e.findings += n;
        }
    }

    fn findings(&self, conversation: Option<u32>) -> u64 {
        conversation
            .and_then(|c| self.conversations.get((c as usize).checked_sub(1)?))
            .map_or(0, |e| e.findings)
    }
}

impl Sink for Tally {
    type Fields = NoFields;
    fn fields(&mut self) -> &mut NoFields {
        &mut self.no_fields
    }
    fn datagram(&mut self, e: &DatagramEvent<'_>) {
        self.last = Some(e.conversation);
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

/// The run-wide counters of a conversation's analysis that [`Second`] takes differences of.
#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    /// Datagrams and UDP payload bytes, client to server first.
    datagrams: [u64; 2],
    bytes: [u64; 2],
    /// Snapshot ticks that arrived.
    ticks: u64,
    /// Received and lost numbers of the client's sequence, then of the snapshot ticks.
    sequences: [(u64, u64); 2],
    rtt_pairs: u64,
    rtt_sum_us: u64,
}

impl Counters {
    fn of(s: &Session) -> Counters {
        let seq = |q: &Sequence| (q.received, q.lost);
        Counters {
            datagrams: [s.traffic[0].datagrams, s.traffic[1].datagrams],
            bytes: [s.traffic[0].bytes, s.traffic[1].bytes],
            ticks: s.snapshot_tick_count(),
            sequences: [seq(&s.client_sequence), seq(&s.snapshot_ticks)],
            rtt_pairs: s.rtt.count(),
            rtt_sum_us: s.rtt.sum(),
        }
    }
}

/// A conversation at the last reading of its [`Second`]: when, its counters then, and the
/// largest round trip and snapshot gap since (µs).
#[derive(Clone, Copy, Debug, Default)]
struct Mark {
    /// None before the first reading: the interval starts at the conversation's first datagram.
    read_ns: Option<u64>,
    counters: Counters,
    rtt_max_us: Option<u32>,
    gap_max_us: Option<u32>,
}

/// One side's conversation over an interval: its length in seconds, the counters' growth, the
/// largest round trip and snapshot gap in it (µs), and whether its sequences had started.
struct Interval {
    seconds: f64,
    now: Counters,
    then: Counters,
    rtt_max_us: Option<u32>,
    gap_max_us: Option<u32>,
    started: [bool; 2],
}

impl Mark {
    /// The interval from the last reading to `now_ns` of the conversation `s`; the next one
    /// starts here.
    fn read(&mut self, s: &Session, now_ns: u64) -> Interval {
        let since = self
            .read_ns
            .unwrap_or_else(|| u64::try_from(s.first_ts).unwrap_or(0));
        let now = Counters::of(s);
        let interval = Interval {
            seconds: now_ns.saturating_sub(since) as f64 / 1e9,
            now,
            then: self.counters,
            rtt_max_us: self.rtt_max_us,
            gap_max_us: self.gap_max_us,
            started: [s.client_sequence.started(), s.snapshot_ticks.started()],
        };
        *self = Mark {
            read_ns: Some(now_ns),
            counters: now,
            rtt_max_us: None,
            gap_max_us: None,
        };
        interval
    }
}

impl Interval {
    /// Per second, of counters picked by `f`.
    fn rate(&self, f: impl Fn(&Counters) -> u64) -> f64 {
        match self.seconds > 0.0 {
            true => f(&self.now).saturating_sub(f(&self.then)) as f64 / self.seconds,
            false => 0.0,
        }
    }

    /// Numbers of sequence `i` skipped in the interval (net of those that came late) as a share
    /// of those expected in it; none before the sequence started or when none was expected.
    fn loss(&self, i: usize) -> Option<f64> {
        let ((r1, l1), (r0, l0)) = (self.now.sequences[i], self.then.sequences[i]);
        let received = r1.saturating_sub(r0);
        let lost = l1.saturating_sub(l0);
        let expected = received + lost;
        (self.started[i] && expected > 0).then(|| lost as f64 / expected as f64)
    }
}

/// A client's figures over the last second (the interval between two readings), for the live
/// view; the findings are the run's, like the header's counts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Second {
    /// Snapshot ticks delivered to the client, per second.
    pub snapshot_hz: Option<f64>,
    /// Datagrams delivered per second and their UDP payload in kbit/s, client to server first.
    pub delivered: [Option<(f64, f64)>; 2],
    /// Sequence loss in the interval, client to server first, as in [`Figures::loss`].
    pub loss: [Option<f64>; 2],
    /// Round trips closed in the interval: their mean, and the largest.
    pub rtt_mean_ms: Option<f64>,
    pub rtt_max_ms: Option<f64>,
    /// The largest gap between the snapshot ticks delivered in the interval.
    pub gap_max_ms: Option<f64>,
    pub findings: u64,
}

impl Second {
    /// From the interval of the client's conversation on each side, with its findings.
    fn of(client: Option<(Interval, u64)>, server: Option<(Interval, u64)>) -> Second {
        let ms = |us: Option<u32>| us.map(|us| f64::from(us) / 1e3);
        let delivered = |side: &Option<(Interval, u64)>, i: usize| {
            side.as_ref().map(|(v, _)| {
                let kbit = v.rate(|c| c.bytes[i]) * 8.0 / 1e3;
                (v.rate(|c| c.datagrams[i]), kbit)
            })
        };
        let c = client.as_ref().map(|(v, _)| v);
        let pairs = c.map_or(0, |v| v.now.rtt_pairs.saturating_sub(v.then.rtt_pairs));
        Second {
            snapshot_hz: c.map(|v| v.rate(|c| c.ticks)),
            delivered: [delivered(&server, 0), delivered(&client, 1)],
            loss: [
                server.as_ref().and_then(|(v, _)| v.loss(0)),
                c.and_then(|v| v.loss(1)),
            ],
            rtt_mean_ms: c.filter(|_| pairs > 0).map(|v| {
                v.now.rtt_sum_us.saturating_sub(v.then.rtt_sum_us) as f64 / pairs as f64 / 1e3
            }),
            rtt_max_ms: ms(c.and_then(|v| v.rtt_max_us)),
            gap_max_ms: ms(c.and_then(|v| v.gap_max_us)),
            findings: client.map_or(0, |(_, n)| n) + server.map_or(0, |(_, n)| n),
        }
    }

    /// The figures in a few words each, and whether each is worth the eye (loss, findings), as
    /// [`Figures::words`].
    pub fn words(&self) -> [(String, bool); 7] {
        let ms = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.1} ms"));
        let pct = |l: Option<f64>| l.map_or_else(|| "-".into(), |l| format!("{:.2}%", l * 100.0));
        let rate = |d: Option<(f64, f64)>| {
            d.map_or_else(
                || "-".into(),
                |(n, kbit)| format!("{n:.0}/s {kbit:.1} kbit/s"),
            )
        };
        let lossy = self.loss.iter().flatten().any(|&l| l > 0.0);
        [
            (
                match self.snapshot_hz {
                    Some(hz) => format!("snapshots {hz:.1}/s"),
                    None => "snapshots -".into(),
                },
                false,
            ),
            (format!("up {}", rate(self.delivered[0])), false),
            (format!("down {}", rate(self.delivered[1])), false),
            (
                format!("loss up {} down {}", pct(self.loss[0]), pct(self.loss[1])),
                lossy,
            ),
            (
                format!("RTT {} max {}", ms(self.rtt_mean_ms), ms(self.rtt_max_ms)),
                false,
            ),
            (format!("gap max {}", ms(self.gap_max_ms)), false),
            (format!("findings {}", self.findings), self.findings > 0),
        ]
    }
}

/// Numbers of one sequence family as it was delivered.
// The fields are in the order of the proxy summary's keys (sorted).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Loss {
    /// `lost` as a fraction of the numbers expected (`received` + `lost`).
    #[serde(rename = "loss_ratio")]
    #[schemars(range(min = 0, max = 1))]
    pub ratio: f64,
    /// Numbers skipped and never delivered (the session analysis' estimate, as `stats`).
    pub lost: u64,
    /// Distinct sequence numbers delivered.
    pub received: u64,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::rtype::MESSAGES;
    use crate::samplegen::pcap::{udp_frame, Link};
    use crate::samplegen::rtype::RtypeBuilder;
    use serde_json::json;

    /// The record's clock at the test's start.
    const T0: u64 = 1_700_000_000_000_000_000;
    const MS: u64 = 1_000_000;

    fn datagram(short: &str, n: u16) -> Vec<u8> {
        let msg = MESSAGES.iter().find(|m| m.short == short).unwrap();
        let body = match short {
            "snapshot" => json!({"entities": []}),
            _ => json!({"client_time": n}),
        };
        RtypeBuilder::for_message(msg)
            .sequence(n)
            .tick(u32::from(n))
            .build_message(msg, &body, &Profile::document())
            .unwrap()
    }

    /// A client's two conversations, fed frame by frame at chosen times.
    struct Feed {
        decoder: Decoder,
        ends: Ends,
    }

    impl Feed {
        fn send(&mut self, side: Side, at_ms: u64, short: &str, n: u16) {
            let (client, proxy) = match side {
                Side::Client => self.ends.client_side,
                Side::Server => self.ends.server_side,
            };
            let (from, to) = match short {
                "ping" => (client, proxy),
                _ => (proxy, client),
            };
            let frame = udp_frame(Link::Ethernet, from, to, &datagram(short, n)).unwrap();
            self.decoder.frame(side, T0 + at_ms * MS, &frame);
        }

        /// A ping the client sends at `at_ms` and the server gets unless `dropped`, and its
        /// pong delivered `rtt_ms` later.
        fn ping(&mut self, at_ms: u64, n: u16, dropped: bool, rtt_ms: Option<u64>) {
            self.send(Side::Client, at_ms, "ping", n);
            if !dropped {
                self.send(Side::Server, at_ms, "ping", n);
            }
            if let Some(rtt) = rtt_ms {
                self.send(Side::Client, at_ms + rtt, "pong", n);
            }
        }
    }

    /// Each reading covers the time since the last one (the first: since the conversation's
    /// first datagram), and only the datagrams in it: rates, loss, round trips and gaps.
    #[test]
    fn a_second_holds_what_came_since_the_last_reading() {
        let addr = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));
        let mut feed = Feed {
            decoder: Decoder::default(),
            ends: Ends {
                client_side: (addr(40000), addr(50010)),
                server_side: (addr(40001), addr(50011)),
            },
        };
        let [ping, pong, snapshot] =
            ["ping", "pong", "snapshot"].map(|s| datagram(s, 1).len() as f64);
        let kbit = |bytes: f64, seconds: f64| bytes * 8.0 / 1e3 / seconds;
        // 0 to 1 s: ten pings 100 ms apart, each answered in 40 ms; snapshot ticks 1 to 20
        // every 50 ms, tick 5 lost.
        for k in 0..10u16 {
            feed.ping(u64::from(k) * 100, k + 1, false, Some(40));
        }
        for tick in (1..=20u16).filter(|&t| t != 5) {
            feed.send(Side::Client, u64::from(tick - 1) * 50, "snapshot", tick);
        }
        let first = feed.decoder.second(&feed.ends, T0 + 1000 * MS);
        assert_eq!(
            first,
            Second {
                snapshot_hz: Some(19.0),
                delivered: [
                    Some((10.0, kbit(10.0 * ping, 1.0))),
                    Some((29.0, kbit(19.0 * snapshot + 10.0 * pong, 1.0))),
                ],
                loss: [Some(0.0), Some(1.0 / 20.0)],
                rtt_mean_ms: Some(40.0),
                rtt_max_ms: Some(40.0),
                gap_max_ms: Some(100.0),
                findings: 0,
            }
        );
        // 1 to 3 s: three pings, the second dropped on its way to the server (its pong never
        // comes), answered in 100 and 60 ms; ticks 21 to 30 every 100 ms from 1.1 s, the last
        // delivered twice (a duplicate datagram: a finding, and no tick).
        feed.ping(1500, 11, false, Some(100));
        feed.ping(2000, 12, true, None);
        feed.ping(2500, 13, false, Some(60));
        for tick in 21..=30u16 {
            feed.send(
                Side::Client,
                1100 + u64::from(tick - 21) * 100,
                "snapshot",
                tick,
            );
        }
        feed.send(Side::Client, 2050, "snapshot", 30);
        let second = feed.decoder.second(&feed.ends, T0 + 3000 * MS);
        let findings = 1;
        assert_eq!(
            second,
            Second {
                snapshot_hz: Some(5.0),
                delivered: [
                    Some((1.0, kbit(2.0 * ping, 2.0))),
                    Some((6.5, kbit(11.0 * snapshot + 2.0 * pong, 2.0))),
                ],
                loss: [Some(1.0 / 3.0), Some(0.0)],
                rtt_mean_ms: Some(80.0),
                rtt_max_ms: Some(100.0),
                gap_max_ms: Some(150.0),
                findings,
            }
        );
        // Nothing in 3 to 4 s.
        assert_eq!(
            feed.decoder.second(&feed.ends, T0 + 4000 * MS),
            Second {
                snapshot_hz: Some(0.0),
                delivered: [Some((0.0, 0.0)), Some((0.0, 0.0))],
                findings,
                ..Second::default()
            }
        );
        // The run-wide figures are untouched by the readings.
        let run = feed.decoder.figures(&feed.ends);
        assert_eq!(
            (run.snapshots, run.rtt_pairs, run.rtt_max_ms, run.gap_max_ms),
            (29, 12, Some(100.0), Some(150.0))
        );
        assert_eq!(run.findings, [1, 0]);
        // What a conversation costs besides its analysis (SECURITY.md).
        assert_eq!(std::mem::size_of::<Entry>(), 128);
        // A client not seen yet has no figures.
        let nobody = Ends {
            client_side: (addr(40002), addr(50010)),
            server_side: (addr(40003), addr(50011)),
        };
        assert_eq!(
            feed.decoder.second(&nobody, T0 + 4000 * MS),
            Second::default()
        );
    }
}
