//! The proof of the dialect description format (docs/dialect-format.md) on a protocol nobody
//! here designed: RTGP, the R-Type Game Protocol of
//! <https://github.com/My-Epitech-Organisation/Rtype>, described in examples/dialects/rtgp.yaml.
//! The captures are written by an encoder made from that project's C++, not from the
//! description (tests/support/rtgp.rs): `dialect check` must pass its clean session and name the
//! frame and rule of each fault put in it, and `dialect packets` must name every datagram as the
//! project does.

#[path = "support/bin.rs"]
mod bin;
#[path = "support/faults.rs"]
mod faults;
#[path = "support/rtgp.rs"]
mod rtgp;

use std::collections::BTreeMap;
use std::path::PathBuf;

use bin::run;
use serde_json::Value;

const DIALECT: &str = "examples/dialects/rtgp.yaml";
/// The clean session, committed for docs/describe-your-protocol.md; `RTYPE_BLESS=1 cargo test
/// --test dialect_example` rewrites it from the encoder.
const SAMPLE: &str = "examples/dialects/rtgp-session.pcap";

/// The session's datagrams.
const DATAGRAMS: usize = 182;
/// The frame whose `payload_size` says 4 bytes more than there are (the S_ENTITY_SPAWN of Bydos
/// 100 to client A).
const WRONG_LENGTH_FRAME: u64 = 88;
/// The frame whose opcode is 0x7E, which RTGP does not define (client B's 10th C_INPUT).
const UNKNOWN_TYPE_FRAME: u64 = 131;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "rtype-dialect-example-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `datagrams` written as a capture named `name` in a fresh directory.
fn capture(name: &str, datagrams: &[rtgp::Datagram]) -> String {
    let path = dir(name).join(format!("{name}.pcap"));
    rtgp::write_capture(&path, datagrams);
    path.to_str().unwrap().to_owned()
}

/// Whether a line of `out` names `rule` and `frame` (as a number of its own).
fn names_fault(out: &str, frame: u64, rule: &str) -> bool {
    let frame = frame.to_string();
    out.lines().any(|l| {
        l.contains(rule)
            && l.split(|c: char| !c.is_ascii_digit())
                .any(|number| number == frame)
    })
}

/// The facts the other tests hold the tool to, as the encoder makes them: the count, the fault
/// frames, how many of each message, and that every datagram is whole by the project's rules.
#[test]
fn the_session_is_what_the_tests_expect() {
    let session = rtgp::session();
    assert_eq!(session.len(), DATAGRAMS);
    assert_eq!(rtgp::with_wrong_length().1, WRONG_LENGTH_FRAME);
    assert_eq!(rtgp::with_unknown_type().1, UNKNOWN_TYPE_FRAME);
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for d in &session {
        *counts
            .entry(d.name().expect("a defined opcode"))
            .or_default() += 1;
    }
    let expected: BTreeMap<&str, usize> = [
        ("ACK", 64),
        ("C_CHAT", 1),
        ("C_CONNECT", 2),
        ("C_INPUT", 28),
        ("C_JOIN_LOBBY", 2),
        ("C_READY", 2),
        ("C_REQUEST_LOBBIES", 2),
        ("C_SET_BANDWIDTH_MODE", 1),
        ("DISCONNECT", 4),
        ("PING", 2),
        ("PONG", 10),
        ("R_GET_USERS", 2),
        ("S_ACCEPT", 2),
        ("S_BANDWIDTH_MODE_CHANGED", 2),
        ("S_CHAT", 2),
        ("S_ENTITY_DESTROY", 3),
        ("S_ENTITY_HEALTH", 2),
        ("S_ENTITY_MOVE", 2),
        ("S_ENTITY_MOVE_BATCH", 28),
        ("S_ENTITY_SPAWN", 8),
        ("S_GAME_START", 2),
        ("S_JOIN_LOBBY_RESPONSE", 2),
        ("S_LEVEL_ANNOUNCE", 2),
        ("S_LOBBY_LIST", 2),
        ("S_PLAYER_READY_STATE", 3),
        ("S_UPDATE_STATE", 2),
    ]
    .into_iter()
    .collect();
    assert_eq!(counts, expected);
    let mut compressed = Vec::new();
    for (i, d) in session.iter().enumerate() {
        let b = &d.bytes;
        assert_eq!(b[0], rtgp::MAGIC_BYTE, "frame {}", i + 1);
        // The header's payload size is the bytes after it (Connection::processPacket's check).
        let size = usize::from(u16::from_be_bytes([b[2], b[3]]));
        assert_eq!(size, b.len() - rtgp::HEADER_SIZE, "frame {}", i + 1);
        assert_eq!(&b[13..16], &[0, 0, 0], "frame {}", i + 1);
        if b[12] & rtgp::flags::COMPRESSED != 0 {
            // An LZ4 frame: magic, FLG, BD, content size, HC; one block; the end mark.
            let f = &b[16..];
            assert_eq!(&f[..4], &0x184D_2204u32.to_le_bytes());
            let content = u64::from_le_bytes(f[6..14].try_into().unwrap()) as usize;
            assert_eq!(f[14], ((rtgp::xxh32(&f[4..14], 0) >> 8) & 0xFF) as u8);
            let block = u32::from_le_bytes(f[15..19].try_into().unwrap()) as usize;
            assert_eq!(block & 0x8000_0000, 0);
            let plain = lz4_flex::block::decompress(&f[19..19 + block], content).unwrap();
            assert_eq!(plain.len(), content);
            assert_eq!(&f[19 + block..], &[0, 0, 0, 0]);
            compressed.push((i as u64 + 1, d.name().unwrap(), content));
        }
    }
    // The payloads of 64 bytes or more that LZ4 shrinks: the level announce (3 × 32 bytes) to
    // each client, the chat line (4 + 256 bytes) from A and to each client.
    assert_eq!(
        compressed.iter().map(|c| (c.1, c.2)).collect::<Vec<_>>(),
        [
            ("S_LEVEL_ANNOUNCE", 96),
            ("S_LEVEL_ANNOUNCE", 96),
            ("C_CHAT", 260),
            ("S_CHAT", 260),
            ("S_CHAT", 260),
        ]
    );
}

