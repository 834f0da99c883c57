//! The generated Wireshark Lua dissector: checked in up to date, and run by tshark over the real
//! captures, over one datagram per rule of the catalog, and over garbage. The tshark tests skip
//! (with a message) when `tshark` is not on PATH; CI installs Debian's `tshark` package.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use rtype_inspect::proto::profile::Profile;
use rtype_inspect::report::lua::generate;

const MAGIC: [u8; 4] = [0xA3, 0x5F, 0xC8, 0x1D];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn dissector() -> PathBuf {
    root().join("wireshark/rtype.lua")
}

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures").join(name)
}

/// A scratch file path unique to this test process.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lua_dissector");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn generated_dissector_is_checked_in() {
    let generated = generate(&Profile::document());
    let path = dissector();
    if std::env::var_os("RTYPE_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "wireshark/rtype.lua is not the generator's output for the document profile; regenerate it with\n    \
         cargo run -- dissector -o wireshark/rtype.lua\n(or: RTYPE_BLESS=1 cargo test --test lua_dissector generated_dissector_is_checked_in)"
    );
}

#[test]
fn generated_lua_uses_only_the_bit_module() {
    let lua = generate(&Profile::document());
    for line in lua.lines().map(|l| l.split("--").next().unwrap_or("")) {
        assert!(!line.contains("bit32"), "bit32 is not in Wireshark 4.4: {line}");
        for op in [" & ", " | ", " // ", " >> ", " << ", " ~ "] {
            assert!(!line.contains(op), "Lua 5.3 operator `{}` breaks Lua 5.2: {line}", op.trim());
        }
    }
}

// ------------------------------------------------------------------------------------------------
// tshark harness
// ------------------------------------------------------------------------------------------------

fn have_tshark(test: &str) -> bool {
    let ok = Command::new("tshark").arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipping {test}: tshark is not on PATH (apt-get install tshark)");
    }
    ok
}

/// Runs tshark with the Lua script over `capture`; fails on any Lua error. Returns stdout.
fn tshark(script: &Path, capture: &Path, args: &[&str]) -> String {
    let output = Command::new("tshark")
        .arg("-n")
        .arg("-r")
        .arg(capture)
        .arg("-X")
        .arg(format!("lua_script:{}", script.display()))
        .args(args)
        .output()
        .expect("tshark runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "tshark failed: {stderr}");
    for text in [&stdout, &stderr] {
        assert!(!text.contains("Lua Error"), "Lua error while dissecting {}:\n{}", capture.display(), lua_lines(text));
        assert!(!text.contains("Lua:"), "Lua error while loading {}:\n{}", script.display(), lua_lines(text));
    }
    assert!(
        !stdout.contains("rtype.malformed"),
        "the dissector failed on {}:\n{}",
        capture.display(),
        lua_lines(&stdout)
    );
    stdout
}

fn lua_lines(text: &str) -> String {
    text.lines().filter(|l| l.contains("Lua") || l.contains("malformed")).take(20).collect::<Vec<_>>().join("\n")
}

/// Rows of `-T fields` output, tab-separated.
fn rows(stdout: &str) -> Vec<Vec<String>> {
    stdout.lines().map(|l| l.split('\t').map(str::to_string).collect()).collect()
}

/// A number as `-T fields` prints it (decimal or 0x hex), or, should a tshark print value
/// strings instead, the value `names` gives it.
fn number(text: &str, names: impl Fn(&str) -> Option<u8>) -> u8 {
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u8::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    };
    parsed.or_else(|| names(text)).unwrap_or_else(|| panic!("not a value: {text:?}"))
}

/// A message type as `-T fields` prints it.
fn msg_code(text: &str) -> u8 {
    use rtype_inspect::proto::rtype::MESSAGES;
    number(text, |t| MESSAGES.iter().find(|m| m.name == t).map(|m| m.code))
}

