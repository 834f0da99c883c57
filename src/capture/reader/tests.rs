//! The capture reader's tests: pcap and pcapng, gzip, hostile records, the parallel read.

use super::parallel::BatchSize;
use super::*;
use crate::capture::testutil::*;
use std::io::{Cursor, Write};

/// A delivered frame, copied out of the reader's buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Got {
    number: u64,
    ts: i64,
    link_type: LinkType,
    data: Vec<u8>,
    orig_len: u32,
    offset: u64,
}

impl Got {
    fn of(f: &Frame<'_>) -> Got {
        Got {
            number: f.number,
            ts: f.ts_nanos,
            link_type: f.link_type,
            data: f.data.to_vec(),
            orig_len: f.orig_len,
            offset: f.file_offset,
        }
    }
}

fn read_all(bytes: Vec<u8>) -> Result<(CaptureInfo, Vec<Got>, ReadEnd), CaptureError> {
    read_from(Box::new(Cursor::new(bytes)))
}

fn read_from(r: Box<dyn Read + Send>) -> Result<(CaptureInfo, Vec<Got>, ReadEnd), CaptureError> {
    let mut reader = CaptureReader::from_read(Path::new("test.pcap"), r)?;
    let mut got = Vec::new();
    let end = reader.for_each_frame(|f| got.push(Got::of(f)))?;
    // Reading again after the end delivers nothing and ends the same way.
    assert_eq!(reader.for_each_frame(|_| panic!("frame after end"))?, end);
    Ok((reader.info().clone(), got, end))
}

fn not_capture(bytes: Vec<u8>) -> String {
    match read_all(bytes) {
        Err(e @ CaptureError::NotACapture { .. }) => e.to_string(),
        other => panic!("expected NotACapture, got {other:?}"),
    }
}

fn three_packets() -> [Vec<u8>; 3] {
    [
        eth_v4_udp(b"one"),
        eth_v4_udp(b"second"),
        eth_v4_udp(b"the third"),
    ]
}

fn legacy(big: bool, nanos: bool) -> Vec<u8> {
    let mut f = pcap_header(big, nanos, 1, 65535);
    for (i, p) in three_packets().iter().enumerate() {
        pcap_record(
            &mut f,
            big,
            1_700_000_000 + i as u32,
            250 + i as u32,
            p,
            p.len() as u32 + 4,
        );
    }
    f
}

#[test]
fn legacy_pcap_both_byte_orders_us_and_ns() {
    for big in [false, true] {
        for nanos in [false, true] {
            let (info, got, end) = read_all(legacy(big, nanos)).unwrap();
            assert_eq!(
                info,
                CaptureInfo {
                    format: CaptureFormat::Pcap,
                    gzip: false,
                    nanosecond: nanos,
                    big_endian: big,
                    link_types: vec![LinkType::ETHERNET],
                }
            );
            assert_eq!(
                end,
                ReadEnd {
                    frames: 3,
                    truncated: None,
                    skipped: Vec::new(),
                    overruns: Vec::new()
                }
            );
            let packets = three_packets();
            let mut offset = 24;
            for (i, g) in got.iter().enumerate() {
                let frac = 250 + i as i64;
                let expect_ts = (1_700_000_000 + i as i64) * 1_000_000_000
                    + if nanos { frac } else { frac * 1000 };
                assert_eq!(g.number, i as u64 + 1);
                assert_eq!(g.ts, expect_ts);
                assert_eq!(g.link_type, LinkType::ETHERNET);
                assert_eq!(g.data, packets[i]);
                assert_eq!(g.orig_len, packets[i].len() as u32 + 4);
                assert_eq!(g.offset, offset);
                offset += 16 + packets[i].len() as u64;
            }
        }
    }
}

#[test]
fn legacy_link_type_fcs_bits_are_masked() {
    for field in [0x1000_0000 | 101, 0x3000_0000 | 101, 0x0400_0000 | 101] {
        let mut f = pcap_header(false, false, field, 0);
        pcap_record(&mut f, false, 0, 0, &raw_v4_udp(b"x"), 29);
        let (info, got, _) = read_all(f).unwrap();
        assert_eq!(info.link_types, vec![LinkType::RAW]);
        assert_eq!(got[0].link_type, LinkType::RAW);
    }
}

/// Two interfaces with different link types and resolutions, SPB, skipped
/// blocks, a dangling interface id, and a second section.
fn pcapng(big: bool) -> Vec<u8> {
    let eth = eth_v4_udp(b"on eth");
    let raw = raw_v4_udp(b"on raw");
    let mut ng = PcapNg::new(big);
    ng.idb(1, 0, Some(6), None) // if 0: ethernet, µs
        .block(4, &[0, 0, 0, 0]) // NRB, empty
        .idb(101, 0, Some(9), Some(100)) // if 1: raw, ns, +100 s
        .epb(0, 1_700_000_000_123_456, &eth, eth.len() as u32)
        .epb(1, 1_700_000_000_123_456_789, &raw, 1000)
        .block(5, &[0u8; 12]) // ISB
        .block(0x0000_0bad, &[1, 2, 3, 4, 0, 0, 0, 0]) // custom
        .spb(&eth, eth.len() as u32)
        .epb(7, 5, &raw, raw.len() as u32) // no interface 7
        .shb() // new section: interfaces reset
        .idb(228, 0, Some(0x80 | 10), None) // if 0: ipv4, 2^-10 s
        .epb(0, 3 * 1024 + 512, &raw, raw.len() as u32)
        .epb(1, 1, &raw, raw.len() as u32); // if 1 no longer exists
    ng.out.clone()
}

