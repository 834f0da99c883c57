//! Hostile captures: random mutations of the sample captures never panic and never make memory
//! grow past a fixed bound; every injected CRC flip is reported at its frame; going past each
//! documented limit is a finding; and tshark running the generated Lua dissector over mutated
//! captures shows no Lua error (skipped when tshark is missing). See SECURITY.md.
//!
//! Peak memory is measured by a counting global allocator. Pipelines in this binary run one at a
//! time (under [`SERIAL`]), so the peak is that of one run.

#[path = "support/skip.rs"]
mod skip;

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeSet;
use std::io::{self, Cursor, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, FileFailurePersistence, RngAlgorithm, TestRng, TestRunner};

use rtype_inspect::app::{Format as ReportFormat, ReadOpts, Reading, Term};
use rtype_inspect::capture::defrag;
use rtype_inspect::capture::reader::MAX_RECORD_LEN;
use rtype_inspect::capture::CaptureReader;
use rtype_inspect::message::NoFields;
use rtype_inspect::pipeline::{Pipeline, RunEnd, Sink};
use rtype_inspect::proto::profile::Profile;
use rtype_inspect::proto::Rule;
use rtype_inspect::report::check::Judge;
use rtype_inspect::report::export::Export;
use rtype_inspect::report::fields::MAX_FIELDS_JSON;
use rtype_inspect::report::filter::FilterOptions;
use rtype_inspect::report::packets::{Packets, PacketsOptions};
use rtype_inspect::report::profile::{self, Profiler};
use rtype_inspect::report::stats::Stats;
use rtype_inspect::report::summary::Summary;
use rtype_inspect::session::chunks;
use rtype_inspect::session::event::{DatagramEvent, LooseFinding};
use rtype_inspect::session::MAX_CONVERSATIONS;
use rtype_inspect::world::{Gather, World};

// ------------------------------------------------------------------------------------------------
// Counting allocator
// ------------------------------------------------------------------------------------------------

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, SeqCst) + by;
    PEAK.fetch_max(now, SeqCst);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), SeqCst);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                LIVE.fetch_sub(layout.size() - new_size, SeqCst);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Pipelines run one at a time in this binary, so that a peak is one run's.
static SERIAL: Mutex<()> = Mutex::new(());

/// The tests of this binary run one at a time: the allocator counts every thread, and another
/// test building a large capture while a peak is measured would count in it (a 35 MB peak was
/// once measured at 208 MB under load).
fn one_test_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static TESTS: Mutex<()> = Mutex::new(());
    TESTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Peak live bytes any pipeline run over a mutated sample may reach. The reader's buffers
/// (batches of up to 1 MiB, 16 MiB + 64 KiB at most), the decompression scratch (64 KiB), chunk sets (64 × 1 MiB)
/// and fragments (4 MiB) are the big items; the samples are far from filling them, so the bound
/// mostly catches memory that grows with what the file claims instead of what it holds.
const MEMORY_BOUND: usize = 64 << 20;

/// Runs `f` alone and returns its result and the peak of bytes it held live.
fn measured<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let _alone = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let base = LIVE.load(SeqCst);
    PEAK.store(base, SeqCst);
    let result = f();
    (result, PEAK.load(SeqCst).saturating_sub(base))
}

// ------------------------------------------------------------------------------------------------
// Running the pipeline
// ------------------------------------------------------------------------------------------------

/// Every (frame, rule) the pipeline reports.
#[derive(Default)]
struct Collect {
    found: Vec<(u64, Rule)>,
    no_fields: NoFields,
}

impl Sink for Collect {
    type Fields = NoFields;
    fn fields(&mut self) -> &mut NoFields {
        &mut self.no_fields
    }
    fn datagram(&mut self, e: &DatagramEvent<'_>) {
        self.found
            .extend(e.findings.iter().map(|f| (e.frame, f.rule)));
    }
    fn loose(&mut self, f: &LooseFinding) {
        self.found.push((f.frame, f.finding.rule));
    }
    fn end(&mut self, _: &RunEnd<'_>) {}
}

impl Collect {
    fn frames(&self, id: &str) -> Vec<u64> {
        self.found
            .iter()
            .filter(|(_, r)| r.id() == id)
            .map(|(f, _)| *f)
            .collect()
    }
}

/// Runs the pipeline over `bytes` into `sink`, on two worker threads (whose batches are what
/// memory could grow with); false when the bytes are not a capture at all.
fn run<S: Sink>(bytes: &[u8], sink: &mut S) -> bool {
    let Ok(mut reader) =
        CaptureReader::from_read(Path::new("mutated"), Box::new(Cursor::new(bytes.to_vec())))
    else {
        return false;
    };
    Pipeline::new(Profile::document(), None)
        .with_threads(2)
        .run(&mut reader, sink)
        .expect("a capture that opened runs to its end");
    true
}

fn collect(bytes: &[u8]) -> Collect {
    let mut c = Collect::default();
    assert!(run(bytes, &mut c), "not a capture");
    c
}

/// The export of `path` by [`Pipeline::run`] on three worker threads (link layers, CRC, LZ4 and
/// the rendering of the fields done there), and frame by frame with [`Pipeline::frame`]
/// (everything on one thread, as a live capture runs).
fn export_both_ways(path: &Path) -> (Vec<u8>, Vec<u8>) {
    let profile = || Profile::load(&root().join("samples/profiles/reference-17byte.toml")).unwrap();
    let filter = FilterOptions::default().build().expect("the empty filter");
    let mut threaded = Vec::new();
    let mut reader = CaptureReader::open(path).unwrap();
    let mut sink = Export::new(&mut threaded, false, filter.clone());
    Pipeline::new(profile(), None)
        .with_threads(3)
        .run(&mut reader, &mut sink)
        .unwrap();
    drop(sink);
    let mut inline = Vec::new();
    let mut reader = CaptureReader::open(path).unwrap();
    let mut sink = Export::new(&mut inline, false, filter);
    let mut pipeline = Pipeline::new(profile(), None);
    sink.start(reader.info());
    let read = reader
        .for_each_frame(|f| pipeline.frame(f, &mut sink))
        .unwrap();
    pipeline.finish(&reader.info().clone(), &read, &mut sink);
    drop(sink);
    (threaded, inline)
}

#[test]
fn unpacking_ahead_changes_nothing() {
    let _alone = one_test_at_a_time();
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut compared = 0;
    for dir in ["samples", "tests/fixtures"] {
        for e in std::fs::read_dir(root().join(dir)).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".pcap") || name.ends_with(".pcapng") || name.ends_with(".pcap.gz") {
                let (threaded, inline) = export_both_ways(&e.path());
                assert!(threaded.len() > 1000, "{name}");
                assert!(threaded == inline, "{name}: the two exports differ");
                compared += 1;
            }
        }
    }
    assert!(compared >= 19, "only {compared} captures found");
}

/// The summary, the NDJSON export, the verbose packet list with hex, the session statistics and
/// the world (of every entity, and of one), over `bytes`.
fn every_report(bytes: &[u8]) {
    let mut summary = Summary::default();
    if run(bytes, &mut summary) {
        let _ = summary.text("mutated", Term::pipe());
        let filter = FilterOptions::default().build().expect("the empty filter");
        run(bytes, &mut Export::new(io::sink(), false, filter.clone()));
        run(
            bytes,
            &mut Packets::new(
                io::sink(),
                PacketsOptions {
                    verbose: true,
                    hex: true,
                    width: Some(100),
                    time: Default::default(),
                    color: true,
                },
                filter,
            ),
        );
        for format in [ReportFormat::Text, ReportFormat::Json] {
            run(
                bytes,
                &mut Stats::new(io::sink(), format, "mutated", Term::pipe()),
            );
        }
        run(bytes, &mut Rebuilt(World::new(None)));
        run(bytes, &mut Rebuilt(World::new(Some(1))));
        let mut profiler = Profiler::new("mutated", &reading(), 100_000_000);
        run(bytes, &mut profiler);
        if let Some(json) = profiler.json() {
            let _ = profile::text(json, Term::pipe());
            let _ = rtype_inspect::tally::budget::judge(json, &every_budget());
        }
    }
}

/// The world the `entity` and `world` reports read, rebuilt from every datagram.
struct Rebuilt(World);

