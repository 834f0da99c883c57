//! Byte-identical datagrams sent again shortly after: a small ring of recent datagram hashes.
//!
//! Real servers send some messages twice byte for byte (spec-notes B: ENTITY_DESTROYED), and
//! messages without sequence or tick (destroys use 0 for both) repeat legitimately over a
//! session, so only a repeat within [`WINDOW_NANOS`] among the last [`RING`] datagrams of the same
//! direction counts. Datagrams are compared by a 64-bit SipHash of their bytes and length, not
//! stored, which keeps memory fixed; two different datagrams colliding within the window is
//! vanishingly unlikely.

use std::hash::{DefaultHasher, Hasher};

/// Recent datagrams remembered per direction.
pub const RING: usize = 32;
/// How soon a repeat must follow to count as a duplicate.
pub const WINDOW_NANOS: i64 = 100_000_000;

#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    hash: u64,
    frame: u64,
    ts_nanos: i64,
}

/// The last datagrams of one direction.
#[derive(Clone, Debug)]
pub struct Recent {
    ring: [Entry; RING],
    len: usize,
    next: usize,
}

impl Default for Recent {
    fn default() -> Self {
        Recent { ring: [Entry::default(); RING], len: 0, next: 0 }
    }
}

/// The hash datagrams are compared by.
pub fn hash(bytes: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    h.write_usize(bytes.len());
    h.write(bytes);
    h.finish()
}

impl Recent {
    /// Remembers a datagram; returns the frame of an identical one sent within the window.
    pub fn push(&mut self, hash: u64, frame: u64, ts_nanos: i64) -> Option<u64> {
        let original = self.ring[..self.len]
            .iter()
            .filter(|e| e.hash == hash && ts_nanos.saturating_sub(e.ts_nanos) <= WINDOW_NANOS)
            .max_by_key(|e| e.ts_nanos)
            .map(|e| e.frame);
        self.ring[self.next] = Entry { hash, frame, ts_nanos };
        self.next = (self.next + 1) % RING;
        self.len = (self.len + 1).min(RING);
        original
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_within_the_window_only() {
        let mut r = Recent::default();
        let (a, b) = (hash(b"destroy 7"), hash(b"destroy 8"));
        assert_ne!(a, b);
        assert_eq!(r.push(a, 1, 0), None);
        assert_eq!(r.push(b, 2, 1_000), None);
        assert_eq!(r.push(a, 3, 2_000), Some(1));
        assert_eq!(r.push(a, 4, 2_000 + WINDOW_NANOS + 1), None);
        for i in 0..RING as u64 {
            r.push(hash(&i.to_be_bytes()), 10 + i, 3_000 + WINDOW_NANOS);
        }
        assert_eq!(r.push(a, 99, 4_000 + WINDOW_NANOS), None, "pushed out of the ring");
    }
}
