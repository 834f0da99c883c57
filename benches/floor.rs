//! The floor: the least work any decoder of the benchmark traffic must do, on one thread, written
//! as plainly as it can be, to compare the crate's pipeline with. It reads a legacy
//! pcap file in 256 KiB reads and hops from record to record in the buffer (no copy per frame),
//! parses Ethernet/IPv4/UDP, checks the rtype header and its CRC, decompresses LZ4 payloads with
//! lz4_flex's safe block decoder, and walks each message's fields with hand-written straight-line
//! code, summing a few of them so that nothing is optimised away. It uses none of the crate's
//! decoding, only the description's constants (magic, header offsets, message codes).
//!
//! Run with `cargo bench --bench floor -- FILE [--runs N]`. It prints what it counted, then the
//! CPU time of each pass (user + system, `getrusage`) and its nanoseconds per datagram.
//!
//! With `--json`, it is the floor of `export`: each datagram it walks is also written to
//! standard output as the NDJSON record `export` writes for it (the same keys and values, about
//! the same bytes), by straight-line code per message type ([`Json`]); what it counted then goes
//! to standard error.
//!
//! Only what the benchmark captures need (`rtype-inspect generate --large N`): legacy pcap
//! (either byte order, micro- or nanosecond), Ethernet with at most one VLAN tag, unfragmented
//! IPv4, the 17-byte header. Anything else is counted and skipped; nothing panics on any input.

use std::fs::File;
use std::io::{self, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rtype_inspect::proto::rtype::{
    COMPRESSED_BIT, CRC_LEN, HEADER, HEADER_LEN, MAGIC, MESSAGES, PACKET_CLIENT, PACKET_SERVER,
    VERSION,
};
use rtype_inspect::proto::schema::field_range;
use rtype_inspect::proto::Role;

/// Bytes asked of the file per read.
const READ: usize = 256 * 1024;
/// Largest record kept whole: tcpdump's largest snapshot length. Longer ones are skipped.
const MAX_FRAME: usize = 262_144;
const RECORD_HEADER: usize = 16;
const FILE_HEADER: usize = 24;
const LINKTYPE_ETHERNET: u32 = 1;

const VERSION_BYTE: usize = field_range(HEADER, Role::VersionByte).start;
const PACKET_TYPE: usize = field_range(HEADER, Role::PacketType).start;
const MSG_TYPE: usize = field_range(HEADER, Role::MessageType).start;
const SEQUENCE: usize = field_range(HEADER, Role::Sequence).start;
const TICK: usize = field_range(HEADER, Role::Tick).start;
const PAYLOAD_LEN: Range<usize> = field_range(HEADER, Role::PayloadLen);
const ORIG_SIZE: Range<usize> = field_range(HEADER, Role::OrigSize);

/// A message's code, by its short name in the description (a typo fails the build).
const fn code(short: &str) -> u8 {
    let mut i = 0;
    while i < MESSAGES.len() {
        let (a, b) = (MESSAGES[i].short.as_bytes(), short.as_bytes());
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return MESSAGES[i].code;
            }
        }
        i += 1;
    }
    panic!("no such message")
}
const PING: u8 = code("ping");
const INPUT: u8 = code("input");
const ACK: u8 = code("ack");
const PONG: u8 = code("pong");
const SNAPSHOT: u8 = code("snapshot");
const SERVER_ACK: u8 = code("server_ack");
const SPAWN: u8 = code("entity_spawn");
const DESTROYED: u8 = code("entity_destroyed");
const CHUNK: u8 = code("snapshot_chunk");

/// Snapshot mask bits (001 §6.2): the widths of bits 0-6 and 9 are known; any other bit set
/// leaves the rest of the snapshot undecodable.
const KNOWN_BITS: u16 = 0x027F;

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn bef32(b: &[u8], at: usize) -> Option<f32> {
    be32(b, at).map(f32::from_bits)
}

