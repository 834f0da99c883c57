//! Snapshot chunk sets: SERVER_SNAPSHOT_CHUNK datagrams of one conversation and tick, put back
//! together into one snapshot once every chunk has arrived (001 §7).
//!
//! Memory stays flat: at most [`MAX_OPEN_SETS`] sets are open, each holds at most
//! [`MAX_SET_BYTES`], and a set older than [`MAX_AGE_NANOS`] of capture time is closed as missing.
//! The last [`RECENT_DONE`] completed sets are remembered, so that a chunk of a set that already
//! completed is reported as a duplicate instead of opening a set that can never complete.
//!
//! A chunk whose totalChunks disagrees with its set's is reported at the chunk that broke the
//! rule: the one the other chunks of the set outvote, or whose total the set's chunks do not
//! complete. When the set's first chunk is the odd one, that is only known from a later chunk,
//! and it is reported then, as a finding of the first chunk's frame ([`Closed`]).

use crate::finding::{add_finding, Detail, Finding};
use crate::proto::Rule;

/// Open sets at once; opening one more closes the oldest.
pub const MAX_OPEN_SETS: usize = 64;
/// Entity bytes one set may hold.
pub const MAX_SET_BYTES: usize = 1 << 20;
/// Chunks one set may announce.
pub const MAX_CHUNKS: u16 = 1024;
/// Capture time after which an incomplete set is given up (2 s: 120 ticks at 60 Hz).
pub const MAX_AGE_NANOS: i64 = 2_000_000_000;
/// Completed sets remembered (for [`MAX_AGE_NANOS`] of capture time at most), to tell their
/// chunks sent again.
pub const RECENT_DONE: usize = 256;

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

/// A finding about a chunk whose datagram was already reported: a set found incomplete or broken
/// when it was closed (at its first frame), or a chunk whose totalChunks later chunks outvoted.
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
    /// Where the first chunk's header is in its datagram.
    first_at: u32,
    /// Chunks that said `total` (the first among them).
    agreed: u16,
    /// A chunk that disagreed with the first when nothing could tell which of the two is wrong:
    /// the next chunk does.
    disputed: Option<Vote>,
    /// (chunk index, entity count, range in `data`) in arrival order.
    parts: Vec<(u16, u16, std::ops::Range<usize>)>,
    data: Vec<u8>,
    /// totalChunks disagreed: the set is discarded when closed.
    discarded: bool,
}

/// A chunk's totalChunks, and where it was said.
#[derive(Clone, Copy, Debug)]
struct Vote {
    frame: u64,
    at: u32,
    total: u16,
}

impl ChunkSet {
    fn has(&self, index: u16) -> bool {
        self.parts.iter().any(|p| p.0 == index)
    }

    /// Whether the set's chunks (distinct indexes), with one of `index`, are all `total` chunks.
    fn completed_by(&self, index: u16, total: u16) -> bool {
        let indexes = self.parts.len() + usize::from(!self.has(index));
        index < total && self.parts.iter().all(|p| p.0 < total) && indexes == usize::from(total)
    }

    /// The finding that `vote` broke the set's totalChunks.
    fn mismatch(&self, vote: Vote) -> Closed {
        let detail = Detail::Sizes {
            expected: self.total.into(),
            found: vote.total.into(),
        };
        Closed {
            frame: vote.frame,
            conversation: self.conversation,
            finding: Finding::new(Rule::RtypeChunkTotalMismatch, vote.at, detail),
        }
    }
}

/// A set that completed: its chunks sent again are duplicates.
#[derive(Clone, Copy, Debug)]
struct Done {
    conversation: u32,
    tick: u32,
    total: u16,
    ts_nanos: i64,
}

/// The open chunk sets of a capture.
#[derive(Debug, Default)]
pub struct ChunkSets {
    open: Vec<ChunkSet>,
    /// Closed sets kept for their buffers, so steady traffic allocates nothing.
    spare: Vec<ChunkSet>,
    /// The last completed sets, oldest first once full ([`RECENT_DONE`]): a ring.
    done: Vec<Done>,
    next_done: usize,
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
                if let Some(done) = self.done.iter().find(|d| {
                    d.conversation == chunk.conversation
                        && d.tick == chunk.tick
                        && chunk.ts_nanos.saturating_sub(d.ts_nanos) <= MAX_AGE_NANOS
                }) {
                    // A chunk of a set that completed: sent again, or with another total.
                    if done.total == chunk.total {
                        let detail = Detail::Value(chunk.index.into());
                        report(findings, Rule::RtypeChunkDuplicate, detail);
                    } else {
                        let detail = Detail::Sizes {
                            expected: done.total.into(),
                            found: chunk.total.into(),
                        };
                        report(findings, Rule::RtypeChunkTotalMismatch, detail);
                    }
                    return None;
                }
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
                set.first_at = chunk.at;
                set.agreed = 0;
                self.open.push(set);
                self.open.len() - 1
            }
        };
        let set = &mut self.open[i];
        if set.total != chunk.total {
            // The set SHOULD be discarded; which chunk broke the rule is for its chunks to say.
            set.discarded = true;
            let vote = Vote {
                frame: chunk.frame,
                at: chunk.at,
                total: chunk.total,
            };
            let first = Vote {
                frame: set.first_frame,
                at: set.first_at,
                total: set.total,
            };
            let this_one = Detail::Sizes {
                expected: set.total.into(),
                found: chunk.total.into(),
            };
            match set.disputed.take() {
                // It sides with the chunk that disputed the first: the first was the odd one.
                Some(other) if other.total == chunk.total => {
                    set.total = chunk.total;
                    set.agreed = 2;
                    closed.push(set.mismatch(first));
                }
                // It disagrees with both: it is the odd one, and the dispute goes on.
                Some(other) => {
                    set.disputed = Some(other);
                    report(findings, Rule::RtypeChunkTotalMismatch, this_one);
                }
                // Outvoted, or the set's chunks are all there by the set's total: this one.
                None if set.agreed >= 2 || set.completed_by(chunk.index, set.total) => {
                    report(findings, Rule::RtypeChunkTotalMismatch, this_one);
                }
                // The set's chunks are all there by this one's total: the first was the odd one.
                None if set.completed_by(chunk.index, chunk.total) => {
                    set.total = chunk.total;
                    set.agreed = 1;
                    closed.push(set.mismatch(first));
                }
                // One against one: the next chunk decides.
                None => set.disputed = Some(vote),
            }
            return None;
        }
        set.agreed = set.agreed.saturating_add(1);
        // It sides with the first chunk: the one that disputed it was the odd one.
        if let Some(other) = set.disputed.take() {
            closed.push(set.mismatch(other));
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
        let done = Done {
            conversation: set.conversation,
            tick,
            total: chunks,
            ts_nanos: chunk.ts_nanos,
        };
        if self.done.len() < RECENT_DONE {
            self.done.push(done);
        } else {
            self.done[self.next_done] = done;
        }
        self.next_done = (self.next_done + 1) % RECENT_DONE;
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
        // A dispute no chunk settled: the later chunk disagreed with the set.
        if let Some(vote) = set.disputed {
            closed.push(set.mismatch(vote));
        }
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
        set.disputed = None;
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
