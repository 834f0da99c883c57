//! The binary on every bundled sample: its findings must be exactly the ones the generator wrote
//! down when it injected them (`samples/NAME.expected.txt`), and the samples must be what the
//! generator writes today, byte for byte.

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_rtype-inspect");

fn samples() -> Vec<(PathBuf, PathBuf)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("samples").unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if let Some(stem) = name.strip_suffix(".expected.txt") {
            let capture = ["pcap", "pcapng", "pcap.gz"]
                .iter()
                .map(|ext| Path::new("samples").join(format!("{}.{ext}", stem.replace("-gz", ""))))
                .find(|p| {
                    p.exists() && (stem.ends_with("-gz") == p.to_str().unwrap().ends_with(".gz"))
                })
                .unwrap_or_else(|| panic!("no capture for {name}"));
            out.push((capture, path));
        }
    }
    out.sort();
    assert!(out.len() >= 10, "samples missing: {out:?}");
    out
}

/// `ID COUNT` lines of the summary's findings, for the rules the generator predicts: those of the
/// capture, datagram and message layers (session analysis is asserted by the check tests).
fn findings(capture: &Path) -> String {
    let out = Command::new(BIN)
        .args([capture.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut lines: Vec<String> = summary["violations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| !v["id"].as_str().unwrap().starts_with("session."))
        .map(|v| format!("{} {}", v["id"].as_str().unwrap(), v["count"]))
        .collect();
    lines.sort();
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn every_sample_reports_exactly_its_expected_findings() {
    let mut failures = Vec::new();
    for (capture, expected) in samples() {
        let want = std::fs::read_to_string(&expected).unwrap();
        let got = findings(&capture);
        if got != want {
            failures.push(format!(
                "{}:\n--- expected\n{want}--- found\n{got}",
                capture.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn samples_are_what_the_generator_writes() {
    let dir = std::env::temp_dir().join(format!("rtype-samples-{}", std::process::id()));
    let status = Command::new(BIN)
        .args(["generate", "--all", dir.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
    for entry in std::fs::read_dir(&dir).unwrap() {
        let fresh = entry.unwrap().path();
        let name = fresh.file_name().unwrap();
        let kept = Path::new("samples").join(name);
        assert!(kept.exists(), "{name:?} is generated but not in samples/ (run: cargo run --release -- generate --all samples/)");
        assert!(
            std::fs::read(&kept).unwrap() == std::fs::read(&fresh).unwrap(),
            "samples/{name:?} differs from what the generator writes now (run: cargo run --release -- generate --all samples/)"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