#[test]
fn pcapng_interfaces_resolutions_spb_and_sections() {
    for big in [false, true] {
        let bytes = pcapng(big);
        // Interfaces before the first packet are known right after open.
        let early =
            CaptureReader::from_read(Path::new("x"), Box::new(Cursor::new(bytes.clone()))).unwrap();
        assert_eq!(
            early.info().link_types,
            vec![LinkType::ETHERNET, LinkType::RAW]
        );

        let (info, got, end) = read_all(bytes).unwrap();
        assert_eq!(
            info,
            CaptureInfo {
                format: CaptureFormat::PcapNg,
                gzip: false,
                nanosecond: false,
                big_endian: big,
                link_types: vec![LinkType::ETHERNET, LinkType::RAW, LinkType::IPV4],
            }
        );
        assert_eq!(
            end,
            ReadEnd {
                frames: 6,
                truncated: None,
                skipped: Vec::new(),
                overruns: Vec::new()
            }
        );
        let summary: Vec<(u64, i64, LinkType)> =
            got.iter().map(|g| (g.number, g.ts, g.link_type)).collect();
        assert_eq!(
            summary,
            vec![
                (1, 1_700_000_000_123_456_000, LinkType::ETHERNET),
                (2, 1_700_000_100_123_456_789, LinkType::RAW),
                (3, 0, LinkType::ETHERNET),
                (4, 5000, LinkType::UNKNOWN),
                (5, 3_500_000_000, LinkType::IPV4),
                (6, 1000, LinkType::UNKNOWN),
            ]
        );
        assert_eq!(got[0].data, eth_v4_udp(b"on eth"));
        assert_eq!(got[1].data, raw_v4_udp(b"on raw"));
        assert_eq!(got[1].orig_len, 1000);
        assert_eq!(
            got[2].data,
            eth_v4_udp(b"on eth"),
            "SPB data without padding"
        );
        // Offsets: SHB 28, IDB 40 (name, tsresol), NRB 16, IDB 52 (+tsoffset), EPB...
        assert_eq!(got[0].offset, 28 + 40 + 16 + 52);
    }
}

#[test]
fn pcapng_first_interface_in_ns_sets_nanosecond() {
    let mut ng = PcapNg::new(false);
    ng.idb(1, 0, Some(9), None)
        .epb(0, 42, &eth_v4_udp(b"x"), 43);
    let (info, got, _) = read_all(ng.out).unwrap();
    assert!(info.nanosecond);
    assert_eq!(got[0].ts, 42);
}

#[test]
fn spb_length_is_min_of_orig_len_snaplen_and_data() {
    let p = eth_v4_udp(b"0123456789abcdef");
    let mut ng = PcapNg::new(false);
    ng.idb(1, 20, None, None)
        .spb(&p, p.len() as u32) // snaplen 20 wins
        .spb(&p[..10], 5); // orig_len 5 wins over the padded data
    let (_, got, end) = read_all(ng.out).unwrap();
    assert_eq!(end.frames, 2);
    assert_eq!(got[0].data, &p[..20]);
    assert_eq!(got[1].data, &p[..5]);
    // SPB before any IDB: unknown link type, not a panic.
    let mut ng = PcapNg::new(false);
    ng.spb(&p, p.len() as u32);
    let (_, got, _) = read_all(ng.out).unwrap();
    assert_eq!(
        (got[0].link_type, got[0].data.len()),
        (LinkType::UNKNOWN, p.len())
    );
}

#[test]
fn truncated_pcap_reports_frame_and_offset() {
    let full = legacy(false, false);
    let packets = three_packets();
    let third_at = 24 + 16 + packets[0].len() + 16 + packets[1].len();
    // Cut inside the third record's data, then inside its header.
    for cut in [full.len() - 3, third_at + 7] {
        let (_, got, end) = read_all(full[..cut].to_vec()).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].data, packets[1]);
        let t = end.truncated.expect("truncated");
        assert_eq!(end.frames, 2);
        assert_eq!((t.frame, t.offset), (Some(3), third_at as u64));
        assert!(
            t.reason.starts_with("the file ends ") && t.reason.contains(" into a "),
            "{}",
            t.reason
        );
        assert!(!t.corrupt);
    }
    // A cut exactly between records is a clean end.
    let (_, got, end) = read_all(full[..third_at].to_vec()).unwrap();
    assert_eq!((got.len(), end.truncated), (2, None));
}

