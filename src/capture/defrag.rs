//! IP fragment reassembly for UDP, in bounded memory.
//!
//! Why not `etherparse::defrag::IpDefragPool`: its own docs say it is not safe
//! against memory exhaustion (no limit on open sets or bytes, no expiry), and it
//! silently merges overlapping fragments, which we must report. So this is a
//! small reassembler with hard limits, driven by capture time:
//! - at most [`MAX_SETS`] datagrams in reassembly; a new one evicts the oldest;
//! - at most [`MAX_HELD_BYTES`] held in total (oldest sets evicted first);
//! - a set expires [`SET_TIMEOUT_NANOS`] after its first fragment;
//! - a reassembled datagram is at most [`MAX_DATAGRAM`] bytes;
//! - at most [`MAX_FRAGMENTS`] fragments per datagram.
//!
//! Sets are kept oldest first in a small `Vec` (64 entries: a linear search
//! beats hashing and keeps eviction order free).

use std::net::{IpAddr, SocketAddr};

use super::ip::{self, IpContent};
use super::link::{self, LinkOutcome, LinkType};

pub const MAX_SETS: usize = 64;
pub const MAX_HELD_BYTES: usize = 4 * 1024 * 1024;
pub const SET_TIMEOUT_NANOS: i64 = 30_000_000_000;
pub const MAX_DATAGRAM: usize = 65_535;
pub const MAX_FRAGMENTS: u32 = 1024;

/// A reassembled UDP datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedUdp {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub payload: Vec<u8>,
    /// Capture time of the first fragment that arrived (not necessarily offset 0).
    pub first_frame_ts: i64,
}

/// Result of feeding one fragment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DefragOutcome {
    /// Kept; the datagram is not complete yet.
    Pending,
    /// This fragment completed a datagram.
    Complete(OwnedUdp),
    /// This fragment (and the datagram it belongs to, when inconsistent) was dropped.
    Dropped { what: &'static str },
}

/// Counters since creation, plus what is held right now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DefragStats {
    pub reassembled: u64,
    /// Sets discarded because their 30 s ran out.
    pub expired: u64,
    /// Sets evicted to respect the set-count or byte limits.
    pub dropped_over_limit: u64,
    /// Sets discarded because fragments overlapped with different extents or bytes.
    pub overlapping: u64,
    /// Sets or fragments discarded as inconsistent: length over 65535, unaligned
    /// or conflicting lengths, too many fragments, cut by snaplen, not UDP.
    pub dropped_invalid: u64,
    /// Bytes held right now in open sets.
    pub held_bytes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FragKey {
    src: IpAddr,
    dst: IpAddr,
    protocol: u8,
    id: u32,
}

#[derive(Debug)]
struct FragSet {
    key: FragKey,
    first_ts: i64,
    data: Vec<u8>,
    /// Received byte ranges [start, end), sorted, adjacent ones merged.
    ranges: Vec<(usize, usize)>,
    /// Datagram length, known once the last fragment (MF clear) arrived.
    total: Option<usize>,
    fragments: u32,
}

impl FragSet {
    fn held(&self) -> usize {
        self.data.capacity() + self.ranges.capacity() * std::mem::size_of::<(usize, usize)>()
    }

    fn complete(&self) -> bool {
        self.total.is_some_and(|t| self.ranges == [(0, t)])
    }
}

/// Bounded IP fragment reassembler. See the module doc.
#[derive(Debug, Default)]
pub struct Defragmenter {
    sets: Vec<FragSet>,
    held: usize,
    stats: DefragStats,
}

impl Defragmenter {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn stats(&self) -> DefragStats {
        DefragStats {
            held_bytes: self.held as u64,
            ..self.stats
        }
    }

    /// Datagrams still waiting for fragments (at the end of a capture: never completed).
    pub fn unfinished(&self) -> usize {
        self.sets.len()
    }

