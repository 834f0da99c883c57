//! Several captures, and directories of them, for the summary, `packets`, `stats` and `export`:
//! each file's report as it is alone, in argument order whatever the threads, errors per file;
//! and the configuration's `[profiles]` table giving each file its profile.

#[path = "support/bin.rs"]
mod bin;

use std::path::PathBuf;

use bin::run;
use serde_json::Value;

const A: &str = "samples/clean-session.pcap";
const B: &str = "samples/violations-messages.pcap";
const C: &str = "tests/fixtures/rt-two-players.pcap";

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rtype-multi-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// stdout of a run that must succeed.
fn ok(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

#[test]
fn summaries_follow_one_another_as_each_alone() {
    let alone: Vec<String> = [A, B, C].iter().map(|f| ok(&[f])).collect();
    let together = ok(&[A, B, C]);
    assert_eq!(together, alone.join("\n"));
    assert_eq!(ok(&["--threads", "1", A, B, C]), together);
    // JSON: an array of the documents alone, each naming its file.
    let documents: Vec<Value> = [A, B, C]
        .iter()
        .map(|f| json(&ok(&["--format", "json", f])))
        .collect();
    let array = json(&ok(&["--format", "json", A, B, C]));
    assert_eq!(array, Value::from(documents.clone()));
    assert_eq!(array[2]["file"], C);
    // A directory's output has the several-file shape, even for one capture.
    let d = dir("one");
    std::fs::copy(A, d.join("a.pcap")).unwrap();
    std::fs::write(d.join("notes.txt"), "not a capture").unwrap();
    let array = json(&ok(&["--format", "json", d.to_str().unwrap()]));
    assert_eq!(array.as_array().unwrap().len(), 1);
    assert_eq!(array[0]["messages"], documents[0]["messages"]);
}

#[test]
fn a_missing_file_is_an_error_naming_it_and_the_others_are_reported() {
    let (code, out, err) = run(&[A, "missing.pcap", B]);
    assert_eq!(code, 2);
    assert!(err.contains("missing.pcap: "), "{err}");
    assert_eq!(out, [ok(&[A]), ok(&[B])].join("\n"));
    let (code, out, _) = run(&["stats", "--format", "json", "missing.pcap", B]);
    assert_eq!(code, 2);
    assert_eq!(
        json(&out),
        Value::from(vec![json(&ok(&["stats", "--format", "json", B]))])
    );
    let (code, out, err) = run(&["packets", A, "missing.pcap"]);
    assert_eq!((code, out.starts_with(A)), (2, true), "{err}");
    // Alone, as before: the error and nothing on stdout.
    let (code, out, err) = run(&["missing.pcap"]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(err.starts_with("rtype-inspect: missing.pcap: "), "{err}");
}

#[test]
fn packet_lists_are_headed_by_their_file() {
    let together = ok(&["packets", A, C, "-t", "e"]);
    let expected = format!(
        "{A}\n{}\n{C}\n{}",
        ok(&["packets", A, "-t", "e"]),
        ok(&["packets", C, "-t", "e"])
    );
    assert_eq!(together, expected);
    assert_eq!(
        ok(&["packets", "--threads", "1", A, C, "-t", "e"]),
        together
    );
}

#[test]
fn stats_follow_one_another_and_json_is_an_array() {
    let together = ok(&["stats", A, C]);
    assert_eq!(together, [ok(&["stats", A]), ok(&["stats", C])].join("\n"));
    let array = json(&ok(&["stats", "--format", "json", A, C]));
    let alone = [A, C].map(|f| json(&ok(&["stats", "--format", "json", f])));
    assert_eq!(array, Value::from(alone.to_vec()));
}

#[test]
fn export_is_one_stream_with_the_file_on_every_record() {
    let together = ok(&["export", A, C]);
    let mut expected = Vec::new();
    for f in [A, C] {
        for line in ok(&["export", f]).lines() {
            let mut record = json(line);
            record["file"] = f.into();
            expected.push(record);
        }
    }
    let got: Vec<Value> = together.lines().map(json).collect();
    assert_eq!(got, expected);
    assert!(together.lines().all(|l| l.starts_with("{\"file\":")));
    // --json-array: the same records, one array; packets --format json: the same stream.
    let array = json(&ok(&["export", "--json-array", A, C]));
    assert_eq!(array, Value::from(expected));
    assert_eq!(ok(&["packets", "--format", "json", A, C]), together);
    // To a file, whole.
    let d = dir("export");
    let out = d.join("all.ndjson");
    ok(&["export", A, C, "-o", out.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), together);
    // One file alone: no file field, as before.
    assert!(!ok(&["export", A]).contains("\"file\":"));
    // Every record follows the timeline's schema.
    let schema = json(&std::fs::read_to_string("docs/timeline.schema.json").unwrap());
    let validator = jsonschema::validator_for(&schema).unwrap();
    for record in together.lines().map(json) {
        assert!(validator.is_valid(&record), "{record}");
    }
}

/// The check's findings per file, by rule ID.
fn check_rules(args: &[&str]) -> Vec<(String, Vec<String>)> {
    let mut all = vec!["check", "--format", "json"];
    all.extend_from_slice(args);
    let (code, out, err) = run(&all);
    assert!(code < 2, "{err}");
    json(&out)["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let ids = f["findings"].as_array().unwrap().iter();
            let ids = ids.map(|x| x["id"].as_str().unwrap().to_string()).collect();
            (
                f["file"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_string(),
                ids,
            )
        })
        .collect()
}

#[test]
fn profiles_by_file_name_from_the_configuration() {
    let d = dir("profiles");
    let captures = d.join("captures");
    std::fs::create_dir_all(&captures).unwrap();
    for f in [
        "reference-15byte-levelevents.pcap",
        "reference-17byte-1client.pcap",
    ] {
        std::fs::copy(format!("tests/fixtures/{f}"), captures.join(f)).unwrap();
    }
    let config = d.join("rtype-inspect.toml");
    let undecoded = |profile: &str, table: &str| {
        std::fs::write(&config, format!("profile = \"{profile}\"\n{table}")).unwrap();
        check_rules(&[
            "--config",
            config.to_str().unwrap(),
            captures.to_str().unwrap(),
        ])
        .into_iter()
        .filter(|(_, ids)| ids.iter().any(|i| i.starts_with("rtype.snapshot.")))
        .map(|(file, _)| file)
        .collect::<Vec<_>>()
    };
    // One profile for both: the other layout's snapshots do not decode.
    assert_eq!(
        undecoded("reference-15byte", ""),
        ["reference-17byte-1client.pcap"]
    );
    assert_eq!(
        undecoded("reference-17byte", ""),
        ["reference-15byte-levelevents.pcap"]
    );
    // The table gives each its own, the first matching pattern winning over `profile`.
    let table =
        "[profiles]\n\"*-15byte*\" = \"reference-15byte\"\n\"*.pcap\" = \"reference-17byte\"\n";
    assert!(undecoded("reference-15byte", table).is_empty());
    // In the file's order: `*.pcap` first takes both.
    let first =
        "[profiles]\n\"*.pcap\" = \"reference-17byte\"\n\"*-15byte*\" = \"reference-15byte\"\n";
    assert_eq!(
        undecoded("reference-15byte", first),
        ["reference-15byte-levelevents.pcap"]
    );
    // --profile wins over the table.
    std::fs::write(&config, table).unwrap();
    let rules = check_rules(&[
        "--profile",
        "reference-15byte",
        "--config",
        config.to_str().unwrap(),
        captures.to_str().unwrap(),
    ]);
    assert!(
        rules[1].1.iter().any(|i| i.starts_with("rtype.snapshot.")),
        "{rules:?}"
    );
    // A profile the table names that does not exist: the error names the file and the pattern.
    std::fs::write(&config, "[profiles]\n\"*-15byte*\" = \"nope.toml\"\n").unwrap();
    let (code, _, err) = run(&[
        "check",
        "--config",
        config.to_str().unwrap(),
        captures.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("rtype-inspect.toml (profiles.\"*-15byte*\")"),
        "{err}"
    );
    // The summary says which profile each file was read with.
    std::fs::write(&config, table).unwrap();
    let array = json(&ok(&[
        "--format",
        "json",
        "--config",
        config.to_str().unwrap(),
        captures.to_str().unwrap(),
    ]));
    let profiles: Vec<&str> = array
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["profile"].as_str().unwrap())
        .collect();
    assert_eq!(profiles, ["reference-15byte", "reference-17byte"]);
    // `profile` and the report take the table's profile too (and `diff`, which profiles its
    // captures the same way).
    let fifteen = captures.join("reference-15byte-levelevents.pcap");
    let made_with = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--config", config.to_str().unwrap()]);
        json(&ok(&all))["snapshot_profile"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let profile = ["profile", fifteen.to_str().unwrap(), "--format", "json"];
    assert_eq!(made_with(&profile), "reference-15byte");
    let html = d.join("report.html");
    ok(&[
        "report",
        fifteen.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
    ]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("\"snapshot_profile\":\"reference-15byte\""));
    assert!(!page.contains("\"snapshot_profile\":\"document\""));
}

/// A directory of `n` captures of the sample's first three frames.
/// A team's own profile, named in the configuration's `[profiles]` for other files, is tried
/// before the bundled ones on a capture no pattern names: the real 17-byte capture is read with
/// it, and the one layout finding names it and what its file says differs.
#[test]
fn a_configured_profile_is_found_as_the_bundled_ones_are() {
    let d = dir("candidates");
    let bundled = std::fs::read_to_string("samples/profiles/reference-17byte.toml").unwrap();
    let ours: String = bundled
        .lines()
        .map(|l| match l {
            l if l.starts_with("name = ") => "name = \"our-build\"",
            l if l.starts_with("differs = ") => "differs = \"our build quantises to i16 × 10\"",
            l => l,
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(d.join("our-build.toml"), ours).unwrap();
    std::fs::write(
        d.join("rtype-inspect.toml"),
        "[profiles]\n\"lab-*.pcap\" = \"our-build.toml\"\n",
    )
    .unwrap();
    std::fs::copy(
        "tests/fixtures/reference-17byte-1client.pcap",
        d.join("session.pcap"),
    )
    .unwrap();
    let (code, out, err) = bin::run_in(&d, &["export", "session.pcap"]);
    assert_eq!(code, 0, "{err}");
    let records: Vec<Value> = out.lines().map(json).collect();
    let layout: Vec<(u64, &str)> = records
        .iter()
        .filter(|r| r["kind"] == "datagram")
        .flat_map(|r| {
            r["violations"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |v| (r, v))
        })
        .filter(|(_, v)| v["id"].as_str().unwrap().starts_with("rtype.snapshot."))
        .map(|(r, v)| (r["frame"].as_u64().unwrap(), v["detail"].as_str().unwrap()))
        .collect();
    assert_eq!(
        layout,
        [(
            10,
            "read as profile our-build: our build quantises to i16 × 10"
        )]
    );
    let summary = records.last().unwrap();
    assert_eq!(summary["profile"], "our-build");
    assert_eq!(summary["conversations"][0]["layout"], "our-build");
    // Named for the file, it is the layout the team ships: no finding.
    std::fs::rename(d.join("session.pcap"), d.join("lab-1.pcap")).unwrap();
    let (code, out, err) = bin::run_in(&d, &["check", "lab-1.pcap", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("rtype.snapshot."), "{out}");
    std::fs::remove_dir_all(d).unwrap();
}

fn many(n: usize) -> PathBuf {
    let bytes = std::fs::read(A).unwrap();
    let mut end = 24;
    for _ in 0..3 {
        end += 16 + u32::from_le_bytes(bytes[end + 8..end + 12].try_into().unwrap()) as usize;
    }
    let d = dir(&format!("many-{n}"));
    for i in 0..n {
        std::fs::write(d.join(format!("c{i:05}.pcap")), &bytes[..end]).unwrap();
    }
    d
}

/// Runs the binary with at most 256 open files: its exit code, stdout, stderr, and its peak
/// resident memory in KiB (Linux).
fn run_in_256_files(args: &[&str]) -> (i32, String, String, i64) {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 256 && exec \"$0\" \"$@\"")
        .arg(bin::BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut from: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            from.read_to_string(&mut text).map(|_| text).unwrap()
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    // Its peak, as it runs: /proc's high-water mark of the binary's own memory (after exec; the
    // rusage of a child spawned from a large test process counts the parent's).
    let status = format!("/proc/{}/status", child.id());
    let comm = format!("/proc/{}/comm", child.id());
    let mut peak = 0;
    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        let ours = std::fs::read_to_string(&comm).is_ok_and(|c| c.trim() == "rtype-inspect");
        let hwm = std::fs::read_to_string(&status).ok().and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
            line.split_whitespace().nth(1)?.parse::<i64>().ok()
        });
        if let (true, Some(kib)) = (ours, hwm) {
            peak = peak.max(kib);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    (exit.code().unwrap_or(-1), stdout, stderr, peak)
}

#[test]
fn ten_thousand_captures_in_256_open_files_and_flat_memory() {
    let (small, large) = (many(2_000), many(10_000));
    let commands: [&[&str]; 6] = [
        &[],
        &["--format", "json"],
        &["packets"],
        &["stats"],
        &["check"],
        &["export", "-o", "-"],
    ];
    for command in commands {
        let mut peaks = Vec::new();
        for (d, n) in [(&small, 2_000), (&large, 10_000)] {
            let mut args = command.to_vec();
            args.push(d.to_str().unwrap());
            let (code, out, err, peak) = run_in_256_files(&args);
            assert_eq!(
                (code, err.as_str()),
                (0, ""),
                "{command:?} over {n} captures"
            );
            match command {
                [] => assert_eq!(out.matches(": pcap (ethernet), 3 frames").count(), n),
                ["--format", "json"] => {
                    assert_eq!(json(&out).as_array().unwrap().len(), n)
                }
                _ => assert!(out.contains("c00000.pcap") || command[0] == "check"),
            }
            peaks.push(peak);
        }
        let (at_2k, at_10k) = (peaks[0], peaks[1]);
        eprintln!("{command:?}: {at_2k} KiB over 2,000 captures, {at_10k} KiB over 10,000");
        assert!(at_2k > 1024, "{command:?}: the peak was measured");
        assert!(at_10k <= 64 * 1024, "{command:?}: {at_10k} KiB");
        // Flat: 8,000 captures more take less than 8 MiB more (1 KiB each; a report held per
        // capture took 5 to 65 KiB).
        assert!(
            at_10k - at_2k < 8 * 1024,
            "{command:?}: {at_2k} KiB over 2,000 captures, {at_10k} KiB over 10,000"
        );
    }
    for d in [small, large] {
        std::fs::remove_dir_all(d).unwrap();
    }
}
