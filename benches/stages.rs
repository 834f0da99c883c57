//! Where the time goes: reads one capture several times, each pass doing one more stage of the
//! work, and prints each pass's datagrams per second and its share of the full decode, side by
//! side (ratios, not absolute targets). Run with `cargo bench --bench stages -- FILE`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use rtype_inspect::capture::{udp_from_frame, CaptureReader, LinkOutcome};
use rtype_inspect::datagram::{rtype, Dialect};
use rtype_inspect::message::{decode_message, NoFields};
use rtype_inspect::proto::profile::Profile;

#[derive(Clone, Copy, PartialEq, PartialOrd)]
enum Stage {
    Read,
    Udp,
    Datagram,
    Message,
}

fn pass(path: &Path, stage: Stage) -> (f64, u64) {
    let mut reader = CaptureReader::open(path).expect("capture opens");
    let mut scratch = vec![0u8; rtype::MAX_PAYLOAD];
    let mut findings = Vec::new();
    let profile = Profile::document();
    let mut datagrams = 0u64;
    let start = Instant::now();
    reader
        .for_each_frame(|frame| {
            if stage == Stage::Read {
                datagrams += 1;
                return;
            }
            let LinkOutcome::Udp(udp) = udp_from_frame(frame.link_type, frame.data) else {
                return;
            };
            if Dialect::detect(udp.payload) != Some(Dialect::Rtype) {
                return;
            }
            datagrams += 1;
            if stage == Stage::Udp {
                return;
            }
            findings.clear();
            let Some(d) = rtype::parse(udp.payload, &mut scratch, &mut findings) else {
                return;
            };
            if stage == Stage::Datagram {
                return;
            }
            if let (Some(message), Some(payload)) = (d.message, d.payload(&scratch)) {
                decode_message(
                    message,
                    payload,
                    d.payload_at,
                    rtype::ENDIAN,
                    &profile,
                    &rtype::MESSAGE_RULES,
                    &mut NoFields,
                    &mut findings,
                );
            }
        })
        .expect("capture reads");
    (start.elapsed().as_secs_f64(), datagrams)
}

fn main() {
    let path: PathBuf = std::env::args_os()
        .skip(1)
        .find(|a| a != "--bench")
        .expect("usage: cargo bench --bench stages -- FILE")
        .into();
    let stages = [
        (Stage::Read, "read frames"),
        (Stage::Udp, "+ link, IP, UDP, dialect"),
        (Stage::Datagram, "+ header, CRC, LZ4"),
        (Stage::Message, "+ message fields (no visitor)"),
    ];
    // `PROFILE_STAGE=3` runs only that pass (0-based), once: for perf.
    if let Some(i) = std::env::var("PROFILE_STAGE")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
    {
        let (secs, n) = pass(&path, stages[i.min(3)].0);
        println!("{}: {secs:.3} s, {n} datagrams", stages[i.min(3)].1);
        return;
    }
    // Best of three passes each, interleaved so that load from elsewhere hits every stage alike.
    let mut best = [f64::MAX; 4];
    let mut count = 0;
    for _ in 0..3 {
        for (i, (stage, _)) in stages.iter().enumerate() {
            let (secs, n) = pass(&path, *stage);
            best[i] = best[i].min(secs);
            count = n;
        }
    }
    let full = best[3];
    println!(
        "{:<32} {:>9} {:>14} {:>8}",
        "stage", "s", "datagrams/s", "share"
    );
    for (i, (_, name)) in stages.iter().enumerate() {
        let own = best[i] - if i == 0 { 0.0 } else { best[i - 1] };
        println!(
            "{name:<32} {:>9.3} {:>14.0} {:>7.1}%",
            best[i],
            count as f64 / best[i],
            100.0 * own / full
        );
    }
}