    /// Feed a frame whose [`udp_from_frame`](super::udp_from_frame) said
    /// `Fragment`. Returns `Complete` when this fragment completed a datagram.
    pub fn push(&mut self, link_type: LinkType, data: &[u8], ts_nanos: i64) -> DefragOutcome {
        let frag = match link::decode(link_type, data) {
            IpContent::Fragment(f) => f,
            _ => {
                return DefragOutcome::Dropped {
                    what: "not a UDP fragment",
                }
            }
        };
        self.expire(ts_nanos);
        let key = FragKey {
            src: frag.src,
            dst: frag.dst,
            protocol: frag.protocol,
            id: frag.id,
        };
        let start = frag.offset as usize;
        let end = start + frag.payload.len();
        if frag.missing > 0 {
            return self.invalid(key, "fragment cut short by the capture's snaplen");
        }
        if end > MAX_DATAGRAM {
            return self.invalid(key, "reassembled datagram would exceed 65535 bytes");
        }
        if frag.more && frag.payload.len() % 8 != 0 {
            return self.invalid(key, "fragment length is not a multiple of 8");
        }

        let mut idx = match self.find(key) {
            Some(i) => i,
            None => {
                if self.sets.len() >= MAX_SETS {
                    self.evict_oldest_except(None);
                }
                self.sets.push(FragSet {
                    key,
                    first_ts: ts_nanos,
                    data: Vec::new(),
                    ranges: Vec::with_capacity(4),
                    total: None,
                    fragments: 0,
                });
                self.held += self.sets[self.sets.len() - 1].held();
                self.sets.len() - 1
            }
        };

        // Consistency with what the set already knows.
        {
            let set = &self.sets[idx];
            let last_end = set.ranges.last().map_or(0, |r| r.1);
            let conflicting = match set.total {
                Some(total) => end > total || (!frag.more && end != total),
                None => !frag.more && last_end > end,
            };
            if conflicting {
                return self.invalid(key, "fragments disagree on the datagram length");
            }
            if set.fragments >= MAX_FRAGMENTS {
                return self.invalid(key, "too many fragments for one datagram");
            }
            for &(s, e) in &set.ranges {
                if s < end && start < e {
                    let duplicate = start >= s && end <= e && set.data[start..end] == *frag.payload;
                    if duplicate {
                        // The same fragment captured twice (e.g. on two interfaces).
                        return DefragOutcome::Pending;
                    }
                    self.remove(idx);
                    self.stats.overlapping += 1;
                    return DefragOutcome::Dropped {
                        what: "overlapping fragments",
                    };
                }
            }
        }

        // Room for the bytes, within the global budget. `slack`: the range list
        // may double its capacity on insert.
        let grow = end.saturating_sub(self.sets[idx].data.len());
        let slack = self.sets[idx].ranges.capacity() * std::mem::size_of::<(usize, usize)>();
        while self.held + grow + slack > MAX_HELD_BYTES && self.sets.len() > 1 {
            self.evict_oldest_except(Some(key));
            idx = self.find(key).unwrap_or(0);
        }
        if self.held + grow + slack > MAX_HELD_BYTES {
            self.remove(idx);
            self.stats.dropped_over_limit += 1;
            return DefragOutcome::Dropped {
                what: "fragment memory limit reached",
            };
        }

        let set = &mut self.sets[idx];
        let before = set.held();
        if grow > 0 {
            set.data.reserve_exact(grow);
            set.data.resize(end, 0);
        }
        set.data[start..end].copy_from_slice(frag.payload);
        insert_range(&mut set.ranges, start, end);
        set.fragments += 1;
        if !frag.more {
            set.total = Some(end);
        }
        let after = set.held();
        self.held = self.held + after - before;

        if !self.sets[idx].complete() {
            return DefragOutcome::Pending;
        }
        let set = self.remove(idx);
        self.finish(set)
    }

    /// Turns a complete set into a UDP datagram.
    fn finish(&mut self, set: FragSet) -> DefragOutcome {
        let FragKey {
            src, dst, protocol, ..
        } = set.key;
        let mut data = set.data;
        let content = match (src, protocol) {
            (_, ip::PROTO_UDP) => ip::parse_udp(&data, 0, src, dst, 0),
            (IpAddr::V6(_), next) => ip::walk_ipv6(&data, 0, next, src, dst, 0, false),
            _ => IpContent::Other(LinkOutcome::NotUdp),
        };
        let (src, dst, start, len) = match content {
            IpContent::Udp(u) => (u.src, u.dst, u.payload_offset, u.payload.len()),
            IpContent::Other(LinkOutcome::Malformed { what, .. }) => {
                self.stats.dropped_invalid += 1;
                return DefragOutcome::Dropped { what };
            }
            _ => {
                self.stats.dropped_invalid += 1;
                return DefragOutcome::Dropped {
                    what: "reassembled datagram is not UDP",
                };
            }
        };
        data.truncate(start + len);
        data.drain(..start);
        self.stats.reassembled += 1;
        DefragOutcome::Complete(OwnedUdp {
            src,
            dst,
            payload: data,
            first_frame_ts: set.first_ts,
        })
    }

    fn find(&self, key: FragKey) -> Option<usize> {
        self.sets.iter().position(|s| s.key == key)
    }

    fn remove(&mut self, idx: usize) -> FragSet {
        let set = self.sets.remove(idx);
        self.held -= set.held();
        set
    }

    /// Drops the set of `key` (if open) as inconsistent.
    fn invalid(&mut self, key: FragKey, what: &'static str) -> DefragOutcome {
        if let Some(i) = self.find(key) {
            self.remove(i);
        }
        self.stats.dropped_invalid += 1;
        DefragOutcome::Dropped { what }
    }

