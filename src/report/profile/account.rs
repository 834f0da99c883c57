//! The figures of one conversation, or of the whole capture: counters, distributions, windows
//! and series, fed one datagram at a time ([`Sample`]), bounded in size.

use super::series::{Counts, Series};
use super::timelines::Timelines;
use super::window::Window;
use crate::datagram::Dialect;
use crate::proto::{Direction, Rule};
use crate::session::analysis::{Compression, Durations, Observed};
use crate::session::entities::IdMap;

/// Message rows per account; further types share one row per dialect and direction.
pub const MAX_MESSAGE_ROWS: usize = 64;
/// Entity type rows per account; further types share one.
pub const MAX_TYPE_ROWS: usize = 64;
/// Field rows per account; further fields share one.
pub const MAX_FIELD_ROWS: usize = 128;
/// Distinct (entity type, entity id) pairs counted per account, for the entities of each type.
pub const MAX_SEEN: usize = 1 << 16;
/// Entities followed on timelines per conversation (the first ones sampled), and samples kept
/// for each (past it, every other sample goes, and only every second sample after is kept).
pub const MAX_TIMELINES: usize = 16;
pub const MAX_TIMELINE_SAMPLES: usize = 1024;
/// The row name of types past the limits.
pub const OTHER: &str = "(other)";

/// UDP and IP headers, counted on top of the payload for the bytes on the wire (IP options and
/// further fragments' headers aside).
pub const UDP_HEADER: u64 = 8;
pub fn ip_header(ipv6: bool) -> u64 {
    if ipv6 {
        40
    } else {
        20
    }
}
/// The largest UDP payload an IPv4 datagram carries unfragmented over a 1500-byte MTU.
pub const MTU: u64 = 1500;
/// A payload size many games keep under (the common "safe" UDP size on the internet).
pub const SAFE_PAYLOAD: u64 = 1200;

/// An entity type's code: a type id (`< 0x10000`), a component kind (`KIND + index`, names in
/// the profiler's registry), or [`UNKNOWN_TYPE`].
pub const KIND: u32 = 0x2_0000;
pub const UNKNOWN_TYPE: u32 = 0x1_0000;
pub const OTHER_TYPE: u32 = 0x3_0000;

/// One entity block of a snapshot, with its type code.
#[derive(Clone, Copy, Debug)]
pub struct BlockCost {
    pub id: u32,
    pub type_code: u32,
    pub bytes: u64,
    /// Whether the (type, id) pair may be new: the entity's life or type changed, or the type is
    /// a component kind (every component snapshot names its entities again).
    pub probe: bool,
}

/// What a field row is keyed by: an update-mask bit of the snapshot profile, another field of
/// the description (its slot in the field costs), an rtnp JSON key (its index in the profiler's
/// keys), or the row of fields past the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKey {
    Bit(u8),
    Slot(u16),
    Json(u16),
    Other,
}

/// One field's cost in a snapshot.
#[derive(Clone, Copy, Debug)]
pub struct FieldCost {
    pub key: FieldKey,
    pub bytes: u64,
    pub present: u64,
}

/// A snapshot's entity blocks of one type.
#[derive(Clone, Copy, Debug)]
pub struct TypeCost {
    pub type_code: u32,
    pub updates: u64,
    pub bytes: u64,
}

/// What a snapshot datagram's payload is made of.
#[derive(Clone, Copy, Debug, Default)]
pub struct SnapshotCost<'a> {
    pub head: u64,
    pub framing: u64,
    pub undecoded: u64,
    /// Wire payload bytes per payload byte (below 1 when compressed).
    pub ratio: f64,
    pub types: &'a [TypeCost],
    /// The (type code, entity id) pairs that may be new ([`BlockCost::probe`]).
    pub probes: &'a [(u32, u32)],
    pub fields: &'a [FieldCost],
}

/// One datagram as the accounts take it.
#[derive(Clone, Copy, Debug)]
pub struct Sample<'a> {
    pub frame: u64,
    pub ts_nanos: i64,
    pub bucket: usize,
    pub dialect: Dialect,
    pub direction: Option<Direction>,
    pub code: Option<u8>,
    pub name: &'a str,
    pub udp: u64,
    pub wire: u64,
    pub payload: u64,
    pub wire_payload: u64,
    pub compressed: bool,
    pub observed: Observed,
    pub findings: &'a [crate::finding::Finding],
    pub snapshot: Option<SnapshotCost<'a>>,
    /// A snapshot chunk (rtype).
    pub chunk: bool,
}

