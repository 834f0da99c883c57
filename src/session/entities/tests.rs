//! The entities' tests: datagrams of entity references fed through [`Entities::observe`].

use super::lifecycle::MAX_REMEMBERED;
use super::storage::FIRST_SWEEP;
use super::*;
use crate::datagram::Dialect;
use crate::finding::Detail;
use crate::message::Facts;
use crate::proto::schema::Message;
use crate::proto::Rule;
use crate::session::event::{DatagramEvent, DescribedRole, EntityEvent, EntityRef};

/// The description's message of that name, as the pipeline hands it on.
fn described(dialect: Dialect, name: &str) -> Option<&'static Message> {
    match dialect {
        Dialect::Rtype => crate::proto::rtype::MESSAGES
            .iter()
            .find(|m| m.name == name),
        Dialect::Rt => crate::proto::rt::MESSAGES.iter().find(|m| m.name == name),
        Dialect::Rtnp => crate::proto::rtnp::message(name).map(|m| &m.message),
        Dialect::Described(_) => None,
    }
}

const MS: i64 = 1_000_000;

/// Feeds entity references as datagrams of one rtype (or rtnp) conversation.
struct Feed {
    entities: Entities,
    dialect: Dialect,
    frame: u64,
    findings: Vec<(Rule, u64, u64)>,
}

impl Feed {
    fn new(dialect: Dialect) -> Feed {
        Feed {
            entities: Entities::new(true),
            dialect,
            frame: 0,
            findings: Vec::new(),
        }
    }

    /// A feed that keeps the lifecycles only, as the summary and `check` do.
    fn lifecycles(dialect: Dialect) -> Feed {
        Feed {
            entities: Entities::new(false),
            ..Feed::new(dialect)
        }
    }

    fn send(&mut self, ms: i64, refs: &[(EntityEvent, u32, Option<u16>)]) -> Vec<Resolved> {
        self.send_as("", None, Facts::default(), ms, refs)
    }

    /// A datagram of message `name`, tick `tick` and `facts` (a chunk's index and total).
    fn send_as(
        &mut self,
        name: &str,
        tick: Option<u32>,
        facts: Facts,
        ms: i64,
        refs: &[(EntityEvent, u32, Option<u16>)],
    ) -> Vec<Resolved> {
        self.frame += 1;
        let refs: Vec<EntityRef> = refs
            .iter()
            .map(|(event, id, type_id)| EntityRef {
                id: *id,
                event: *event,
                type_id: *type_id,
                at: 21,
            })
            .collect();
        let event = DatagramEvent {
            frame: self.frame,
            ts_nanos: ms * MS,
            src: "10.0.0.1:49316".parse().unwrap(),
            dst: "10.0.0.2:41000".parse().unwrap(),
            bytes: &[],
            hash: 0,
            dialect: self.dialect,
            conversation: 1,
            direction: None,
            decoded: None,
            code: None,
            sequence: None,
            tick,
            message: described(self.dialect, name),
            role: described(self.dialect, name).and_then(DescribedRole::of),
            ack: None,
            name,
            payload: None,
            facts,
            findings: &[],
            session: &[],
            entities: &refs,
        };
        let findings = &mut self.findings;
        self.entities
            .observe(&event, Some(&refs), self.frame, &mut |f| {
                findings.push((
                    f.finding.rule,
                    f.frame,
                    match f.finding.detail {
                        Detail::Value(v) => v,
                        _ => u64::MAX,
                    },
                ))
            });
        self.entities.last().to_vec()
    }

    fn finish(&mut self) -> Vec<(Rule, u64, u64)> {
        let findings = &mut self.findings;
        self.entities.finish(&mut |f| {
            findings.push((
                f.finding.rule,
                f.frame,
                match f.finding.detail {
                    Detail::Value(v) => v,
                    _ => u64::MAX,
                },
            ))
        });
        std::mem::take(&mut self.findings)
    }
}

use EntityEvent::{Destroy, Spawn, Update};

