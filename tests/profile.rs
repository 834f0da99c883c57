//! `profile`, budgets in `check`, and `diff`, end to end on the real captures and on samples
//! built here to break each budget: figures checked by hand against the protocol's sizes and
//! against the export, the documents against their JSON Schemas, and the limits that keep a
//! profile's memory flat.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};

use rtype_inspect::samplegen::rtype::Compression;
use rtype_inspect::samplegen::script::{Client, Entity, PcapSink, Script, MASK_PLAYER};

const BIN: &str = env!("CARGO_BIN_EXE_rtype-inspect");
const C17: &str = "tests/fixtures/reference-17byte-1client.pcap";
const C15: &str = "tests/fixtures/reference-15byte-levelevents.pcap";
const RT: &str = "tests/fixtures/rt-two-players.pcap";
const RTNP: &str = "tests/fixtures/rtnp-solo.pcap";

fn run(args: &[&str]) -> (i32, String, String) {
    run_in(Path::new(env!("CARGO_MANIFEST_DIR")), args)
}

fn run_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
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

fn path(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(rel)
        .display()
        .to_string()
}

/// `profile FILE --format json` (with a bundled snapshot profile when given).
fn profile(file: &str, snapshot_profile: Option<&str>) -> Value {
    let mut args = vec!["profile", file, "--format", "json", "--quiet"];
    if let Some(p) = snapshot_profile {
        args.extend(["--profile", p]);
    }
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{file}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// A fresh directory for each call (tests run in parallel threads of one process).
fn scratch(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "rtype-inspect-profile-{}-{n}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn validator(schema: &str) -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path(schema)).unwrap())
        .expect("the schema is JSON");
    jsonschema::validator_for(&schema).expect("the schema is valid")
}

fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

/// The UDP payload bytes of every datagram in a pcap of Ethernet/IPv4/UDP frames (as the
/// captures here are), read with no help from the tool.
fn udp_payload_bytes(file: &str) -> (u64, u64) {
    let bytes = std::fs::read(path(file)).unwrap();
    let (mut at, mut datagrams, mut total) = (24, 0, 0);
    while at + 16 <= bytes.len() {
        let caplen = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        let frame = &bytes[at + 16..at + 16 + caplen];
        at += 16 + caplen;
        if frame[12..14] != [0x08, 0x00] || frame[23] != 17 {
            continue;
        }
        let ihl = usize::from(frame[14] & 0x0F) * 4;
        let udp_len = u16::from_be_bytes([frame[14 + ihl + 4], frame[14 + ihl + 5]]);
        datagrams += 1;
        total += u64::from(udp_len) - 8;
    }
    (datagrams, total)
}

/// Entity blocks of the snapshot datagrams in the export (not of reassembled snapshots).
fn exported_entities(file: &str, snapshot_profile: Option<&str>) -> u64 {
    let mut args = vec!["export", file];
    if let Some(p) = snapshot_profile {
        args.extend(["--profile", p]);
    }
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    out.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["kind"] == "datagram")
        .map(|r| r["fields"]["entities"].as_array().map_or(0, Vec::len) as u64)
        .sum()
}

fn message<'a>(account: &'a Value, name: &str) -> &'a Value {
    account["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no {name} row"))
}

fn field<'a>(account: &'a Value, name: &str) -> &'a Value {
    account["snapshots"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["field"] == name)
        .unwrap_or_else(|| panic!("no {name} field"))
}

// ------------------------------------------------------------------------------------------------
// The real captures
// ------------------------------------------------------------------------------------------------

