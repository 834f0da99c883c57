//! The binary on the two real rtype captures: exact message counts (those of
//! ../shared/captures/README.md, found by an independent decoder), exact violations with and
//! without the shipped profiles, and decoded values of chosen frames.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_rtype-inspect");
const C17: &str = "tests/fixtures/reference-17byte-1client.pcap";
const C15: &str = "tests/fixtures/reference-15byte-levelevents.pcap";
const P17: &str = "samples/profiles/reference-17byte.toml";
const P15: &str = "samples/profiles/reference-15byte.toml";

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).output().expect("binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn summary(args: &[&str]) -> Value {
    let mut all = vec!["summary", "--format", "json"];
    all.extend_from_slice(args);
    let (code, out, err) = run(&all);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).expect("summary is JSON")
}

/// `direction name` → count.
fn messages(s: &Value) -> BTreeMap<String, u64> {
    s["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                format!(
                    "{} {}",
                    m["direction"].as_str().unwrap(),
                    m["name"].as_str().unwrap()
                ),
                m["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// `id` → (count, first frame).
fn violations(s: &Value) -> BTreeMap<String, (u64, u64)> {
    s["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["id"].as_str().unwrap().to_string(),
                (
                    v["count"].as_u64().unwrap(),
                    v["first_frame"].as_u64().unwrap(),
                ),
            )
        })
        .collect()
}

