//! rtype datagrams and pcaps of them, for the dissector's tests and benchmark
//! (tests/lua_dissector.rs, tests/wireshark_gui.rs, benches/lua_dissector.rs).
#![allow(dead_code)]

use std::path::Path;

pub const MAGIC: [u8; 4] = [0xA3, 0x5F, 0xC8, 0x1D];

/// A pcap of raw IPv4/UDP packets (link type 101), one per (source port, destination port, payload).
pub fn write_pcap(path: &Path, packets: &[(u16, u16, Vec<u8>)]) {
    let mut out = Vec::new();
    out.extend(0xA1B2_C3D4u32.to_le_bytes());
    out.extend(2u16.to_le_bytes());
    out.extend(4u16.to_le_bytes());
    out.extend([0u8; 8]);
    out.extend(65535u32.to_le_bytes());
    out.extend(101u32.to_le_bytes());
    for (i, (sport, dport, payload)) in packets.iter().enumerate() {
        let total = 20 + 8 + payload.len();
        let mut ip = vec![
            0x45,
            0,
            (total >> 8) as u8,
            total as u8,
            0,
            0,
            0,
            0,
            64,
            17,
            0,
            0,
            127,
            0,
            0,
            1,
            127,
            0,
            0,
            1,
        ];
        let mut sum: u32 = ip
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
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

pub fn with_crc(mut d: Vec<u8>) -> Vec<u8> {
    let crc = crc32fast::hash(&d);
    d.extend(crc.to_be_bytes());
    d
}

/// A 17-byte-header datagram with a correct CRC.
pub fn dgram(version: u8, ptype: u8, mtype: u8, tick: u32, payload: &[u8], orig: u16) -> Vec<u8> {
    let mut d = MAGIC.to_vec();
    d.extend([version, ptype, mtype]);
    d.extend(7u16.to_be_bytes());
    d.extend(tick.to_be_bytes());
    d.extend((payload.len() as u16).to_be_bytes());
    d.extend(orig.to_be_bytes());
    d.extend(payload);
    with_crc(d)
}

pub fn client(mtype: u8, payload: &[u8]) -> Vec<u8> {
    dgram(1, 1, mtype, 0, payload, 0)
}

pub fn server(mtype: u8, payload: &[u8]) -> Vec<u8> {
    dgram(1, 2, mtype, 0, payload, 0)
}

pub fn compressed(mtype: u8, plain: &[u8], orig: u16) -> Vec<u8> {
    dgram(0x81, 2, mtype, 0, &lz4_flex::block::compress(plain), orig)
}

pub fn chunk(tick: u32, total: u16, index: u16, entities: &[(u32, u16, &[u8])]) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend(total.to_be_bytes());
    p.extend(index.to_be_bytes());
    p.extend(snapshot_body(entities));
    dgram(1, 2, 0x21, tick, &p, 0)
}

pub fn snapshot_body(entities: &[(u32, u16, &[u8])]) -> Vec<u8> {
    let mut p = (entities.len() as u16).to_be_bytes().to_vec();
    for (id, mask, fields) in entities {
        p.extend(id.to_be_bytes());
        p.extend(mask.to_be_bytes());
        p.extend(*fields);
    }
    p
}

pub fn str8(s: &[u8]) -> Vec<u8> {
    let mut v = vec![s.len() as u8];
    v.extend(s);
    v
}

/// The crafted capture of the dissector's benchmark: a LevelInit announcing five archetypes, then
/// `sets` snapshot chunk sets of two LZ4-compressed chunks of 8,800 entities each (the most a
/// 64 KiB payload holds with an entity type per entity), with a snapshot between sets.
pub fn crafted_chunk_sets(sets: u32) -> Vec<(u16, u16, Vec<u8>)> {
    const ENTITIES: u32 = 8_800;
    let mut level_init = vec![0, 1, 0, 0, 0, 42];
    level_init.extend(str8(b"bg"));
    level_init.extend(str8(b"music"));
    level_init.push(5);
    for (id, sprite) in [
        (1u16, "ship"),
        (2, "enemy"),
        (3, "bullet"),
        (4, "wall"),
        (5, "boss"),
    ] {
        level_init.extend(id.to_be_bytes());
        level_init.extend(str8(sprite.as_bytes()));
        level_init.extend(str8(b"idle"));
        level_init.push(1);
    }
    let mut packets = vec![(41000, 50010, dgram(1, 1, 0x01, 0, &[], 0))];
    packets.push((50010, 41000, server(0x30, &level_init)));
    let mut id = 7u32;
    for set in 0..sets {
        let tick = 100 + set;
        for index in 0..2u16 {
            let mut plain = 2u16.to_be_bytes().to_vec();
            plain.extend(index.to_be_bytes());
            plain.extend((ENTITIES as u16).to_be_bytes());
            for k in 0..ENTITIES {
                // Ids that wander (as ids of spawned and destroyed entities do), a type each.
                id = id.wrapping_mul(1_103_515_245).wrapping_add(12_345) % 1_000_000;
                plain.extend(id.to_be_bytes());
                plain.extend(1u16.to_be_bytes());
                plain.push(1 + (k % 5) as u8);
            }
            let packed = lz4_flex::block::compress(&plain);
            packets.push((
                50010,
                41000,
                dgram(0x81, 2, 0x21, tick, &packed, plain.len() as u16),
            ));
        }
        packets.push((50010, 41000, server(0x14, &snapshot_body(&[(1, 1, &[1])]))));
    }
    packets
}

/// A server whose snapshots carry an i16 × 10 position and an i32 score on mask bits 1 and 10
/// (the 17-byte build's layout, `reference-17byte`), to clients on ports 41000 and 41001: the
/// first conversation's two empty snapshots read with any layout, its third (frame 4) is the
/// first the document misreads; the second conversation's snapshots are all empty.
pub fn late_departure() -> Vec<(u16, u16, Vec<u8>)> {
    let entity = |x: i16| {
        let mut fields = x.to_be_bytes().to_vec();
        fields.extend(7i32.to_be_bytes());
        fields
    };
    let (first, second) = (entity(1001), entity(1002));
    let snapshot = |tick, body: Vec<u8>| dgram(1, 2, 0x14, tick, &body, 0);
    vec![
        (50_010, 41_000, snapshot(1, snapshot_body(&[]))),
        (50_010, 41_001, snapshot(1, snapshot_body(&[]))),
        (50_010, 41_000, snapshot(2, snapshot_body(&[]))),
        (
            50_010,
            41_000,
            snapshot(3, snapshot_body(&[(1, 0x0402, &first)])),
        ),
        (50_010, 41_001, snapshot(2, snapshot_body(&[]))),
        (
            50_010,
            41_000,
            snapshot(4, snapshot_body(&[(1, 0x0402, &second)])),
        ),
    ]
}
