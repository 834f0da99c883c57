//! `report FILE... -o report.html` end to end on the real captures: the page is one file that
//! asks the network for nothing, its data is the `profile --format json` document of each file
//! (and the frames by bucket agree with the profile's series), and headless Chromium draws every
//! graph without a script error, lists a clicked bucket's frames, and takes the screenshot the
//! README shows (`RTYPE_BLESS=1` rewrites docs/report.png; otherwise it goes to target/).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

#[path = "support/bin.rs"]
mod bin;
#[path = "support/skip.rs"]
mod skip;
use bin::run;

const C17: &str = "tests/fixtures/reference-17byte-1client.pcap";
const RT: &str = "tests/fixtures/rt-two-players.pcap";
const RTNP: &str = "tests/fixtures/rtnp-solo.pcap";
const CHROMIUM: &str = "/usr/bin/chromium";

/// A fresh directory per test.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("report-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes the report of `files` (with `extra` arguments) and returns the page.
fn report(out: &Path, files: &[&str], extra: &[&str]) -> String {
    let out_arg = out.display().to_string();
    let mut args = vec!["report", "--quiet", "-o", &out_arg];
    args.extend(files);
    args.extend(extra);
    let (code, stdout, err) = run(&args);
    assert_eq!((code, stdout.as_str()), (0, ""), "{err}");
    std::fs::read_to_string(out).unwrap()
}

fn profile(file: &str, extra: &[&str]) -> Value {
    let mut args = vec!["profile", file, "--format", "json", "--quiet"];
    args.extend(extra);
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

/// The JSON embedded in the page.
fn embedded(page: &str) -> Value {
    let open = r#"<script type="application/json" id="report-data">"#;
    let start = page.find(open).expect("data script") + open.len();
    let len = page[start..].find("</script>").unwrap();
    serde_json::from_str(&page[start..start + len]).unwrap()
}

/// docs/schemas/report.schema.json, its `profile` checked against profile.schema.json.
fn report_schema() -> jsonschema::Validator {
    let read = |name: &str| -> Value {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("docs/schemas")
            .join(name);
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).expect("the schema is JSON")
    };
    let registry = jsonschema::Registry::new()
        .add(
            "https://rtype-inspect.invalid/schemas/profile.schema.json",
            read("profile.schema.json"),
        )
        .unwrap()
        .prepare()
        .unwrap();
    jsonschema::options()
        .with_registry(&registry)
        .build(&read("report.schema.json"))
        .expect("the schema is valid")
}

/// The page's data follows docs/schemas/report.schema.json.
fn assert_valid(data: &Value) {
    let errors: Vec<String> = report_schema()
        .iter_errors(data)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

/// Nothing in the page can reach the network: no external reference in an attribute or a
/// stylesheet, no fetching API in the scripts, and a Content-Security-Policy that refuses
/// every fetch should something slip through.
fn assert_self_contained(page: &str) {
    let lower = page.to_lowercase();
    for bad in [
        "src=\"http",
        "src='http",
        "href=\"http",
        "href='http",
        "src=\"//",
        "href=\"//",
        "url(http",
        "url(\"http",
        "url('http",
        "url(//",
        "@import",
        "<link",
        "<iframe",
        "xmlhttprequest",
        "fetch(",
        "websocket",
        "sendbeacon",
        "@font-face",
    ] {
        assert!(!lower.contains(bad), "the page holds {bad:?}");
    }
    // The one address in the page is uPlot's banner comment, naming its home.
    let addresses: Vec<&str> = page
        .match_indices("http")
        .filter(|(i, _)| page[*i..].starts_with("https://") || page[*i..].starts_with("http://"))
        .map(|(i, _)| &page[i..(i + 40).min(page.len())])
        .collect();
    assert_eq!(
        addresses,
        ["https://github.com/leeoniya/uPlot (v1.6."],
        "addresses in the page"
    );
    assert!(page.contains(
        "content=\"default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\""
    ));
    assert_eq!(page.matches("<script").count(), 3, "data, uPlot, the page");
}

/// The frames kept by bucket agree with the profile's series: the same grid, the same counts.
fn assert_buckets_match(file: &Value) {
    let profile = &file["profile"];
    let buckets = profile["series"]["buckets"].as_u64().unwrap() as usize;
    let with_series: Vec<&Value> = profile["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !c["series"].is_null())
        .collect();
    let kept = file["buckets"].as_array().unwrap();
    assert_eq!(kept.len(), with_series.len());
    for (conv, kept) in with_series.iter().zip(kept) {
        assert_eq!(kept["id"], conv["id"]);
        let s = &conv["series"]["datagrams"];
        let mut total = 0;
        for i in 0..buckets {
            let want = s["client_to_server"][i].as_u64().unwrap()
                + s["server_to_client"][i].as_u64().unwrap();
            let got = kept["datagrams"][i].as_u64().unwrap();
            assert_eq!(got, want, "conversation {} bucket {i}", conv["id"]);
            total += got;
            let lines = kept["lines"][i].as_array().unwrap();
            assert_eq!(lines.len() as u64, got.min(8));
            if got > 0 {
                let first = kept["first"][i].as_u64().unwrap();
                let last = kept["last"][i].as_u64().unwrap();
                assert!(first <= last);
                let line = lines[0].as_str().unwrap();
                assert_eq!(
                    line.split_whitespace().next(),
                    Some(first.to_string().as_str()),
                    "{line}"
                );
                assert!(line.contains(&format!("#{}", conv["id"])), "{line}");
            } else {
                assert!(kept["first"][i].is_null());
            }
        }
        assert_eq!(total, conv["datagrams"].as_u64().unwrap());
    }
}

#[test]
fn report_is_self_contained_and_embeds_the_profile() {
    let dir = scratch("embeds");
    let out = dir.join("report.html");
    let page = report(&out, &[C17], &["--profile", "reference-17byte"]);
    assert_self_contained(&page);
    let data = embedded(&page);
    assert_valid(&data);
    assert_eq!(data["schema"], "report/1");
    let file = &data["files"][0];
    // In percent, as `stats` gives it.
    assert_eq!(file["snapshot_tolerance"], 20.0);
    let (_, stats, _) = run(&["stats", C17, "--format", "json", "--quiet"]);
    let stats: Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(
        file["snapshot_tolerance"],
        stats["config"]["snapshot_tolerance"]
    );
    assert_eq!(file["file"], C17);
    assert_eq!(
        file["profile"],
        profile(C17, &["--profile", "reference-17byte"])
    );
    assert_buckets_match(file);
    // The capture has findings: each lists its first frames.
    let findings = file["profile"]["findings"].as_array().unwrap();
    for f in findings {
        let frames = file["finding_frames"][f["id"].as_str().unwrap()]
            .as_array()
            .unwrap_or_else(|| panic!("frames of {}", f["id"]));
        assert!(!frames.is_empty() && frames.len() <= 16);
        // The one conversation's frames.
        assert!(frames
            .iter()
            .all(|x| x["conversation"] == 1 && x["frame"].is_u64()));
    }
    // As `packets --violation session.entity-after-destroy` lists it.
    assert_eq!(
        file["finding_frames"]["session.entity-after-destroy"],
        serde_json::json!([{"frame": 1465, "conversation": 1}])
    );
    // Bounded by the buckets and the world view's bounds, not the capture: 15 s of capture, of
    // which the world view's 302 keyframes and 10,000 timeline events take about 740 KB.
    let size = page.len();
    assert!((60_000..1_200_000).contains(&size), "{size} bytes");
    assert!(!dir.join(".report.html.tmp").exists());
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        1,
        "no temporary file left"
    );
}

#[test]
fn every_sample_and_real_captures_report_follows_the_schema() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<String> = ["samples", "tests/fixtures"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root.join(d)).unwrap())
        .map(|e| e.unwrap().path().display().to_string())
        .filter(|p| p.ends_with(".pcap") || p.ends_with(".pcapng") || p.ends_with(".pcap.gz"))
        .collect();
    files.sort();
    assert!(files.len() >= 18, "{files:?}");
    let names: Vec<&str> = files.iter().map(String::as_str).collect();
    let dir = scratch("schema");
    let data = embedded(&report(&dir.join("all.html"), &names, &[]));
    assert_eq!(data["files"].as_array().unwrap().len(), files.len());
    assert_valid(&data);
}