/// Enhanced Packet Blocks in their plainest form (no options, as editcap and dumpcap write
/// them), read straight from their header, give the frames the same blocks with an option
/// give through pcap-parser, in both byte orders and whatever the padding; one whose
/// trailing length disagrees ends the reading as it does with an option.
#[test]
fn plain_enhanced_packets_read_as_those_with_options() {
    for big in [false, true] {
        let packets = [eth_v4_udp(b"one"), eth_v4_udp(b"second"), eth_v4_udp(b"x3")];
        let build = |options: &[(u16, &[u8])]| {
            let mut ng = PcapNg::new(big);
            ng.idb(1, 0, Some(9), None);
            for (i, p) in packets.iter().enumerate() {
                let ts = 1_700_000_000_000_000_000 + i as u64 * 1_001;
                ng.epb_with(0, ts, p, p.len() as u32 + 4, options);
            }
            ng.out
        };
        let (plain, with_option) = (build(&[]), build(&[(1, b"a comment")]));
        let frames = |bytes: Vec<u8>| {
            let (_, got, end) = read_all(bytes).unwrap();
            let frames: Vec<(u64, i64, LinkType, Vec<u8>, u32)> = got
                .into_iter()
                .map(|g| (g.number, g.ts, g.link_type, g.data, g.orig_len))
                .collect();
            (frames, end)
        };
        let (a, b) = (frames(plain.clone()), frames(with_option.clone()));
        assert_eq!(a.0.len(), 3, "big-endian {big}");
        assert_eq!(a, b, "big-endian {big}");
        assert_eq!(a.0[2].3, packets[2], "big-endian {big}");
        // The last block's trailing length, one more: pcap-parser's verdict either way.
        let cut = |mut bytes: Vec<u8>| {
            let last = bytes.len() - 4;
            let len = u32::from_le_bytes(bytes[last..].try_into().unwrap());
            let wrong = if big { len.swap_bytes() + 1 } else { len + 1 };
            let wrong = if big { wrong.swap_bytes() } else { wrong };
            bytes[last..].copy_from_slice(&wrong.to_le_bytes());
            let len = if big { len.swap_bytes() } else { len };
            let said = format!(
                "the trailing block length {} differs from the leading {len}",
                len + 1
            );
            (frames(bytes), said)
        };
        let ((a, said_a), (b, said_b)) = (cut(plain), cut(with_option));
        assert_eq!(a.0.len(), 2, "big-endian {big}");
        assert_eq!((a.0, a.1.frames), (b.0, b.1.frames), "big-endian {big}");
        assert_eq!(
            a.1.truncated.map(|t| t.reason),
            Some(said_a),
            "big-endian {big}"
        );
        assert_eq!(
            b.1.truncated.map(|t| t.reason),
            Some(said_b),
            "big-endian {big}"
        );
    }
}

#[test]
fn truncated_and_corrupt_pcapng() {
    let full = pcapng(false);
    let (_, all, _) = read_all(full.clone()).unwrap();
    let fourth = all[3].offset as usize;
    let (_, got, end) = read_all(full[..fourth + 30].to_vec()).unwrap();
    assert_eq!(got, all[..3]);
    let t = end.truncated.unwrap();
    assert_eq!((t.frame, t.offset), (Some(4), fourth as u64));
    let block = u32::from_le_bytes(full[fourth + 4..fourth + 8].try_into().unwrap());
    assert_eq!(
        t.reason,
        format!("the file ends 30 bytes into a {block}-byte block")
    );
    assert!(!t.corrupt);
    assert_eq!(
        t.to_string(),
        format!("frame 4 at byte offset {fourth}: {}", t.reason)
    );

    // Trailing length that disagrees with the leading one.
    let mut bad = full.clone();
    let len = u32::from_le_bytes(bad[fourth + 4..fourth + 8].try_into().unwrap()) as usize;
    bad[fourth + len - 4] ^= 0x40;
    let (_, got, end) = read_all(bad).unwrap();
    assert_eq!(got.len(), 3);
    let t = end.truncated.unwrap();
    assert_eq!((t.frame, t.offset), (Some(4), fourth as u64));
    let trailing = len ^ 0x40;
    assert_eq!(
        t.reason,
        format!("the trailing block length {trailing} differs from the leading {len}")
    );
    assert!(t.corrupt);

    // The same at an interface description: no frame is named.
    let mut bad = full.clone();
    let idb = u32::from_le_bytes(bad[32..36].try_into().unwrap());
    bad[28 + idb as usize - 4] ^= 0x40;
    let (_, got, end) = read_all(bad).unwrap();
    assert_eq!(got, []);
    let t = end.truncated.unwrap();
    assert_eq!((t.frame, t.offset), (None, 28));
    assert_eq!(
        t.to_string(),
        format!(
            "byte offset 28: the trailing block length {} differs from the leading {idb}",
            idb ^ 0x40
        )
    );

    // EPB whose caplen points past its block, its framing intact: skipped, and the rest read.
    let mut bad = full.clone();
    bad[fourth + 20..fourth + 24].copy_from_slice(&4000u32.to_le_bytes());
    let (_, got, end) = read_all(bad).unwrap();
    assert_eq!(got.len(), all.len() - 1);
    assert_eq!(got[3].offset, all[4].offset);
    assert_eq!(end.truncated, None);
    assert_eq!(
        end.skipped,
        [Skipped {
            frame: 4,
            offset: fourth as u64,
            block: "Enhanced Packet Block",
            packet_too_long: Some((4000, len as u32 - 32)),
        }]
    );

    // Block length not a multiple of 4, and absurdly large.
    for (len, reason) in [
        (
            30u32,
            "block total length 30 is not a multiple of 4".to_string(),
        ),
        (
            0x7fff_fff0,
            format!(
                "a block length of {} bytes exceeds the maximum of 16777216",
                0x7fff_fff0u32
            ),
        ),
    ] {
        let mut bad = full.clone();
        bad[fourth + 4..fourth + 8].copy_from_slice(&len.to_le_bytes());
        let (_, got, end) = read_all(bad).unwrap();
        assert_eq!(got.len(), 3);
        let t = end.truncated.unwrap();
        assert_eq!((t.reason, t.corrupt), (reason, true));
    }
}

