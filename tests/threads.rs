//! Every output is the same whatever the number of threads: with one, everything runs on one
//! thread; with more, the link layers, CRC, LZ4 and message walks run on workers ahead of the
//! ordered stage (`pipeline::worker`), which must change nothing, byte for byte.

#[path = "support/bin.rs"]
mod bin;

use bin::{captures, run};

/// Each command, as its arguments before the file.
const COMMANDS: &[&[&str]] = &[
    &["--format", "json"],
    &["check", "--format", "json"],
    &["stats", "--format", "json"],
    &["export", "-o", "-"],
    &["packets"],
    &["packets", "-V", "-x"],
    &["profile", "--format", "json"],
];

fn output(command: &[&str], file: &str, threads: &str) -> (i32, String, String) {
    let mut args = command.to_vec();
    args.extend([file, "--threads", threads, "-q"]);
    run(&args)
}

#[test]
fn every_output_is_the_same_on_one_thread_and_on_several() {
    let files = captures();
    assert!(files.len() >= 19, "{files:?}");
    for file in &files {
        for command in COMMANDS {
            let one = output(command, file, "1");
            assert!(!one.1.is_empty(), "{command:?} {file}: no output");
            for threads in ["2", "7"] {
                let many = output(command, file, threads);
                assert!(
                    one == many,
                    "{command:?} {file}: --threads {threads} differs from --threads 1"
                );
            }
        }
    }
}

#[test]
fn a_display_filter_and_a_count_are_the_same_on_several_threads() {
    let file = "tests/fixtures/reference-17byte-1client.pcap";
    assert!(std::path::Path::new(file).exists());
    for command in [
        &[
            "packets",
            "-Y",
            "rtype.snapshot.entity.id == 68",
            "-c",
            "900",
        ][..],
        &["export", "-o", "-", "-Y", "rtype.violation", "-c", "3000"],
        &[
            "-Y",
            "rtype.msg_type == \"SERVER_SNAPSHOT\"",
            "--format",
            "json",
        ],
    ] {
        let one = output(command, file, "1");
        assert!(one.1.lines().count() > 3, "{command:?}: {}", one.1);
        assert_eq!(one, output(command, file, "3"), "{command:?}");
    }
}

#[test]
fn the_stage_cpu_mode_names_every_stage() {
    let out = std::process::Command::new(bin::BIN)
        .args(["samples/clean-session.pcap", "--threads", "2"])
        .env("RTYPE_INSPECT_STAGE_CPU", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.starts_with("stage CPU of samples/clean-session.pcap: reading "))
        .unwrap_or_else(|| panic!("{stderr}"));
    for part in [", workers ", ", ordered ", " % of "] {
        assert!(line.contains(part), "{line}");
    }
    // The frames it read (clean-session.pcap has 593), and the speed predicted on more cores.
    for part in [
        "; 593 frames, predicted M frames/s on cores 1: ",
        ", 16: ",
        " cores)",
    ] {
        assert!(line.contains(part), "{line}");
    }
    // Without the variable, nothing of the kind.
    let (_, _, stderr) = run(&["samples/clean-session.pcap", "--threads", "2"]);
    assert!(!stderr.contains("stage CPU"), "{stderr}");
}