#[test]
fn lifecycle_findings() {
    let mut f = Feed::new(Dialect::Rtype);
    f.send(0, &[(Spawn, 7, Some(2))]);
    // A delta block without a type takes the spawn's.
    let r = f.send(16, &[(Update, 7, None), (Update, 8, Some(1))]);
    assert_eq!(
        r,
        [
            Resolved {
                type_id: Some(2),
                changed: true
            },
            Resolved {
                type_id: Some(1),
                changed: true
            }
        ]
    );
    let r = f.send(20, &[(Update, 7, None)]);
    assert_eq!(
        r[0],
        Resolved {
            type_id: Some(2),
            changed: false
        }
    );
    f.send(33, &[(Destroy, 7, None)]);
    f.send(34, &[(Destroy, 7, None)]); // sent twice: no finding
    f.send(50, &[(Update, 7, None), (Update, 8, None)]); // 7 after its destruction
    f.send(66, &[(Update, 7, None)]); // reported once per destruction
    f.send(70, &[(Spawn, 8, Some(1))]); // 8 was only seen: now spawned, no finding
    f.send(80, &[(Spawn, 8, Some(1))]); // spawned twice
    f.send(90, &[(Spawn, 7, Some(3))]); // a new life for 7
    let r = f.send(95, &[(Update, 7, None)]);
    assert_eq!(
        r[0],
        Resolved {
            type_id: Some(3),
            changed: true
        }
    );
    assert_eq!(
        f.finish(),
        [
            // 8 was neither spawned nor in a full state, after 7's spawn.
            (Rule::SessionEntityUnknown, 2, 8),
            (Rule::SessionEntityAfterDestroy, 6, 7),
            (Rule::SessionEntitySpawnedTwice, 9, 8),
            // 7 and 8 are alive; 8's life began with its second spawn at frame 9.
            (Rule::SessionEntityNeverDestroyed, 9, 2),
        ]
    );
}

/// The start of a snapshot that repeats a steady one changes nothing and is passed over;
/// anything that touched its entities in between, or a different type or order, is followed.
#[test]
fn repeated_snapshots_change_nothing_but_are_still_judged() {
    let script: &[&[(EntityEvent, u32, Option<u16>)]] = &[
        &[(Spawn, 7, Some(2))],
        &[(Update, 7, Some(2)), (Update, 8, Some(1))], // 8 seen: its life begins at 2
        &[(Update, 7, Some(2)), (Update, 8, Some(1))], // steady from here
        &[(Update, 7, Some(2)), (Update, 8, Some(1))],
        &[(Destroy, 8, None)],
        &[(Update, 7, Some(2)), (Update, 8, Some(1))], // 8 after its destruction
        &[(Update, 7, Some(2)), (Update, 8, Some(1))], // reported once
        &[(Spawn, 8, Some(1))],                        // a new life for 8
        &[(Update, 7, Some(2)), (Update, 8, Some(1))],
        &[(Update, 7, Some(3)), (Update, 8, Some(1))], // 7 changes type
        &[(Update, 8, Some(1)), (Update, 7, Some(3))], // another order
        &[(Update, 8, Some(1))],
        &[(Destroy, 7, None)],
        &[(Update, 8, Some(1))],
        &[(Update, 8, Some(1)), (Update, 7, Some(3))], // 7 after its destruction
        &[(Update, 8, Some(1))],
        &[(Update, 8, Some(1))],
        &[(Spawn, 9, Some(4))], // a new record: 8 stays steady
        &[(Update, 8, Some(1)), (Update, 9, Some(4))],
        &[(Update, 8, Some(1)), (Update, 9, Some(5))], // 9 changes type
        &[(Destroy, 30, None)],                        // a new record, destroyed
        &[
            (Update, 8, Some(1)),
            (Update, 9, Some(5)),
            (Update, 30, None),
        ],
        &[(Update, 8, Some(1)), (Update, 9, Some(5))],
        &[(Update, 8, Some(1))], // 9 left out: the list is shorter
        &[(Destroy, 9, None)],
        &[(Update, 8, Some(1)), (Update, 9, Some(5))], // 9 after its destruction
    ];
    let expected = [
        (Rule::SessionEntityUnknown, 2, 8),
        (Rule::SessionEntityAfterDestroy, 6, 8),
        (Rule::SessionEntityAfterDestroy, 15, 7),
        (Rule::SessionEntityAfterDestroy, 22, 30),
        (Rule::SessionEntityAfterDestroy, 26, 9),
        // 8 is alive, its life begun by its spawn at frame 8.
        (Rule::SessionEntityNeverDestroyed, 8, 1),
    ];
    for mut f in [Feed::lifecycles(Dialect::Rtype), Feed::new(Dialect::Rtype)] {
        for (i, refs) in script.iter().enumerate() {
            f.send(16 * i as i64, refs);
        }
        assert_eq!(f.finish(), expected);
    }
}

