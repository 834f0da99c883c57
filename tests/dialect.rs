//! Dialect descriptions end to end: `dialect new`'s template decodes hand-built datagrams with
//! exact findings at exact offsets; a hostile description is refused with its line, column and
//! nearest name, within the limits SECURITY.md gives; `dialect ksy` exports the layout.

use std::path::PathBuf;

#[path = "support/bin.rs"]
mod bin;
#[path = "support/datagrams.rs"]
mod datagrams;
#[path = "support/template.rs"]
mod template;
use bin::run;
use template::{entity, mg};

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dialect");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The template file and a capture of its dialect with one fault per frame from frame 5 on,
/// written once: the tests run in parallel and must not read a file another is rewriting.
fn template_capture() -> (PathBuf, PathBuf) {
    static FILES: std::sync::OnceLock<(PathBuf, PathBuf)> = std::sync::OnceLock::new();
    FILES.get_or_init(write_template_capture).clone()
}

fn write_template_capture() -> (PathBuf, PathBuf) {
    let description = scratch("template.yaml");
    let (code, _, err) = run(&["dialect", "new", "-o", description.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let mut name = b"alice".to_vec();
    name.resize(16, 0);
    let mut snapshot = 100u32.to_le_bytes().to_vec();
    snapshot.push(2);
    snapshot.extend(entity(1, 1, -125, 300, Some(3)));
    snapshot.extend(entity(2, 9, 0, 0, None));
    let mut bad_crc = mg(0x20, 5, &7u64.to_le_bytes(), None);
    let last = bad_crc.len() - 1;
    bad_crc[last] ^= 0xFF;
    // The size field says 10 bytes; the body has 8.
    let long = mg(0x20, 6, &8u64.to_le_bytes(), Some(10));
    let (c, s) = (50_000u16, 4242u16);
    let packets = vec![
        (c, s, mg(0x01, 1, &name, None)),
        (s, c, mg(0x02, 1, &[7], None)),
        (s, c, mg(0x10, 2, &snapshot, None)),
        (c, s, mg(0x20, 3, &123_456_789u64.to_le_bytes(), None)),
        (c, s, bad_crc),
        (c, s, long),
        (c, s, mg(0x7F, 7, &[], None)),
        (c, s, b"MG\x20\x08\x00".to_vec()),
        (c, 53, b"not ours at all".to_vec()),
    ];
    let capture = scratch("template.pcap");
    datagrams::write_pcap(&capture, &packets);
    (description, capture)
}

#[test]
fn the_template_decodes_with_exact_findings() {
    let (description, capture) = template_capture();
    let (d, c) = (description.to_str().unwrap(), capture.to_str().unwrap());
    let (code, out, err) = run(&["dialect", "check", d, c]);
    assert_eq!(code, 1, "{err}");
    let expected = format!(
        "frame 2: mygame.valid error at byte 7: mygame.welcome.player_id: expected >= 1 and <= 4, found 7
frame 3: mygame.enum warning at byte 27: mygame.snapshot.entities.kind: expected a value of enum `kind`, found 9
frame 5: mygame.crc.mismatch error at byte 15: mygame.footer.crc: expected {:#x}, found {:#x}
frame 6: mygame.length error at byte 5: mygame.header.size: expected 10 bytes, found 8 bytes
frame 7: mygame.unknown-type error at byte 2: mygame.header.type: expected a message type the description names, found 0x7f
frame 8: mygame.truncated error at byte 5: mygame.header.size: expected 2 bytes, found 0
{c}: 8 datagrams of mygame in 9 frames: 2 decoded cleanly, 6 with findings (5 errors, 1 warning)
",
        crc32fast::hash(&mg(0x20, 5, &7u64.to_le_bytes(), None)[..15]),
        crc32fast::hash(&mg(0x20, 5, &7u64.to_le_bytes(), None)[..15]) ^ 0xFF00_0000,
    );
    assert_eq!(out, expected);
}

#[test]
fn packets_list_one_line_per_datagram_and_every_field_as_json() {
    let (description, capture) = template_capture();
    let (d, c) = (description.to_str().unwrap(), capture.to_str().unwrap());
    let (code, out, err) = run(&["dialect", "packets", d, c]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 8, "{out}");
    assert!(lines[0].ends_with("HELLO name=\"alice\""), "{}", lines[0]);
    assert!(
        lines[2].ends_with("SNAPSHOT tick=100 count=2 [mygame.enum]"),
        "{}",
        lines[2]
    );
    assert!(
        lines[6].ends_with("unknown 0x7f [mygame.unknown-type]"),
        "{}",
        lines[6]
    );

    let (code, out, err) = run(&["dialect", "packets", d, c, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let records: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 8);
    let snapshot = &records[2];
    assert_eq!(snapshot["name"], "SNAPSHOT");
    assert_eq!(
        snapshot["fields"],
        serde_json::json!({
            "tick": 100,
            "count": 2,
            "entities": [
                {"id": 1, "kind": 1, "x": -12.5, "y": 30.0, "has_health": 1, "reserved": 0, "health": 3},
                {"id": 2, "kind": 9, "x": 0.0, "y": 0.0, "has_health": 0, "reserved": 0}
            ]
        })
    );
    assert_eq!(
        snapshot["header"],
        serde_json::json!({"magic": "4d47", "type": 16, "seq": 2, "size": 26})
    );
    assert_eq!(records[2]["direction"], "server_to_client");
    assert_eq!(records[4]["violations"][0]["id"], "mygame.crc.mismatch");
    assert_eq!(records[4]["violations"][0]["section"], "2.3");
}

/// A description's errors, each placed at its line and column, with the nearest name.
#[test]
fn hostile_descriptions_are_refused_where_they_go_wrong() {
    let template = rtype_inspect::describe::TEMPLATE;
    let cases: Vec<(String, &str)> = vec![
        (template.replace("    role: message-type", "    role: mesage-type"),
            ":20:11: `mesage-type` is not a field role; did you mean message-type?"),
        (template.replace("repeat-expr: count", "repeat-expr: cuont"),
            ":71:22: no field is named `cuont`"),
        (template.replace("type: entity", "type: entiy"),
            ":69:15: `entiy` is not a type; did you mean entity?"),
        (template.replace("  length: {", "  lenght: {"),
            ":29:3: `lenght` is not a key of framing; did you mean length?"),
        (template.replace("enum: kind,", "enum: kin,"),
            ":84:37: no enum is named `kin`; did you mean kind?"),
        (template.replace("meta:\n  id: mygame", "meta:\n  id: MyGame"),
            ":6:7: meta.id `MyGame` must be lowercase letters, digits and `_`, starting with a letter or `_`"),
        (template.replace("  magic: [0x4D, 0x47]         #", "  magic: [0x4D, 0x147]        #"),
            ":12:17: detect.magic: each byte must be an integer from 0 to 255"),
        ("meta: {id: x}\ndetect: {ports: [1]}\nheader: [{id: t, type: u1, role: message-type}]\nmessages: {1: {id: a, seq: [{id: b, type: t2}]}}\ntypes: {t2: {seq: [{id: c, type: t2}]}}\n".into(),
            ":5:9: type `t2` contains itself or nests deeper than 8 types"),
        ("a: &x 1\nb: *x\n".into(), ":2:4: aliases (*name) are not accepted in a description"),
        (format!("meta: {}", "[".repeat(40)), ":1:"),
        ("meta: {id: x}\ndetect: {}\nheader: []\nmessages: {}\n".into(),
            ":2:9: detect needs a `magic`, `ports`, or both: without either, every UDP datagram would be claimed"),
    ];
    for (i, (text, expected)) in cases.iter().enumerate() {
        let path = scratch(&format!("hostile-{i}.yaml"));
        std::fs::write(&path, text).unwrap();
        let (code, out, err) = run(&["dialect", "fields", path.to_str().unwrap()]);
        assert_eq!((code, out.as_str()), (2, ""), "case {i}: {err}");
        let shown = format!("{}{expected}", path.display());
        assert!(err.contains(&shown), "case {i}: {err}\nwanted {shown}");
    }
}

/// SECURITY.md's limits on descriptions, each measured.
#[test]
fn description_limits_hold() {
    use rtype_inspect::describe::{yaml, Described};
    // Size.
    let big = format!("# {}\n", "x".repeat(yaml::MAX_BYTES));
    let path = scratch("big.yaml");
    std::fs::write(&path, &big).unwrap();
    let err = Described::open(&path).err().unwrap();
    assert!(
        err.ends_with("the description is larger than 1048576 bytes"),
        "{err}"
    );
    // Nodes.
    let many = format!("a: [{}]\n", vec!["1"; yaml::MAX_NODES + 1].join(","));
    let err = Described::from_text("f", &many).err().unwrap();
    assert!(err.contains("more than 100000 YAML nodes"), "{err}");
    // Nesting.
    let deep = format!("{}1{}", "[".repeat(33), "]".repeat(33));
    let err = Described::from_text("f", &deep).err().unwrap();
    assert!(err.contains("nested deeper than 32 levels"), "{err}");
    // Descriptions per run.
    let one = scratch("one.yaml");
    std::fs::write(&one, rtype_inspect::describe::TEMPLATE).unwrap();
    let mut args = Vec::new();
    for _ in 0..17 {
        args.extend(["--dialect", one.to_str().unwrap()]);
    }
    args.push("fields");
    let (code, _, err) = run(&args);
    assert_eq!(
        (code, err.as_str()),
        (2, "rtype-inspect: at most 16 dialect descriptions\n")
    );
    // Registered fields: a type used 3 times in a type used 3 times ... 9 deep would be 3^9.
    let mut types = String::new();
    for level in 0..8 {
        let inner = format!("t{}", level + 1);
        types.push_str(&format!(
            "  t{level}: {{seq: [{{id: a, type: {inner}}}, {{id: b, type: {inner}}}, {{id: c, type: {inner}}}]}}\n"
        ));
    }
    types.push_str("  t8: {seq: [{id: v, type: u1}]}\n");
    let wide = format!(
        "meta: {{id: x}}\ndetect: {{ports: [1]}}\nheader: [{{id: t, type: u1, role: message-type}}]\nmessages: {{1: {{id: m, seq: [{{id: w, type: t0}}]}}}}\ntypes:\n{types}"
    );
    let err = Described::from_text("f", &wide).err().unwrap();
    assert_eq!(err, "f: the description defines more than 10000 filter fields (a type used in many places counts once per place)");
    // Repeats: a count over the limit is a finding, not a loop.
    let text = "meta: {id: x}\ndetect: {ports: [1]}\nheader: [{id: t, type: u1, role: message-type}, {id: n, type: u4}]\nmessages: {1: {id: m, seq: [{id: v, type: u1, repeat: expr, repeat-expr: n}]}}\n";
    let d = Described::from_text("f", text).unwrap();
    let mut out = rtype_inspect::describe::decode::Decoded::default();
    let mut datagram = vec![1u8];
    datagram.extend(100_000u32.to_le_bytes());
    rtype_inspect::describe::decode::decode(&d.description, &d.names, &datagram, None, &mut out);
    assert_eq!(out.problems.len(), 1);
    assert_eq!(
        (
            out.problems[0].expected.as_str(),
            out.problems[0].found.as_str()
        ),
        ("a count from 0 to 65536", "100000")
    );
    // A count within the limit reads only what is there.
    datagram[1..5].copy_from_slice(&60_000u32.to_le_bytes());
    datagram.extend([7; 10]);
    rtype_inspect::describe::decode::decode(&d.description, &d.names, &datagram, None, &mut out);
    assert_eq!(out.items.len(), 2 + 10);
    assert_eq!(out.problems[0].found, "0");
}

#[test]
fn ksy_exports_the_layout() {
    let (description, _) = template_capture();
    let (code, out, err) = run(&["dialect", "ksy", description.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    for expected in [
        "meta:\n  id: mygame\n",
        "  - id: body\n    size: header.size\n    type:\n      switch-on: header.type\n      cases:\n        1: msg_hello\n        2: msg_welcome\n        16: msg_snapshot\n        32: msg_ping\n",
        "      - id: entities\n        type: entity\n        repeat: expr\n        repeat-expr: count\n",
        "      - id: health\n        type: u1\n        if: \"(has_health == 1)\"\n",
        "enums:\n  kind:\n    1: player\n    2: enemy\n    3: bullet\n",
    ] {
        assert!(out.contains(expected), "{expected}\nnot in\n{out}");
    }
}

mod hostile {
    use proptest::prelude::*;
    use rtype_inspect::describe::decode::{decode, Decoded};
    use rtype_inspect::describe::Described;

    /// The descriptions the mutations start from: the template and the public project's.
    fn seeds() -> Vec<String> {
        vec![
            rtype_inspect::describe::TEMPLATE.to_string(),
            std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/examples/dialects/rtgp.yaml"
            ))
            .unwrap(),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(256),
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// A description with bytes replaced, inserted or cut anywhere loads or is refused with
        /// a placed error, never a panic; one that loads decodes random datagrams without panic,
        /// and no more items than the limit.
        #[test]
        fn mutated_descriptions_and_datagrams_never_panic(
            seed in 0usize..2,
            edits in proptest::collection::vec((any::<u16>(), any::<u8>(), 0u8..3), 1..8),
            datagrams in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 1..16),
        ) {
            let mut text = seeds()[seed].clone().into_bytes();
            for (at, byte, how) in edits {
                let at = usize::from(at) % (text.len() + 1);
                match how {
                    0 if at < text.len() => text[at] = byte,
                    1 => text.insert(at, byte),
                    _ => text.truncate(at.max(1)),
                }
            }
            let text = String::from_utf8_lossy(&text);
            match Described::from_text("mutated.yaml", &text) {
                Err(e) => prop_assert!(e.starts_with("mutated.yaml"), "{e}"),
                Ok(d) => {
                    let mut out = Decoded::default();
                    for mut bytes in datagrams {
                        // Give half of them the magic, so that they get past it.
                        if bytes.first().is_some_and(|b| b % 2 == 0) {
                            let magic = d.description.magic.clone();
                            bytes.splice(0..0, magic);
                        }
                        decode(&d.description, &d.names, &bytes, Some(true), &mut out);
                        prop_assert!(out.items.len() <= rtype_inspect::describe::decode::MAX_ITEMS);
                    }
                }
            }
        }
    }
}