#[test]
fn record_length_limits() {
    // Longer than the snaplen: read whole, as libpcap does, and listed; reading goes on.
    let p = eth_v4_udp(b"hi");
    let mut f = pcap_header(false, false, 1, 40);
    pcap_record(&mut f, false, 0, 0, &p[..40], 100);
    pcap_record(&mut f, false, 0, 0, &p, p.len() as u32);
    pcap_record(&mut f, false, 0, 0, &p[..40], 100);
    let (_, got, end) = read_all(f).unwrap();
    assert_eq!(got.len(), 3);
    assert_eq!(got[1].data, p);
    assert_eq!(end.truncated, None);
    let overrun = Overrun {
        frame: 2,
        caplen: p.len() as u32,
        snaplen: 40,
    };
    assert_eq!(end.overruns, vec![overrun]);

    // Past libpcap's maximum too: no capture holds it, reading stops there.
    for caplen in [MAX_OVERRUN_RECORD + 1, 0x7FFF_FFFF] {
        let mut f = pcap_header(false, false, 1, 40);
        pcap_record(&mut f, false, 0, 0, &p[..40], 100);
        let second = f.len() as u64;
        f.extend_from_slice(&[0u8; 8]);
        f.extend_from_slice(&caplen.to_le_bytes());
        f.extend_from_slice(&caplen.to_le_bytes());
        f.extend_from_slice(&[0u8; 100]);
        let (_, got, end) = read_all(f).unwrap();
        assert_eq!(got.len(), 1);
        let t = end.truncated.unwrap();
        assert_eq!((t.frame, t.offset, t.corrupt), (Some(2), second, true));
        let reason = match caplen {
            0x7FFF_FFFF => {
                format!("a record length of {caplen} bytes exceeds the maximum of {MAX_RECORD_LEN}")
            }
            _ => format!(
                "a record length of {caplen} bytes exceeds the file's snaplen of 40 \
                 and the maximum of 262144"
            ),
        };
        assert_eq!(t.reason, reason);
    }

    // Listed up to MAX_OVERRUNS; every record is still read.
    let mut f = pcap_header(false, false, 1, 40);
    for _ in 0..MAX_OVERRUNS + 3 {
        pcap_record(&mut f, false, 0, 0, &p, p.len() as u32);
    }
    let (_, got, end) = read_all(f).unwrap();
    assert_eq!(got.len(), MAX_OVERRUNS + 3);
    assert_eq!(end.overruns.len(), MAX_OVERRUNS);
    assert_eq!(end.overruns[MAX_OVERRUNS - 1].frame, MAX_OVERRUNS as u64);

    // Over 16 MiB, with snaplen 0 (no declared limit): stops without allocating.
    let mut f = pcap_header(true, false, 1, 0);
    f.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0]);
    f.extend_from_slice(&(16 * 1024 * 1024 + 1u32).to_be_bytes());
    f.extend_from_slice(&[0u8; 100]);
    let mut r = CaptureReader::from_read(Path::new("huge.pcap"), Box::new(Cursor::new(f))).unwrap();
    let end = r.for_each_frame(|_| {}).unwrap();
    let t = end.truncated.unwrap();
    assert_eq!((t.frame, t.offset), (Some(1), 24));
    assert_eq!(
        t.reason,
        "a record length of 16777217 bytes exceeds the maximum of 16777216"
    );
    assert_eq!(r.buffer_capacity(), INITIAL_BUFFER);
}