/// What one pass counted and summed.
#[derive(Default)]
struct Tally {
    records: u64,
    /// Records that are not Ethernet/IPv4/UDP (or are cut short, or too long to keep).
    not_udp: u64,
    /// UDP payloads without the rtype magic or too short for header and footer.
    not_rtype: u64,
    /// rtype datagrams whose header does not parse (length, version, packet type).
    bad_header: u64,
    bad_crc: u64,
    bad_lz4: u64,
    /// Datagrams checked (CRC good, payload at hand).
    datagrams: u64,
    compressed: u64,
    /// Decompressed payloads whose size differs from the header's Orig. Size.
    orig_size_mismatch: u64,
    /// Messages whose fields did not walk to the payload's end (truncated, trailing, unknown bit).
    bad_walk: u64,
    /// Messages of types the benchmark traffic sends once per client (lobby, level), not walked.
    not_walked: u64,
    by_type: ByType,
    /// Fields read, header included.
    fields: u64,
    entities: u64,
    entity_id_sum: u64,
    health_sum: u64,
    input_flags_sum: u64,
    client_time_sum: u64,
    position_sum: f64,
    /// `--json`: where each datagram checked is written.
    json: Option<Json>,
}

/// Datagrams checked, by message code.
struct ByType([u64; 256]);

impl Default for ByType {
    fn default() -> ByType {
        ByType([0; 256])
    }
}

impl Tally {
    fn frame(&mut self, ts_nanos: i64, frame: &[u8], scratch: &mut [u8]) {
        self.records += 1;
        match udp_payload(frame) {
            Some((ends, payload)) => self.datagram(Meta { ts_nanos, ends }, payload, scratch),
            None => self.not_udp += 1,
        }
    }

    /// The rtype header, the CRC footer, LZ4, then the message's fields.
    fn datagram(&mut self, meta: Meta, d: &[u8], scratch: &mut [u8]) {
        if d.len() < HEADER_LEN + CRC_LEN || d[..MAGIC.len()] != MAGIC {
            self.not_rtype += 1;
            return;
        }
        let body_end = d.len() - CRC_LEN;
        let announced = be16(d, PAYLOAD_LEN.start).unwrap_or(0) as usize;
        if announced != body_end - HEADER_LEN
            || d[VERSION_BYTE] & !COMPRESSED_BIT != VERSION
            || !matches!(d[PACKET_TYPE], PACKET_CLIENT | PACKET_SERVER)
        {
            self.bad_header += 1;
            return;
        }
        if be32(d, body_end) != Some(crc32fast::hash(&d[..body_end])) {
            self.bad_crc += 1;
            return;
        }
        let wire = &d[HEADER_LEN..body_end];
        let payload = if d[VERSION_BYTE] & COMPRESSED_BIT != 0 {
            match lz4_flex::block::decompress_into(wire, scratch) {
                Ok(n) => {
                    self.compressed += 1;
                    if Some(n as u16) != be16(d, ORIG_SIZE.start) {
                        self.orig_size_mismatch += 1;
                    }
                    &scratch[..n]
                }
                Err(_) => {
                    self.bad_lz4 += 1;
                    return;
                }
            }
        } else {
            wire
        };
        self.datagrams += 1;
        self.fields += 8;
        let code = d[MSG_TYPE];
        self.by_type.0[code as usize] += 1;
        if self.message(code, payload).is_none() {
            self.bad_walk += 1;
        } else if let Some(json) = &mut self.json {
            json.datagram(meta, d, payload);
        }
    }

