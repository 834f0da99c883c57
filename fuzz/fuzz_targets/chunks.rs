//! A sequence of snapshot chunk pushes, read from arbitrary input, into `ChunkSets`: any order,
//! any totals, indexes, ticks, conversations, times and sizes. Nothing may panic; a completed
//! snapshot is the entity count then the chunks' blocks, never more than one set may hold; and
//! every push that is refused or closes a set says so with a finding.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use rtype_inspect::finding::Finding;
use rtype_inspect::proto::Rule;
use rtype_inspect::session::chunks::{Chunk, ChunkSets, Closed, MAX_SET_BYTES};

/// Block bytes are sliced out of this (up to a whole UDP payload per chunk).
static BLOCKS: [u8; 65_535] = [0x5A; 65_535];

fn step(
    u: &mut Unstructured<'_>,
    sets: &mut ChunkSets,
    now: &mut i64,
    findings: &mut Vec<Finding>,
    closed: &mut Vec<Closed>,
) -> Result<()> {
    // Small value ranges make sets collide, complete, and overflow.
    let conversation = u32::from(u.int_in_range(0..=3u8)?);
    let tick = u32::from(u.int_in_range(0..=80u8)?);
    let total = match u.int_in_range(0..=3u8)? {
        0 => u.int_in_range(0..=4u16)?,
        1 => u.int_in_range(0..=40u16)?,
        2 => u.arbitrary::<u16>()?,
        _ => 1,
    };
    let index = match u.int_in_range(0..=2u8)? {
        0 => u.int_in_range(0..=4u16)?,
        1 => u.int_in_range(0..=40u16)?,
        _ => u.arbitrary::<u16>()?,
    };
    let len = match u.int_in_range(0..=2u8)? {
        0 => usize::from(u.int_in_range(0..=64u8)?),
        1 => usize::from(u.arbitrary::<u16>()?),
        _ => BLOCKS.len(),
    };
    // Time moves forward, jumps, or (hostile files) goes back.
    *now = match u.int_in_range(0..=3u8)? {
        0 => *now,
        1 => now.saturating_add(i64::from(u.arbitrary::<u32>()?)),
        2 => u.arbitrary::<i64>()?,
        _ => now.saturating_sub(i64::from(u.arbitrary::<u16>()?)),
    };
    let chunk = Chunk {
        conversation,
        tick,
        frame: u.arbitrary()?,
        ts_nanos: *now,
        total,
        index,
        entity_count: u.arbitrary()?,
        blocks: &BLOCKS[..len],
        at: 17,
    };
    findings.clear();
    let closed_before = closed.len();
    if let Some(done) = sets.push(chunk, findings, closed) {
        assert!(done.payload.len() >= 2 && done.payload.len() <= 2 + MAX_SET_BYTES);
        assert_eq!(done.tick, tick);
        assert!(done.payload[2..].iter().all(|b| *b == 0x5A));
        assert!(
            findings.is_empty(),
            "a completing chunk has no finding: {findings:?}"
        );
    }
    if total == 0 {
        assert_eq!(
            findings.first().map(|f| f.rule),
            Some(Rule::RtypeChunkTotalZero)
        );
    } else if index >= total {
        assert_eq!(
            findings.first().map(|f| f.rule),
            Some(Rule::RtypeChunkIndex)
        );
    }
    for c in &closed[closed_before..] {
        assert!(matches!(
            c.finding.rule,
            Rule::RtypeChunkLimit | Rule::RtypeChunkMissing | Rule::RtypeChunkTotalMismatch
        ));
    }
    if closed.len() > 4096 {
        closed.clear();
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let mut sets = ChunkSets::default();
    let (mut findings, mut closed) = (Vec::new(), Vec::new());
    let mut now = 0i64;
    while !u.is_empty() {
        if step(&mut u, &mut sets, &mut now, &mut findings, &mut closed).is_err() {
            break;
        }
    }
    sets.finish(&mut closed);
    assert!(closed.iter().all(|c| matches!(
        c.finding.rule,
        Rule::RtypeChunkLimit | Rule::RtypeChunkMissing | Rule::RtypeChunkTotalMismatch
    )));
});
