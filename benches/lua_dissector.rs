//! The generated Wireshark dissector's speed and memory (BENCHMARKS.md, "tshark with the
//! dissector"): tshark 4.0 (the host's, Lua 5.2) and tshark 4.4 (Debian 13's, Lua 5.4, in the
//! chroot `.ci/trixie-chroot` builds; skipped with a message when it is not there) over the
//! benchmark mix (`rtype-inspect generate --large N`) and the crafted capture of LZ4-compressed
//! chunk sets of 8,800 entities per chunk, each run without the dissector and with it, side by
//! side. Prints a Markdown table: wall and CPU seconds, datagrams per CPU second, peak RSS, and
//! the RSS the dissector adds per frame.
//!
//! `cargo bench --bench lua_dissector` (settings: N=100000 datagrams, SETS=30 chunk sets (549 KB),
//! BENCH_DIR=/tmp/rtype-bench, where the captures are kept between runs).

#[path = "../tests/support/datagrams.rs"]
mod datagrams;

use std::path::{Path, PathBuf};
use std::process::Command;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Where a tshark runs: the host, or the chroot (as nobody: 4.4 loads no Lua as root).
#[derive(Clone, Copy)]
enum Tshark {
    Host,
    Trixie,
}

fn trixie_root() -> PathBuf {
    std::env::var_os("RTYPE_TRIXIE_ROOT").map_or_else(
        || PathBuf::from("/var/cache/rtype-inspect/trixie"),
        PathBuf::from,
    )
}

/// One run: wall and CPU seconds, peak RSS in KiB (GNU time).
struct Run {
    wall: f64,
    cpu: f64,
    rss_kib: f64,
}

fn run(ts: Tshark, capture: &Path, script: Option<&Path>) -> Run {
    let times = std::env::temp_dir().join(format!("lua-bench-{}.time", std::process::id()));
    let mut cmd = Command::new("/usr/bin/time");
    cmd.arg("-f").arg("%e %U %S %M").arg("-o").arg(&times);
    let inside = |p: &Path| {
        // Files are copied into the chroot's /tmp/rtype-bench once.
        let dir = trixie_root().join("tmp/rtype-bench");
        std::fs::create_dir_all(&dir).unwrap();
        let name = p.file_name().unwrap();
        let target = dir.join(name);
        if std::fs::metadata(&target).map(|m| m.len()).ok()
            != std::fs::metadata(p).map(|m| m.len()).ok()
            || name.to_string_lossy().ends_with(".lua")
        {
            std::fs::copy(p, &target).unwrap();
        }
        format!("/tmp/rtype-bench/{}", name.to_string_lossy())
    };
    match ts {
        Tshark::Host => {
            cmd.args(["tshark", "-n", "-r"]).arg(capture);
            if let Some(s) = script {
                cmd.arg("-X").arg(format!("lua_script:{}", s.display()));
            }
        }
        Tshark::Trixie => {
            cmd.arg("chroot")
                .arg("--userspec=65534:65534")
                .arg(trixie_root())
                .args([
                    "/usr/bin/env",
                    "-i",
                    "PATH=/usr/bin:/bin",
                    "HOME=/tmp",
                    "tshark",
                    "-n",
                    "-r",
                ])
                .arg(inside(capture));
            if let Some(s) = script {
                cmd.arg("-X").arg(format!("lua_script:{}", inside(s)));
            }
        }
    }
    let out = cmd.output().expect("/usr/bin/time runs");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&times).unwrap();
    let _ = std::fs::remove_file(&times);
    let v: Vec<f64> = text
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    Run {
        wall: v[0],
        cpu: v[1] + v[2],
        rss_kib: v[3],
    }
}

fn main() {
    let n = env_or("N", 100_000);
    let sets = env_or("SETS", 30) as u32;
    let dir =
        PathBuf::from(std::env::var("BENCH_DIR").unwrap_or_else(|_| "/tmp/rtype-bench".into()));
    std::fs::create_dir_all(&dir).unwrap();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let script = root.join("wireshark/rtype.lua");

    let mix = dir.join(format!("large-{n}.pcap"));
    if !mix.exists() {
        let status = Command::new(env!("CARGO_BIN_EXE_rtype-inspect"))
            .args(["generate", "--large", &n.to_string(), "--output"])
            .arg(&mix)
            .status()
            .unwrap();
        assert!(status.success());
    }
    let crafted = dir.join(format!("crafted-chunks-{sets}.pcap"));
    let packets = datagrams::crafted_chunk_sets(sets);
    datagrams::write_pcap(&crafted, &packets);
    let size = std::fs::metadata(&crafted).unwrap().len();
    eprintln!(
        "crafted capture: {} datagrams, {} chunk sets of 2 chunks of 8,800 entities, {:.0} KB",
        packets.len(),
        sets,
        size as f64 / 1000.0
    );

    let mut tsharks = vec![(Tshark::Host, "tshark 4.0")];
    if trixie_root().join("usr/bin/tshark").exists() {
        tsharks.push((Tshark::Trixie, "tshark 4.4"));
    } else {
        eprintln!(
            "no tshark 4.4: no chroot at {} (bash .ci/trixie-chroot builds it)",
            trixie_root().display()
        );
    }
    println!("| tshark | capture | datagrams | without: CPU s | with: wall s | with: CPU s | datagrams/CPU s | vs without | peak RSS MB (without) | RSS added (per frame) |");
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (ts, name) in tsharks {
        for (label, capture, frames) in [
            (format!("benchmark mix ({n})"), &mix, n as f64),
            (
                format!("crafted chunk sets ({:.0} KB)", size as f64 / 1000.0),
                &crafted,
                packets.len() as f64,
            ),
        ] {
            let without = run(ts, capture, None);
            let with = run(ts, capture, Some(&script));
            println!(
                "| {name} | {label} | {frames} | {:.2} | {:.2} | {:.2} | {:.1} k | {:.1}x | {:.1} ({:.1}) | {:.1} MB ({:.0} B) |",
                without.cpu,
                with.wall,
                with.cpu,
                frames / with.cpu / 1000.0,
                with.cpu / without.cpu,
                with.rss_kib / 1024.0,
                without.rss_kib / 1024.0,
                (with.rss_kib - without.rss_kib) / 1024.0,
                (with.rss_kib - without.rss_kib) * 1024.0 / frames,
            );
        }
    }
}
