//! The analysis on scripted conversations: each test breaks (or keeps) one session rule.

use super::*;
use crate::datagram::Dialect;
use crate::message::Facts;
use crate::proto::{Direction, Rule};
use crate::session::event::DescribedRole;

const MS: i64 = 1_000_000;

/// A scripted rtype conversation: datagrams by message code, 1 ms apart unless told.
struct Script {
    analysis: Analysis,
    findings: Vec<(Rule, u64)>,
    frame: u64,
    ts: i64,
}

impl Script {
    fn new() -> Script {
        Script {
            analysis: Analysis::default(),
            findings: Vec::new(),
            frame: 0,
            ts: 0,
        }
    }

    /// Sends message `code` with this sequence and tick; `bytes` make the datagram distinct.
    fn send(
        &mut self,
        code: u8,
        sequence: u32,
        tick: u32,
        facts: Facts,
        after_ms: i64,
    ) -> &mut Script {
        self.frame += 1;
        self.ts += after_ms * MS;
        let message = crate::proto::rtype::message(code).expect("described");
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&self.frame.to_be_bytes());
        let event = DatagramEvent {
            frame: self.frame,
            ts_nanos: self.ts,
            src: "10.0.0.2:41000".parse().unwrap(),
            dst: "10.0.0.1:50010".parse().unwrap(),
            bytes: &bytes,
            hash: super::bytes_hash(&bytes),
            dialect: Dialect::Rtype,
            conversation: 1,
            direction: Some(message.direction),
            decoded: None,
            code: Some(code),
            sequence: Some(sequence),
            tick: Some(tick),
            message: Some(message),
            role: DescribedRole::of(message),
            ack: None,
            name: message.name,
            payload: None,
            facts,
            findings: &[],
            session: &[],
            entities: &[],
        };
        let findings = &mut self.findings;
        self.analysis
            .observe(&event, &mut |f| findings.push((f.finding.rule, f.frame)));
        self
    }

    fn c(&mut self, code: u8, seq: u32) -> &mut Script {
        self.send(code, seq, 0, Facts::default(), 1)
    }

    fn s(&mut self, code: u8, seq: u32, tick: u32) -> &mut Script {
        self.send(code, seq, tick, Facts::default(), 1)
    }

    /// The standard handshake up to GAME_START, client sequences 1..=3.
    fn handshake(&mut self) -> &mut Script {
        self.c(0x01, 1)
            .s(0x10, 1, 0)
            .c(0x02, 2)
            .s(0x11, 2, 0)
            .c(0x03, 3)
            .s(0x15, 0, 0)
    }

    fn finish(&mut self) -> Vec<(Rule, u64)> {
        let findings = &mut self.findings;
        self.analysis
            .finish(&mut |f| findings.push((f.finding.rule, f.frame)));
        std::mem::take(&mut self.findings)
    }

    fn session(&self) -> &Session {
        self.analysis.session(1).expect("analysed")
    }
}

fn ack(msg_type: u8) -> Facts {
    Facts {
        ack_msg_type: Some(msg_type),
        ack_sequence: Some(0),
        ..Facts::default()
    }
}

#[test]
fn clean_session_has_no_findings() {
    let mut s = Script::new();
    s.handshake().s(0x30, 0, 0).send(0x06, 4, 0, ack(0x30), 1);
    for tick in 100..200 {
        s.send(0x14, tick, tick, Facts::default(), 17);
    }
    s.send(
        0x05,
        5,
        1,
        Facts {
            player_id: Some(7),
            ..Facts::default()
        },
        1,
    )
    .c(0x04, 6)
    .s(0x13, 6, 1)
    .c(0x07, 7);
    assert_eq!(s.finish(), vec![]);
    let session = s.session();
    assert_eq!(session.outcome(), Outcome::Accepted);
    assert_eq!(session.player_id, Some(7));
    let steps: Vec<&str> = session.steps().iter().map(|st| st.step.name()).collect();
    assert_eq!(
        steps,
        [
            "HELLO",
            "SERVER_HELLO",
            "JOIN_REQUEST",
            "JOIN_ACCEPT",
            "READY",
            "GAME_START",
            "LEVEL_INIT",
            "DISCONNECT"
        ]
    );
    assert_eq!((session.rtt.count(), session.rtt.min_ms()), (1, Some(1.0)));
    assert_eq!(session.snapshot_tick_count(), 100);
    assert!((session.snapshot_rate_hz().unwrap() - 1000.0 / 17.0).abs() < 1e-9);
    assert_eq!(session.snapshot_gaps.quantile_ms(0.5), Some(17.0));
    assert_eq!(
        (
            session.client_sequence.received,
            session.client_sequence.lost
        ),
        (7, 0)
    );
    assert!(session.level_init.acknowledged.is_some());
}

