//! `export --format parquet` read back with the parquet crate's reader and compared with the
//! NDJSON export of the same capture, field by field, on every sample and real capture (the
//! real rtype ones with their profile too); findings and counts against the summary; the
//! dataset's layout, many captures at once, and what an interrupted or failed run leaves.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use serde_json::Value;

use rtype_inspect::proto::{rt, rtype};

#[path = "support/bin.rs"]
mod bin;
use bin::{captures, run, BIN};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rtype-parquet-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// A value read back, or from the JSON, in a form both compare in.
#[derive(Clone, Debug, PartialEq)]
enum V {
    Int(i128),
    F32(f32),
    F64(f64),
    Str(String),
    Bytes(Vec<u8>),
    Bool(bool),
}

fn from_field(f: &Field) -> Option<V> {
    Some(match f {
        Field::Null => return None,
        Field::Bool(b) => V::Bool(*b),
        Field::Byte(n) => V::Int((*n).into()),
        Field::Short(n) => V::Int((*n).into()),
        Field::Int(n) => V::Int((*n).into()),
        Field::Long(n) => V::Int((*n).into()),
        Field::UByte(n) => V::Int((*n).into()),
        Field::UShort(n) => V::Int((*n).into()),
        Field::UInt(n) => V::Int((*n).into()),
        Field::ULong(n) => V::Int((*n).into()),
        Field::Float(x) => V::F32(*x),
        Field::Double(x) => V::F64(*x),
        Field::Str(s) => V::Str(s.clone()),
        Field::Bytes(b) => V::Bytes(b.data().to_vec()),
        Field::TimestampMicros(n) => V::Int((*n).into()),
        other => panic!("unexpected column value {other:?}"),
    })
}

type Row = BTreeMap<String, V>;

/// A table's rows in one capture's partition, non-null columns only.
fn table(dataset: &Path, table: &str, capture: &str) -> Vec<Row> {
    let path = dataset
        .join(table)
        .join(format!("capture={capture}"))
        .join("part-0.parquet");
    let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
    reader
        .get_row_iter(None)
        .unwrap()
        .map(|row| {
            row.unwrap()
                .get_column_iter()
                .filter_map(|(name, f)| from_field(f).map(|v| (name.clone(), v)))
                .collect()
        })
        .collect()
}