#[test]
fn a_big_record_grows_the_buffer_just_enough() {
    let big: Vec<u8> = (0..3_000_000u32).map(|i| i as u8).collect();
    let mut f = pcap_header(false, false, 1, 0);
    pcap_record(&mut f, false, 0, 0, b"small", 5);
    pcap_record(&mut f, false, 0, 0, &big, big.len() as u32);
    pcap_record(&mut f, false, 0, 0, b"after", 5);
    let mut r = CaptureReader::from_read(Path::new("big.pcap"), Box::new(Cursor::new(f))).unwrap();
    let mut lens = Vec::new();
    let end = r
        .for_each_frame(|fr| {
            if fr.data.len() == big.len() {
                assert!(fr.data == &big[..]);
            }
            lens.push(fr.data.len())
        })
        .unwrap();
    assert_eq!(
        end,
        ReadEnd {
            frames: 3,
            truncated: None,
            skipped: Vec::new(),
            overruns: Vec::new()
        }
    );
    assert_eq!(lens, [5, big.len(), 5]);
    assert!(r.buffer_capacity() > big.len() && r.buffer_capacity() <= 2 * 4 * 1024 * 1024);
}

/// Produces a pcap of `n` identical records on the fly, never holding the file.
struct Generated {
    header: Vec<u8>,
    record: Vec<u8>,
    remaining: u64,
    pos: usize,
    in_header: bool,
}

impl Read for Generated {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            let src = if self.in_header {
                &self.header
            } else {
                &self.record
            };
            if !self.in_header && self.remaining == 0 {
                break;
            }
            let take = (src.len() - self.pos).min(buf.len() - n);
            buf[n..n + take].copy_from_slice(&src[self.pos..self.pos + take]);
            n += take;
            self.pos += take;
            if self.pos == src.len() {
                self.pos = 0;
                if self.in_header {
                    self.in_header = false;
                } else {
                    self.remaining -= 1;
                }
            }
        }
        Ok(n)
    }
}

#[test]
fn many_records_keep_the_buffer_bounded() {
    let p = eth_v4_udp(&[0x5a; 200]);
    let mut record = Vec::new();
    pcap_record(&mut record, false, 1, 2, &p, p.len() as u32);
    let n = 100_000u64;
    let gen = Generated {
        header: pcap_header(false, false, 1, 65535),
        record,
        remaining: n,
        pos: 0,
        in_header: true,
    };
    let mut r = CaptureReader::from_read(Path::new("gen.pcap"), Box::new(gen)).unwrap();
    let mut count = 0u64;
    let mut last_offset = 0;
    let end = r
        .for_each_frame(|f| {
            count += 1;
            assert_eq!(f.number, count);
            assert_eq!(f.data.len(), p.len());
            last_offset = f.file_offset;
        })
        .unwrap();
    assert_eq!(
        end,
        ReadEnd {
            frames: n,
            truncated: None,
            skipped: Vec::new(),
            overruns: Vec::new()
        }
    );
    assert_eq!(count, n);
    assert_eq!(last_offset, 24 + (n - 1) * (16 + p.len() as u64));
    assert!(r.buffer_capacity() < 1024 * 1024, "{}", r.buffer_capacity());
    assert_eq!(r.bytes_read(), 24 + n * (16 + p.len() as u64));
}

/// What the threaded reader delivers of `f`, and how it ends.
fn read_threaded(f: Vec<u8>) -> (Vec<Got>, ReadEnd) {
    let mut reader =
        CaptureReader::from_read(Path::new("test.pcap"), Box::new(Cursor::new(f))).unwrap();
    let mut got = Vec::new();
    let (end, _) = reader
        .for_each_frame_parallel(vec![(), (), ()], |f, _, _| {
            got.push(Got::of(f));
            ControlFlow::Continue(())
        })
        .unwrap();
    (got, end)
}

#[test]
fn threaded_reading_delivers_the_same_frames_in_order() {
    // More frames than a batch holds, sizes from 0 to 599 bytes, one record bigger than a
    // batch, and a cut last record: the threaded reader must deliver exactly what the plain
    // one does, and end the same way.
    let mut f = pcap_header(false, true, 1, 4 << 20);
    for i in 0..10_000u32 {
        let len = if i == 5_000 {
            3 * MAX_BATCH_BYTES / 2
        } else {
            (i as usize * 7) % 600
        };
        let data: Vec<u8> = (0..len).map(|b| (b as u32 ^ i) as u8).collect();
        pcap_record(&mut f, false, i, i, &data, len as u32);
    }
    f.truncate(f.len() - 10);
    let plain = read_all(f.clone()).unwrap();
    let (got, end) = read_threaded(f);
    assert_eq!(got.len(), 9_999);
    assert!(end.truncated.is_some());
    assert_eq!((got, end), (plain.1, plain.2));
}

