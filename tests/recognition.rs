//! Recognise by evidence, then judge the whole conversation.
//!
//! Ordinary UDP that merely starts like a dialect (a JSON broadcast, text starting "RT", zeros
//! like a Cap'n Proto segment table, a lone rtype magic) is other UDP, never judged: a real
//! session among a desktop's traffic gives exactly the findings it gives alone. And once a
//! conversation is recognised, every datagram on it is judged: one whose magic or framing broke
//! is that dialect's malformed datagram, reported at its frame, in every view.

use std::collections::BTreeMap;
use std::process::Command;

use rtype_inspect::samplegen::noise;
use rtype_inspect::samplegen::pcap::{udp_frame, Link};
use serde_json::Value;

#[path = "support/faults.rs"]
mod faults;
use faults::{inject, records};

fn findings_by_frame(ndjson: &str) -> BTreeMap<u64, Vec<String>> {
    faults::findings_by_frame(ndjson, false)
}

const BIN: &str = env!("CARGO_BIN_EXE_rtype-inspect");

const REAL: &[&str] = &[
    "tests/fixtures/reference-17byte-1client.pcap",
    "tests/fixtures/reference-15byte-levelevents.pcap",
    "tests/fixtures/rt-two-players.pcap",
    "tests/fixtures/rtnp-solo.pcap",
];

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("rtype-recognition-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn run(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn summary(file: &str) -> Value {
    serde_json::from_str(&run(&[file, "--format", "json"])).unwrap()
}

/// `pcap` with every noise datagram (three rounds) spread between its records.
fn with_noise(pcap: &[u8]) -> (Vec<u8>, usize) {
    let recs = records(pcap);
    let (first, last) = (recs[0].0, recs[recs.len() - 1].0);
    let count = 3 * noise::datagrams().len();
    let noise = noise::records(first + 1, (last - first) / count as u64, count);
    let mut frames: Vec<(u64, Vec<u8>)> = recs
        .iter()
        .map(|(ts, at, len)| (*ts, pcap[*at..at + len].to_vec()))
        .collect();
    for n in &noise {
        frames.push((
            n.ts_us,
            udp_frame(Link::Ethernet, n.from, n.to, &n.bytes).unwrap(),
        ));
    }
    frames.sort_by_key(|f| f.0);
    let mut out = pcap[..24].to_vec();
    for (ts, frame) in frames {
        out.extend(((ts / 1_000_000) as u32).to_le_bytes());
        out.extend(((ts % 1_000_000) as u32).to_le_bytes());
        out.extend((frame.len() as u32).to_le_bytes());
        out.extend((frame.len() as u32).to_le_bytes());
        out.extend(frame);
    }
    (out, count)
}

#[test]
fn first_bytes_alone_would_take_the_noise_for_game_traffic() {
    use rtype_inspect::datagram::Dialect;
    let kinds = noise::datagrams();
    let lookalikes = kinds
        .iter()
        .filter(|(_, _, d)| Dialect::detect(d).is_some())
        .count();
    // JSON (2), "RT" text (2), a bare PING, zeros and mDNS like a segment table, a lone magic.
    assert!(lookalikes >= 7, "{lookalikes}");
    for (from, to, d) in &kinds {
        assert_eq!(Dialect::recognise(d), None, "{from} → {to}: {d:?}");
    }
}