impl Sample<'_> {
    /// A sample of nothing, to build others from.
    pub const EMPTY: Sample<'static> = Sample {
        frame: 0,
        ts_nanos: 0,
        bucket: 0,
        dialect: Dialect::Rtype,
        direction: None,
        code: None,
        name: "",
        udp: 0,
        wire: 0,
        payload: 0,
        wire_payload: 0,
        compressed: false,
        observed: Observed {
            judged: false,
            duplicate: false,
            rtt_micros: None,
            snapshot: false,
            snapshot_gap_micros: None,
            lost: 0,
            stream_delta_nanos: None,
        },
        findings: &[],
        snapshot: None,
        chunk: false,
    };
}

/// A frame and its capture time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Moment {
    pub frame: u64,
    pub ts_nanos: i64,
}

/// Datagrams of one message type in one direction.
#[derive(Clone, Debug)]
pub struct MessageRow {
    pub dialect: Dialect,
    pub direction: Option<Direction>,
    pub code: Option<u8>,
    pub name: String,
    pub datagrams: u64,
    pub udp_bytes: u64,
    pub wire_bytes: u64,
    pub payload_bytes: u64,
    pub wire_payload_bytes: u64,
    pub sizes: Durations,
    pub window: Window,
    pub compression: Compression,
    /// UDP bytes per time bucket, for accounts with series.
    pub series: Option<Counts>,
}

/// One direction's datagrams.
#[derive(Clone, Debug, Default)]
pub struct DirectionTotals {
    pub datagrams: u64,
    pub udp_bytes: u64,
    pub wire_bytes: u64,
    pub window: Window,
}

/// Snapshots of one entity type.
#[derive(Clone, Debug)]
pub struct TypeRow {
    pub code: u32,
    /// Distinct entity ids.
    pub entities: u64,
    pub updates: u64,
    pub bytes: u64,
    pub wire_bytes: f64,
}

/// One field of the snapshots.
#[derive(Clone, Debug)]
pub struct FieldRow {
    pub key: FieldKey,
    pub present: u64,
    pub bytes: u64,
    pub wire_bytes: f64,
}

/// Snapshot datagrams: their bytes, what the bytes are spent on, their rate.
#[derive(Clone, Debug, Default)]
pub struct Snapshots {
    pub datagrams: u64,
    /// New snapshot ticks (as the session analysis counts them).
    pub ticks: u64,
    pub udp_bytes: u64,
    pub payload_bytes: u64,
    pub wire_payload_bytes: u64,
    pub head: u64,
    pub framing: u64,
    pub undecoded: u64,
    pub head_wire: f64,
    pub framing_wire: f64,
    pub undecoded_wire: f64,
    pub types: Vec<TypeRow>,
    pub fields: Vec<FieldRow>,
    /// Rows by field slot and by mask bit (row index + 1, 0: none yet).
    by_slot: Vec<u32>,
    by_bit: [u32; crate::proto::profile::MASK_BITS],
    /// Distinct (type code, entity id) pairs, for [`TypeRow::entities`]; full at [`MAX_SEEN`].
    seen: IdMap<u64, ()>,
    pub seen_full: bool,
    /// Snapshot UDP bytes, and new snapshot ticks, over 1 s windows.
    pub bytes_window: Window,
    pub ticks_window: Window,
    /// Snapshot datagram sizes (UDP payload).
    pub sizes: Durations,
}

/// Snapshot chunk sets (rtype).
#[derive(Clone, Debug, Default)]
pub struct Chunking {
    pub datagrams: u64,
    pub udp_bytes: u64,
    pub largest: u64,
    pub sets: u64,
    pub chunks_in_sets: u64,
    pub most_chunks: u64,
}

/// The figures of a conversation or of the capture.
#[derive(Clone, Debug)]
pub struct Account {
    pub first: Option<Moment>,
    pub last: Option<Moment>,
    /// Client to server, server to client, unknown.
    pub directions: [DirectionTotals; 3],
    pub messages: Vec<MessageRow>,
    /// Rows by direction and code (row + 1; 0: none yet), for the dialects with codes.
    by_code: Box<[u8; 3 * 256]>,
    pub snapshots: Snapshots,
    pub gaps: Durations,
    pub rtt: Durations,
    /// The pong of the longest round trip.
    pub rtt_max_frame: u64,
    /// The datagram that ended the longest snapshot gap.
    pub gap_max_frame: u64,
    pub lost: u64,
    pub loss_window: Window,
    pub duplicates: u64,
    pub chunking: Chunking,
    /// The largest datagram's UDP payload and frame, and the most bytes a datagram took on the
    /// wire.
    pub largest: Option<(u64, u64)>,
    pub largest_wire: u64,
    pub over_safe: u64,
    pub over_mtu: u64,
    /// Findings per rule, in catalog order.
    pub findings: Vec<u64>,
    pub series: Option<Box<Series>>,
    pub timelines: Option<Timelines>,
}