/// Message counts per (packet type, message type) from rows whose columns 1 and 2 are
/// `rtype.packet_type` and `rtype.msg_type`.
fn message_counts(rows: &[Vec<String>]) -> BTreeMap<(u8, u8), usize> {
    use rtype_inspect::proto::rtype::PACKET_TYPES;
    let mut counts = BTreeMap::new();
    for row in rows {
        let packet = number(&row[1], |t| PACKET_TYPES.iter().find(|n| n.name == t).map(|n| n.value as u8));
        let msg = msg_code(&row[2]);
        *counts.entry((packet, msg)).or_default() += 1;
    }
    counts
}

const FIELDS: &[&str] = &[
    "frame.number",
    "rtype.packet_type",
    "rtype.msg_type",
    "rtype.sequence",
    "rtype.tick",
    "rtype.payload_len",
    "rtype.crc.status",
    "rtype.header_len",
    "rtype.levelinit.archetype_count",
    "rtype.levelinit.archetype.sprite_id",
    "rtype.levelinit.boss.name",
    "rtype.reassembled.entity_count",
    "rtype.chunk.reassembled_in",
];

fn field_args(extra: &[&'static str]) -> Vec<&'static str> {
    let mut args = vec!["-T", "fields", "-E", "occurrence=a"];
    for f in FIELDS {
        args.extend(["-e", f]);
    }
    args.extend(extra);
    args
}

fn col(name: &str) -> usize {
    FIELDS.iter().position(|f| *f == name).unwrap()
}

// ------------------------------------------------------------------------------------------------
// Real captures
// ------------------------------------------------------------------------------------------------

#[test]
fn tshark_decodes_the_17_byte_capture() {
    if !have_tshark("tshark_decodes_the_17_byte_capture") {
        return;
    }
    let capture = fixture("reference-17byte-1client.pcap");
    // Two passes, as Wireshark does: the chunk links to the completing frame need the second.
    let rows = rows(&tshark(&dissector(), &capture, &field_args(&["-2"])));
    assert_eq!(rows.len(), 3202);
    let expected: BTreeMap<(u8, u8), usize> = [
        ((1, 0x01), 1),
        ((1, 0x02), 1),
        ((1, 0x03), 1),
        ((1, 0x04), 15),
        ((1, 0x05), 900),
        ((1, 0x06), 1),
        ((1, 0x07), 1),
        ((2, 0x10), 1),
        ((2, 0x11), 1),
        ((2, 0x13), 15),
        ((2, 0x14), 874),
        ((2, 0x15), 1),
        ((2, 0x1D), 557),
        ((2, 0x1E), 806),
        ((2, 0x21), 26),
        ((2, 0x30), 1),
    ]
    .into();
    assert_eq!(message_counts(&rows), expected);
    assert!(rows.iter().all(|r| r[col("rtype.crc.status")] == "1"), "CRC failures");
    assert!(rows.iter().all(|r| r[col("rtype.header_len")] == "17"));

    let level_init: Vec<_> = rows.iter().filter(|r| !r[col("rtype.levelinit.archetype_count")].is_empty()).collect();
    assert_eq!(level_init.len(), 1);
    assert_eq!(level_init[0][col("rtype.levelinit.archetype_count")], "17");
    let sprites: Vec<_> = level_init[0][col("rtype.levelinit.archetype.sprite_id")].split(',').collect();
    assert_eq!((sprites.len(), sprites[0]), (17, "player_ship"));
    assert_eq!(level_init[0][col("rtype.levelinit.boss.name")], "boss_alpha");

    let reassembled = rows.iter().filter(|r| !r[col("rtype.reassembled.entity_count")].is_empty()).count();
    assert_eq!(reassembled, 16, "complete chunk sets");
    // Every chunk of a multi-chunk set but the completing one links to the completing frame.
    let linked: Vec<_> = rows.iter().filter(|r| !r[col("rtype.chunk.reassembled_in")].is_empty()).collect();
    assert_eq!(linked.len(), 26 - 16);
    for row in linked {
        let target: usize = row[col("rtype.chunk.reassembled_in")].parse().unwrap();
        let completing = &rows[target - 1];
        assert_eq!(msg_code(&completing[col("rtype.msg_type")]), 0x21);
        assert!(!completing[col("rtype.reassembled.entity_count")].is_empty());
        assert_eq!(completing[col("rtype.tick")], row[col("rtype.tick")]);
    }
}

#[test]
fn tshark_decodes_the_15_byte_capture() {
    if !have_tshark("tshark_decodes_the_15_byte_capture") {
        return;
    }
    let capture = fixture("reference-15byte-levelevents.pcap");
    let rows = rows(&tshark(&dissector(), &capture, &field_args(&[])));
    assert_eq!(rows.len(), 3489);
    let expected: BTreeMap<(u8, u8), usize> = [
        ((1, 0x01), 1),
        ((1, 0x02), 1),
        ((1, 0x03), 1),
        ((1, 0x04), 20),
        ((1, 0x05), 1200),
        ((1, 0x06), 1),
        ((1, 0x07), 1),
        ((2, 0x10), 1),
        ((2, 0x11), 1),
        ((2, 0x13), 20),
        ((2, 0x14), 1201),
        ((2, 0x15), 1),
        ((2, 0x1D), 408),
        ((2, 0x1E), 627),
        ((2, 0x30), 1),
        ((2, 0x32), 4),
    ]
    .into();
    assert_eq!(message_counts(&rows), expected);
    assert!(rows.iter().all(|r| r[col("rtype.crc.status")] == "1"), "CRC failures");
    assert!(rows.iter().all(|r| r[col("rtype.header_len")] == "15"), "the older header is recognised");
    assert!(rows.iter().all(|r| r[col("rtype.reassembled.entity_count")].is_empty()));
}

#[test]
fn tshark_expert_infos_name_their_rules() {
    if !have_tshark("tshark_expert_infos_name_their_rules") {
        return;
    }
    let out = tshark(&dissector(), &fixture("reference-15byte-levelevents.pcap"), &["-q", "-z", "expert"]);
    for id in
        ["rtype.header.15-byte", "rtype.pong.empty", "rtype.levelinit.boss-trailer", "rtype.snapshot.undefined-bit"]
    {
        assert!(out.contains(&format!("[{id}] ")), "no expert info for {id} in:\n{out}");
    }
    assert!(!out.contains("[rtype.crc.mismatch]"));
    assert!(out.contains("Errors (3489)"), "one 15-byte header error per datagram:\n{out}");
}

/// With the snapshot profile of each capture's build, every snapshot decodes without a finding.
#[test]
fn tshark_with_the_captures_profiles_decodes_every_snapshot() {
    if !have_tshark("tshark_with_the_captures_profiles_decodes_every_snapshot") {
        return;
    }
    for (capture, profile) in [
        ("reference-17byte-1client.pcap", "reference-17byte"),
        ("reference-15byte-levelevents.pcap", "reference-15byte"),
    ] {
        let profile = Profile::load(&root().join(format!("samples/profiles/{profile}.toml"))).unwrap();
        let script = scratch(&format!("rtype-{}.lua", profile.name));
        std::fs::write(&script, generate(&profile)).unwrap();
        let out = tshark(&script, &fixture(capture), &["-q", "-z", "expert"]);
        for id in [
            "rtype.message.truncated",
            "rtype.message.trailing",
            "rtype.snapshot.undefined-bit",
            "rtype.snapshot.reserved-bit",
            "rtype.compress.lz4",
            "rtype.crc.mismatch",
        ] {
            assert!(!out.contains(&format!("[{id}]")), "{capture} with profile {}: {id}\n{out}", profile.name);
        }
        assert!(out.contains("[rtype.pong.empty]"));
    }
}

// ------------------------------------------------------------------------------------------------
// Synthetic captures: one datagram per rule, and garbage
// ------------------------------------------------------------------------------------------------

/// A pcap of raw IPv4/UDP packets (link type 101), one per (source port, destination port, payload).
fn write_pcap(path: &Path, packets: &[(u16, u16, Vec<u8>)]) {
    let mut out = Vec::new();
    out.extend(0xA1B2_C3D4u32.to_le_bytes());
    out.extend(2u16.to_le_bytes());
    out.extend(4u16.to_le_bytes());
    out.extend([0u8; 8]);
    out.extend(65535u32.to_le_bytes());
    out.extend(101u32.to_le_bytes());
    for (i, (sport, dport, payload)) in packets.iter().enumerate() {
        let total = 20 + 8 + payload.len();
        let mut ip =
            vec![0x45, 0, (total >> 8) as u8, total as u8, 0, 0, 0, 0, 64, 17, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1];
        let mut sum: u32 = ip.chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum();
        while sum > 0xFFFF {
            sum = (sum & 0xFFFF) + (sum >> 16);
        }
        ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
        let udp_len = (8 + payload.len()) as u16;
        let mut frame = ip;
        frame.extend(sport.to_be_bytes());
        frame.extend(dport.to_be_bytes());
        frame.extend(udp_len.to_be_bytes());
        frame.extend([0, 0]);
        frame.extend(payload);
        out.extend((i as u32).to_le_bytes());
        out.extend(0u32.to_le_bytes());
        out.extend((frame.len() as u32).to_le_bytes());
        out.extend((frame.len() as u32).to_le_bytes());
        out.extend(frame);
    }
    std::fs::write(path, out).unwrap();
}

fn with_crc(mut d: Vec<u8>) -> Vec<u8> {
    let crc = crc32fast::hash(&d);
    d.extend(crc.to_be_bytes());
    d
}

/// A 17-byte-header datagram with a correct CRC.
fn dgram(version: u8, ptype: u8, mtype: u8, tick: u32, payload: &[u8], orig: u16) -> Vec<u8> {
    let mut d = MAGIC.to_vec();
    d.extend([version, ptype, mtype]);
    d.extend(7u16.to_be_bytes());
    d.extend(tick.to_be_bytes());
    d.extend((payload.len() as u16).to_be_bytes());
    d.extend(orig.to_be_bytes());
    d.extend(payload);
    with_crc(d)
}

fn client(mtype: u8, payload: &[u8]) -> Vec<u8> {
    dgram(1, 1, mtype, 0, payload, 0)
}

fn server(mtype: u8, payload: &[u8]) -> Vec<u8> {
    dgram(1, 2, mtype, 0, payload, 0)
}

fn compressed(mtype: u8, plain: &[u8], orig: u16) -> Vec<u8> {
    dgram(0x81, 2, mtype, 0, &lz4_flex::block::compress(plain), orig)
}

fn chunk(tick: u32, total: u16, index: u16, entities: &[(u32, u16, &[u8])]) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend(total.to_be_bytes());
    p.extend(index.to_be_bytes());
    p.extend(snapshot_body(entities));
    dgram(1, 2, 0x21, tick, &p, 0)
}

fn snapshot_body(entities: &[(u32, u16, &[u8])]) -> Vec<u8> {
    let mut p = (entities.len() as u16).to_be_bytes().to_vec();
    for (id, mask, fields) in entities {
        p.extend(id.to_be_bytes());
        p.extend(mask.to_be_bytes());
        p.extend(*fields);
    }
    p
}

fn str8(s: &[u8]) -> Vec<u8> {
    let mut v = vec![s.len() as u8];
    v.extend(s);
    v
}

/// One datagram per per-datagram rule, with the rule it must raise.
fn rule_datagrams() -> Vec<(&'static str, Vec<u8>)> {
    let f = |x: f32| x.to_be_bytes();
    let input = |flags: u16, x: f32| {
        let mut p = 1u32.to_be_bytes().to_vec();
        p.extend(flags.to_be_bytes());
        p.extend(f(x));
        p.extend(f(0.0));
        p.extend(f(0.0));
        client(0x05, &p)
    };
    let old15 = {
        let mut d = MAGIC.to_vec();
        d.extend([1, 1, 0x01, 0, 1, 0, 0, 0, 0, 0, 0]);
        with_crc(d)
    };
    let plain: Vec<u8> = snapshot_body(&[(1, 0x0001, &[3u8][..]); 30]);
    let incompressible: Vec<u8> = (0..100u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let bad_crc = {
        let mut d = client(0x01, &[]);
        *d.last_mut().unwrap() ^= 0xFF;
        d
    };
    let bad_len = {
        let mut d = MAGIC.to_vec();
        d.extend([1, 1, 0x04, 0, 1, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 1]);
        with_crc(d)
    };
    let mut level_init = vec![0, 1, 0, 0, 0, 42];
    level_init.extend(str8(b"bg"));
    level_init.extend(str8(b"music"));
    level_init.push(0); // no archetypes
    level_init.push(1); // one boss
    level_init.extend(20u16.to_be_bytes());
    level_init.extend(str8(b"boss"));
    level_init.extend(f(2.5));
    level_init.extend(f(2.5));
    let mut scroll = vec![1, 2];
    scroll.extend(f(1.0));
    scroll.push(2);
    for t in [2.0f32, 1.0] {
        scroll.extend(f(t));
        scroll.extend(f(0.5));
    }
    let mut gate = vec![5];
    gate.extend(str8(b"gate-1"));
    gate.extend([0xEE, 0xEE]);
    vec![
        ("rtype.datagram.short", vec![0xA3, 0x5F, 0xC8, 0x1D, 1, 1]),
        ("rtype.header.15-byte", old15),
        ("rtype.header.version", dgram(2, 1, 0x01, 0, &[], 0)),
        ("rtype.header.packet-type", dgram(1, 3, 0x01, 0, &[], 0)),
        ("rtype.header.payload-len", bad_len),
        ("rtype.crc.mismatch", bad_crc),
        ("rtype.compress.small", compressed(0x14, &snapshot_body(&[(1, 1, &[3]), (2, 1, &[3])]), 16)),
        ("rtype.compress.not-smaller", dgram(0x81, 2, 0x19, 0, &lz4_flex::block::compress(&incompressible), 100)),
        ("rtype.compress.orig-size-set", dgram(1, 1, 0x01, 0, &[], 5)),
        ("rtype.compress.lz4", dgram(0x81, 2, 0x14, 0, &[0xF0, 1, 2, 3], 200)),
        ("rtype.compress.orig-size", compressed(0x14, &plain, plain.len() as u16 - 1)),
        ("rtype.message.unknown-type", server(0x99, &[1, 2, 3])),
        ("rtype.message.direction", dgram(1, 2, 0x04, 0, &[0, 0, 0, 1], 0)),
        ("rtype.message.truncated", server(0x14, &snapshot_body(&[(1, 0x0001, &[][..]); 2]))),
        ("rtype.message.trailing", server(0x32, &gate)),
        ("rtype.message.size", client(0x04, &[0, 0, 1])),
        ("rtype.pong.empty", server(0x13, &[])),
        ("rtype.levelinit.boss-trailer", server(0x30, &level_init)),
        ("rtype.string.utf8", server(0x19, &str8(&[0x66, 0xFF, 0xC0, 0x80]))),
        ("rtype.snapshot.reserved-bit", server(0x14, &snapshot_body(&[(9, 0x0081, &[3, 1, 2, 3, 4])]))),
        ("rtype.snapshot.undefined-bit", server(0x14, &snapshot_body(&[(9, 0x1000, &[1, 2, 3, 4])]))),
        ("rtype.input.non-finite", input(0x0001, f32::NAN)),
        ("rtype.input.unused-bits", input(0x8001, 1.0)),
        ("rtype.reason.unknown", server(0x17, &[0x77])),
        ("rtype.levelevent.unknown-type", server(0x32, &[9, 1, 2, 3])),
        ("rtype.levelevent.unsorted-keyframes", server(0x32, &scroll)),
        ("rtype.leveltransition.sent", server(0x31, &[])),
        ("rtype.chunk.total-zero", chunk(50, 0, 0, &[])),
        ("rtype.chunk.index-out-of-range", chunk(51, 2, 5, &[])),
        ("rtype.chunk.duplicate", chunk(52, 3, 0, &[(1, 1, &[3])])),
        ("rtype.chunk.duplicate", chunk(52, 3, 0, &[(1, 1, &[3])])),
        ("rtype.chunk.total-mismatch", chunk(53, 2, 0, &[(1, 1, &[3])])),
        ("rtype.chunk.total-mismatch", chunk(53, 3, 1, &[(2, 1, &[3])])),
    ]
}

#[test]
fn tshark_raises_every_datagram_rule() {
    if !have_tshark("tshark_raises_every_datagram_rule") {
        return;
    }
    let datagrams = rule_datagrams();
    let mut packets: Vec<_> = datagrams.iter().map(|(_, d)| (40000, 40001, d.clone())).collect();
    // A chunk set completed over two datagrams, out of order.
    packets.push((40000, 40001, chunk(60, 2, 1, &[(2, 0x0003, &[3, 0x42, 0, 0, 0])])));
    packets.push((40000, 40001, chunk(60, 2, 0, &[(1, 0x0001, &[4])])));
    let path = scratch("rules.pcap");
    write_pcap(&path, &packets);
    let out = tshark(&dissector(), &path, &["-V", "-P", "-z", "expert"]);
    for (id, _) in &datagrams {
        assert!(out.contains(&format!("[{id}] ")), "no expert info [{id}]");
    }
    let infos = out.lines().filter(|l| l.contains("[Expert Info")).count();
    assert!(infos >= datagrams.len());
    assert!(out.contains("Reassembled snapshot (2 entities from 2 chunks)"), "{out}");
    assert!(out.contains("SERVER_SNAPSHOT_CHUNK seq=7 tick=60 chunk 1/2 [reassembled]"), "{out}");
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Random datagrams starting with the magic: truncated headers, huge lengths, random payloads
/// behind consistent headers, bad LZ4, the older header, chunk sets; on the server port or not.
fn garbage_datagrams(seed: u64, count: usize) -> Vec<(u16, u16, Vec<u8>)> {
    const CODES: &[u8] = &[
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1A,
        0x1B, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x21, 0x30, 0x31, 0x32, 0x00, 0xFF,
    ];
    let mut rng = Rng(seed);
    let mut packets = Vec::new();
    for i in 0..count {
        let code = CODES[rng.below(CODES.len())];
        let ptype = [1u8, 2, 0, 7][rng.below(4)];
        let len = rng.below(90);
        let datagram = match i % 8 {
            // The magic and random bytes: truncated headers, wrong lengths.
            0 => {
                let mut d = MAGIC.to_vec();
                let n = rng.below(40);
                d.extend(rng.bytes(n));
                d
            }
            // A header announcing a huge payload.
            1 => {
                let mut d = MAGIC.to_vec();
                d.extend([rng.next() as u8, ptype, code, 0, 1, 0, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF]);
                d.extend(rng.bytes(len));
                d
            }
            // Random payloads behind a consistent header and CRC: the message walker's turn.
            2 | 3 => dgram(1, ptype, code, rng.next() as u32, &rng.bytes(len), 0),
            // Garbage LZ4 with a consistent header and CRC.
            4 => dgram(0x81, ptype, code, 0, &rng.bytes(len), rng.next() as u16),
            // Valid LZ4 with one byte corrupted.
            5 => {
                let plain = {
                    let mut p = rng.bytes(len);
                    p.extend(vec![rng.next() as u8; 80]);
                    p
                };
                let mut packed = lz4_flex::block::compress(&plain);
                let at = rng.below(packed.len());
                packed[at] = rng.next() as u8;
                dgram(0x81, 2, code, 0, &packed, plain.len() as u16)
            }
            // The older 15-byte header, random payload, correct CRC.
            6 => {
                let payload = rng.bytes(len);
                let mut d = MAGIC.to_vec();
                d.extend([1, ptype, code, 0, 2, 0, 0, 0, 3]);
                d.extend((payload.len() as u16).to_be_bytes());
                d.extend(payload);
                with_crc(d)
            }
            // Snapshot chunks with random totals and indexes, from few ticks.
            _ => {
                let mut p = (rng.below(4) as u16).to_be_bytes().to_vec();
                p.extend((rng.below(4) as u16).to_be_bytes());
                p.extend(rng.bytes(len));
                dgram(1, 2, 0x21, rng.below(3) as u32, &p, 0)
            }
        };
        let (sport, dport) = if i % 3 == 0 { (50010, 41000) } else { (41000 + (i % 5) as u16, 42000) };
        packets.push((sport, dport, datagram));
    }
    packets
}

#[test]
fn tshark_survives_garbage() {
    if !have_tshark("tshark_survives_garbage") {
        return;
    }
    let mut packets = garbage_datagrams(0x5EED_1234_ABCD_0001, 400);
    // An LZ4 bomb (more than 65535 bytes once decompressed) and a large valid payload.
    packets.push((41000, 42000, dgram(0x81, 2, 0x14, 0, &lz4_flex::block::compress(&vec![0u8; 70_000]), 0xFFFF)));
    let big = snapshot_body(&vec![(1u32, 0x0001u16, &[3u8][..]); 9000]);
    packets.push((41000, 42000, compressed(0x14, &big, big.len() as u16)));
    // Traffic on the port that is not rtype is left to other dissectors.
    packets.push((50010, 41000, b"not rtype at all".to_vec()));
    let path = scratch("garbage.pcap");
    write_pcap(&path, &packets);

    let out = tshark(&dissector(), &path, &["-V"]);
    let dissected = out.lines().filter(|l| l.starts_with("R-Type UDP Protocol")).count();
    assert_eq!(dissected, packets.len() - 1, "every datagram with the magic is dissected");
    assert!(out.contains("[rtype.compress.lz4]"));
    let fields = tshark(&dissector(), &path, &["-T", "fields", "-e", "rtype.snapshot.entity_count"]);
    let large = fields.lines().nth(packets.len() - 2).unwrap();
    assert_eq!(large, "9000", "the large compressed snapshot decodes");
}

// ------------------------------------------------------------------------------------------------
// Parity with the Rust decoder
// ------------------------------------------------------------------------------------------------

/// UDP payloads of a pcap with Ethernet (1) or raw IPv4 (101) links, in frame order.
fn udp_payloads(path: &Path) -> Vec<Vec<u8>> {
    let data = std::fs::read(path).unwrap();
    assert_eq!(&data[..4], &0xA1B2_C3D4u32.to_le_bytes(), "little-endian microsecond pcap");
    let link = u32::from_le_bytes(data[20..24].try_into().unwrap());
    let mut at = 24;
    let mut out = Vec::new();
    while at + 16 <= data.len() {
        let len = u32::from_le_bytes(data[at + 8..at + 12].try_into().unwrap()) as usize;
        let frame = &data[at + 16..at + 16 + len];
        at += 16 + len;
        let ip = match link {
            1 => &frame[14..],
            101 => frame,
            other => panic!("link type {other}"),
        };
        let udp = &ip[usize::from(ip[0] & 0x0F) * 4..];
        let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
        out.push(udp[8..udp_len].to_vec());
    }
    out
}

/// The rules the Rust datagram and message layers raise for one datagram, sorted.
fn rust_rules(bytes: &[u8], profile: &Profile) -> Vec<String> {
    use rtype_inspect::datagram::rtype::{parse, ENDIAN, MAX_PAYLOAD, MESSAGE_RULES};
    use rtype_inspect::message::{decode_message, NoFields};
    let mut scratch = vec![0u8; MAX_PAYLOAD];
    let mut findings = Vec::new();
    if let Some(d) = parse(bytes, &mut scratch, &mut findings) {
        if let (Some(message), Some(payload)) = (d.message, d.payload(&scratch)) {
            let payload = payload.to_vec();
            decode_message(
                message,
                &payload,
                d.payload_at,
                ENDIAN,
                profile,
                &MESSAGE_RULES,
                &mut NoFields,
                &mut findings,
            );
        }
    }
    let mut ids: Vec<String> = findings.iter().map(|f| f.rule.id().to_string()).collect();
    ids.sort();
    ids
}

/// The rule IDs of each frame's expert infos, as the Lua dissector raises them, sorted; the
/// chunk rules and the reassembled snapshots' findings are left out (the Rust decoder raises
/// those in its session layer).
fn lua_rules(script: &Path, capture: &Path) -> Vec<Vec<String>> {
    let out = tshark(script, capture, &["-T", "fields", "-E", "aggregator=\u{1}", "-e", "_ws.expert.message"]);
    out.lines()
        .map(|line| {
            let mut ids: Vec<String> = line
                .split('\u{1}')
                .filter(|m| !m.contains("(in the reassembled snapshot"))
                .filter_map(|m| m.strip_prefix('[').and_then(|m| m.split(']').next()))
                .filter(|id| id.starts_with("rtype.") && !id.starts_with("rtype.chunk."))
                .map(str::to_string)
                .collect();
            ids.sort();
            ids
        })
        .collect()
}

fn assert_parity(script: &Path, capture: &Path, profile: &Profile) {
    let payloads = udp_payloads(capture);
    let lua = lua_rules(script, capture);
    assert_eq!(lua.len(), payloads.len());
    let mut differences = Vec::new();
    for (i, (payload, lua)) in payloads.iter().zip(&lua).enumerate() {
        if !payload.starts_with(&MAGIC) {
            continue;
        }
        let rust = rust_rules(payload, profile);
        if rust != *lua {
            differences.push(format!("frame {}: rust {rust:?}, lua {lua:?}", i + 1));
        }
    }
    assert!(
        differences.is_empty(),
        "{}: {} frames differ:\n{}",
        capture.display(),
        differences.len(),
        differences[..differences.len().min(20)].join("\n")
    );
}

#[test]
fn tshark_raises_the_rules_the_rust_decoder_raises() {
    if !have_tshark("tshark_raises_the_rules_the_rust_decoder_raises") {
        return;
    }
    let document = Profile::document();
    let rules = scratch("parity-rules.pcap");
    write_pcap(&rules, &rule_datagrams().into_iter().map(|(_, d)| (40000, 40001, d)).collect::<Vec<_>>());
    assert_parity(&dissector(), &rules, &document);
    let garbage = scratch("parity-garbage.pcap");
    write_pcap(&garbage, &garbage_datagrams(0xFACE_B00C, 1500));
    assert_parity(&dissector(), &garbage, &document);
    let profile = Profile::load(&root().join("samples/profiles/reference-17byte.toml")).unwrap();
    let script = scratch("parity-17byte.lua");
    std::fs::write(&script, generate(&profile)).unwrap();
    assert_parity(&script, &fixture("reference-17byte-1client.pcap"), &profile);
    assert_parity(&script, &garbage, &profile);
    assert_parity(&dissector(), &fixture("reference-15byte-levelevents.pcap"), &document);
}