#[test]
fn several_files_make_one_page_with_a_tab_each() {
    let dir = scratch("tabs");
    let out = dir.join("report.html");
    let page = report(&out, &[RT, RTNP], &[]);
    assert_self_contained(&page);
    let data = embedded(&page);
    assert_valid(&data);
    let files = data["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    for (file, name) in files.iter().zip([RT, RTNP]) {
        assert_eq!(file["file"], name);
        assert_eq!(file["profile"], profile(name, &[]));
        assert_buckets_match(file);
    }
}

#[test]
fn a_file_name_cannot_end_the_data_script() {
    let dir = scratch("escape");
    let odd = dir.join("x</");
    std::fs::create_dir_all(&odd).unwrap();
    let capture = odd.join("script><b>.pcap");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join(RTNP), &capture).unwrap();
    let name = capture.display().to_string();
    let page = report(&dir.join("r.html"), &[&name], &[]);
    assert!(!page.contains("x</script><b>"));
    assert!(
        page.contains("x&lt;/script&gt;&lt;b&gt;.pcap"),
        "title escaped"
    );
    assert_eq!(embedded(&page)["files"][0]["file"], name);
}

#[test]
fn budgets_are_drawn_and_judged() {
    let dir = scratch("budgets");
    let config = dir.join("rtype-inspect.toml");
    std::fs::write(
        &config,
        "[budgets]\nsnapshot_kbps_per_client = 1\nrtt_p95_ms_max = 1000\n",
    )
    .unwrap();
    let cfg = config.display().to_string();
    let page = report(&dir.join("r.html"), &[C17], &["--config", &cfg]);
    let data = embedded(&page);
    assert_valid(&data);
    let file = &data["files"][0];
    assert_eq!(
        file["budgets"],
        serde_json::json!({"snapshot_kbps_per_client": 1.0, "rtt_p95_ms_max": 1000.0})
    );
    let breaks = file["breaks"].as_array().unwrap();
    assert_eq!(breaks.len(), 1, "{breaks:?}");
    assert_eq!(breaks[0]["budget_key"], "snapshot_kbps_per_client");
    assert_eq!(breaks[0]["id"], "budget.snapshot-kbps");
    let (_, check, _) = run(&["check", C17, "--config", &cfg, "--format", "json"]);
    let check: Value = serde_json::from_str(&check).unwrap();
    let judged = &check["files"][0]["budgets"][0];
    for key in ["measured", "first_frame", "last_frame", "budget"] {
        assert_eq!(breaks[0][key], judged[key], "{key}");
    }
}

#[test]
fn refuses_to_write_over_an_input() {
    let dir = scratch("refuse");
    let copy = dir.join("c.pcap");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join(RTNP), &copy).unwrap();
    let before = std::fs::read(&copy).unwrap();
    let c = copy.display().to_string();
    let (code, _, err) = run(&["report", &c, "-o", &c]);
    assert_eq!(code, 2);
    assert!(
        err.contains("refusing to write the output over an input"),
        "{err}"
    );
    assert_eq!(std::fs::read(&copy).unwrap(), before);
    // A capture that cannot be read leaves no page and no temporary file.
    let (code, _, err) = run(&[
        "report",
        "/nonexistent.pcap",
        "-o",
        &format!("{}/r.html", dir.display()),
    ]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
}

