//! The command line as a tshark or ripgrep user types it: the binary run on the samples.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use clap::CommandFactory;

#[path = "support/bin.rs"]
mod bin;
#[path = "support/datagrams.rs"]
mod datagrams;

use bin::{captures, BIN};
const SAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/samples/clean-session.pcap");

/// Runs the binary with `args`, `stdin` on its standard input: exit code, stdout, stderr.
fn run_in(dir: Option<&Path>, args: &[&str], stdin: &[u8]) -> (i32, String, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = dir {
        cmd.current_dir(dir);
    }
    let mut child = cmd.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin).unwrap();
    drop(input);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn run(args: &[&str]) -> (i32, String, String) {
    run_in(None, args, b"")
}

/// The output of a run that must succeed.
fn ok(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

#[test]
fn the_summary_takes_its_options_anywhere_at_the_top_level() {
    let json = ok(&["summary", SAMPLE, "--format", "json"]);
    assert!(json.starts_with("{\n"), "{json}");
    assert_eq!(ok(&["--format", "json", SAMPLE]), json);
    assert_eq!(ok(&[SAMPLE, "--format", "json"]), json);
    let text = ok(&["summary", SAMPLE]);
    assert!(text.starts_with(&format!("{SAMPLE}: pcap (ethernet), 593 frames")));
    assert_eq!(ok(&["-q", SAMPLE]), text);
    assert_eq!(ok(&["--color", "never", "-q", SAMPLE]), text);
    assert_eq!(ok(&["-r", SAMPLE]), text);
}

#[test]
fn a_commands_options_may_come_before_its_name() {
    let packets = ok(&["packets", SAMPLE, "-c", "3"]);
    assert_eq!(packets.lines().count(), 3, "{packets}");
    assert_eq!(ok(&["-q", "packets", SAMPLE, "-c", "3"]), packets);
    assert_eq!(ok(&["-c", "3", "-q", "packets", SAMPLE]), packets);
    assert_eq!(
        ok(&["--color", "never", "packets", SAMPLE, "-c", "3"]),
        packets
    );
    assert_eq!(ok(&["-r", SAMPLE, "packets", "-c", "3"]), packets);
    // An option the command does not take is refused as after its name.
    let (code, _, err) = run(&["--format", "json", "protocol"]);
    assert_eq!(code, 2);
    assert!(err.contains("unexpected argument '--format'"), "{err}");
}

/// Runs the binary in `dir` and returns its exit code and raw standard output and error.
fn raw_in(dir: &Path, args: &[&str]) -> (i32, Vec<u8>, String) {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap_or(-1), out.stdout, err)
}

