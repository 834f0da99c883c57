//! Test helpers: packets built with etherparse, and tiny pcap / pcapng writers
//! (pcap-parser has no writer).

use etherparse::PacketBuilder;

pub const V4_SRC: [u8; 4] = [10, 0, 0, 1];
pub const V4_DST: [u8; 4] = [10, 0, 0, 2];
pub const V6_SRC: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
pub const V6_DST: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

/// Ethernet II / IPv4 10.0.0.1:4000 -> 10.0.0.2:5000 / UDP.
pub fn eth_v4_udp(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ethernet2([1; 6], [2; 6])
        .ipv4(V4_SRC, V4_DST, 64)
        .udp(4000, 5000)
        .write(&mut out, payload)
        .unwrap();
    out
}

/// IPv4 / UDP, no link header.
pub fn raw_v4_udp(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ipv4(V4_SRC, V4_DST, 64)
        .udp(4000, 5000)
        .write(&mut out, payload)
        .unwrap();
    out
}

/// IPv6 [2001:db8::1]:4000 -> [2001:db8::2]:5000 / UDP, no link header.
pub fn raw_v6_udp(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ipv6(V6_SRC, V6_DST, 64)
        .udp(4000, 5000)
        .write(&mut out, payload)
        .unwrap();
    out
}

fn udp_bytes(payload: &[u8]) -> Vec<u8> {
    let mut u = Vec::new();
    u.extend_from_slice(&4000u16.to_be_bytes());
    u.extend_from_slice(&5000u16.to_be_bytes());
    u.extend_from_slice(&((payload.len() + 8) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(payload);
    u
}

fn ipv6_header(payload_len: usize, next: u8) -> Vec<u8> {
    let mut h = vec![0x60, 0, 0, 0];
    h.extend_from_slice(&(payload_len as u16).to_be_bytes());
    h.push(next);
    h.push(64);
    h.extend_from_slice(&V6_SRC);
    h.extend_from_slice(&V6_DST);
    h
}

/// IPv6 / hop-by-hop (8) / routing (24) / destination options (16) /
/// atomic fragment (8) / UDP.
pub fn ipv6_with_extensions(payload: &[u8]) -> Vec<u8> {
    let mut ext = Vec::new();
    ext.extend_from_slice(&[43, 0, 1, 4, 0, 0, 0, 0]); // hop-by-hop, PadN
    ext.extend_from_slice(&[60, 2, 0, 0, 0, 0, 0, 0]); // routing type 0, 0 left
    ext.extend_from_slice(&[0u8; 16]);
    ext.extend_from_slice(&[44, 1, 1, 12]); // destination options, PadN
    ext.extend_from_slice(&[0u8; 12]);
    ext.extend_from_slice(&[17, 0, 0, 0, 0, 0, 0, 9]); // atomic fragment
    let udp = udp_bytes(payload);
    let mut p = ipv6_header(ext.len() + udp.len(), 0);
    p.extend_from_slice(&ext);
    p.extend_from_slice(&udp);
    p
}

/// A UDP datagram (4000 -> 5000) as raw IPv4 fragments of `chunk` bytes of IP payload.
pub fn v4_fragments(payload: &[u8], id: u16, chunk: usize) -> Vec<Vec<u8>> {
    assert!(chunk.is_multiple_of(8));
    let udp = udp_bytes(payload);
    let pieces: Vec<&[u8]> = udp.chunks(chunk).collect();
    let n = pieces.len();
    pieces
        .iter()
        .enumerate()
        .map(|(i, piece)| {
            let mut h = vec![0x45, 0];
            h.extend_from_slice(&((20 + piece.len()) as u16).to_be_bytes());
            h.extend_from_slice(&id.to_be_bytes());
            let mf = if i + 1 < n { 0x2000 } else { 0 };
            h.extend_from_slice(&((mf | (i * chunk / 8)) as u16).to_be_bytes());
            h.extend_from_slice(&[64, 17, 0, 0]);
            h.extend_from_slice(&V4_SRC);
            h.extend_from_slice(&V4_DST);
            h.extend_from_slice(piece);
            h
        })
        .collect()
}

/// A UDP datagram as raw IPv6 packets with fragment headers.
pub fn v6_fragments(payload: &[u8], id: u32, chunk: usize) -> Vec<Vec<u8>> {
    assert!(chunk.is_multiple_of(8));
    let udp = udp_bytes(payload);
    let pieces: Vec<&[u8]> = udp.chunks(chunk).collect();
    let n = pieces.len();
    pieces
        .iter()
        .enumerate()
        .map(|(i, piece)| {
            let mut p = ipv6_header(8 + piece.len(), 44);
            let m = if i + 1 < n { 1 } else { 0 };
            p.extend_from_slice(&[17, 0]);
            p.extend_from_slice(&((((i * chunk / 8) << 3) | m) as u16).to_be_bytes());
            p.extend_from_slice(&id.to_be_bytes());
            p.extend_from_slice(piece);
            p
        })
        .collect()
}

fn u16b(big: bool, v: u16) -> [u8; 2] {
    if big {
        v.to_be_bytes()
    } else {
        v.to_le_bytes()
    }
}

fn u32b(big: bool, v: u32) -> [u8; 4] {
    if big {
        v.to_be_bytes()
    } else {
        v.to_le_bytes()
    }
}

/// Legacy pcap global header.
pub fn pcap_header(big: bool, nanos: bool, linktype: u32, snaplen: u32) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&u32b(big, if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 }));
    h.extend_from_slice(&u16b(big, 2));
    h.extend_from_slice(&u16b(big, 4));
    h.extend_from_slice(&[0; 8]);
    h.extend_from_slice(&u32b(big, snaplen));
    h.extend_from_slice(&u32b(big, linktype));
    h
}

