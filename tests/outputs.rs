//! Outputs a user can trust: files written whole or not at all (never over an input), a closed
//! pipe that stops the read at once, lines cut only on a terminal and to its width, colour only
//! where it belongs.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_rtype-inspect");
const SAMPLE: &str = "samples/violations-chunks.pcap";

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rtype-outputs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(args: &[&str]) -> std::process::Output {
    Command::new(BIN).args(args).output().expect("binary runs")
}

/// Files in `dir`, sorted (no temporary file may be left behind).
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_failed_run_leaves_the_output_file_as_it_was() {
    let dir = temp_dir("keep");
    let keep = dir.join("keep.json");
    std::fs::write(&keep, "precious").unwrap();
    let keep_s = keep.to_str().unwrap();
    let lua = dir.join("rtype.lua");
    std::fs::write(&lua, "-- mine").unwrap();
    for args in [
        vec!["export", "missing.pcap", "-o", keep_s],
        vec!["export", "README.md", "-o", keep_s],
        vec![
            "export",
            SAMPLE,
            "--profile",
            "no-such-profile",
            "-o",
            keep_s,
        ],
        vec![
            "dissector",
            "--profile",
            "no-such-profile",
            "-o",
            lua.to_str().unwrap(),
        ],
        vec![
            "generate", "--large", "10", "--output", keep_s, "--all", "x",
        ],
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    assert_eq!(std::fs::read_to_string(&keep).unwrap(), "precious");
    assert_eq!(std::fs::read_to_string(&lua).unwrap(), "-- mine");
    assert_eq!(listing(&dir), ["keep.json", "rtype.lua"]);
    // A successful run replaces it whole.
    let out = run(&["export", SAMPLE, "-o", keep_s]);
    assert_eq!(out.status.code(), Some(0));
    let expected = run(&["export", SAMPLE]).stdout;
    assert_eq!(std::fs::read(&keep).unwrap(), expected);
    assert_eq!(listing(&dir), ["keep.json", "rtype.lua"]);
}

#[test]
fn an_output_that_is_an_input_is_refused() {
    let dir = temp_dir("same");
    let capture = dir.join("x.pcap");
    std::fs::copy(SAMPLE, &capture).unwrap();
    let before = std::fs::read(&capture).unwrap();
    // The same file, named another way.
    let other_name = dir.join(".").join("x.pcap");
    let out = run(&[
        "export",
        capture.to_str().unwrap(),
        "-o",
        other_name.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refusing to write the output over an input"),
        "{err}"
    );
    assert_eq!(std::fs::read(&capture).unwrap(), before);
    assert_eq!(listing(&dir), ["x.pcap"]);
}

/// A capture of `records` frames written into a named pipe as fast as the reader takes them;
/// returns how many bytes the reader took before it closed the pipe.
fn feed(fifo: &Path, records: u32) -> std::thread::JoinHandle<u64> {
    let _ = std::fs::remove_file(fifo);
    assert!(Command::new("mkfifo").arg(fifo).status().unwrap().success());
    let fifo = fifo.to_owned();
    let frame = std::fs::read("samples/clean-session.pcap").unwrap();
    // The first record of the clean session (a CLIENT_HELLO in Ethernet/IPv4/UDP), repeated.
    let len = u32::from_le_bytes(frame[24 + 8..24 + 12].try_into().unwrap()) as usize;
    let record = frame[24..24 + 16 + len].to_vec();
    std::thread::spawn(move || {
        let mut pipe = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
        let mut written = 0u64;
        let mut chunk = frame[..24].to_vec();
        for _ in 0..records {
            chunk.extend_from_slice(&record);
            if chunk.len() >= 1 << 16 {
                if pipe.write_all(&chunk).is_err() {
                    return written;
                }
                written += chunk.len() as u64;
                chunk.clear();
            }
        }
        if pipe.write_all(&chunk).is_ok() {
            written += chunk.len() as u64;
        }
        written
    })
}

#[test]
fn a_closed_pipe_stops_the_read() {
    let dir = temp_dir("pipe");
    for cmd in ["packets", "export"] {
        let fifo = dir.join(format!("{cmd}.fifo"));
        // About 150 MB of capture.
        let writer = feed(&fifo, 1_500_000);
        let mut child = Command::new(BIN)
            .args([cmd, fifo.to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 64];
        std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        let written = writer.join().unwrap();
        assert_eq!(out.status.code(), Some(0), "{cmd}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{cmd}");
        assert!(
            written < 20 << 20,
            "{cmd} read {written} bytes after its output closed"
        );
    }
}

/// Runs `command` in a shell on a pseudo-terminal of `columns` columns (util-linux `script`),
/// with `env` set; returns what the terminal showed.
fn on_terminal(command: &str, columns: u16, env: &[(&str, &str)]) -> String {
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let typescript = temp_dir(&format!("tty{call}")).join("typescript");
    let shell = format!("stty cols {columns}; {command}");
    let mut script = Command::new("script");
    script
        .args(["-q", "-e", "-c", &shell])
        .arg(&typescript)
        .stdin(Stdio::null())
        .env_remove("NO_COLOR")
        .env("TERM", "xterm");
    for (k, v) in env {
        script.env(k, v);
    }
    let out = script.output().expect("util-linux `script` runs");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&std::fs::read(typescript).unwrap()).replace("\r\n", "\n")
}

#[test]
fn lines_are_cut_to_the_terminal_and_whole_on_a_pipe() {
    let shown = on_terminal(&format!("{BIN} packets {SAMPLE}"), 72, &[]);
    let lines: Vec<&str> = shown.lines().filter(|l| l.contains(" rtype ")).collect();
    assert!(lines.len() > 20, "{shown}");
    // A line with findings is coloured on a terminal: its escapes take no column.
    let visible = |l: &str| {
        ["\x1b[31m", "\x1b[33m", "\x1b[34m", "\x1b[0m"]
            .iter()
            .fold(l.to_string(), |l, code| l.replace(code, ""))
    };
    assert!(lines.iter().any(|l| l.contains("\x1b[3")), "{shown}");
    for line in &lines {
        assert!(
            visible(line).chars().count() <= 72,
            "wider than the terminal: {line}"
        );
    }
    assert!(lines.iter().any(|l| l.ends_with('…')), "{shown}");
    let piped = String::from_utf8(run(&["packets", SAMPLE]).stdout).unwrap();
    assert!(
        piped.contains("chunk=1/0 entities=6 [rtype.chunk.total-zero]"),
        "{piped}"
    );
    // Tables follow the terminal's width too (prose lines are left to the terminal to wrap).
    let shown = on_terminal(&format!("{BIN} {SAMPLE}"), 60, &[]);
    let rows: Vec<&str> = shown
        .lines()
        .filter(|l| l.starts_with(['│', '┌', '└']))
        .collect();
    assert!(rows.len() > 10, "{shown}");
    for line in rows {
        assert!(visible_width(line) <= 60, "wider than the terminal: {line}");
    }
    let stats = format!("{BIN} stats tests/fixtures/reference-17byte-1client.pcap");
    let shown = on_terminal(&stats, 70, &[]);
    let handshake = shown
        .find("  handshake: accepted")
        .expect("the handshake line");
    let wrapped = shown[handshake..]
        .lines()
        .take_while(|l| !l.starts_with('┌'));
    assert!(wrapped.clone().count() > 1, "{shown}");
    let rows = shown.lines().filter(|l| l.starts_with(['│', '┌', '└']));
    for line in wrapped.chain(rows) {
        assert!(visible_width(line) <= 70, "wider than the terminal: {line}");
    }
}

/// Characters a line shows, colour escapes (`ESC [ … m`) left out.
fn visible_width(line: &str) -> usize {
    let mut width = 0;
    let mut in_escape = false;
    for c in line.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (true, 'm') => in_escape = false,
            (false, _) => width += 1,
            (true, _) => {}
        }
    }
    width
}

