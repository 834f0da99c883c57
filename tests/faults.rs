//! Faults that used to vanish (issue 20), injected into the real captures: each is reported at
//! the frame that broke the rule, and every other frame keeps exactly the findings it had.

use std::collections::BTreeMap;

#[path = "support/bin.rs"]
mod bin;
#[path = "support/faults.rs"]
mod faults;
use faults::{findings_by_frame, rewrite, shortened, udp_payload_at, with_payload};
use rtype_inspect::samplegen::rtype::{Compression, RtypeBuilder};

const C17: &str = "tests/fixtures/reference-17byte-1client.pcap";
const RT: &str = "tests/fixtures/rt-two-players.pcap";

/// Every finding of `pcap` by frame (datagrams' own and those reported on their own).
fn findings(name: &str, pcap: &[u8]) -> BTreeMap<u64, Vec<String>> {
    let dir = std::env::temp_dir().join(format!("rtype-faults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Tests run side by side: each file its own name.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = dir.join(format!("{n}-{name}"));
    std::fs::write(&file, pcap).unwrap();
    // The document's layout (`--strict-layout`): each frame keeps its own findings, where the
    // layout found would report its departure once, at a conversation's first snapshot only.
    let (code, out, err) = bin::run(&[
        "export",
        file.to_str().unwrap(),
        "--strict-layout",
        "-o",
        "-",
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    let _ = std::fs::remove_file(&file);
    findings_by_frame(&out, true)
}

/// `faulty`'s findings against `clean`'s, given that frame `copied` was written again right
/// after itself (later frames move up by one): the copy's findings beyond the original's, and
/// every other frame's must be unchanged.
fn after_a_copy(
    clean: &BTreeMap<u64, Vec<String>>,
    faulty: &BTreeMap<u64, Vec<String>>,
    copied: u64,
) -> Vec<String> {
    for (frame, ids) in faulty {
        let was = match *frame {
            f if f <= copied => f,
            f if f == copied + 1 => continue,
            f => f - 1,
        };
        assert_eq!(Some(ids), clean.get(&was), "frame {frame} (was {was})");
    }
    let mut extra = faulty[&(copied + 1)].clone();
    for id in &clean[&copied] {
        let i = extra
            .iter()
            .position(|x| x == id)
            .expect("the copy's own findings");
        extra.remove(i);
    }
    extra
}

/// A copy of a completed set's last chunk is a duplicate chunk (and a duplicate datagram), not a
/// new set that then goes missing ("1 of 2 chunks"): frame 558 is chunk 2/2 of tick 340.
#[test]
fn a_late_copy_of_a_completed_sets_chunk_is_a_duplicate() {
    let pcap = std::fs::read(C17).unwrap();
    let clean = findings("clean.pcap", &pcap);
    let copied = 558;
    let faulty = rewrite(&pcap, |i, frame| match i as u64 + 1 {
        f if f == copied => vec![frame.to_vec(), frame.to_vec()],
        _ => vec![frame.to_vec()],
    });
    let faulty = findings("copy-558.pcap", &faulty);
    assert_eq!(
        after_a_copy(&clean, &faulty, copied),
        ["rtype.chunk.duplicate", "session.duplicate-datagram"]
    );
}

/// A copy of a single-chunk set (frame 10, chunk 1/1 of tick 100) is a duplicate chunk too, not
/// only a duplicate datagram.
#[test]
fn a_copy_of_a_single_chunk_set_is_a_duplicate_chunk() {
    let pcap = std::fs::read(C17).unwrap();
    let clean = findings("clean.pcap", &pcap);
    let copied = 10;
    let faulty = rewrite(&pcap, |i, frame| match i as u64 + 1 {
        f if f == copied => vec![frame.to_vec(), frame.to_vec()],
        _ => vec![frame.to_vec()],
    });
    let faulty = findings("copy-10.pcap", &faulty);
    assert_eq!(
        after_a_copy(&clean, &faulty, copied),
        ["rtype.chunk.duplicate", "session.duplicate-datagram"]
    );
}

/// An rt component snapshot sent short is truncated against the layout its conversation has been
/// using, not read in another layout that then has bytes left over: frames 378 and 388 are
/// TRANSFORM_SNAPSHOTs of two entities, cut by 1 to 7 bytes in turn.
#[test]
fn a_short_rt_snapshot_is_truncated_in_its_conversations_layout() {
    let pcap = std::fs::read(RT).unwrap();
    let clean = findings("clean.pcap", &pcap);
    for cut in 1..=7 {
        let faulty = rewrite(&pcap, |i, frame| match i + 1 {
            378 | 388 => vec![shortened(frame, cut)],
            _ => vec![frame.to_vec()],
        });
        let faulty = findings(&format!("cut-{cut}.pcap"), &faulty);
        for (frame, ids) in &faulty {
            if *frame == 378 || *frame == 388 {
                assert!(
                    ids.contains(&"rt.message.truncated".to_string()),
                    "cut {cut}: {ids:?}"
                );
                assert!(
                    !ids.contains(&"rt.message.trailing".to_string()),
                    "cut {cut}: {ids:?}"
                );
            } else {
                assert_eq!(Some(ids), clean.get(frame), "cut {cut}: frame {frame}");
            }
        }
    }
}

/// A set's first chunk whose totalChunks changed (frame 557, chunk 1 of tick 340, says 3 where
/// its set has 2; re-compressed, its CRC made right) is reported at that frame, not at the next,
/// untouched chunk.
#[test]
fn a_changed_total_on_a_sets_first_chunk_is_reported_at_that_chunk() {
    let pcap = std::fs::read(C17).unwrap();
    let clean = findings("clean.pcap", &pcap);
    let faulty = rewrite(&pcap, |i, frame| {
        if i + 1 != 557 {
            return vec![frame.to_vec()];
        }
        let udp = &frame[udp_payload_at(frame)..];
        let orig = usize::from(u16::from_be_bytes([udp[15], udp[16]]));
        let mut payload =
            lz4_flex::block::decompress(&udp[17..udp.len() - 4], orig).expect("an LZ4 chunk");
        assert_eq!(payload[..2], [0, 2], "totalChunks 2");
        payload[..2].copy_from_slice(&3u16.to_be_bytes());
        let datagram = RtypeBuilder::new(2, 0x21)
            .sequence(340)
            .tick(340)
            .compression(Compression::Auto)
            .build(&payload)
            .unwrap();
        vec![with_payload(frame, &datagram)]
    });
    let faulty = findings("total-557.pcap", &faulty);
    for (frame, ids) in &faulty {
        let mut was = clean[frame].clone();
        if *frame == 557 {
            was.push("rtype.chunk.total-mismatch".into());
            was.sort();
        }
        assert_eq!(ids, &was, "frame {frame}");
    }
}
