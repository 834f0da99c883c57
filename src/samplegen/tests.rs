//! The generator checked against the project's own decoder: messages round-trip through the
//! description, samples are deterministic and readable by the capture layer, and the findings
//! each sample expects are the ones the datagram and message layers actually raise.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{json, Map, Value as Json};

use super::encode::{encode_message, encode_nodes};
use super::rtype::RtypeBuilder;
use super::scenarios::{expected_text, scenario, SCENARIOS};
use super::script::{message, Record};
use crate::capture::{udp_from_frame, CaptureReader, LinkOutcome};
use crate::datagram::rtype::{parse, MAX_PAYLOAD, MESSAGE_RULES};
use crate::finding::Finding;
use crate::message::{decode_message, Open, Value, Visitor};
use crate::proto::profile::Profile;
use crate::proto::rtype::MESSAGES;
use crate::proto::schema::Endian;
use crate::proto::Rule;

/// Rebuilds the JSON shape the encoder takes from the decoder's walk.
struct Collect {
    /// Open groups: the key they go under in their parent (none for array items), and the value.
    stack: Vec<(Option<&'static str>, Json)>,
    undecoded: usize,
}

impl Collect {
    fn new() -> Collect {
        Collect {
            stack: vec![(None, Json::Object(Map::new()))],
            undecoded: 0,
        }
    }
    fn into_json(mut self) -> Json {
        self.stack.pop().map(|(_, v)| v).unwrap_or_default()
    }
}

fn json_of(value: Value<'_>) -> Json {
    match value {
        Value::U(n) => json!(n),
        Value::I(n) => json!(n),
        Value::F(f) if f.is_nan() => json!("NaN"),
        Value::F(f) if f.is_infinite() => json!(if f > 0.0 { "inf" } else { "-inf" }),
        Value::F(f) => json!(f),
        Value::Str(s) => json!(s),
        Value::Bytes(b) => json!(b),
    }
}

impl Visitor for Collect {
    fn field(&mut self, field: &'static crate::proto::Field, _: usize, _: usize, value: Value<'_>) {
        if let Some((_, Json::Object(obj))) = self.stack.last_mut() {
            obj.insert(field.name.to_string(), json_of(value));
        }
    }
    fn open(&mut self, group: &'static crate::proto::schema::Group, how: Open, _: usize) {
        let frame = match how {
            Open::List { .. } => (Some(group.name), Json::Array(vec![])),
            Open::Item { .. } => (None, Json::Object(Map::new())),
            Open::Case => (Some(group.name), Json::Object(Map::new())),
        };
        self.stack.push(frame);
    }
    fn close(&mut self, _: Open) {
        let Some((key, value)) = self.stack.pop() else {
            return;
        };
        match (self.stack.last_mut(), key) {
            (Some((_, Json::Array(items))), _) => items.push(value),
            (Some((_, Json::Object(obj))), Some(key)) => {
                obj.insert(key.to_string(), value);
            }
            _ => {}
        }
    }
    fn undecoded(&mut self, _: usize, bytes: &[u8]) {
        self.undecoded += bytes.len();
    }
}

/// Encodes `value` as message `short`, decodes it back; returns the rebuilt JSON and the findings.
fn round_trip(short: &str, value: &Json) -> (Json, Vec<Rule>) {
    let msg = message(short).unwrap();
    let bytes = encode_message(msg, value, &Profile::document()).unwrap();
    let mut visitor = Collect::new();
    let mut findings: Vec<Finding> = Vec::new();
    let profile = Profile::document();
    decode_message(
        msg,
        &bytes,
        0,
        Endian::Big,
        &profile,
        &MESSAGE_RULES,
        &mut visitor,
        &mut findings,
    );
    assert_eq!(visitor.undecoded, 0, "{short}: undecoded bytes");
    (
        visitor.into_json(),
        findings.iter().map(|f| f.rule).collect(),
    )
}

fn entity_full() -> Json {
    json!({"id": 1, "update_mask": 0x027F, "entity_type": 1, "pos_x": 1.5, "pos_y": 2.5, "vel_x": -1.0,
           "vel_y": 0.0, "health": 100, "status_flags": 2, "lives": 3})
}

fn entity_small() -> Json {
    json!({"id": 1000, "update_mask": 0x0007, "entity_type": 2, "pos_x": 1900.0, "pos_y": -4.25})
}

/// One value per message type, with every count field given so the decoded form is identical.
fn message_values() -> Vec<(&'static str, Json)> {
    let empty = json!({});
    let level_events = [
        json!({"event_type": 1, "set_scroll": {"mode": 2, "speed_x": 1.5, "keyframe_count": 2,
               "keyframes": [{"time": 0.0, "speed_x": 1.5}, {"time": 2.0, "speed_x": 3.0}]}}),
        json!({"event_type": 2, "set_background": {"background_id": "bg_space_02"}}),
        json!({"event_type": 3, "set_music": {"music_id": "stage1_theme"}}),
        json!({"event_type": 4, "set_camera_bounds": {"min_x": 0.0, "max_x": 1920.0, "min_y": -8.5, "max_y": 1080.0}}),
        json!({"event_type": 5, "gate_open": {"gate_id": "gate_a"}}),
        json!({"event_type": 6, "gate_close": {"gate_id": ""}}),
    ];
    let mut values = vec![
        ("hello", empty.clone()),
        ("join_request", empty.clone()),
        ("ready", empty.clone()),
        ("ping", json!({"client_time": 123_456})),
        (
            "input",
            json!({"player_id": 2, "input_flags": 0x0219, "pos_x": 12.5, "pos_y": -3.25, "angle": 0.5}),
        ),
        ("ack", json!({"ack_sequence": 513, "ack_msg_type": 0x30})),
        ("disconnect", json!({"reason": 0x01})),
        ("server_hello", empty.clone()),
        ("join_accept", empty.clone()),
        ("join_deny", empty.clone()),
        ("pong", json!({"client_time": 99})),
        (
            "snapshot",
            json!({"entity_count": 2, "entities": [entity_full(), entity_small()]}),
        ),
        ("game_start", empty.clone()),
        ("game_end", json!({"player_id": 1})),
        ("kick", json!({"reason": 0x12})),
        ("ban", json!({"reason": 0x21})),
        ("broadcast", json!({"text": "Wave 1 – incoming!"})),
        ("server_disconnect", json!({"reason": 0x30})),
        (
            "server_ack",
            json!({"ack_sequence": 7, "ack_msg_type": 0x03}),
        ),
        ("player_disconnected", json!({"player_id": 2})),
        (
            "entity_spawn",
            json!({"entity_id": 900, "entity_type": 3, "pos_x": 132.0, "pos_y": 350.0}),
        ),
        ("entity_destroyed", json!({"entity_id": 900})),
        ("all_ready", empty.clone()),
        ("countdown", json!({"value": 3})),
        (
            "snapshot_chunk",
            json!({"total_chunks": 3, "chunk_index": 1, "entity_count": 1, "entities": [entity_small()]}),
        ),
        (
            "levelinit",
            json!({"level_id": 1, "seed": 0x00C0_FFEE, "background_id": "bg_space_01", "music_id": "stage1_theme",
            "archetype_count": 3, "archetypes": [
                {"type_id": 1, "sprite_id": "player_ship", "anim_id": "ship_idle", "layer": 2},
                {"type_id": 2, "sprite_id": "bydo_scout", "anim_id": "scout_fly", "layer": 1},
                {"type_id": 3, "sprite_id": "wave_shot", "anim_id": "", "layer": 3}]}),
        ),
        ("leveltransition", empty),
    ];
    values.extend(level_events.into_iter().map(|e| ("levelevent", e)));
    values
}

#[test]
fn every_message_round_trips_through_the_decoder() {
    let values = message_values();
    for m in MESSAGES {
        assert!(
            values.iter().any(|(short, _)| *short == m.short),
            "no round-trip value for {}",
            m.name
        );
    }
    for (short, value) in &values {
        let (decoded, findings) = round_trip(short, value);
        assert_eq!(&decoded, value, "{short}");
        assert_eq!(findings, vec![], "{short}");
    }
}

#[test]
fn level_init_archetypes_and_all_six_events() {
    let values = message_values();
    let (_, init) = values.iter().find(|(s, _)| *s == "levelinit").unwrap();
    let (decoded, _) = round_trip("levelinit", init);
    let types: Vec<_> = decoded["archetypes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["type_id"].clone())
        .collect();
    assert_eq!(types, vec![json!(1), json!(2), json!(3)]);
    assert_eq!(decoded["archetypes"][2]["anim_id"], json!(""));
    let events: Vec<_> = values
        .iter()
        .filter(|(s, _)| *s == "levelevent")
        .map(|(_, v)| round_trip("levelevent", v).0)
        .collect();
    let kinds: Vec<_> = events
        .iter()
        .map(|e| e["event_type"].as_u64().unwrap())
        .collect();
    assert_eq!(kinds, vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(
        events[0]["set_scroll"]["keyframes"][1]["speed_x"],
        json!(3.0)
    );
    assert_eq!(events[3]["set_camera_bounds"]["min_y"], json!(-8.5));
}

#[test]
fn encoder_takes_counts_lengths_and_specials_from_the_json() {
    let doc = Profile::document();
    // Counts come from the array unless given.
    let bytes =
        encode_message(message("snapshot").unwrap(), &json!({"entities": []}), &doc).unwrap();
    assert_eq!(bytes, vec![0, 0]);
    let bytes = encode_message(
        message("snapshot").unwrap(),
        &json!({"entity_count": 5, "entities": []}),
        &doc,
    )
    .unwrap();
    assert_eq!(bytes, vec![0, 5]);
    // Missing fields are named.
    let err =
        encode_message(message("input").unwrap(), &json!({"player_id": 1}), &doc).unwrap_err();
    assert!(err.contains("input_flags"), "{err}");
    let err = encode_message(
        message("snapshot").unwrap(),
        &json!({"entities": [{"id": 1, "update_mask": 2}]}),
        &doc,
    )
    .unwrap_err();
    assert!(
        err.contains("entities[0]") && err.contains("pos_x"),
        "{err}"
    );
    // Out of range, wrong type.
    assert!(encode_message(message("countdown").unwrap(), &json!({"value": 256}), &doc).is_err());
    assert!(encode_message(message("countdown").unwrap(), &json!({"value": 1.5}), &doc).is_err());
    // Non-finite floats and non-UTF-8 text.
    let input =
        json!({"player_id": 1, "input_flags": 0, "pos_x": "NaN", "pos_y": "inf", "angle": "-inf"});
    let bytes = encode_message(message("input").unwrap(), &input, &doc).unwrap();
    assert!(f32::from_be_bytes(bytes[6..10].try_into().unwrap()).is_nan());
    assert_eq!(
        f32::from_be_bytes(bytes[10..14].try_into().unwrap()),
        f32::INFINITY
    );
    assert_eq!(
        f32::from_be_bytes(bytes[14..18].try_into().unwrap()),
        f32::NEG_INFINITY
    );
    let bytes = encode_message(
        message("broadcast").unwrap(),
        &json!({"text": [0xFF, 0x41]}),
        &doc,
    )
    .unwrap();
    assert_eq!(bytes, vec![2, 0xFF, 0x41]);
    // An event type no case knows writes the tag alone.
    let bytes = encode_message(
        message("levelevent").unwrap(),
        &json!({"event_type": 9}),
        &doc,
    )
    .unwrap();
    assert_eq!(bytes, vec![9]);
}

#[test]
fn masked_fields_follow_the_profile() {
    let profile = Profile::parse(
        "[bits]\n1 = { name = \"pos_x\", type = \"i16\", divisor = 10 }\n10 = { name = \"score\", type = \"i32\" }\n",
    )
    .unwrap();
    let entity = json!({"id": 7, "update_mask": 0x0402, "pos_x": 12.3, "score": -2});
    let bytes = encode_message(
        message("snapshot").unwrap(),
        &json!({"entities": [entity]}),
        &profile,
    )
    .unwrap();
    assert_eq!(
        bytes,
        vec![0, 1, 0, 0, 0, 7, 0x04, 0x02, 0, 123, 0xFF, 0xFF, 0xFF, 0xFE]
    );
    // With the document's profile, bit 10 has no width: its bytes come raw from "bit10".
    let entity = json!({"id": 7, "update_mask": 0x0400, "bit10": [1, 2, 3, 4]});
    let mut out = Vec::new();
    encode_nodes(
        message("snapshot").unwrap().body,
        &json!({"entities": [entity]}),
        &Profile::document(),
        &mut out,
    )
    .unwrap();
    assert_eq!(&out[8..], &[1, 2, 3, 4]);
}

#[test]
fn scenarios_are_deterministic_and_listed() {
    let names: Vec<_> = SCENARIOS
        .iter()
        .map(|n| scenario(n).unwrap().name)
        .collect();
    assert_eq!(names, SCENARIOS);
    for name in SCENARIOS {
        let s = scenario(name).unwrap();
        let (a, b) = (s.generate().unwrap(), s.generate().unwrap());
        assert!(a == b, "{name} differs between two runs");
        assert!(a.bytes.len() < 200_000, "{name} is {} bytes", a.bytes.len());
    }
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rtype-samplegen-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The UDP payloads a capture file holds, read back by the project's capture layer, and whether
/// it ended cut.
fn read_back(path: &std::path::Path) -> (Vec<Vec<u8>>, bool) {
    let mut reader = CaptureReader::open(path).unwrap();
    let mut payloads = Vec::new();
    let end = reader
        .for_each_frame(|frame| match udp_from_frame(frame.link_type, frame.data) {
            LinkOutcome::Udp(udp) => payloads.push(udp.payload.to_vec()),
            other => panic!("frame {} is not UDP: {other:?}", frame.number),
        })
        .unwrap();
    (payloads, end.truncated.is_some())
}

#[test]
fn samples_read_back_through_the_capture_layer() {
    let dir = temp_dir("readback");
    for name in SCENARIOS {
        let s = scenario(name).unwrap();
        s.write(&dir).unwrap();
        let (records, expected) = s.records().unwrap();
        let (payloads, truncated) = read_back(&dir.join(s.file));
        let sent: Vec<_> = records.iter().map(|r| r.bytes.clone()).collect();
        if name == &"truncated" {
            assert!(truncated);
            assert_eq!(payloads[..], sent[..sent.len() - 1]);
        } else {
            assert!(!truncated, "{name}");
            assert_eq!(payloads, sent, "{name}");
        }
        let text = std::fs::read_to_string(dir.join(s.expected_file())).unwrap();
        let mut expected = expected;
        if name == &"truncated" {
            expected.insert(Rule::CaptureTruncated.id(), 1);
        }
        assert_eq!(text, expected_text(&expected), "{name}");
    }
    std::fs::remove_dir_all(dir).ok();
}

/// Rules raised by later layers (the session's chunk sets and archetypes, the capture reader),
/// which the datagram and message layers alone cannot show.
const LATER_LAYERS: &[Rule] = &[
    Rule::CaptureTruncated,
    // The datagram layer raises it per datagram; the session layer keeps one per conversation.
    Rule::RtypeOldHeader,
    Rule::RtypeUnknownEntityType,
    Rule::RtypeChunkTotalZero,
    Rule::RtypeChunkIndex,
    Rule::RtypeChunkTotalMismatch,
    Rule::RtypeChunkDuplicate,
    Rule::RtypeChunkMissing,
    Rule::RtypeChunkLimit,
];

/// Findings of the datagram and message layers over a scenario's datagrams (those to or from the
/// game server; the desktop noise of `mixed-desktop` is no one's).
fn decoded_findings(records: &[Record]) -> BTreeMap<&'static str, u64> {
    let profile = Profile::document();
    let mut scratch = vec![0; MAX_PAYLOAD];
    let mut counts = BTreeMap::new();
    let server = super::script::SERVER_LISTEN.ip();
    for r in records
        .iter()
        .filter(|r| r.from.ip() == server || r.to.ip() == server)
    {
        let mut findings = Vec::new();
        if let Some(d) = parse(&r.bytes, &mut scratch, &mut findings) {
            if let (Some(m), Some(p)) = (d.message, d.payload(&scratch)) {
                let mut visitor = Collect::new();
                decode_message(
                    m,
                    p,
                    d.payload_at,
                    Endian::Big,
                    &profile,
                    &MESSAGE_RULES,
                    &mut visitor,
                    &mut findings,
                );
            }
        }
        for f in findings {
            *counts.entry(f.rule.id()).or_default() += 1;
        }
    }
    counts
}

#[test]
fn expected_findings_match_the_datagram_and_message_layers() {
    for name in SCENARIOS {
        let (records, expected) = scenario(name).unwrap().records().unwrap();
        let early = |(id, _): &(&str, u64)| !LATER_LAYERS.iter().any(|r| r.id() == *id);
        let ours: BTreeMap<_, _> = expected.into_iter().filter(early).collect();
        let decoded: BTreeMap<_, _> = decoded_findings(&records)
            .into_iter()
            .filter(early)
            .collect();
        assert_eq!(decoded, ours, "{name}");
    }
}

/// Independent checks of the rules later layers raise, by the semantics the samples promise
/// (see samples/README.md).
#[test]
fn expected_later_layer_findings_hold() {
    let (records, expected) = scenario("violations-chunks").unwrap().records().unwrap();
    let mut chunks = Vec::new();
    for r in &records {
        let mut findings = Vec::new();
        let mut scratch = vec![0; MAX_PAYLOAD];
        let Some(d) = parse(&r.bytes, &mut scratch, &mut findings) else {
            continue;
        };
        if d.message.is_some_and(|m| m.short == "snapshot_chunk") {
            let p = d.payload(&scratch).unwrap();
            let facts = decode_message(
                d.message.unwrap(),
                p,
                0,
                Endian::Big,
                &Profile::document(),
                &MESSAGE_RULES,
                &mut crate::message::NoFields,
                &mut findings,
            );
            chunks.push((
                d.header.tick(),
                facts.total_chunks.unwrap(),
                facts.chunk_index.unwrap(),
            ));
        }
    }
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    let mut sets: BTreeMap<u32, (u16, Vec<u16>, bool)> = BTreeMap::new();
    for (tick, total, index) in chunks {
        let rule = if total == 0 {
            Some(Rule::RtypeChunkTotalZero)
        } else if index >= total {
            Some(Rule::RtypeChunkIndex)
        } else {
            let set = sets.entry(tick).or_insert((total, vec![], false));
            if set.0 != total {
                set.2 = true;
                Some(Rule::RtypeChunkTotalMismatch)
            } else if set.1.contains(&index) {
                Some(Rule::RtypeChunkDuplicate)
            } else {
                set.1.push(index);
                None
            }
        };
        if let Some(rule) = rule {
            *counts.entry(rule.id()).or_default() += 1;
        }
    }
    let missing = sets
        .values()
        .filter(|(total, have, discarded)| !discarded && have.len() < usize::from(*total))
        .count();
    counts.insert(Rule::RtypeChunkMissing.id(), missing as u64);
    let chunk_rules: BTreeMap<_, _> = expected
        .into_iter()
        .filter(|(id, _)| id.starts_with("rtype.chunk."))
        .collect();
    assert_eq!(counts, chunk_rules);
    // The clean session sends complete chunk sets of three, every 30 ticks, to both players.
    let (records, _) = scenario("clean-session").unwrap().records().unwrap();
    let chunk_code = message("snapshot_chunk").unwrap().code;
    assert_eq!(
        records.iter().filter(|r| r.bytes[6] == chunk_code).count(),
        4 * 3 * 2
    );
}

#[test]
fn clean_session_covers_every_message_and_both_snapshot_forms() {
    let (records, expected) = scenario("clean-session").unwrap().records().unwrap();
    assert!(expected.is_empty());
    let seen: std::collections::BTreeSet<u8> = records.iter().map(|r| r.bytes[6]).collect();
    for m in MESSAGES {
        assert_eq!(seen.contains(&m.code), m.code != 0x31, "{}", m.name);
    }
    let snapshot = message("snapshot").unwrap().code;
    let snapshots: Vec<_> = records.iter().filter(|r| r.bytes[6] == snapshot).collect();
    assert!(
        snapshots.iter().any(|r| r.bytes[4] & 0x80 != 0),
        "no compressed snapshot"
    );
    assert!(
        snapshots.iter().any(|r| r.bytes[4] & 0x80 == 0),
        "no uncompressed snapshot"
    );
}

#[test]
fn builder_header_matches_the_datagram_view() {
    let bytes = RtypeBuilder::for_message(message("ping").unwrap())
        .sequence(0x1234)
        .tick(0xA0B0C0D0)
        .build(&[0, 0, 0, 1])
        .unwrap();
    let mut scratch = vec![0; MAX_PAYLOAD];
    let d = parse(&bytes, &mut scratch, &mut Vec::new()).unwrap();
    assert_eq!(
        (d.header.sequence(), d.header.tick(), d.header.packet_type()),
        (0x1234, 0xA0B0C0D0, 1)
    );
}

#[test]
fn large_capture_is_exact_readable_and_deterministic() {
    let dir = temp_dir("large");
    let a = dir.join("a.pcap");
    let bytes = super::generate_large(Vec::new(), 10_000, 4).unwrap();
    assert!(bytes == super::generate_large(Vec::new(), 10_000, 4).unwrap());
    std::fs::write(&a, &bytes).unwrap();
    let (payloads, truncated) = read_back(&a);
    assert!(!truncated);
    assert_eq!(payloads.len(), 10_000);
    let (mut compressed, mut chunks) = (0, 0);
    for p in &payloads {
        compressed += usize::from(p[4] & 0x80 != 0);
        chunks += usize::from(p[6] == message("snapshot_chunk").unwrap().code);
    }
    assert!(
        compressed > 1000 && chunks > 100,
        "compressed {compressed}, chunks {chunks}"
    );
    // No finding from the datagram and message layers: the large capture is clean traffic.
    let records: Vec<Record> = payloads
        .into_iter()
        .map(|bytes| Record {
            ts_us: 0,
            from: "0.0.0.0:1".parse().unwrap(),
            to: "0.0.0.0:1".parse().unwrap(),
            bytes,
        })
        .collect();
    assert_eq!(decoded_findings(&records), BTreeMap::new());
    assert!(super::generate_large(Vec::new(), 10, 0).is_err());
    std::fs::remove_dir_all(dir).ok();
}

/// The committed samples are the generator's output (skipped where samples/ is absent).
#[test]
fn committed_samples_are_up_to_date() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples");
    for s in SCENARIOS.iter().filter_map(|n| scenario(n)) {
        let Ok(committed) = std::fs::read(dir.join(s.file)) else {
            continue;
        };
        let sample: super::scenarios::Sample = s.generate().unwrap();
        assert!(
            committed == sample.bytes,
            "samples/{} is stale: cargo run --release -- generate --all samples/",
            s.file
        );
    }
}
