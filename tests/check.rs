//! `rtype-inspect check` for CI: exit codes, allow-lists, the config file, and the JUnit XML
//! (read back with a real XML parser), on the real captures.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

#[path = "support/datagrams.rs"]
mod datagrams;

const BIN: &str = env!("CARGO_BIN_EXE_rtype-inspect");
const C17: &str = "tests/fixtures/reference-17byte-1client.pcap";
const C15: &str = "tests/fixtures/reference-15byte-levelevents.pcap";
const P17: &str = "samples/profiles/reference-17byte.toml";
const P15: &str = "samples/profiles/reference-15byte.toml";
/// What the 17-byte capture breaks, warnings and an info: the empty pongs, the LevelInit boss
/// trailer, the 351 byte-identical ENTITY_DESTROYED repeats, entity 68 updated (frame 1465)
/// after its ENTITY_DESTROYED (frame 1461), and the entities alive at the end.
const ALLOW_17: [&str; 12] = [
    "--allow",
    "rtype.pong.empty",
    "--allow",
    "rtype.levelinit.boss-trailer",
    "--allow",
    "session.duplicate-datagram",
    "--allow",
    "session.entity-after-destroy",
    // The real 200 ms stall of the server's snapshots (frames 254-268).
    "--allow",
    "session.snapshot-stall",
    "--allow",
    "session.entity-never-destroyed",
];

fn path(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(rel)
        .display()
        .to_string()
}

fn check_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .current_dir(dir)
        .arg("check")
        .arg("--quiet")
        .args(args)
        .output()
        .expect("runs")
}

/// Runs check from an empty directory, so no rtype-inspect.toml is picked up.
fn check(args: &[&str]) -> Output {
    check_in(&scratch_dir("no-config"), args)
}