/// With figures, a snapshot that repeats a steady one counts its updates without looking its
/// entities up: the same script sent with every other datagram's entities in reverse order
/// (so that none repeats the one before) gives the same figures and resolutions.
#[test]
fn steady_snapshots_count_their_figures_as_any_other() {
    let steady = [
        (Update, 7, Some(2)),
        (Update, 8, Some(1)),
        (Update, 9, None),
    ];
    let mut script: Vec<Vec<(EntityEvent, u32, Option<u16>)>> = vec![
        vec![(Spawn, 7, Some(2))],
        steady.to_vec(),
        steady.to_vec(),
        steady.to_vec(),
        steady[..2].to_vec(),
        vec![(Update, 9, Some(4)), (Update, 8, Some(1))],
        steady.to_vec(),
        steady.to_vec(),
        vec![(Destroy, 8, None)],
        steady.to_vec(),
        steady.to_vec(),
    ];
    script.extend(std::iter::repeat_n(steady.to_vec(), 6));
    let (mut plain, mut reversed) = (Feed::new(Dialect::Rtype), Feed::new(Dialect::Rtype));
    let mut steady_starts = 0;
    for (i, refs) in script.iter().enumerate() {
        // Snapshot ticks 16 to 33 ms apart, so that the longest gaps differ by entity.
        let ms = 16 * i as i64 + (i as i64 % 3) * 17;
        let c = plain
            .entities
            .conversations
            .first()
            .and_then(|c| c.as_deref());
        if c.is_some_and(|c| !c.steady.is_empty()) {
            steady_starts += 1;
        }
        let a = plain.send(ms, refs);
        let flip = i % 2 == 1;
        let mut refs = refs.clone();
        if flip {
            refs.reverse();
        }
        let mut b = reversed.send(ms, &refs);
        if flip {
            b.reverse();
        }
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "datagram {i}");
    }
    assert_eq!(steady_starts, 6);
    let figures = |f: &Feed| format!("{:?} {:?}", f.entities.records(1), f.entities.lives(1));
    assert_eq!(figures(&plain), figures(&reversed));
    let seven = plain.entities.get(1, 7).unwrap();
    assert_eq!((seven.updates, seven.ticks), (14, 14));
    // The same findings; those of one datagram in its entities' order.
    let (mut a, mut b) = (plain.finish(), reversed.finish());
    a.sort_by_key(|f| (f.1, f.2));
    b.sort_by_key(|f| (f.1, f.2));
    assert_eq!(a, b);
}

/// A snapshot naming more entities than are remembered is followed by id, judged the same,
/// and leaves the conversation's lists no longer than the limit.
#[test]
fn long_snapshots_are_followed_by_id_and_leave_short_lists() {
    let long: Vec<(EntityEvent, u32, Option<u16>)> = (0..10_000)
        .map(|i| (Update, 1 + i % 300, Some(1)))
        .collect();
    for mut f in [Feed::lifecycles(Dialect::Rtype), Feed::new(Dialect::Rtype)] {
        f.send(0, &long);
        f.send(16, &long);
        f.send(33, &[(Destroy, 299, None)]);
        f.send(50, &long); // 299 after its destruction, 33 times in the list: reported once
        f.send(66, &long[..200]);
        f.send(83, &long[..200]); // steady, and remembered
        let c = f.entities.conversations[0].as_deref().unwrap();
        for list in [
            c.order.capacity(),
            c.next_order.capacity(),
            c.steady.capacity(),
        ] {
            assert!(list <= MAX_REMEMBERED, "{list}");
        }
        assert_eq!(c.steady.len(), 200);
        assert_eq!(
            f.finish(),
            [
                (Rule::SessionEntityAfterDestroy, 4, 299),
                (Rule::SessionEntityNeverDestroyed, 1, 299),
            ]
        );
    }
}

/// A chunk of full-state set `tick` (`index` of `total`) naming `ids`.
fn chunk(f: &mut Feed, ms: i64, tick: u32, index: u16, total: u16, ids: &[u32]) {
    let facts = Facts {
        chunk_index: Some(index),
        total_chunks: Some(total),
        ..Facts::default()
    };
    let refs: Vec<_> = ids.iter().map(|id| (Update, *id, Some(1))).collect();
    f.send_as("SERVER_SNAPSHOT_CHUNK", Some(tick), facts, ms, &refs);
}

