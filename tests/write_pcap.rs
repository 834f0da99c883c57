//! `-w FILE` on `packets` and `export`: the frames of the datagrams that pass the filters, as a
//! pcap that this tool and tshark read back, written whole or not at all.

#[path = "support/bin.rs"]
mod bin;

use std::path::{Path, PathBuf};
use std::process::Command;

use bin::run;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rtype-write-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The packet list's datagram lines with their hex dumps (`-x`), without frame numbers (the first
/// column), times since the epoch (relative times start at another datagram in a cut), nor the
/// findings that depend on the datagrams before (an entity spawned earlier, a session's end): a
/// cut is another session, of the same datagrams.
fn lines_without_frames(args: &[&str]) -> Vec<String> {
    let mut all = vec!["packets", "-x", "-t", "e"];
    all.extend_from_slice(args);
    let (code, out, err) = run(&all);
    assert_eq!(code, 0, "{args:?}: {err}");
    out.lines()
        .filter(|l| !l.contains(" finding ["))
        .map(|l| match l.strip_prefix("  ") {
            Some(hex) if !hex.starts_with(' ') => l.to_string(),
            _ => {
                let line = l.trim_start().split_once(' ').unwrap().1;
                line.split(" [").next().unwrap().to_string()
            }
        })
        .collect()
}

/// The datagram lines among [`lines_without_frames`]' (not the hex dumps).
fn datagrams(lines: &[String]) -> usize {
    lines.iter().filter(|l| !l.starts_with("  ")).count()
}

fn names(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// tshark's count of the frames in `file` (it must read the file whole).
fn tshark_frames(file: &Path) -> Option<usize> {
    let out = Command::new("tshark")
        .args([
            "-r",
            file.to_str().unwrap(),
            "-T",
            "fields",
            "-e",
            "frame.number",
        ])
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).lines().count())
}

#[test]
fn a_cut_holds_exactly_the_filtered_datagrams() {
    let d = dir("snapshots");
    let cut = d.join("cut.pcap");
    let input = "tests/fixtures/reference-17byte-1client.pcap";
    let filter = "rtype.msg_type == \"SERVER_SNAPSHOT\"";
    let (code, out, err) = run(&["packets", input, "-Y", filter, "-w", cut.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    let expected = lines_without_frames(&[input, "-Y", filter]);
    assert!(datagrams(&expected) > 800, "{}", datagrams(&expected));
    let got = lines_without_frames(&[cut.to_str().unwrap()]);
    assert_eq!(got, expected);
    // Nothing left beside it.
    assert_eq!(names(&d), ["cut.pcap"]);
    // Same link type and precision as the input: the header's magic and link type.
    let (a, b) = (std::fs::read(input).unwrap(), std::fs::read(&cut).unwrap());
    assert_eq!((&a[..4], &a[20..24]), (&b[..4], &b[20..24]));
    if let Some(n) = tshark_frames(&cut) {
        assert_eq!(n, datagrams(&expected));
        let status = Command::new("tshark")
            .args(["-r", cut.to_str().unwrap(), "-c", "1"])
            .output()
            .unwrap()
            .status;
        assert!(status.success());
    }
}

#[test]
fn count_and_port_limit_the_cut() {
    let d = dir("count");
    let cut = d.join("cut.pcap");
    let input = "tests/fixtures/rt-two-players.pcap";
    let (code, _, err) = run(&["packets", input, "-c", "25", "-w", cut.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let expected = lines_without_frames(&[input, "-c", "25"]);
    assert_eq!(datagrams(&expected), 25);
    assert_eq!(lines_without_frames(&[cut.to_str().unwrap()]), expected);
    // A port no datagram uses: an empty capture that still reads.
    let (code, _, err) = run(&["packets", input, "--port", "1", "-w", cut.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::metadata(&cut).unwrap().len(), 24);
    assert!(lines_without_frames(&[cut.to_str().unwrap()]).is_empty());
}

#[test]
fn fragmented_datagrams_bring_all_their_frames() {
    let d = dir("fragments");
    let cut = d.join("cut.pcap");
    let input = "samples/rtnp-fragmented.pcap";
    let (code, _, err) = run(&[
        "packets",
        input,
        "--type",
        "snapshot",
        "-w",
        cut.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let expected = lines_without_frames(&[input, "--type", "snapshot"]);
    assert!(!expected.is_empty());
    assert_eq!(lines_without_frames(&[cut.to_str().unwrap()]), expected);
    // More frames than datagrams: every fragment of each.
    let (_, summary, _) = run(&["--format", "json", cut.to_str().unwrap()]);
    let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
    let frames = summary["capture"]["frames"].as_u64().unwrap();
    assert!(frames > datagrams(&expected) as u64 * 2, "{frames} frames");
    if let Some(n) = tshark_frames(&cut) {
        assert_eq!(n as u64, frames);
    }
}

#[test]
fn export_writes_the_cut_and_the_timeline() {
    let d = dir("export");
    let (cut, timeline) = (d.join("cut.pcap"), d.join("t.ndjson"));
    let input = "tests/fixtures/rtnp-solo.pcap";
    let (code, out, err) = run(&[
        "export",
        input,
        "--direction",
        "c2s",
        "-w",
        cut.to_str().unwrap(),
        "-o",
        timeline.to_str().unwrap(),
    ]);
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    let count = std::fs::read_to_string(&timeline)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("{\"kind\":\"datagram\""))
        .count();
    assert!(count > 10);
    assert_eq!(
        datagrams(&lines_without_frames(&[cut.to_str().unwrap()])),
        count
    );
    // Without -o, only the cut.
    std::fs::remove_file(&cut).unwrap();
    let (code, out, err) = run(&["export", input, "-w", cut.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    assert!(cut.is_file());
}

#[test]
fn a_failed_cut_leaves_the_target_as_it_was() {
    let d = dir("failed");
    let cut = d.join("cut.pcap");
    std::fs::write(&cut, "before").unwrap();
    // Frames of several link types cannot go in one pcap: the error names the frame.
    let (code, _, err) = run(&[
        "packets",
        "samples/link-variety.pcapng",
        "-w",
        cut.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("cut.pcap: frame ") && err.contains("one link type"),
        "{err}"
    );
    // A capture cut short is read as far as it goes; a missing one is an error.
    let (code, _, err) = run(&["packets", "missing.pcap", "-w", cut.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("missing.pcap"), "{err}");
    // Standard input cannot be read twice.
    let (code, _, err) = run(&["packets", "-", "-w", cut.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("not standard input"), "{err}");
    // The input itself is never the target.
    let input = d.join("in.pcap");
    std::fs::copy("samples/clean-session.pcap", &input).unwrap();
    let (code, _, err) = run(&[
        "packets",
        input.to_str().unwrap(),
        "-w",
        input.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("refusing to write the output over an input"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&cut).unwrap(), "before");
    assert_eq!(names(&d), ["cut.pcap", "in.pcap"]);
    // -w is the packet list's replacement, not an addition to its other forms.
    let (code, _, err) = run(&[
        "packets",
        "samples/clean-session.pcap",
        "-V",
        "-w",
        "x.pcap",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot be used with"), "{err}");
}