/// Runs headless Chromium on `url`: the DOM after the scripts ran, and Chromium's stderr.
fn chromium(dir: &Path, args: &[&str]) -> Option<(String, String)> {
    if !Path::new(CHROMIUM).exists() {
        if std::env::var_os("RTYPE_REQUIRE_CHROMIUM").is_some() {
            panic!("{CHROMIUM} is missing");
        }
        skip::missing(
            "the browser test",
            &format!("{CHROMIUM} is not installed (.ci/run installs it)"),
        );
        return None;
    }
    let profile = dir.join("chromium-profile");
    let out = Command::new("timeout")
        .arg("120")
        .arg(CHROMIUM)
        .args([
            "--headless=new",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            // A later --window-size (the screenshot's) overrides this one.
            "--window-size=1280,2400",
            &format!("--user-data-dir={}", profile.display()),
        ])
        .args(args)
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some((
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    ))
}

/// An attribute of the status element in the dumped DOM.
fn status(dom: &str, name: &str) -> Option<String> {
    let start = dom.find("id=\"report-status\"")?;
    let tag = &dom[dom[..start].rfind('<')?..start + dom[start..].find('>')?];
    let key = format!("{name}=\"");
    let at = tag.find(&key)? + key.len();
    Some(tag[at..at + tag[at..].find('"')?].to_owned())
}

/// Points drawn per chart, from the page's `data-charts`.
fn charts(dom: &str) -> Vec<(String, u64)> {
    status(dom, "data-charts")
        .unwrap_or_default()
        .split(';')
        .filter(|c| !c.is_empty())
        .map(|c| {
            let (name, n) = c.rsplit_once(':').unwrap();
            (name.to_owned(), n.parse().unwrap())
        })
        .collect()
}

fn no_errors(dom: &str, stderr: &str) {
    assert_eq!(status(dom, "data-errors"), None, "script errors");
    assert_eq!(
        status(dom, "data-done").as_deref(),
        Some("1"),
        "the script ran to its end"
    );
    for line in stderr.lines() {
        assert!(
            !(line.contains("CONSOLE") && (line.contains("Uncaught") || line.contains("Refused"))),
            "{line}"
        );
    }
}

/// The IO graph's points: every message type's and the datagram rate's value in every bucket,
/// and a mark in every bucket with findings, losses or duplicates.
fn io_points(conv: &Value) -> u64 {
    let s = &conv["series"];
    let buckets = s["snapshots"].as_array().unwrap().len() as u64;
    let marks: u64 = ["findings", "losses", "duplicates"]
        .iter()
        .map(|k| {
            s[k].as_array()
                .unwrap()
                .iter()
                .filter(|n| n.as_u64() > Some(0))
                .count() as u64
        })
        .sum();
    (s["bytes"].as_array().unwrap().len() as u64 + 1) * buckets + marks
}