impl Sink for Rebuilt {
    type Fields = Gather;
    fn fields(&mut self) -> &mut Gather {
        self.0.fields()
    }
    fn begin(&mut self, _: &rtype_inspect::session::Conversations, _: u32) {
        self.0.begin();
    }
    fn datagram(&mut self, e: &DatagramEvent<'_>) {
        self.0.apply(e, |change| {
            let _ = change
                .life
                .map(|l| l.type_name(|t| change.archetypes.sprite(t)));
        });
    }
    fn loose(&mut self, _: &LooseFinding) {}
    fn end(&mut self, _: &RunEnd<'_>) {}
}

/// Reading options as a command line without options has them (no config file is in the
/// crate's directory).
fn reading() -> Reading {
    ReadOpts {
        quiet: true,
        ..ReadOpts::default()
    }
    .reading()
    .expect("default reading options")
}

/// Every budget set, to judge a profile by all of them.
fn every_budget() -> rtype_inspect::app::config::Budgets {
    rtype_inspect::app::config::Budgets {
        snapshot_kbps_per_client: Some(1.0),
        datagram_bytes_max: Some(1.0),
        entity_updates_per_s_min: Some(1000.0),
        snapshot_hz_min: Some(1000.0),
        rtt_p95_ms_max: Some(0.001),
        loss_percent_max: Some(0.0),
        snapshot_gap_ms_max: Some(0.001),
    }
}

// ------------------------------------------------------------------------------------------------
// Captures as records, and their mutations
// ------------------------------------------------------------------------------------------------

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Format {
    /// Legacy pcap in this byte order.
    Pcap { big: bool },
    /// pcapng (little-endian, as the samples are).
    PcapNg,
    /// Anything else (gzip): only byte-level mutations apply.
    Opaque,
}

/// A capture cut into its records (pcap: 16-byte header and data; pcapng: whole blocks).
#[derive(Clone, Debug)]
struct Capture {
    name: String,
    format: Format,
    head: Vec<u8>,
    records: Vec<Vec<u8>>,
    tail: Vec<u8>,
}

fn u32_at(b: &[u8], at: usize, big: bool) -> u32 {
    let w = [b[at], b[at + 1], b[at + 2], b[at + 3]];
    if big {
        u32::from_be_bytes(w)
    } else {
        u32::from_le_bytes(w)
    }
}

fn put_u32(b: &mut [u8], at: usize, v: u32, big: bool) {
    if at + 4 <= b.len() {
        b[at..at + 4].copy_from_slice(&if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }
}

impl Capture {
    fn parse(name: &str, bytes: &[u8], max_records: usize) -> Capture {
        let magic = bytes
            .get(..4)
            .map(|m| u32::from_le_bytes([m[0], m[1], m[2], m[3]]));
        let (format, mut at) = match magic {
            Some(0xa1b2_c3d4 | 0xa1b2_3c4d) => (Format::Pcap { big: false }, 24),
            Some(0xd4c3_b2a1 | 0x4d3c_b2a1) => (Format::Pcap { big: true }, 24),
            Some(0x0a0d_0d0a) => (Format::PcapNg, 0),
            _ => (Format::Opaque, bytes.len()),
        };
        let head = bytes[..at].to_vec();
        let mut records = Vec::new();
        while records.len() < max_records {
            let len = match format {
                Format::Pcap { big } if at + 16 <= bytes.len() => {
                    16 + u32_at(bytes, at + 8, big) as usize
                }
                Format::PcapNg if at + 8 <= bytes.len() => u32_at(bytes, at + 4, false) as usize,
                _ => break,
            };
            if len < 12 || at + len > bytes.len() {
                break;
            }
            records.push(bytes[at..at + len].to_vec());
            at += len;
        }
        let tail = if records.len() == max_records {
            Vec::new()
        } else {
            bytes[at..].to_vec()
        };
        Capture {
            name: name.to_string(),
            format,
            head,
            records,
            tail,
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = self.head.clone();
        for r in &self.records {
            out.extend_from_slice(r);
        }
        out.extend_from_slice(&self.tail);
        out
    }

    /// A record around `data` in this capture's format (pcapng: an EPB on interface 0).
    fn record(&self, data: &[u8]) -> Vec<u8> {
        match self.format {
            Format::Pcap { big } => {
                let mut r = vec![0; 16];
                put_u32(&mut r, 0, 1_767_225_600, big);
                put_u32(&mut r, 8, data.len() as u32, big);
                put_u32(&mut r, 12, data.len() as u32, big);
                r.extend_from_slice(data);
                r
            }
            _ => {
                let padded = data.len().div_ceil(4) * 4;
                let total = (32 + padded) as u32;
                let mut r = Vec::with_capacity(total as usize);
                for v in [6, total, 0, 0, 0, data.len() as u32, data.len() as u32] {
                    r.extend(v.to_le_bytes());
                }
                r.extend_from_slice(data);
                r.resize(28 + padded, 0);
                r.extend(total.to_le_bytes());
                r
            }
        }
    }
}

/// The sample captures, and the real captures cut to their first 300 records.
fn corpus() -> &'static [Capture] {
    static CORPUS: std::sync::OnceLock<Vec<Capture>> = std::sync::OnceLock::new();
    CORPUS.get_or_init(|| {
        let mut files: Vec<(PathBuf, usize)> = Vec::new();
        for (dir, max) in [("samples", usize::MAX), ("tests/fixtures", 300)] {
            let Ok(entries) = std::fs::read_dir(root().join(dir)) else {
                continue;
            };
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.ends_with(".pcap")
                    || name.ends_with(".pcapng")
                    || name.ends_with(".pcap.gz")
                {
                    files.push((e.path(), max));
                }
            }
        }
        files.sort();
        let corpus: Vec<Capture> = files
            .iter()
            .map(|(p, max)| {
                Capture::parse(
                    &p.file_name().unwrap().to_string_lossy(),
                    &std::fs::read(p).unwrap(),
                    *max,
                )
            })
            .collect();
        assert!(
            corpus.iter().any(|c| c.name == "clean-session.pcap"),
            "the samples are missing"
        );
        corpus
    })
}

/// Bytes a garbage record starts with: nothing, or Ethernet/IPv4/UDP headers and a dialect's
/// first bytes, so that garbage reaches the decoders.
#[derive(Clone, Copy, Debug)]
enum Lead {
    Nothing,
    Udp(&'static [u8]),
}

const LEADS: &[Lead] = &[
    Lead::Nothing,
    Lead::Udp(&[0xA3, 0x5F, 0xC8, 0x1D]),
    Lead::Udp(&[0xA3, 0x5F, 0xC8, 0x1D, 0x81, 0x02, 0x14]),
    Lead::Udp(&[0xA3, 0x5F, 0xC8, 0x1D, 0x01, 0x02, 0x21]),
    Lead::Udp(b"RT"),
    Lead::Udp(b"TR"),
    Lead::Udp(b"{\"type\":\""),
    Lead::Udp(&[0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0]),
];

fn eth_ipv4_udp(payload: &[u8], sport: u16, dport: u16) -> Vec<u8> {
    let mut f = vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00];
    let total = 28 + payload.len();
    f.extend([
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        1,
        0x40,
        0,
        64,
        17,
        0,
        0,
        10,
        0,
        0,
        2,
        10,
        0,
        0,
        1,
    ]);
    f.extend(sport.to_be_bytes());
    f.extend(dport.to_be_bytes());
    f.extend(((8 + payload.len()) as u16).to_be_bytes());
    f.extend([0, 0]);
    f.extend_from_slice(payload);
    f
}

/// Which rtype header field a mutation sets.
#[derive(Clone, Copy, Debug)]
enum RtypeField {
    PayloadLen,
    OrigSize,
}

#[derive(Clone, Debug)]
enum Mutation {
    /// Flips one bit anywhere in the file (headers included).
    FlipBit {
        at: Index,
        bit: u8,
    },
    /// Cuts the file.
    Truncate {
        at: Index,
    },
    /// Copies a record to another place.
    Duplicate {
        from: Index,
        to: Index,
    },
    Swap {
        a: Index,
        b: Index,
    },
    Remove {
        at: Index,
    },
    /// Sets a record length field to 0 or 65535 (pcap: caplen, origlen, both, or caplen with the
    /// data resized to match; pcapng: the block's leading or trailing total length, an EPB's
    /// captured or original length).
    RecordLen {
        at: Index,
        field: u8,
        value: u32,
    },
    /// Sets an rtype header field of the record's datagram to 0 or 65535, with the CRC made
    /// right again or not.
    Rtype {
        at: Index,
        field: RtypeField,
        value: u16,
        fix_crc: bool,
    },
    /// Inserts a record of random bytes.
    Garbage {
        to: Index,
        lead: Index,
        bytes: Vec<u8>,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let len = prop_oneof![Just(0u32), Just(65_535u32)];
    prop_oneof![
        3 => (any::<Index>(), 0..8u8).prop_map(|(at, bit)| Mutation::FlipBit { at, bit }),
        1 => any::<Index>().prop_map(|at| Mutation::Truncate { at }),
        2 => (any::<Index>(), any::<Index>()).prop_map(|(from, to)| Mutation::Duplicate { from, to }),
        2 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::Swap { a, b }),
        1 => any::<Index>().prop_map(|at| Mutation::Remove { at }),
        2 => (any::<Index>(), 0..4u8, len).prop_map(|(at, field, value)| Mutation::RecordLen { at, field, value }),
        2 => (any::<Index>(), prop_oneof![Just(RtypeField::PayloadLen), Just(RtypeField::OrigSize)], prop_oneof![Just(0u16), Just(65_535u16)], any::<bool>())
            .prop_map(|(at, field, value, fix_crc)| Mutation::Rtype { at, field, value, fix_crc }),
        2 => (any::<Index>(), any::<Index>(), proptest::collection::vec(any::<u8>(), 0..200))
            .prop_map(|(to, lead, bytes)| Mutation::Garbage { to, lead, bytes }),
    ]
}

/// Where the rtype datagram of a record is: the magic's offset and the datagram's end (by the
/// UDP length before it).
fn rtype_in(record: &[u8]) -> Option<(usize, usize)> {
    let at = record
        .windows(4)
        .position(|w| w == [0xA3, 0x5F, 0xC8, 0x1D])?;
    let udp_len = usize::from(u16::from_be_bytes([
        *record.get(at.checked_sub(4)?)?,
        record[at - 3],
    ]));
    let end = (at - 8 + udp_len).min(record.len());
    (end >= at + 21).then_some((at, end))
}

fn fix_crc(record: &mut [u8], at: usize, end: usize) {
    let crc = crc32fast::hash(&record[at..end - 4]);
    record[end - 4..end].copy_from_slice(&crc.to_be_bytes());
}

/// Applies `mutations` to `capture`: record-level ones first, then bytes-level ones.
fn mutate(capture: &Capture, mutations: &[Mutation]) -> Vec<u8> {
    let mut c = capture.clone();
    let n = |c: &Capture| c.records.len().max(1);
    for m in mutations {
        if c.records.is_empty() && !matches!(m, Mutation::Garbage { .. }) {
            continue;
        }
        match m {
            Mutation::Duplicate { from, to } => {
                let r = c.records[from.index(n(&c))].clone();
                let to = to.index(n(&c) + 1);
                c.records.insert(to, r);
            }
            Mutation::Swap { a, b } => {
                let (a, b) = (a.index(n(&c)), b.index(n(&c)));
                c.records.swap(a, b);
            }
            Mutation::Remove { at } => {
                let at = at.index(n(&c));
                c.records.remove(at);
            }
            Mutation::RecordLen { at, field, value } => {
                let at = at.index(n(&c));
                let format = c.format;
                let r = &mut c.records[at];
                match (format, field) {
                    (Format::Pcap { big }, 0) => put_u32(r, 8, *value, big),
                    (Format::Pcap { big }, 1) => put_u32(r, 12, *value, big),
                    (Format::Pcap { big }, 2) => {
                        put_u32(r, 8, *value, big);
                        put_u32(r, 12, *value, big);
                    }
                    (Format::Pcap { big }, _) => {
                        put_u32(r, 8, *value, big);
                        r.resize(16 + *value as usize, 0);
                    }
                    (_, 0) => put_u32(r, 4, *value, false),
                    (_, 1) => {
                        let end = r.len() - 4;
                        put_u32(r, end, *value, false);
                    }
                    (_, 2) => put_u32(r, 20, *value, false),
                    (_, _) => put_u32(r, 24, *value, false),
                }
            }
            Mutation::Rtype {
                at,
                field,
                value,
                fix_crc: fix,
            } => {
                let at = at.index(n(&c));
                let r = &mut c.records[at];
                if let Some((magic, end)) = rtype_in(r) {
                    let offset = match field {
                        RtypeField::PayloadLen => 13,
                        RtypeField::OrigSize => 15,
                    };
                    r[magic + offset..magic + offset + 2].copy_from_slice(&value.to_be_bytes());
                    if *fix {
                        fix_crc(r, magic, end);
                    }
                }
            }
            Mutation::Garbage { to, lead, bytes } => {
                let data = match LEADS[lead.index(LEADS.len())] {
                    Lead::Nothing => bytes.clone(),
                    Lead::Udp(first) => eth_ipv4_udp(&[first, &bytes[..]].concat(), 41_000, 50_010),
                };
                let record = c.record(&data);
                let to = to.index(c.records.len() + 1);
                c.records.insert(to, record);
            }
            Mutation::FlipBit { .. } | Mutation::Truncate { .. } => {}
        }
    }
    let mut bytes = c.bytes();
    for m in mutations {
        match m {
            Mutation::FlipBit { at, bit } if !bytes.is_empty() => {
                let at = at.index(bytes.len());
                bytes[at] ^= 1 << bit;
            }
            Mutation::Truncate { at } => {
                let at = at.index(bytes.len() + 1);
                bytes.truncate(at);
            }
            _ => {}
        }
    }
    bytes
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(bytes).unwrap();
    z.finish().unwrap()
}

/// A sample, mutations for it, and whether to gzip the result.
fn mutated_capture() -> impl Strategy<Value = (usize, Vec<Mutation>, bool)> {
    (
        0..corpus().len(),
        proptest::collection::vec(mutation(), 1..6),
        proptest::bool::weighted(0.1),
    )
}

fn build((sample, mutations, gz): &(usize, Vec<Mutation>, bool)) -> Vec<u8> {
    let bytes = mutate(&corpus()[*sample], mutations);
    if *gz {
        gzip(&bytes)
    } else {
        bytes
    }
}

// ------------------------------------------------------------------------------------------------
// Properties
// ------------------------------------------------------------------------------------------------

proptest! {
    // PROPTEST_CASES runs a longer campaign (200,000 cases took 25 minutes on 2 cores).
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(512),
        max_shrink_iters: 2000,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    /// Mutated captures never panic any report, and no run holds more than [`MEMORY_BOUND`].
    #[test]
    fn mutated_captures_never_panic_and_stay_bounded(case in mutated_capture()) {
        let bytes = build(&case);
        let ((), peak) = measured(|| every_report(&bytes));
        prop_assert!(peak < MEMORY_BOUND, "peak {peak} bytes live on {} with {:?}", corpus()[case.0].name, case.1);
    }

    /// Flipping one bit of the CRC footer of chosen rtype datagrams of the clean session is
    /// reported as rtype.crc.mismatch at exactly those frames.
    #[test]
    fn every_crc_flip_is_reported_at_its_frame(flips in proptest::collection::vec((any::<Index>(), 0..32u32), 1..5)) {
        let clean = corpus().iter().find(|c| c.name == "clean-session.pcap").unwrap();
        let datagrams: Vec<(usize, usize)> =
            clean.records.iter().enumerate().filter_map(|(i, r)| rtype_in(r).map(|(_, end)| (i, end))).collect();
        prop_assert!(datagrams.len() > 500);
        let mut capture = clean.clone();
        let mut flipped = BTreeSet::new();
        for (which, bit) in &flips {
            let (record, end) = datagrams[which.index(datagrams.len())];
            if flipped.insert(record as u64 + 1) {
                let r = &mut capture.records[record];
                r[end - 4 + (bit / 8) as usize] ^= 0x80 >> (bit % 8);
            }
        }
        let (found, _) = measured(|| collect(&capture.bytes()));
        let reported: BTreeSet<u64> = found.frames("rtype.crc.mismatch").into_iter().collect();
        prop_assert_eq!(found.frames("rtype.crc.mismatch").len(), reported.len(), "one finding per frame");
        prop_assert_eq!(reported, flipped);
    }
}

#[test]
fn the_clean_session_has_no_crc_finding() {
    let _alone = one_test_at_a_time();
    let clean = corpus()
        .iter()
        .find(|c| c.name == "clean-session.pcap")
        .unwrap();
    assert!(measured(|| collect(&clean.bytes()))
        .0
        .frames("rtype.crc.mismatch")
        .is_empty());
}

// ------------------------------------------------------------------------------------------------
// Limits: going past each is a finding, never fatal, never silent
// ------------------------------------------------------------------------------------------------

/// A legacy pcap (LINKTYPE_RAW, µs) of `frames`, one per 10 ms.
fn raw_pcap(frames: &[Vec<u8>], snaplen: u32) -> Vec<u8> {
    let mut p = Vec::new();
    for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, snaplen, 101] {
        p.extend(v.to_le_bytes());
    }
    for (i, f) in frames.iter().enumerate() {
        let t = i as u64 * 10_000;
        for v in [
            1_767_225_600 + (t / 1_000_000) as u32,
            (t % 1_000_000) as u32,
            f.len() as u32,
            f.len() as u32,
        ] {
            p.extend(v.to_le_bytes());
        }
        p.extend_from_slice(f);
    }
    p
}