/// XXH32 against the reference values (the LZ4 frame's header checksum depends on it).
#[test]
fn xxh32_is_the_reference() {
    assert_eq!(rtgp::xxh32(b"", 0), 0x02CC_5D05);
    assert_eq!(rtgp::xxh32(b"a", 0), 0x550D_7456);
    assert_eq!(rtgp::xxh32(b"abc", 0), 0x32D1_53FF);
    assert_eq!(
        rtgp::xxh32(b"Nobody inspects the spammish repetition", 0),
        0xE229_3B2F
    );
}

#[test]
fn the_committed_sample_is_the_encoders() {
    let bytes = rtgp::pcap(&rtgp::session());
    if std::env::var_os("RTYPE_BLESS").is_some() {
        std::fs::write(SAMPLE, &bytes).unwrap();
    }
    assert!(
        std::fs::read(SAMPLE).unwrap() == bytes,
        "{SAMPLE} is not the encoder's session: RTYPE_BLESS=1 cargo test --test dialect_example rewrites it"
    );
}

/// docs/describe-your-protocol.md makes the two faulty captures with `dd` at these offsets of the
/// committed sample: they are the encoder's.
#[test]
fn the_tutorials_dd_offsets_make_the_encoders_faults() {
    let sample = std::fs::read(SAMPLE).unwrap();
    let mut length = sample.clone();
    length[7135..7137].copy_from_slice(&[0x00, 0x12]);
    assert!(length == rtgp::pcap(&rtgp::with_wrong_length().0));
    let mut unknown = sample;
    unknown[10948] = 0x7E;
    assert!(unknown == rtgp::pcap(&rtgp::with_unknown_type().0));
}

#[test]
fn dialect_check_passes_the_clean_session() {
    let cap = capture("clean", &rtgp::session());
    let (code, out, err) = run(&["dialect", "check", DIALECT, &cap]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("rtgp."), "{out}");
}