fn slot_of(direction: Option<Direction>) -> usize {
    match direction {
        Some(Direction::ClientToServer) => 0,
        Some(Direction::ServerToClient) => 1,
        None => 2,
    }
}

impl Account {
    /// An account; with series (and timelines) when `detailed`.
    pub fn new(detailed: bool) -> Account {
        Account {
            first: None,
            last: None,
            directions: Default::default(),
            messages: Vec::new(),
            by_code: Box::new([0; 3 * 256]),
            snapshots: Snapshots {
                ticks_window: Window::with_quietest(),
                ..Snapshots::default()
            },
            gaps: Durations::default(),
            rtt: Durations::default(),
            rtt_max_frame: 0,
            gap_max_frame: 0,
            lost: 0,
            loss_window: Window::default(),
            duplicates: 0,
            chunking: Chunking::default(),
            largest: None,
            largest_wire: 0,
            over_safe: 0,
            over_mtu: 0,
            findings: vec![0; Rule::all().len()],
            series: detailed.then(Box::default),
            timelines: detailed.then(Timelines::default),
        }
    }

    /// Seconds from the first datagram to the last.
    pub fn seconds(&self) -> f64 {
        match (self.first, self.last) {
            (Some(a), Some(b)) => b.ts_nanos.saturating_sub(a.ts_nanos) as f64 / 1e9,
            _ => 0.0,
        }
    }

    /// Folds every series by `factor` (the grid's interval doubled).
    pub fn fold(&mut self, factor: usize) {
        if let Some(s) = &mut self.series {
            s.fold(factor);
        }
        for row in &mut self.messages {
            if let Some(s) = &mut row.series {
                s.fold(factor);
            }
        }
    }

    /// A finding known only by its frame, in `bucket` when the frame's bucket is known.
    pub fn loose(&mut self, rule: Rule, bucket: Option<usize>) {
        self.findings[rule.index()] += 1;
        if let (Some(s), Some(b)) = (&mut self.series, bucket) {
            s.findings.add(b, 1);
        }
    }

    /// Takes one datagram: its figures, and its series when the account has them.
    pub fn add(&mut self, s: &Sample<'_>) {
        let row = self.row(s);
        self.add_figures(s, row);
        self.series_at(s, row);
    }

    /// Takes one datagram's series only (the capture's account while it runs: its other
    /// figures are the conversations', merged at the end).
    pub fn add_series(&mut self, s: &Sample<'_>) {
        if self.series.is_some() {
            let row = self.row(s);
            self.series_at(s, row);
        }
    }

    /// [`Account::add_series`] with the sample's row found.
    fn series_at(&mut self, s: &Sample<'_>, row: usize) {
        let now = Moment {
            frame: s.frame,
            ts_nanos: s.ts_nanos,
        };
        self.first.get_or_insert(now);
        self.last = Some(now);
        if self.series.is_none() {
            return;
        }
        let b = s.bucket;
        let o = s.observed;
        if let Some(c) = &mut self.messages[row].series {
            c.add(b, s.udp);
        }
        let Some(series) = &mut self.series else {
            return;
        };
        series.datagram(b, s.direction);
        if o.snapshot {
            series.snapshots.add(b, 1);
        }
        if let Some(gap) = o.snapshot_gap_micros {
            series.gaps.add(b, 1);
            series.gap_micros.add(b, gap.into());
            series.gap_max_micros.raise(b, gap.into());
        }
        if let Some(rtt) = o.rtt_micros {
            series.rtt_samples.add(b, 1);
            series.rtt_micros.add(b, rtt.into());
        }
        if o.lost > 0 {
            series.losses.add(b, o.lost);
        }
        if o.duplicate {
            series.duplicates.add(b, 1);
        }
        if !s.findings.is_empty() {
            let count = s.findings.iter().map(|f| u64::from(f.count)).sum();
            series.findings.add(b, count);
        }
    }