/// Raw IPv4 (id, fragment offset in bytes, more fragments) carrying `payload`; UDP is not added.
fn ipv4(payload: &[u8], id: u16, offset: usize, more: bool) -> Vec<u8> {
    let total = 20 + payload.len();
    let flags = ((offset / 8) as u16) | if more { 0x2000 } else { 0 };
    let mut f = vec![0x45, 0, (total >> 8) as u8, total as u8];
    f.extend(id.to_be_bytes());
    f.extend(flags.to_be_bytes());
    f.extend([64, 17, 0, 0, 10, 0, 0, 2, 10, 0, 0, 1]);
    f.extend_from_slice(payload);
    f
}

fn udp(payload: &[u8], sport: u16, dport: u16) -> Vec<u8> {
    let mut u = Vec::with_capacity(8 + payload.len());
    u.extend(sport.to_be_bytes());
    u.extend(dport.to_be_bytes());
    u.extend(((8 + payload.len()) as u16).to_be_bytes());
    u.extend([0, 0]);
    u.extend_from_slice(payload);
    u
}

/// A well-formed rtype datagram (17-byte header, CRC right).
fn rtype(ptype: u8, code: u8, tick: u32, payload: &[u8], compressed_from: Option<u16>) -> Vec<u8> {
    let mut d = vec![
        0xA3,
        0x5F,
        0xC8,
        0x1D,
        if compressed_from.is_some() { 0x81 } else { 1 },
        ptype,
        code,
        0,
        1,
    ];
    d.extend(tick.to_be_bytes());
    d.extend((payload.len() as u16).to_be_bytes());
    d.extend(compressed_from.unwrap_or(0).to_be_bytes());
    d.extend_from_slice(payload);
    let crc = crc32fast::hash(&d);
    d.extend(crc.to_be_bytes());
    d
}

/// A SERVER_SNAPSHOT_CHUNK payload with `entities` empty-mask entities and `pad` bytes of
/// undecodable blocks.
fn chunk(total: u16, index: u16, entities: u16) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend(total.to_be_bytes());
    p.extend(index.to_be_bytes());
    p.extend(entities.to_be_bytes());
    for id in 0..u32::from(entities) {
        p.extend(id.to_be_bytes());
        p.extend([0, 0]);
    }
    p
}

fn server_datagram(d: &[u8]) -> Vec<u8> {
    ipv4(&udp(d, 49_316, 41_000), 0, 0, false)
}

#[test]
fn a_record_over_the_maximum_is_a_corrupt_capture_finding() {
    let _alone = one_test_at_a_time();
    let good = server_datagram(&rtype(2, 0x10, 0, &[], None));
    let mut bytes = raw_pcap(&[good.clone(), good], 0);
    // The second record claims one byte more than the largest record accepted.
    let second = 24 + 16 + 49;
    bytes[second + 8..second + 12].copy_from_slice(&(MAX_RECORD_LEN as u32 + 1).to_le_bytes());
    let (found, peak) = measured(|| collect(&bytes));
    assert_eq!(found.frames("capture.corrupt"), [2]);
    assert!(
        peak < 2 << 20,
        "the claimed length was not allocated: {peak}"
    );
}