fn code(out: &Output) -> Option<i32> {
    out.status.code()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// A fresh directory for each call (tests run in parallel threads of one process).
fn scratch_dir(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "rtype-inspect-check-{}-{n}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn clean_file_with_its_allow_list_passes_even_on_info() {
    let (c17, p17) = (path(C17), path(P17));
    let mut args = vec![
        c17.as_str(),
        "--profile",
        p17.as_str(),
        "--fail-on",
        "info",
        "--format",
        "json",
    ];
    args.extend(ALLOW_17);
    let out = check(&args);
    assert_eq!(
        code(&out),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let j = json(&out);
    assert_eq!(j["result"], "pass");
    let findings = j["files"][0]["findings"].as_array().unwrap();
    let summary: Vec<(&str, u64, &str)> = findings
        .iter()
        .map(|f| {
            (
                f["id"].as_str().unwrap(),
                f["count"].as_u64().unwrap(),
                f["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("rtype.pong.empty", 15, "allowed"),
            ("rtype.levelinit.boss-trailer", 1, "allowed"),
            ("session.snapshot-stall", 1, "allowed"),
            ("session.duplicate-datagram", 351, "allowed"),
            ("session.entity-after-destroy", 1, "allowed"),
            ("session.entity-never-destroyed", 1, "allowed"),
        ]
    );
}

#[test]
fn failing_files_exit_1() {
    let (c17, p17, c15, p15) = (path(C17), path(P17), path(C15), path(P15));
    // Warnings only: passes on error (the default), fails on warning.
    assert_eq!(code(&check(&[&c17, "--profile", &p17])), Some(0));
    let out = check(&[
        &c17,
        "--profile",
        &p17,
        "--fail-on",
        "warning",
        "--format",
        "json",
    ]);
    assert_eq!(code(&out), Some(1));
    let failing: Vec<String> = json(&out)["files"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["verdict"] == "fail")
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        failing,
        [
            "rtype.pong.empty",
            "rtype.levelinit.boss-trailer",
            "session.snapshot-stall",
            "session.duplicate-datagram",
            "session.entity-after-destroy",
        ]
    );
    // One allowed rule short: still failing.
    assert_eq!(
        code(&check(&[
            &c17,
            "--profile",
            &p17,
            "--fail-on",
            "warning",
            "--allow",
            "rtype.pong.empty"
        ])),
        Some(1)
    );
    // The older 15-byte header breaks a MUST: fails by default, passes once allowed.
    assert_eq!(code(&check(&[&c15, "--profile", &p15])), Some(1));
    assert_eq!(
        code(&check(&[
            &c15,
            "--profile",
            &p15,
            "--allow",
            "rtype.header.15-byte"
        ])),
        Some(0)
    );
}

#[test]
fn unreadable_files_exit_2_and_the_others_are_still_judged() {
    let (c17, p17) = (path(C17), path(P17));
    let missing = path("tests/fixtures/no-such-capture.pcap");
    let not_a_capture = path("Cargo.toml");
    let out = check(&[
        &missing,
        &c17,
        &not_a_capture,
        "--profile",
        &p17,
        "--format",
        "json",
    ]);
    assert_eq!(code(&out), Some(2));
    let j = json(&out);
    let files = j["files"].as_array().unwrap();
    let results: Vec<&str> = files
        .iter()
        .map(|f| f["result"].as_str().unwrap())
        .collect();
    assert_eq!(results, ["error", "pass", "error"]);
    assert!(files[2]["error"]
        .as_str()
        .unwrap()
        .contains("not a capture file"));
    assert_eq!(files[1]["findings"].as_array().unwrap().len(), 6);
    // Text report: every file, then the tally.
    let out = check(&[&missing, &c17, "--profile", &p17]);
    assert_eq!(code(&out), Some(2));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("ERROR, cannot be read"), "{text}");
    assert!(
        text.contains("2 files: 1 passed, 0 failed, 1 unreadable; exit 2"),
        "{text}"
    );
}

#[test]
fn bad_arguments_exit_2() {
    let c17 = path(C17);
    for args in [
        vec![c17.as_str(), "--allow", "no.such.rule"],
        vec![c17.as_str(), "--fail-on", "fatal"],
        vec![c17.as_str(), "--format", "xml"],
        vec![c17.as_str(), "--profile", "no-such-profile.toml"],
        vec![c17.as_str(), "--snapshot-tolerance", "-5"],
        vec![],
    ] {
        let out = check(&args);
        assert_eq!(code(&out), Some(2), "{args:?}");
        assert!(
            out.stdout.is_empty(),
            "no report for bad arguments: {args:?}"
        );
    }
    let out = check(&[&c17, "--allow", "no.such.rule"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown rule ID in --allow: no.such.rule")
    );
}

#[test]
fn config_file_in_the_working_directory_or_given() {
    let dir = scratch_dir("config");
    std::fs::create_dir_all(dir.join("profiles")).unwrap();
    std::fs::copy(path(P17), dir.join("profiles/x.toml")).unwrap();
    let c17 = path(C17);
    let config = |extra: &str| {
        format!(
            "fail_on = \"warning\"\nallow = [\"rtype.pong.empty\", \"rtype.levelinit.boss-trailer\"{extra}]\n\
             profile = \"profiles/x.toml\"\n"
        )
    };
    // Found in the working directory; its profile is relative to it.
    let both = ", \"session.duplicate-datagram\", \"session.entity-after-destroy\", \"session.snapshot-stall\"";
    std::fs::write(dir.join("rtype-inspect.toml"), config(both)).unwrap();
    let out = check_in(&dir, &[&c17, "--format", "json"]);
    assert_eq!(
        code(&out),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j = json(&out);
    assert_eq!(j["fail_on"], "warning");
    assert_eq!(j["config"], "rtype-inspect.toml");
    assert_eq!(
        j["allow"],
        serde_json::json!([
            "rtype.pong.empty",
            "rtype.levelinit.boss-trailer",
            "session.snapshot-stall",
            "session.duplicate-datagram",
            "session.entity-after-destroy",
        ])
    );
    // The command line adds to the allow-list and overrides fail_on.
    std::fs::write(
        dir.join("rtype-inspect.toml"),
        config(", \"session.entity-after-destroy\", \"session.snapshot-stall\""),
    )
    .unwrap();
    assert_eq!(code(&check_in(&dir, &[&c17])), Some(1));
    assert_eq!(
        code(&check_in(
            &dir,
            &[&c17, "--allow", "session.duplicate-datagram"]
        )),
        Some(0)
    );
    assert_eq!(
        code(&check_in(&dir, &[&c17, "--fail-on", "error"])),
        Some(0)
    );
    // --config from elsewhere: the profile is still found next to the config file. Without the
    // profile the capture's snapshots would not decode and more rules would fail.
    let cfg = dir.join("ci.toml");
    std::fs::write(&cfg, config(both)).unwrap();
    let elsewhere = scratch_dir("elsewhere");
    assert_eq!(
        code(&check_in(
            &elsewhere,
            &[&c17, "--config", cfg.to_str().unwrap()]
        )),
        Some(0)
    );
    // Unknown keys, unknown rule IDs, bad severities, a missing file: exit 2.
    for bad in [
        "fail_on = \"warning\"\nmystery = 1\n",
        "allow = [\"rtype.nope\"]\n",
        "fail_on = \"fatal\"\n",
        "profile = \"nope.toml\"\n",
    ] {
        std::fs::write(&cfg, bad).unwrap();
        let out = check_in(&elsewhere, &[&c17, "--config", cfg.to_str().unwrap()]);
        assert_eq!(code(&out), Some(2), "{bad}");
    }
    assert_eq!(
        code(&check_in(&elsewhere, &[&c17, "--config", "missing.toml"])),
        Some(2)
    );
}

#[test]
fn junit_report_parses_and_lists_failures() {
    let (c17, c15, p17) = (path(C17), path(C15), path(P17));
    let missing = path("tests/fixtures/no-such-capture.pcap");
    let out = check(&[
        &c17,
        &c15,
        &missing,
        "--profile",
        &p17,
        "--fail-on",
        "warning",
        "--allow",
        "rtype.pong.empty",
        "--format",
        "junit",
    ]);
    assert_eq!(code(&out), Some(2));
    let xml = String::from_utf8(out.stdout).unwrap();
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let suites: Vec<_> = root
        .children()
        .filter(|n| n.has_tag_name("testsuite"))
        .collect();
    assert_eq!(suites.len(), 3, "one suite per file");
    assert_eq!(suites[0].attribute("name"), Some(c17.as_str()));

    let catalog: Value = serde_json::from_slice(
        &Command::new(BIN)
            .args(["violations", "--format", "json"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let rules = catalog["rules"].as_array().unwrap().len();
    let s17 = cases(suites[0]);
    assert_eq!(s17.len(), rules, "one case per rule of the catalog");
    assert!(s17
        .iter()
        .all(|c| c.attribute("classname") == Some(c17.as_str())));
    let case = |name: &str| {
        *s17.iter()
            .find(|c| c.attribute("name") == Some(name))
            .unwrap()
    };

    // Failing: the count and the first frame; the body lists the frames, at most 20 then "…".
    let dup = case("session.duplicate-datagram")
        .children()
        .find(|n| n.has_tag_name("failure"))
        .expect("failure");
    let message = dup.attribute("message").unwrap();
    assert_eq!(message, "351 findings (warning), the first at frame 595");
    let body = dup.text().unwrap();
    let frames = body
        .lines()
        .find_map(|l| l.strip_prefix("frames: "))
        .unwrap();
    assert!(frames.starts_with("595, 600, 605, 610, "), "{body}");
    assert!(frames.ends_with(", …"), "{body}");
    assert_eq!(frames.split(", ").filter(|f| *f != "…").count(), 20);
    let boss = case("rtype.levelinit.boss-trailer")
        .children()
        .find(|n| n.has_tag_name("failure"))
        .unwrap();
    assert_eq!(
        boss.attribute("message"),
        Some("1 finding (warning), the first at frame 8")
    );
    // Allowed: skipped, with a message.
    let pong = case("rtype.pong.empty")
        .children()
        .find(|n| n.has_tag_name("skipped"))
        .expect("skipped");
    assert_eq!(pong.attribute("message"), Some("allowed (15 findings)"));
    // Clean rules: empty test cases.
    assert!(case("rtype.crc.mismatch")
        .children()
        .all(|n| !n.is_element()));
    assert_eq!(suites[0].attribute("failures"), Some("4"));
    assert_eq!(suites[0].attribute("skipped"), Some("1"));
    // The 15-byte capture fails on its header too.
    let s15 = cases(suites[1]);
    let header = s15
        .iter()
        .find(|c| c.attribute("name") == Some("rtype.header.15-byte"))
        .unwrap();
    assert!(header.children().any(|n| n.has_tag_name("failure")));
    // The unreadable file: one case with an error.
    let bad = cases(suites[2]);
    assert_eq!(bad.len(), 1);
    assert!(bad[0].children().any(|n| n.has_tag_name("error")));
    assert_eq!(root.attribute("errors"), Some("1"));
}

/// A broken budget's JUnit failure says what was measured against which limit, and where.
#[test]
fn junit_budget_failures_carry_the_measure_and_the_limit() {
    let dir = scratch_dir("junit-budget");
    std::fs::write(
        dir.join("rtype-inspect.toml"),
        "[budgets]\ndatagram_bytes_max = 100\n",
    )
    .unwrap();
    let out = check_in(&dir, &[&path(C17), "--format", "junit"]);
    assert_eq!(code(&out), Some(1));
    let xml = String::from_utf8(out.stdout).unwrap();
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let failure = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .find(|n| n.attribute("name") == Some("budget.datagram-bytes"))
        .and_then(|c| c.children().find(|n| n.has_tag_name("failure")))
        .expect("the budget fails");
    assert_eq!(
        failure.attribute("message"),
        Some("859 bytes > 100 bytes in conversation #1 at frames 1975-1975")
    );
}

/// The `<testcase>` children of a suite.
fn cases<'a, 'i>(suite: roxmltree::Node<'a, 'i>) -> Vec<roxmltree::Node<'a, 'i>> {
    suite
        .children()
        .filter(|n| n.has_tag_name("testcase"))
        .collect()
}

#[test]
fn junit_escapes_file_names() {
    let dir = scratch_dir("escape");
    let odd = dir.join("a&b<\"c\">.pcap");
    std::fs::copy(path(C17), &odd).unwrap();
    let p17 = path(P17);
    let out = check(&[
        odd.to_str().unwrap(),
        "--profile",
        &p17,
        "--format",
        "junit",
    ]);
    assert_eq!(code(&out), Some(0));
    let xml = String::from_utf8(out.stdout).unwrap();
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let suite = doc
        .root_element()
        .children()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    assert_eq!(suite.attribute("name"), odd.to_str());
}

#[test]
fn every_reading_command_reads_the_configuration_and_names_it() {
    let dir = scratch_dir("config-everywhere");
    std::fs::write(
        dir.join("rtype-inspect.toml"),
        "profile = \"reference-17byte\"\nsnapshot_hz = 59\n",
    )
    .unwrap();
    let c17 = path(C17);
    let in_dir = |args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap()
    };
    let summary: serde_json::Value =
        serde_json::from_slice(&in_dir(&[&c17, "--format", "json"]).stdout).unwrap();
    assert_eq!(summary["config_file"], "rtype-inspect.toml");
    assert_eq!(summary["profile"], "reference-17byte");
    // The profile applied: the snapshots decode without a layout finding.
    let ids: Vec<&str> = summary["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap())
        .collect();
    assert!(
        !ids.iter().any(|id| id.starts_with("rtype.snapshot.")),
        "{ids:?}"
    );
    let text = String::from_utf8(in_dir(&[&c17]).stdout).unwrap();
    assert_eq!(
        text.lines().nth(1),
        Some("read with config rtype-inspect.toml and snapshot profile reference-17byte")
    );
    let stats: serde_json::Value =
        serde_json::from_slice(&in_dir(&["stats", &c17, "--format", "json"]).stdout).unwrap();
    assert_eq!(stats["config"]["snapshot_hz"], 59.0);
    assert_eq!(stats["config_file"], "rtype-inspect.toml");
    // A bad value names the file and the key.
    std::fs::write(dir.join("rtype-inspect.toml"), "snapshot_hz = -5\n").unwrap();
    for args in [
        vec![c17.as_str()],
        vec!["stats", &c17],
        vec!["packets", &c17],
    ] {
        let out = in_dir(&args);
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "rtype-inspect: rtype-inspect.toml: snapshot_hz must be a positive number of Hz, not -5\n"
        );
    }
}

/// `check DIR` judges the captures under it (in name order, subdirectories too), on several
/// threads, and reports exactly what one thread reports.
#[test]
fn a_directory_is_judged_on_several_threads_as_on_one() {
    let dir = scratch_dir("directory");
    std::fs::create_dir_all(dir.join("night")).unwrap();
    for (from, to) in [
        (C17, "b-17.pcap"),
        (C15, "a-15.pcap"),
        ("tests/fixtures/rt-two-players.pcap", "night/rt.pcap"),
        ("samples/clean-session.pcap", "c-clean.pcap"),
    ] {
        std::fs::copy(path(from), dir.join(to)).unwrap();
    }
    std::fs::write(dir.join("notes.txt"), "not a capture").unwrap();
    let run = |threads: &str| {
        let out = check_in(&dir, &[".", "--threads", threads, "--format", "json"]);
        (code(&out), json(&out))
    };
    let (code1, one) = run("1");
    let (code4, four) = run("4");
    assert_eq!(one, four);
    assert_eq!(code1, code4);
    let files: Vec<&str> = one["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert_eq!(
        files,
        [
            "./a-15.pcap",
            "./b-17.pcap",
            "./c-clean.pcap",
            "./night/rt.pcap"
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_gate_never_passes_on_nothing() {
    // A directory without any capture: exit 2, saying why, and no report.
    let empty = scratch_dir("empty");
    let out = check_in(&empty, &[".", "--format", "junit"]);
    assert_eq!(code(&out), Some(2));
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "rtype-inspect: no capture found (.pcap, .pcapng, .cap or .gz) in the arguments"
    );
    // Extensions in capitals are captures too: the capture is judged (it fails on the
    // document's snapshot layout, without its profile).
    std::fs::copy(path(C17), empty.join("session.PCAP")).unwrap();
    let out = check_in(&empty, &[".", "--format", "json"]);
    let j = json(&out);
    let files: Vec<&str> = j["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["./session.PCAP"]);
    // A display filter that passes no datagram judged nothing: capture.no-datagrams fails it.
    let c17 = path(C17);
    let args = [
        c17.as_str(),
        "--profile",
        "reference-17byte",
        "-Y",
        "frame.number > 100000",
        "--format",
        "json",
    ];
    let out = check(&args);
    assert_eq!(code(&out), Some(1));
    let j = json(&out);
    let findings = &j["files"][0]["findings"];
    assert_eq!(findings.as_array().unwrap().len(), 1, "{findings}");
    assert_eq!(findings[0]["id"], "capture.no-datagrams");
    assert_eq!(findings[0]["verdict"], "fail");
    let _ = std::fs::remove_dir_all(&empty);
}

/// The rules of the cascade a wrong snapshot layout gives.
const CASCADE: [&str; 5] = [
    "rtype.message.truncated",
    "rtype.message.trailing",
    "rtype.snapshot.reserved-bit",
    "rtype.snapshot.undefined-bit",
    "rtype.snapshot.unknown-entity-type",
];

/// Each rule with findings in a check's one file: (id, count).
fn counts(out: &Output) -> Vec<(String, u64)> {
    json(out)["files"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["id"].as_str().unwrap().into(),
                f["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn check_of_every_real_capture_ends_with_one_layout_finding() {
    let layout = |c: &[(String, u64)]| {
        c.iter()
            .find(|(id, _)| id == "rtype.snapshot.layout")
            .map(|f| f.1)
    };
    let cascade = |c: &[(String, u64)]| c.iter().any(|(id, _)| CASCADE.contains(&id.as_str()));
    for (capture, layout_count) in [
        (C17, Some(1)),
        (C15, Some(1)),
        ("tests/fixtures/rt-two-players.pcap", None),
        ("tests/fixtures/rtnp-solo.pcap", None),
    ] {
        let c = counts(&check(&[&path(capture), "--format", "json"]));
        assert_eq!(layout(&c), layout_count, "{capture}: {c:?}");
        assert!(!cascade(&c), "{capture}: {c:?}");
    }
    // Each file names the layout it was read with.
    let found = check(&[&path(C17), "--format", "json"]);
    assert_eq!(json(&found)["files"][0]["profile"], "reference-17byte");
    let text = String::from_utf8(check(&[&path(C17)]).stdout).unwrap();
    assert!(
        text.contains(
            "-1client.pcap: FAIL (1 rule), snapshots read with profile reference-17byte\n"
        ),
        "{text}"
    );
    let strict = check(&[&path(C17), "--strict-layout", "--format", "json"]);
    assert_eq!(json(&strict)["files"][0]["profile"], "document");
    // --strict-layout keeps the document's layout and its cascade (137 truncated fields, 573
    // reserved and 190 undefined bits on the 17-byte capture).
    let strict = counts(&check(&[&path(C17), "--strict-layout", "--format", "json"]));
    assert_eq!(layout(&strict), None);
    for (rule, n) in [
        ("rtype.message.truncated", 137),
        ("rtype.snapshot.reserved-bit", 573),
        ("rtype.snapshot.undefined-bit", 190),
    ] {
        assert!(strict.contains(&(rule.to_string(), n)), "{strict:?}");
    }
    // The layout named, the finding goes away: the check fails only on what the server breaks
    // (allowed here), as it does with the profile's file.
    for profile in ["reference-17byte", P17] {
        let out = check(&[
            &path(C17),
            "--profile",
            &path_or(profile),
            "--format",
            "json",
        ]);
        let c = counts(&out);
        assert_eq!(layout(&c), None, "{c:?}");
        assert!(!cascade(&c), "{c:?}");
        let mut args = vec![path(C17), "--profile".into(), path_or(profile)];
        args.extend(ALLOW_17.iter().map(|a| a.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(code(&check(&args)), Some(0));
    }
    // Without the profile, the departure fails the check, with one finding at the first
    // snapshot (frame 10, a SERVER_SNAPSHOT_CHUNK).
    let mut args = vec![path(C17)];
    args.extend(ALLOW_17.iter().map(|a| a.to_string()));
    args.extend(["--format".into(), "json".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = check(&args);
    assert_eq!(code(&out), Some(1));
    let j = json(&out);
    let failing: Vec<(&str, &Value)> = j["files"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["verdict"] == "fail")
        .map(|f| (f["id"].as_str().unwrap(), &f["frames"]))
        .collect();
    assert_eq!(
        failing,
        [("rtype.snapshot.layout", &serde_json::json!([10]))]
    );
}

#[test]
fn the_layout_finding_is_at_each_conversations_first_snapshot_the_document_misreads() {
    let capture = scratch_dir("late-departure").join("late-departure.pcap");
    datagrams::write_pcap(&capture, &datagrams::late_departure());
    let capture = capture.to_str().unwrap();
    let j = json(&check(&[capture, "--format", "json"]));
    assert_eq!(j["files"][0]["profile"], "reference-17byte");
    let layout: Vec<&Value> = j["files"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "rtype.snapshot.layout")
        .map(|f| &f["frames"])
        .collect();
    // Conversation 1's third snapshot, not its first (empty, read by any layout); conversation
    // 2 sends only empty snapshots, which the document reads.
    assert_eq!(layout, [&serde_json::json!([4])]);
    // --profile document is --strict-layout: the document's reading and its findings.
    let document = counts(&check(&[
        capture,
        "--profile",
        "document",
        "--format",
        "json",
    ]));
    let strict = counts(&check(&[capture, "--strict-layout", "--format", "json"]));
    assert_eq!(document, strict);
    assert!(
        document.contains(&("rtype.snapshot.undefined-bit".to_string(), 2)),
        "{document:?}"
    );
}

/// The clean sample session (three clients, the document's layout) followed by the real 17-byte
/// capture (one client, the `reference-17byte` layout): one pcap, both little-endian µs Ethernet.
fn two_layouts(dir: &Path) -> PathBuf {
    let clean = std::fs::read(path("samples/clean-session.pcap")).unwrap();
    let real = std::fs::read(path(C17)).unwrap();
    assert_eq!(clean[..4], real[..4]);
    let merged = dir.join("two-layouts.pcap");
    std::fs::write(&merged, [&clean[..], &real[24..]].concat()).unwrap();
    merged
}

#[test]
fn each_conversation_is_read_with_the_layout_its_snapshots_fit() {
    let dir = scratch_dir("two-layouts");
    let capture = two_layouts(&dir);
    let capture = capture.to_str().unwrap();
    // The scan before reading sees the clean session's snapshots first, which the document
    // reads; the real server's conversation (4, from frame 594) still finds its own layout.
    let out = check(&[capture, "--format", "json"]);
    assert_eq!(code(&out), Some(1));
    let j = json(&out);
    assert_eq!(j["files"][0]["profile"], "mixed");
    let findings: Vec<(&str, &Value)> = j["files"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["verdict"] == "fail" || CASCADE.contains(&f["id"].as_str().unwrap()))
        .map(|f| (f["id"].as_str().unwrap(), &f["frames"]))
        .collect();
    // Frame 10 of the real capture is frame 593 + 10.
    assert_eq!(
        findings,
        [("rtype.snapshot.layout", &serde_json::json!([603]))]
    );
    let text = String::from_utf8(check(&[capture]).stdout).unwrap();
    assert!(
        text.contains(
            "two-layouts.pcap: FAIL (1 rule), snapshots read with a profile per conversation\n"
        ),
        "{text}"
    );
    // The summary names each conversation's layout, in JSON and in its table.
    let summary = |format: &str| {
        Command::new(BIN)
            .args(["summary", "--quiet", capture, "--format", format])
            .current_dir(&dir)
            .output()
            .unwrap()
    };
    let j = json(&summary("json"));
    assert_eq!(j["profile"], "mixed");
    let layouts: Vec<(u64, &str)> = j["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_u64().unwrap(), c["layout"].as_str().unwrap()))
        .collect();
    assert_eq!(
        layouts,
        [
            (1, "document"),
            (2, "document"),
            (3, "document"),
            (4, "reference-17byte")
        ]
    );
    let text = String::from_utf8(summary("text").stdout).unwrap();
    assert!(
        text.contains("read with a snapshot profile per conversation\n"),
        "{text}"
    );
    assert!(
        text.contains("│ 4 ┆ 127.0.0.1:41000 ┆ 127.0.0.1:50010 ┆ 594         ┆ reference-17byte │"),
        "{text}"
    );
    // The real conversation reads as the real capture alone does; the clean session adds only
    // its two clients' entities alive at the end.
    let mut alone = counts(&check(&[&path(C17), "--format", "json"]));
    for (id, n) in &mut alone {
        *n += 2 * u64::from(id == "session.entity-never-destroyed");
    }
    assert_eq!(counts(&out), alone);
}

#[test]
fn standard_input_finds_its_layout_as_a_file_does() {
    let file = check(&[&path(C17), "--format", "json"]);
    // Through a pipe, which cannot be read twice: no scan before reading.
    let mut child = Command::new(BIN)
        .args(["check", "--quiet", "-", "--format", "json"])
        .current_dir(scratch_dir("stdin-layout"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let bytes = std::fs::read(path(C17)).unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&bytes));
    let piped = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert_eq!(code(&piped), Some(1));
    assert_eq!(json(&piped)["files"][0]["profile"], "reference-17byte");
    assert_eq!(counts(&piped), counts(&file));
    let frames = |out: &Output| {
        json(out)["files"][0]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == "rtype.snapshot.layout")
            .map(|f| f["frames"].clone())
    };
    assert_eq!(frames(&piped), Some(serde_json::json!([10])));
    // A display filter on a field of the layout found names it as for the file.
    let listed = |stdin: bool| {
        let filter = "rtype.snapshot.entity.pos_x > 1000";
        let mut c = Command::new(BIN);
        c.args(["packets", "-q", "-Y", filter]);
        if stdin {
            c.arg("-").stdin(std::fs::File::open(path(C17)).unwrap());
        } else {
            c.arg(path(C17));
        }
        String::from_utf8(c.output().unwrap().stdout).unwrap()
    };
    let (file, piped) = (listed(false), listed(true));
    assert_eq!(file.lines().count(), 635, "{file}");
    assert_eq!(piped, file);
}

/// A bundled profile's name as it is; a path relative to the crate made absolute.
fn path_or(profile: &str) -> String {
    if profile.contains('/') {
        path(profile)
    } else {
        profile.into()
    }
}

#[test]
fn the_layout_finding_says_which_profile_fits_and_what_differs() {
    let out = Command::new(BIN)
        .args(["export", "--quiet", &path(C17)])
        .output()
        .unwrap();
    let records: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &Value| r["kind"] == "datagram")
        .collect();
    // One datagram of the capture has it: the first snapshot, frame 10; the later ones decode
    // with the profile.
    let with: Vec<&Value> = records
        .iter()
        .filter(|r| {
            r["violations"]
                .as_array()
                .is_some_and(|v| v.iter().any(|f| f["id"] == "rtype.snapshot.layout"))
        })
        .collect();
    assert_eq!(with.len(), 1);
    assert_eq!(with[0]["frame"], 10);
    assert_eq!(
        with[0]["violations"],
        serde_json::json!([{
            "id": "rtype.snapshot.layout", "severity": "error", "offset": 17,
            "detail": "read as profile reference-17byte: positions and velocities are i16 × 10, not f32; bit 6 packs status and lives; bit 10 is an i32 score"
        }])
    );
}