#[test]
fn colour_only_on_a_terminal_that_wants_it() {
    let escape = "\x1b[";
    let summary = format!("{BIN} {SAMPLE}");
    let shown = on_terminal(&summary, 120, &[]);
    assert!(shown.contains(escape), "{shown}");
    assert!(!on_terminal(&summary, 120, &[("NO_COLOR", "1")]).contains(escape));
    assert!(!on_terminal(&summary, 120, &[("TERM", "dumb")]).contains(escape));
    assert!(!on_terminal(&format!("{summary} --color never"), 120, &[]).contains(escape));
    let piped = run(&[SAMPLE]).stdout;
    assert!(!String::from_utf8_lossy(&piped).contains(escape));
    let forced = run(&[SAMPLE, "--color", "always"]).stdout;
    assert!(String::from_utf8_lossy(&forced).contains(escape));
}

#[test]
fn a_cut_file_and_a_corrupt_one_say_what_was_found_and_where() {
    let dir = temp_dir("ends");
    let clean = std::fs::read("samples/clean-session.pcap").unwrap();
    let cut = dir.join("cut.pcap");
    std::fs::write(&cut, &clean[..5000]).unwrap();
    let mut long = clean.clone();
    long[24 + 8..24 + 12].copy_from_slice(&0x7FFF_FFFFu32.to_le_bytes());
    let long_record = dir.join("long-record.pcap");
    std::fs::write(&long_record, long).unwrap();
    let mut gz = std::fs::read("samples/clean-session.pcap.gz").unwrap();
    let at = gz.len() - 6;
    gz[at] ^= 0xFF; // the gzip trailer's CRC32
    let bad_gz = dir.join("bad-checksum.pcap.gz");
    std::fs::write(&bad_gz, gz).unwrap();
    for (file, head, rule) in [
        (
            &cut,
            "TRUNCATED at frame 53 (byte offset 4868): the file ends 132 bytes into a 135-byte record",
            "capture.truncated",
        ),
        (
            &long_record,
            "CORRUPT at frame 1 (byte offset 24): a record length of 2147483647 bytes exceeds the maximum of 16777216",
            "capture.corrupt",
        ),
        (
            &bad_gz,
            "CORRUPT at frame 182 (byte offset 21727): the gzip data is corrupt",
            "capture.corrupt",
        ),
    ] {
        let f = file.to_str().unwrap();
        let text = String::from_utf8(run(&[f]).stdout).unwrap();
        let first = text.lines().next().unwrap();
        assert!(first.contains(head), "{first}");
        let judged: serde_json::Value =
            serde_json::from_slice(&run(&["check", f, "--format", "json"]).stdout).unwrap();
        let ids: Vec<&str> = judged["files"][0]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap())
            .collect();
        assert!(ids.contains(&rule), "{f}: {ids:?}");
    }
}