#[test]
fn fragment_limits_are_findings() {
    let _alone = one_test_at_a_time();
    // More datagrams in reassembly than the limit: each one evicted is reported at the frame
    // that evicted it, and those still incomplete at the end at the last frame.
    let extra = 5;
    let frames: Vec<Vec<u8>> = (0..defrag::MAX_SETS + extra)
        .map(|id| ipv4(&udp(&[0xA3; 64], 41_000, 50_010)[..64], id as u16, 0, true))
        .collect();
    let found = measured(|| collect(&raw_pcap(&frames, 65_535))).0;
    let last = frames.len() as u64;
    let mut expected: Vec<u64> = (defrag::MAX_SETS as u64 + 1..=last).collect();
    expected.extend(std::iter::repeat_n(last, defrag::MAX_SETS));
    assert_eq!(found.frames("capture.fragment-dropped"), expected);
    // More bytes held than the limit: 70 datagrams of 64 KiB, never completed.
    let big = vec![0x5A; 65_000];
    let frames: Vec<Vec<u8>> = (0..70).map(|id| ipv4(&big, id as u16, 0, true)).collect();
    let (found, peak) = measured(|| collect(&raw_pcap(&frames, 65_535)));
    assert_eq!(found.frames("capture.fragment-dropped").len(), 70);
    assert!(peak < MEMORY_BOUND);
    // Expiry: a datagram still incomplete 30 s after its first fragment (frame 2 expires it),
    // then one still incomplete when the capture ends (reported at its last frame, 2).
    let mut bytes = raw_pcap(&[ipv4(&[0; 64], 1, 0, true)], 65_535);
    let mut late = raw_pcap(&[ipv4(&[0; 64], 2, 0, true)], 65_535)[24..].to_vec();
    late[0..4].copy_from_slice(&(1_767_225_600u32 + 31).to_le_bytes());
    bytes.extend(late);
    assert_eq!(
        measured(|| collect(&bytes))
            .0
            .frames("capture.fragment-dropped"),
        [2, 2]
    );
}

#[test]
fn chunk_limits_are_findings() {
    let _alone = one_test_at_a_time();
    let d = |tick: u32, payload: Vec<u8>| server_datagram(&rtype(2, 0x21, tick, &payload, None));
    // More open sets than the limit: the oldest is closed as rtype.chunk.limit.
    let frames: Vec<Vec<u8>> = (0..chunks::MAX_OPEN_SETS as u32 + 3)
        .map(|tick| d(tick, chunk(2, 0, 1)))
        .collect();
    let found = measured(|| collect(&raw_pcap(&frames, 65_535))).0;
    assert_eq!(found.frames("rtype.chunk.limit"), [1, 2, 3]);
    // More chunks announced than the limit.
    let found = measured(|| {
        collect(&raw_pcap(
            &[d(1, chunk(chunks::MAX_CHUNKS + 1, 0, 1))],
            65_535,
        ))
    })
    .0;
    assert_eq!(found.frames("rtype.chunk.limit"), [1]);
    // More bytes in one set than the limit: chunks of 10,000 entities (60 kB each).
    let per = 10_000u16;
    let needed = chunks::MAX_SET_BYTES / (usize::from(per) * 6) + 1;
    let frames: Vec<Vec<u8>> = (0..needed as u16 + 1)
        .map(|i| d(7, chunk(needed as u16 + 2, i, per)))
        .collect();
    let (found, peak) = measured(|| collect(&raw_pcap(&frames, 65_535)));
    assert_eq!(found.frames("rtype.chunk.limit"), [needed as u64]);
    assert!(peak < MEMORY_BOUND);
}

#[test]
fn decompression_is_bounded_by_the_header() {
    let _alone = one_test_at_a_time();
    // 70,000 bytes packed into a few hundred: past 65535 the decompressor stops with a finding.
    let packed = lz4_flex::block::compress(&vec![0u8; 70_000]);
    let bomb = server_datagram(&rtype(2, 0x14, 1, &packed, Some(65_535)));
    // Orig. Size smaller than what the payload decompresses to.
    let packed = lz4_flex::block::compress(&[0u8; 2_000]);
    let liar = server_datagram(&rtype(2, 0x14, 2, &packed, Some(100)));
    let (found, peak) = measured(|| collect(&raw_pcap(&[bomb, liar], 65_535)));
    assert_eq!(found.frames("rtype.compress.lz4"), [1]);
    assert_eq!(found.frames("rtype.compress.orig-size"), [2]);
    assert!(peak < 4 << 20, "{peak}");
}

#[test]
fn payloads_decompressed_ahead_stay_bounded() {
    let _alone = one_test_at_a_time();
    // Small datagrams that each inflate to 65,000 bytes: the workers decompress them ahead of
    // the ordered stage, and the batches they travel in must not grow with what they inflate to.
    let packed = lz4_flex::block::compress(&vec![0u8; 65_000]);
    let frame = server_datagram(&rtype(2, 0x14, 1, &packed, Some(65_000)));
    let frames = vec![frame; 3_000];
    let (found, peak) = measured(|| collect(&raw_pcap(&frames, 65_535)));
    assert_eq!(found.frames("rtype.compress.lz4"), Vec::<u64>::new());
    assert_eq!(found.frames("rtype.message.trailing").len(), 3_000);
    // 195 MB were they all kept; 11.3 MB measured, of which the batches in flight (on two
    // workers, 7 of 1 MiB of frames and as much of results at most) are most.
    assert!(peak < 16 << 20, "{peak}");
}

#[test]
fn fields_rendered_ahead_stay_bounded() {
    let _alone = one_test_at_a_time();
    // Small datagrams that each inflate to a snapshot of 300 entities whose positions and speeds
    // are the smallest f32 (6,602 bytes), 75 KB of JSON each, as every such float is written out
    // in full: export renders them on the worker threads, and the batches they travel in
    // must not grow with what they render to. Were only their payloads counted, a 1 MiB batch
    // would carry 158 of them, 12 MB of JSON.
    let entities = 300u16;
    let mut snapshot = entities.to_be_bytes().to_vec();
    for _ in 0..entities {
        snapshot.extend([0, 0, 0, 7, 0, 0b1_1110]);
        snapshot.extend([0, 0, 0, 1].repeat(4));
    }
    let packed = lz4_flex::block::compress(&snapshot);
    let frame = server_datagram(&rtype(2, 0x14, 1, &packed, Some(snapshot.len() as u16)));
    let capture = raw_pcap(&vec![frame; 1_000], 65_535);
    let filter = FilterOptions::default().build().expect("the empty filter");
    let (written, peak) = measured(|| {
        let mut bytes = 0;
        let mut sink = Export::new(WriteCounted(io::sink(), &mut bytes), false, filter);
        assert!(run(&capture, &mut sink));
        drop(sink);
        bytes
    });
    // Each record stops at 64 KiB of fields (the rest counted in its `omitted` member).
    let limit = rtype_inspect::report::fields::MAX_FIELDS_JSON;
    assert!(written > 1_000 * limit, "{written}");
    assert!(written < 1_000 * (limit + 2_048), "{written}");
    // 75 MB of JSON were they all kept; 10.2 MB measured, the batches in flight most of it.
    assert!(peak < 16 << 20, "{peak}");
}

/// A writer that counts what goes through it.
struct WriteCounted<'a, W>(W, &'a mut usize);

impl<W: Write> Write for WriteCounted<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.0.write(buf)?;
        *self.1 += n;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[test]
fn json_limits_are_findings() {
    let _alone = one_test_at_a_time();
    let deep = format!(
        "{{\"type\":\"snapshot\",\"x\":{}{}}}",
        "[".repeat(40),
        "]".repeat(40)
    );
    let big = format!("{{\"type\":\"snapshot\",\"x\":\"{}\"}}", "a".repeat(60_000));
    // The conversation is recognised by its first datagram; the limits are judged on it after.
    let first = r#"{"type":"snapshot","epoch":1,"entities":[]}"#.to_string();
    let frames = [first, deep, big].map(|j| ipv4(&udp(j.as_bytes(), 4242, 41_000), 0, 0, false));
    let found = measured(|| collect(&raw_pcap(&frames, 65_535))).0;
    assert_eq!(found.frames("rtnp.json.limit"), [2]);
    assert_eq!(found.frames("rtnp.datagram.size"), [3]);
}

// ------------------------------------------------------------------------------------------------
// The generated Lua dissector over mutated captures
// ------------------------------------------------------------------------------------------------

