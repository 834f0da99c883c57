//! Snapshot chunk sets: SERVER_SNAPSHOT_CHUNK datagrams of one conversation and tick, put back
//! together into one snapshot once every chunk has arrived (001 §7).
//!
//! Memory stays flat: at most [`MAX_OPEN_SETS`] sets are open, each holds at most
//! [`MAX_SET_BYTES`], and a set older than [`MAX_AGE_NANOS`] of capture time is closed as missing.

use crate::message::{add_finding, Detail, Finding};
use crate::proto::Rule;

/// Open sets at once; opening one more closes the oldest.
pub const MAX_OPEN_SETS: usize = 64;
/// Entity bytes one set may hold.
pub const MAX_SET_BYTES: usize = 1 << 20;
/// Chunks one set may announce.
pub const MAX_CHUNKS: u16 = 1024;
/// Capture time after which an incomplete set is given up (2 s: 120 ticks at 60 Hz).
pub const MAX_AGE_NANOS: i64 = 2_000_000_000;

/// A chunk as the decoder read it.
#[derive(Clone, Copy, Debug)]
pub struct Chunk<'a> {
    pub conversation: u32,
    pub tick: u32,
    pub frame: u64,
    pub ts_nanos: i64,
    pub total: u16,
    pub index: u16,
    pub entity_count: u16,
    /// The chunk's entity blocks.
    pub blocks: &'a [u8],
    /// Offset of the chunk header in the datagram, for findings.
    pub at: u32,
}

/// A set found incomplete or broken when it was closed, to report at its first frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Closed {
    pub frame: u64,
    pub conversation: u32,
    pub finding: Finding,
}

/// A completed snapshot: entity count then the blocks in chunk order, as a SERVER_SNAPSHOT payload.
#[derive(Debug)]
pub struct Reassembled<'a> {
    pub tick: u32,
    pub chunks: u16,
    pub first_frame: u64,
    pub payload: &'a [u8],
}

#[derive(Debug, Default)]
struct ChunkSet {
    conversation: u32,
    tick: u32,
    total: u16,
    first_frame: u64,
    first_ts: i64,
    /// (chunk index, entity count, range in `data`) in arrival order.
    parts: Vec<(u16, u16, std::ops::Range<usize>)>,
    data: Vec<u8>,
    /// totalChunks disagreed: the set is discarded when closed.
    discarded: bool,
}

impl ChunkSet {
    fn has(&self, index: u16) -> bool {
        self.parts.iter().any(|p| p.0 == index)
    }
}

/// The open chunk sets of a capture.
#[derive(Debug, Default)]
pub struct ChunkSets {
    open: Vec<ChunkSet>,
    /// Closed sets kept for their buffers, so steady traffic allocates nothing.
    spare: Vec<ChunkSet>,
    out: Vec<u8>,
    pub completed: u64,
}