#[test]
fn finding_texts_read_as_sentences() {
    let mut files: Vec<String> = std::fs::read_dir("samples")
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .filter(|p| p.contains(".pcap"))
        .collect();
    files.extend(
        std::fs::read_dir("tests/fixtures")
            .unwrap()
            .map(|e| e.unwrap().path().display().to_string()),
    );
    let mut details = 0;
    for file in &files {
        let out = run(&["export", file]);
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            let findings = match record["kind"].as_str() {
                Some("datagram") => record["violations"].as_array().unwrap().clone(),
                Some("finding") => vec![record.clone()],
                _ => continue,
            };
            for f in findings {
                let detail = f["detail"].as_str().unwrap();
                details += 1;
                let raw = detail.starts_with("value ")
                    || detail.starts_with("field ")
                    || (detail.starts_with("expected ") && detail.contains(", found "))
                    || detail.contains("(0x");
                assert!(!raw, "{file}: {} reads as raw data: {detail}", f["id"]);
            }
        }
    }
    assert!(details > 500, "{details}");
    // The issue's own example.
    let handshake = rtype_inspect::report::render::detail(&rtype_inspect::finding::Finding::new(
        rtype_inspect::proto::Rule::SessionHandshakeOrder,
        0,
        rtype_inspect::finding::Detail::Before {
            missing: "SERVER_HELLO",
            message: "CLIENT_JOIN_REQUEST",
        },
    ));
    assert_eq!(
        handshake,
        "expected SERVER_HELLO before CLIENT_JOIN_REQUEST"
    );
}

#[test]
fn filters_that_cannot_match_are_errors_that_say_why() {
    let sample = "samples/clean-session.pcap";
    for (args, says) in [
        (
            vec!["--type", "snapshoot"],
            "--type snapshoot: no such message type; did you mean",
        ),
        (
            vec!["--type", "0x99"],
            "no dialect has a message with code 0x99",
        ),
        (
            vec!["--frames", "7-5"],
            "--frames `7-5` matches nothing: its start 7 is after its end 5",
        ),
        (vec!["--time", "5-1"], "--time `5-1` matches nothing"),
        (vec!["--port", "0"], "0 is not in 1..=65535"),
        (
            vec!["--conversation", "9"],
            "conversation 9 does not exist; the capture has 3",
        ),
    ] {
        for cmd in ["packets", "export"] {
            let mut all = vec![cmd, sample];
            all.extend(&args);
            let out = run(&all);
            assert_eq!(out.status.code(), Some(2), "{all:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains(says), "{all:?}: {err}");
        }
    }
    // An open end works as the help says.
    let out = run(&["packets", sample, "--frames", "-2"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
}

#[test]
fn a_session_finding_filter_shows_the_datagrams_it_is_about() {
    // The real 17-byte capture sends 351 ENTITY_DESTROYED twice, byte for byte: one line each,
    // the finding at its end, as -Y on the finding shows them.
    let c17 = "tests/fixtures/reference-17byte-1client.pcap";
    let out = run(&["packets", c17, "--violation", "session.duplicate-datagram"]);
    let text = String::from_utf8(out.stdout).unwrap();
    let lines = text.lines().count();
    let destroyed = text
        .lines()
        .filter(|l| l.contains(" SERVER_ENTITY_DESTROYED seq=0 tick="))
        .filter(|l| l.ends_with(" [session.duplicate-datagram]"))
        .count();
    assert_eq!((lines, destroyed), (351, 351), "{text}");
    let filter = "rtype.violation == \"session.duplicate-datagram\"";
    let shown = run(&["packets", c17, "-Y", filter]);
    assert_eq!(String::from_utf8(shown.stdout).unwrap(), text);
    // The whole list: one line per datagram, then the finding of no datagram.
    let all = String::from_utf8(run(&["packets", c17]).stdout).unwrap();
    assert_eq!(all.lines().count(), 3202 + 1);
    assert!(
        all.ends_with(
            "   3202  15.039690 #1   S→C rtype   411 SERVER_SNAPSHOT_CHUNK seq=1001 tick=1000 \
             chunk=2/2 entities=38\n      9            #1   finding \
             [session.entity-never-destroyed] 103 entities still alive at the end\n"
        ),
        "{all}"
    );
}