/// An entity held that a complete full-state set leaves out is a ghost, once per life; sets
/// not complete, or whose chunks disagree, judge nothing.
#[test]
fn ghosts_are_what_a_full_state_leaves_out() {
    let mut f = Feed::lifecycles(Dialect::Rtype);
    f.send(
        0,
        &[
            (Spawn, 1, Some(1)),
            (Spawn, 2, Some(1)),
            (Spawn, 3, Some(1)),
        ],
    );
    chunk(&mut f, 16, 100, 0, 2, &[1]); // 2: a set without 2 or 3
    chunk(&mut f, 17, 100, 1, 2, &[3]); // 3: complete, 2 is a ghost
    chunk(&mut f, 33, 101, 0, 2, &[1]); // 4: incomplete, never judged
    chunk(&mut f, 50, 102, 0, 3, &[1]); // 5: totals disagree
    chunk(&mut f, 51, 102, 1, 2, &[1]); // 6
    chunk(&mut f, 52, 102, 2, 3, &[1]); // 7: all three chunks, but spoilt
    f.send(60, &[(Destroy, 3, None)]); // 8
    f.send(70, &[(Spawn, 4, Some(1))]); // 9: spawned in the set's middle
    chunk(&mut f, 71, 103, 0, 1, &[1]); // 10: 2 reported already, 3 destroyed, 4 new
    chunk(&mut f, 80, 104, 0, 1, &[1]); // 11: 4 is a ghost now
    f.send(90, &[(Update, 5, Some(1))]); // 12: never given
    chunk(&mut f, 100, 105, 0, 1, &[1, 5, 2]); // 13: 2 is back, but reported once
    assert_eq!(
        f.finish(),
        [
            (Rule::SessionEntityGhost, 3, 2),
            (Rule::SessionEntityGhost, 10, 4),
            (Rule::SessionEntityUnknown, 12, 5),
            (Rule::SessionEntityNeverDestroyed, 1, 4),
        ]
    );
}

/// A full state naming more ids than are gathered is not judged, and what was gathered of
/// it is let go: nothing is reported and the buffer stays within its bound.
#[test]
fn a_full_state_too_long_is_not_judged() {
    let mut f = Feed::lifecycles(Dialect::Rtype);
    f.send(0, &[(Spawn, 1, Some(1)), (Spawn, 2, Some(1))]);
    let many: Vec<u32> = (10..10 + MAX_FULL_STATE_IDS as u32).collect();
    chunk(&mut f, 16, 100, 0, 2, &many[..MAX_FULL_STATE_IDS / 2]);
    chunk(&mut f, 17, 100, 1, 2, &many); // past the bound: 1 and 2 are not judged
    let c = f.entities.conversations[0].as_deref().unwrap();
    assert!(c.full_ids.is_empty());
    assert!(
        c.full_ids.capacity() <= MAX_FULL_STATE_IDS,
        "{}",
        c.full_ids.capacity()
    );
    chunk(&mut f, 33, 101, 0, 65, &[1]); // more chunks than are judged
    for index in 1..65 {
        chunk(&mut f, 34, 101, index, 65, &[1]);
    }
    chunk(&mut f, 50, 102, 0, 1, &many[..MAX_FULL_STATE_IDS]); // at the bound: judged
    assert_eq!(
        f.finish(),
        [
            (Rule::SessionEntityGhost, 69, 1),
            (Rule::SessionEntityGhost, 69, 2),
            (
                Rule::SessionEntityNeverDestroyed,
                1,
                MAX_FULL_STATE_IDS as u64 + 2
            ),
        ]
    );
}

/// Before any spawn or full state the client's world is not known (a capture begun in a
/// game): updates of unspawned entities are judged only after one.
#[test]
fn unknown_entities_are_judged_from_a_baseline() {
    let mut f = Feed::lifecycles(Dialect::Rtype);
    f.send(0, &[(Update, 1, Some(1))]);
    chunk(&mut f, 16, 10, 0, 1, &[1, 2]); // the baseline; 2 given by the full state
    f.send(33, &[(Update, 2, None), (Update, 3, Some(1))]); // 3 never given
    f.send(50, &[(Update, 3, None)]); // once per life
    let mut rt = Feed::lifecycles(Dialect::Rt);
    rt.send(0, &[(Spawn, 10, Some(1))]);
    rt.send(16, &[(Update, 10, None), (Update, 11, None)]);
    assert_eq!(
        [f.finish(), rt.finish()],
        [
            vec![
                (Rule::SessionEntityUnknown, 3, 3),
                (Rule::SessionEntityNeverDestroyed, 1, 3),
            ],
            vec![
                (Rule::SessionEntityUnknown, 2, 11),
                (Rule::SessionEntityNeverDestroyed, 1, 2),
            ],
        ]
    );
}