    /// Walks one message's fields; `None` when they do not fill the payload exactly.
    fn message(&mut self, code: u8, p: &[u8]) -> Option<()> {
        let end = match code {
            INPUT => {
                let _player = be32(p, 0)?;
                self.input_flags_sum += u64::from(be16(p, 4)?);
                let (x, y, angle) = (bef32(p, 6)?, bef32(p, 10)?, bef32(p, 14)?);
                self.position_sum += f64::from(x) + f64::from(y) + f64::from(angle);
                self.fields += 5;
                18
            }
            SNAPSHOT => {
                let count = be16(p, 0)?;
                self.fields += 1;
                2 + self.entities(p.get(2..)?, count)?
            }
            CHUNK => {
                let (_total, _index, count) = (be16(p, 0)?, be16(p, 2)?, be16(p, 4)?);
                self.fields += 3;
                6 + self.entities(p.get(6..)?, count)?
            }
            // A pong may be empty (spec-notes).
            PONG if p.is_empty() => 0,
            PING | PONG => {
                self.client_time_sum += u64::from(be32(p, 0)?);
                self.fields += 1;
                4
            }
            SPAWN => {
                self.entity_id_sum += u64::from(be32(p, 0)?);
                let _type = *p.get(4)?;
                let (x, y) = (bef32(p, 5)?, bef32(p, 9)?);
                self.position_sum += f64::from(x) + f64::from(y);
                self.fields += 4;
                13
            }
            DESTROYED => {
                self.entity_id_sum += u64::from(be32(p, 0)?);
                self.fields += 1;
                4
            }
            ACK | SERVER_ACK => {
                let (_sequence, _code) = (be16(p, 0)?, *p.get(2)?);
                self.fields += 2;
                3
            }
            _ => {
                self.not_walked += 1;
                return Some(());
            }
        };
        (end == p.len()).then_some(())
    }

    /// Walks `count` entity blocks (001 §6.1) at the start of `rest`; returns their length.
    fn entities(&mut self, rest: &[u8], count: u16) -> Option<usize> {
        let mut at = 0;
        for _ in 0..count {
            let id = be32(rest, at)?;
            let mask = be16(rest, at + 4)?;
            if mask & !KNOWN_BITS != 0 {
                return None;
            }
            at += 6;
            if mask & 0x001 != 0 {
                let _type = *rest.get(at)?;
                at += 1;
            }
            let mut position = 0.0;
            if mask & 0x002 != 0 {
                position += bef32(rest, at)?;
                at += 4;
            }
            if mask & 0x004 != 0 {
                position += bef32(rest, at)?;
                at += 4;
            }
            if mask & 0x008 != 0 {
                let _vel_x = bef32(rest, at)?;
                at += 4;
            }
            if mask & 0x010 != 0 {
                let _vel_y = bef32(rest, at)?;
                at += 4;
            }
            if mask & 0x020 != 0 {
                self.health_sum += u64::from(be16(rest, at)?);
                at += 2;
            }
            if mask & 0x040 != 0 {
                let _status = *rest.get(at)?;
                at += 1;
            }
            if mask & 0x200 != 0 {
                let _lives = *rest.get(at)?;
                at += 1;
            }
            self.entities += 1;
            self.entity_id_sum += u64::from(id);
            self.position_sum += f64::from(position);
            self.fields += 2 + u64::from(mask.count_ones());
        }
        Some(at)
    }
}

/// The UDP payload of an Ethernet frame (one optional VLAN tag) carrying unfragmented IPv4, and
/// its source and destination (address and port).
fn udp_payload(frame: &[u8]) -> Option<([Endpoint; 2], &[u8])> {
    let (mut ethertype, mut at) = (be16(frame, 12)?, 14);
    if ethertype == 0x8100 {
        (ethertype, at) = (be16(frame, 16)?, 18);
    }
    if ethertype != 0x0800 {
        return None;
    }
    let ip = frame.get(at..)?;
    let first = *ip.first()?;
    let header_len = usize::from(first & 0x0F) * 4;
    let total = usize::from(be16(ip, 2)?);
    let fragment = be16(ip, 6)? & 0x3FFF;
    if first >> 4 != 4 || header_len < 20 || *ip.get(9)? != 17 || fragment != 0 {
        return None;
    }
    let udp = ip.get(header_len..total)?;
    let udp_len = usize::from(be16(udp, 4)?);
    let ends = [
        (be32(ip, 12)?, be16(udp, 0)?),
        (be32(ip, 16)?, be16(udp, 2)?),
    ];
    Some((ends, udp.get(8..udp_len)?))
}

/// An IPv4 address and a port.
type Endpoint = (u32, u16);