#[test]
fn a_session_among_desktop_traffic_gives_the_findings_it_gives_alone() {
    let mixed_sample = summary("samples/mixed-desktop.pcap");
    let clean = summary("samples/clean-session.pcap.gz");
    let mut cases = vec![(mixed_sample, clean, 3 * noise::datagrams().len())];
    for real in REAL {
        let (mixed, count) = with_noise(&std::fs::read(real).unwrap());
        let path = temp(&format!("mixed-{}", real.rsplit('/').next().unwrap()));
        std::fs::write(&path, mixed).unwrap();
        cases.push((summary(path.to_str().unwrap()), summary(real), count));
    }
    for (mixed, alone, noise) in cases {
        for key in [
            "messages",
            "violations",
            "crc_failures",
            "snapshots_reassembled",
        ] {
            let (m, a) = (&mixed[key], &alone[key]);
            if key == "violations" {
                // First frames move with the noise between them; the rules and counts may not.
                let rules = |v: &Value| -> BTreeMap<String, u64> {
                    v.as_array()
                        .unwrap()
                        .iter()
                        .map(|r| {
                            (
                                r["id"].as_str().unwrap().to_owned(),
                                r["count"].as_u64().unwrap(),
                            )
                        })
                        .collect()
                };
                assert_eq!(rules(m), rules(a));
            } else {
                assert_eq!(m, a, "{key}");
            }
        }
        let pairs = |s: &Value| -> Vec<(String, String)> {
            s["conversations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| (c["client"].to_string(), c["server"].to_string()))
                .collect()
        };
        assert_eq!(pairs(&mixed), pairs(&alone));
        assert_eq!(mixed["counts"]["datagrams"], alone["counts"]["datagrams"]);
        assert_eq!(mixed["counts"]["other_udp"].as_u64(), Some(noise as u64));
    }
}

/// What a faulted datagram's findings become.
#[derive(Clone, Copy)]
enum Then {
    /// Its own findings, and the fault's.
    Added,
    /// Only the fault's: the message behind it can no longer be read.
    Replaced,
}

/// Breaks `count` datagrams of `file` (every `step`th from `from`) with `fault`, and requires
/// the export to report each at its frame with `expected` (as `then` says), every other frame
/// unchanged, the datagrams still decoded as the conversation's dialect.
#[allow(clippy::too_many_arguments)]
fn faults(
    file: &str,
    from: usize,
    step: usize,
    count: usize,
    fault: impl Fn(usize, &mut [u8]),
    expected: impl Fn(usize) -> Vec<&'static str>,
    then: Then,
    profile: &[&str],
) {
    let (faulty, broken) = inject(&std::fs::read(file).unwrap(), from, step, count, fault);
    let path = temp(&format!(
        "faulty-{}-{from}",
        file.rsplit('/').next().unwrap()
    ));
    std::fs::write(&path, &faulty).unwrap();
    let export = |f: &str| {
        let mut args = vec!["export", f];
        args.extend(profile);
        findings_by_frame(&run(&args))
    };
    let (clean, found) = (export(file), export(path.to_str().unwrap()));
    assert_eq!(
        clean.keys().collect::<Vec<_>>(),
        found.keys().collect::<Vec<_>>(),
        "{file}: every datagram is still one of the conversation's"
    );
    for (frame, ids) in &found {
        match broken.get(frame) {
            Some(n) => {
                let mut want = match then {
                    Then::Added => clean[frame].clone(),
                    Then::Replaced => Vec::new(),
                };
                want.extend(expected(*n).into_iter().map(str::to_owned));
                want.sort();
                want.dedup();
                assert_eq!(ids, &want, "{file}: frame {frame} (fault {n})");
            }
            None => assert_eq!(ids, &clean[frame], "{file}: untouched frame {frame}"),
        }
    }
    // The packet list shows them too.
    let list = run(&["packets", path.to_str().unwrap()]);
    let shown = list.lines().filter(|l| l.contains(expected(0)[0])).count();
    assert!(shown >= count / 2, "{shown} lines show {}", expected(0)[0]);
}

#[test]
fn a_broken_rtype_magic_is_a_malformed_rtype_datagram() {
    // 30 datagrams with one bit of the magic flipped: half with the CRC left as it was (a
    // mismatch), half with the CRC fixed over the flipped bytes.
    faults(
        "tests/fixtures/reference-17byte-1client.pcap",
        20,
        97,
        30,
        |n, d| {
            d[n % 4] ^= 1 << (n % 8);
            if n % 2 == 1 {
                let crc = crc32fast::hash(&d[..d.len() - 4]);
                let end = d.len();
                d[end - 4..].copy_from_slice(&crc.to_be_bytes());
            }
        },
        |n| {
            if n % 2 == 0 {
                vec!["rtype.header.magic", "rtype.crc.mismatch"]
            } else {
                vec!["rtype.header.magic"]
            }
        },
        Then::Added,
        &["--profile", "reference-17byte"],
    );
}

#[test]
fn a_broken_rt_magic_is_a_malformed_rt_datagram() {
    // 15 datagrams: "TR" → "RT" (the other byte order) and one bit flipped, in turn.
    faults(
        "tests/fixtures/rt-two-players.pcap",
        200,
        251,
        15,
        |n, d| {
            if n % 2 == 0 {
                d[..2].copy_from_slice(b"RT");
            } else {
                d[1] ^= 0x20;
            }
        },
        |n| {
            if n % 2 == 0 {
                vec!["rt.byte-order.switch"]
            } else {
                vec!["rt.header.magic"]
            }
        },
        Then::Added,
        &[],
    );
}

#[test]
fn a_broken_rtnp_envelope_is_a_malformed_rtnp_datagram() {
    // 30 envelopes: the segment size written big-endian, or a segment count of 2 (1 on the wire).
    faults(
        "tests/fixtures/rtnp-solo.pcap",
        10,
        25,
        30,
        |n, d| {
            if n % 2 == 0 {
                d[4..8].reverse();
            } else {
                d[0] = 1;
            }
        },
        |_| vec!["rtnp.envelope.malformed"],
        Then::Replaced,
        &[],
    );
}
