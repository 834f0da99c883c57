//! Arbitrary bytes as one UDP payload through the pipeline's per-datagram path, for every dialect.
//!
//! The first input byte chooses how the rest is framed, so that each dialect's decoder is
//! reached past its magic and integrity checks:
//! - bits 0-2: 0 as is; 1 rtype (magic + the rest, as is); 2 rtype with Payload Len and CRC32
//!   made right; 3 rtype with an LZ4-compressed payload (Orig. Size, Payload Len, CRC right);
//!   4 rt, magic big-endian; 5 rt, magic little-endian; 6 rtnp raw JSON (`{` + the rest);
//!   7 rtnp, the rest as the Text of a well-formed Cap'n Proto envelope;
//! - bit 3: the datagram is sent twice (duplicates, chunk sets, sequence state);
//! - bit 4: the second copy goes the other way (server to client);
//! - bits 5-6: the server port (50010, rtnp's 4242, 4243, 7).
//!
//! The datagram is wrapped in a tiny pcap (raw IPv4) and run through the pipeline with the
//! summary, the NDJSON export and the verbose packet list; nothing may panic.
#![no_main]

use std::io::{self, Cursor};
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use rtype_inspect::capture::CaptureReader;
use rtype_inspect::pipeline::{Pipeline, Sink};
use rtype_inspect::proto::profile::Profile;
use rtype_inspect::proto::{rt, rtype};
use rtype_inspect::report::export::Export;
use rtype_inspect::report::filter::FilterOptions;
use rtype_inspect::report::packets::{Packets, PacketsOptions};
use rtype_inspect::report::summary::Summary;

/// Largest UDP payload raw IPv4 can carry.
const MAX_UDP_PAYLOAD: usize = 65_535 - 20 - 8;

/// An rtype datagram: magic, then `rest` holds the 13 header bytes after the magic and the
/// payload; with `fix`, Payload Len and the CRC are made to agree with the bytes.
fn rtype_datagram(rest: &[u8], fix: bool, compress: bool) -> Vec<u8> {
    let mut d = rtype::MAGIC.to_vec();
    if !fix {
        d.extend_from_slice(rest);
        return d;
    }
    let head_len = rtype::HEADER_LEN - rtype::MAGIC.len();
    let (head, body) = rest.split_at(rest.len().min(head_len));
    let mut header = [0u8; 13];
    header[..head.len()].copy_from_slice(head);
    let packed;
    let payload = if compress {
        header[0] |= rtype::COMPRESSED_BIT;
        header[11..13].copy_from_slice(&(body.len().min(0xFFFF) as u16).to_be_bytes());
        packed = lz4_flex::block::compress(body);
        &packed[..]
    } else {
        body
    };
    header[9..11].copy_from_slice(&(payload.len().min(0xFFFF) as u16).to_be_bytes());
    d.extend_from_slice(&header);
    d.extend_from_slice(payload);
    let crc = crc32fast::hash(&d);
    d.extend_from_slice(&crc.to_be_bytes());
    d
}

/// A single-segment Cap'n Proto message whose root struct's one pointer is a Text of `text`.
fn envelope(text: &[u8]) -> Vec<u8> {
    let len = text.len() + 1;
    let words = len.div_ceil(8);
    let mut d = Vec::with_capacity(24 + words * 8);
    d.extend(0u32.to_le_bytes());
    d.extend(((2 + words) as u32).to_le_bytes());
    d.extend(0u32.to_le_bytes());
    d.extend([0, 0, 1, 0]);
    d.extend(1u32.to_le_bytes());
    d.extend(((len as u32) << 3 | 2).to_le_bytes());
    d.extend_from_slice(text);
    d.resize(24 + words * 8, 0);
    d
}

fn udp_frame(payload: &[u8], sport: u16, dport: u16) -> Vec<u8> {
    let total = 28 + payload.len();
    let mut f = Vec::with_capacity(total);
    f.extend([0x45, 0]);
    f.extend((total as u16).to_be_bytes());
    f.extend([0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    f.extend(sport.to_be_bytes());
    f.extend(dport.to_be_bytes());
    f.extend(((8 + payload.len()) as u16).to_be_bytes());
    f.extend([0, 0]);
    f.extend_from_slice(payload);
    f
}

fn pcap(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend(0xa1b2_c3d4u32.to_le_bytes());
    p.extend(2u16.to_le_bytes());
    p.extend(4u16.to_le_bytes());
    p.extend([0; 8]);
    p.extend(65_535u32.to_le_bytes());
    p.extend(101u32.to_le_bytes()); // LINKTYPE_RAW
    for (i, f) in frames.iter().enumerate() {
        p.extend(1_700_000_000u32.to_le_bytes());
        p.extend((i as u32 * 16_667).to_le_bytes());
        p.extend((f.len() as u32).to_le_bytes());
        p.extend((f.len() as u32).to_le_bytes());
        p.extend_from_slice(f);
    }
    p
}

fn run<S: Sink>(capture: &[u8], sink: &mut S) {
    let mut reader =
        CaptureReader::from_read(Path::new("fuzz"), Box::new(Cursor::new(capture.to_vec())))
            .expect("a well-formed pcap");
    Pipeline::new(Profile::document(), None)
        .run(&mut reader, sink)
        .expect("runs");
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let payload = match mode & 7 {
        0 => rest.to_vec(),
        1 => rtype_datagram(rest, false, false),
        2 => rtype_datagram(rest, true, false),
        3 => rtype_datagram(rest, true, true),
        4 => [&rt::MAGIC_BE[..], rest].concat(),
        5 => [&rt::MAGIC_LE[..], rest].concat(),
        6 => [&b"{"[..], rest].concat(),
        _ => envelope(rest),
    };
    if payload.len() > MAX_UDP_PAYLOAD {
        return;
    }
    let server = [50_010, 4242, 4243, 7][usize::from(mode >> 5 & 3)];
    let mut frames = vec![udp_frame(&payload, 41_000, server)];
    if mode & 8 != 0 {
        frames.push(if mode & 16 != 0 {
            udp_frame(&payload, server, 41_000)
        } else {
            frames[0].clone()
        });
    }
    let capture = pcap(&frames);
    let mut summary = Summary::default();
    run(&capture, &mut summary);
    let _ = summary.text("fuzz", rtype_inspect::app::Term::pipe());
    let filter = FilterOptions::default().build().expect("the empty filter");
    run(
        &capture,
        &mut Export::new(io::sink(), false, filter.clone()),
    );
    run(
        &capture,
        &mut Packets::new(
            io::sink(),
            PacketsOptions {
                verbose: true,
                hex: true,
                width: None,
                time: Default::default(),
                color: true,
            },
            filter,
        ),
    );
});