/// Appends one legacy pcap record.
pub fn pcap_record(out: &mut Vec<u8>, big: bool, sec: u32, frac: u32, data: &[u8], orig_len: u32) {
    out.extend_from_slice(&u32b(big, sec));
    out.extend_from_slice(&u32b(big, frac));
    out.extend_from_slice(&u32b(big, data.len() as u32));
    out.extend_from_slice(&u32b(big, orig_len));
    out.extend_from_slice(data);
}

/// A pcapng byte stream, built block by block.
pub struct PcapNg {
    pub big: bool,
    pub out: Vec<u8>,
}

impl PcapNg {
    pub fn new(big: bool) -> Self {
        let mut ng = PcapNg {
            big,
            out: Vec::new(),
        };
        ng.shb();
        ng
    }

    pub fn block(&mut self, block_type: u32, body: &[u8]) -> &mut Self {
        let total = (12 + body.len()) as u32;
        assert!(total.is_multiple_of(4));
        let big = self.big;
        self.out.extend_from_slice(&u32b(big, block_type));
        self.out.extend_from_slice(&u32b(big, total));
        self.out.extend_from_slice(body);
        self.out.extend_from_slice(&u32b(big, total));
        self
    }

    pub fn shb(&mut self) -> &mut Self {
        let mut body = Vec::new();
        body.extend_from_slice(&u32b(self.big, 0x1a2b_3c4d));
        body.extend_from_slice(&u16b(self.big, 1));
        body.extend_from_slice(&u16b(self.big, 0));
        body.extend_from_slice(&[0xff; 8]);
        self.block(0x0a0d_0d0a, &body)
    }

    fn options(&self, options: &[(u16, &[u8])]) -> Vec<u8> {
        let mut o = Vec::new();
        if options.is_empty() {
            return o;
        }
        for (code, value) in options {
            o.extend_from_slice(&u16b(self.big, *code));
            o.extend_from_slice(&u16b(self.big, value.len() as u16));
            o.extend_from_slice(value);
            while !o.len().is_multiple_of(4) {
                o.push(0);
            }
        }
        o.extend_from_slice(&[0, 0, 0, 0]);
        o
    }

    /// IDB; `tsresol`/`tsoffset` become options when given.
    pub fn idb(
        &mut self,
        linktype: u16,
        snaplen: u32,
        tsresol: Option<u8>,
        tsoffset: Option<i64>,
    ) -> &mut Self {
        let mut body = Vec::new();
        body.extend_from_slice(&u16b(self.big, linktype));
        body.extend_from_slice(&[0, 0]);
        body.extend_from_slice(&u32b(self.big, snaplen));
        let resol;
        let offset;
        let mut opts: Vec<(u16, &[u8])> = vec![(2, b"eth0")];
        if let Some(r) = tsresol {
            resol = [r];
            opts.push((9, &resol));
        }
        if let Some(o) = tsoffset {
            offset = if self.big {
                o.to_be_bytes()
            } else {
                o.to_le_bytes()
            };
            opts.push((14, &offset));
        }
        body.extend_from_slice(&self.options(&opts));
        self.block(1, &body)
    }

    /// EPB with a comment option.
    pub fn epb(&mut self, if_id: u32, ts: u64, data: &[u8], orig_len: u32) -> &mut Self {
        self.epb_with(if_id, ts, data, orig_len, &[(1, b"a comment")])
    }

    /// EPB with these options (none: the plainest form, as editcap and dumpcap write it).
    pub fn epb_with(
        &mut self,
        if_id: u32,
        ts: u64,
        data: &[u8],
        orig_len: u32,
        options: &[(u16, &[u8])],
    ) -> &mut Self {
        let big = self.big;
        let mut body = Vec::new();
        body.extend_from_slice(&u32b(big, if_id));
        body.extend_from_slice(&u32b(big, (ts >> 32) as u32));
        body.extend_from_slice(&u32b(big, ts as u32));
        body.extend_from_slice(&u32b(big, data.len() as u32));
        body.extend_from_slice(&u32b(big, orig_len));
        body.extend_from_slice(data);
        while !body.len().is_multiple_of(4) {
            body.push(0);
        }
        body.extend_from_slice(&self.options(options));
        self.block(6, &body)
    }

    pub fn spb(&mut self, data: &[u8], orig_len: u32) -> &mut Self {
        let mut body = u32b(self.big, orig_len).to_vec();
        body.extend_from_slice(data);
        while !body.len().is_multiple_of(4) {
            body.push(0);
        }
        self.block(3, &body)
    }
}