/// What the record of a datagram says beyond its bytes.
#[derive(Clone, Copy)]
struct Meta {
    ts_nanos: i64,
    /// Source, destination.
    ends: [Endpoint; 2],
}

/// `--json`: the floor of `export`'s writing, by hand. Each datagram becomes the record `export`
/// writes, with its keys spelled out and its values formatted as cheaply as the crate's own
/// code can (itoa, zmij): the capture's metadata, the checked header, the message's fields by
/// straight-line code per message type (the sprite names are the benchmark's LevelInit's, known
/// in advance), no violations. Records gather in a buffer written out 64 KiB at a time.
struct Json {
    out: Vec<u8>,
    stdout: io::StdoutLock<'static>,
    frame: u64,
    first_ts: Option<i64>,
    /// Conversations by their ends, numbered from 1 in the order they appear.
    conversations: Vec<[Endpoint; 2]>,
    written: u64,
    names: [&'static str; 256],
}

/// The sprites of the benchmark's archetypes, by entity type (`generate --large`'s LevelInit).
const SPRITES: [&str; 5] = ["", "player_ship", "bydo_scout", "wave_shot", "pow_armor"];

impl Json {
    fn new() -> Json {
        let mut names = ["unknown"; 256];
        for m in MESSAGES {
            names[m.code as usize] = m.name;
        }
        Json {
            out: Vec::with_capacity(1 << 17),
            stdout: io::stdout().lock(),
            frame: 0,
            first_ts: None,
            conversations: Vec::new(),
            written: 0,
            names,
        }
    }