#[test]
fn every_profile_validates_against_its_schema() {
    let v = validator("docs/schemas/profile.schema.json");
    let mut files: Vec<String> = ["samples", "tests/fixtures"]
        .iter()
        .flat_map(|d| std::fs::read_dir(path(d)).unwrap())
        .map(|e| e.unwrap().path().display().to_string())
        .filter(|p| p.ends_with(".pcap") || p.ends_with(".pcapng") || p.ends_with(".pcap.gz"))
        .collect();
    files.sort();
    assert!(files.len() >= 12, "{files:?}");
    for file in &files {
        let j = profile(file, None);
        if let Err(e) = v.validate(&j) {
            panic!("{file}: {e} at {}", e.instance_path());
        }
        assert_eq!(j["schema"], "profile/1");
        assert_eq!(j["tool"]["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(j["file"], file.as_str());
    }
    for (file, p) in [(C17, "reference-17byte"), (C15, "reference-15byte")] {
        let j = profile(&path(file), Some(p));
        v.validate(&j).unwrap();
        assert_eq!(j["snapshot_profile"], p);
    }
}

/// Standard input cannot be scanned before it is read: its conversation finds the 17-byte layout
/// as it goes, and every figure is the file's (the fields' by the layout's widths, not the
/// document's).
#[test]
fn a_profile_of_standard_input_is_the_files() {
    let file = profile(&path(C17), None);
    let out = Command::new(BIN)
        .args(["profile", "-", "--format", "json", "--quiet"])
        .stdin(File::open(path(C17)).unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut piped: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(piped["snapshot_profile"], "reference-17byte");
    assert_eq!(piped["conversations"][0]["layout"], "reference-17byte");
    piped["file"] = file["file"].clone();
    assert_eq!(piped, file);
    let pos_x = field(&file["total"], "pos_x");
    assert_eq!((u(&pos_x["bit"]), u(&pos_x["bytes"])), (1, 113_234));
}

/// 17-byte capture, with its profile: every figure below follows from the protocol's sizes
/// (17-byte header, 4-byte CRC, the i16 × 10 snapshot layout) and the message counts of
/// ../shared/captures/README.md.
#[test]
fn reference_17byte_figures() {
    let j = profile(&path(C17), Some("reference-17byte"));
    let t = &j["total"];
    // Bytes per message type add up to the capture's UDP payload bytes, counted here from the
    // pcap's own UDP headers.
    let (datagrams, bytes) = udp_payload_bytes(C17);
    assert_eq!((datagrams, bytes), (3202, 541_312));
    let rows = t["messages"].as_array().unwrap();
    assert_eq!(
        rows.iter().map(|m| u(&m["datagrams"])).sum::<u64>(),
        datagrams
    );
    assert_eq!(rows.iter().map(|m| u(&m["udp_bytes"])).sum::<u64>(), bytes);
    // With IP and UDP headers: 28 bytes more per datagram.
    assert_eq!(u(&t["wire_bytes"]), bytes + 28 * datagrams);
    // Fixed sizes: header 17 + payload + CRC 4.
    for (name, count, size) in [
        ("CLIENT_INPUT", 900, 17 + 18 + 4),
        ("SERVER_ENTITY_SPAWN", 557, 17 + 13 + 4),
        ("SERVER_ENTITY_DESTROYED", 806, 17 + 4 + 4),
        ("CLIENT_PING", 15, 17 + 4 + 4),
        ("SERVER_PONG", 15, 17 + 4),
    ] {
        let m = message(t, name);
        assert_eq!(
            (u(&m["datagrams"]), u(&m["udp_bytes"]), u(&m["p50_bytes"])),
            (count, count * size, size),
            "{name}"
        );
    }
    // 673 LZ4-compressed payloads: 651 snapshots and 22 chunks.
    let snapshot = message(t, "SERVER_SNAPSHOT");
    assert_eq!(u(&snapshot["datagrams"]), 874);
    assert_eq!(u(&snapshot["compressed"]["datagrams"]), 651);
    assert_eq!(
        u(&message(t, "SERVER_SNAPSHOT_CHUNK")["compressed"]["datagrams"]),
        22
    );

    let s = &t["snapshots"];
    assert_eq!((u(&s["datagrams"]), u(&s["ticks"])), (874 + 26, 890));
    // Field bytes add up to the snapshot payload bytes exactly, and their shares of the
    // compressed bytes to the bytes on the wire.
    let fields = s["fields"].as_array().unwrap();
    let payload = u(&s["payload_bytes"]);
    assert_eq!(payload, 467_605);
    assert_eq!(fields.iter().map(|f| u(&f["bytes"])).sum::<u64>(), payload);
    let wire: f64 = fields
        .iter()
        .map(|f| f["wire_bytes"].as_f64().unwrap())
        .sum();
    assert!(
        (wire - s["wire_payload_bytes"].as_f64().unwrap()).abs() < 1e-6,
        "{wire}"
    );
    // Every entity update is the export's: 56,891 entity blocks.
    let updates = exported_entities(&path(C17), Some("reference-17byte"));
    assert_eq!(updates, 56_891);
    let types = s["entity_types"].as_array().unwrap();
    assert_eq!(types.iter().map(|t| u(&t["updates"])).sum::<u64>(), updates);
    // By hand: each entity's id and mask take 6 bytes; a snapshot's count 2, a chunk's header
    // and count 6; pos_x is an i16 (2 bytes) in this build; nothing is left undecoded.
    assert_eq!(u(&field(t, "(entity framing)")["bytes"]), 6 * updates);
    assert_eq!(u(&field(t, "(message header)")["bytes"]), 2 * 874 + 6 * 26);
    let pos_x = field(t, "pos_x");
    assert_eq!(
        (u(&pos_x["bit"]), u(&pos_x["bytes"])),
        (1, 2 * u(&pos_x["present"]))
    );
    assert_eq!(
        u(&field(t, "score")["bytes"]),
        4 * u(&field(t, "score")["present"])
    );
    assert_eq!(u(&field(t, "(undecoded)")["bytes"]), 0);
    // Entity types are the LevelInit sprites (several type ids share "bullet").
    let bullet = types.iter().find(|t| t["type_id"] == 3).unwrap();
    assert_eq!(bullet["type"], "bullet");
    // Entities: 557 lives (one per spawn), the slowest being entity 68, updated after its
    // destruction (frame 1461) at frame 1465.
    let e = &j["conversations"][0]["entities"];
    assert_eq!((u(&e["lives"]), u(&e["updates"])), (557, updates));
    assert_eq!(e["slowest"]["entity"], 68);
    assert_eq!(
        j["conversations"][0]["findings"]["session.entity-after-destroy"],
        1
    );
    // Chunking: 16 complete sets of 26 chunks.
    let c = &t["chunking"];
    assert_eq!(
        (u(&c["datagrams"]), u(&c["sets"]), u(&c["most_chunks"])),
        (26, 16, 2)
    );
    // Loss as stats counts it: 11 snapshot ticks of 901.
    assert_eq!(
        (
            u(&t["loss"]["snapshots"]["lost"]),
            u(&t["loss"]["snapshots"]["received"])
        ),
        (11, 890)
    );
}

#[test]
fn reference_15byte_rt_and_rtnp_figures_add_up() {
    for (file, p, datagrams, header, payload, updates, framing_per_entity) in [
        // 15-byte header, f32 fields; the snapshot count is its head.
        (
            C15,
            Some("reference-15byte"),
            3489,
            2 * 1201,
            1_070_413,
            45_488,
            6,
        ),
        // rt: a u16 count heads each component snapshot; entity ids (u32) frame the entries.
        (RT, None, 4981, 2 * 3501, 138_677, 14_372, 4),
        // rtnp: JSON; the framing is each entity object's braces and commas.
        (RTNP, None, 790, 11_202, 250_476, 642, 0),
    ] {
        let j = profile(&path(file), p);
        let t = &j["total"];
        let (n, bytes) = udp_payload_bytes(file);
        assert_eq!(n, datagrams, "{file}");
        let rows = t["messages"].as_array().unwrap();
        assert_eq!(
            rows.iter().map(|m| u(&m["udp_bytes"])).sum::<u64>(),
            bytes,
            "{file}"
        );
        let s = &t["snapshots"];
        let fields = s["fields"].as_array().unwrap();
        assert_eq!(u(&s["payload_bytes"]), payload, "{file}");
        assert_eq!(
            fields.iter().map(|f| u(&f["bytes"])).sum::<u64>(),
            payload,
            "{file}"
        );
        assert_eq!(u(&field(t, "(message header)")["bytes"]), header, "{file}");
        assert_eq!(exported_entities(&path(file), p), updates, "{file}");
        let types = s["entity_types"].as_array().unwrap();
        assert_eq!(
            types.iter().map(|t| u(&t["updates"])).sum::<u64>(),
            updates,
            "{file}"
        );
        if framing_per_entity > 0 {
            assert_eq!(
                u(&field(t, "(entity framing)")["bytes"]),
                framing_per_entity * updates,
                "{file}"
            );
        }
    }
    // rt entity types are component kinds, their fields named by kind.
    let t = &profile(&path(RT), None)["total"];
    let kinds: Vec<&str> = t["snapshots"]["entity_types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["weapon", "health", "transform"]);
    // Weapon entries as real servers send them: u16 fire rate, three u8 (spec-notes B).
    assert_eq!(u(&field(t, "weapon.fire_rate_ms")["bytes"]), 2 * 6127);
    assert_eq!(u(&field(t, "transform.pos_x")["present"]), 2643);
}

#[test]
fn text_has_sparklines_and_fits_a_pipe() {
    let (code, out, err) = run(&["profile", C17, "--profile", "reference-17byte"]);
    assert_eq!(code, 0, "{err}");
    for heading in [
        "Bandwidth by message type",
        "By entity type",
        "By field",
        "Entities: 557 lives",
        "Over time",
        "Distributions",
        "Chunking: 16 chunk sets",
    ] {
        assert!(out.contains(heading), "{heading}:\n{out}");
    }
    let spark = out
        .lines()
        .find(|l| l.trim_start().starts_with("snapshots "))
        .unwrap();
    assert!(spark.chars().any(|c| ('▁'..='█').contains(&c)), "{spark}");
    assert!(out.lines().all(|l| !l.ends_with('…')));
    // Intervals: 100 ms buckets, and bad ones refused.
    let j: Value =
        serde_json::from_str(&run(&["profile", C17, "--interval", "100ms", "--format", "json"]).1)
            .unwrap();
    assert_eq!(j["series"]["interval_ms"], 100.0);
    assert_eq!(u(&j["series"]["buckets"]), 151);
    for bad in ["5ms", "1h", "fast", "2"] {
        let (code, _, err) = run(&["profile", C17, "--interval", bad]);
        assert_eq!(code, 2, "{bad}");
        assert!(err.contains("interval") || err.contains(bad), "{err}");
    }
}

// ------------------------------------------------------------------------------------------------
// Budgets, on sessions built to break each
// ------------------------------------------------------------------------------------------------

/// What a built session does differently from a healthy one.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Twist {
    None,
    /// Snapshots of 30 more entities for one second.
    Burst,
    /// One snapshot of 60 more entities.
    BigDatagram,
    /// Entity 2 updated every 6th tick only.
    SlowEntity,
    /// Snapshots of ticks 70-109 held back and sent at once at tick 110.
    Stall,
    /// Pongs 6 ticks (100 ms) after their ping.
    SlowPong,
    /// The snapshots of every 20th tick never sent.
    Loss,
}

/// Frames of note in a built session.
#[derive(Debug, Default)]
struct Marks {
    first: u64,
    last: u64,
}

/// A one-client rtype session of 3 s at 60 Hz: handshake, an input and a snapshot per tick
/// (entities 1 and 2), a ping every half second; and the twist. Returns the frames the twist
/// put its mark on.
fn session(file: &Path, twist: Twist) -> io::Result<Marks> {
    let client = Client::numbered(0)?;
    let mut sink = PcapSink::new(BufWriter::new(File::create(file)?))?;
    let mut s = Script::new(&mut sink);
    let mut marks = Marks::default();
    let mark = |s: &Script, marks: &mut Marks| {
        let frame = s.sent() + 1;
        if marks.first == 0 {
            marks.first = frame;
        }
        marks.last = frame;
    };
    s.at(0);
    s.join(&client)?;
    s.client(&client, "ready", json!({}))?;
    s.server(&client, "game_start", 0, json!({}))?;
    let entity = |id: u32, x: f32| Entity::new(id, 1, MASK_PLAYER, x, 100.0).json();
    let mut held = Vec::new();
    let mut pongs: Vec<(u32, u16, u32)> = Vec::new();
    for tick in 10..190u32 {
        s.at(tick);
        s.client(
            &client,
            "input",
            json!({"player_id": 1, "input_flags": 0, "pos_x": 1.0, "pos_y": 2.0, "angle": 0.0}),
        )?;
        if tick % 30 == 0 {
            let seq = s.client(&client, "ping", json!({"client_time": tick}))?;
            let delay = if twist == Twist::SlowPong { 6 } else { 0 };
            pongs.push((tick + delay, seq, tick));
        }
        for (_, seq, time) in pongs.iter().filter(|p| p.0 == tick) {
            if twist == Twist::SlowPong {
                mark(&s, &mut marks);
            }
            s.server(&client, "pong", *seq, json!({"client_time": time}))?;
        }
        pongs.retain(|p| p.0 != tick);
        let mut entities = vec![entity(1, tick as f32)];
        if twist != Twist::SlowEntity || tick % 6 == 0 {
            entities.push(entity(2, 2.0 * tick as f32));
        }
        if twist == Twist::Burst && (100..160).contains(&tick) {
            entities.extend((100..130).map(|id| entity(id, 0.0)));
        }
        if twist == Twist::BigDatagram && tick == 50 {
            entities.extend((200..260).map(|id| entity(id, 0.0)));
        }
        if twist == Twist::Loss && tick % 20 == 0 {
            continue;
        }
        let payload = s.payload("snapshot", &json!({ "entities": entities }))?;
        // Uncompressed, so that sizes are the layout's.
        let snapshot = s
            .server_header("snapshot", tick as u16)?
            .tick(tick)
            .compression(Compression::Never)
            .build(&payload)
            .map_err(io::Error::other)?;
        if twist == Twist::Stall && (70..110).contains(&tick) {
            held.push(snapshot);
            continue;
        }
        if twist == Twist::Stall && tick == 110 {
            mark(&s, &mut marks);
            for h in held.drain(..) {
                s.server_raw(&client, &h)?;
            }
        }
        let noted = matches!(twist, Twist::Burst if (100..160).contains(&tick))
            || matches!(twist, Twist::BigDatagram if tick == 50);
        if noted {
            mark(&s, &mut marks);
        }
        s.server_raw(&client, &snapshot)?;
    }
    drop(s);
    sink.finish()?;
    Ok(marks)
}

const ALL_BUDGETS: &str = "[budgets]\nsnapshot_kbps_per_client = 256\ndatagram_bytes_max = 1200\n\
    entity_updates_per_s_min = 20\nsnapshot_hz_min = 55\nrtt_p95_ms_max = 50\nloss_percent_max = 1\n";

/// check's JSON with every budget set, run where the config file is.
fn check_budgets(dir: &Path, file: &Path, format: &str) -> (i32, String) {
    std::fs::write(dir.join("rtype-inspect.toml"), ALL_BUDGETS).unwrap();
    let (code, out, err) = run_in(
        dir,
        &[
            "check",
            file.to_str().unwrap(),
            "--format",
            format,
            "--quiet",
        ],
    );
    assert!(code == 0 || code == 1, "{err}");
    (code, out)
}

#[test]
fn a_healthy_session_is_within_every_budget() {
    let dir = scratch("healthy");
    let file = dir.join("healthy.pcap");
    session(&file, Twist::None).unwrap();
    let (code, out) = check_budgets(&dir, &file, "json");
    let j: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(code, 0, "{out}");
    assert_eq!(j["files"][0]["budgets"], json!([]));
}

#[test]
fn each_budget_broken_by_its_session() {
    for (twist, rule, key) in [
        (
            Twist::Burst,
            "budget.snapshot-kbps",
            "snapshot_kbps_per_client",
        ),
        (
            Twist::BigDatagram,
            "budget.datagram-bytes",
            "datagram_bytes_max",
        ),
        (
            Twist::SlowEntity,
            "budget.entity-update-rate",
            "entity_updates_per_s_min",
        ),
        (Twist::Stall, "budget.snapshot-hz", "snapshot_hz_min"),
        (Twist::SlowPong, "budget.rtt-p95", "rtt_p95_ms_max"),
        (Twist::Loss, "budget.loss-percent", "loss_percent_max"),
    ] {
        let dir = scratch("budget");
        let file = dir.join(format!("{twist:?}.pcap"));
        let marks = session(&file, twist).unwrap();
        let (code, out) = check_budgets(&dir, &file, "json");
        assert_eq!(code, 1, "{twist:?}: {out}");
        let j: Value = serde_json::from_str(&out).unwrap();
        let f = &j["files"][0];
        let failing: Vec<&str> = f["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["verdict"] == "fail")
            .map(|x| x["id"].as_str().unwrap())
            .collect();
        assert_eq!(failing, [rule], "{twist:?}");
        let broken = f["budgets"].as_array().unwrap();
        assert_eq!(broken.len(), 1, "{twist:?}: {broken:?}");
        let b = &broken[0];
        assert_eq!(
            (b["id"].as_str(), b["budget_key"].as_str()),
            (Some(rule), Some(key))
        );
        assert_eq!(
            (b["conversation"].as_u64(), b["client"].as_str()),
            (Some(1), Some("10.0.0.2:41002"))
        );
        let (measured, first, last) = (
            b["measured"].as_f64().unwrap(),
            u(&b["first_frame"]),
            u(&b["last_frame"]),
        );
        match twist {
            // 60 snapshots of 32 entities (27 bytes each: id, mask and the player's 21 bytes)
            // in one second: the busiest second holds exactly them.
            Twist::Burst => {
                let bytes = 60.0 * (17.0 + 2.0 + 32.0 * 27.0 + 4.0);
                assert_eq!(measured, bytes * 8.0 / 1000.0);
                assert_eq!((first, last), (marks.first, marks.last));
            }
            Twist::BigDatagram => {
                assert_eq!(measured, 17.0 + 2.0 + 62.0 * 27.0 + 4.0);
                assert_eq!((first, last), (marks.first, marks.first));
            }
            // 10 updates a second; the entity's first and last updates.
            Twist::SlowEntity => {
                assert!((measured - 10.0).abs() < 0.01, "{measured}");
                assert_eq!(b["what"], "entity 2");
            }
            // 683 ms without snapshots: the quietest second holds the 19 before the stall,
            // and ends with the first held snapshot.
            Twist::Stall => {
                assert!((17.0..=20.0).contains(&measured), "{measured}");
                assert_eq!(last, marks.first);
                assert!(first < last);
            }
            Twist::SlowPong => {
                assert!((measured - 100.0).abs() < 0.1, "{measured}");
                assert!(
                    (marks.first..=marks.last).contains(&first),
                    "{first} {marks:?}"
                );
            }
            // 9 of 180 snapshot ticks never sent.
            Twist::Loss => {
                assert!((measured - 5.0).abs() < 0.01, "{measured}");
                assert!(b["what"].as_str().unwrap().starts_with("snapshot ticks"));
            }
            Twist::None => unreachable!(),
        }
        // The text names the budget, the conversation and the comparison; JUnit the failure.
        let (_, text) = check_budgets(&dir, &file, "text");
        assert!(
            text.contains("Budgets broken") && text.contains(key),
            "{text}"
        );
        assert!(text.contains("#1 10.0.0.2:41002"), "{text}");
        let (_, xml) = check_budgets(&dir, &file, "junit");
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let failure = doc
            .descendants()
            .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some(rule))
            .and_then(|c| c.children().find(|n| n.has_tag_name("failure")))
            .unwrap_or_else(|| panic!("{twist:?}: no failure for {rule}"));
        let body = failure.text().unwrap();
        assert!(body.contains("conversation #1 10.0.0.2:41002: "), "{body}");
        assert!(
            body.contains(&format!("at frames {first}-{last}")),
            "{body}"
        );
    }
}

#[test]
fn budget_keys_are_checked() {
    let dir = scratch("keys");
    std::fs::write(
        dir.join("rtype-inspect.toml"),
        "[budgets]\nsnapshot_kbps = 1\n",
    )
    .unwrap();
    let (code, out, err) = run_in(&dir, &["check", &path(C17)]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(
        err.contains("rtype-inspect.toml") && err.contains("snapshot_kbps"),
        "{err}"
    );
}

// ------------------------------------------------------------------------------------------------
// diff
// ------------------------------------------------------------------------------------------------

#[test]
fn diff_of_the_15_and_17_byte_captures() {
    let dir = scratch("diff");
    let (old, new) = (dir.join("15.json"), dir.join("17.json"));
    for (file, p, out) in [
        (C15, "reference-15byte", &old),
        (C17, "reference-17byte", &new),
    ] {
        let (code, json, err) = run(&["profile", file, "--profile", p, "--format", "json"]);
        assert_eq!(code, 0, "{err}");
        std::fs::write(out, json).unwrap();
    }
    let (old, new) = (old.to_str().unwrap(), new.to_str().unwrap());
    let (code, out, err) = run(&["diff", old, new, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let j: Value = serde_json::from_str(&out).unwrap();
    validator("docs/schemas/diff.schema.json")
        .validate(&j)
        .unwrap();
    let changes = j["changes"].as_array().unwrap();
    let by_name: BTreeMap<&str, &Value> = changes
        .iter()
        .map(|c| (c["figure"].as_str().unwrap(), c))
        .collect();
    // The headline first: kbit/s per direction, then the snapshots'.
    let top: Vec<&str> = changes[..4]
        .iter()
        .map(|c| c["figure"].as_str().unwrap())
        .collect();
    assert_eq!(
        top,
        [
            "rate.c2s.kbps",
            "rate.s2c.kbps",
            "rate.snapshot_kbps",
            "rate.snapshot_hz"
        ]
    );
    let kbps = by_name["rate.snapshot_kbps"];
    assert_eq!(
        (kbps["headline"].as_bool(), kbps["regression"].as_bool()),
        (Some(true), Some(false))
    );
    assert!(
        (kbps["relative"].as_f64().unwrap() + 0.432).abs() < 0.001,
        "{kbps}"
    );
    // Findings per minute; the older header's, raised once, is gone and folded.
    let header = by_name["findings_per_min.rtype.header.15-byte"];
    assert_eq!(
        (header["status"].as_str(), header["folded"].as_bool()),
        (Some("gone"), Some(true))
    );
    // One-off messages are folded: the handshake, the chunks' 26 datagrams are not.
    assert_eq!(by_name["kbps.rtype.c2s.CLIENT_HELLO"]["folded"], true);
    assert_eq!(
        by_name["kbps.rtype.s2c.SERVER_SNAPSHOT_CHUNK"]["folded"],
        false
    );
    // Every message two bytes bigger (the header's Orig. Size)...
    let input = by_name["mean_bytes.rtype.c2s.CLIENT_INPUT"];
    assert_eq!(
        (input["old"].as_f64(), input["new"].as_f64()),
        (Some(37.0), Some(39.0))
    );
    // ...and snapshots 43 % smaller: i16 positions, delta masks, LZ4.
    let snapshot = by_name["mean_bytes.rtype.s2c.SERVER_SNAPSHOT"];
    assert!(
        (snapshot["relative"].as_f64().unwrap() + 0.428).abs() < 0.001,
        "{snapshot}"
    );
    assert!(
        by_name["compression_ratio.rtype.s2c.SERVER_SNAPSHOT"]["new"]
            .as_f64()
            .unwrap()
            > 1.03
    );
    // The headline, then the others, the folded ones last.
    let order: Vec<(bool, bool)> = changes
        .iter()
        .map(|c| (c["folded"] == true, c["headline"] == false))
        .collect();
    assert!(order.windows(2).all(|w| w[0] <= w[1]), "{order:?}");
    // Each side names the layout its snapshots were read with.
    assert_eq!(
        (&j["old"]["layout"], &j["new"]["layout"]),
        (&json!("reference-15byte"), &json!("reference-17byte"))
    );
    // The 15-byte build against the 17-byte one: its snapshots are 76 % more bytes.
    let (code, out, _) = run(&["diff", new, old, "--fail-above", "25"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out.lines().nth(1),
        Some("snapshots read with profile reference-17byte → reference-15byte")
    );
    assert!(
        out.contains(
            "FAIL: 2 figures regressed by more than 25 %: rate.s2c.kbps, rate.snapshot_kbps"
        ),
        "{out}"
    );
    // The other way round they are savings, which never fail.
    let (code, out, _) = run(&[
        "diff",
        old,
        new,
        "--fail-above",
        "25",
        "--only",
        "rate.snapshot_",
    ]);
    assert_eq!(code, 0, "{out}");

    // As a CI gate: the header alone is a 10.5 % change on the smallest messages.
    let gate = |percent: &str| {
        run(&[
            "diff",
            old,
            new,
            "--only",
            "mean_bytes.rtype.c2s.CLIENT_",
            "--fail-above",
            percent,
        ])
    };
    let (code, out, _) = gate("10");
    assert_eq!(code, 1, "{out}");
    // HELLO, JOIN_REQUEST and READY: 19 → 21 bytes (+10.5 %); DISCONNECT +10.0 % is not above.
    assert!(
        out.contains("FAIL: 3 figures regressed by more than 10 %"),
        "{out}"
    );
    let (code, out, _) = gate("11");
    assert_eq!(code, 0, "{out}");
    // A shorter session of the same build passes: the capture against its first 10 seconds,
    // either way round.
    let cut = dir.join("first-10s.pcap");
    let (code, _, err) = run(&[
        "packets",
        C17,
        "-Y",
        "frame.time_relative <= 10",
        "-w",
        cut.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    let cut = cut.to_str().unwrap();
    for (a, b) in [(C17, cut), (cut, C17)] {
        let (code, out, _) = run(&[
            "diff",
            a,
            b,
            "--profile",
            "reference-17byte",
            "--fail-above",
            "25",
        ]);
        assert_eq!(code, 0, "{a} → {b}: {out}");
        assert!(
            out.contains("pass: no judged figure regressed by more than 25 %"),
            "{out}"
        );
    }
    // A capture against itself: nothing changed.
    let (code, out, _) = run(&[
        "diff",
        C17,
        C17,
        "--profile",
        "reference-17byte",
        "--fail-above",
        "0",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("No change."), "{out}");
    // Not a profile, or a bad gate: exit 2.
    std::fs::write(dir.join("other.json"), "{\"schema\": \"x\"}").unwrap();
    let (code, _, err) = run(&["diff", dir.join("other.json").to_str().unwrap(), new]);
    assert_eq!(code, 2);
    assert!(err.contains("not a profile"), "{err}");
    assert_eq!(run(&["diff", old, new, "--fail-above", "-1"]).0, 2);
}

// ------------------------------------------------------------------------------------------------
// Limits
// ------------------------------------------------------------------------------------------------

#[test]
fn conversations_past_the_limit_are_profiled_together() {
    let dir = scratch("many");
    let file = dir.join("many.pcap");
    let mut sink = PcapSink::new(BufWriter::new(File::create(&file).unwrap())).unwrap();
    let mut s = Script::new(&mut sink);
    for n in 0..300 {
        let c = Client::numbered(n).unwrap();
        s.client(&c, "hello", json!({})).unwrap();
    }
    drop(s);
    sink.finish().unwrap();
    let j = profile(file.to_str().unwrap(), None);
    validator("docs/schemas/profile.schema.json")
        .validate(&j)
        .unwrap();
    let profiled = u(&j["limits"]["conversations_profiled"]);
    assert_eq!(profiled, 256);
    assert_eq!(
        j["conversations"].as_array().unwrap().len() as u64,
        profiled
    );
    assert_eq!(u(&j["limits"]["conversations_over"]), 300 - profiled);
    assert_eq!(u(&j["others"]["datagrams"]), 300 - profiled);
    assert_eq!(u(&j["total"]["datagrams"]), 300);
    // Time series for the first conversations only.
    let detailed = j["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !c["series"].is_null())
        .count() as u64;
    assert_eq!(detailed, u(&j["limits"]["conversations_detailed"]));
}

#[test]
fn long_captures_fold_their_buckets() {
    // Snapshots an hour apart: at 100 ms buckets that would be 36,000; the interval doubles
    // until they fit in 2,048.
    let dir = scratch("long");
    let file = dir.join("long.pcap");
    let c = Client::numbered(0).unwrap();
    let mut sink = PcapSink::new(BufWriter::new(File::create(&file).unwrap())).unwrap();
    let mut s = Script::new(&mut sink);
    for tick in [0, 60 * 60 * 60] {
        s.at(tick);
        s.client(&c, "hello", json!({})).unwrap();
    }
    drop(s);
    sink.finish().unwrap();
    let j: Value = serde_json::from_str(
        &run(&[
            "profile",
            file.to_str().unwrap(),
            "--interval",
            "100ms",
            "--format",
            "json",
        ])
        .1,
    )
    .unwrap();
    let series = &j["series"];
    assert_eq!(series["requested_interval_ms"], 100.0);
    assert_eq!(series["interval_ms"], 3200.0);
    assert_eq!(u(&series["buckets"]), 1126);
    let counts = j["total"]["series"]["datagrams"]["client_to_server"]
        .as_array()
        .unwrap();
    assert_eq!(counts.len(), 1126);
    assert_eq!((u(&counts[0]), u(&counts[1125])), (1, 1));
}

/// A directory stands for the captures under it, as for `stats`: their profiles follow one
/// another in name order, as a JSON array or texts a blank line apart; one that cannot be read
/// is said on stderr and exits 2, the others profiled.
#[test]
fn a_directory_profiles_each_capture_under_it() {
    let dir = scratch("directory");
    std::fs::copy(path(RT), dir.join("a.pcap")).unwrap();
    std::fs::copy(path(RTNP), dir.join("b.pcap")).unwrap();
    let (a, b) = (dir.join("a.pcap"), dir.join("b.pcap"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let d = dir.to_str().unwrap();
    let (code, out, err) = run(&["profile", d, "--format", "json", "--quiet"]);
    assert_eq!(code, 0, "{err}");
    let docs: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(docs, json!([profile(a, None), profile(b, None)]));
    let text = |args: &[&str]| {
        let (code, out, err) = run(&[&["profile", "--quiet"], args].concat());
        assert_eq!(code, 0, "{err}");
        out
    };
    assert_eq!(text(&[d]), format!("{}\n{}", text(&[a]), text(&[b])));
    std::fs::write(dir.join("c.pcap"), b"not a capture").unwrap();
    let (code, out, err) = run(&["profile", d, "--format", "json", "--quiet"]);
    let docs: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(docs.as_array().map(Vec::len), Some(2));
    let c = dir.join("c.pcap");
    assert_eq!(
        (code, err.trim()),
        (
            2,
            format!(
                "rtype-inspect: {}: not a capture file: not a pcap or pcapng file (starts with 6e 6f 74 20)",
                c.display()
            )
            .as_str()
        )
    );
}