    fn evict_oldest_except(&mut self, keep: Option<FragKey>) {
        if let Some(i) = self.sets.iter().position(|s| Some(s.key) != keep) {
            self.remove(i);
            self.stats.dropped_over_limit += 1;
        }
    }

    /// Capture time only moves the clock forward; sets whose first fragment is
    /// more than 30 s older than `now` are discarded.
    fn expire(&mut self, now: i64) {
        let mut i = 0;
        while i < self.sets.len() {
            if now.saturating_sub(self.sets[i].first_ts) > SET_TIMEOUT_NANOS {
                self.remove(i);
                self.stats.expired += 1;
            } else {
                i += 1;
            }
        }
    }
}

/// Inserts [start, end) into sorted, non-overlapping `ranges`, merging neighbours.
fn insert_range(ranges: &mut Vec<(usize, usize)>, start: usize, end: usize) {
    if start == end {
        return;
    }
    let pos = ranges.partition_point(|r| r.0 < start);
    ranges.insert(pos, (start, end));
    // Merge with the next, then with the previous.
    if pos + 1 < ranges.len() && ranges[pos].1 == ranges[pos + 1].0 {
        ranges[pos].1 = ranges[pos + 1].1;
        ranges.remove(pos + 1);
    }
    if pos > 0 && ranges[pos - 1].1 == ranges[pos].0 {
        ranges[pos - 1].1 = ranges[pos].1;
        ranges.remove(pos);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::testutil::*;
    use crate::capture::udp_from_frame;

    fn payload(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + 3) as u8).collect()
    }

    fn complete(o: DefragOutcome) -> OwnedUdp {
        match o {
            DefragOutcome::Complete(u) => u,
            other => panic!("expected Complete, got {other:?}"),
        }
    }

    #[test]
    fn ipv4_out_of_order() {
        let data = payload(8000);
        let frags = v4_fragments(&data, 77, 1480);
        assert_eq!(frags.len(), 6);
        for f in &frags {
            assert_eq!(udp_from_frame(LinkType::RAW, f), LinkOutcome::Fragment);
        }
        let mut d = Defragmenter::new();
        let order = [3, 0, 5, 1, 4];
        for (t, &i) in order.iter().enumerate() {
            assert_eq!(
                d.push(LinkType::RAW, &frags[i], 1_000 + t as i64),
                DefragOutcome::Pending
            );
        }
        assert!(d.stats().held_bytes >= 8008);
        let u = complete(d.push(LinkType::RAW, &frags[2], 9_999));
        assert_eq!(u.payload, data);
        assert_eq!(u.src, "10.0.0.1:4000".parse().unwrap());
        assert_eq!(u.dst, "10.0.0.2:5000".parse().unwrap());
        assert_eq!(u.first_frame_ts, 1_000);
        let s = d.stats();
        assert_eq!((s.reassembled, s.held_bytes), (1, 0));
    }

    #[test]
    fn ipv4_over_ethernet_with_padding() {
        let data = payload(30);
        let frags = v4_fragments(&data, 5, 16);
        let mut d = Defragmenter::new();
        let mut out = None;
        for f in frags.iter().rev() {
            let mut frame = vec![2u8; 12];
            frame.extend_from_slice(&[0x08, 0x00]);
            frame.extend_from_slice(f);
            frame.resize(frame.len().max(60), 0xee); // Ethernet padding
            if let DefragOutcome::Complete(u) = d.push(LinkType::ETHERNET, &frame, 0) {
                out = Some(u);
            }
        }
        assert_eq!(out.unwrap().payload, data);
    }

    #[test]
    fn ipv6_out_of_order_and_duplicates() {
        let data = payload(3000);
        let frags = v6_fragments(&data, 0xdead_beef, 1232);
        assert_eq!(frags.len(), 3);
        assert_eq!(
            udp_from_frame(LinkType::IPV6, &frags[0]),
            LinkOutcome::Fragment
        );
        let mut d = Defragmenter::new();
        assert_eq!(d.push(LinkType::IPV6, &frags[2], 5), DefragOutcome::Pending);
        assert_eq!(d.push(LinkType::IPV6, &frags[0], 6), DefragOutcome::Pending);
        // The same fragment seen twice is not an overlap.
        assert_eq!(d.push(LinkType::IPV6, &frags[0], 7), DefragOutcome::Pending);
        let u = complete(d.push(LinkType::IPV6, &frags[1], 8));
        assert_eq!(u.payload, data);
        assert_eq!(u.src, "[2001:db8::1]:4000".parse().unwrap());
        assert_eq!(u.first_frame_ts, 5);
        assert_eq!(d.stats().overlapping, 0);
    }

    #[test]
    fn overlap_and_inconsistency_drop_the_set() {
        let frags = v4_fragments(&payload(100), 1, 48);
        let mut d = Defragmenter::new();
        assert_eq!(d.push(LinkType::RAW, &frags[0], 0), DefragOutcome::Pending);
        // Same offset, different bytes.
        let mut evil = frags[0].clone();
        *evil.last_mut().unwrap() ^= 0xff;
        assert_eq!(
            d.push(LinkType::RAW, &evil, 0),
            DefragOutcome::Dropped {
                what: "overlapping fragments"
            }
        );
        assert_eq!(d.stats().overlapping, 1);
        assert_eq!(d.stats().held_bytes, 0);

        // Two "last" fragments with different ends.
        let a = v4_fragments(&payload(100), 2, 48);
        let b = v4_fragments(&payload(140), 2, 48);
        assert_eq!(d.push(LinkType::RAW, &a[2], 0), DefragOutcome::Pending);
        assert_eq!(
            d.push(LinkType::RAW, &b[2], 0),
            DefragOutcome::Dropped {
                what: "fragments disagree on the datagram length"
            }
        );

        // A fragment reaching past 65535 bytes.
        let mut far = frags[1].clone();
        far[6..8].copy_from_slice(&(0x2000u16 | 8190).to_be_bytes());
        assert_eq!(
            d.push(LinkType::RAW, &far, 0),
            DefragOutcome::Dropped {
                what: "reassembled datagram would exceed 65535 bytes"
            }
        );
        assert_eq!(d.stats().dropped_invalid, 2);
        assert_eq!(
            d.push(LinkType::RAW, &raw_v4_udp(b"whole"), 0),
            DefragOutcome::Dropped {
                what: "not a UDP fragment"
            }
        );
    }

    #[test]
    fn set_limit_evicts_the_oldest() {
        let mut d = Defragmenter::new();
        let sets: Vec<Vec<Vec<u8>>> = (0..65u16)
            .map(|id| v4_fragments(&payload(40), id, 24))
            .collect();
        for (t, s) in sets.iter().enumerate() {
            assert_eq!(
                d.push(LinkType::RAW, &s[0], t as i64),
                DefragOutcome::Pending
            );
        }
        let s = d.stats();
        assert_eq!(s.dropped_over_limit, 1);
        assert_eq!(d.sets.len(), MAX_SETS);
        // Set 0 is gone: its second half opens a new, incomplete set.
        assert_eq!(
            d.push(LinkType::RAW, &sets[0][1], 100),
            DefragOutcome::Pending
        );
        assert_eq!(d.stats().dropped_over_limit, 2); // which evicted set 1
                                                     // Set 64 (the newest) completes.
        assert_eq!(
            complete(d.push(LinkType::RAW, &sets[64][1], 101)).payload,
            payload(40)
        );
    }

    #[test]
    fn sets_expire_after_30s_of_capture_time() {
        let mut d = Defragmenter::new();
        let a = v4_fragments(&payload(40), 1, 24);
        let b = v4_fragments(&payload(40), 2, 24);
        assert_eq!(d.push(LinkType::RAW, &a[0], 0), DefragOutcome::Pending);
        assert_eq!(
            d.push(LinkType::RAW, &b[0], SET_TIMEOUT_NANOS),
            DefragOutcome::Pending
        );
        // 30 s + 1 ns after set a started: a expires, its last half starts over.
        assert_eq!(
            d.push(LinkType::RAW, &a[1], SET_TIMEOUT_NANOS + 1),
            DefragOutcome::Pending
        );
        assert_eq!(d.stats().expired, 1);
        assert!(matches!(
            d.push(LinkType::RAW, &b[1], SET_TIMEOUT_NANOS + 2),
            DefragOutcome::Complete(_)
        ));
    }

    #[test]
    fn memory_stays_under_the_byte_limit() {
        // 64 sets of ~64 KiB each, only the first and last fragment: the
        // buffers hold the full extent, close to the 4 MiB budget.
        let mut d = Defragmenter::new();
        let big = payload(65_000);
        for id in 0..200u16 {
            let f = v4_fragments(&big, id, 1480);
            let last = f.len() - 1;
            d.push(LinkType::RAW, &f[last], id as i64);
            d.push(LinkType::RAW, &f[0], id as i64);
            assert!(d.stats().held_bytes as usize <= MAX_HELD_BYTES);
            assert!(d.sets.len() <= MAX_SETS);
        }
        assert!(d.stats().dropped_over_limit >= 200 - 64);
    }

    #[test]
    fn ranges_merge() {
        let mut r = Vec::new();
        insert_range(&mut r, 16, 24);
        insert_range(&mut r, 0, 8);
        assert_eq!(r, [(0, 8), (16, 24)]);
        insert_range(&mut r, 8, 16);
        assert_eq!(r, [(0, 24)]);
    }
}