/// Each rtnp snapshot is a full state (004 D.3): an entity it leaves out, not in its
/// `destroyed` list, is a ghost; appearing is never unknown.
#[test]
fn rtnp_snapshots_are_full_states() {
    let mut f = Feed::lifecycles(Dialect::Rtnp);
    let snapshot = |f: &mut Feed, ms, refs: &[(EntityEvent, u32, Option<u16>)]| {
        f.send_as("snapshot", None, Facts::default(), ms, refs);
    };
    snapshot(&mut f, 0, &[(Update, 1, None), (Update, 2, None)]);
    snapshot(&mut f, 16, &[(Update, 1, None), (Destroy, 2, None)]);
    snapshot(&mut f, 33, &[(Update, 3, None)]); // 1 left out, not destroyed
    assert_eq!(
        f.finish(),
        [
            (Rule::SessionEntityGhost, 3, 1),
            (Rule::SessionEntityNeverDestroyed, 1, 2),
        ]
    );
}

#[test]
fn rtnp_entities_come_back_by_appearing() {
    let mut f = Feed::new(Dialect::Rtnp);
    f.send(0, &[(Update, 1, None)]);
    f.send(16, &[(Destroy, 1, None)]);
    let r = f.send(33, &[(Update, 1, None)]);
    assert!(r[0].changed);
    f.send(50, &[(Destroy, 1, None)]);
    assert_eq!(f.finish(), []);
    let lives = f.entities.lives(1);
    assert_eq!((lives.count, lives.updates), (2, 2));
}

#[test]
fn rates_gaps_and_tick_shares() {
    let mut f = Feed::new(Dialect::Rtype);
    // Entity 1 every tick for 2 s at 60 Hz (ticks = frames here); entity 2 every 4th tick
    // with one gap of 500 ms.
    for i in 0..=120 {
        let ms = i * 1000 / 60;
        let mut refs = vec![(Update, 1, Some(1))];
        if i % 4 == 0 && !(40..70).contains(&i) {
            refs.push((Update, 2, Some(2)));
        }
        f.send(ms, &refs);
    }
    let one = f.entities.get(1, 1).unwrap();
    assert_eq!((one.updates, one.ticks), (121, 121));
    assert!((one.rate_hz().unwrap() - 60.0).abs() < 0.1);
    assert_eq!(one.tick_share(), Some(1.0));
    let two = f.entities.get(1, 2).unwrap();
    assert_eq!(two.longest_gap.nanos, (72 - 36) * 1000 / 60 * MS);
    assert_eq!((two.longest_gap.from, two.longest_gap.to), (37, 73));
    let lives = f.entities.lives(1);
    assert_eq!(lives.count, 2);
    // 60 Hz in [55, 65), about 12 Hz in [10, 20).
    assert_eq!(lives.rates[7], 1);
    assert_eq!(lives.rates[3], 1);
    assert_eq!(lives.tick_shares, [1, 0, 0, 1, 0]);
    assert_eq!(lives.longest_gap.unwrap().0, 2);
    assert_eq!(lives.slowest.unwrap().0, 2);
}

#[test]
fn destroyed_entities_retire_and_the_cap_is_reported() {
    let mut f = Feed::new(Dialect::Rtype);
    // Short lives, each destroyed at once: they retire after 10 s and make room.
    for id in 0..(3 * FIRST_SWEEP as u32) {
        let ms = i64::from(id) * 100;
        f.send(
            ms,
            &[
                (Spawn, id, Some(1)),
                (Update, id, None),
                (Destroy, id, None),
            ],
        );
    }
    assert!(
        f.entities.tracked() < 2 * FIRST_SWEEP,
        "{}",
        f.entities.tracked()
    );
    assert_eq!(f.entities.lives(1).count, 3 * FIRST_SWEEP as u64);
    assert_eq!(f.finish(), []);
    // Entities that stay alive fill the table; the first one past it is reported.
    let mut f = Feed::new(Dialect::Rtype);
    for id in 0..=(MAX_ENTITIES as u32) {
        f.send(0, &[(Update, id, None)]);
    }
    assert_eq!(f.entities.tracked(), MAX_ENTITIES);
    assert_eq!(
        f.finish(),
        [
            (Rule::SessionEntityNeverDestroyed, 1, MAX_ENTITIES as u64),
            (
                Rule::SessionEntityLimit,
                MAX_ENTITIES as u64 + 1,
                MAX_ENTITIES as u64
            )
        ]
    );
}