impl ChunkSets {
    /// Adds a chunk. Per-chunk problems go to `findings`; sets closed on the way go to `closed`.
    /// Returns the reassembled snapshot when this chunk completed its set.
    pub fn push(
        &mut self,
        chunk: Chunk<'_>,
        findings: &mut Vec<Finding>,
        closed: &mut Vec<Closed>,
    ) -> Option<Reassembled<'_>> {
        let report = |findings: &mut Vec<Finding>, rule, detail| {
            add_finding(findings, Finding::new(rule, chunk.at, detail))
        };
        if chunk.total == 0 {
            report(findings, Rule::RtypeChunkTotalZero, Detail::Value(0));
            return None;
        }
        if chunk.index >= chunk.total {
            report(
                findings,
                Rule::RtypeChunkIndex,
                Detail::Sizes {
                    expected: chunk.total.into(),
                    found: chunk.index.into(),
                },
            );
            return None;
        }
        self.expire(chunk.ts_nanos, closed);
        let position = self
            .open
            .iter()
            .position(|s| s.conversation == chunk.conversation && s.tick == chunk.tick);
        let i = match position {
            Some(i) => i,
            None => {
                if chunk.total > MAX_CHUNKS {
                    report(
                        findings,
                        Rule::RtypeChunkLimit,
                        Detail::Value(chunk.total.into()),
                    );
                    return None;
                }
                if self.open.len() == MAX_OPEN_SETS {
                    self.close(0, Rule::RtypeChunkLimit, closed);
                }
                let mut set = self.spare.pop().unwrap_or_default();
                set.conversation = chunk.conversation;
                set.tick = chunk.tick;
                set.total = chunk.total;
                set.first_frame = chunk.frame;
                set.first_ts = chunk.ts_nanos;
                self.open.push(set);
                self.open.len() - 1
            }
        };
        let set = &mut self.open[i];
        if set.total != chunk.total {
            report(
                findings,
                Rule::RtypeChunkTotalMismatch,
                Detail::Sizes {
                    expected: set.total.into(),
                    found: chunk.total.into(),
                },
            );
            set.discarded = true;
            return None;
        }
        if set.has(chunk.index) {
            report(
                findings,
                Rule::RtypeChunkDuplicate,
                Detail::Value(chunk.index.into()),
            );
            return None;
        }
        if set.discarded {
            return None;
        }
        if set.data.len() + chunk.blocks.len() > MAX_SET_BYTES {
            report(
                findings,
                Rule::RtypeChunkLimit,
                Detail::Value(set.data.len() as u64),
            );
            set.discarded = true;
            return None;
        }
        let start = set.data.len();
        // Grow as a Vec would (doubling), but never past the limit: a set's buffer is at most
        // MAX_SET_BYTES, not the twice as much that doubling could reach.
        let want = start + chunk.blocks.len();
        if want > set.data.capacity() {
            set.data
                .reserve_exact(want.max(2 * set.data.capacity()).min(MAX_SET_BYTES) - start);
        }
        set.data.extend_from_slice(chunk.blocks);
        set.parts
            .push((chunk.index, chunk.entity_count, start..set.data.len()));
        if set.parts.len() < set.total as usize {
            return None;
        }
        let mut set = self.open.remove(i);
        set.parts.sort_unstable_by_key(|p| p.0);
        let count: u32 = set.parts.iter().map(|p| u32::from(p.1)).sum();
        self.out.clear();
        self.out
            .extend_from_slice(&(count.min(u16::MAX.into()) as u16).to_be_bytes());
        for (_, _, range) in &set.parts {
            self.out.extend_from_slice(&set.data[range.clone()]);
        }
        let (tick, chunks, first_frame) = (set.tick, set.total, set.first_frame);
        self.recycle(set);
        self.completed += 1;
        Some(Reassembled {
            tick,
            chunks,
            first_frame,
            payload: &self.out,
        })
    }

    /// Closes the sets that are too old at capture time `now`.
    fn expire(&mut self, now: i64, closed: &mut Vec<Closed>) {
        while let Some(i) = self
            .open
            .iter()
            .position(|s| now.saturating_sub(s.first_ts) > MAX_AGE_NANOS)
        {
            self.close(i, Rule::RtypeChunkMissing, closed);
        }
    }

    /// Closes every set still open (at the end of the capture).
    pub fn finish(&mut self, closed: &mut Vec<Closed>) {
        while !self.open.is_empty() {
            self.close(0, Rule::RtypeChunkMissing, closed);
        }
    }

    fn close(&mut self, i: usize, rule: Rule, closed: &mut Vec<Closed>) {
        let set = self.open.remove(i);
        if !set.discarded || rule == Rule::RtypeChunkLimit {
            let detail = Detail::Chunks {
                tick: set.tick,
                have: set.parts.len() as u16,
                total: set.total,
            };
            closed.push(Closed {
                frame: set.first_frame,
                conversation: set.conversation,
                finding: Finding::new(rule, 0, detail),
            });
        }
        self.recycle(set);
    }

    fn recycle(&mut self, mut set: ChunkSet) {
        set.parts.clear();
        set.data.clear();
        set.discarded = false;
        if self.spare.len() < MAX_OPEN_SETS {
            self.spare.push(set);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(tick: u32, total: u16, index: u16, blocks: &[u8]) -> Chunk<'_> {
        Chunk {
            conversation: 1,
            tick,
            frame: u64::from(index) + 10,
            ts_nanos: 0,
            total,
            index,
            entity_count: 1,
            blocks,
            at: 17,
        }
    }

    #[test]
    fn reassembles_in_index_order() {
        let mut sets = ChunkSets::default();
        let (mut f, mut c) = (vec![], vec![]);
        assert!(sets.push(chunk(5, 2, 1, b"BB"), &mut f, &mut c).is_none());
        let done = sets.push(chunk(5, 2, 0, b"AA"), &mut f, &mut c).unwrap();
        assert_eq!(done.payload, b"\x00\x02AABB");
        assert_eq!((done.tick, done.chunks, done.first_frame), (5, 2, 11));
        assert!(f.is_empty() && c.is_empty());
    }

    #[test]
    fn reports_broken_sets() {
        let mut sets = ChunkSets::default();
        let (mut f, mut c) = (vec![], vec![]);
        sets.push(chunk(1, 0, 0, b""), &mut f, &mut c);
        sets.push(chunk(1, 2, 2, b""), &mut f, &mut c);
        sets.push(chunk(2, 3, 0, b"A"), &mut f, &mut c);
        sets.push(chunk(2, 3, 0, b"A"), &mut f, &mut c);
        sets.push(chunk(2, 4, 1, b"A"), &mut f, &mut c);
        sets.push(chunk(3, 2, 0, b"A"), &mut f, &mut c);
        sets.finish(&mut c);
        let rules: Vec<_> = f.iter().map(|f| f.rule).collect();
        assert_eq!(
            rules,
            [
                Rule::RtypeChunkTotalZero,
                Rule::RtypeChunkIndex,
                Rule::RtypeChunkDuplicate,
                Rule::RtypeChunkTotalMismatch
            ]
        );
        // The discarded set (tick 2) is not reported again; tick 3 is missing a chunk.
        assert_eq!(c.len(), 1);
        assert_eq!(
            c[0].finding.detail,
            Detail::Chunks {
                tick: 3,
                have: 1,
                total: 2
            }
        );
    }

    #[test]
    fn set_buffers_stay_within_the_limit() {
        // Chunks of 60,000 bytes: doubling alone would take the buffer to 1,920,000 bytes.
        let blocks = vec![0x5A; 60_000];
        let mut sets = ChunkSets::default();
        let (mut f, mut c) = (vec![], vec![]);
        for index in 0..18 {
            sets.push(chunk(9, 20, index, &blocks), &mut f, &mut c);
        }
        assert_eq!(
            f.iter().map(|f| f.rule).collect::<Vec<_>>(),
            [Rule::RtypeChunkLimit]
        );
        assert_eq!(sets.open[0].data.len(), 17 * 60_000);
        assert!(
            sets.open[0].data.capacity() <= MAX_SET_BYTES,
            "{}",
            sets.open[0].data.capacity()
        );
    }

    #[test]
    fn bounded_open_sets() {
        let mut sets = ChunkSets::default();
        let (mut f, mut c) = (vec![], vec![]);
        for tick in 0..(MAX_OPEN_SETS as u32 + 10) {
            sets.push(chunk(tick, 2, 0, b"A"), &mut f, &mut c);
        }
        assert_eq!(sets.open.len(), MAX_OPEN_SETS);
        assert_eq!(c.len(), 10);
        assert!(c.iter().all(|c| c.finding.rule == Rule::RtypeChunkLimit));
    }
}
