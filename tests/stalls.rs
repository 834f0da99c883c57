//! Stalls of periodic streams, on the real captures: the `session.snapshot-stall` finding (and
//! which captures have one), its configurable multiple, the `snapshot_gap_ms_max` budget, the
//! profile's longest gap per bucket, and the per-stream time delta the CLI's filters and the
//! generated Lua dissector both give.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

#[path = "support/bin.rs"]
mod bin;
#[path = "support/skip.rs"]
mod skip;
use bin::{captures, run, run_in};

const C17: &str = "tests/fixtures/reference-17byte-1client.pcap";

/// A scratch directory unique to this test.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("stalls")
        .join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The stall findings of an export: (frame, detail).
fn stalls(ndjson: &str) -> Vec<(u64, String)> {
    ndjson
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["kind"] == "finding" && r["id"] == "session.snapshot-stall")
        .map(|r| {
            (
                r["frame"].as_u64().unwrap(),
                r["detail"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn the_17_byte_captures_200_ms_stall_is_one_finding() {
    let (code, out, err) = run(&["export", C17, "--quiet"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        stalls(&out),
        [(
            268,
            "no SERVER_SNAPSHOT for 200.1 ms (period 16.7 ms), ticks 221–231 missing (11)".into()
        )]
    );
}

#[test]
fn only_the_17_byte_capture_stalls_among_every_sample_and_real_capture() {
    let mut found = BTreeMap::new();
    for file in captures() {
        let (code, out, err) = run(&["export", &file, "--quiet"]);
        assert!(code == 0, "{file}: {err}");
        let frames: Vec<u64> = stalls(&out).into_iter().map(|(f, _)| f).collect();
        if !frames.is_empty() {
            found.insert(file, frames);
        }
    }
    assert_eq!(found, BTreeMap::from([(C17.to_owned(), vec![268])]));
}

#[test]
fn the_stall_multiple_is_configurable() {
    let file = root().join(C17);
    let file = file.to_str().unwrap();
    // 200.1 ms is 12 periods of 16.7 ms: a stall under 12, none from 13 on.
    for (multiple, expected) in [("12", 1), ("13", 0)] {
        let dir = scratch(&format!("multiple-{multiple}"));
        std::fs::write(
            dir.join("rtype-inspect.toml"),
            format!("stall_multiple = {multiple}\n"),
        )
        .unwrap();
        let (code, out, err) = run_in(&dir, &["export", file, "--quiet"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(stalls(&out).len(), expected, "stall_multiple = {multiple}");
    }
    let dir = scratch("multiple-bad");
    std::fs::write(dir.join("rtype-inspect.toml"), "stall_multiple = 0.5\n").unwrap();
    let (code, _, err) = run_in(&dir, &["export", file, "--quiet"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("stall_multiple must be a number of 1 or more, not 0.5"),
        "{err}"
    );
}

#[test]
fn the_gap_budget_catches_the_stall() {
    let file = root().join(C17);
    let file = file.to_str().unwrap();
    for (budget, broken) in [("100", true), ("250", false)] {
        let dir = scratch(&format!("budget-{budget}"));
        std::fs::write(
            dir.join("rtype-inspect.toml"),
            format!("profile = \"reference-17byte\"\n[budgets]\nsnapshot_gap_ms_max = {budget}\n"),
        )
        .unwrap();
        let (_, out, err) = run_in(&dir, &["check", file, "--format", "json", "--quiet"]);
        let j: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"));
        let budgets: Vec<(String, String, u64)> = j["files"][0]["budgets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    b["id"].as_str().unwrap().to_owned(),
                    format!("{:.1}", b["measured"].as_f64().unwrap()),
                    b["first_frame"].as_u64().unwrap(),
                )
            })
            .collect();
        let expected = if broken {
            vec![("budget.snapshot-gap".to_owned(), "200.1".to_owned(), 268)]
        } else {
            vec![]
        };
        assert_eq!(budgets, expected, "snapshot_gap_ms_max = {budget}");
    }
}

#[test]
fn profile_buckets_carry_the_longest_gap() {
    let (code, out, err) = run(&[
        "profile",
        C17,
        "--profile",
        "reference-17byte",
        "--format",
        "json",
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    let j: Value = serde_json::from_str(&out).unwrap();
    let conv = &j["conversations"][0];
    let longest = |key: &str| {
        conv["series"][key]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_f64)
            .fold(0.0, f64::max)
    };
    // The bucket's mean hides the stall; its longest gap is the stall.
    assert!(longest("snapshot_gap_ms_mean") < 30.0);
    let max = longest("snapshot_gap_ms_max");
    assert_eq!(format!("{max:.1}"), "200.1");
    assert_eq!(
        conv["distributions"]["snapshot_gap_ms"]["max"].as_f64(),
        Some(max)
    );
    assert_eq!(conv["snapshot_gap_max_frame"], 268);
    let (code, text, _) = run(&["profile", C17, "--profile", "reference-17byte", "--quiet"]);
    assert_eq!(code, 0);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("snapshot gap ms"))
        .expect("the gap series");
    assert!(line.ends_with("max 200.1"), "{line}");
}

/// `frame.number` and the stream time delta of every datagram of `file` over `filter`, as
/// `packets -T fields` writes them.
fn cli_deltas(file: &str, filter: &str) -> String {
    let (code, out, err) = run(&[
        "packets",
        file,
        "-Y",
        filter,
        "-T",
        "fields",
        "-e",
        "frame.number",
        "-e",
        "rtype.stream.time_delta",
        "-e",
        "rt.stream.time_delta",
        "-e",
        "rtnp.stream.time_delta",
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    out
}

#[test]
fn the_stream_time_delta_finds_the_stall() {
    // The server sent nothing for 200 ms: frame 267 (an ENTITY_SPAWN) ends the gap in the
    // server's stream, the snapshot of frame 268 the snapshots'.
    assert_eq!(
        cli_deltas(C17, "rtype.stream.time_delta > 0.05"),
        "267\t0.200047000\t\t\n"
    );
    // Each stream's first datagram has none.
    assert_eq!(
        cli_deltas(C17, "frame.number <= 3"),
        "1\t\t\t\n2\t\t\t\n3\t0.005428000\t\t\n"
    );
}

#[test]
fn tshark_gives_the_same_stream_time_deltas() {
    if Command::new("tshark").arg("--version").output().is_err() {
        skip::missing(
            "tshark_gives_the_same_stream_time_deltas",
            "tshark is not on PATH (apt-get install tshark)",
        );
        return;
    }
    let script = root().join("wireshark/rtype.lua");
    for file in captures().iter().filter(|f| !f.ends_with(".gz")) {
        let out = Command::new("tshark")
            .args(["-n", "-r", file, "-X"])
            .arg(format!("lua_script:{}", script.display()))
            .args(["-Y", "rtype || rt || rtnp", "-T", "fields"])
            .args(["-e", "frame.number", "-e", "rtype.stream.time_delta"])
            .args(["-e", "rt.stream.time_delta", "-e", "rtnp.stream.time_delta"])
            .output()
            .expect("tshark runs");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            cli_deltas(file, "rtype || rt || rtnp"),
            "{file}"
        );
    }
    let out = Command::new("tshark")
        .args(["-n", "-r", C17, "-X"])
        .arg(format!("lua_script:{}", script.display()))
        .args(["-Y", "rtype.stream.time_delta > 0.05", "-T", "fields"])
        .args(["-e", "frame.number", "-e", "rtype.stream.time_delta"])
        .output()
        .expect("tshark runs");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "267\t0.200047000\n");
}