    /// Takes one datagram's figures, its series aside (`row`: its message type's).
    fn add_figures(&mut self, s: &Sample<'_>, row: usize) {
        let d = &mut self.directions[slot_of(s.direction)];
        d.datagrams += 1;
        d.udp_bytes += s.udp;
        d.wire_bytes += s.wire;
        d.window.add(s.ts_nanos, s.frame, s.udp);
        let row = &mut self.messages[row];
        row.datagrams += 1;
        row.udp_bytes += s.udp;
        row.wire_bytes += s.wire;
        row.payload_bytes += s.payload;
        row.wire_payload_bytes += s.wire_payload;
        row.sizes.add(s.udp.min(u64::from(u32::MAX)) as u32);
        row.window.add(s.ts_nanos, s.frame, s.udp);
        if s.compressed {
            row.compression.datagrams += 1;
            row.compression.wire_bytes += s.wire_payload;
            row.compression.decompressed_bytes += s.payload;
        }
        if self.largest.is_none_or(|(bytes, _)| s.udp > bytes) {
            self.largest = Some((s.udp, s.frame));
        }
        self.largest_wire = self.largest_wire.max(s.wire);
        self.over_safe += u64::from(s.udp > SAFE_PAYLOAD);
        self.over_mtu += u64::from(s.wire > MTU);
        for f in s.findings {
            self.findings[f.rule.index()] += u64::from(f.count);
        }
        let o = s.observed;
        if let Some(gap) = o.snapshot_gap_micros {
            if self.gaps.max().is_none_or(|max| gap > max) {
                self.gap_max_frame = s.frame;
            }
            self.gaps.add(gap);
        }
        if let Some(rtt) = o.rtt_micros {
            if self.rtt.max().is_none_or(|max| rtt > max) {
                self.rtt_max_frame = s.frame;
            }
            self.rtt.add(rtt);
        }
        if o.lost > 0 {
            self.lost += o.lost;
            self.loss_window.add(s.ts_nanos, s.frame, o.lost);
        }
        self.duplicates += u64::from(o.duplicate);
        if o.snapshot {
            self.snapshots.ticks += 1;
            self.snapshots.ticks_window.add(s.ts_nanos, s.frame, 1);
        }
        if let Some(cost) = &s.snapshot {
            self.snapshot(s, cost);
        }
        if s.chunk {
            let c = &mut self.chunking;
            c.datagrams += 1;
            c.udp_bytes += s.udp;
            c.largest = c.largest.max(s.udp);
        }
    }