/// tshark with the generated dissector over mutated captures: no "Lua Error". Two tshark
/// processes at a time run over the captures for 45 s (tshark's start-up dominates: a few hundred
/// fit on an idle machine), then over one capture per link type holding every record the
/// mutations changed or added in all 400 captures, so that each mutated datagram is dissected
/// whatever the time allowed. Skipped when tshark is not installed.
#[test]
fn tshark_shows_no_lua_error_on_mutated_captures() {
    let _alone = one_test_at_a_time();
    if !Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        skip::missing(
            "tshark_shows_no_lua_error_on_mutated_captures",
            "tshark is not on PATH (apt-get install tshark)",
        );
        return;
    }
    let script = root().join("wireshark/rtype.lua");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("hostile-tshark");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // Deterministic: the same captures on every run.
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
    );
    let strategy = mutated_capture();
    let original: std::collections::HashSet<&[u8]> = corpus()
        .iter()
        .flat_map(|c| c.records.iter().map(|r| &r[..]))
        .collect();
    // Link type → pcap header and the records mutations changed or added.
    let mut changed: std::collections::BTreeMap<Vec<u8>, Vec<u8>> = Default::default();
    let mut files = Vec::new();
    for i in 0..400 {
        let case = strategy.new_tree(&mut runner).unwrap().current();
        let bytes = build(&(case.0, case.1, false));
        let path = dir.join(format!(
            "{i:03}-{}.pcap",
            corpus()[case.0].name.replace('.', "_")
        ));
        std::fs::write(&path, &bytes).unwrap();
        files.push(path);
        let c = Capture::parse("", &bytes, usize::MAX);
        if c.format == (Format::Pcap { big: false }) && c.head.len() == 24 {
            let records = changed.entry(c.head[20..24].to_vec()).or_insert_with(|| {
                let mut head = c.head.clone();
                head[16..20].copy_from_slice(&0u32.to_le_bytes());
                head
            });
            for r in c.records.iter().filter(|r| !original.contains(&r[..])) {
                records.extend_from_slice(r);
            }
        }
    }
    let check = |capture: &Path| -> Result<(), String> {
        let out = Command::new("tshark")
            .args(["-n", "-V", "-r"])
            .arg(capture)
            .arg("-X")
            .arg(format!("lua_script:{}", script.display()))
            .output()
            .expect("tshark runs");
        for text in [&out.stdout, &out.stderr] {
            let text = String::from_utf8_lossy(text);
            if let Some(line) = text
                .lines()
                .find(|l| l.contains("Lua Error") || l.starts_with("Lua:"))
            {
                return Err(format!("{}: {line}", capture.display()));
            }
        }
        Ok(())
    };
    let deadline = Instant::now() + Duration::from_secs(45);
    let next = AtomicUsize::new(0);
    let errors = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while Instant::now() < deadline {
                    let Some(path) = files.get(next.fetch_add(1, SeqCst)) else {
                        break;
                    };
                    if let Err(e) = check(path) {
                        errors.lock().unwrap().push(e);
                    }
                }
            });
        }
    });
    let done = next.load(SeqCst).min(files.len());
    let mut errors = errors.into_inner().unwrap();
    for (i, bytes) in changed.values().enumerate() {
        let path = dir.join(format!("changed-records-{i}.pcap"));
        std::fs::write(&path, bytes).unwrap();
        if let Err(e) = check(&path) {
            errors.push(e);
        }
    }
    let records: usize = changed
        .values()
        .map(|b| Capture::parse("", b, usize::MAX).records.len())
        .sum();
    eprintln!(
        "tshark ran over {done} of {} mutated captures, then {records} changed records, in {dir:?}",
        files.len()
    );
    assert!(errors.is_empty(), "Lua errors:\n{}", errors.join("\n"));
    assert!(done >= 20, "too few captures checked in 45 s: {done}");
}

// ------------------------------------------------------------------------------------------------
// Regressions found by fuzzing
// ------------------------------------------------------------------------------------------------

/// A little-endian pcapng: one section, raw-IP interfaces with these `if_tsoffset`s (seconds),
/// and EPBs (interface, timestamp in µs, data).
fn pcapng(offsets: &[i64], packets: &[(u32, u64, Vec<u8>)]) -> Vec<u8> {
    fn block(out: &mut Vec<u8>, kind: u32, body: &[u8]) {
        let total = (12 + body.len().div_ceil(4) * 4) as u32;
        out.extend(kind.to_le_bytes());
        out.extend(total.to_le_bytes());
        out.extend_from_slice(body);
        out.resize(out.len() + body.len().div_ceil(4) * 4 - body.len(), 0);
        out.extend(total.to_le_bytes());
    }
    let mut out = Vec::new();
    block(
        &mut out,
        0x0a0d_0d0a,
        &[
            0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        ],
    );
    for offset in offsets {
        let mut body = vec![101, 0, 0, 0, 0, 0, 0, 0];
        body.extend([14, 0, 8, 0]);
        body.extend(offset.to_le_bytes());
        body.extend([0, 0, 0, 0]);
        block(&mut out, 1, &body);
    }
    for (iface, ts, data) in packets {
        let mut body = Vec::new();
        for v in [
            *iface,
            (ts >> 32) as u32,
            *ts as u32,
            data.len() as u32,
            data.len() as u32,
        ] {
            body.extend(v.to_le_bytes());
        }
        body.extend_from_slice(data);
        body.resize(20 + data.len().div_ceil(4) * 4, 0);
        block(&mut out, 6, &body);
    }
    out
}