#[test]
fn chromium_draws_every_graph_and_lists_a_clicked_buckets_frames() {
    let dir = scratch("chromium");
    let out = dir.join("report.html");
    let page = report(&out, &[C17, RT], &["--profile", "reference-17byte"]);
    let data = embedded(&page);
    let url = format!("file://{}", out.display());
    let Some((dom, stderr)) = chromium(&dir, &["--dump-dom", &url]) else {
        return;
    };
    no_errors(&dom, &stderr);
    // Each rtype conversation names the layout its snapshots were read with.
    assert!(
        dom.contains(
            "Conversation 1: rtype 127.0.0.1:41000 → 127.0.0.1:50010, snapshots read with \
             reference-17byte</h3>"
        ),
        "{dom}"
    );
    // The first entity timeline (every update of it sampled) says its stride in English.
    assert!(!dom.contains("1th sampled update"), "{dom}");
    assert!(
        dom.contains(": position (every sampled update)"),
        "no entity timeline title"
    );
    let drawn = charts(&dom);
    for (index, file) in data["files"].as_array().unwrap().iter().enumerate() {
        for conv in file["profile"]["conversations"].as_array().unwrap() {
            let id = conv["id"].as_u64().unwrap();
            let count = |name: &str| {
                let name = format!("{name}-{index}-{id}");
                drawn
                    .iter()
                    .find(|(n, _)| *n == name)
                    .unwrap_or_else(|| panic!("{name} not drawn: {drawn:?}"))
                    .1
            };
            assert_eq!(
                count("io"),
                io_points(conv),
                "file {index} conversation {id}"
            );
            let gaps = conv["series"]["snapshot_gap_ms_mean"].as_array().unwrap();
            let with_gap = gaps.iter().filter(|g| !g.is_null()).count() as u64;
            // The mean and longest gap lines, the nominal rate and the jitter band (3 lines over
            // every bucket).
            assert_eq!(count("gap"), 2 * with_gap + 3 * gaps.len() as u64);
            assert!(with_gap > 0);
            let rtt = conv["series"]["rtt_ms_mean"].as_array().unwrap();
            assert_eq!(
                count("rtt"),
                rtt.iter().filter(|g| !g.is_null()).count() as u64
            );
            let types = conv["snapshots"]["entity_types"].as_array().unwrap().len() as u64;
            assert_eq!(count("types"), types);
            assert!(types > 0);
            let fields = conv["snapshots"]["fields"].as_array().unwrap().len() as u64;
            assert_eq!(count("fields"), fields);
            let histogram = conv["distributions"]["snapshot_gap_ms"]["buckets"]
                .as_array()
                .unwrap()
                .len() as u64;
            assert_eq!(count("gap-hist"), histogram);
        }
    }
    // The click: the busiest bucket of the first conversation lists its first lines.
    let click_url = format!("{url}#selftest-click");
    let (dom, stderr) = chromium(&dir, &["--dump-dom", &click_url]).unwrap();
    no_errors(&dom, &stderr);
    let file = &data["files"][0];
    let kept = &file["buckets"][0];
    let conv = &file["profile"]["conversations"][0];
    let series = &conv["series"];
    // Each click lists the frames of the bucket clicked: "bucket clicked:bucket listed:lines".
    let clicked = |name: &str, bucket: usize| {
        let lines = kept["lines"][bucket].as_array().unwrap().len();
        assert!(lines > 0, "{name}");
        assert_eq!(
            status(&dom, name),
            Some(format!("{bucket}:{bucket}:{lines}")),
            "{name}"
        );
    };
    let busiest = |values: Vec<f64>| {
        let max = values.iter().copied().fold(f64::MIN, f64::max);
        values.iter().position(|v| *v == max).unwrap()
    };
    let value = |v: &Value| v.as_f64().unwrap_or(f64::MIN);
    let datagrams = &series["datagrams"];
    let bucket = busiest(
        (0..series["snapshots"].as_array().unwrap().len())
            .map(|i| {
                value(&datagrams["client_to_server"][i]) + value(&datagrams["server_to_client"][i])
            })
            .collect(),
    );
    clicked("data-click", bucket);
    let lines = kept["lines"][bucket].as_array().unwrap();
    let highest = |key: &str| busiest(series[key].as_array().unwrap().iter().map(value).collect());
    // The stall of the snapshot stream, and the slowest round trips.
    let gap = highest("snapshot_gap_ms_mean");
    assert_eq!(gap, 2);
    clicked("data-click-gap", gap);
    clicked("data-click-rtt", highest("rtt_ms_mean"));
    // The first finding's first frame: the IO graph zooms on its bucket (5 either side) and
    // lists its frames, the finding's marked.
    let finding = status(&dom, "data-click-finding").unwrap();
    let parts: Vec<&str> = finding.split(':').collect();
    let rule = file["profile"]["findings"][0]["id"].as_str().unwrap();
    let first = &file["finding_frames"][rule][0];
    assert_eq!(
        parts[..3],
        [rule.to_owned(), first["frame"].to_string(), "1".to_owned()]
    );
    let frame = first["frame"].as_u64().unwrap();
    let shown: usize = parts[3].parse().unwrap();
    assert!(kept["first"][shown].as_u64().unwrap() <= frame);
    assert!(frame <= kept["last"][shown].as_u64().unwrap(), "{finding}");
    let seconds = file["profile"]["series"]["interval_ms"].as_f64().unwrap() / 1000.0;
    let (min, max): (f64, f64) = (parts[5].parse().unwrap(), parts[6].parse().unwrap());
    let buckets = series["snapshots"].as_array().unwrap().len();
    assert_eq!(min, shown.saturating_sub(5) as f64 * seconds, "{finding}");
    assert_eq!(
        max,
        (shown + 5).min(buckets - 1) as f64 * seconds,
        "{finding}"
    );
    // Marked when among the lines kept.
    let listed = kept["lines"][shown]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l.as_str().unwrap().split(' ').next() == Some(&frame.to_string()));
    assert_eq!(
        parts[4],
        if listed {
            frame.to_string()
        } else {
            String::new()
        }
    );
    if listed {
        assert!(
            dom.contains(&format!("<mark>{frame} ")),
            "the finding's line marked"
        );
    }
    let first_line = lines[0]
        .as_str()
        .unwrap()
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    assert!(
        dom.contains(&first_line),
        "the frame list shows {first_line}"
    );
    // The screenshot the README shows: the first capture's report.
    let bless = std::env::var_os("RTYPE_BLESS").is_some();
    let png = if bless {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/report.png")
    } else {
        dir.join("report.png")
    };
    // With budgets, to show their lines: green where kept, red where broken.
    let single = dir.join("single.html");
    let config = dir.join("budgets.toml");
    std::fs::write(
        &config,
        "[budgets]\nsnapshot_kbps_per_client = 300\nrtt_p95_ms_max = 12\n",
    )
    .unwrap();
    let cfg = config.display().to_string();
    report(
        &single,
        &[C17],
        &["--profile", "reference-17byte", "--config", &cfg],
    );
    // The whole page down to the world view, shown at 8.9 s (the self test moves it there).
    let shot = format!("--screenshot={}", png.display());
    let single_url = format!("file://{}#selftest-world=8.9", single.display());
    chromium(
        &dir,
        &[
            &shot,
            "--hide-scrollbars",
            "--window-size=1280,3900",
            &single_url,
        ],
    )
    .unwrap();
    let bytes = std::fs::read(&png).unwrap();
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.len() > 50_000,
        "{} bytes",
        bytes.len()
    );
}

/// `world --at T --format json`'s entities of conversation 1, as the page's canvas lists them
/// (`id,x,y,type;…`, positions to the hundredth, a missing one empty).
fn world_at(file: &str, at: &str) -> String {
    world_at_in(file, at, 1, &[])
}

/// [`world_at`] of conversation `id`, with `extra` arguments.
fn world_at_in(file: &str, at: &str, id: u64, extra: &[&str]) -> String {
    let mut args = vec!["world", file, "--at", at, "--format", "json", "--quiet"];
    args.extend(extra);
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let Some(conv) = doc["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
    else {
        return String::new();
    };
    let pos = |v: &Value| {
        v.as_f64()
            .map_or(String::new(), |x| ((x * 100.0).round() / 100.0).to_string())
    };
    let entities: Vec<String> = conv["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let kind = match (e["type_name"].as_str(), e["type_id"].as_u64()) {
                (Some(name), _) => name.to_owned(),
                (None, Some(t)) => format!("type {t}"),
                (None, None) => "untyped".to_owned(),
            };
            format!(
                "{},{},{},{kind}",
                e["id"],
                pos(&e["pos_x"]),
                pos(&e["pos_y"])
            )
        })
        .collect();
    entities.join(";")
}