/// The tutorial's two broken captures, checked: the output is exactly what the tutorial shows
/// (so the tutorial cannot drift), and each names the fault's frame and rule.
#[test]
fn dialect_check_names_the_frame_and_rule_of_each_fault() {
    let tutorial = std::fs::read_to_string("docs/describe-your-protocol.md").unwrap();
    let (wrong_length, frame) = rtgp::with_wrong_length();
    let (unknown_type, frame2) = rtgp::with_unknown_type();
    let here = dir("tutorial");
    for (name, datagrams, frame, rule) in [
        ("bad-length.pcap", wrong_length, frame, "rtgp.length"),
        ("bad-type.pcap", unknown_type, frame2, "rtgp.unknown-type"),
    ] {
        rtgp::write_capture(&here.join(name), &datagrams);
        let description = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(DIALECT);
        let (code, out, err) = bin::run_in(
            &here,
            &["dialect", "check", description.to_str().unwrap(), name],
        );
        assert_eq!(code, 1, "{name}: {out}{err}");
        assert!(
            names_fault(&out, frame, rule),
            "{name}: no line names frame {frame} and {rule}:\n{out}"
        );
        let shown = format!("$ rtype-inspect dialect check {DIALECT} {name}\n{out}");
        assert!(
            tutorial.contains(&shown),
            "the tutorial does not show:\n{shown}"
        );
    }
    // RTGP has no checksum, so no checksum fault.
}