#[test]
fn handshake_order_is_reported_once_per_kind() {
    let mut s = Script::new();
    s.c(0x01, 1).s(0x10, 1, 0).c(0x02, 2);
    s.send(0x05, 3, 1, Facts::default(), 1)
        .send(0x05, 4, 2, Facts::default(), 1);
    s.s(0x14, 10, 10).s(0x11, 2, 0);
    assert_eq!(
        s.finish(),
        vec![
            (Rule::SessionHandshakeOrder, 4),
            (Rule::SessionHandshakeOrder, 6)
        ]
    );
}

#[test]
fn mid_session_captures_are_not_judged_for_order() {
    let mut s = Script::new();
    s.send(0x05, 40, 1, Facts::default(), 1).s(0x14, 10, 10);
    assert_eq!(s.finish(), vec![]);
    assert_eq!(s.session().outcome(), Outcome::MidSession);
}

#[test]
fn join_deny_is_an_outcome() {
    let mut s = Script::new();
    s.c(0x01, 1).s(0x10, 1, 0).c(0x02, 2).s(0x12, 2, 0);
    assert_eq!(s.finish(), vec![]);
    assert_eq!(s.session().outcome(), Outcome::Denied);
}

#[test]
fn levelinit_unacknowledged_and_not_retried() {
    let mut s = Script::new();
    s.handshake()
        .s(0x30, 0, 0)
        .send(0x14, 100, 100, Facts::default(), 1_500);
    assert_eq!(
        s.finish(),
        vec![
            (Rule::SessionLevelInitUnacknowledged, 7),
            (Rule::SessionLevelInitNotRetried, 7)
        ]
    );
    // Retried, never acknowledged.
    let mut s = Script::new();
    s.handshake()
        .s(0x30, 0, 0)
        .send(0x30, 0, 0, Facts::default(), 200)
        .send(0x14, 100, 100, Facts::default(), 1_500);
    assert_eq!(s.finish(), vec![(Rule::SessionLevelInitUnacknowledged, 7)]);
    assert_eq!(s.session().level_init.sent, 2);
    // Acknowledging another message type does not count; a capture ending too soon is not judged.
    let mut s = Script::new();
    s.handshake().s(0x30, 0, 0).send(0x06, 4, 0, ack(0x15), 1);
    assert_eq!(s.finish(), vec![]);
}

#[test]
fn ticks_going_back_gaps_and_duplicates() {
    let mut s = Script::new();
    s.handshake();
    for tick in [1000, 1001, 1004, 1002, 1002, 1005, 5] {
        s.s(0x14, tick, tick);
    }
    let findings = s.finish();
    assert_eq!(
        findings,
        vec![
            (Rule::SessionTickBackwards, 10),
            (Rule::SessionTickBackwards, 13)
        ]
    );
    let t = &s.session().snapshot_ticks;
    assert_eq!(
        (t.received, t.lost, t.duplicates, t.reordered, t.resets),
        (6, 1, 1, 1, 1)
    );
}

#[test]
fn chunk_sets_count_their_tick_once() {
    let mut s = Script::new();
    s.handshake();
    let chunk = |index| Facts {
        total_chunks: Some(2),
        chunk_index: Some(index),
        ..Facts::default()
    };
    s.s(0x14, 99, 99)
        .send(0x21, 100, 100, chunk(0), 1)
        .send(0x21, 101, 100, chunk(1), 1)
        .s(0x14, 101, 101);
    s.send(0x21, 101, 100, chunk(1), 1);
    let t = &s.session().snapshot_ticks;
    assert_eq!((t.received, t.lost, t.duplicates), (3, 0, 1));
    assert_eq!(s.session().snapshot_tick_count(), 3);
}

#[test]
fn snapshot_rate_is_judged_from_twenty_ticks() {
    let mut s = Script::new();
    s.handshake();
    for tick in 0..19 {
        s.send(0x14, tick, tick, Facts::default(), 50);
    }
    assert_eq!(s.finish(), vec![]);
    let mut s = Script::new();
    s.handshake();
    for tick in 0..20 {
        s.send(0x14, tick, tick, Facts::default(), 50);
    }
    assert_eq!(s.finish(), vec![(Rule::SessionSnapshotRate, 7)]);
    let mut s = Script {
        analysis: Analysis::new(Config {
            snapshot_hz: 20.0,
            snapshot_tolerance: 0.1,
            ..Config::default()
        }),
        ..Script::new()
    };
    s.handshake();
    for tick in 0..20 {
        s.send(0x14, tick, tick, Facts::default(), 50);
    }
    assert_eq!(s.finish(), vec![]);
}