    fn datagram(&mut self, meta: Meta, d: &[u8], payload: &[u8]) {
        self.frame += 1;
        let conversation = self.conversation(meta.ends);
        let first = *self.first_ts.get_or_insert(meta.ts_nanos);
        let o = &mut self.out;
        o.extend_from_slice(b"{\"kind\":\"datagram\",\"frame\":");
        num(o, self.frame);
        o.extend_from_slice(b",\"time\":\"");
        rfc3339(o, meta.ts_nanos);
        o.extend_from_slice(b"\",\"time_rel\":");
        float(
            o,
            zmij::Buffer::new().format_finite((meta.ts_nanos - first) as f64 / 1e9),
        );
        for (end, (ip, port)) in ["src", "dst"].iter().zip(meta.ends) {
            o.extend_from_slice(b",\"");
            o.extend_from_slice(end.as_bytes());
            o.extend_from_slice(b"_ip\":\"");
            for (i, byte) in ip.to_be_bytes().iter().enumerate() {
                if i > 0 {
                    o.push(b'.');
                }
                num(o, u64::from(*byte));
            }
            o.extend_from_slice(b"\",\"");
            o.extend_from_slice(end.as_bytes());
            o.extend_from_slice(b"_port\":");
            num(o, u64::from(port));
        }
        o.extend_from_slice(b",\"conversation\":");
        num(o, conversation);
        let (code, client) = (d[MSG_TYPE], d[PACKET_TYPE] == PACKET_CLIENT);
        o.extend_from_slice(if client {
            b",\"dialect\":\"rtype\",\"direction\":\"client_to_server\",\"length\":"
        } else {
            b",\"dialect\":\"rtype\",\"direction\":\"server_to_client\",\"length\":"
        });
        num(o, d.len() as u64);
        o.extend_from_slice(b",\"code\":");
        num(o, code.into());
        o.extend_from_slice(b",\"name\":\"");
        o.extend_from_slice(self.names[code as usize].as_bytes());
        o.extend_from_slice(b"\",\"header_len\":17,\"compressed\":");
        let compressed = d[VERSION_BYTE] & COMPRESSED_BIT != 0;
        o.extend_from_slice(if compressed { b"true" } else { b"false" });
        let crc = be32(d, d.len() - CRC_LEN).unwrap_or(0);
        o.extend_from_slice(b",\"crc\":{\"stored\":");
        num(o, crc.into());
        o.extend_from_slice(b",\"computed\":");
        num(o, crc.into());
        o.extend_from_slice(b",\"ok\":true},\"header\":{\"magic\":");
        num(o, be32(d, 0).unwrap_or(0).into());
        o.extend_from_slice(b",\"version_byte\":");
        num(o, d[VERSION_BYTE].into());
        o.extend_from_slice(if client {
            b",\"packet_type\":1,\"packet_type_name\":\"client_to_server\",\"msg_type\":"
        } else {
            b",\"packet_type\":2,\"packet_type_name\":\"server_to_client\",\"msg_type\":"
        });
        num(o, code.into());
        o.extend_from_slice(b",\"msg_type_name\":\"");
        o.extend_from_slice(self.names[code as usize].as_bytes());
        o.extend_from_slice(b"\",\"sequence\":");
        num(o, be16(d, SEQUENCE).unwrap_or(0).into());
        o.extend_from_slice(b",\"tick\":");
        num(o, be32(d, TICK).unwrap_or(0).into());
        o.extend_from_slice(b",\"payload_len\":");
        num(o, be16(d, PAYLOAD_LEN.start).unwrap_or(0).into());
        o.extend_from_slice(b",\"orig_size\":");
        num(o, be16(d, ORIG_SIZE.start).unwrap_or(0).into());
        o.push(b'}');
        // The walk checked the message's length: its fields are all there.
        let u16_at = |at| u64::from(be16(payload, at).unwrap_or(0));
        let u32_at = |at| u64::from(be32(payload, at).unwrap_or(0));
        let f32_at = |at| bef32(payload, at).unwrap_or(0.0);
        match code {
            INPUT => {
                member(o, b",\"fields\":{\"player_id\":", u32_at(0));
                member(o, b",\"input_flags\":", u16_at(4));
                float_member(o, b",\"pos_x\":", f32_at(6));
                float_member(o, b",\"pos_y\":", f32_at(10));
                float_member(o, b",\"angle\":", f32_at(14));
                o.push(b'}');
            }
            SNAPSHOT => {
                member(o, b",\"fields\":{\"entity_count\":", u16_at(0));
                items(o, &payload[2..], u16_at(0));
            }
            CHUNK => {
                member(o, b",\"fields\":{\"total_chunks\":", u16_at(0));
                member(o, b",\"chunk_index\":", u16_at(2));
                member(o, b",\"entity_count\":", u16_at(4));
                items(o, &payload[6..], u16_at(4));
            }
            PING | PONG if !payload.is_empty() => {
                member(o, b",\"fields\":{\"client_time\":", u32_at(0));
                o.push(b'}');
            }
            SPAWN => {
                member(o, b",\"fields\":{\"entity_id\":", u32_at(0));
                sprite(o, payload[4]);
                float_member(o, b",\"pos_x\":", f32_at(5));
                float_member(o, b",\"pos_y\":", f32_at(9));
                o.push(b'}');
            }
            DESTROYED => {
                member(o, b",\"fields\":{\"entity_id\":", u32_at(0));
                o.push(b'}');
            }
            ACK | SERVER_ACK => {
                member(o, b",\"fields\":{\"ack_sequence\":", u16_at(0));
                member(o, b",\"ack_msg_type\":", payload[2].into());
                o.extend_from_slice(b",\"ack_msg_type_name\":\"");
                o.extend_from_slice(self.names[payload[2] as usize].as_bytes());
                o.extend_from_slice(b"\"}");
            }
            _ => {}
        }
        o.extend_from_slice(b",\"violations\":[]}\n");
        if o.len() >= 1 << 16 {
            self.flush();
        }
    }

    /// The conversation between these ends, either way.
    fn conversation(&mut self, [a, b]: [Endpoint; 2]) -> u64 {
        let found = self
            .conversations
            .iter()
            .position(|c| *c == [a, b] || *c == [b, a]);
        let index = found.unwrap_or_else(|| {
            self.conversations.push([a, b]);
            self.conversations.len() - 1
        });
        index as u64 + 1
    }