/// Whether a JSON value and a column's value say the same.
fn same(json: &Value, v: &V) -> bool {
    match (json, v) {
        (Value::Number(n), V::Int(i)) => {
            n.as_i64().map(i128::from) == Some(*i) || n.as_u64().map(i128::from) == Some(*i)
        }
        (Value::Number(n), V::F32(x)) => n.as_f64().map(|f| f as f32) == Some(*x),
        (Value::Number(n), V::F64(x)) => n.as_f64() == Some(*x),
        (Value::String(s), V::F32(x)) => s == &format!("{}", *x as f64).replace("inf", "inf"),
        (Value::String(s), V::Str(t)) => s == t,
        (Value::Bool(b), V::Bool(c)) => b == c,
        (Value::Object(o), V::Bytes(b)) => o.get("hex") == Some(&Value::String(hex(b))),
        // A string that is not UTF-8 is kept with U+FFFD replacements.
        (Value::Object(o), V::Str(s)) => {
            let bytes = unhex(o["hex"].as_str().unwrap());
            *s == String::from_utf8_lossy(&bytes)
        }
        _ => false,
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// The columns a JSON object of fields fills in its row (`prefix` before each key, as the
/// dataset names them), and its arrays' items as rows of their tables.
struct Expected {
    /// (table, row values) for each item, in order of appearance.
    items: Vec<(String, BTreeMap<String, Value>)>,
}

fn flatten(
    object: &serde_json::Map<String, Value>,
    prefix: &str,
    table_prefix: &str,
    row: &mut BTreeMap<String, Value>,
    out: &mut Expected,
) {
    for (key, value) in object {
        match value {
            Value::Object(o) if key == "undecoded" => {
                row.insert("undecoded_offset".into(), o["offset"].clone());
                row.insert(
                    "undecoded".into(),
                    serde_json::json!({ "hex": o["hex"].clone() }),
                );
            }
            Value::Object(o) if !o.contains_key("hex") => {
                flatten(o, &format!("{prefix}{key}_"), table_prefix, row, out)
            }
            Value::Array(items) => {
                let table = format!("{table_prefix}{key}");
                for item in items {
                    let mut item_row = BTreeMap::new();
                    let at = out.items.len();
                    out.items.push((table.clone(), BTreeMap::new()));
                    flatten(
                        item.as_object().unwrap(),
                        "",
                        table_prefix,
                        &mut item_row,
                        out,
                    );
                    // A key column's name goes to the described field after its group's.
                    if let Some(time) = item_row.remove("time") {
                        item_row.insert("keyframe_time".into(), time);
                    }
                    out.items[at].1 = item_row;
                }
            }
            _ => {
                row.insert(format!("{prefix}{key}"), value.clone());
            }
        }
    }
}

/// Asserts a row holds exactly `expected` besides the `keys` columns.
fn assert_row(what: &str, row: &Row, expected: &BTreeMap<String, Value>, keys: &[&str]) {
    let described: BTreeMap<&String, &V> = row
        .iter()
        .filter(|(k, _)| !keys.contains(&k.as_str()))
        .collect();
    let names: Vec<&String> = described.keys().copied().collect();
    let wanted: Vec<&String> = expected.keys().collect();
    assert_eq!(names, wanted, "{what}: columns");
    for (k, json) in expected {
        assert!(same(json, &row[k]), "{what}: {k}: {json} ≠ {:?}", row[k]);
    }
}

const SCOPE_KEYS: &[&str] = &["frame", "time", "conversation"];
const ITEM_KEYS: &[&str] = &["frame", "time", "conversation", "message", "index"];
const DATAGRAM_KEYS: &[&str] = &[
    "frame",
    "time",
    "time_ns",
    "time_rel",
    "src_ip",
    "src_port",
    "dst_ip",
    "dst_port",
    "conversation",
    "dialect",
    "direction",
    "length",
    "code",
    "name",
    "sequence",
    "tick",
    "header_len",
    "compressed",
    "crc_stored",
    "crc_computed",
    "crc_ok",
];

/// The rows of `table` by frame, in order.
fn by_frame(rows: Vec<Row>) -> BTreeMap<i128, Vec<Row>> {
    let mut map: BTreeMap<i128, Vec<Row>> = BTreeMap::new();
    for r in rows {
        let V::Int(frame) = r["frame"] else { panic!() };
        map.entry(frame).or_default().push(r);
    }
    map
}

fn nanos_of(rfc3339: &str) -> i128 {
    // 2026-01-01T00:00:00.000040000Z: days from the civil date, then the time of day.
    let (date, time) = rfc3339.trim_end_matches('Z').split_once('T').unwrap();
    let d: Vec<i64> = date.split('-').map(|x| x.parse().unwrap()).collect();
    let (y, m, day) = (d[0] - i64::from(d[1] <= 2), d[1], d[2]);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let days = era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
    let (hms, frac) = time.split_once('.').unwrap();
    let t: Vec<i64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
    let secs = days * 86400 + t[0] * 3600 + t[1] * 60 + t[2];
    i128::from(secs) * 1_000_000_000 + frac.parse::<i128>().unwrap()
}

/// Exports `capture` both ways and compares every record, field by field.
fn compare(capture: &str, profile: Option<&str>) {
    let what = format!("{capture} (profile {profile:?})");
    let dataset = scratch(&format!(
        "cmp-{}-{}",
        Path::new(capture).file_name().unwrap().to_str().unwrap(),
        profile.unwrap_or("document")
    ));
    let mut args = vec!["export", capture];
    if let Some(p) = profile {
        args.extend(["--profile", p]);
    }
    let (code, ndjson, err) = run(&args);
    assert_eq!(code, 0, "{what}: {err}");
    let mut pq_args = args.clone();
    let out = dataset.to_str().unwrap().to_string();
    pq_args.extend(["--format", "parquet", "-o", &out]);
    let (code, _, err) = run(&pq_args);
    assert_eq!(code, 0, "{what}: {err}");
    let name = Path::new(capture).file_name().unwrap().to_str().unwrap();
    let load = |t: &str| table(&dataset, t, name);
    let records: Vec<Value> = ndjson
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();

    let datagrams = by_frame(load("datagrams"));
    let mut scoped: BTreeMap<&str, BTreeMap<i128, Vec<Row>>> = BTreeMap::new();
    for t in [
        "level_events",
        "rt_messages",
        "rtnp_messages",
        "reassembled",
    ] {
        scoped.insert(t, by_frame(load(t)));
    }
    let mut items: BTreeMap<String, BTreeMap<i128, Vec<Row>>> = BTreeMap::new();
    for t in [
        "entities",
        "archetypes",
        "bosses",
        "keyframes",
        "reassembled_entities",
        "rt_entities",
        "rt_components",
    ] {
        items.insert(t.into(), by_frame(load(t)));
    }
    let mut findings: Vec<Vec<Value>> = Vec::new();
    let mut counted = 0;
    let mut items_seen: BTreeMap<String, usize> = BTreeMap::new();

    let mut check_items = |frame: i128, expected: &Expected, what: &str| {
        let mut next: BTreeMap<&str, usize> = BTreeMap::new();
        for (t, row) in &expected.items {
            let i = next.entry(t.as_str()).or_default();
            let rows = items
                .get(t)
                .unwrap_or_else(|| panic!("{what}: no table {t}"));
            let mut got = rows
                .get(&frame)
                .unwrap_or_else(|| panic!("{what}: no {t} rows"))[*i]
                .clone();
            // An entity block without its type carries the one its entity had before
            // (`entity_type_is_carried_into_later_rows`); the JSON has the block as sent.
            if t == "entities" && !row.contains_key("entity_type") {
                got.remove("entity_type");
                got.remove("sprite");
            }
            assert_row(&format!("{what} {t}[{i}]"), &got, row, ITEM_KEYS);
            assert_eq!(got["index"], V::Int(*i as i128), "{what}: {t} index");
            *i += 1;
            *items_seen.entry(t.clone()).or_default() += 1;
        }
        for (t, n) in next {
            assert_eq!(items[t][&frame].len(), n, "{what}: {t} rows");
        }
    };

    for r in &records {
        match r["kind"].as_str().unwrap() {
            "datagram" => {
                counted += 1;
                let frame = i128::from(r["frame"].as_u64().unwrap());
                let what = format!("{what} frame {frame}");
                let rows = &datagrams[&frame];
                assert_eq!(rows.len(), 1, "{what}");
                let row = &rows[0];
                assert_eq!(
                    row["time_ns"],
                    V::Int(nanos_of(r["time"].as_str().unwrap())),
                    "{what}"
                );
                let V::Int(ns) = row["time_ns"] else { panic!() };
                assert_eq!(row["time"], V::Int(ns.div_euclid(1000)), "{what}");
                for (json, col) in [
                    ("time_rel", "time_rel"),
                    ("src_ip", "src_ip"),
                    ("src_port", "src_port"),
                    ("dst_ip", "dst_ip"),
                    ("dst_port", "dst_port"),
                    ("conversation", "conversation"),
                    ("dialect", "dialect"),
                    ("length", "length"),
                    ("code", "code"),
                    ("name", "name"),
                    ("header_len", "header_len"),
                ] {
                    match r.get(json) {
                        Some(v) => assert!(same(v, &row[col]), "{what}: {json}"),
                        None => assert!(!row.contains_key(col), "{what}: {col}"),
                    }
                }
                match r["direction"].as_str().unwrap() {
                    "unknown" => assert!(!row.contains_key("direction"), "{what}"),
                    d => assert_eq!(row["direction"], V::Str(d.into()), "{what}"),
                }
                let dialect = r["dialect"].as_str().unwrap();
                if dialect == "rtype" {
                    if let Some(crc) = r.get("crc") {
                        assert!(same(&crc["ok"], &row["crc_ok"]), "{what}");
                        if crc["ok"] == true {
                            assert!(!row.contains_key("crc_stored"), "{what}");
                            assert!(!row.contains_key("crc_computed"), "{what}");
                        } else {
                            assert!(same(&crc["stored"], &row["crc_stored"]), "{what}");
                            assert!(same(&crc["computed"], &row["crc_computed"]), "{what}");
                        }
                        assert!(same(&r["compressed"], &row["compressed"]), "{what}");
                        let h = &r["header"];
                        assert!(same(&h["sequence"], &row["sequence"]), "{what}");
                        assert!(same(&h["tick"], &row["tick"]), "{what}");
                    }
                }
                // Described fields: the header in its protocol's table, the message's by scope.
                let mut expected_items = Expected { items: Vec::new() };
                let code = r.get("code").and_then(Value::as_u64).map(|c| c as u8);
                let header = r.get("header").and_then(Value::as_object);
                let fields = r.get("fields").and_then(Value::as_object);
                match dialect {
                    "rtype" => {
                        let mut row_expected = BTreeMap::new();
                        if let Some(h) = header {
                            flatten(h, "header_", "", &mut row_expected, &mut expected_items);
                        }
                        let message = code.and_then(rtype::message);
                        let mut own = BTreeMap::new();
                        if let Some(f) = fields {
                            match message {
                                Some(m) if m.code == rtype::LEVEL_EVENT => {
                                    flatten(f, "", "", &mut own, &mut expected_items)
                                }
                                Some(m) => flatten(
                                    f,
                                    &format!("{}_", m.short),
                                    "",
                                    &mut row_expected,
                                    &mut expected_items,
                                ),
                                None => flatten(f, "", "", &mut row_expected, &mut expected_items),
                            }
                        }
                        assert_row(&what, row, &row_expected, DATAGRAM_KEYS);
                        let levels = scoped["level_events"].get(&frame);
                        match message.map(|m| m.code) {
                            Some(rtype::LEVEL_EVENT) => {
                                assert_row(&what, &levels.unwrap()[0], &own, SCOPE_KEYS)
                            }
                            _ => assert!(levels.is_none(), "{what}"),
                        }
                    }
                    "rt" => {
                        assert_row(&what, row, &BTreeMap::new(), DATAGRAM_KEYS);
                        let mut rt_expected = BTreeMap::new();
                        if let Some(h) = header {
                            flatten(h, "header_", "rt_", &mut rt_expected, &mut expected_items);
                        }
                        if let Some(f) = fields {
                            let prefix = code
                                .and_then(rt::message)
                                .map_or(String::new(), |m| format!("{}_", m.short));
                            flatten(f, &prefix, "rt_", &mut rt_expected, &mut expected_items);
                        }
                        let rt_rows = &scoped["rt_messages"][&frame];
                        assert_eq!(rt_rows.len(), 1, "{what}");
                        assert_row(&what, &rt_rows[0], &rt_expected, SCOPE_KEYS);
                    }
                    _ => {
                        assert_row(&what, row, &BTreeMap::new(), DATAGRAM_KEYS);
                        let rtnp = &scoped["rtnp_messages"][&frame][0];
                        let framing = &r["header"]["framing"];
                        assert!(same(framing, &rtnp["framing"]), "{what}");
                        assert_eq!(rtnp["type"], V::Str(r["name"].as_str().unwrap().into()));
                        match fields {
                            Some(f)
                                if f.len() == 1
                                    && f.contains_key("text")
                                    && !rtnp.contains_key("json") =>
                            {
                                assert!(same(&f["text"], &rtnp["text"]), "{what}")
                            }
                            Some(f) => {
                                let V::Str(json) = &rtnp["json"] else {
                                    panic!("{what}")
                                };
                                let parsed: Value = serde_json::from_str(json).unwrap();
                                assert_eq!(&parsed, &Value::Object(f.clone()), "{what}");
                            }
                            None => assert!(!rtnp.contains_key("json"), "{what}"),
                        }
                    }
                }
                check_items(frame, &expected_items, &what);
                for v in r["violations"].as_array().unwrap() {
                    findings.push(vec![
                        r["frame"].clone(),
                        r["conversation"].clone(),
                        v["id"].clone(),
                        v["severity"].clone(),
                        v["offset"].clone(),
                        v["detail"].clone(),
                        Value::Bool(true),
                        v.get("count").cloned().unwrap_or(Value::from(1)),
                    ]);
                }
            }
            "snapshot" => {
                let frame = i128::from(r["frame"].as_u64().unwrap());
                let what = format!("{what} reassembled at {frame}");
                let row = &scoped["reassembled"][&frame][0];
                for k in ["conversation", "tick", "chunks", "first_frame"] {
                    assert!(same(&r[k], &row[k]), "{what}: {k}");
                }
                let mut expected_items = Expected { items: Vec::new() };
                let mut own = BTreeMap::new();
                flatten(
                    r["fields"].as_object().unwrap(),
                    "",
                    "reassembled_",
                    &mut own,
                    &mut expected_items,
                );
                let keys = [
                    "frame",
                    "time",
                    "conversation",
                    "tick",
                    "chunks",
                    "first_frame",
                ];
                assert_row(&what, row, &own, &keys);
                check_items(frame, &expected_items, &what);
            }
            "finding" => findings.push(vec![
                r["frame"].clone(),
                r["conversation"].clone(),
                r["id"].clone(),
                r["severity"].clone(),
                r["offset"].clone(),
                r["detail"].clone(),
                Value::Bool(false),
                r.get("count").cloned().unwrap_or(Value::from(1)),
            ]),
            "conversation" => {
                let rows = load("conversations");
                let row = rows
                    .iter()
                    .find(|c| same(&r["id"], &c["id"]))
                    .unwrap_or_else(|| panic!("{what}: conversation {}", r["id"]));
                for k in ["client", "server", "first_frame"] {
                    assert!(same(&r[k], &row[k]), "{what}: conversation {k}");
                }
            }
            "summary" => {
                let summary = r;
                let captures = load("captures");
                assert_eq!(captures.len(), 1, "{what}");
                let c = &captures[0];
                let V::Str(text) = &c["summary"] else {
                    panic!()
                };
                let mut written: Value = serde_json::from_str(text).unwrap();
                written["kind"] = "summary".into();
                assert_eq!(&written, summary, "{what}: summary column");
                assert!(
                    same(&summary["counts"]["datagrams"], &c["datagrams"]),
                    "{what}"
                );
                assert!(same(&summary["capture"]["frames"], &c["frames"]), "{what}");
                assert!(same(&summary["capture"]["format"], &c["format"]), "{what}");
                assert!(same(&summary["capture"]["gzip"], &c["gzip"]), "{what}");
                assert!(
                    same(&summary["capture"]["duration_s"], &c["duration_s"]),
                    "{what}"
                );
                let total: u64 = summary["violations"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v["count"].as_u64().unwrap())
                    .sum();
                assert_eq!(c["findings"], V::Int(total.into()), "{what}: findings");
                assert_eq!(
                    summary["counts"]["datagrams"].as_u64().unwrap(),
                    counted,
                    "{what}: every datagram has a record"
                );
                assert_eq!(
                    c["truncated"],
                    V::Bool(!summary["capture"]["truncated"].is_null()),
                    "{what}"
                );
                let bytes = std::fs::read(capture).unwrap();
                assert_eq!(c["size"], V::Int(bytes.len() as i128), "{what}");
                let V::Str(sha) = &c["sha256"] else { panic!() };
                assert_eq!(sha.len(), 64, "{what}");
                // Findings per rule: the table's counts are the summary's.
                let table_findings = load("findings");
                let mut per_rule: BTreeMap<String, u64> = BTreeMap::new();
                for f in &table_findings {
                    let V::Str(id) = &f["id"] else { panic!() };
                    let V::Int(count) = f["count"] else { panic!() };
                    *per_rule.entry(id.clone()).or_default() += count as u64;
                }
                let summary_rules: BTreeMap<String, u64> = summary["violations"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| {
                        (
                            v["id"].as_str().unwrap().to_string(),
                            v["count"].as_u64().unwrap(),
                        )
                    })
                    .collect();
                assert_eq!(per_rule, summary_rules, "{what}: findings per rule");
            }
            _ => {}
        }
    }
    assert_eq!(datagrams.len(), counted as usize, "{what}: datagram rows");
    for (t, rows) in &items {
        let n: usize = rows.values().map(Vec::len).sum();
        assert_eq!(
            n,
            items_seen.get(t).copied().unwrap_or(0),
            "{what}: {t} rows"
        );
    }
    // Findings as multisets of (frame, conversation, id, severity, offset, detail, own, count).
    let mut got: Vec<String> = load("findings")
        .iter()
        .map(|f| {
            let s = |k: &str| match &f[k] {
                V::Str(s) => Value::String(s.clone()),
                V::Int(n) => Value::from(*n as i64),
                V::Bool(b) => Value::Bool(*b),
                other => panic!("{other:?}"),
            };
            let row = [
                "frame",
                "conversation",
                "id",
                "severity",
                "offset",
                "detail",
                "of_datagram",
                "count",
            ]
            .map(s);
            serde_json::to_string(&row).unwrap()
        })
        .collect();
    let mut want: Vec<String> = findings
        .iter()
        .map(|f| serde_json::to_string(f).unwrap())
        .collect();
    got.sort();
    want.sort();
    assert_eq!(got, want, "{what}: findings");
    let _ = std::fs::remove_dir_all(&dataset);
}

#[test]
fn parquet_matches_the_ndjson_export_field_by_field() {
    for capture in captures() {
        compare(&capture, None);
    }
    compare(
        "tests/fixtures/reference-17byte-1client.pcap",
        Some("reference-17byte"),
    );
    compare(
        "tests/fixtures/reference-15byte-levelevents.pcap",
        Some("reference-15byte"),
    );
}

/// Every file below `dir`, relative, sorted.
fn files_below(dir: &Path) -> Vec<String> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, base, out);
            } else {
                out.push(p.strip_prefix(base).unwrap().to_str().unwrap().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn many_captures_on_any_number_of_threads_give_the_same_files() {
    let one = scratch("threads-1");
    let two = scratch("threads-2");
    for (dir, threads) in [(&one, "1"), (&two, "2")] {
        let out = dir.to_str().unwrap();
        let (code, _, err) = run(&[
            "export",
            "samples",
            "tests/fixtures",
            "--format",
            "parquet",
            "-o",
            out,
            "--threads",
            threads,
        ]);
        assert_eq!(code, 0, "{err}");
    }
    let files = files_below(&one);
    assert_eq!(files, files_below(&two));
    // 16 tables × every capture, nothing else (no temporary file left).
    assert_eq!(files.len(), 16 * captures().len(), "{files:?}");
    assert!(files.iter().all(|f| f.ends_with("/part-0.parquet")));
    assert!(files.contains(&"datagrams/capture=clean-session.pcap.gz/part-0.parquet".into()));
    for f in &files {
        assert_eq!(
            std::fs::read(one.join(f)).unwrap(),
            std::fs::read(two.join(f)).unwrap(),
            "{f}"
        );
    }
    // Exporting a capture again replaces its partitions and leaves the others.
    let out = one.to_str().unwrap();
    let (code, _, err) = run(&[
        "export",
        "samples/violations-crc.pcap",
        "--format",
        "parquet",
        "-o",
        out,
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(files_below(&one), files);
    let _ = std::fs::remove_dir_all(&one);
    let _ = std::fs::remove_dir_all(&two);
}

#[test]
fn a_capture_that_cannot_be_read_is_reported_and_the_others_written() {
    let dir = scratch("failing");
    let inputs = scratch("failing-inputs");
    std::fs::create_dir_all(&inputs).unwrap();
    std::fs::write(inputs.join("broken.pcap"), b"not a capture at all").unwrap();
    std::fs::copy("samples/violations-crc.pcap", inputs.join("good.pcap")).unwrap();
    let out = dir.to_str().unwrap();
    let (code, _, err) = run(&[
        "export",
        inputs.to_str().unwrap(),
        "--format",
        "parquet",
        "-o",
        out,
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("broken.pcap") && err.contains("not a capture file"),
        "{err}"
    );
    let files = files_below(&dir);
    assert_eq!(files.len(), 16, "{files:?}");
    assert!(files.iter().all(|f| f.contains("/capture=good.pcap/")));
    // Arguments that make no dataset.
    let (code, _, err) = run(&[
        "export",
        "samples/clean-session.pcap",
        "--format",
        "parquet",
    ]);
    assert_eq!(
        (code, err.trim()),
        (
            2,
            "rtype-inspect: export --format parquet writes a directory: give it with -o DIR"
        )
    );
    // Several captures without --format parquet: one NDJSON stream (tests/multi_file.rs).
    let (code, out, err) = run(&[
        "export",
        "samples/clean-session.pcap",
        "samples/old-header.pcap",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().all(|l| l.starts_with("{\"file\":\"samples/")));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&inputs);
}

/// A capture big enough for two row groups of `datagrams`.
fn large_capture() -> PathBuf {
    let path =
        std::env::temp_dir().join(format!("rtype-parquet-large-{}.pcap", std::process::id()));
    let (code, _, err) = run(&[
        "generate",
        "--large",
        "130000",
        "--output",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    path
}

#[test]
fn row_groups_are_flushed_and_an_interrupted_export_leaves_no_complete_looking_file() {
    let capture = large_capture();
    let dir = scratch("large");
    let out = dir.to_str().unwrap();
    let (code, _, err) = run(&[
        "export",
        capture.to_str().unwrap(),
        "--format",
        "parquet",
        "-o",
        out,
    ]);
    assert_eq!(code, 0, "{err}");
    let name = capture.file_name().unwrap().to_str().unwrap();
    let file = dir
        .join("datagrams")
        .join(format!("capture={name}"))
        .join("part-0.parquet");
    let reader = SerializedFileReader::new(std::fs::File::open(&file).unwrap()).unwrap();
    let groups: Vec<i64> = reader
        .metadata()
        .row_groups()
        .iter()
        .map(|g| g.num_rows())
        .collect();
    // Flushed at 122,880 rows or 16 MB of values, whichever comes first.
    assert!(
        groups.len() > 1 && groups.iter().all(|g| *g <= 122_880),
        "{groups:?}"
    );
    assert_eq!(groups.iter().sum::<i64>(), 130_000);

    // Killed at any moment, a run leaves only hidden temporary files beside complete ones.
    let killed = scratch("killed");
    for delay in [50, 200, 400] {
        let _ = std::fs::remove_dir_all(&killed);
        let mut child = Command::new(BIN)
            .args([
                "export",
                capture.to_str().unwrap(),
                "--format",
                "parquet",
                "-o",
            ])
            .arg(&killed)
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay));
        let _ = child.kill();
        let _ = child.wait();
        if !killed.exists() {
            continue;
        }
        let files = files_below(&killed);
        let complete: Vec<&String> = files.iter().filter(|f| f.ends_with(".parquet")).collect();
        for f in &files {
            let base = Path::new(f).file_name().unwrap().to_str().unwrap();
            assert!(
                base == "part-0.parquet" || (base.starts_with('.') && base.ends_with(".tmp")),
                "{f}"
            );
        }
        for f in &complete {
            SerializedFileReader::new(std::fs::File::open(killed.join(f)).unwrap())
                .unwrap_or_else(|e| panic!("{f} looks complete but is not: {e}"));
        }
        // The captures table's file is put in place last: with it, every table is there.
        if complete.iter().any(|f| f.starts_with("captures/")) {
            assert_eq!(complete.len(), 15, "{files:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&killed);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&capture);
}

/// The entity blocks per type in the entities table equal `profile`'s updates per type, on the
/// real 17-byte capture read with the layout found for it (no profile named): a delta block
/// leaves the type out (bit 0), and its row carries the type its entity's spawn or an earlier
/// update gave. The captures and conversations tables name the layout.
#[test]
fn entity_type_is_carried_into_later_rows() {
    let capture = "tests/fixtures/reference-17byte-1client.pcap";
    let name = "reference-17byte-1client.pcap";
    let dataset = scratch("carried");
    let out = dataset.to_str().unwrap().to_string();
    let (code, _, err) = run(&["export", capture, "--format", "parquet", "-o", &out]);
    assert_eq!(code, 0, "{err}");
    let layout = V::Str("reference-17byte".into());
    assert_eq!(table(&dataset, "captures", name)[0]["profile"], layout);
    let conversations = table(&dataset, "conversations", name);
    assert_eq!(conversations.len(), 1);
    assert_eq!(conversations[0]["layout"], layout);
    let rows = table(&dataset, "entities", name);
    let mut got: BTreeMap<Option<i128>, u64> = BTreeMap::new();
    for r in &rows {
        let t = match r.get("entity_type") {
            Some(V::Int(t)) => Some(*t),
            _ => None,
        };
        *got.entry(t).or_default() += 1;
    }
    let (code, profile, err) = run(&["profile", capture, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let profile: Value = serde_json::from_str(&profile).unwrap();
    assert_eq!(profile["snapshot_profile"], "reference-17byte");
    let mut want: BTreeMap<Option<i128>, u64> = BTreeMap::new();
    for t in profile["total"]["snapshots"]["entity_types"]
        .as_array()
        .unwrap()
    {
        let id = t["type_id"].as_u64().map(i128::from);
        *want.entry(id).or_default() += t["updates"].as_u64().unwrap();
    }
    assert_eq!(got, want);
    // Before, 55,742 of the 56,891 rows had no type.
    assert_eq!(got.get(&None), None, "{got:?}");
    assert_eq!(rows.len(), 56_891);
    let _ = std::fs::remove_dir_all(&dataset);
}

/// `entity_states` holds `rtype-inspect entity`'s events of every entity: for entity 68 of the
/// real 17-byte capture, one row per event of its report (5 lives, 479 updates, 8 destroys),
/// with the same frame, event and life, the columns it changed set to the values the report
/// gives, and every value the report gave before carried in the state.
#[test]
fn entity_states_follow_entity_68_as_the_entity_report_does() {
    let capture = "tests/fixtures/reference-17byte-1client.pcap";
    let name = "reference-17byte-1client.pcap";
    let dataset = scratch("states");
    let out = dataset.to_str().unwrap().to_string();
    let (code, _, err) = run(&["export", capture, "--format", "parquet", "-o", &out]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<Row> = table(&dataset, "entity_states", name)
        .into_iter()
        .filter(|r| r["entity"] == V::Int(68))
        .collect();
    let (code, report, err) = run(&["entity", capture, "68", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&report).unwrap();
    let conversation = &report["conversations"][0];
    assert_eq!(
        (
            &conversation["lives"],
            &conversation["updates"],
            &conversation["destroys"]
        ),
        (&Value::from(5), &Value::from(479), &Value::from(8))
    );
    // The report's events but its findings (the one update after a destroy, at 1465).
    let events: Vec<&Value> = conversation["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] != "finding")
        .collect();
    assert_eq!(conversation["events"].as_array().unwrap().len(), 493);
    assert_eq!(rows.len(), events.len());
    assert_eq!(rows.len(), 492);
    let mut state: BTreeMap<String, Value> = BTreeMap::new();
    for (row, event) in rows.iter().zip(events) {
        let at = format!("frame {}", event["frame"]);
        assert_eq!(
            row["frame"],
            V::Int(event["frame"].as_i64().unwrap().into()),
            "{at}"
        );
        assert_eq!(
            row["event"],
            V::Str(event["event"].as_str().unwrap().into()),
            "{at}"
        );
        assert_eq!(
            row["life"],
            V::Int(event["life"].as_i64().unwrap().into()),
            "{at}"
        );
        assert_eq!(row["conversation"], V::Int(1), "{at}");
        let changed = event["changed"].as_object().unwrap();
        let listed = match row.get("changed") {
            Some(V::Str(s)) if !s.is_empty() => s.split(',').map(String::from).collect(),
            _ => Vec::new(),
        };
        let mut want: Vec<String> = changed.keys().cloned().collect();
        let mut got = listed.clone();
        want.sort();
        got.sort();
        assert_eq!(got, want, "{at}");
        let event_name = event["event"].as_str().unwrap();
        if event_name.starts_with("spawn") || event_name == "update-unspawned" {
            state.clear();
        }
        state.extend(changed.iter().map(|(k, v)| (k.clone(), v.clone())));
        for (column, value) in &state {
            assert!(
                same(value, &row[column]),
                "{at}: {column} {value} vs {:?}",
                row[column]
            );
        }
    }
    // Its first life: spawned as a bullet at frame 523, then moving right at 500 units/s.
    let first = &rows[0];
    assert_eq!(first["event"], V::Str("spawn".into()));
    assert_eq!(first["type_name"], V::Str("bullet".into()));
    assert_eq!(first["entity_type"], V::Int(3));
    assert_eq!(first["changed"], V::Str("entity_type,pos_x,pos_y".into()));
    assert_eq!(rows[1]["frame"], V::Int(524));
    assert_eq!(rows[1]["tick"], V::Int(324));
    assert_eq!(rows[1]["changed"], V::Str("pos_x,vel_x,vel_y".into()));
    assert_eq!(rows[1]["pos_x"], V::F32(126.0));
    assert_eq!(rows[1]["pos_y"], V::F32(705.0));
    assert_eq!(rows[1]["vel_x"], V::F32(500.0));
    assert_eq!(rows[1]["vel_y"], V::F32(0.0));
    let _ = std::fs::remove_dir_all(&dataset);
}
