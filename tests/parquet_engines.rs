//! The Parquet dataset in the engines users put it in: DuckDB (Python's `duckdb`) runs
//! examples/duckdb.sql over every sample and real capture, and its results are checked against
//! the summary, `stats`, `profile` and the NDJSON export; the Spark example (`pyspark` on `local[2]`, the
//! binary run by its executors) over a few captures gives DuckDB's results. `.ci/run` installs
//! both; a test whose engine cannot be imported says so and is skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

#[path = "support/bin.rs"]
mod bin;
#[path = "support/skip.rs"]
mod skip;
use bin::BIN;

fn json_of(args: &[&str]) -> Value {
    let out = Command::new(BIN).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rtype-engines-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Whether python3 can import `module`; says why not otherwise.
fn python_has(module: &str, test: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip::missing(
            test,
            &format!(
                "python3 cannot import `{module}` (`.ci/run` installs it: pip install {module})"
            ),
        );
    }
    ok
}

/// examples/duckdb.sql's results over `dataset`.
fn duckdb(dataset: &Path) -> BTreeMap<String, Vec<Value>> {
    let out = Command::new("python3")
        .args(["tests/engines/duckdb_queries.py"])
        .arg(dataset)
        .arg("examples/duckdb.sql")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn export(dataset: &Path, args: &[&str]) {
    let out = Command::new(BIN)
        .args(["export", "--format", "parquet", "--threads", "2", "-o"])
        .arg(dataset)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn num(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().unwrap(),
        Value::String(s) => s.parse().unwrap(),
        other => panic!("not a number: {other}"),
    }
}

fn capture_files() -> Vec<PathBuf> {
    bin::captures().into_iter().map(PathBuf::from).collect()
}

#[test]
fn duckdb_answers_the_documented_queries_as_the_summary_and_stats_do() {
    if !python_has("duckdb", "duckdb_answers_the_documented_queries") {
        return;
    }
    let dataset = scratch("duckdb");
    export(&dataset, &["samples", "tests/fixtures"]);
    let results = duckdb(&dataset);
    let rows = |q: &str, capture: &str| -> Vec<Value> {
        results[q]
            .iter()
            .filter(|r| r["capture"] == capture)
            .cloned()
            .collect()
    };
    let mut duplicates: Vec<(u64, String)> = Vec::new();
    for file in capture_files() {
        let path = file.to_str().unwrap();
        let name = file.file_name().unwrap().to_str().unwrap();
        let summary = json_of(&[path, "--format", "json"]);
        let stats = json_of(&["stats", path, "--format", "json"]);
        let ndjson = Command::new(BIN).args(["export", path]).output().unwrap();
        let records: Vec<Value> = String::from_utf8(ndjson.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();

        // Bytes per message type: the summary's counts; the bytes of the export's datagrams.
        let mut counts: BTreeMap<(String, String), u64> = BTreeMap::new();
        for m in summary["messages"].as_array().unwrap() {
            let key = (
                m["dialect"].as_str().unwrap().into(),
                m["name"].as_str().unwrap().into(),
            );
            *counts.entry(key).or_default() += m["count"].as_u64().unwrap();
        }
        let mut bytes: BTreeMap<(String, String), u64> = BTreeMap::new();
        for r in records.iter().filter(|r| r["kind"] == "datagram") {
            let key = (
                r["dialect"].as_str().unwrap().into(),
                r["name"].as_str().unwrap().into(),
            );
            *bytes.entry(key).or_default() += r["length"].as_u64().unwrap();
        }
        // Entity updates per type: `profile`'s (an update without its type counts for the type
        // its entity had), for the rtype entities the `entities` table holds.
        let mut entities: BTreeMap<Option<u64>, u64> = BTreeMap::new();
        if counts.keys().any(|(dialect, _)| dialect == "rtype") {
            let profile = json_of(&["profile", path, "--format", "json"]);
            let types = profile["total"]["snapshots"]["entity_types"].as_array();
            for t in types.into_iter().flatten() {
                *entities.entry(t["type_id"].as_u64()).or_default() +=
                    t["updates"].as_u64().unwrap();
            }
        }
        let got: BTreeMap<(String, String), (u64, u64)> = rows("bytes_per_message_type", name)
            .iter()
            .map(|r| {
                let key = (
                    r["dialect"].as_str().unwrap().into(),
                    r["name"].as_str().unwrap().into(),
                );
                (key, (num(&r["datagrams"]) as u64, num(&r["bytes"]) as u64))
            })
            .collect();
        let want: BTreeMap<(String, String), (u64, u64)> = counts
            .iter()
            .map(|(k, c)| (k.clone(), (*c, bytes[k])))
            .collect();
        assert_eq!(got, want, "{name}: bytes per message type");

        // Entity updates per type per second: the profile's updates over the duration.
        let duration = summary["capture"]["duration_s"].as_f64().unwrap();
        let got: BTreeMap<Option<u64>, (u64, f64)> =
            rows("entity_updates_per_type_per_second", name)
                .iter()
                .map(|r| {
                    (
                        r["entity_type"].as_u64(),
                        (num(&r["updates"]) as u64, num(&r["per_second"])),
                    )
                })
                .collect();
        let want: BTreeMap<Option<u64>, (u64, f64)> = if duration > 0.0 {
            entities
                .iter()
                .map(|(t, n)| (*t, (*n, (*n as f64 / duration * 1000.0).round() / 1000.0)))
                .collect()
        } else {
            BTreeMap::new()
        };
        assert_eq!(got, want, "{name}: entity updates per type");

        let count = summary["violations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["id"] == "session.duplicate-datagram")
            .map_or(0, |v| v["count"].as_u64().unwrap());
        if count > 0 {
            duplicates.push((count, name.to_string()));
        }

        // RTT per client: stats' pairs, median and max for every client with round trips.
        let got: BTreeMap<String, (u64, f64, f64, f64)> = rows("rtt_per_client", name)
            .iter()
            .map(|r| {
                let v = (
                    num(&r["pairs"]) as u64,
                    num(&r["median_ms"]),
                    num(&r["p95_ms"]),
                    num(&r["max_ms"]),
                );
                (r["client"].as_str().unwrap().to_string(), v)
            })
            .collect();
        let mut want = BTreeMap::new();
        for c in stats["conversations"].as_array().unwrap() {
            let rtt = &c["rtt_ms"];
            if rtt["pairs"].as_u64().unwrap_or(0) > 0 {
                want.insert(
                    c["client"].as_str().unwrap().to_string(),
                    (
                        rtt["pairs"].as_u64().unwrap(),
                        rtt["p50"].as_f64().unwrap(),
                        rtt["max"].as_f64().unwrap(),
                    ),
                );
            }
        }
        let got_stats: BTreeMap<String, (u64, f64, f64)> = got
            .iter()
            .map(|(k, v)| (k.clone(), (v.0, v.1, v.3)))
            .collect();
        assert_eq!(got_stats, want, "{name}: RTT per client");
        for (client, (_, median, p95, max)) in &got {
            assert!(median <= p95 && p95 <= max, "{name} {client}: p95 {p95}");
        }
    }
    // Position jumps (entity_states): on the real captures, the players' ships and rt's players,
    // whose positions follow their inputs while their velocity stays 0; on the samples, rt's
    // (rt-big-endian.pcap, rt-little-endian.pcap) and rtnp's.
    let jumps = |capture: &str| -> Vec<(String, u64, u64, f64)> {
        rows("position_jumps", capture)
            .iter()
            .map(|r| {
                (
                    r["type_name"].as_str().unwrap().to_string(),
                    num(&r["jumps"]) as u64,
                    num(&r["lives"]) as u64,
                    num(&r["longest"]),
                )
            })
            .collect()
    };
    assert_eq!(
        jumps("reference-17byte-1client.pcap"),
        [("player_ship".to_string(), 102, 1, 3677.7)]
    );
    assert_eq!(
        jumps("reference-15byte-levelevents.pcap"),
        [("player_ship".to_string(), 102, 1, 10370.3)]
    );
    assert_eq!(
        jumps("rt-two-players.pcap"),
        [("player".to_string(), 1408, 4, 7.1)]
    );
    // The rtnp samples' entities (type-less: rtnp sends none) step 2.5 units past what their
    // velocity allows at times.
    for (capture, jumps_lives) in [
        ("rtnp-envelope.pcap", (16, 2)),
        ("rtnp-fragmented.pcap", (126, 42)),
        ("rtnp-raw-json.pcap", (52, 4)),
    ] {
        let found = rows("position_jumps", capture);
        assert_eq!(found.len(), 1, "{capture}");
        assert_eq!(found[0]["type_name"], Value::Null, "{capture}");
        assert_eq!(
            (
                num(&found[0]["jumps"]) as u64,
                num(&found[0]["lives"]) as u64
            ),
            jumps_lives,
            "{capture}"
        );
        assert_eq!(num(&found[0]["longest"]), 2.5, "{capture}");
    }
    assert_eq!(results["position_jumps"].len(), 9);
    // The captures with the most findings of the rule: the summaries' counts, most first.
    duplicates.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    duplicates.truncate(10);
    let got: Vec<(u64, String)> = results["most_findings_of_a_rule"]
        .iter()
        .map(|r| {
            (
                num(&r["findings"]) as u64,
                r["capture"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        got, duplicates,
        "captures with the most duplicate datagrams"
    );
    assert!(!got.is_empty());
    let _ = std::fs::remove_dir_all(&dataset);
}

#[test]
fn the_spark_example_gives_duckdb_s_results() {
    if !python_has("pyspark", "the_spark_example_gives_duckdb_s_results")
        || !python_has("duckdb", "the_spark_example_gives_duckdb_s_results")
    {
        return;
    }
    if !Command::new("java")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        skip::missing(
            "the_spark_example_gives_duckdb_s_results",
            "no java (`.ci/run` installs Debian's OpenJDK)",
        );
        return;
    }
    let dataset = scratch("spark");
    let results = scratch("spark-results.json");
    let out = Command::new("python3")
        .arg("examples/spark/rtype_job.py")
        .arg("--dataset")
        .arg(&dataset)
        .arg("--binary")
        .arg(BIN)
        .arg("--results")
        .arg(&results)
        .args([
            "samples/clean-session.pcap",
            "samples/violations-chunks.pcap",
            "tests/fixtures/reference-17byte-1client.pcap",
            "tests/fixtures/rtnp-solo.pcap",
            "tests/fixtures/rt-two-players.pcap",
        ])
        .env("PYSPARK_SUBMIT_ARGS", "--master local[2] pyspark-shell")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spark: BTreeMap<String, Vec<Value>> =
        serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    let duck = duckdb(&dataset);
    assert_eq!(
        spark.keys().collect::<Vec<_>>(),
        duck.keys().collect::<Vec<_>>()
    );
    for (query, rows) in &duck {
        let normal = |rows: &[Value]| -> Vec<BTreeMap<String, String>> {
            rows.iter()
                .map(|r| {
                    r.as_object()
                        .unwrap()
                        .iter()
                        .map(|(k, v)| {
                            let v = match v {
                                Value::Number(_) => format!("{}", num(v)),
                                Value::String(s) if s.parse::<f64>().is_ok() => {
                                    format!("{}", num(v))
                                }
                                other => other.to_string(),
                            };
                            (k.clone(), v)
                        })
                        .collect()
                })
                .collect()
        };
        assert_eq!(
            normal(&spark[query]),
            normal(rows),
            "{query}: Spark and DuckDB differ"
        );
        assert!(!rows.is_empty(), "{query}: no rows");
    }
    let _ = std::fs::remove_dir_all(&dataset);
    let _ = std::fs::remove_file(&results);
}