    fn flush(&mut self) {
        self.written += self.out.len() as u64;
        if let Err(e) = self.stdout.write_all(&self.out) {
            eprintln!("floor: standard output: {e}");
            std::process::exit(2);
        }
        self.out.clear();
    }
}

/// `"entities":[…]}`: `count` entity blocks at the start of `rest` (walked before, so whole).
fn items(o: &mut Vec<u8>, rest: &[u8], count: u64) {
    o.extend_from_slice(b",\"entities\":[");
    let mut at = 0;
    for i in 0..count {
        let (Some(id), Some(mask)) = (be32(rest, at), be16(rest, at + 4)) else {
            break;
        };
        o.extend_from_slice(if i == 0 { b"{" } else { b",{" });
        member(o, b"\"id\":", id.into());
        member(o, b",\"update_mask\":", mask.into());
        at += 6;
        if mask & 0x001 != 0 {
            sprite(o, rest[at]);
            at += 1;
        }
        for (bit, key) in [
            (0x002, &b",\"pos_x\":"[..]),
            (0x004, b",\"pos_y\":"),
            (0x008, b",\"vel_x\":"),
            (0x010, b",\"vel_y\":"),
        ] {
            if mask & bit != 0 {
                float_member(o, key, bef32(rest, at).unwrap_or(0.0));
                at += 4;
            }
        }
        if mask & 0x020 != 0 {
            member(o, b",\"health\":", be16(rest, at).unwrap_or(0).into());
            at += 2;
        }
        if mask & 0x040 != 0 {
            member(o, b",\"status_flags\":", rest[at].into());
            at += 1;
        }
        if mask & 0x200 != 0 {
            member(o, b",\"lives\":", rest[at].into());
            at += 1;
        }
        o.push(b'}');
    }
    o.extend_from_slice(b"]}");
}

/// An entity type member and its sprite member.
fn sprite(o: &mut Vec<u8>, t: u8) {
    member(o, b",\"entity_type\":", t.into());
    if let Some(name) = SPRITES.get(usize::from(t)).filter(|n| !n.is_empty()) {
        o.extend_from_slice(b",\"sprite\":\"");
        o.extend_from_slice(name.as_bytes());
        o.push(b'"');
    }
}

fn num(o: &mut Vec<u8>, n: u64) {
    o.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// A member: its key (with the comma before it and the colon after) and a number.
fn member(o: &mut Vec<u8>, key: &[u8], n: u64) {
    o.extend_from_slice(key);
    num(o, n);
}

/// A member whose value is a float.
fn float_member(o: &mut Vec<u8>, key: &[u8], x: f32) {
    o.extend_from_slice(key);
    float(o, zmij::Buffer::new().format_finite(x));
}

/// A float as `export` writes it: shortest, without zmij's `.0` on whole numbers.
fn float(o: &mut Vec<u8>, text: &str) {
    o.extend_from_slice(text.strip_suffix(".0").unwrap_or(text).as_bytes());
}

/// `2026-01-01T00:00:00.000040000Z`.
fn rfc3339(o: &mut Vec<u8>, nanos: i64) {
    let (secs, frac) = (
        nanos.div_euclid(1_000_000_000),
        nanos.rem_euclid(1_000_000_000),
    );
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let second = secs.rem_euclid(86_400);
    for (value, width, after) in [
        (year, 4, b'-'),
        (month, 2, b'-'),
        (day, 2, b'T'),
        (second / 3600, 2, b':'),
        (second / 60 % 60, 2, b':'),
        (second % 60, 2, b'.'),
        (frac, 9, b'Z'),
    ] {
        let power = 10u64.pow(width);
        o.extend_from_slice(
            &itoa::Buffer::new()
                .format(power + value as u64 % power)
                .as_bytes()[1..],
        );
        o.push(after);
    }
}

/// Reads a legacy pcap file in [`READ`]-byte reads and hands each record's time (nanoseconds
/// since the epoch) and bytes, in place, to `each`. Returns how many records were cut short by
/// the end of the file or too long to keep.
fn for_each_record(path: &Path, mut each: impl FnMut(i64, &[u8])) -> io::Result<u64> {
    let mut file = File::open(path)?;
    let mut header = [0u8; FILE_HEADER];
    file.read_exact(&mut header).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => io::Error::other("shorter than a pcap file header"),
        _ => e,
    })?;
    let nano = matches!(
        header[..4],
        [0x4D, 0x3C, 0xB2, 0xA1] | [0xA1, 0xB2, 0x3C, 0x4D]
    );
    let swapped = match header[..4] {
        [0xD4, 0xC3, 0xB2, 0xA1] | [0x4D, 0x3C, 0xB2, 0xA1] => false,
        [0xA1, 0xB2, 0xC3, 0xD4] | [0xA1, 0xB2, 0x3C, 0x4D] => true,
        _ => {
            return Err(io::Error::other(
                "not a legacy pcap file (pcapng is not read here)",
            ))
        }
    };
    let u32_at = |b: &[u8], at: usize| {
        let v = [b[at], b[at + 1], b[at + 2], b[at + 3]];
        if swapped {
            u32::from_be_bytes(v)
        } else {
            u32::from_le_bytes(v)
        }
    };
    let linktype = u32_at(&header, 20) & 0x0FFF_FFFF;
    if linktype != LINKTYPE_ETHERNET {
        return Err(io::Error::other(format!(
            "link type {linktype}: only Ethernet is read here"
        )));
    }
    // A record is always whole in the buffer before it is handed out: what is left of the last
    // read (less than one record) moves to the front, and the next read goes after it.
    let mut buf = vec![0u8; RECORD_HEADER + MAX_FRAME + READ];
    let (mut start, mut end) = (0, 0);
    let mut skipped = 0;
    // Bytes of an over-long record still to throw away.
    let mut discard = 0u64;
    loop {
        let have = end - start;
        if discard > 0 {
            let n = discard.min(have as u64) as usize;
            (start, discard) = (start + n, discard - n as u64);
            if discard == 0 {
                continue;
            }
        } else if have >= RECORD_HEADER {
            let frame_len = u32_at(&buf, start + 8) as usize;
            if frame_len > MAX_FRAME {
                skipped += 1;
                discard = (RECORD_HEADER + frame_len) as u64;
                continue;
            }
            let record_len = RECORD_HEADER + frame_len;
            if have >= record_len {
                let (secs, frac) = (u32_at(&buf, start), u32_at(&buf, start + 4));
                let frac = if nano {
                    i64::from(frac)
                } else {
                    i64::from(frac) * 1000
                };
                let ts = i64::from(secs) * 1_000_000_000 + frac;
                each(ts, &buf[start + RECORD_HEADER..start + record_len]);
                start += record_len;
                continue;
            }
        }
        buf.copy_within(start..end, 0);
        (start, end) = (0, end - start);
        let n = read_retrying(&mut file, &mut buf[end..end + READ])?;
        if n == 0 {
            // Bytes left over are a record the file cuts short (a skipped one is counted already).
            return Ok(skipped + u64::from(end > 0));
        }
        end += n;
    }
}

