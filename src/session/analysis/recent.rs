//! Byte-identical datagrams sent again shortly after: a small ring of recent datagram hashes.
//!
//! Real servers send some messages twice byte for byte (spec-notes B: ENTITY_DESTROYED), and
//! messages without sequence or tick (destroys use 0 for both) repeat legitimately over a
//! session, so only a repeat within [`WINDOW_NANOS`] among the last [`RING`] datagrams of the same
//! direction counts. Datagrams are compared by a 64-bit hash of their bytes and length, not
//! stored, which keeps memory fixed; two different datagrams colliding within the window is
//! vanishingly unlikely.

/// Recent datagrams remembered per direction.
pub const RING: usize = 32;
/// How soon a repeat must follow to count as a duplicate.
pub const WINDOW_NANOS: i64 = 100_000_000;

/// The last datagrams of one direction: their hashes apart from the rest, so that the search
/// for a repeat (every datagram's, nearly always in vain) compares one array, and only when a
/// hash in it has the same low six bits.
#[derive(Clone, Debug)]
pub struct Recent {
    hashes: [u64; RING],
    /// Each hash's frame and time.
    seen: [(u64, i64); RING],
    /// How many of the hashes have each value of their low six bits: a datagram whose count is
    /// 0 repeats none, which answers three pushes in five without a search (64 counts keep a
    /// session within its 4 KiB).
    low_bits: [u8; 64],
    len: usize,
    next: usize,
}

impl Default for Recent {
    fn default() -> Self {
        Recent {
            hashes: [0; RING],
            seen: [(0, 0); RING],
            low_bits: [0; 64],
            len: 0,
            next: 0,
        }
    }
}

/// The hash datagrams are compared by: every datagram is hashed, so it takes 16 bytes at a time
/// in one 64 × 64 → 128-bit multiply folded back to 64 bits (the two 8-byte halves are mixed in
/// on either side of the product, as wyhash does). Not meant to resist crafted collisions (a
/// crafted duplicate is only a false finding).
pub fn hash(bytes: &[u8]) -> u64 {
    const K: [u64; 2] = [0x9E37_79B9_7F4A_7C15, 0xD6E8_FEB8_6659_FD93];
    let mix = |a: u64, b: u64| {
        let m = u128::from(a) * u128::from(b);
        (m as u64) ^ (m >> 64) as u64
    };
    let word = |w: &[u8]| u64::from_le_bytes(w.try_into().expect("8 bytes"));
    let mut pairs = bytes.chunks_exact(16);
    let mut h = K[0] ^ bytes.len() as u64;
    for p in &mut pairs {
        h = mix(word(&p[..8]) ^ K[1], word(&p[8..]) ^ h);
    }
    let mut last = [0u8; 16];
    last[..pairs.remainder().len()].copy_from_slice(pairs.remainder());
    mix(word(&last[..8]) ^ K[1], word(&last[8..]) ^ h) ^ K[0]
}

impl Recent {
    /// Remembers a datagram; returns the frame of an identical one sent within `window`
    /// nanoseconds (at most [`WINDOW_NANOS`]).
    pub fn push(&mut self, hash: u64, frame: u64, ts_nanos: i64, window: i64) -> Option<u64> {
        let mut original: Option<(u64, i64)> = None;
        if self.low_bits[bucket(hash)] != 0 && self.hashes[..self.len].contains(&hash) {
            for (h, &(f, ts)) in self.hashes[..self.len].iter().zip(&self.seen) {
                let within = ts_nanos.saturating_sub(ts) <= window;
                // The latest of equals, as before the arrays were split.
                if *h == hash && within && original.is_none_or(|(_, best)| ts >= best) {
                    original = Some((f, ts));
                }
            }
        }
        if self.len == RING {
            let gone = self.hashes[self.next];
            self.low_bits[bucket(gone)] -= 1;
        }
        self.low_bits[bucket(hash)] += 1;
        self.hashes[self.next] = hash;
        self.seen[self.next] = (frame, ts_nanos);
        self.next = (self.next + 1) % RING;
        self.len = (self.len + 1).min(RING);
        original.map(|(f, _)| f)
    }
}

/// Which of [`Recent::low_bits`] counts a hash: its low six bits.
fn bucket(hash: u64) -> usize {
    (hash % 64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn repeats_within_the_window_only() {
        let mut r = Recent::default();
        let (a, b) = (hash(b"destroy 7"), hash(b"destroy 8"));
        assert_ne!(a, b);
        // Every byte counts, in both halves of a 16-byte step, and so does the length.
        let long = [7u8; 40];
        let hashes: BTreeSet<u64> = (0..long.len())
            .map(|i| {
                let mut d = long;
                d[i] ^= 1;
                hash(&d)
            })
            .chain([
                hash(&long),
                hash(&long[..39]),
                hash(&[0; 16]),
                hash(&[0; 17]),
            ])
            .collect();
        assert_eq!(hashes.len(), long.len() + 4);
        assert_eq!(r.push(a, 1, 0, WINDOW_NANOS), None);
        assert_eq!(r.push(b, 2, 1_000, WINDOW_NANOS), None);
        assert_eq!(r.push(a, 3, 2_000, WINDOW_NANOS), Some(1));
        assert_eq!(r.push(a, 4, 2_000 + WINDOW_NANOS + 1, WINDOW_NANOS), None);
        // A shorter window (rtnp's stateless messages) takes only a copy that soon.
        assert_eq!(r.push(b, 5, 3_000, 1_000), None);
        assert_eq!(r.push(b, 6, 3_500, 1_000), Some(5));
        for i in 0..RING as u64 {
            r.push(
                hash(&i.to_be_bytes()),
                10 + i,
                3_000 + WINDOW_NANOS,
                WINDOW_NANOS,
            );
        }
        assert_eq!(
            r.push(a, 99, 4_000 + WINDOW_NANOS, WINDOW_NANOS),
            None,
            "pushed out of the ring"
        );
    }

    #[test]
    fn hashes_sharing_low_bits_are_told_apart_and_forgotten_in_turn() {
        let mut r = Recent::default();
        // Hashes whose low six bits are the same: their count lets the search run, which must
        // still tell them apart; and each one pushed out of the ring lowers it again.
        let same_low = |i: u64| i << 6 | 0x1A;
        for i in 0..RING as u64 {
            assert_eq!(r.push(same_low(i), i, 0, WINDOW_NANOS), None);
        }
        assert_eq!(r.low_bits[0x1A], RING as u8);
        assert_eq!(r.push(same_low(3), 100, 1, WINDOW_NANOS), Some(3));
        // Ring pushed through with other hashes: no count is left behind, and none went below 0.
        for i in 0..RING as u64 {
            r.push(i << 6 | 0x01, 200 + i, 2, WINDOW_NANOS);
        }
        assert_eq!(r.low_bits[0x1A], 0);
        assert_eq!(r.low_bits[0x01], RING as u8);
        assert_eq!(
            r.low_bits.iter().map(|c| usize::from(*c)).sum::<usize>(),
            RING
        );
        assert_eq!(r.push(same_low(3), 300, 3, WINDOW_NANOS), None);
        assert_eq!(r.push(1 << 6 | 0x01, 301, 3, WINDOW_NANOS), Some(201));
    }
}