fn expected(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

const C2S: &str = "client_to_server";
const S2C: &str = "server_to_client";

#[test]
fn reference_17byte_message_counts() {
    let s = summary(&[C17, "--profile", P17]);
    let want = expected(&[
        (&format!("{C2S} CLIENT_HELLO"), 1),
        (&format!("{C2S} CLIENT_JOIN_REQUEST"), 1),
        (&format!("{C2S} CLIENT_READY"), 1),
        (&format!("{C2S} CLIENT_PING"), 15),
        (&format!("{C2S} CLIENT_INPUT"), 900),
        (&format!("{C2S} CLIENT_ACKNOWLEDGE"), 1),
        (&format!("{C2S} CLIENT_DISCONNECT"), 1),
        (&format!("{S2C} SERVER_HELLO"), 1),
        (&format!("{S2C} SERVER_JOIN_ACCEPT"), 1),
        (&format!("{S2C} SERVER_PONG"), 15),
        (&format!("{S2C} SERVER_SNAPSHOT"), 874),
        (&format!("{S2C} SERVER_GAME_START"), 1),
        (&format!("{S2C} SERVER_ENTITY_SPAWN"), 557),
        (&format!("{S2C} SERVER_ENTITY_DESTROYED"), 806),
        (&format!("{S2C} SERVER_SNAPSHOT_CHUNK"), 26),
        (&format!("{S2C} SERVER_LEVEL_INIT"), 1),
    ]);
    assert_eq!(messages(&s), want);
    assert_eq!(s["capture"]["frames"], 3202);
    assert_eq!(s["capture"]["format"], "pcap");
    assert_eq!(s["capture"]["link_types"], serde_json::json!(["ethernet"]));
    assert_eq!(s["capture"]["truncated"], Value::Null);
    assert_eq!(s["crc_failures"], 0);
    assert_eq!(s["compressed_payloads"], 673);
    assert_eq!(s["snapshots_reassembled"], 16);
    assert_eq!(s["conversations"].as_array().unwrap().len(), 1);
    assert_eq!(s["conversations"][0]["client"], "127.0.0.1:41000");
    assert_eq!(s["conversations"][0]["server"], "127.0.0.1:50010");
}

#[test]
fn reference_15byte_message_counts() {
    let s = summary(&[C15, "--profile", P15]);
    let want = expected(&[
        (&format!("{C2S} CLIENT_HELLO"), 1),
        (&format!("{C2S} CLIENT_JOIN_REQUEST"), 1),
        (&format!("{C2S} CLIENT_READY"), 1),
        (&format!("{C2S} CLIENT_PING"), 20),
        (&format!("{C2S} CLIENT_INPUT"), 1200),
        (&format!("{C2S} CLIENT_ACKNOWLEDGE"), 1),
        (&format!("{C2S} CLIENT_DISCONNECT"), 1),
        (&format!("{S2C} SERVER_HELLO"), 1),
        (&format!("{S2C} SERVER_JOIN_ACCEPT"), 1),
        (&format!("{S2C} SERVER_PONG"), 20),
        (&format!("{S2C} SERVER_SNAPSHOT"), 1201),
        (&format!("{S2C} SERVER_GAME_START"), 1),
        (&format!("{S2C} SERVER_ENTITY_SPAWN"), 408),
        (&format!("{S2C} SERVER_ENTITY_DESTROYED"), 627),
        (&format!("{S2C} SERVER_LEVEL_INIT"), 1),
        (&format!("{S2C} SERVER_LEVEL_EVENT"), 4),
    ]);
    assert_eq!(messages(&s), want);
    assert_eq!(s["crc_failures"], 0);
    assert_eq!(s["compressed_payloads"], 0);
}

/// Rules of the datagram and message layers (session-level rules are tested with `check`).
fn datagram_rules(s: &Value) -> BTreeMap<String, (u64, u64)> {
    violations(s)
        .into_iter()
        .filter(|(id, _)| id.starts_with("rtype.") || id.starts_with("capture."))
        .collect()
}

#[test]
fn reference_17byte_violations_with_and_without_profile() {
    // Judged against the document's layout: the i16 fields and bit 10 break it.
    let doc = datagram_rules(&summary(&[C17, "--strict-layout"]));
    let want: BTreeMap<String, (u64, u64)> = [
        ("rtype.levelinit.boss-trailer", (1, 8)),
        ("rtype.message.truncated", (137, 10)),
        ("rtype.pong.empty", (15, 73)),
        ("rtype.snapshot.reserved-bit", (573, 271)),
        ("rtype.snapshot.undefined-bit", (190, 268)),
        ("rtype.snapshot.unknown-entity-type", (430, 277)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(doc, want);
    // With the build's profile the snapshots decode cleanly: only the real departures remain.
    let with = datagram_rules(&summary(&[C17, "--profile", P17]));
    let want: BTreeMap<String, (u64, u64)> = [
        ("rtype.levelinit.boss-trailer", (1, 8)),
        ("rtype.pong.empty", (15, 73)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(with, want);
    // Without a profile named, the layout found is applied: the same, and the one departure
    // from the document's layout at the first snapshot.
    let found = datagram_rules(&summary(&[C17]));
    let mut want = want;
    want.insert("rtype.snapshot.layout".into(), (1, 10));
    assert_eq!(found, want);
}

#[test]
fn reference_15byte_violations() {
    let with = datagram_rules(&summary(&[C15, "--profile", P15]));
    let want: BTreeMap<String, (u64, u64)> = [
        // Reported once per conversation, not per datagram.
        ("rtype.header.15-byte", (1, 1)),
        ("rtype.levelinit.boss-trailer", (1, 8)),
        ("rtype.pong.empty", (20, 75)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(with, want);
    // With the document's layout, every one of the 1201 snapshots stops at the score on bit 10.
    let doc = datagram_rules(&summary(&[C15, "--strict-layout"]));
    assert_eq!(doc["rtype.snapshot.undefined-bit"], (1201, 12));
    assert_eq!(doc.len(), 4);
    // Without a profile named, the layout found is applied: one finding says so.
    let found = datagram_rules(&summary(&[C15]));
    let mut want = want;
    want.insert("rtype.snapshot.layout".into(), (1, 12));
    assert_eq!(found, want);
}

fn export(args: &[&str]) -> Vec<Value> {
    let mut all = vec!["export"];
    all.extend_from_slice(args);
    let (code, out, err) = run(&all);
    assert_eq!(code, 0, "{err}");
    out.lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

fn frame(records: &[Value], kind: &str, frame: u64) -> Value {
    records
        .iter()
        .find(|r| r["kind"] == kind && r["frame"] == frame)
        .cloned()
        .unwrap_or_else(|| panic!("no {kind} at frame {frame}"))
}

#[test]
fn level_init_archetypes_and_boss_trailer() {
    let r = export(&[C17, "--profile", P17, "--frames", "8"]);
    let d = frame(&r, "datagram", 8);
    assert_eq!(d["name"], "SERVER_LEVEL_INIT");
    let f = &d["fields"];
    assert_eq!(f["level_id"], 1);
    assert_eq!(f["seed"], 804611298);
    assert_eq!(f["background_id"], "space_background");
    assert_eq!(f["music_id"], "theme_music");
    assert_eq!(f["archetype_count"], 17);
    let a = f["archetypes"].as_array().unwrap();
    assert_eq!(a.len(), 17);
    assert_eq!(
        a[0],
        serde_json::json!({"type_id": 1, "sprite_id": "player_ship", "anim_id": "player1", "layer": 0})
    );
    assert_eq!(a[4]["sprite_id"], "bullet");
    assert_eq!(a[4]["anim_id"], "bullet_basic");
    assert_eq!(a[11]["layer"], 50);
    assert!(f["boss_count"].as_u64().unwrap() >= 1);
    let ids: Vec<_> = d["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["rtype.levelinit.boss-trailer"]);
}

#[test]
fn reassembled_chunk_set() {
    let r = export(&[C17, "--profile", P17, "--frames", "557-558"]);
    let first = frame(&r, "datagram", 557);
    assert_eq!(first["fields"]["total_chunks"], 2);
    assert_eq!(first["fields"]["chunk_index"], 0);
    let s = frame(&r, "snapshot", 558);
    assert_eq!(
        (
            s["tick"].as_u64(),
            s["chunks"].as_u64(),
            s["first_frame"].as_u64()
        ),
        (Some(340), Some(2), Some(557))
    );
    let e = s["fields"]["entities"].as_array().unwrap();
    assert_eq!(s["fields"]["entity_count"], 70);
    assert_eq!(e.len(), 70);
    assert_eq!(
        e[0],
        serde_json::json!({"id": 0, "update_mask": 1151, "entity_type": 1, "sprite": "player_ship", "pos_x": 67.6,
            "pos_y": 702, "vel_x": -176.8, "vel_y": 176.8, "health": 1, "status_lives": 3, "score": 0})
    );
}

#[test]
fn compressed_snapshot() {
    let r = export(&[C17, "--profile", P17, "--frames", "319"]);
    let d = frame(&r, "datagram", 319);
    assert_eq!(d["name"], "SERVER_SNAPSHOT");
    assert_eq!(d["compressed"], true);
    assert_eq!(d["header"]["version_byte"], 0x81);
    assert_eq!(
        (
            d["header"]["payload_len"].as_u64(),
            d["header"]["orig_size"].as_u64()
        ),
        (Some(81), Some(83))
    );
    assert_eq!(d["fields"]["entity_count"], 9);
    assert_eq!(
        d["fields"]["entities"][0],
        serde_json::json!({"id": 0, "update_mask": 6, "pos_x": 167.8, "pos_y": 467.8})
    );
    assert_eq!(d["violations"], serde_json::json!([]));
}

#[test]
fn level_events_in_the_15_byte_capture() {
    let r = export(&[C15, "--profile", P15, "--type", "levelevent"]);
    let events: Vec<_> = r.iter().filter(|r| r["kind"] == "datagram").collect();
    assert_eq!(
        events
            .iter()
            .map(|e| e["frame"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [9, 10, 1643, 1644]
    );
    assert_eq!(events[0]["header_len"], 15);
    assert_eq!(
        events[0]["fields"],
        serde_json::json!({"event_type": 1, "event_type_name": "set_scroll",
            "set_scroll": {"mode": 0, "mode_name": "constant", "speed_x": -60, "keyframe_count": 0, "keyframes": []}})
    );
    assert_eq!(
        events[1]["fields"]["set_background"]["background_id"],
        "space_background"
    );
}

#[test]
fn unreadable_files_exit_2_with_one_line() {
    let (code, out, err) = run(&["no/such/file.pcap"]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no/such/file.pcap"), "{err}");
    let (code, _, err) = run(&["Cargo.toml"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("Cargo.toml") && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn text_summary_rows_are_whole_on_a_pipe() {
    let (code, out, _) = run(&[C17, "--strict-layout"]);
    assert_eq!(code, 0);
    assert!(out.contains("SERVER_SNAPSHOT_CHUNK"));
    // One line per violation, its text whole (a terminal gets the table wrapped to its width).
    let summary = rtype_inspect::proto::Rule::from_id("rtype.snapshot.reserved-bit")
        .unwrap()
        .info()
        .summary;
    assert!(
        out.lines()
            .any(|l| l.contains("rtype.snapshot.reserved-bit") && l.contains(summary)),
        "{out}"
    );
    assert!(
        !out.contains('\u{1b}'),
        "no colour when stdout is not a TTY"
    );
}

#[test]
fn the_summary_names_the_bundled_profile_that_fits() {
    for (capture, profile) in [(C17, "reference-17byte"), (C15, "reference-15byte")] {
        // Read with the document's layout on purpose (as standard input is).
        let (code, out, _) = run(&[capture, "--strict-layout"]);
        assert_eq!(code, 0);
        assert!(
            out.ends_with(&format!(
                "\nSnapshots fail to decode with this layout, but the 64 tried all fit the bundled \
                 profile {profile}: --profile {profile}\n"
            )),
            "{out}"
        );
        let (_, json, _) = run(&[capture, "--format", "json", "--strict-layout"]);
        let json: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(json["profile_hint"]["profile"], profile);
        assert_eq!(json["profile"], "document");
        // Without it, the capture is read with the profile that fits: nothing to suggest.
        let (_, json, _) = run(&[capture, "--format", "json"]);
        let json: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(json["profile"], profile);
        assert_eq!(json["profile_hint"], serde_json::Value::Null);
        // With it, nothing to suggest.
        let (_, json, _) = run(&[capture, "--format", "json", "--profile", profile]);
        let json: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(json["profile_hint"], serde_json::Value::Null);
    }
}