fn read_retrying(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match file.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// User + system CPU seconds of this process so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes the struct it is given and nothing else.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

struct Pass {
    tally: Tally,
    cut: u64,
    cpu: f64,
    wall: f64,
}

fn pass(path: &Path, json: bool) -> io::Result<Pass> {
    let mut scratch = vec![0u8; u16::MAX as usize];
    let mut tally = Tally {
        json: json.then(Json::new),
        ..Tally::default()
    };
    let (cpu, wall) = (cpu_seconds(), Instant::now());
    let cut = for_each_record(path, |ts, frame| tally.frame(ts, frame, &mut scratch))?;
    if let Some(json) = &mut tally.json {
        json.flush();
    }
    Ok(Pass {
        tally,
        cut,
        cpu: cpu_seconds() - cpu,
        wall: wall.elapsed().as_secs_f64(),
    })
}

fn report(out: &mut dyn Write, path: &Path, p: &Pass) -> io::Result<()> {
    let t = &p.tally;
    writeln!(out, "file        {}", path.display())?;
    writeln!(
        out,
        "records     {} ({} not Ethernet/IPv4/UDP, {} cut short or too long)",
        t.records, t.not_udp, p.cut
    )?;
    writeln!(
        out,
        "datagrams   {} checked, {} compressed ({} Orig. Size mismatches); skipped: {} not rtype, \
         {} bad header, {} bad CRC, {} bad LZ4",
        t.datagrams,
        t.compressed,
        t.orig_size_mismatch,
        t.not_rtype,
        t.bad_header,
        t.bad_crc,
        t.bad_lz4
    )?;
    let types: Vec<String> = MESSAGES
        .iter()
        .filter(|m| t.by_type.0[m.code as usize] > 0)
        .map(|m| format!("{} {}", m.short, t.by_type.0[m.code as usize]))
        .collect();
    writeln!(out, "messages    {}", types.join(", "))?;
    writeln!(
        out,
        "walk        {} fields ({:.1} per datagram), {} not walked, {} did not walk to the end",
        t.fields,
        t.fields as f64 / t.datagrams.max(1) as f64,
        t.not_walked,
        t.bad_walk
    )?;
    writeln!(
        out,
        "sums        entities {}, entity ids {}, health {}, input flags {}, client times {}, \
         positions {:.1}",
        t.entities,
        t.entity_id_sum,
        t.health_sum,
        t.input_flags_sum,
        t.client_time_sum,
        t.position_sum
    )?;
    if let Some(json) = &t.json {
        writeln!(
            out,
            "json        {} bytes written, {:.0} per datagram",
            json.written,
            json.written as f64 / t.datagrams.max(1) as f64
        )?;
    }
    Ok(())
}

fn usage() -> ! {
    eprintln!("usage: cargo bench --bench floor -- FILE [--runs N] [--json]");
    std::process::exit(2);
}

fn main() {
    let mut path = None;
    let mut runs = 1usize;
    let mut json = false;
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--bench") => {}
            Some("--json") => json = true,
            Some("--runs") => match args.next().and_then(|n| n.to_str()?.parse().ok()) {
                Some(n) if n > 0 => runs = n,
                _ => usage(),
            },
            _ => path = Some(PathBuf::from(arg)),
        }
    }
    let Some(path) = path else { usage() };
    let mut passes = Vec::with_capacity(runs);
    for _ in 0..runs {
        match pass(&path, json) {
            Ok(p) => passes.push(p),
            Err(e) => {
                eprintln!("floor: {}: {e}", path.display());
                std::process::exit(2);
            }
        }
    }
    // With `--json` the records are the standard output: what was counted goes beside them.
    let mut out: Box<dyn Write> = if json {
        Box::new(io::stderr())
    } else {
        Box::new(io::stdout())
    };
    if let Err(e) = show(&mut out, &path, &passes) {
        eprintln!("floor: {e}");
        std::process::exit(2);
    }
}

/// What the first pass counted, then every pass's CPU time.
fn show(out: &mut dyn Write, path: &Path, passes: &[Pass]) -> io::Result<()> {
    report(out, path, &passes[0])?;
    let records = passes[0].tally.records.max(1) as f64;
    writeln!(
        out,
        "{:<6} {:>8} {:>8} {:>14} {:>14}",
        "pass", "CPU s", "wall s", "CPU ns/record", "records/CPU s"
    )?;
    for (i, p) in passes.iter().enumerate() {
        writeln!(
            out,
            "{:<6} {:>8.3} {:>8.3} {:>14.1} {:>14.0}",
            i + 1,
            p.cpu,
            p.wall,
            p.cpu * 1e9 / records,
            records / p.cpu
        )?;
    }
    if passes.len() > 1 {
        let mut cpu: Vec<f64> = passes.iter().map(|p| p.cpu).collect();
        cpu.sort_by(f64::total_cmp);
        let median = cpu[cpu.len() / 2];
        writeln!(
            out,
            "best {:.1} ns, median {:.1} ns of CPU per record over {} passes",
            cpu[0] * 1e9 / records,
            median * 1e9 / records,
            passes.len()
        )?;
    }
    Ok(())
}