#[test]
fn a_dash_is_standard_output_for_every_output_file() {
    let dir = std::env::temp_dir().join(format!("rtype-cli-dash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let filter = ["-Y", "rtype.msg_type == SERVER_SNAPSHOT"];
    let cases: [(&[&str], &str); 5] = [
        (&["packets", SAMPLE, filter[0], filter[1], "-w"], "cut.pcap"),
        (&["export", SAMPLE, filter[0], filter[1], "-w"], "cut.pcap"),
        (&["export", SAMPLE, "-o"], "timeline.ndjson"),
        (&["report", SAMPLE, "-q", "-o"], "report.html"),
        (&["dissector", "-o"], "rtype.lua"),
    ];
    for (args, name) in cases {
        let (code, to_file, err) = raw_in(&dir, &[args, &[name]].concat());
        assert_eq!((code, to_file.as_slice()), (0, &b""[..]), "{args:?}: {err}");
        let (code, to_stdout, err) = raw_in(&dir, &[args, &["-"]].concat());
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(!dir.join("-").exists(), "{args:?} wrote a file named -");
        let written = std::fs::read(dir.join(name)).unwrap();
        assert!(written.len() > 1000, "{args:?}");
        if name == "report.html" {
            // The page names the file it was written to nowhere; only the time may differ.
            assert!(to_stdout.starts_with(b"<!DOCTYPE html>"), "{args:?}");
            assert_eq!(to_stdout.len(), written.len(), "{args:?}");
        } else {
            assert!(
                to_stdout == written,
                "{args:?}: standard output differs from the file"
            );
        }
    }
    // The cut is the snapshots' 162 frames, a pcap.
    let cut = std::fs::read(dir.join("cut.pcap")).unwrap();
    assert_eq!(&cut[..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
    // ./- is a file named -.
    let (code, out, err) = raw_in(&dir, &["dissector", "-o", "./-"]);
    assert_eq!((code, out.len()), (0, 0), "{err}");
    assert_eq!(
        std::fs::read(dir.join("-")).unwrap(),
        std::fs::read(dir.join("rtype.lua")).unwrap()
    );
    // Two outputs on standard output are refused before anything is read.
    let (code, out, err) = raw_in(&dir, &["export", SAMPLE, "-o", "-", "-w", "-"]);
    assert_eq!((code, out.len()), (2, 0));
    assert_eq!(
        err,
        "rtype-inspect: -o - and -w - would both write to standard output: give one of them a \
         file\n"
    );
    let (code, _, err) = raw_in(&dir, &["report", SAMPLE, "--format", "svg", "-o", "-"]);
    assert_eq!(code, 2);
    assert!(err.contains("--format svg writes a directory"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_pipe_shows_the_datagrams_that_have_arrived() {
    use std::io::Read;
    use std::time::Duration;
    let bytes = std::fs::read(SAMPLE).unwrap();
    // The records whole in the first 20,000 bytes: every frame of the sample is a datagram.
    let (mut at, mut whole) = (24, 0);
    while at + 16 <= 20_000 {
        let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        if at + 16 + len > 20_000 {
            break;
        }
        (at, whole) = (at + 16 + len, whole + 1);
    }
    assert_eq!(whole, 169);
    for threads in ["1", "2"] {
        let mut child = Command::new(BIN)
            .args(["packets", "--threads", threads, "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        // A slow writer: the first 20,000 bytes, then nothing until the list has shown them.
        input.write_all(&bytes[..20_000]).unwrap();
        input.flush().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (send, got) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = stdout.read(&mut chunk) {
                if send.send(chunk[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        let mut shown = Vec::new();
        // A pipe is decoded a frame at a time whatever the threads: every datagram arrived is
        // shown while the writer still holds the pipe open.
        let wanted = whole;
        while shown.iter().filter(|b| **b == b'\n').count() < wanted {
            match got.recv_timeout(Duration::from_secs(30)) {
                Ok(chunk) => shown.extend(chunk),
                Err(_) => break,
            }
        }
        drop(input);
        let _ = child.wait();
        let shown = String::from_utf8(shown).unwrap();
        assert!(
            shown.lines().count() >= wanted,
            "--threads {threads}: {} lines in 30 s:\n{shown}",
            shown.lines().count()
        );
        assert!(
            shown.starts_with("      1   0.000000 #1   C→S rtype    "),
            "--threads {threads}: {shown}"
        );
    }
}

#[test]
fn a_dash_reads_the_capture_from_standard_input() {
    let bytes = std::fs::read(SAMPLE).unwrap();
    for command in [&["packets"][..], &["stats"], &["export"], &["check"]] {
        let from_file = ok(&[command, &[SAMPLE]].concat());
        let (code, from_stdin, err) = run_in(None, &[command, &["-"]].concat(), &bytes);
        assert_eq!(code, 0, "{command:?}: {err}");
        assert_eq!(from_stdin, from_file.replace(SAMPLE, "-"), "{command:?}");
    }
    let (code, summary, err) = run_in(None, &["-"], &bytes);
    assert_eq!(code, 0, "{err}");
    assert!(
        summary.starts_with("-: pcap (ethernet), 593 frames over 6.400 s, complete\n"),
        "{summary}"
    );
    assert_eq!(
        summary.replacen("-:", &format!("{SAMPLE}:"), 1),
        ok(&[SAMPLE])
    );
}

#[test]
fn a_mistyped_command_gets_did_you_mean() {
    for (typed, meant) in [("pakcets", "packets"), ("violation", "violations")] {
        let (code, out, err) = run(&[typed]);
        assert_eq!((code, out.as_str()), (2, ""), "{typed}");
        assert!(
            err.starts_with(&format!(
                "error: unrecognized subcommand '{typed}'\n\n  tip: "
            )),
            "{err}"
        );
        let tip = err.lines().nth(2).unwrap_or_default();
        assert!(
            tip.contains("similar subcommand") && tip.contains(&format!("'{meant}'")),
            "{err}"
        );
        assert!(!err.contains("No such file"), "{err}");
    }
    // Nothing like a command, or a path: the file is missing.
    let (code, _, err) = run(&["nosuchcapture"]);
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "rtype-inspect: nosuchcapture: No such file or directory (os error 2)\n"
    );
    let (code, _, err) = run(&["packets.pcap"]);
    assert_eq!(code, 2);
    assert!(err.contains("packets.pcap: No such file"), "{err}");
}

#[test]
fn a_file_named_like_a_command_is_read() {
    let dir = std::env::temp_dir().join(format!("rtype-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(SAMPLE, dir.join("violation")).unwrap();
    let (code, out, err) = run_in(Some(&dir), &["violation"], b"");
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("violation: pcap (ethernet), 593 frames"),
        "{out}"
    );
}

#[test]
fn count_stops_after_reading_n_datagrams() {
    let all = ok(&["packets", SAMPLE]);
    let first: String = all.lines().take(3).map(|l| format!("{l}\n")).collect();
    assert_eq!(ok(&["packets", SAMPLE, "-c", "3"]), first);
    assert_eq!(ok(&["packets", "-c", "3", "-r", SAMPLE]), first);
    // Datagrams the filters hide count too, as in tshark: the first snapshots are frames 45, 46.
    let snapshots = ok(&["packets", SAMPLE, "--type", "SERVER_SNAPSHOT", "-c", "46"]);
    assert_eq!(
        snapshots,
        "     45   3.400080 #1   S→C rtype    77 SERVER_SNAPSHOT seq=204 tick=204 entities=2\n     46   3.400120 #2   S→C rtype    77 SERVER_SNAPSHOT seq=204 tick=204 entities=2\n"
    );
    let filtered = ok(&[
        "packets",
        SAMPLE,
        "-Y",
        "rtype.msg_type == SERVER_SNAPSHOT",
        "-c",
        "46",
    ]);
    assert_eq!(filtered, snapshots);
    let summary = ok(&["-c", "10", SAMPLE]);
    assert!(
        summary.contains("\n10 protocol datagrams, 0 other UDP"),
        "{summary}"
    );
    let (code, _, err) = run(&["packets", SAMPLE, "-c", "0"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn the_usage_shows_the_default_command() {
    let help = ok(&["--help"]);
    assert!(
        help.contains(
            "Usage: rtype-inspect [OPTIONS] [FILE]...\n       rtype-inspect [--color WHEN] <COMMAND> ...\n"
        ),
        "{help}"
    );
    assert!(
        help.lines()
            .any(|l| l.trim_start().starts_with("summary ") && l.contains("(the default command)")),
        "{help}"
    );
    let (code, _, err) = run(&[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("Usage: rtype-inspect [OPTIONS] [FILE]..."),
        "{err}"
    );
}

#[test]
fn every_option_and_positional_has_help() {
    fn walk(cmd: &clap::Command, path: &str, blank: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if !matches!(id, "help" | "version") && arg.get_help().is_none() {
                blank.push(format!("{path} {id}"));
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, &format!("{path} {}", sub.get_name()), blank);
        }
    }
    let mut blank = Vec::new();
    walk(
        &rtype_inspect::cli::Cli::command(),
        "rtype-inspect",
        &mut blank,
    );
    assert!(blank.is_empty(), "without help: {blank:?}");
}

#[test]
fn the_checked_in_man_page_is_current() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/rtype-inspect.1");
    let page = rtype_inspect::cli::man_page();
    assert_eq!(ok(&["man"]).as_bytes(), &page[..]);
    if std::env::var_os("RTYPE_BLESS").is_some() {
        std::fs::write(path, &page).unwrap();
    }
    let checked_in = std::fs::read(path).unwrap();
    assert!(
        checked_in == page,
        "docs/rtype-inspect.1 is stale: cargo run -- man > docs/rtype-inspect.1\n\
         (or: RTYPE_BLESS=1 cargo test --test cli the_checked_in_man_page_is_current)"
    );
}

#[test]
fn completions_are_generated_for_every_shell() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let script = ok(&["completions", shell]);
        for word in ["packets", "violations", "snapshot-tolerance", "read-file"] {
            assert!(script.contains(word), "{shell}: no {word}");
        }
    }
    // bash parses its script.
    let script = std::env::temp_dir().join(format!("rtype-inspect-{}.bash", std::process::id()));
    std::fs::write(&script, ok(&["completions", "bash"])).unwrap();
    let out = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    std::fs::remove_file(&script).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, _, err) = run(&["completions", "tcsh"]);
    assert_eq!(code, 2);
    assert!(err.contains("invalid value 'tcsh'"), "{err}");
}

#[test]
fn bash_completes_options_names_profiles_rules_messages_and_fields() {
    let dir = std::env::temp_dir().join(format!("rtype-inspect-completion-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("rtype-inspect.bash");
    std::fs::write(&script, ok(&["completions", "bash"])).unwrap();
    for (line, offered) in [
        ("packets --thr", "--threads"),
        ("check --profile ref", "reference-17byte reference-15byte"),
        ("check --allow rtype.pong", "rtype.pong.empty"),
        (
            "packets --type SERVER_SN",
            "SERVER_SNAPSHOT SERVER_SNAPSHOT_CHUNK",
        ),
        ("packets -Y rtype.seq", "rtype.sequence"),
        ("packets -T fields -e rtype.tic", "rtype.tick"),
    ] {
        // As bash calls the completion function: the words, the one being completed and the
        // one before it.
        let words: Vec<&str> = line.split(' ').collect();
        let (cur, prev) = (words[words.len() - 1], words[words.len() - 2]);
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "source {}; COMP_WORDS=(rtype-inspect {line}); COMP_CWORD={}; \
                 _rtype__inspect rtype-inspect {cur} {prev}; echo \"${{COMPREPLY[*]}}\"",
                script.display(),
                words.len()
            ))
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("{offered}\n"),
            "{line}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

fn validator(name: &str) -> jsonschema::Validator {
    let path = format!(
        "{}/docs/schemas/{name}.schema.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

#[test]
fn json_documents_name_their_schema_tool_and_file_and_follow_it() {
    let version = env!("CARGO_PKG_VERSION");
    for (command, schema) in [("summary", "summary/1"), ("stats", "stats/1")] {
        let validator = validator(command);
        for file in captures() {
            let out = ok(&[command, &file, "--format", "json"]);
            let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert_eq!(doc["schema"], schema, "{command} {file}");
            assert_eq!(doc["tool"]["version"], version);
            assert_eq!(doc["file"], file.as_str());
            let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{command} {file}: {errors:?}");
        }
    }
    let validator = validator("check");
    let files = captures();
    let args: Vec<&str> = ["check", "--format", "json"]
        .into_iter()
        .chain(files.iter().map(String::as_str))
        .chain(["no-such.pcap"])
        .collect();
    let (code, out, _) = run(&args);
    assert_eq!(code, 2);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["schema"], "check/1");
    assert_eq!(doc["tool"]["version"], version);
    assert_eq!(doc["files"].as_array().unwrap().len(), files.len() + 1);
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "check: {errors:?}");
    // A filter and a truncated capture bring their optional parts.
    let doc: serde_json::Value =
        serde_json::from_str(&ok(&["-Y", "rtype", SAMPLE, "--format", "json"])).unwrap();
    assert_eq!(doc["display_filter"]["datagrams"], 593);
    assert!(validator_ok("summary", &doc));
}

fn validator_ok(name: &str, doc: &serde_json::Value) -> bool {
    validator(name).is_valid(doc)
}

#[test]
fn stats_names_agree_with_its_text() {
    let doc: serde_json::Value = serde_json::from_str(&ok(&[
        "stats",
        SAMPLE,
        "--format",
        "json",
        "--snapshot-tolerance",
        "7",
    ]))
    .unwrap();
    assert_eq!(doc["config"]["snapshot_tolerance"], 7.0);
    assert_eq!(doc["conversations"][0]["rtt_ms"]["p50"], 0.04);
    assert!(doc["conversations"][0]["rtt_ms"].get("median").is_none());
    let text = ok(&["stats", SAMPLE, "--snapshot-tolerance", "7"]);
    assert!(text.contains("judged against 60.0 Hz ± 7.0%"), "{text}");
    assert!(text.contains("┆ p50    ┆"), "{text}");
}

#[test]
fn packets_as_json_are_the_exports_records() {
    for file in captures() {
        let records = ok(&["packets", &file, "--format", "json"]);
        assert_eq!(records, ok(&["export", &file]), "{file}");
        assert!(records.lines().all(|l| l.starts_with('{')), "{file}");
    }
    let filtered = ok(&[
        "packets",
        SAMPLE,
        "--format",
        "json",
        "--type",
        "SERVER_SNAPSHOT",
        "-c",
        "46",
    ]);
    let frames: Vec<&str> = filtered
        .lines()
        .filter(|l| l.starts_with(r#"{"kind":"datagram""#))
        .map(|l| &l[..32])
        .collect();
    assert_eq!(
        frames,
        [
            r#"{"kind":"datagram","frame":45,"t"#,
            r#"{"kind":"datagram","frame":46,"t"#
        ],
        "{filtered}"
    );
    assert_eq!(
        filtered,
        ok(&["export", SAMPLE, "--type", "SERVER_SNAPSHOT", "-c", "46"])
    );
    let (code, _, err) = run(&["packets", SAMPLE, "--format", "json", "-V"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("'--format <FORMAT>' cannot be used with '--verbose'"),
        "{err}"
    );
}

#[test]
fn a_count_says_the_run_stopped_after_it() {
    let summary = ok(&["-c", "5", SAMPLE]);
    assert!(
        summary.starts_with(&format!(
            "{SAMPLE}: pcap (ethernet), 5 frames over 0.083 s, stopped after 5 datagrams (-c 5)\n"
        )),
        "{summary}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["-c", "5", SAMPLE, "--format", "json"])).unwrap();
    assert_eq!(json["capture"]["stopped_after"], 5);
    assert!(validator_ok("summary", &json));
    // A count the capture does not reach stops nothing.
    let all = ok(&["-c", "100000", SAMPLE]);
    assert!(all.contains(", complete\n"), "{all}");
    let json: serde_json::Value = serde_json::from_str(&ok(&[SAMPLE, "--format", "json"])).unwrap();
    assert!(json["capture"].get("stopped_after").is_none());
}

#[test]
fn names_mistyped_get_the_nearest_known_name() {
    let error = |args: &[&str]| {
        let (code, out, err) = run(args);
        assert_eq!((code, out.as_str()), (2, ""), "{args:?}");
        err
    };
    let err = error(&["packets", SAMPLE, "-Y", "rtype.seq == 3"]);
    assert!(
        err.starts_with(
            "rtype-inspect: display filter: rtype.seq: no such field; did you mean \
             rtype.sequence? (rtype-inspect fields lists them)\n"
        ),
        "{err}"
    );
    assert_eq!(
        error(&["packets", SAMPLE, "--profile", "reference-17bytes"]),
        "rtype-inspect: reference-17bytes: no bundled profile of that name, and no such file; \
         did you mean reference-17byte? (bundled: reference-17byte, reference-15byte)\n"
    );
    assert!(error(&["fields", "--profile", "nosuch"]).contains("(bundled: reference-17byte"));
    for (option, command) in [("--violation", "packets"), ("--allow", "check")] {
        assert_eq!(
            error(&[command, SAMPLE, option, "rtype.pong.emtpy"]),
            format!(
                "rtype-inspect: unknown rule ID in {option}: rtype.pong.emtpy (did you mean \
                 rtype.pong.empty?) (`rtype-inspect violations` lists them)\n"
            )
        );
    }
    let dir = std::env::temp_dir().join(format!("rtype-cli-allow-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("rtype-inspect.toml"),
        "allow = [\"rtype.pong.emtpy\"]\n",
    )
    .unwrap();
    let (code, _, err) = run_in(Some(&dir), &["check", SAMPLE], b"");
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "rtype-inspect: rtype-inspect.toml: unknown rule ID in allow: rtype.pong.emtpy (did you \
         mean rtype.pong.empty?) (`rtype-inspect violations` lists them)\n"
    );
}

#[test]
fn color_always_colours_the_packet_list_by_severity() {
    let crc = concat!(env!("CARGO_MANIFEST_DIR"), "/samples/violations-crc.pcap");
    let plain = ok(&["packets", crc]);
    let coloured = ok(&["--color", "always", "packets", crc]);
    assert_eq!(coloured.lines().count(), plain.lines().count());
    for (plain, coloured) in plain.lines().zip(coloured.lines()) {
        if plain.ends_with(']') {
            assert!(coloured.starts_with("\x1b[3"), "{coloured:?}");
            assert!(coloured.ends_with("\x1b[0m"), "{coloured:?}");
            assert_eq!(&coloured[5..coloured.len() - 4], plain);
        } else {
            assert_eq!(coloured, plain);
        }
    }
    let red = coloured
        .lines()
        .filter(|l| l.starts_with("\x1b[31m"))
        .count();
    assert_eq!(red, 10, "{coloured}");
    assert_eq!(ok(&["packets", crc, "--color", "always"]), coloured);
}

#[test]
fn every_command_ends_saying_when_no_profile_reads_the_snapshots() {
    // violations-snapshot.pcap breaks the document's snapshot layout on purpose, in ways no
    // bundled profile reads either: its findings stand, and every command says so on standard
    // error, once, last.
    let capture = "samples/violations-snapshot.pcap";
    let line = "samples/violations-snapshot.pcap: 1 conversation has snapshots that neither the \
                document's layout nor any configured or bundled profile reads: their findings \
                stand (a profile of this build's layout reads them: --profile FILE.toml, as in \
                samples/profiles/)\n";
    let dir = std::env::temp_dir().join(format!("rtype-inspect-cli-unfit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let parquet = dir.join("dataset");
    let report = dir.join("report.html");
    let written = dir.join("written.pcap");
    let commands: [&[&str]; 9] = [
        &[capture],
        &["check", capture],
        &["packets", capture],
        &["export", capture],
        &[
            "export",
            capture,
            "--format",
            "parquet",
            "-o",
            parquet.to_str().unwrap(),
        ],
        &["stats", capture],
        &["profile", capture],
        &["report", capture, "-o", report.to_str().unwrap()],
        &["packets", capture, "-w", written.to_str().unwrap()],
    ];
    for args in commands {
        let (_, _, err) = run(&[args, &["-q"]].concat());
        assert_eq!(err, line, "{args:?}");
    }
    // Standard input, which is not scanned before it is read, says the same.
    let out = Command::new(BIN)
        .args(["check", "-q", "-"])
        .stdin(std::fs::File::open(capture).unwrap())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        line.replace("samples/violations-snapshot.pcap:", "-:")
    );
    // A profile named, or the document's layout kept on purpose: nothing to say.
    for named in [&["--profile", "reference-17byte"][..], &["--strict-layout"]] {
        let (_, _, err) = run(&[&["check", capture, "-q"][..], named].concat());
        assert_eq!(err, "", "{named:?}");
    }
    // The real captures' layouts are found: nothing to say either.
    let (_, _, err) = run(&[
        "check",
        "-q",
        "tests/fixtures/reference-17byte-1client.pcap",
    ]);
    assert_eq!(err, "");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn floats_read_as_tshark_writes_them() {
    // The document's f32 table misreads the 17-byte build's i16 positions: tiny floats, which
    // tshark writes as %g at the type's precision.
    let tree = ok(&[
        "packets",
        "-V",
        "--profile",
        "document",
        "tests/fixtures/reference-17byte-1client.pcap",
        "--frames",
        "12",
    ]);
    for line in [
        "        Position X: 1.3992e-36  [@9]\n",
        "        Velocity X: 9.29117e-41  [@17]\n",
    ] {
        assert!(tree.contains(line), "{line}{tree}");
    }
    // A scaled field is a double: its decimals as they are.
    let tree = ok(&[
        "packets",
        "-V",
        "tests/fixtures/reference-17byte-1client.pcap",
        "--frames",
        "12",
    ]);
    assert!(tree.contains("        Position X: 100.6  [@9]\n"), "{tree}");
}

/// COMPONENT_ADD and COMPONENT_REMOVE name their entity and component.
#[test]
fn info_names_an_rt_component() {
    let hex = |h: &str| {
        (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
            .collect()
    };
    // The little-endian sample's handshake, then the server adds velocity (2) to entity 10000
    // and removes its transform (1).
    let client = "54520100010000000000000054520100010000000000000001616c69636500000000000000000000000000000000000000000000000000000000000000";
    let accept = "5452020101000000000000000000000002010000003c00";
    let add = "54522a010300000002000000102700000208f4ff0c0000000000";
    let remove = "54522b0104000000030000001027000001";
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("rt-components.pcap");
    datagrams::write_pcap(
        &path,
        &[
            (41002, 4242, hex(client)),
            (4242, 41002, hex(accept)),
            (4242, 41002, hex(add)),
            (4242, 41002, hex(remove)),
        ],
    );
    let list = ok(&[
        "packets",
        path.to_str().unwrap(),
        "--type",
        "COMPONENT_ADD",
        "--type",
        "COMPONENT_REMOVE",
    ]);
    assert_eq!(
        list,
        "      3   2.000000 #1   S→C rt       26 COMPONENT_ADD seq=3 entity=10000 component=2(velocity)\n      4   3.000000 #1   S→C rt       17 COMPONENT_REMOVE seq=4 entity=10000 component=1(transform)\n"
    );
}

#[test]
fn info_names_an_rt_entity_type() {
    let list = ok(&[
        "packets",
        "tests/fixtures/rt-two-players.pcap",
        "--type",
        "ENTITY_SPAWN",
    ]);
    assert_eq!(
        list.lines().next(),
        Some("      3   0.002028 #1   S→C rt       28 ENTITY_SPAWN seq=1 entity=10000 type=1(player)")
    );
}