/// Timestamps at both ends of the i64 range (pcapng's `if_tsoffset` lets a file put them there):
/// durations, gaps, RTTs, relative times and silences saturate instead of overflowing (which
/// panicked in debug builds and wrapped to nonsense in release ones).
#[test]
fn extreme_timestamps_saturate() {
    let _alone = one_test_at_a_time();
    const MIN: u32 = 0; // interface with if_tsoffset -2^40 s: every time is i64::MIN
    const MAX: u32 = 1; // interface with if_tsoffset +2^40 s: every time is i64::MAX
                        // The rtype and the rtnp client each have their own port (one socket, one conversation).
    let client_port = |dport: u16| if dport == 4242 { 41_001 } else { 41_000 };
    let c2s = |d: &[u8], dport: u16| ipv4(&udp(d, client_port(dport), dport), 0, 0, false);
    let s2c = |d: &[u8], sport: u16| {
        let mut f = ipv4(&udp(d, sport, client_port(sport)), 0, 0, false);
        f[12..20].rotate_left(4);
        f
    };
    let rtnp = |j: &str| j.as_bytes().to_vec();
    let packets = vec![
        // rtype: a ping answered "before" it was sent, snapshots going back in time.
        (MAX, 0, c2s(&rtype(1, 0x04, 0, &[0, 0, 0, 1], None), 50_010)),
        (MIN, 0, s2c(&rtype(2, 0x11, 0, &[0, 0, 0, 1], None), 50_010)),
        (MAX, 0, s2c(&rtype(2, 0x14, 1, &[0, 0], None), 50_010)),
        (MIN, 0, s2c(&rtype(2, 0x14, 2, &[0, 0], None), 50_010)),
        (MAX, 0, s2c(&rtype(2, 0x14, 3, &[0, 0], None), 50_010)),
        // rtnp: the client speaks at the beginning of time, the server answers at its end.
        (
            MIN,
            0,
            c2s(
                &rtnp(r#"{"type":"connect_request","player_name":"a"}"#),
                4242,
            ),
        ),
        (
            MAX,
            0,
            s2c(&rtnp(r#"{"type":"assign_id","client_id":1}"#), 4242),
        ),
        (
            MIN,
            0,
            s2c(&rtnp(r#"{"type":"assign_id","client_id":1}"#), 4242),
        ),
    ];
    let bytes = pcapng(&[-(1 << 40), 1 << 40], &packets);
    let found = measured(|| {
        every_report(&bytes);
        collect(&bytes)
    })
    .0;
    // From i64::MIN to i64::MAX the client has been silent for far more than 30 s.
    assert_eq!(found.frames("rtnp.client.silent"), [7], "{:?}", found.found);
    // The export's relative times keep their sign.
    let filter = FilterOptions::default().build().unwrap();
    let mut out = Vec::new();
    {
        let _alone = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let mut export = Export::new(&mut out, false, filter);
        assert!(run(&bytes, &mut export));
    }
    let rel: Vec<f64> = String::from_utf8(out)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|j| j["kind"] == "datagram")
        .map(|j| j["time_rel"].as_f64().unwrap())
        .collect();
    assert_eq!(rel.len(), packets.len());
    assert_eq!(rel[0], 0.0);
    assert!(rel[1] < -9e9 && rel[2] == 0.0, "{rel:?}");
}

/// rtnp names message types in text: a capture of many distinct type names keeps the summary's
/// message table (and the time to search it) bounded.
#[test]
fn distinct_rtnp_type_names_stay_bounded() {
    let _alone = one_test_at_a_time();
    // A first datagram of a type the document defines recognises the conversation.
    let first = r#"{"type":"player_input","client_id":1}"#.to_string();
    let frames: Vec<Vec<u8>> = std::iter::once(first)
        .chain((0..40_000).map(|i| format!("{{\"type\":\"t{i:08}\"}}")))
        .map(|json| ipv4(&udp(json.as_bytes(), 41_000, 4242), 0, 0, false))
        .collect();
    let bytes = raw_pcap(&frames, 65_535);
    let started = Instant::now();
    let (summary, peak) = measured(|| {
        let mut summary = Summary::default();
        assert!(run(&bytes, &mut summary));
        summary
    });
    let rows = summary.json()["messages"].as_array().unwrap().len();
    eprintln!(
        "{rows} message rows, peak {peak} bytes, {:?}",
        started.elapsed()
    );
    assert!(
        rows <= rtype_inspect::report::summary::MAX_MESSAGE_ROWS + 6,
        "{rows} message rows"
    );
    let other = summary.json()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "(other types)")
        .expect("the other types row")
        .clone();
    assert_eq!(
        other["count"].as_u64().unwrap() as usize,
        frames.len() - rtype_inspect::report::summary::MAX_MESSAGE_ROWS,
        "{other}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// The profile keeps 64 message rows per conversation: 40,000 distinct rtnp type names share one
/// row past them, and memory stays small.
#[test]
fn profile_rows_stay_bounded() {
    let _alone = one_test_at_a_time();
    // A first datagram of a type the document defines recognises the conversation.
    let first = r#"{"type":"player_input","client_id":1}"#.to_string();
    let frames: Vec<Vec<u8>> = std::iter::once(first)
        .chain((0..40_000).map(|i| format!("{{\"type\":\"t{i:08}\"}}")))
        .map(|json| ipv4(&udp(json.as_bytes(), 41_000, 4242), 0, 0, false))
        .collect();
    let bytes = raw_pcap(&frames, 65_535);
    let (profiler, peak) = measured(|| {
        let mut profiler = Profiler::new("names", &reading(), 1_000_000_000);
        assert!(run(&bytes, &mut profiler));
        profiler
    });
    let j = profiler.json().unwrap();
    let rows = j["conversations"][0]["messages"].as_array().unwrap();
    let limit = profile::account::MAX_MESSAGE_ROWS;
    assert_eq!(rows.len(), limit + 1, "{rows:?}");
    let other = rows.iter().find(|m| m["name"] == "(other)").unwrap();
    assert_eq!(
        other["datagrams"].as_u64().unwrap() as usize,
        frames.len() - limit
    );
    assert!(peak < 16 << 20, "peak {peak} bytes");
}

/// A profile's memory does not grow with the capture's length: per-entity records are retired,
/// time buckets fold, rows and timelines are capped. Two generated captures, one four times the
/// other, at 100 ms buckets (the longer one folds them twice).
#[test]
fn profile_memory_stays_flat_in_the_captures_length() {
    let _alone = one_test_at_a_time();
    let dir = std::env::temp_dir().join(format!("rtype-profile-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut peaks = Vec::new();
    for datagrams in [60_000u64, 240_000] {
        let file = dir.join(format!("{datagrams}.pcap"));
        let out = io::BufWriter::new(std::fs::File::create(&file).unwrap());
        rtype_inspect::samplegen::generate_large(out, datagrams, 4).unwrap();
        let mut reading = reading();
        reading.analysis.entity_figures = true;
        let (json, peak) =
            measured(|| profile::profile_file(&file, &reading, 100_000_000).unwrap());
        assert_eq!(json["total"]["datagrams"].as_u64(), Some(datagrams));
        eprintln!(
            "{datagrams} datagrams: peak {peak} bytes, {} buckets",
            json["series"]["buckets"]
        );
        peaks.push(peak);
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(peaks[1] < peaks[0] + (2 << 20), "{peaks:?}");
    assert!(peaks[1] < 48 << 20, "{peaks:?}");
}

/// The config and profile files are read with a bound: `/dev/zero` (whose metadata says 0 bytes)
/// is refused at once instead of filling memory.
#[cfg(unix)]
#[test]
fn config_and_profile_reads_are_bounded() {
    let _alone = one_test_at_a_time();
    let sample = root().join("samples/clean-session.pcap");
    for args in [
        ["check", "--config", "/dev/zero"],
        ["summary", "--profile", "/dev/zero"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_rtype-inspect"))
            .args(args)
            .arg(&sample)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("larger than"), "{args:?}: {stderr}");
    }
}

/// Records of the largest size accepted, back to back: the reader's buffer and the batches in
/// flight to the decoding thread stay bounded whatever the file's size (the file is generated as
/// it is read: it is never in memory whole).
#[test]
fn largest_records_stay_bounded() {
    let _alone = one_test_at_a_time();
    struct Records {
        header: Vec<u8>,
        at: u64,
        record: u64,
        count: u64,
    }
    impl io::Read for Records {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let end = self.header.len() as u64 + self.count * self.record;
            if self.at >= end {
                return Ok(0);
            }
            let n = buf.len().min((end - self.at) as usize);
            for (i, b) in buf[..n].iter_mut().enumerate() {
                let at = self.at + i as u64;
                *b = if at < self.header.len() as u64 {
                    self.header[at as usize]
                } else {
                    let r = (at - self.header.len() as u64) % self.record;
                    // Record header: time, then caplen and origlen = the record's data size.
                    let len = (self.record - 16) as u32;
                    match r {
                        8..=11 => len.to_le_bytes()[(r - 8) as usize],
                        12..=15 => len.to_le_bytes()[(r - 12) as usize],
                        _ => 0,
                    }
                };
            }
            self.at += n as u64;
            Ok(n)
        }
    }
    let mut header = Vec::new();
    for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 0, 101] {
        header.extend(v.to_le_bytes());
    }
    let records = Records {
        header,
        at: 0,
        record: 16 + MAX_RECORD_LEN as u64,
        count: 12,
    };
    let ((), peak) = measured(|| {
        let mut reader = CaptureReader::from_read(Path::new("huge"), Box::new(records)).unwrap();
        let mut found = Collect::default();
        Pipeline::new(Profile::document(), None)
            .with_threads(2)
            .run(&mut reader, &mut found)
            .unwrap();
        assert_eq!(found.frames("capture.malformed-packet").len(), 12);
    });
    eprintln!(
        "peak {} MiB over 12 records of {} MiB",
        peak >> 20,
        MAX_RECORD_LEN >> 20
    );
    // The reader's buffer (16 MiB + 64 KiB), and at worst six batches of one such record each
    // (one filling, two per worker, one being decoded) with two workers: 112 MiB.
    assert!(peak < 128 << 20, "peak {peak} bytes");
}

// ------------------------------------------------------------------------------------------------
// What a conversation may hold
// ------------------------------------------------------------------------------------------------

/// Raw IPv4/UDP from the server 10.0.0.1:50010 to the client 10.0.0.2:`client_port`.
fn to_client(client_port: u16, d: &[u8]) -> Vec<u8> {
    let mut f = ipv4(&udp(d, 50_010, client_port), 0, 0, false);
    f[12..20].rotate_left(4);
    f
}

/// A SERVER_LEVEL_INIT payload of `archetypes` archetypes whose sprite names are `sprite` bytes.
fn level_init(archetypes: u8, sprite: usize) -> Vec<u8> {
    let mut p = vec![0, 1, 0, 0, 0, 7, 2, b'b', b'g', 1, b'm', archetypes];
    for i in 0..archetypes {
        p.extend(u16::from(i).to_be_bytes());
        p.push(sprite as u8);
        p.extend(std::iter::repeat_n(b'a' + i % 26, sprite));
        p.extend([0, 0]);
    }
    p
}

/// `conversations` clients, each sent one LZ4-compressed LevelInit of 255 archetypes with
/// 250-byte sprite names (65 KB decompressed, a few hundred bytes on the wire).
fn level_init_conversations(conversations: u16) -> Vec<u8> {
    let payload = level_init(255, 250);
    let packed = lz4_flex::block::compress(&payload);
    let d = rtype(2, 0x30, 0, &packed, Some(payload.len() as u16));
    let frames: Vec<Vec<u8>> = (0..conversations)
        .map(|i| to_client(10_000 + i, &d))
        .collect();
    raw_pcap(&frames, 65_535)
}

/// `conversations` clients, each with a whole session holding as much as a conversation can: a
/// HELLO, the largest LevelInit (as [`level_init_conversations`]), and 66 pings, pongs and
/// snapshots, so that both of its timing series (snapshot gaps, round trips) outgrow their exact
/// samples and take their histograms.
fn long_conversations(conversations: u16) -> Vec<u8> {
    let payload = level_init(255, 250);
    let packed = lz4_flex::block::compress(&payload);
    let level_init = rtype(2, 0x30, 0, &packed, Some(payload.len() as u16));
    let mut frames = Vec::new();
    for i in 0..conversations {
        let port = 10_000 + i;
        let c2s = |d: &[u8]| ipv4(&udp(d, port, 50_010), 0, 0, false);
        frames.push(c2s(&rtype(1, 0x01, 0, &[], None)));
        frames.push(to_client(port, &level_init));
        for tick in 0..66u32 {
            frames.push(c2s(&rtype(1, 0x04, tick, &tick.to_be_bytes(), None)));
            frames.push(to_client(
                port,
                &rtype(2, 0x13, tick, &tick.to_be_bytes(), None),
            ));
            frames.push(to_client(port, &rtype(2, 0x14, tick, &[0, 0], None)));
        }
    }
    raw_pcap(&frames, 65_535)
}

/// Runs the pipeline over a capture shared with the caller (not copied, so that its bytes are
/// not counted in a run's peak).
fn run_shared<S: Sink>(bytes: &Arc<[u8]>, sink: &mut S) {
    let read = Box::new(Cursor::new(bytes.clone()));
    let mut reader = CaptureReader::from_read(Path::new("crafted"), read).expect("a capture");
    Pipeline::new(Profile::document(), None)
        .with_threads(2)
        .run(&mut reader, sink)
        .expect("a capture that opened runs to its end");
}

/// Peak bytes live of each command's run over `bytes`, its report written as the command does.
fn command_peaks(bytes: &[u8]) -> Vec<(&'static str, usize)> {
    let bytes: Arc<[u8]> = bytes.into();
    let filter = || FilterOptions::default().build().expect("the empty filter");
    let packets = |verbose| {
        let options = PacketsOptions {
            verbose,
            hex: false,
            width: None,
            time: Default::default(),
            color: false,
        };
        Packets::new(io::sink(), options, filter())
    };
    let stats = |format| Stats::new(io::sink(), format, "x", Term::pipe());
    vec![
        (
            "summary",
            measured(|| {
                let mut s = Summary::default();
                run_shared(&bytes, &mut s);
                s.text("x", Term::pipe()).len() + s.json().to_string().len()
            })
            .1,
        ),
        (
            "check",
            measured(|| run_shared(&bytes, &mut Judge::default())).1,
        ),
        (
            "stats",
            measured(|| run_shared(&bytes, &mut stats(ReportFormat::Text))).1,
        ),
        (
            "stats --format json",
            measured(|| run_shared(&bytes, &mut stats(ReportFormat::Json))).1,
        ),
        (
            "export",
            measured(|| run_shared(&bytes, &mut Export::new(io::sink(), false, filter()))).1,
        ),
        (
            "packets",
            measured(|| run_shared(&bytes, &mut packets(false))).1,
        ),
        (
            "packets -V",
            measured(|| run_shared(&bytes, &mut packets(true))).1,
        ),
    ]
}

/// What a conversation may hold is bounded, and so is every command's memory at the cap of
/// conversations tracked: 5,000 conversations (past the 4,096 tracked) each announcing the
/// largest LevelInit (255 archetypes with 250-byte sprite names: 65 KB), with or without a whole
/// session whose timing series take their histograms. Each took over 300 MB (stats 418 MB) when
/// archetypes were kept whole and stats built its report for all conversations at once.
#[test]
fn conversation_state_is_bounded() {
    let _alone = one_test_at_a_time();
    let one = command_peaks(&level_init_conversations(1));
    for (name, bytes) in [
        ("LevelInit", level_init_conversations(5_000)),
        ("LevelInit and long series", long_conversations(4_096)),
    ] {
        for ((command, peak), (_, alone)) in command_peaks(&bytes).into_iter().zip(&one) {
            let per = (peak - alone) / MAX_CONVERSATIONS;
            eprintln!(
                "{name}: {command}: peak {:.1} MB ({per} bytes per conversation; one: {:.1} MB)",
                peak as f64 / 1e6,
                *alone as f64 / 1e6,
            );
            assert!(peak < CONVERSATIONS_BOUND, "{name}: {command}: peak {peak}");
        }
    }
}

/// The most any command may hold for a capture of [`MAX_CONVERSATIONS`] conversations at their
/// largest (SECURITY.md).
const CONVERSATIONS_BOUND: usize = 64 << 20;

// ------------------------------------------------------------------------------------------------
// Findings and records without bound
// ------------------------------------------------------------------------------------------------

/// The NDJSON export of `bytes` two ways: with worker threads rendering ahead
/// ([`Pipeline::run`]), and frame by frame on one thread; each record is checked against
/// docs/timeline.schema.json.
fn export_lines(bytes: &[u8]) -> Vec<String> {
    let filter = || FilterOptions::default().build().expect("the empty filter");
    let mut threaded = Vec::new();
    {
        let mut sink = Export::new(&mut threaded, false, filter());
        assert!(run(bytes, &mut sink));
    }
    let mut inline = Vec::new();
    {
        let mut sink = Export::new(&mut inline, false, filter());
        let read = Box::new(Cursor::new(bytes.to_vec()));
        let mut reader = CaptureReader::from_read(Path::new("crafted"), read).unwrap();
        let mut pipeline = Pipeline::new(Profile::document(), None);
        sink.start(reader.info());
        let end = reader
            .for_each_frame(|f| pipeline.frame(f, &mut sink))
            .unwrap();
        pipeline.finish(&reader.info().clone(), &end, &mut sink);
    }
    assert!(threaded == inline, "rendering ahead changed the export");
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("docs/timeline.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let lines: Vec<String> = String::from_utf8(threaded)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    for line in &lines {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        if let Err(e) = validator.validate(&record) {
            panic!("{e}: {}", &line[..line.len().min(300)]);
        }
    }
    lines
}

/// The export's datagram records, parsed.
fn datagram_records(lines: &[String]) -> Vec<serde_json::Value> {
    lines
        .iter()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["kind"] == "datagram")
        .collect()
}

/// A SERVER_SNAPSHOT payload of `entities` entities, all of `entity_type` (mask bit 0).
fn snapshot_of_type(entities: u16, entity_type: u8) -> Vec<u8> {
    let mut p = entities.to_be_bytes().to_vec();
    for _ in 0..entities {
        p.extend([0, 0, 0, 7, 0, 1, entity_type]);
    }
    p
}

/// A LevelInit announcing one archetype (type 1) named `sprite`, then `datagrams` compressed
/// snapshots of `entities` entities of `entity_type`, to the same client.
fn announced_then_snapshots(
    sprite: usize,
    datagrams: u32,
    entities: u16,
    entity_type: u8,
) -> Vec<u8> {
    let mut frames = vec![to_client(
        41_000,
        &rtype(2, 0x30, 0, &level_init(1, sprite), None),
    )];
    let snapshot = snapshot_of_type(entities, entity_type);
    let packed = lz4_flex::block::compress(&snapshot);
    for tick in 1..=datagrams {
        let d = rtype(2, 0x14, tick, &packed, Some(snapshot.len() as u16));
        frames.push(to_client(41_000, &d));
    }
    raw_pcap(&frames, 65_535)
}

/// A datagram breaking one rule 9,000 times is one finding of it, counted 9,000 times: 200 small
/// datagrams gave 1.8 M findings (and an export 3,500 times the capture's size) when each
/// entity's was one.
#[test]
fn a_rule_broken_again_in_a_datagram_is_one_counted_finding() {
    let _alone = one_test_at_a_time();
    let bytes = announced_then_snapshots(4, 200, 9_000, 2);
    assert!(bytes.len() < 100_000, "{}", bytes.len());
    let (judge, peak) = measured(|| {
        let mut judge = Judge::default();
        assert!(run(&bytes, &mut judge));
        judge
    });
    let rule = Rule::RtypeUnknownEntityType;
    assert_eq!(judge.rules.get(rule).count, 200 * 9_000);
    assert_eq!(judge.rules.frames(rule), (2..=21).collect::<Vec<u64>>());
    // The 9,000 entities' lifecycle records (session::entities) and their references, and the
    // batches in flight (1 MiB each on two workers): 9.3 MB measured.
    assert!(peak < 12 << 20, "{peak}");
    let found = measured(|| collect(&bytes)).0;
    assert_eq!(found.frames(rule.id()), (2..=201).collect::<Vec<u64>>());
    let filter = FilterOptions::default().build().expect("the empty filter");
    let (written, peak) = measured(|| {
        let mut bytes_out = 0;
        let mut sink = Export::new(WriteCounted(io::sink(), &mut bytes_out), false, filter);
        assert!(run(&bytes, &mut sink));
        drop(sink);
        bytes_out
    });
    assert!(written < 202 * (MAX_FIELDS_JSON + 2048), "{written}");
    assert!(peak < 16 << 20, "{peak}");
    {
        let lines = export_lines(&bytes);
        let records = datagram_records(&lines);
        assert_eq!(records.len(), 201);
        let v = &records[1]["violations"];
        assert_eq!(v.as_array().unwrap().len(), 1, "{v}");
        assert_eq!(v[0]["id"], rule.id());
        assert_eq!(v[0]["count"], 9_000);
        assert_eq!(v[0]["offset"], 17 + 2 + 6);
        assert_eq!(
            v[0]["detail"],
            "entity type 2; ×9000 in this datagram, the first at @25"
        );
        let longest = lines.iter().map(String::len).max().unwrap();
        assert!(longest < MAX_FIELDS_JSON + 2048, "{longest}");
    }
}

/// An export record is bounded: a 9,000-entity snapshot's fields stop at 64 KiB of JSON (the rest
/// counted in `omitted`), an LZ4 bomb's undecoded bytes at as much hex, the sprite names repeated
/// after entity types at 16 KiB; rtnp text past the limit is cut. Rendering ahead of the decoding
/// thread stops at the same places.
#[test]
fn export_records_are_bounded() {
    let _alone = one_test_at_a_time();
    // Many entities: fields left out past the limit.
    let records = datagram_records(&export_lines(&announced_then_snapshots(4, 1, 9_000, 0)));
    let snapshot = &records[1];
    let omitted = &snapshot["omitted"];
    let entities = snapshot["fields"]["entities"].as_array().unwrap();
    assert!(
        (1_000..9_000).contains(&entities.len()),
        "{}",
        entities.len()
    );
    // Fields shown: the entity count, then each entity's id, mask and type (4, 2 and 1 bytes),
    // the last one perhaps cut.
    let widths = [("id", 4), ("update_mask", 2), ("entity_type", 1)];
    let (mut fields, mut offset) = (1, 2);
    for e in entities {
        for (key, width) in widths {
            if e.get(key).is_some() {
                fields += 1;
                offset += width;
            }
        }
    }
    assert_eq!(omitted["fields"], 1 + 3 * 9_000 - fields, "{omitted}");
    assert_eq!(omitted["offset"], offset);
    assert_eq!(omitted["bytes"], 0);
    assert!(omitted["sprites"].as_u64().unwrap() > 0, "{omitted}");
    // Long sprite names after few entities: only the names past 16 KiB are left out.
    let records = datagram_records(&export_lines(&announced_then_snapshots(250, 1, 1_000, 0)));
    let entities = records[1]["fields"]["entities"].as_array().unwrap().clone();
    let named = entities
        .iter()
        .filter(|e| e.get("sprite").is_some())
        .count();
    assert_eq!(entities.len(), 1_000);
    assert!((50..70).contains(&named), "{named}");
    assert_eq!(
        records[1]["omitted"],
        serde_json::json!({"fields": 0, "bytes": 0, "sprites": 1_000 - named})
    );
    // An LZ4 bomb: a snapshot whose first entity sets reserved bit 7, then 65,527 zeros,
    // undecoded: under 300 bytes on the wire.
    let mut bomb = vec![0, 1, 0, 0, 0, 7, 0, 0x80];
    bomb.resize(65_535, 0);
    let packed = lz4_flex::block::compress(&bomb);
    let bomb = rtype(2, 0x14, 1, &packed, Some(65_535));
    assert!(bomb.len() < 300, "{}", bomb.len());
    let frames = vec![
        to_client(41_000, &rtype(2, 0x10, 0, &[], None)),
        to_client(41_000, &bomb),
    ];
    let lines = export_lines(&raw_pcap(&frames, 65_535));
    let record = &datagram_records(&lines)[1];
    let undecoded = &record["fields"]["entities"][0]["undecoded"];
    let hex = undecoded["hex"].as_str().unwrap().len() as u64 / 2;
    assert_eq!(undecoded["length"], 65_527);
    assert!((30_000..33_000).contains(&hex), "{hex}");
    assert_eq!(
        record["omitted"],
        serde_json::json!({"offset": 8 + hex, "fields": 0, "bytes": 65_527 - hex, "sprites": 0})
    );
    assert!(lines.iter().all(|l| l.len() < MAX_FIELDS_JSON + 2048));
    // rtnp text that is not JSON, whose escapes would take six times its size.
    let first = r#"{"type":"snapshot","epoch":1,"entities":[]}"#.as_bytes().to_vec();
    let text = [b"{".to_vec(), vec![1u8; 60_000]].concat();
    let frames = [first, text].map(|t| ipv4(&udp(&t, 4242, 41_000), 0, 0, false));
    let lines = export_lines(&raw_pcap(&frames, 65_535));
    let record = &datagram_records(&lines)[1];
    let shown = record["fields"]["text"].as_str().unwrap().len() as u64;
    assert!((10_000..11_000).contains(&shown), "{shown}");
    assert_eq!(
        record["omitted"],
        serde_json::json!({"offset": shown, "fields": 0, "bytes": 60_001 - shown, "sprites": 0})
    );
}

// ------------------------------------------------------------------------------------------------
// Valid pcapng that must be read
// ------------------------------------------------------------------------------------------------

/// A little-endian pcapng block of `kind` around `body` (padded to 4 bytes).
fn ng_block(kind: u32, body: &[u8]) -> Vec<u8> {
    let total = (12 + body.len().div_ceil(4) * 4) as u32;
    let mut out = kind.to_le_bytes().to_vec();
    out.extend(total.to_le_bytes());
    out.extend_from_slice(body);
    out.resize(8 + body.len().div_ceil(4) * 4, 0);
    out.extend(total.to_le_bytes());
    out
}

/// A section header whose comments (opt_comment, 60,000 bytes each at most) hold `comment` bytes.
fn ng_section(comment: usize) -> Vec<u8> {
    let mut body = vec![0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0];
    body.extend([0xff; 8]);
    let mut left = comment;
    while left > 0 {
        let n = left.min(60_000);
        body.extend(1u16.to_le_bytes());
        body.extend((n as u16).to_le_bytes());
        body.extend(std::iter::repeat_n(b'c', n));
        body.resize(body.len().div_ceil(4) * 4, 0);
        left -= n;
    }
    if comment > 0 {
        body.extend([0, 0, 0, 0]);
    }
    ng_block(0x0a0d_0d0a, &body)
}

/// A raw-IP interface, then an EPB on it for each of `packets`.
fn ng_packets(packets: &[Vec<u8>]) -> Vec<u8> {
    let mut out = ng_block(1, &[101, 0, 0, 0, 0, 0, 0, 0]);
    for (i, data) in packets.iter().enumerate() {
        let mut body = Vec::new();
        for v in [0, 0, i as u32 * 1000, data.len() as u32, data.len() as u32] {
            body.extend(v.to_le_bytes());
        }
        body.extend_from_slice(data);
        out.extend(ng_block(6, &body));
    }
    out
}

/// Three rtype datagrams of one conversation.
fn three_datagrams() -> Vec<Vec<u8>> {
    (0..3)
        .map(|tick| to_client(41_000, &rtype(2, 0x14, tick, &[0, 0], None)))
        .collect()
}

/// Frames and the capture findings of `bytes`, read through the pipeline.
fn read_findings(bytes: &[u8]) -> (u64, Vec<(u64, Rule)>) {
    let mut summary = Summary::default();
    let mut found = Collect::default();
    assert!(run(bytes, &mut found));
    assert!(run(bytes, &mut summary));
    let frames = summary.json()["capture"]["frames"].as_u64().unwrap();
    let capture: Vec<(u64, Rule)> = found
        .found
        .into_iter()
        .filter(|(_, r)| r.id().starts_with("capture."))
        .collect();
    (frames, capture)
}

/// pcapng blocks of any size up to the largest record accepted (16 MiB, far above real files)
/// are read wherever they are: a section header with 300 KB of comments at the start was "not a
/// capture file" (240 KB worked), and tshark reads it.
#[test]
fn large_pcapng_blocks_are_read() {
    let _alone = one_test_at_a_time();
    let packets = ng_packets(&three_datagrams());
    let first = [ng_section(300_000), packets.clone()].concat();
    // A second section of 1 MB of comments, and a 2 MB custom block, between packets.
    let custom = ng_block(0x0BAD, &[&[0u8, 0, 0, 0][..], &vec![7u8; 2 << 20]].concat());
    let later = [
        ng_section(0),
        packets.clone(),
        custom,
        ng_section(1_000_000),
        packets,
    ]
    .concat();
    for (name, bytes, frames) in [("first", first, 3), ("later", later, 6)] {
        let ((read, capture), peak) = measured(|| read_findings(&bytes));
        assert_eq!((read, capture), (frames, vec![]), "{name}");
        assert!(peak < 64 << 20, "{name}: {peak}");
        let path =
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("large-block-{name}.pcapng"));
        std::fs::write(&path, &bytes).unwrap();
        if let Ok(out) = Command::new("tshark").arg("-r").arg(&path).output() {
            assert!(
                out.status.success(),
                "{name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            // tshark lists the custom block too: count its packets.
            let udp = String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| l.contains(" UDP "))
                .count();
            assert_eq!(udp, frames as usize, "{name}");
        }
    }
    // Past the bound: one block longer than 16 MiB.
    let mut huge = [ng_section(0), ng_packets(&three_datagrams())].concat();
    huge.extend(ng_block(0x0BAD, &vec![0u8; MAX_RECORD_LEN]));
    // A custom block is no frame: the finding is at the last frame read.
    assert_eq!(read_findings(&huge), (3, vec![(3, Rule::CaptureCorrupt)]));
    let section = ng_section(0);
    let mut header = section.clone();
    header[4..8].copy_from_slice(&(MAX_RECORD_LEN as u32 + 4).to_le_bytes());
    let err = CaptureReader::from_read(Path::new("huge.pcapng"), Box::new(Cursor::new(header)))
        .err()
        .expect("refused");
    assert!(err.to_string().contains("exceeds the maximum"), "{err}");
}

/// A block whose framing is intact (its length the same at both ends) but whose contents
/// contradict it is skipped with a finding, and the packets after it are read: a Decryption
/// Secrets Block whose secrets are longer than the block stopped reading, and lost the rest.
#[test]
fn a_block_with_intact_framing_is_skipped() {
    let _alone = one_test_at_a_time();
    let datagrams = three_datagrams();
    let mut bytes = [ng_section(0), ng_packets(&datagrams[..1])].concat();
    let dsb_at = bytes.len() as u64;
    // TLS key log of 4,000 bytes announced, 16 present.
    let mut dsb = 0x544c_534bu32.to_le_bytes().to_vec();
    dsb.extend(4_000u32.to_le_bytes());
    dsb.extend([b'k'; 16]);
    bytes.extend(ng_block(0x0A, &dsb));
    let mut later = ng_packets(&datagrams[1..]);
    // The packets after it are on the same interface: drop the second IDB.
    later.drain(..20);
    bytes.extend(later);
    let (frames, capture) = read_findings(&bytes);
    assert_eq!(frames, 3);
    assert_eq!(capture, [(2, Rule::CaptureBlockSkipped)]);
    let filter = FilterOptions::default().build().unwrap();
    let mut out = Vec::new();
    assert!(run(&bytes, &mut Export::new(&mut out, false, filter)));
    let finding = String::from_utf8(out)
        .unwrap()
        .lines()
        .find(|l| l.contains("capture.block-skipped"))
        .unwrap()
        .to_string();
    assert!(
        finding.contains(&format!(
            "\"detail\":\"a Decryption Secrets Block at byte offset {dsb_at}\""
        )),
        "{finding}"
    );
}

#[test]
fn a_cut_holds_a_bit_per_frame_and_bounded_fragments() {
    let _alone = one_test_at_a_time();
    // 100,000 small datagrams, then 1,000 first fragments of 60 KB that never complete (60 MB,
    // were they all kept), then 50 datagrams in two fragments each: `-w` keeps every datagram's
    // frames, both fragments of each reassembled one, and holds one bit per frame and at most
    // the defragmenters' 4 MiB (the pipeline's, then the cut's own while it finds fragments),
    // besides the batches in flight.
    let small = server_datagram(&rtype(2, 0x10, 0, &[], None));
    let mut frames = vec![small; 100_000];
    let big = vec![0x5A; 60_000];
    frames.extend((0..1_000).map(|id| ipv4(&big, id as u16, 0, true)));
    for id in 1_000..1_050u16 {
        let whole = udp(&rtype(2, 0x10, 0, &[7; 80], None), 49_316, 41_000);
        frames.push(ipv4(&whole[..64], id, 0, true));
        frames.push(ipv4(&whole[64..], id, 64, false));
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("hostile-cut");
    std::fs::create_dir_all(&dir).unwrap();
    let (file, target) = (dir.join("in.pcap"), dir.join("cut.pcap"));
    std::fs::write(&file, raw_pcap(&frames, 65_535)).unwrap();
    drop(frames);
    let filter = FilterOptions::default().build().expect("the empty filter");
    let none = rtype_inspect::report::cut::NoReport::default();
    let (written, peak) = measured(|| {
        rtype_inspect::report::cut::write(&file, &reading(), filter, &target, none).is_ok()
    });
    assert!(written);
    let mut reader = CaptureReader::open(&target).unwrap();
    let mut kept = 0u64;
    reader.for_each_frame(|_| kept += 1).unwrap();
    assert_eq!(kept, 100_000 + 2 * 50);
    assert!(peak < 20 << 20, "peak {peak} bytes");
}