#[test]
fn threaded_reading_of_tiny_frames_hands_batches_over_mid_buffer() {
    // Records of 16 to 23 bytes: a buffer holds more than a batch's frames of them, so
    // batches are handed over before the buffer is parsed to its end.
    let mut f = pcap_header(true, false, 1, 65535);
    let n = 5 * BatchSize::for_threads(3).frames() as u32;
    for i in 0..n {
        let data: Vec<u8> = (0..i % 8).map(|b| (b ^ i) as u8).collect();
        pcap_record(&mut f, true, i, i, &data, 60);
    }
    let plain = read_all(f.clone()).unwrap();
    // Gzipped, reads come short (the inflater's pieces): the same frames again.
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&f).unwrap();
    let (got, end) = read_threaded(enc.finish().unwrap());
    assert_eq!((&got, &end), (&plain.1, &plain.2));
    let (got, end) = read_threaded(f);
    assert_eq!(got.len(), n as usize);
    assert_eq!((got, end), (plain.1, plain.2));
}

/// Results eight times the size of their frames, as export's JSON; counts the frames left
/// to the consumer because their batch's results were full.
struct Heavy(Arc<AtomicU64>);

impl Ahead for Heavy {
    type Results = Vec<u8>;
    fn frame(&mut self, frame: &Frame<'_>, results: &mut Vec<u8>, room: bool) {
        if room {
            results.resize(results.len() + 8 * frame.data.len(), 0);
        } else {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn size(results: &Vec<u8>) -> usize {
        results.len()
    }
    fn clear(results: &mut Vec<u8>, _: usize) {
        results.clear();
    }
}

#[test]
fn batches_are_sized_for_their_results_from_the_first_one() {
    // 5 MB of frames whose results weigh 8 times more: no batch may overflow, not even the
    // first ones, read before any batch was worked.
    let mut f = pcap_header(false, false, 1, 65535);
    for i in 0..20_000u32 {
        pcap_record(&mut f, false, i, 0, &[7u8; 250], 250);
    }
    let overflowed = Arc::new(AtomicU64::new(0));
    let workers = (0..3).map(|_| Heavy(overflowed.clone())).collect();
    let mut reader =
        CaptureReader::from_read(Path::new("heavy.pcap"), Box::new(Cursor::new(f))).unwrap();
    let mut delivered = 0;
    let (end, _) = reader
        .for_each_frame_parallel(workers, |_, _, _| {
            delivered += 1;
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!((delivered, end.frames), (20_000, 20_000));
    assert_eq!(overflowed.load(Ordering::Relaxed), 0);
}

/// Records each frame's number and length, so that the consumer can tell it got its own.
struct Echo;

impl Ahead for Echo {
    type Results = Vec<(u64, usize)>;
    fn frame(&mut self, frame: &Frame<'_>, results: &mut Self::Results, _: bool) {
        results.push((frame.number, frame.data.len()));
    }
    fn size(results: &Self::Results) -> usize {
        results.len() * 16
    }
    fn clear(results: &mut Self::Results, _: usize) {
        results.clear();
    }
}

#[test]
fn the_pool_delivers_what_one_thread_reads_whatever_the_threads_records_and_stops() {
    // Random captures (up to 20,000 records of 0 to 1,500 bytes, one in a hundred up to
    // 300 KiB, a third of them cut short), read on 2 to 8 threads, a quarter of the runs
    // stopped by the consumer at a random frame: every frame comes in order, with its own
    // results, and the run ends as one thread's does.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut random = move |below: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % below.max(1)
    };
    for case in 0..24 {
        let n = random(20_000) as u32;
        let mut f = pcap_header(false, false, 1, 1 << 20);
        for i in 0..n {
            let len = match random(100) {
                0 => random(300 << 10),
                _ => random(1_500),
            } as usize;
            pcap_record(&mut f, false, i, 0, &vec![i as u8; len], len as u32);
        }
        if random(3) == 0 {
            f.truncate(f.len().saturating_sub(1 + random(40) as usize).max(24));
        }
        let (_, plain, plain_end) = read_all(f.clone()).unwrap();
        let threads = 2 + random(7) as usize;
        let stop_at = (random(4) == 0).then(|| 1 + random(u64::from(n) + 1) as usize);
        let mut reader =
            CaptureReader::from_read(Path::new("random.pcap"), Box::new(Cursor::new(f))).unwrap();
        let mut got = Vec::new();
        let workers = (0..threads).map(|_| Echo).collect();
        let (end, _) = reader
            .for_each_frame_parallel(workers, |frame, results, index| {
                assert_eq!(results.get(index), Some(&(frame.number, frame.data.len())));
                got.push(Got::of(frame));
                match stop_at == Some(got.len()) {
                    true => ControlFlow::Break(()),
                    false => ControlFlow::Continue(()),
                }
            })
            .unwrap();
        let context = format!("case {case}: {n} records, {threads} threads, stop {stop_at:?}");
        match stop_at.filter(|&k| k <= plain.len()) {
            Some(k) => {
                assert!(got == plain[..k], "{context}");
                assert_eq!(end.frames, k as u64, "{context}");
            }
            None => assert!((&got, &end) == (&plain, &plain_end), "{context}"),
        }
    }
}

/// Panics at the frame whose first byte is 0xEE.
struct Fragile;

impl Ahead for Fragile {
    type Results = ();
    fn frame(&mut self, frame: &Frame<'_>, _: &mut (), _: bool) {
        assert_ne!(frame.data.first(), Some(&0xEE), "a worker's slip");
    }
    fn size(_: &()) -> usize {
        0
    }
    fn clear(_: &mut (), _: usize) {}
}

/// Whether `for_each_frame_parallel` on `threads` [`Fragile`] workers and `on_frame` ends
/// with a panic within a minute (rather than hanging).
fn ends_with_a_panic(
    file: Vec<u8>,
    threads: usize,
    on_frame: impl FnMut(&Frame<'_>, &(), usize) -> ControlFlow<()> + Send + 'static,
) -> bool {
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let mut reader =
                CaptureReader::from_read(Path::new("fragile.pcap"), Box::new(Cursor::new(file)))
                    .unwrap();
            let workers = (0..threads).map(|_| Fragile).collect();
            let _ = reader.for_each_frame_parallel(workers, on_frame);
        }));
        let _ = done_tx.send(run.is_err());
    });
    done_rx.recv_timeout(std::time::Duration::from_secs(60)) == Ok(true)
}

