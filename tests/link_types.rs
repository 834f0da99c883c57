//! Captures read the way tshark reads them: every link layer and tunnel that carries game traffic
//! in practice, with a real session re-wrapped in it (its message counts must be the Ethernet
//! original's, and tshark must find the same UDP payloads in it); records longer than the
//! snaplen read on; undecodable link types named.

#[path = "support/bin.rs"]
mod bin;

use std::path::{Path, PathBuf};
use std::process::Command;

use bin::run;
use rtype_inspect::capture::CaptureReader;
use rtype_inspect::samplegen::encap::Encap;
use rtype_inspect::samplegen::pcap::{PcapWriter, PcapngWriter};
use serde_json::Value;

/// Real sessions: the sample's, and two captured from the reference implementations.
const SESSIONS: &[&str] = &[
    "samples/clean-session.pcap",
    "tests/fixtures/reference-17byte-1client.pcap",
    "tests/fixtures/rt-two-players.pcap",
];

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("rtype-link-types-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The IP packets of an Ethernet capture, with their times in µs.
fn ip_packets(path: &str) -> Vec<(u64, Vec<u8>)> {
    let mut reader = CaptureReader::open(Path::new(path)).unwrap();
    let mut packets = Vec::new();
    let end = reader
        .for_each_frame(|f| {
            assert!(matches!(f.data[12..14], [0x08, 0x00] | [0x86, 0xdd]));
            packets.push((f.ts_nanos as u64 / 1000, f.data[14..].to_vec()));
        })
        .unwrap();
    assert_eq!(end.truncated, None);
    packets
}

/// The summary's JSON document of `path`, without what names the file and its link layer.
fn summary(path: &Path) -> Value {
    let (code, out, err) = run(&["--format", "json", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{}: {err}", path.display());
    let mut doc: Value = serde_json::from_str(&out).unwrap();
    let map = doc.as_object_mut().unwrap();
    map.remove("file");
    map.remove("capture");
    doc
}

/// tshark's innermost UDP payload of every frame, or None when tshark is not installed (then
/// the test fails under CI, which installs it).
fn tshark_payloads(path: &Path) -> Option<Vec<String>> {
    let out = Command::new("tshark")
        .args(["-n", "-r"])
        .arg(path)
        .args(["-T", "fields", "-e", "udp.payload", "-E", "occurrence=l"])
        .output();
    match out {
        Ok(out) if out.status.success() => Some(
            String::from_utf8(out.stdout)
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect(),
        ),
        _ if std::env::var_os("CI").is_some() => panic!("tshark is required under CI"),
        _ => {
            eprintln!("tshark is not on PATH: its half of the comparison is skipped");
            None
        }
    }
}

/// `packets` in `encap`, written as pcap, or as pcapng when `ng`.
fn write_wrapped(path: &Path, encap: Encap, packets: &[(u64, Vec<u8>)], ng: bool) {
    let file = std::fs::File::create(path).unwrap();
    let link = encap.link_type().0;
    if ng {
        let mut w = PcapngWriter::new(file, &[link]).unwrap();
        for (ts, ip) in packets {
            w.packet(0, *ts, &encap.wrap(ip)).unwrap();
        }
        w.finish().unwrap();
    } else {
        let mut w = PcapWriter::new(file, link).unwrap();
        for (ts, ip) in packets {
            w.record(*ts, &encap.wrap(ip)).unwrap();
        }
        w.finish().unwrap();
    }
}

#[test]
fn every_link_type_and_tunnel_carries_a_real_session_whole() {
    let d = dir();
    for (i, session) in SESSIONS.iter().enumerate() {
        let packets = ip_packets(session);
        let original = summary(Path::new(session));
        // tshark on the sample's session only: it takes a second a file.
        let tshark_original = (i == 0)
            .then(|| tshark_payloads(Path::new(session)))
            .flatten();
        for (n, &encap) in Encap::ALL.iter().enumerate() {
            // pcap and pcapng by turns.
            let ng = n % 2 == 1;
            let name = format!("{encap:?}{}", if ng { ".pcapng" } else { ".pcap" });
            let path = d.join(&name);
            write_wrapped(&path, encap, &packets, ng);
            assert_eq!(summary(&path), original, "{session} in {name}");
            if let Some(original) = &tshark_original {
                let theirs = tshark_payloads(&path).unwrap();
                assert_eq!(&theirs, original, "tshark: {session} in {name}");
            }
        }
    }
}

#[test]
fn link_types_are_named_with_their_fcs_bits_masked() {
    let d = dir();
    let packets = ip_packets(SESSIONS[0]);
    let path = d.join("fcs.pcap");
    write_wrapped(&path, Encap::Ieee80211, &packets, false);
    // LT_FCS_LENGTH_PRESENT and a 4-byte FCS length: 0x3400_0069 is 802.11 (105).
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[20..24].copy_from_slice(&0x3400_0069u32.to_le_bytes());
    std::fs::write(&path, bytes).unwrap();
    let (code, out, _) = run(&["--format", "json", path.to_str().unwrap()]);
    assert_eq!(code, 0);
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        doc["capture"]["link_types"],
        serde_json::json!(["ieee802_11"])
    );
    assert_eq!(doc["counts"]["datagrams"], 593);
}

/// The sample with one record of `caplen` bytes (a TCP segment in Ethernet, as GRO writes them)
/// after its first frame.
fn with_long_record(caplen: u32) -> PathBuf {
    let bytes = std::fs::read(SESSIONS[0]).unwrap();
    assert_eq!(
        &bytes[16..20],
        &65_535u32.to_le_bytes(),
        "the sample's snaplen"
    );
    let first = 24 + 16 + u32::from_le_bytes(bytes[32..36].try_into().unwrap()) as usize;
    let mut out = bytes[..first].to_vec();
    out.extend_from_slice(&bytes[24..32]);
    out.extend(caplen.to_le_bytes());
    out.extend(caplen.to_le_bytes());
    let mut frame = vec![0u8; caplen.min(1 << 20) as usize];
    frame[12..16].copy_from_slice(&[0x08, 0x00, 0x45, 0x00]);
    frame[23] = 6;
    out.extend(frame);
    out.extend_from_slice(&bytes[first..]);
    let path = dir().join(format!("long-{caplen}.pcap"));
    std::fs::write(&path, out).unwrap();
    path
}

#[test]
fn a_record_longer_than_the_snaplen_reads_on_with_a_warning() {
    let path = with_long_record(65_549);
    let file = path.to_str().unwrap();
    let (code, out, err) = run(&["check", "--format", "json", file]);
    assert_eq!(code, 0, "{out}{err}");
    let (_, out, _) = run(&["--format", "json", file]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["capture"]["truncated"], Value::Null);
    assert_eq!(doc["counts"]["frames"], 594);
    assert_eq!(doc["counts"]["datagrams"], 593);
    let capture: Vec<(String, u64, u64)> = doc["violations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["id"].as_str().unwrap().starts_with("capture."))
        .map(|v| {
            let id = v["id"].as_str().unwrap().to_owned();
            (
                id,
                v["count"].as_u64().unwrap(),
                v["first_frame"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(capture, [("capture.oversized-record".to_owned(), 1, 2)]);
    // Its detail: the record's length and the snaplen.
    let (_, out, _) = run(&["packets", "-V", file]);
    assert!(
        out.contains("capture.oversized-record")
            && out.contains("a 65549-byte record, over the file's snaplen of 65535"),
        "{out}"
    );
}

#[test]
fn a_record_longer_than_any_capture_holds_still_ends_reading() {
    for caplen in [262_145, 0x7FFF_FFFF] {
        let path = with_long_record(caplen);
        let (code, out, _) = run(&["--format", "json", path.to_str().unwrap()]);
        assert_eq!(code, 0);
        let doc: Value = serde_json::from_str(&out).unwrap();
        let cut = &doc["capture"]["truncated"];
        assert_eq!(
            (&cut["frame"], &cut["corrupt"]),
            (&2.into(), &true.into()),
            "{caplen}"
        );
        assert_eq!(doc["counts"]["datagrams"], 1);
    }
}

#[test]
fn a_packet_of_an_undescribed_interface_is_a_finding_at_its_frame() {
    let packets = ip_packets(SESSIONS[0]);
    let path = dir().join("undescribed.pcapng");
    write_wrapped(&path, Encap::Raw12, &packets, true);
    // The second packet names interface 3; the section describes one.
    let mut bytes = std::fs::read(&path).unwrap();
    let (mut at, mut packets_seen) = (0, 0);
    while packets_seen < 2 {
        let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let (kind, len) = (word(at), word(at + 4) as usize);
        if kind == 6 {
            packets_seen += 1;
            if packets_seen == 2 {
                bytes[at + 8..at + 12].copy_from_slice(&3u32.to_le_bytes());
            }
        }
        at += len;
    }
    std::fs::write(&path, bytes).unwrap();
    let (code, out, _) = run(&["--format", "json", path.to_str().unwrap()]);
    assert_eq!(code, 0);
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["counts"]["unsupported_link"], 1);
    assert_eq!(doc["counts"]["datagrams"], 592);
    let found: Vec<(&str, &Value, &Value)> = doc["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["id"].as_str().unwrap(), &v["count"], &v["first_frame"]))
        .filter(|(id, _, _)| id.starts_with("capture."))
        .collect();
    assert_eq!(
        found,
        [("capture.undescribed-interface", &1.into(), &2.into())]
    );
}

#[test]
fn an_undecodable_link_type_is_named_and_its_frames_counted_apart() {
    let mut bytes = [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65_535, 147]
        .map(u32::to_le_bytes)
        .concat();
    for _ in 0..2 {
        bytes.extend([0u32, 0, 4, 4].map(u32::to_le_bytes).concat());
        bytes.extend(b"abcd");
    }
    let path = dir().join("user0.pcap");
    std::fs::write(&path, bytes).unwrap();
    let file = path.to_str().unwrap();
    let (code, out, err) = run(&[file]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().take(2).collect();
    assert_eq!(
        lines,
        [
            format!("{file}: pcap (link type 147 (USER0)), 2 frames over 0.000 s, complete"),
            "0 protocol datagrams, 0 other UDP, 0 not UDP, 0 malformed, 2 not decoded".into(),
        ]
    );
    let (_, out, _) = run(&["--format", "json", file]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        doc["capture"]["link_types"],
        serde_json::json!(["link type 147 (USER0)"])
    );
    let counts = &doc["counts"];
    assert_eq!(
        (
            &counts["frames"],
            &counts["not_udp"],
            &counts["unsupported_link"]
        ),
        (&2.into(), &0.into(), &2.into())
    );
}