#[test]
fn dialect_packets_names_every_datagram_as_the_project_does() {
    let session = rtgp::session();
    let cap = capture("packets", &session);
    let (code, out, err) = run(&["dialect", "packets", DIALECT, &cap, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let records: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .filter(|r: &Value| r["kind"] == "datagram")
        .collect();
    for r in &records {
        assert_eq!(r["dialect"], "rtgp", "{r}");
    }
    let got: Vec<(u64, &str)> = records
        .iter()
        .map(|r| {
            (
                r["frame"].as_u64().unwrap(),
                r["name"].as_str().unwrap_or_else(|| panic!("no name: {r}")),
            )
        })
        .collect();
    let expected: Vec<(u64, &str)> = session
        .iter()
        .enumerate()
        .map(|(i, d)| (i as u64 + 1, d.name().unwrap()))
        .collect();
    assert_eq!(got, expected);
}

/// The description drives every command, not only `dialect`: with `--dialect` (or `dialects`
/// in the configuration) the summary, `check`, `packets` and `export` recognise RTGP, name its
/// messages and judge it under its own rules, and the configuration may allow them.
#[test]
fn every_command_reads_the_described_dialect() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let description = root.join(DIALECT);
    let description = description.to_str().unwrap();
    let here = dir("every-command");
    let (datagrams, frame) = rtgp::with_wrong_length();
    rtgp::write_capture(&here.join("bad-length.pcap"), &datagrams);

    let (code, out, err) = bin::run_in(
        &here,
        &["check", "--dialect", description, "bad-length.pcap"],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains(
            "│ rtgp.length                    ┆ error    ┆ 1     ┆ fail          ┆ 88     │"
        ),
        "{out}"
    );
    assert_eq!(frame, 88);

    let (code, out, err) = bin::run_in(
        &here,
        &[
            "packets",
            "--dialect",
            description,
            "bad-length.pcap",
            "--frames",
            "88",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "     88   4.451380 #2   S→C rtgp     30 S_ENTITY_SPAWN seq=16 entity_id=100 entity_type=bydos (1) sub_type=1 pos_x=1900 pos_y=250 entity=100 [rtgp.length(rtgp.header.payload_size)]\n"
    );

    let (code, out, err) = bin::run_in(
        &here,
        &["export", "--dialect", description, "bad-length.pcap"],
    );
    assert_eq!(code, 0, "{err}");
    let record: Value = out
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["frame"] == 88)
        .unwrap();
    assert_eq!(record["dialect"], "rtgp");
    assert_eq!(record["name"], "S_ENTITY_SPAWN");
    assert_eq!(
        record["fields"],
        serde_json::json!({"entity_id": 100, "entity_type": 1, "sub_type": 1, "pos_x": 1900.0, "pos_y": 250.0})
    );
    assert_eq!(record["header"]["payload_size"], 18);
    assert_eq!(record["violations"][0]["id"], "rtgp.length");

    // The configuration names the description; its `allow` may then name the description's rules.
    std::fs::write(
        here.join("rtype-inspect.toml"),
        format!("dialects = [{description:?}]\nallow = [\"rtgp.length\"]\n"),
    )
    .unwrap();
    let (code, out, err) = bin::run_in(&here, &["check", "bad-length.pcap"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = bin::run_in(&here, &["bad-length.pcap", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let summary: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["counts"]["datagrams"], DATAGRAMS as u64, "{out}");
}

/// Without the description, RTGP is other UDP: nothing is judged, and a CI gate does not pass.
#[test]
fn without_the_description_rtgp_is_not_judged() {
    let (code, out, err) = run(&["check", SAMPLE]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("capture.no-datagrams"), "{out}");
}

/// A described dialect's sessions are analysed by its messages' roles, as the bundled ones':
/// `stats` shows each client's handshake under the description's names, and pairs a PONG with
/// the PING whose sequence its header's `ack` names (the project's server also PONGs every
/// reliable packet, so the others are pongs without a ping).
#[test]
fn stats_follows_the_described_sessions_by_role() {
    let (code, out, err) = run(&["stats", "--dialect", DIALECT, SAMPLE, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let stats: Value = serde_json::from_str(&out).unwrap();
    let conversations = stats["conversations"].as_array().unwrap();
    // Per conversation: id, handshake outcome, steps (name, frame), pings, pairs, unmatched pongs.
    type Seen<'a> = (u64, &'a str, Vec<(&'a str, u64)>, u64, u64, u64);
    let seen: Vec<Seen> = conversations
        .iter()
        .map(|c| {
            let steps = c["handshake"]["steps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| (s["step"].as_str().unwrap(), s["frame"].as_u64().unwrap()))
                .collect();
            let rtt = &c["rtt_ms"];
            (
                c["id"].as_u64().unwrap(),
                c["handshake"]["outcome"].as_str().unwrap(),
                steps,
                rtt["pings"].as_u64().unwrap(),
                rtt["pairs"].as_u64().unwrap(),
                rtt["unmatched_pongs"].as_u64().unwrap(),
            )
        })
        .collect();
    let client = |id, frames: [u64; 7]| {
        let names = [
            "C_CONNECT",
            "S_ACCEPT",
            "C_JOIN_LOBBY",
            "C_READY",
            "S_GAME_START",
        ];
        let names = names.into_iter().chain(["DISCONNECT"; 2]);
        (id, "accepted", names.zip(frames).collect(), 1, 1, 4)
    };
    // The lobby servers' conversations (one request, one list each) take no handshake step.
    let lobby = |id| (id, "none", vec![], 0, 0, 0);
    let expected = vec![
        lobby(1),
        client(2, [3, 4, 7, 15, 42, 174, 176]),
        lobby(3),
        client(4, [22, 23, 26, 34, 44, 180, 182]),
    ];
    assert_eq!(seen, expected, "{out}");
    assert_eq!(conversations[1]["rtt_ms"]["p50"], 0.15);
}

/// The schema docs/schemas/`name`.schema.json holds (generated from the report types by the docs
/// test).
fn validator(name: &str) -> jsonschema::Validator {
    let path = format!(
        "{}/docs/schemas/{name}.schema.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

fn assert_follows(validator: &jsonschema::Validator, name: &str, doc: &Value) {
    let errors: Vec<String> = validator.iter_errors(doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{name}: {errors:?}\n{doc}");
}

/// `dialect check`, `packets` (each line) and `fields` as JSON follow their schemas, on the
/// sample and on a capture with a fault (a finding in each document).
#[test]
fn dialect_json_documents_follow_their_schemas() {
    let (wrong_length, _) = rtgp::with_wrong_length();
    let faulty = capture("schemas", &wrong_length);
    let (check, packets) = (validator("dialect-check"), validator("dialect-packets"));
    for (cap, expected) in [(SAMPLE, 0), (faulty.as_str(), 1)] {
        let (code, out, err) = run(&["dialect", "check", DIALECT, cap, "--format", "json"]);
        assert_eq!(code, expected, "{cap}: {err}");
        let doc: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(doc["findings"].as_array().unwrap().is_empty(), code == 0);
        assert_follows(&check, "dialect-check", &doc);
        let (code, out, err) = run(&["dialect", "packets", DIALECT, cap, "--format", "json"]);
        assert_eq!(code, 0, "{cap}: {err}");
        assert!(out.lines().count() > 100, "{cap}");
        for line in out.lines() {
            let record: Value = serde_json::from_str(line).unwrap();
            assert_follows(&packets, "dialect-packets", &record);
        }
    }
    let (code, out, err) = run(&["dialect", "fields", DIALECT, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert!(!doc["fields"].as_array().unwrap().is_empty());
    assert_follows(&validator("dialect-fields"), "dialect-fields", &doc);
}