#[test]
fn a_thread_that_panics_ends_the_run_instead_of_hanging_it() {
    // 400,000 frames, 25 batches and more: more than are let in flight at once, and the slip
    // well after the first ones, so that any thread may work it.
    let frames = |slip: u32| {
        let mut f = pcap_header(false, false, 1, 65535);
        for i in 0..400_000u32 {
            let byte = if i == slip { 0xEE } else { 0 };
            pcap_record(&mut f, false, i, 0, &[byte; 20], 20);
        }
        f
    };
    for threads in [2, 4] {
        // A worker's slip, on whichever thread works its batch.
        let run = ends_with_a_panic(
            frames(300_000),
            threads,
            |_, _, _| ControlFlow::Continue(()),
        );
        assert!(run, "a worker, {threads} threads");
        // The ordered stage's, while the workers wait for a place in flight.
        let mut seen = 0;
        let run = ends_with_a_panic(frames(u32::MAX), threads, move |_, _, _| {
            seen += 1;
            assert_ne!(seen, 20_000, "the consumer's slip");
            ControlFlow::Continue(())
        });
        assert!(run, "the ordered stage, {threads} threads");
    }
}

#[test]
fn threaded_reading_stops_when_the_consumer_breaks() {
    // 20 MB of records: the consumer takes one frame, then the reader must stop soon after
    // (it reads at most a few batches ahead), not run to the end of the file.
    let mut f = pcap_header(false, false, 1, 65535);
    for i in 0..20_000u32 {
        pcap_record(&mut f, false, i, 0, &[0u8; 1000], 1000);
    }
    let size = f.len() as u64;
    let mut reader =
        CaptureReader::from_read(Path::new("big.pcap"), Box::new(Cursor::new(f))).unwrap();
    let mut delivered = 0;
    let (end, _) = reader
        .for_each_frame_parallel(vec![(), ()], |_, _, _| {
            delivered += 1;
            ControlFlow::Break(())
        })
        .unwrap();
    assert_eq!(delivered, 1);
    // The end is the frame that stopped it, however far reading ran ahead.
    assert_eq!(end.frames, 1);
    assert!(end.truncated.is_none());
    assert!(
        reader.bytes_read() < size / 4,
        "read {} of {size} bytes",
        reader.bytes_read()
    );
}

#[test]
fn gzip_is_read_transparently() {
    let plain = legacy(true, true);
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&plain).unwrap();
    let gz = enc.finish().unwrap();
    let (_, expected, _) = read_all(plain).unwrap();

    let mut r = CaptureReader::from_read(Path::new("c.pcap.gz"), Box::new(Cursor::new(gz.clone())))
        .unwrap();
    assert!(r.info().gzip);
    assert!(r.info().nanosecond && r.info().big_endian);
    let mut got = 0;
    let end = r.for_each_frame(|_| got += 1).unwrap();
    assert_eq!((got, end.frames, end.truncated), (3, 3, None));
    assert_eq!(r.bytes_read(), gz.len() as u64);
    assert_eq!(
        r.progress_counter().load(Ordering::Relaxed),
        gz.len() as u64
    );

    let (info, frames, _) = read_all(gz.clone()).unwrap();
    assert!(info.gzip);
    assert_eq!(frames, expected);

    // A cut gzip stream ends with a truncation, never an error or a hang.
    let (_, frames, end) = read_all(gz[..gz.len() - 20].to_vec()).unwrap();
    assert!(end.truncated.is_some());
    assert_eq!(frames[..], expected[..frames.len()]);

    // gzip of something that is not a capture.
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(b"hello world, not a capture").unwrap();
    let msg = not_capture(enc.finish().unwrap());
    assert_eq!(
        msg,
        "test.pcap: not a capture file: gzip data that decompresses to neither pcap nor pcapng (starts with 68 65 6c 6c)"
    );
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(b"#").unwrap();
    assert_eq!(
        not_capture(enc.finish().unwrap()),
        "test.pcap: not a capture file: gzip data that decompresses to 1 bytes, too few for a capture file header (starts with 23)"
    );
    // The first byte of a gzip stream, alone.
    assert_eq!(
        not_capture(vec![0x1f]),
        "test.pcap: not a capture file: too short for a capture file header (starts with 1f, as a gzip stream does: cut after one byte?)"
    );
    // Corrupt gzip right away.
    let msg = not_capture(vec![0x1f, 0x8b, 0xff, 0xff, 0xff, 0xff]);
    assert!(msg.contains("gzip"), "{msg}");
}