/// The world view of the 17-byte capture in headless Chromium: at 3, 8.9 and 12.35 s the canvas
/// holds `world --at`'s entities at its positions and the IO graph's cursor is on the nearest
/// bucket; 256 findings are marked on the slider (`FINDINGS_MARKED`, of 724); a click on entity
/// 68 lists its timeline as `entity` does, each life's first 12 updates kept; no script error.
#[test]
fn chromium_world_view_draws_what_world_at_shows() {
    use rtype_inspect::report::html::world as w;
    let dir = scratch("world");
    let out = dir.join("report.html");
    let page = report(&out, &[C17], &[]);
    let data = embedded(&page);
    assert_valid(&data);
    let world = &data["files"][0]["world"];
    assert_eq!(
        (world["step_ms"].as_f64(), world["keyframes"].as_u64()),
        (Some(50.0), Some(302))
    );
    let times = ["3", "8.9", "12.35"];
    let url = format!(
        "file://{}#selftest-world={}&entity=68",
        out.display(),
        times.join(",")
    );
    let Some((dom, stderr)) = chromium(&dir, &["--dump-dom", &url]) else {
        return;
    };
    no_errors(&dom, &stderr);
    let held: Vec<usize> = times
        .iter()
        .map(|t| {
            let drawn = status(&dom, &format!("data-world-0-1-{t}")).unwrap();
            assert_eq!(drawn, world_at(C17, t), "at {t} s");
            drawn.split(';').count()
        })
        .collect();
    assert_eq!(held, [32, 65, 82]);
    let cursors: Vec<String> = times
        .iter()
        .map(|t| status(&dom, &format!("data-world-cursor-0-1-{t}")).unwrap())
        .collect();
    assert_eq!(cursors, ["3", "9", "12"]);
    assert_eq!(
        status(&dom, "data-world-marks-0-1"),
        Some(w::FINDINGS_MARKED.to_string())
    );
    // `entity`'s events, as the page keeps them: each life's first plain updates, then up to
    // the timeline's bound; a finding by its rule.
    let (code, text, err) = run(&["entity", C17, "68", "--format", "json", "--quiet"]);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&text).unwrap();
    let mut updates = 0;
    let mut expected = Vec::new();
    for e in doc["conversations"][0]["events"].as_array().unwrap() {
        let event = e["event"].as_str().unwrap();
        if event == "spawn" || event == "update-unspawned" {
            updates = 0;
        }
        if event == "update" {
            updates += 1;
            if updates > w::UPDATES_PER_LIFE {
                continue;
            }
        }
        let what = match event {
            "finding" => e["finding"]["id"].as_str().unwrap(),
            other => other,
        };
        expected.push(format!("{}:{what}", e["frame"]));
    }
    expected.truncate(w::EVENTS_PER_TIMELINE);
    // 5 spawns, 12 updates of each of the 5 lives, 8 destroys, 2 updates after a destroy and
    // the finding of the first.
    assert_eq!(expected.len(), 5 + 5 * 12 + 8 + 2 + 1);
    assert_eq!(
        status(&dom, "data-world-entity-0-1"),
        Some(format!("68={}", expected.join(";")))
    );
}

/// Play and pause pressed on the 17-byte capture's world view in headless Chromium, as a user
/// would: 725 ms of play move it up to 14 keyframes of 50 ms (one every 50 ms of play) and the IO
/// graph's cursor with it; pause holds both for 725 ms more; a click where the
/// last finding mark is drawn shows the keyframe at or before that finding's time (as
/// `world --at` would), the label and the IO graph's cursor with it; no script error.
#[test]
fn chromium_world_view_plays_pauses_and_jumps_to_a_marked_finding() {
    let dir = scratch("world-play");
    let out = dir.join("report.html");
    let page = report(&out, &[C17], &[]);
    let data = embedded(&page);
    let world = &data["files"][0]["world"];
    assert_eq!(world["step_ms"].as_f64(), Some(50.0));
    let findings = world["conversations"][0]["findings"].as_array().unwrap();
    let mark = findings.len() - 1;
    assert_eq!(mark, 255);
    let (t, frame) = (
        findings[mark][0].as_f64().unwrap(),
        findings[mark][1].clone(),
    );
    assert_eq!((t, frame), (FINDING_T, serde_json::json!(FINDING_FRAME)));
    let url = format!("file://{}#selftest-play=725&mark={mark}", out.display());
    let Some((dom, stderr)) = chromium(&dir, &["--dump-dom", &url]) else {
        return;
    };
    no_errors(&dom, &stderr);
    // Play advances one keyframe per 50 ms timer tick: 14 in 725 ms, fewer when a loaded
    // machine delays the ticks, never more. Pause holds the keyframe, and the IO graph's cursor
    // is on the bucket (1 s) nearest the keyframe's time.
    let played = status(&dom, "data-world-play").unwrap();
    let keyframe: u32 = played
        .split(';')
        .nth(1)
        .and_then(|s| s.split(',').next())
        .and_then(|k| k.parse().ok())
        .unwrap_or(0);
    assert!((1..=14).contains(&keyframe), "{played}");
    let bucket = (f64::from(keyframe) * 0.05).round();
    assert_eq!(
        played,
        format!(
            "0,0,play;{keyframe},{bucket},pause;{keyframe},{bucket},play;{keyframe},{bucket},play"
        )
    );
    // The last keyframe at or before the finding, and the bucket (1 s) nearest to it.
    let keyframe = (t / 0.05 + 1e-6).floor();
    assert_eq!(keyframe, FINDING_KEYFRAME);
    let at = format!("{:.3}", keyframe * 0.05);
    let held = world_at(C17, &at).split(';').count();
    let interval = data["files"][0]["profile"]["series"]["interval_ms"].as_f64();
    assert_eq!(interval, Some(1000.0));
    let cursor = (keyframe * 0.05).round();
    assert_eq!(
        status(&dom, "data-world-mark"),
        Some(format!(
            "{mark},{keyframe},{cursor}|{at} s: {held} entities held"
        ))
    );
}