    /// Adds another account's figures (a conversation's, to make the capture's): counts and
    /// distributions add up; a window keeps the busiest of the two, as the whole capture's
    /// busiest second is not known from its conversations'. Series are not merged.
    pub fn merge(&mut self, o: &Account) {
        let (Some(first), Some(last)) = (o.first, o.last) else {
            return;
        };
        if self.first.is_none_or(|f| first.ts_nanos < f.ts_nanos) {
            self.first = Some(first);
        }
        if self.last.is_none_or(|l| last.ts_nanos > l.ts_nanos) {
            self.last = Some(last);
        }
        for (d, od) in self.directions.iter_mut().zip(&o.directions) {
            d.datagrams += od.datagrams;
            d.udp_bytes += od.udp_bytes;
            d.wire_bytes += od.wire_bytes;
            d.window.merge_peak(&od.window);
        }
        for m in &o.messages {
            let sample = Sample {
                dialect: m.dialect,
                direction: m.direction,
                code: m.code,
                name: &m.name,
                ..Sample::EMPTY
            };
            let series = self.series.is_some();
            let row = self.row(&sample);
            let row = &mut self.messages[row];
            row.datagrams += m.datagrams;
            row.udp_bytes += m.udp_bytes;
            row.wire_bytes += m.wire_bytes;
            row.payload_bytes += m.payload_bytes;
            row.wire_payload_bytes += m.wire_payload_bytes;
            row.sizes.merge(&m.sizes);
            row.window.merge_peak(&m.window);
            row.compression.datagrams += m.compression.datagrams;
            row.compression.wire_bytes += m.compression.wire_bytes;
            row.compression.decompressed_bytes += m.compression.decompressed_bytes;
            if !series {
                row.series = None;
            }
        }
        let (n, on) = (&mut self.snapshots, &o.snapshots);
        n.datagrams += on.datagrams;
        n.ticks += on.ticks;
        n.udp_bytes += on.udp_bytes;
        n.payload_bytes += on.payload_bytes;
        n.wire_payload_bytes += on.wire_payload_bytes;
        n.head += on.head;
        n.framing += on.framing;
        n.undecoded += on.undecoded;
        n.head_wire += on.head_wire;
        n.framing_wire += on.framing_wire;
        n.undecoded_wire += on.undecoded_wire;
        for t in &on.types {
            let row = n.type_row(t.code);
            let r = &mut n.types[row];
            r.entities += t.entities;
            r.updates += t.updates;
            r.bytes += t.bytes;
            r.wire_bytes += t.wire_bytes;
        }
        for f in &on.fields {
            let row = n.field_row(f.key);
            let r = &mut n.fields[row];
            r.present += f.present;
            r.bytes += f.bytes;
            r.wire_bytes += f.wire_bytes;
        }
        n.seen_full |= on.seen_full;
        n.bytes_window.merge_peak(&on.bytes_window);
        n.sizes.merge(&on.sizes);
        if o.gaps.max() > self.gaps.max() {
            self.gap_max_frame = o.gap_max_frame;
        }
        self.gaps.merge(&o.gaps);
        if o.rtt.max() > self.rtt.max() {
            self.rtt_max_frame = o.rtt_max_frame;
        }
        self.rtt.merge(&o.rtt);
        self.lost += o.lost;
        self.loss_window.merge_peak(&o.loss_window);
        self.duplicates += o.duplicates;
        let (c, oc) = (&mut self.chunking, &o.chunking);
        c.datagrams += oc.datagrams;
        c.udp_bytes += oc.udp_bytes;
        c.largest = c.largest.max(oc.largest);
        c.sets += oc.sets;
        c.chunks_in_sets += oc.chunks_in_sets;
        c.most_chunks = c.most_chunks.max(oc.most_chunks);
        if let Some((bytes, frame)) = o.largest {
            if self.largest.is_none_or(|(mine, _)| bytes > mine) {
                self.largest = Some((bytes, frame));
            }
        }
        self.largest_wire = self.largest_wire.max(o.largest_wire);
        self.over_safe += o.over_safe;
        self.over_mtu += o.over_mtu;
        for (a, b) in self.findings.iter_mut().zip(&o.findings) {
            *a += b;
        }
    }

    /// Gives the row of `like`'s message type the byte series `series`.
    pub fn adopt_series(&mut self, like: &MessageRow, series: Counts) {
        let sample = Sample {
            dialect: like.dialect,
            direction: like.direction,
            code: like.code,
            name: &like.name,
            ..Sample::EMPTY
        };
        let row = self.row(&sample);
        self.messages[row].series = Some(series);
    }

    /// The row of the sample's message type, made when new (within [`MAX_MESSAGE_ROWS`]).
    fn row(&mut self, s: &Sample<'_>) -> usize {
        // A dialect's code names its message: only types named in text compare names.
        let same = |m: &MessageRow| {
            m.code == s.code
                && m.direction == s.direction
                && m.dialect == s.dialect
                && (s.code.is_some() || m.name == s.name)
        };
        let key = s.code.map(|c| slot_of(s.direction) * 256 + usize::from(c));
        let indexed = key
            .map(|k| usize::from(self.by_code[k]))
            .and_then(|i| i.checked_sub(1))
            .filter(|i| same(&self.messages[*i]));
        let index = match indexed.or_else(|| self.messages.iter().position(same)) {
            Some(i) => i,
            None => self.new_row(s),
        };
        if let Some(k) = key {
            if self.messages[index].code == s.code {
                self.by_code[k] = u8::try_from(index + 1).unwrap_or(0);
            }
        }
        index
    }

    /// A row for the sample's message type, or the dialect and direction's row of types past
    /// [`MAX_MESSAGE_ROWS`].
    fn new_row(&mut self, s: &Sample<'_>) -> usize {
        let full = self.messages.len() >= MAX_MESSAGE_ROWS;
        let other = |m: &MessageRow| {
            m.code.is_none()
                && m.name == OTHER
                && m.direction == s.direction
                && m.dialect == s.dialect
        };
        if let Some(i) = self.messages.iter().position(other).filter(|_| full) {
            return i;
        }
        let (code, name) = if full {
            (None, OTHER.to_owned())
        } else {
            (s.code, s.name.to_owned())
        };
        let detailed = self.series.is_some();
        self.messages.push(MessageRow {
            dialect: s.dialect,
            direction: s.direction,
            code,
            name,
            datagrams: 0,
            udp_bytes: 0,
            wire_bytes: 0,
            payload_bytes: 0,
            wire_payload_bytes: 0,
            sizes: Durations::default(),
            window: Window::default(),
            compression: Compression::default(),
            series: detailed.then(Counts::default),
        });
        self.messages.len() - 1
    }

