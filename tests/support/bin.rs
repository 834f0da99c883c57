//! The binary under test and the captures every end-to-end test reads: shared by the test files
//! that include it (`#[path = "support/bin.rs"] mod bin;`).

#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

pub const BIN: &str = env!("CARGO_BIN_EXE_rtype-inspect");

/// Runs the binary: its exit code, stdout and stderr.
pub fn run(args: &[&str]) -> (i32, String, String) {
    run_in(Path::new(env!("CARGO_MANIFEST_DIR")), args)
}

/// Runs the binary in `dir`, where a configuration file may be.
pub fn run_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .current_dir(dir)
        .args(args)
        .output()
        .expect("binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// Every sample and real capture, sorted.
pub fn captures() -> Vec<String> {
    let mut files: Vec<String> = ["samples", "tests/fixtures"]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.to_str().unwrap();
            n.ends_with(".pcap") || n.ends_with(".pcapng") || n.ends_with(".pcap.gz")
        })
        .map(|p| p.to_str().unwrap().to_string())
        .collect();
    files.sort();
    files
}