/// A one-client session of 5 s whose client holds 300 entities from 0.1 s on (one snapshot of
/// ids 1 to 300, then an input every 0.1 s to the end): more than a keyframe keeps
/// (`ENTITIES_PER_KEYFRAME`), and, 256 a keyframe every 10 ms, more than the page keeps over
/// its keyframes (`MAX_WORLD_ROWS`) before the capture ends.
fn crowded_session(file: &Path) -> std::io::Result<()> {
    use rtype_inspect::samplegen::script::{
        Client, Entity, PcapSink, Script, MASK_ENEMY, TYPE_SCOUT,
    };
    use serde_json::json;
    let client = Client::numbered(0)?;
    let mut sink = PcapSink::new(std::io::BufWriter::new(std::fs::File::create(file)?))?;
    let mut s = Script::new(&mut sink);
    s.at(0);
    s.join(&client)?;
    s.client(&client, "ready", json!({}))?;
    s.server(&client, "game_start", 0, json!({}))?;
    s.at(6);
    let entities: Vec<Value> = (1..=CROWD)
        .map(|id| {
            Entity::new(
                id,
                TYPE_SCOUT,
                MASK_ENEMY,
                3.0 * id as f32,
                50.0 * (id % 20) as f32,
            )
            .json()
        })
        .collect();
    s.server(&client, "snapshot", 6, json!({ "entities": entities }))?;
    for tick in (12..=300).step_by(6) {
        s.at(tick);
        s.client(
            &client,
            "input",
            json!({"player_id": 1, "input_flags": 0, "pos_x": 1.0, "pos_y": 2.0, "angle": 0.0}),
        )?;
    }
    drop(s);
    sink.finish()?;
    Ok(())
}

/// The last finding marked on the 17-byte capture's slider: its time (s) and frame, and the
/// keyframe (of 50 ms) at or before it.
const FINDING_T: f64 = 7.257;
const FINDING_FRAME: u64 = 1342;
const FINDING_KEYFRAME: f64 = 145.0;

/// Entities the crowded session's client holds.
const CROWD: u32 = 300;

/// The world view's cuts (SECURITY.md) on [`crowded_session`]: keyframes every 10 ms; from the
/// snapshot's (0.1 s) on, each held 300 entities and keeps the first 256 by id, as
/// `world --at` lists them; the keyframe whose entities bring the page's total to
/// `MAX_WORLD_ROWS` (the 391st with entities: 4 s, 100,096) is the last kept, of the 501 the
/// capture's 5 s would have. In headless Chromium the world view's note says both, a clipped
/// keyframe's label how many it held, and the slider stops at 4 s.
#[test]
fn the_world_view_keeps_the_first_entities_and_stops_at_its_rows_bound() {
    use rtype_inspect::report::html::world as w;
    let dir = scratch("world-cut");
    let capture = dir.join("crowded.pcap");
    crowded_session(&capture).unwrap();
    let file = capture.to_str().unwrap();
    let out = dir.join("crowded.html");
    let page = report(&out, &[file], &[]);
    let data = embedded(&page);
    assert_valid(&data);
    let world = &data["files"][0]["world"];
    assert_eq!(
        (
            world["step_ms"].as_f64(),
            world["keyframes"].as_u64(),
            world["cut"].as_u64()
        ),
        (Some(10.0), Some(401), Some(401))
    );
    let conv = &world["conversations"][0];
    let keyframes = conv["keyframes"].as_array().unwrap();
    assert_eq!(keyframes.len(), 401);
    let ids = |k: &Value| -> Vec<u64> {
        k.as_array()
            .unwrap()
            .chunks(4)
            .map(|e| e[0].as_u64().unwrap())
            .collect()
    };
    let first: Vec<u64> = (1..=w::ENTITIES_PER_KEYFRAME as u64).collect();
    for (k, kept) in keyframes.iter().enumerate() {
        assert_eq!(
            ids(kept),
            if k < 10 { vec![] } else { first.clone() },
            "keyframe {k}"
        );
    }
    let rows: usize = keyframes
        .iter()
        .map(|k| k.as_array().unwrap().len() / 4)
        .sum();
    assert_eq!(rows, 391 * 256);
    assert!(rows - w::ENTITIES_PER_KEYFRAME < w::MAX_WORLD_ROWS && w::MAX_WORLD_ROWS <= rows);
    let clipped: Vec<Value> = (10..401).map(|k| serde_json::json!([k, CROWD])).collect();
    assert_eq!(conv["clipped"], Value::Array(clipped));
    let times = ["0.09", "0.1", "4", "4.5"];
    let url = format!(
        "file://{}#selftest-world={}",
        out.display(),
        times.join(",")
    );
    let Some((dom, stderr)) = chromium(&dir, &["--dump-dom", &url]) else {
        return;
    };
    no_errors(&dom, &stderr);
    let open = "<h4>world view</h4><p class=\"note\">";
    let at = dom.find(open).expect("the world view's note") + open.len();
    let note = &dom[at..at + dom[at..].find("</p>").unwrap()];
    assert_eq!(
        note,
        "The world as the client held it, rebuilt as rtype-inspect world FILE --at T does: 401 \
         keyframes, one every 10 ms (at most 600 a conversation); kept up to 4.000 s only, the \
         page's bound of 100000 entities over every keyframe reached; 391 keyframes held more \
         than 256 entities: the first by id are drawn. Click an entity for its timeline."
    );
    // Drawn: the first 256 of `world --at`'s entities (by id); past the cut, the last keyframe.
    let drawn = |t: &str| status(&dom, &format!("data-world-0-1-{t}")).unwrap();
    let label = |t: &str| status(&dom, &format!("data-world-label-0-1-{t}")).unwrap();
    assert_eq!(
        (drawn("0.09"), world_at(file, "0.09")),
        (String::new(), String::new())
    );
    assert_eq!(label("0.09"), "0.090 s: 0 entities held");
    for t in ["0.1", "4"] {
        let all = world_at(file, t);
        assert_eq!(all.split(';').count(), 300, "at {t} s");
        let kept: Vec<&str> = all.split(';').take(w::ENTITIES_PER_KEYFRAME).collect();
        assert_eq!(drawn(t), kept.join(";"), "at {t} s");
    }
    assert_eq!(drawn("4.5"), drawn("4"));
    assert_eq!(
        label("0.1"),
        "0.100 s: 300 entities held, the first 256 by id kept"
    );
    assert_eq!(
        label("4.5"),
        "4.000 s: 300 entities held, the first 256 by id kept"
    );
}