#[test]
fn not_captures() {
    assert_eq!(
        not_capture(Vec::new()),
        "test.pcap: not a capture file: empty file"
    );
    assert_eq!(
        not_capture(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec()),
        "test.pcap: not a capture file: not a pcap or pcapng file (starts with 47 45 54 20)"
    );
    assert!(not_capture(pcap_header(false, false, 1, 0)[..10].to_vec()).contains("too short"));
    assert!(not_capture(PcapNg::new(false).out[..20].to_vec()).contains("pcapng section header"));
    // A valid header and nothing else is an empty capture, not an error.
    let (_, got, end) = read_all(pcap_header(false, false, 1, 0)).unwrap();
    assert_eq!(
        (got.len(), end),
        (
            0,
            ReadEnd {
                frames: 0,
                truncated: None,
                skipped: Vec::new(),
                overruns: Vec::new()
            }
        )
    );

    let err = CaptureReader::open(Path::new("/nonexistent/x.pcap"))
        .err()
        .unwrap();
    assert!(matches!(err, CaptureError::Io { .. }));
    assert!(err.to_string().starts_with("/nonexistent/x.pcap: "));
    assert!(!err.to_string().contains('\n'));
}

#[test]
fn reader_can_move_to_another_thread() {
    fn is_send<T: Send>() {}
    is_send::<CaptureReader>();
}

#[test]
fn open_reads_a_real_file() {
    let path =
        std::env::temp_dir().join(format!("rtype-inspect-capture-{}.pcap", std::process::id()));
    std::fs::write(&path, legacy(false, false)).unwrap();
    let mut r = CaptureReader::open(&path).unwrap();
    let end = r.for_each_frame(|_| {}).unwrap();
    std::fs::remove_file(&path).ok();
    assert_eq!(end.frames, 3);
    assert_eq!(r.path(), path.as_path());
}

#[test]
fn io_error_mid_file_ends_with_truncation() {
    struct FailAfter(Cursor<Vec<u8>>, usize);
    impl Read for FailAfter {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0.position() as usize >= self.1 {
                return Err(io::Error::other("cable unplugged"));
            }
            let room = (self.1 - self.0.position() as usize).min(buf.len());
            self.0.read(&mut buf[..room])
        }
    }
    let full = legacy(false, false);
    let (_, got, end) =
        read_from(Box::new(FailAfter(Cursor::new(full), 24 + 16 + 45 + 10))).unwrap();
    assert_eq!(got.len(), 1);
    let t = end.truncated.unwrap();
    assert_eq!((t.frame, t.offset), (Some(2), 24 + 16 + 45));
    assert_eq!(
        (t.reason.as_str(), t.corrupt),
        ("a read error: cable unplugged", false)
    );
}

#[test]
fn slow_input_one_byte_per_read() {
    struct Trickle(Cursor<Vec<u8>>);
    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(1);
            self.0.read(&mut buf[..n])
        }
    }
    let (_, expected, _) = read_all(pcapng(true)).unwrap();
    let (_, got, end) = read_from(Box::new(Trickle(Cursor::new(pcapng(true))))).unwrap();
    assert_eq!((got, end.truncated), (expected, None));
}

#[test]
fn mutated_files_never_panic_or_hang() {
    let seeds = [
        legacy(false, false),
        legacy(true, true),
        pcapng(false),
        pcapng(true),
    ];
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for seed in &seeds {
        for _ in 0..150 {
            let mut f = seed.clone();
            for _ in 0..(next() % 4 + 1) {
                let at = next() as usize % f.len();
                match next() % 3 {
                    0 => f[at] = next() as u8,
                    1 => f[at] ^= 0x80,
                    _ => f.truncate(at.max(1)),
                }
            }
            if let Ok(mut r) = CaptureReader::from_read(Path::new("m"), Box::new(Cursor::new(f))) {
                let mut n = 0u64;
                let end = r.for_each_frame(|fr| {
                    n += 1;
                    assert_eq!(fr.number, n);
                    let _ = crate::capture::udp_from_frame(fr.link_type, fr.data);
                });
                assert_eq!(end.unwrap().frames, n);
                assert!(r.buffer_capacity() <= MAX_BUFFER);
            }
        }
    }
}
