//! `export` and `packets` end to end: every sample and real capture's export validates against
//! docs/timeline.schema.json; golden outputs on samples; filters; arrays; broken pipes.

use std::io::Read;
use std::process::{Command, Stdio};

use serde_json::Value;

#[path = "support/bin.rs"]
mod bin;
use bin::{captures, run, BIN};

#[test]
fn every_export_validates_against_the_schema() {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string("docs/timeline.schema.json").unwrap())
            .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema is valid");
    let files = captures();
    assert!(files.len() >= 12, "{files:?}");
    for file in files {
        let (code, out, err) = run(&["export", &file]);
        assert_eq!(code, 0, "{file}: {err}");
        let mut kinds = std::collections::BTreeSet::new();
        for (i, line) in out.lines().enumerate() {
            let record: Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{file} line {}: {e}", i + 1));
            if let Err(e) = validator.validate(&record) {
                panic!(
                    "{file} line {}: {e}\n{}",
                    i + 1,
                    &line[..line.len().min(400)]
                );
            }
            kinds.insert(record["kind"].as_str().unwrap().to_string());
        }
        for kind in ["capture", "datagram", "summary"] {
            assert!(kinds.contains(kind), "{file}: no {kind} record");
        }
    }
}

#[test]
fn json_array_is_one_document_with_the_same_records() {
    let file = "samples/violations-chunks.pcap";
    let (_, ndjson, _) = run(&["export", file]);
    let (code, array, _) = run(&["export", file, "--json-array"]);
    assert_eq!(code, 0);
    let array: Vec<Value> = serde_json::from_str(&array).expect("one JSON document");
    let lines: Vec<Value> = ndjson
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(array, lines);
}

#[test]
fn export_to_a_file() {
    let path = std::env::temp_dir().join(format!("rtype-export-{}.json", std::process::id()));
    let (code, out, _) = run(&[
        "export",
        "samples/violations-crc.pcap",
        "-o",
        path.to_str().unwrap(),
    ]);
    assert_eq!((code, out.as_str()), (0, ""));
    let written = std::fs::read_to_string(&path).unwrap();
    let (_, stdout, _) = run(&["export", "samples/violations-crc.pcap"]);
    assert_eq!(written, stdout);
    let _ = std::fs::remove_file(path);
}

#[test]
fn filters_combine() {
    let file = "tests/fixtures/reference-17byte-1client.pcap";
    let frames = |args: &[&str]| -> Vec<u64> {
        let mut all = vec!["export", file];
        all.extend_from_slice(args);
        let (code, out, err) = run(&all);
        assert_eq!(code, 0, "{err}");
        out.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|r| r["kind"] == "datagram")
            .map(|r| r["frame"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(frames(&["--frames", "1-6"]), [1, 2, 3, 4, 5, 6]);
    assert_eq!(
        frames(&["--frames", "1-6", "--direction", "c2s"]),
        [1, 3, 5]
    );
    assert_eq!(frames(&["--frames", "1-40", "--type", "0x21"]), [10]);
    assert_eq!(frames(&["--type", "levelinit"]), [8]);
    assert_eq!(frames(&["--type", "SERVER_PONG"]).len(), 15);
    assert_eq!(
        frames(&["--type", "pong", "--violation", "rtype.pong.empty"]).len(),
        15
    );
    assert_eq!(
        frames(&[
            "--severity",
            "error",
            "--profile",
            "samples/profiles/reference-17byte.toml"
        ]),
        Vec::<u64>::new()
    );
    assert_eq!(frames(&["--time", "0-0.03"]), [1, 2, 3, 4, 5]);
    assert_eq!(
        frames(&["--address", "127.0.0.1:50010", "--frames", "1-4"]),
        [1, 3]
    );
    let (code, _, err) = run(&["export", file, "--violation", "no.such.rule"]);
    assert_eq!(code, 2);
    assert!(err.contains("no.such.rule"), "{err}");
}

#[test]
fn packets_golden_on_samples() {
    for (args, golden) in [
        (
            vec!["packets", "samples/violations-messages.pcap"],
            "tests/golden/packets-violations-messages.txt",
        ),
        (
            vec!["packets", "-V", "samples/violations-chunks.pcap"],
            "tests/golden/packets-V-violations-chunks.txt",
        ),
        (
            vec![
                "packets",
                "-V",
                "-x",
                "samples/clean-session.pcap",
                "--frames",
                "1-40",
            ],
            "tests/golden/packets-Vx-clean-session.txt",
        ),
        (
            vec!["export", "samples/violations-compression.pcap"],
            "tests/golden/export-violations-compression.ndjson",
        ),
    ] {
        let (code, out, err) = run(&args);
        assert_eq!(code, 0, "{err}");
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::create_dir_all("tests/golden").unwrap();
            std::fs::write(golden, &out).unwrap();
        }
        let want = std::fs::read_to_string(golden).unwrap_or_default();
        assert!(
            out == want,
            "{golden} differs (UPDATE_GOLDEN=1 cargo test --test export rewrites it after review)"
        );
        // On a pipe, lines are whole: no line is cut (cut lines end in an ellipsis).
        for line in out.lines().filter(|_| args[0] == "packets") {
            assert!(!line.ends_with('…'), "cut on a pipe: {line}");
        }
    }
}

#[test]
fn output_piped_into_head_ends_quietly() {
    for cmd in ["packets", "export"] {
        let mut child = Command::new(BIN)
            .args([cmd, "tests/fixtures/reference-15byte-levelevents.pcap"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 64];
        stdout.read_exact(&mut first).unwrap();
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{cmd}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{cmd}");
    }
}