/// The packet-list lines a page keeps are bounded (SECURITY.md): at most
/// `LINES_PER_BUCKET` per bucket, `MAX_LINES` per capture, the latest buckets then keeping none.
/// 400,000 datagrams of four clients (716 one-second buckets each) would keep 22,912. The world
/// view keeps its bounds too (`report::html::world`), and the whole page stays under 5 MB.
#[test]
fn the_lines_a_page_keeps_are_bounded() {
    let dir = scratch("bounded");
    let capture = dir.join("large.pcap");
    let file = std::fs::File::create(&capture).unwrap();
    rtype_inspect::samplegen::generate_large(std::io::BufWriter::new(file), 400_000, 4).unwrap();
    let page = report(&dir.join("large.html"), &[capture.to_str().unwrap()], &[]);
    let data = embedded(&page);
    let kept = data["files"][0]["buckets"].as_array().unwrap();
    let per_bucket: Vec<usize> = kept
        .iter()
        .flat_map(|c| {
            c["lines"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l.as_array().unwrap().len())
        })
        .collect();
    assert!(per_bucket.len() > 4 * 700, "{}", per_bucket.len());
    assert!(per_bucket
        .iter()
        .all(|n| *n <= rtype_inspect::report::html::LINES_PER_BUCKET));
    assert_eq!(
        per_bucket.iter().sum::<usize>(),
        rtype_inspect::report::html::MAX_LINES
    );
    use rtype_inspect::report::html::world as w;
    let world = &data["files"][0]["world"];
    // 716 s in keyframes of 2 s: 359 of them, the last past the end.
    assert_eq!(
        (world["step_ms"].as_f64(), world["keyframes"].as_u64()),
        (Some(2000.0), Some(359))
    );
    assert_eq!(world["cut"], Value::Null);
    let conversations = world["conversations"].as_array().unwrap();
    assert_eq!(conversations.len(), 4);
    let (mut rows, mut events) = (0, 0);
    for c in conversations {
        let keyframes = c["keyframes"].as_array().unwrap();
        assert_eq!(keyframes.len(), 359);
        for k in keyframes {
            let n = k.as_array().unwrap().len();
            assert!(n % 4 == 0 && n / 4 <= w::ENTITIES_PER_KEYFRAME);
            rows += n / 4;
        }
        let timelines = c["timelines"].as_object().unwrap();
        assert!(timelines.len() <= w::MAX_TIMELINES);
        for t in timelines.values() {
            let n = t["events"].as_array().unwrap().len();
            assert!(n <= w::EVENTS_PER_TIMELINE);
            events += n;
        }
        assert!(c["findings"].as_array().unwrap().len() <= w::FINDINGS_MARKED);
    }
    assert_eq!(rows, 36_480);
    assert!(rows <= w::MAX_WORLD_ROWS);
    assert_eq!(events, w::MAX_TIMELINE_EVENTS);
    assert!(page.len() < 5_000_000, "{} bytes", page.len());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Per SVG file in `dir`, parsed by Python's `xml.etree` (a parse error fails the test): its
/// series' points (`data-points` and the polylines' and dots' coordinates actually drawn), its
/// bars, and its world view's panels (`[time, entities held, "id,x,y,type;…" drawn]`).
fn svg_contents(dir: &Path) -> Value {
    let script = r#"
import json, os, sys
import xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"
out = {}
for name in sorted(os.listdir(sys.argv[1])):
    root = ET.parse(os.path.join(sys.argv[1], name)).getroot()
    assert root.tag == NS + "svg", root.tag
    series = {}
    for g in root.iter(NS + "g"):
        if g.get("class") == "series":
            drawn = sum(len(p.get("points").split()) for p in g.iter(NS + "polyline"))
            drawn += sum(1 for _ in g.iter(NS + "circle"))
            series[g.get("data-series")] = [int(g.get("data-points")), drawn]
    bars = [len([r for r in g.iter(NS + "rect") if r.get("class") == "bar"])
            for g in root.iter(NS + "g") if g.get("class") == "bars"]
    world = [[g.get("data-t"), int(g.get("data-entities")),
              ";".join(",".join(c.get(k) for k in ("data-id", "data-x", "data-y", "data-type"))
                       for c in g.iter(NS + "circle") if c.get("class") == "entity")]
             for g in root.iter(NS + "g") if g.get("class") == "world-panel"]
    out[name] = {"series": series, "bars": bars, "world": world}
print(json.dumps(out))
"#;
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(dir)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn svg_files_draw_the_profiles_series() {
    let dir = scratch("svg");
    let svg = dir.join("graphs");
    let svg_arg = svg.display().to_string();
    let (code, stdout, err) = run(&[
        "report",
        "--quiet",
        "--format",
        "svg",
        "-o",
        &svg_arg,
        C17,
        RT,
        "--profile",
        "reference-17byte",
    ]);
    assert_eq!((code, stdout.as_str()), (0, ""), "{err}");
    let contents = svg_contents(&svg);
    let mut expected = Vec::new();
    let mut world_panels = Vec::new();
    for (file, stem) in [(C17, "reference-17byte-1client"), (RT, "rt-two-players")] {
        let profile = profile(file, &["--profile", "reference-17byte"]);
        let buckets = profile["series"]["buckets"].as_u64().unwrap();
        let page = embedded(&report(
            &dir.join(format!("{stem}.html")),
            &[file],
            &["--profile", "reference-17byte"],
        ));
        let world = &page["files"][0]["world"];
        for conv in profile["conversations"].as_array().unwrap() {
            let id = conv["id"].as_u64().unwrap();
            let mut graph = |name: &str| {
                let file = format!("{stem}-c{id}-{name}.svg");
                expected.push(file.clone());
                contents[&file].clone()
            };
            let values = |key: &str| {
                conv["series"][key]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|v| !v.is_null())
                    .count() as u64
            };
            // Every message type over every bucket, and the datagram rate.
            let io = graph("io");
            let series = io["series"].as_object().unwrap();
            let types = conv["series"]["bytes"].as_array().unwrap();
            assert_eq!(series.len(), types.len() + 1, "{stem} {id}");
            assert!(series.contains_key("datagrams/s"));
            for (name, points) in series {
                assert_eq!(
                    points,
                    &serde_json::json!([buckets, buckets]),
                    "{stem} {id} {name}"
                );
            }
            let gap = graph("gap");
            let with_gap = values("snapshot_gap_ms_mean");
            assert!(with_gap > 0);
            assert_eq!(
                gap["series"]["snapshot gap"],
                serde_json::json!([with_gap, with_gap])
            );
            let rtt = values("rtt_ms_mean");
            assert_eq!(graph("rtt")["series"]["RTT"], serde_json::json!([rtt, rtt]));
            let rows = |key: &str| conv["snapshots"][key].as_array().unwrap().len();
            assert_eq!(
                graph("types")["bars"],
                serde_json::json!([rows("entity_types")])
            );
            assert_eq!(graph("fields")["bars"], serde_json::json!([rows("fields")]));
            // The world view at four of the page's keyframes, each as `world --at` gives it
            // (the entities with a position drawn); a conversation whose client held none has
            // no file.
            let step = world["step_ms"].as_f64().unwrap() / 1000.0;
            let Some(wc) = world["conversations"].as_array().unwrap().iter().find(|c| {
                c["id"] == id
                    && c["keyframes"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|k| k != &serde_json::json!([]))
            }) else {
                assert!(!contents
                    .as_object()
                    .unwrap()
                    .contains_key(&format!("{stem}-c{id}-world.svg")));
                continue;
            };
            let last = wc["keyframes"].as_array().unwrap().len() - 1;
            let panels = graph("world")["world"].clone();
            let mut want = Vec::new();
            for k in [last / 4, last / 2, last * 3 / 4, last] {
                let t = format!("{:.3}", k as f64 * step);
                let held = world_at_in(file, &t, id, &["--profile", "reference-17byte"]);
                let all: Vec<&str> = held.split(';').filter(|e| !e.is_empty()).collect();
                let placed: Vec<&str> = all
                    .iter()
                    .copied()
                    .filter(|e| !e.split(',').skip(1).take(2).any(str::is_empty))
                    .collect();
                want.push(serde_json::json!([t, all.len(), placed.join(";")]));
            }
            assert_eq!(panels, Value::Array(want), "{stem} {id}");
            world_panels.push((format!("{stem}-c{id}"), last, panels));
        }
    }
    // The 17-byte capture's 302 keyframes of 50 ms: panels at 3.75, 7.5, 11.25 and 15.05 s
    // (the last, its end); rt's 254: each client held 3 to 8 entities.
    let times: Vec<(String, usize, Vec<u64>)> = world_panels
        .iter()
        .map(|(name, last, panels)| {
            let held = panels
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p[1].as_u64().unwrap())
                .collect();
            (name.clone(), *last, held)
        })
        .collect();
    let expected_panels = [
        ("reference-17byte-1client-c1", 301, [67, 103, 63, 103]),
        ("rt-two-players-c1", 253, [3, 5, 7, 8]),
        ("rt-two-players-c2", 253, [3, 5, 7, 8]),
    ];
    assert_eq!(
        times,
        expected_panels
            .iter()
            .map(|(name, last, held)| (name.to_string(), *last, held.to_vec()))
            .collect::<Vec<_>>()
    );
    expected.sort();
    let written: Vec<&String> = contents.as_object().unwrap().keys().collect();
    assert_eq!(
        written,
        expected.iter().collect::<Vec<_>>(),
        "no other file"
    );
    // The gap graph draws the nominal 60 Hz line and the ±20 % jitter band.
    let gap = std::fs::read_to_string(svg.join("reference-17byte-1client-c1-gap.svg")).unwrap();
    assert!(gap.contains(">60 Hz (16.67 ms)<") && gap.contains(">jitter band ±20%<"));
    // Two entity types share the sprite "bullet": each bar names its type; rt's bars are
    // components.
    let types = std::fs::read_to_string(svg.join("reference-17byte-1client-c1-types.svg")).unwrap();
    assert!(
        types.contains("<title>bullet (3): 404968 B</title>")
            && types.contains("<title>bullet (16): 22 B</title>"),
        "{types}"
    );
    let components = std::fs::read_to_string(svg.join("rt-two-players-c1-types.svg")).unwrap();
    assert!(components.contains(">conversation 1: snapshot bytes by component<"));
    // A browser opens one as an image: no XML error page.
    let io = format!("file://{}", svg.join("rt-two-players-c2-io.svg").display());
    if let Some((dom, stderr)) = chromium(&dir, &["--dump-dom", &io]) {
        assert!(
            dom.contains("<svg") && !dom.contains("parsererror"),
            "{dom}"
        );
        assert!(!stderr.contains("Uncaught"), "{stderr}");
    }
}

#[test]
fn a_directory_makes_a_tab_for_each_capture_under_it() {
    let dir = scratch("directory");
    let captures = dir.join("captures");
    std::fs::create_dir_all(captures.join("more")).unwrap();
    std::fs::copy(RT, captures.join("a.pcap")).unwrap();
    std::fs::copy(RTNP, captures.join("more/b.pcap")).unwrap();
    std::fs::write(captures.join("notes.txt"), "not a capture").unwrap();
    let page = report(&dir.join("report.html"), &[captures.to_str().unwrap()], &[]);
    let data = embedded(&page);
    assert_valid(&data);
    let names: Vec<String> = data["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap().to_owned())
        .collect();
    let a = captures.join("a.pcap").display().to_string();
    let b = captures.join("more/b.pcap").display().to_string();
    assert_eq!(names, [a, b]);
    // A directory without a capture is refused, as the other commands refuse it.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = dir.join("none.html");
    let (code, _, err) = run(&[
        "report",
        "-o",
        out.to_str().unwrap(),
        empty.to_str().unwrap(),
    ]);
    assert_eq!(
        (code, err.trim()),
        (
            2,
            "rtype-inspect: no capture found (.pcap, .pcapng, .cap or .gz) in the arguments"
        )
    );
}
