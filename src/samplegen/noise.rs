//! Ordinary UDP of a desktop: what a capture taken with `-i any` holds besides the game. None of
//! it is R-Type traffic, and several kinds start the way a dialect does (a JSON object, text
//! starting "RT", zeros like a Cap'n Proto segment table, the rtype magic followed by noise, a
//! bare `PING`): a tool that recognises dialects by their first bytes alone judges them.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::script::Record;

fn addr(a: u8, b: u8, c: u8, d: u8, port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(a, b, c, d)), port)
}

/// A DNS message for `example.com` A: a query, or the answer 93.184.215.14.
fn dns(id: u16, answer: bool) -> Vec<u8> {
    let flags: u16 = if answer { 0x8180 } else { 0x0100 };
    let mut d = Vec::new();
    for v in [id, flags, 1, u16::from(answer), 0, 0] {
        d.extend(v.to_be_bytes());
    }
    d.extend(b"\x07example\x03com\x00\x00\x01\x00\x01");
    if answer {
        d.extend([
            0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0x0E, 0x10, 0, 4, 93, 184, 215, 14,
        ]);
    }
    d
}

/// A QUIC Initial (long header, version 1) padded to 1200 bytes, or a 1-RTT short-header packet.
fn quic(long: bool, seed: u8) -> Vec<u8> {
    let mut d = if long {
        let mut d = vec![0xC3, 0, 0, 0, 1, 8];
        d.extend([seed, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0x44, 0xD0]);
        d
    } else {
        vec![0x43, seed, 9, 8, 7, 6, 5, 4, 3]
    };
    let len = if long { 1200 } else { 60 };
    let mut x = u32::from(seed) | 0x1000;
    while d.len() < len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        d.push(x as u8);
    }
    d
}

/// One datagram of each kind, with its addresses, in a fixed order.
pub fn datagrams() -> Vec<(SocketAddr, SocketAddr, Vec<u8>)> {
    let me = |port| addr(192, 168, 1, 20, port);
    let router = |port| addr(192, 168, 1, 1, port);
    let mut lone_magic = crate::proto::rtype::MAGIC.to_vec();
    lone_magic.extend([0x17, 0x00, 0x42, 0x99, 0x01]);
    let mut segment_like = vec![0, 0, 0, 0, 2, 0, 0, 0];
    segment_like.resize(24, 0);
    vec![
        (me(53_001), router(53), dns(0x1A2B, false)),
        (router(53), me(53_001), dns(0x1A2B, true)),
        (
            me(5353),
            addr(224, 0, 0, 251, 5353),
            b"\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x0b_googlecast\x04_tcp\x05local\x00\x00\x0c\x00\x01"
                .to_vec(),
        ),
        (
            me(50_000),
            addr(239, 255, 255, 250, 1900),
            b"M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nMAN: \"ssdp:discover\"\r\nMX: 1\r\nST: ssdp:all\r\n\r\n"
                .to_vec(),
        ),
        (
            addr(192, 168, 1, 7, 1900),
            addr(239, 255, 255, 250, 1900),
            b"NOTIFY * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nNT: upnp:rootdevice\r\nNTS: ssdp:alive\r\n\r\n"
                .to_vec(),
        ),
        (me(51_000), addr(142, 250, 74, 3, 443), quic(true, 1)),
        (addr(142, 250, 74, 3, 443), me(51_000), quic(false, 2)),
        (
            addr(192, 168, 1, 30, 17_500),
            addr(255, 255, 255, 255, 17_500),
            br#"{"host_int": 123456789, "version": [2, 0], "displayname": "", "port": 17500, "namespaces": [5, 6, 7]}"#
                .to_vec(),
        ),
        (
            addr(192, 168, 1, 31, 9_999),
            addr(192, 168, 1, 255, 9_999),
            br#"{"type":"heartbeat","id":4}"#.to_vec(),
        ),
        (
            me(5_004),
            addr(192, 168, 1, 40, 554),
            b"RTSP/1.0 200 OK\r\nCSeq: 2\r\nSession: 12345678\r\n\r\n".to_vec(),
        ),
        (me(6_010), addr(192, 168, 1, 41, 6_010), b"RTT 12 ms\n".to_vec()),
        (me(6_000), addr(192, 168, 1, 42, 6_000), b"PING".to_vec()),
        (me(7_000), addr(192, 168, 1, 43, 7_000), vec![0; 48]),
        (me(7_001), addr(192, 168, 1, 43, 7_001), segment_like),
        (me(7_002), addr(192, 168, 1, 44, 7_002), lone_magic),
        (
            me(123),
            addr(162, 159, 200, 1, 123),
            [0x23].into_iter().chain([0; 47]).collect(),
        ),
        (
            me(3478),
            addr(74, 125, 250, 129, 19_302),
            vec![0, 1, 0, 0, 0x21, 0x12, 0xA4, 0x42, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
        ),
    ]
}

/// `count` datagrams cycling through [`datagrams`], one every `period_us` from `start_us`.
pub fn records(start_us: u64, period_us: u64, count: usize) -> Vec<Record> {
    datagrams()
        .into_iter()
        .cycle()
        .take(count)
        .enumerate()
        .map(|(i, (from, to, bytes))| Record {
            ts_us: start_us + i as u64 * period_us,
            from,
            to,
            bytes,
        })
        .collect()
}