#[test]
fn traffic_after_disconnect_beyond_grace() {
    let mut s = Script::new();
    s.handshake().c(0x07, 4);
    s.send(0x14, 100, 100, Facts::default(), 50); // in flight
    s.send(0x14, 101, 101, Facts::default(), 100); // 150 ms after
    s.c(0x07, 5); // repeated goodbye
    s.c(0x05, 6); // the client itself
    s.c(0x01, 7).c(0x02, 8); // reconnects
    let findings = s.finish();
    assert_eq!(
        findings,
        vec![
            (Rule::SessionAfterDisconnect, 9),
            (Rule::SessionAfterDisconnect, 11)
        ]
    );
    let session = s.session();
    assert_eq!(
        (
            session.after_disconnect,
            session.after_disconnect_flagged,
            session.reconnects
        ),
        (3, 2, 1)
    );
}

#[test]
fn pongs_pair_with_the_ping_whose_sequence_they_echo() {
    let mut s = Script::new();
    s.handshake();
    s.send(0x04, 10, 0, Facts::default(), 1)
        .send(0x04, 11, 0, Facts::default(), 4);
    s.send(0x13, 11, 0, Facts::default(), 3)
        .send(0x13, 10, 0, Facts::default(), 5)
        .send(0x13, 99, 0, Facts::default(), 1);
    let session = s.session();
    assert_eq!(session.rtt.count(), 2);
    assert_eq!(
        (session.rtt.min_ms(), session.rtt.max_ms()),
        (Some(3.0), Some(12.0))
    );
    assert_eq!(
        (
            session.pings,
            session.pongs,
            session.unmatched_pongs,
            session.unanswered_pings()
        ),
        (2, 3, 1, 0)
    );
}

/// Pings at 30 Hz through a 500 ms delay each way: 31 await their pong at once (past the 16 once
/// kept), and each pairs with its own, 1 s later.
#[test]
fn pings_in_flight_past_sixteen_keep_their_round_trips() {
    let sent = |k: u32| i64::from(k) * 100 / 3;
    let mut events: Vec<(i64, u8, u32)> = (1..=120)
        .flat_map(|k| [(sent(k), 0x04, k), (sent(k) + 1000, 0x13, k)])
        .collect();
    events.sort_unstable();
    let (mut s, mut now, mut in_flight) = (Script::new(), 0, 0);
    for (ms, code, k) in events {
        s.send(code, k, 0, Facts::default(), ms - now);
        now = ms;
        in_flight = in_flight.max(s.session().pings - s.session().pongs);
    }
    let s = s.session();
    assert_eq!(in_flight, 31);
    assert_eq!((s.pings, s.pongs, s.unmatched_pongs), (120, 120, 0));
    assert_eq!(s.rtt.count(), 120);
    assert_eq!(
        (s.rtt.min_ms(), s.rtt.max_ms()),
        (Some(1000.0), Some(1000.0))
    );
}

/// Past [`session::PENDING_PINGS`] waiting, the oldest is forgotten: its pong is unmatched, the
/// next one still pairs.
#[test]
fn the_pings_awaiting_a_pong_are_bounded() {
    let mut s = Script::new();
    s.send(0x13, 1, 0, Facts::default(), 0);
    let n = session::PENDING_PINGS as u32 + 1;
    for k in 1..=n {
        s.send(0x04, k, 0, Facts::default(), 1);
    }
    s.send(0x13, 1, 0, Facts::default(), 1000 - i64::from(n))
        .send(0x13, 2, 0, Facts::default(), 0);
    let s = s.session();
    assert_eq!((s.pongs, s.unmatched_pongs, s.rtt.count()), (3, 2, 1));
    assert_eq!(s.rtt.max_ms(), Some(998.0));
}

#[test]
fn conversations_past_the_limit_are_only_counted() {
    let mut a = Analysis::default();
    let message = crate::proto::rtype::message(0x01).unwrap();
    for conversation in [0, MAX_ANALYSED as u32 + 1, 1] {
        let event = DatagramEvent {
            frame: 1,
            ts_nanos: 0,
            src: "10.0.0.2:41000".parse().unwrap(),
            dst: "10.0.0.1:50010".parse().unwrap(),
            bytes: &[1, 2, 3],
            hash: super::bytes_hash(&[1, 2, 3]),
            dialect: Dialect::Rtype,
            conversation,
            direction: Some(Direction::ClientToServer),
            decoded: None,
            code: Some(1),
            sequence: Some(1),
            tick: Some(0),
            message: Some(message),
            role: DescribedRole::of(message),
            ack: None,
            name: message.name,
            payload: None,
            facts: Facts::default(),
            findings: &[],
            session: &[],
            entities: &[],
        };
        a.observe(&event, &mut |_| {});
    }
    assert_eq!(a.unanalysed_datagrams(), 2);
    assert_eq!(a.sessions().count(), 1);
}

#[test]
fn a_conversation_record_stays_small() {
    // The module's memory bound: about 4 KiB per conversation, histograms apart.
    assert!(
        std::mem::size_of::<Session>() <= 4 * 1024,
        "{}",
        std::mem::size_of::<Session>()
    );
}