    fn snapshot(&mut self, s: &Sample<'_>, cost: &SnapshotCost<'_>) {
        let n = &mut self.snapshots;
        n.datagrams += 1;
        n.udp_bytes += s.udp;
        n.payload_bytes += s.payload;
        n.wire_payload_bytes += s.wire_payload;
        n.head += cost.head;
        n.framing += cost.framing;
        n.undecoded += cost.undecoded;
        n.head_wire += cost.head as f64 * cost.ratio;
        n.framing_wire += cost.framing as f64 * cost.ratio;
        n.undecoded_wire += cost.undecoded as f64 * cost.ratio;
        n.bytes_window.add(s.ts_nanos, s.frame, s.udp);
        n.sizes.add(s.udp.min(u64::from(u32::MAX)) as u32);
        for t in cost.types {
            let row = n.type_row(t.type_code);
            let r = &mut n.types[row];
            r.updates += t.updates;
            r.bytes += t.bytes;
            r.wire_bytes += t.bytes as f64 * cost.ratio;
        }
        for (code, id) in cost.probes {
            if n.seen_full {
                break;
            }
            let row = n.type_row(*code);
            let key = u64::from(n.types[row].code) << 32 | u64::from(*id);
            if n.seen.insert(key, ()).is_none() {
                n.types[row].entities += 1;
            }
            n.seen_full = n.seen.len() >= MAX_SEEN;
        }
        for f in cost.fields {
            let index = n.field_row(f.key);
            let r = &mut n.fields[index];
            r.bytes += f.bytes;
            r.present += f.present;
            r.wire_bytes += f.bytes as f64 * cost.ratio;
        }
    }
}

/// The row of `rows` for `key`, made by `new` when missing; past `max` rows, keys without one
/// share the row of `other`.
fn bounded_row<R, K: PartialEq + Copy>(
    rows: &mut Vec<R>,
    max: usize,
    key: K,
    other: K,
    key_of: impl Fn(&R) -> K,
    new: impl FnOnce(K) -> R,
) -> usize {
    if let Some(i) = rows.iter().position(|r| key_of(r) == key) {
        return i;
    }
    let key = if rows.len() >= max { other } else { key };
    if let Some(i) = rows.iter().position(|r| key_of(r) == key) {
        return i;
    }
    rows.push(new(key));
    rows.len() - 1
}

impl Snapshots {
    fn type_row(&mut self, code: u32) -> usize {
        let new = |code| TypeRow {
            code,
            entities: 0,
            updates: 0,
            bytes: 0,
            wire_bytes: 0.0,
        };
        bounded_row(
            &mut self.types,
            MAX_TYPE_ROWS,
            code,
            OTHER_TYPE,
            |r| r.code,
            new,
        )
    }

    fn field_row(&mut self, key: FieldKey) -> usize {
        let found = match key {
            FieldKey::Slot(slot) => self
                .by_slot
                .get(usize::from(slot))
                .and_then(|i| i.checked_sub(1))
                .map(|i| i as usize),
            FieldKey::Bit(bit) => self
                .by_bit
                .get(usize::from(bit))
                .and_then(|i| i.checked_sub(1))
                .map(|i| i as usize),
            _ => self.fields.iter().position(|r| r.key == key),
        };
        if let Some(i) = found {
            return i;
        }
        let new = |key| FieldRow {
            key,
            present: 0,
            bytes: 0,
            wire_bytes: 0.0,
        };
        let other = FieldKey::Other;
        let index = bounded_row(&mut self.fields, MAX_FIELD_ROWS, key, other, |r| r.key, new);
        let key = self.fields[index].key;
        if let FieldKey::Bit(bit) = key {
            if let Some(b) = self.by_bit.get_mut(usize::from(bit)) {
                *b = index as u32 + 1;
            }
        }
        if let FieldKey::Slot(slot) = key {
            let slot = usize::from(slot);
            if self.by_slot.len() <= slot {
                self.by_slot.resize(slot + 1, 0);
            }
            self.by_slot[slot] = index as u32 + 1;
        }
        index
    }
}
