//! `entity` and `world` on the real 17-byte capture: entity 68 through each of its lives (the
//! values checked by hand against `packets -V`), and the world at chosen times against a world
//! rebuilt here from export's records, independently of the tool's world code.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

#[path = "support/faults.rs"]
mod faults;

const BIN: &str = env!("CARGO_BIN_EXE_rtype-inspect");
const REAL: &str = "tests/fixtures/reference-17byte-1client.pcap";
const RT: &str = "tests/fixtures/rt-two-players.pcap";
const RTNP: &str = "tests/fixtures/rtnp-solo.pcap";

fn ok(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn json(args: &[&str]) -> Value {
    serde_json::from_str(&ok(args)).unwrap()
}

fn assert_follows(name: &str, doc: &Value) {
    let path = format!("docs/schemas/{name}.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{name}: {errors:?}");
}

/// The events of entity 68 in the capture's one conversation.
fn events_of_68(extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["entity", REAL, "68", "--format", "json"];
    args.extend(extra);
    let doc = json(&args);
    assert_follows("entity", &doc);
    assert_eq!(doc["schema"], "entity/1");
    assert_eq!(doc["profile"], "reference-17byte", "the layout is found");
    let conversations = doc["conversations"].as_array().unwrap();
    assert_eq!(conversations.len(), 1);
    conversations[0]["events"].as_array().unwrap().clone()
}

fn event_at(events: &[Value], frame: u64) -> &Value {
    events
        .iter()
        .find(|e| e["frame"] == frame)
        .unwrap_or_else(|| panic!("no event at frame {frame}"))
}

#[test]
fn entity_68_is_followed_through_each_of_its_lives() {
    let events = events_of_68(&[]);
    let lifecycle: Vec<(u64, &str, u64)> = events
        .iter()
        .filter(|e| !e["event"].as_str().unwrap().starts_with("update"))
        .map(|e| {
            let frame = e["frame"].as_u64().unwrap();
            (
                frame,
                e["event"].as_str().unwrap(),
                e["life"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        lifecycle,
        [
            (523, "spawn", 1),
            (975, "destroy", 1),
            (978, "destroy-again", 1),
            (982, "spawn", 2),
            (1461, "destroy", 2),
            // The update at 1465 after the destroy, as `check` reports it.
            (1465, "finding", 2),
            (1720, "destroy-again", 2),
            (1725, "destroy-again", 2),
            (1895, "spawn", 3),
            (2014, "destroy", 3),
            (2243, "spawn", 4),
            (2645, "destroy", 4),
            (2647, "destroy-again", 4),
            (2808, "spawn", 5),
        ]
    );
    // Each spawn's values, as `packets -V --frames N` shows them (f32 on the wire).
    let spawns = [
        (523, 126.011024, 705.0),
        (982, 8.333334, 487.14816),
        (1895, 284.51797, -9668.274),
        (2243, 8.333334, 255.98183),
        (2808, 410.70285, 145.8512),
    ];
    for (frame, x, y) in spawns {
        let e = event_at(&events, frame);
        assert_eq!(e["message"], "SERVER_ENTITY_SPAWN");
        assert_eq!(e["tick"], 0, "the spawns' header tick");
        assert_eq!(e["type_name"], "bullet");
        let changed = &e["changed"];
        assert_eq!(changed["entity_type"], 3, "{frame}");
        assert_eq!(changed["pos_x"].as_f64(), Some(x), "{frame}");
        assert_eq!(changed["pos_y"].as_f64(), Some(y), "{frame}");
    }
    // The first updates: the snapshot at 524 gives the i16 × 10 position (126, not the spawn's
    // 126.011024) and the velocity; 526 moves it by 8.3.
    let first = event_at(&events, 524);
    assert_eq!(first["event"], "update");
    assert_eq!(first["tick"], 324);
    assert_eq!(first["gap_s"], 0.000113);
    assert_eq!(
        first["changed"],
        serde_json::json!({"pos_x": 126, "vel_x": 500, "vel_y": 0})
    );
    let second = event_at(&events, 526);
    assert_eq!(second["changed"], serde_json::json!({"pos_x": 134.3}));
    assert_eq!(second["gap_s"], 0.016623);
    // The update after the destroy at 1461: no spawn between, another entity type (16, the
    // player_death archetype), 16.867 ms after the snapshot at 1459.
    let after = event_at(&events, 1465);
    assert_eq!(after["event"], "update-after-destroy");
    assert_eq!(after["life"], 2);
    assert_eq!(after["tick"], 565);
    assert_eq!(after["gap_s"], 0.016867);
    assert_eq!(
        after["changed"],
        serde_json::json!({"entity_type": 16, "pos_x": 358.2, "pos_y": 373.3})
    );
    // The chunked full state at 1552 still names it, with the same values.
    let chunk = event_at(&events, 1552);
    assert_eq!(chunk["event"], "update-after-destroy");
    assert_eq!(chunk["message"], "SERVER_SNAPSHOT_CHUNK");
    assert_eq!(chunk["changed"], serde_json::json!({}));
}

#[test]
fn entity_text_is_a_line_per_event() {
    let text = ok(&["entity", REAL, "68"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "Entity 68 in conversation #1 (127.0.0.1:41000 ↔ 127.0.0.1:50010): 5 lives, 479 updates, 8 destroys"
    );
    assert_eq!(lines.len(), 2 + events_of_68(&[]).len());
    let line = |frame: &str| {
        *lines
            .iter()
            .find(|l| l.split_whitespace().next() == Some(frame))
            .unwrap()
    };
    assert_eq!(
        line("523"),
        // Floats as tshark writes them: %g at the field's precision (f32: 6 digits).
        "    523   3.772622       0  spawn #1                          entity_type=3 (bullet)  pos_x=126.011  pos_y=705"
    );
    assert_eq!(line("978"), "    978   5.772910       0  destroy-again");
    assert_eq!(
        line("1465"),
        "   1465   7.790041     565  update-after-destroy   16.867 ms  entity_type=16 (bullet)  pos_x=358.2  pos_y=373.3"
    );
}

#[test]
fn a_display_filter_lists_only_the_updates_that_pass() {
    let all = events_of_68(&[]);
    let filtered = events_of_68(&["-Y", "frame.number == 1465 || frame.number == 975"]);
    let kept: Vec<&Value> = all
        .iter()
        .filter(|e| !e["event"].as_str().unwrap().starts_with("update") || e["frame"] == 1465)
        .collect();
    assert_eq!(filtered.iter().collect::<Vec<_>>(), kept);
    // The values changed are the world's, whatever the filter shows.
    assert_eq!(event_at(&filtered, 1465), event_at(&all, 1465));
}

#[test]
fn entity_follows_the_rt_dialect() {
    let doc = json(&[
        "entity",
        RT,
        "10012",
        "--conversation",
        "2",
        "--format",
        "json",
    ]);
    assert_follows("entity", &doc);
    let conversations = doc["conversations"].as_array().unwrap();
    assert_eq!(conversations.len(), 1);
    assert_eq!(conversations[0]["id"], 2);
    let events = conversations[0]["events"].as_array().unwrap();
    let spawn = &events[0];
    assert_eq!(spawn["frame"], 1131);
    assert_eq!(spawn["event"], "spawn");
    assert_eq!(spawn["type_name"], "enemy");
    assert_eq!(spawn["tick"], Value::Null);
    assert_eq!(spawn["changed"]["position_x"], 1939);
    // The transform snapshot's position is the spawn's: only rotation and scale are new.
    assert_eq!(
        events[1]["changed"],
        serde_json::json!({"rotation": 0, "scale": 1000})
    );
}

/// What a client holds of one entity, rebuilt from export's records.
#[derive(Debug, Default, Clone, PartialEq)]
struct Held {
    type_id: Option<u64>,
    values: BTreeMap<String, f64>,
    last_frame: u64,
    destroyed_at: Option<f64>,
}

/// The world at `at` seconds, from export's datagram records: a spawn starts a life; a destroy
/// ends it; an update changes the fields it carries, of a life alive, or starts one when the id
/// is unknown or was destroyed more than 10 s before (a later update of a destroyed life changes
/// nothing the client holds).
fn world_from_export(records: &str, at: f64) -> BTreeMap<u64, Held> {
    const KEYS: [&str; 5] = ["pos_x", "pos_y", "vel_x", "vel_y", "health"];
    let mut lives: BTreeMap<u64, Held> = BTreeMap::new();
    for line in records.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        if r["kind"] != "datagram" || r["time_rel"].as_f64().unwrap() > at {
            continue;
        }
        let (time, frame, fields) = (
            r["time_rel"].as_f64().unwrap(),
            r["frame"].as_u64().unwrap(),
            &r["fields"],
        );
        let take = |held: &mut Held, fields: &Value| {
            if let Some(t) = fields["entity_type"].as_u64() {
                held.type_id = Some(t);
            }
            for key in KEYS {
                if let Some(v) = fields[key].as_f64() {
                    held.values.insert(key.to_string(), v);
                }
            }
            held.last_frame = frame;
        };
        match r["name"].as_str().unwrap() {
            "SERVER_ENTITY_SPAWN" => {
                let mut held = Held::default();
                take(&mut held, fields);
                lives.insert(fields["entity_id"].as_u64().unwrap(), held);
            }
            "SERVER_ENTITY_DESTROYED" => {
                let id = fields["entity_id"].as_u64().unwrap();
                if let Some(held) = lives.get_mut(&id) {
                    held.destroyed_at.get_or_insert(time);
                }
            }
            "SERVER_SNAPSHOT" | "SERVER_SNAPSHOT_CHUNK" => {
                for e in fields["entities"].as_array().unwrap() {
                    let id = e["id"].as_u64().unwrap();
                    let held = lives.entry(id).or_default();
                    match held.destroyed_at {
                        Some(d) if time - d > 10.0 => {
                            *held = Held::default();
                            take(held, e);
                        }
                        Some(_) => {}
                        None => take(held, e),
                    }
                }
            }
            _ => {}
        }
    }
    lives.retain(|_, h| h.destroyed_at.is_none());
    lives
}

#[test]
fn world_at_a_time_agrees_with_the_export() {
    let records = ok(&["export", REAL]);
    for at in [0.5, 2.0, 3.8, 5.7725, 7.79, 8.05, 8.9, 10.0, 12.8395, 14.9] {
        let doc = json(&["world", REAL, "--at", &at.to_string(), "--format", "json"]);
        assert_follows("world", &doc);
        let conversations = doc["conversations"].as_array().unwrap();
        assert_eq!(conversations.len(), 1);
        let expected = world_from_export(&records, at);
        let entities = conversations[0]["entities"].as_array().unwrap();
        let ids: Vec<u64> = entities.iter().map(|e| e["id"].as_u64().unwrap()).collect();
        assert_eq!(ids, expected.keys().copied().collect::<Vec<_>>(), "at {at}");
        assert!(!ids.is_empty() || at < 1.0, "at {at}");
        for e in entities {
            let held = &expected[&e["id"].as_u64().unwrap()];
            assert_eq!(e["type_id"].as_u64(), held.type_id, "at {at}: {e}");
            assert_eq!(e["last_frame"], held.last_frame, "at {at}: {e}");
            for key in ["pos_x", "pos_y", "vel_x", "vel_y", "health"] {
                assert_eq!(
                    e[key].as_f64(),
                    held.values.get(key).copied(),
                    "at {at} {key}: {e}"
                );
            }
            if e["type_id"] == 3 {
                assert_eq!(e["type_name"], "bullet");
            }
        }
    }
}

#[test]
fn world_text_names_the_time_and_the_entities() {
    let text = ok(&["world", REAL, "--at", "3.8"]);
    assert!(
        text.starts_with(&format!(
            "{REAL}: the world at 3.800000 s, as of frame 527 (3.789388 s)\n"
        )),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.starts_with("│ 68 "))
        .expect("entity 68 is held at 3.8 s");
    let cells: Vec<&str> = row.split(['│', '┆']).map(str::trim).collect();
    assert_eq!(
        cells[1..10],
        [
            "68",
            "bullet (3)",
            "134.3",
            "705",
            "500",
            "0",
            "-",
            "frame 526",
            "10.6 ms"
        ]
    );
}

#[test]
fn each_field_knows_when_it_last_changed() {
    let doc = json(&["world", REAL, "--at", "3.8", "--format", "json"]);
    let entities = doc["conversations"][0]["entities"].as_array().unwrap();
    let e68 = entities.iter().find(|e| e["id"] == 68).unwrap();
    let changed: Vec<(&str, f64, u64, u64)> = e68["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap(),
                f["value"].as_f64().unwrap(),
                f["changed_frame"].as_u64().unwrap(),
                f["changed_tick"].as_u64().unwrap(),
            )
        })
        .collect();
    // The spawn (frame 523, tick 0) set the position; the snapshot at 524 the velocity, and its
    // position y (705) changed nothing; 526 moved x.
    assert_eq!(
        changed,
        [
            ("pos_x", 134.3, 526, 325),
            ("pos_y", 705.0, 523, 0),
            ("vel_x", 500.0, 524, 324),
            ("vel_y", 0.0, 524, 324),
        ]
    );
}

/// The real rt capture's entities alive at the end, in each client's view.
const RT_ALIVE: [(&str, u64, &str); 2] = [
    (
        "session.entity-never-destroyed",
        3,
        "8 entities still alive at the end",
    ),
    (
        "session.entity-never-destroyed",
        94,
        "8 entities still alive at the end",
    ),
];

/// The entity findings (rule, frame, entity) of `pcap` with frames `lost` (numbers) left out,
/// from export's records; the pcap is written to a temporary file.
fn entity_findings(pcap: &str, lost: &[usize]) -> (std::path::PathBuf, Vec<(String, u64, String)>) {
    let bytes = std::fs::read(pcap).unwrap();
    let cut = faults::rewrite(&bytes, |index, frame| {
        if lost.contains(&(index + 1)) {
            vec![]
        } else {
            vec![frame.to_vec()]
        }
    });
    let name = format!(
        "rtype-inspect-entity-{}-{}-{}.pcap",
        std::process::id(),
        pcap.rsplit('/').next().unwrap(),
        lost.first().unwrap_or(&0)
    );
    let path = std::env::temp_dir().join(name);
    std::fs::write(&path, cut).unwrap();
    let records = ok(&["export", path.to_str().unwrap()]);
    let findings = records
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| {
            r["kind"] == "finding" && r["id"].as_str().unwrap().starts_with("session.entity")
        })
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_owned(),
                r["frame"].as_u64().unwrap(),
                r["detail"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    (path, findings)
}

fn owned(list: &[(&str, u64, &str)]) -> Vec<(String, u64, String)> {
    list.iter()
        .map(|(a, b, c)| (a.to_string(), *b, c.to_string()))
        .collect()
}

/// The real captures as recorded give no ghost and no unknown entity: only the one update
/// after a destroy (frame 1465) and the entities alive at the end.
#[test]
fn the_real_captures_hold_no_ghost_and_no_unknown_entity() {
    let (path, found) = entity_findings(REAL, &[]);
    std::fs::remove_file(path).unwrap();
    assert_eq!(
        found,
        owned(&[
            (
                "session.entity-after-destroy",
                1465,
                "entity 68 updated after its destruction"
            ),
            (
                "session.entity-never-destroyed",
                9,
                "103 entities still alive at the end"
            ),
        ])
    );
    // Read with the document's layout, which misreads every snapshot: the ids of misread
    // snapshots judge nothing, so no cascade of ghosts and unknown entities.
    let strict = Command::new(BIN)
        .args(["check", "--strict-layout", REAL, "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(strict.status.code(), Some(1));
    let strict = String::from_utf8(strict.stdout).unwrap();
    for rule in ["session.entity-ghost", "session.entity-unknown"] {
        assert!(!strict.contains(rule), "{rule}");
    }
    assert!(strict.contains("rtype.snapshot.unknown-entity-type"));
    let (path, found) = entity_findings(RT, &[]);
    std::fs::remove_file(path).unwrap();
    assert_eq!(found, owned(&RT_ALIVE));
}

/// Both ENTITY_DESTROYED of entity 19 lost (frames 1218 and 1220): the client holds it, and the
/// next full state (tick 520, its chunks at 1275 and 1276 once two frames are gone) leaves it
/// out: a ghost, listed by `entity` too. Its next spawn comes over the live entity.
#[test]
fn a_lost_destroy_leaves_a_ghost_the_next_full_state_shows() {
    let (path, found) = entity_findings(REAL, &[1218, 1220]);
    let events = json(&["entity", path.to_str().unwrap(), "19", "--format", "json"]);
    let text = ok(&["entity", path.to_str().unwrap(), "19"]);
    // The world at 7.2 s holds it as a ghost; at 8 s, it was spawned again (frame 1395).
    let ghosts = |at: &str| {
        let doc = json(&[
            "world",
            path.to_str().unwrap(),
            "--at",
            at,
            "--format",
            "json",
        ]);
        assert_follows("world", &doc);
        doc["conversations"][0]["ghosts"].clone()
    };
    assert_eq!(
        ghosts("7.2"),
        serde_json::json!([{"id": 19, "full_state_frame": 1276}])
    );
    assert_eq!(ghosts("8"), serde_json::json!([]));
    let world = ok(&["world", path.to_str().unwrap(), "--at", "7.2"]);
    assert_eq!(
        world.lines().last(),
        Some("Held, but not in the server's full state (session.entity-ghost): 19 (frame 1276)")
    );
    std::fs::remove_file(&path).unwrap();
    assert_follows("entity", &events);
    assert_eq!(
        found,
        owned(&[
            (
                "session.entity-ghost",
                1276,
                "entity 19 held, not in the server's full state"
            ),
            (
                "session.entity-spawned-twice",
                1395,
                "entity 19 spawned again while alive"
            ),
            (
                "session.entity-after-destroy",
                1463,
                "entity 68 updated after its destruction"
            ),
            (
                "session.entity-never-destroyed",
                9,
                "103 entities still alive at the end"
            ),
        ])
    );
    let findings: Vec<(u64, &str, &str)> = events["conversations"][0]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "finding")
        .map(|e| {
            (
                e["frame"].as_u64().unwrap(),
                e["finding"]["id"].as_str().unwrap(),
                e["message"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        findings,
        [
            (1276, "session.entity-ghost", "SERVER_SNAPSHOT_CHUNK"),
            (1395, "session.entity-spawned-twice", "SERVER_ENTITY_SPAWN"),
        ]
    );
    let line = text.lines().find(|l| l.contains("ghost")).unwrap();
    assert_eq!(
        line,
        "   1276   7.040266     520  finding                           session.entity-ghost: entity 19 held, not in the server's full state"
    );
}

/// The spawn of entity 1 lost (frame 267): the snapshot at that place updates an entity the
/// client was never given. rt the same: the spawn of entity 10001 to the first client lost
/// (frame 96).
#[test]
fn a_lost_spawn_makes_an_update_of_an_unknown_entity() {
    let (path, found) = entity_findings(REAL, &[267]);
    std::fs::remove_file(path).unwrap();
    assert_eq!(
        found,
        owned(&[
            (
                "session.entity-unknown",
                267,
                "entity 1 updated, never spawned"
            ),
            (
                "session.entity-after-destroy",
                1464,
                "entity 68 updated after its destruction"
            ),
            (
                "session.entity-never-destroyed",
                9,
                "103 entities still alive at the end"
            ),
        ])
    );
    let (path, found) = entity_findings(RT, &[96]);
    std::fs::remove_file(path).unwrap();
    assert_eq!(
        found,
        owned(&[
            (
                "session.entity-unknown",
                96,
                "entity 10001 updated, never spawned"
            ),
            RT_ALIVE[0],
            RT_ALIVE[1],
        ])
    );
}

/// The real rt capture with entity 10001's position changed in what the first client got at
/// tick 30 (frame 97, from 300 to 301), written to a temporary file named after `test`.
fn disagreeing_rt(test: &str) -> std::path::PathBuf {
    let bytes = std::fs::read(RT).unwrap();
    let changed = faults::rewrite(&bytes, |index, frame| {
        let mut frame = frame.to_vec();
        if index + 1 == 97 {
            // Entity 10001's Position X, at payload offset 6 after the 12-byte header.
            let at = faults::udp_payload_at(&frame) + 12 + 6;
            assert_eq!(frame[at..at + 2], 300u16.to_le_bytes());
            frame[at..at + 2].copy_from_slice(&301u16.to_le_bytes());
        }
        vec![frame]
    });
    let path = std::env::temp_dir().join(format!(
        "rtype-inspect-disagree-{test}-{}.pcap",
        std::process::id()
    ));
    std::fs::write(&path, changed).unwrap();
    path
}

/// The two clients of the real rt capture agree at every tick; with the position of one
/// entity changed in what the first client got at tick 30 (frame 97), `world` finds the two
/// disagree there, once for the pair.
#[test]
fn clients_that_disagree_are_found() {
    let doc = json(&["world", RT, "--at", "100", "--format", "json"]);
    assert_follows("world", &doc);
    assert_eq!(doc["disagreements"], serde_json::json!([]));
    let path = disagreeing_rt("world");
    let doc = json(&[
        "world",
        path.to_str().unwrap(),
        "--at",
        "100",
        "--format",
        "json",
    ]);
    let text = ok(&["world", path.to_str().unwrap(), "--at", "100"]);
    std::fs::remove_file(&path).unwrap();
    assert_follows("world", &doc);
    assert_eq!(
        doc["disagreements"],
        serde_json::json!([{
            "id": "session.clients-disagree",
            "severity": "warning",
            "server": "127.0.0.1:4242",
            "entity": 10001,
            "tick": 30,
            "field": "pos_x",
            "first": {"conversation": 1, "frame": 97, "value": 301.0},
            "second": {"conversation": 2, "frame": 98, "value": 300.0},
        }])
    );
    let section: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Clients disagree"))
        .collect();
    assert_eq!(
        section,
        [
            "Clients disagree (session.clients-disagree, warning):",
            "  #1 and #2 of 127.0.0.1:4242: entity 10001 at tick 30: pos_x 301 (frame 97) against 300 (frame 98)",
        ]
    );
}

/// `check`'s findings (rule, count, first two frames) in `pcap`, which fails the check (the rt
/// capture breaks rules of severity error).
fn check_findings(pcap: &str) -> Vec<(String, u64, Vec<u64>)> {
    let out = Command::new(BIN)
        .args(["check", pcap, "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_follows("check", &doc);
    doc["files"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let frames = f["frames"].as_array().unwrap();
            (
                f["id"].as_str().unwrap().to_owned(),
                f["count"].as_u64().unwrap(),
                frames.iter().take(2).map(|n| n.as_u64().unwrap()).collect(),
            )
        })
        .collect()
}

/// `check` raises `session.clients-disagree` where the two clients of the rt capture disagree:
/// once, at frame 98, where the second client's value of tick 30 shows; the real capture, whose
/// clients agree, gives none. `export`, a report that reads once for speed, does not compare
/// the clients.
#[test]
fn check_finds_the_clients_that_disagree() {
    let agreeing = check_findings(RT);
    let path = disagreeing_rt("check");
    let disagreeing = check_findings(path.to_str().unwrap());
    let records = ok(&["export", path.to_str().unwrap()]);
    std::fs::remove_file(&path).unwrap();
    let listed = |rules: &[(&str, u64, &[u64])]| -> Vec<(String, u64, Vec<u64>)> {
        rules
            .iter()
            .map(|(id, count, frames)| (id.to_string(), *count, frames.to_vec()))
            .collect()
    };
    // The first two frames of each rule.
    let mut expected = listed(&[
        ("rt.byte-order", 2, &[1, 92]),
        ("rt.message.undocumented-type", 2, &[13, 115]),
        ("rt.snapshot.no-world-tick", 3501, &[4, 5]),
        ("rt.input.10-byte", 1293, &[142, 143]),
        ("rt.connect.header-copy", 2, &[1, 92]),
        ("rt.reliable.unacknowledged", 2, &[2, 93]),
        ("session.stream-stopped", 2, &[3332, 3333]),
        ("session.duplicate-datagram", 1076, &[162, 163]),
        ("session.entity-never-destroyed", 2, &[3, 94]),
    ]);
    assert_eq!(agreeing, expected);
    expected.insert(8, ("session.clients-disagree".into(), 1, vec![98]));
    assert_eq!(disagreeing, expected);
    let findings: Vec<Value> = records
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["kind"] == "finding")
        .collect();
    assert_eq!(findings.len(), 1_082);
    assert!(findings
        .iter()
        .all(|r| r["id"] != "session.clients-disagree"));
}

/// rtnp's JSON snapshots build the world too: the real server's `transform` and `health.hp`
/// (the document's `position` and `health` where a server sends them); an entity that appears
/// again after its `destroyed` entry begins a new life, as 004 §8.4 creates entities.
#[test]
fn the_world_of_rtnp_snapshots() {
    let doc = json(&["world", RTNP, "--at", "5", "--format", "json"]);
    assert_follows("world", &doc);
    let entities = doc["conversations"][0]["entities"].as_array().unwrap();
    let held: Vec<(u64, f64, f64, u64, u64)> = entities
        .iter()
        .map(|e| {
            (
                e["id"].as_u64().unwrap(),
                e["pos_x"].as_f64().unwrap(),
                e["pos_y"].as_f64().unwrap(),
                e["health"].as_u64().unwrap(),
                e["last_frame"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(held, [(0, 161.59962, 159.20593, 5, 413)]);
    let doc = json(&["entity", RTNP, "1", "--format", "json"]);
    assert_follows("entity", &doc);
    let conversation = &doc["conversations"][0];
    assert_eq!(
        (&conversation["lives"], &conversation["destroys"]),
        (&Value::from(10), &Value::from(10))
    );
    let events: Vec<(u64, &str, u64)> = conversation["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] != "update")
        .take(4)
        .map(|e| {
            (
                e["frame"].as_u64().unwrap(),
                e["event"].as_str().unwrap(),
                e["life"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        events,
        [
            (20, "update-unspawned", 1),
            (52, "destroy", 1),
            (75, "update-unspawned", 2),
            (95, "destroy", 2),
        ]
    );
}

/// A snapshot of 100 entities no spawn gave the client breaks `session.entity-unknown` once per
/// entity: its packet line says so once, with the count, and still fits.
#[test]
fn a_packet_line_folds_a_finding_repeated_per_entity() {
    let out = ok(&["packets", "samples/rt-big-endian.pcap", "--frames", "108"]);
    assert_eq!(
        out,
        "    108   0.312754 #3   S→C rt     1218 TRANSFORM_SNAPSHOT seq=74 entities=100 \
         [rt.datagram.size session.entity-unknown×100]\n"
    );
}
