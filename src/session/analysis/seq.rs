//! Sequence analysis of one message family: estimated loss, duplicates, reorders.
//!
//! Numbers are compared in serial-number arithmetic (RFC 1982) at the family's width, so a u16
//! sequence may wrap. Like an anti-replay window (RFC 4303 §3.4.3), the tracker remembers which of
//! the last [`WINDOW`] numbers below the highest arrived: a number filling a hole is a late
//! (reordered) arrival and takes one back from the estimated loss; a number seen already is a
//! duplicate; a number further back than the window, or further ahead than [`MAX_JUMP`], means
//! the counter was reset, and tracking starts again from it. Memory is fixed.

/// How far below the highest number arrivals are remembered.
pub const WINDOW: u32 = 128;
/// A jump forward longer than this is a reset, not a loss (about 4.9 hours of 60 Hz ticks).
pub const MAX_JUMP: u32 = 1 << 20;

/// What one number was, relative to the ones before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// The first number, or one above every number before it.
    New,
    /// Below the highest, not seen before: delivered out of order.
    Late,
    Duplicate,
    /// Far below the highest, or far above it: the counter started again.
    Reset,
}

/// The counters of one family.
#[derive(Clone, Debug)]
pub struct Sequence {
    bits: u32,
    started: bool,
    highest: u32,
    /// Bit i set: number `highest - i` arrived.
    window: u128,
    /// Distinct numbers received.
    pub received: u64,
    /// Numbers skipped and not (yet) arrived late: the estimated loss.
    pub lost: u64,
    pub duplicates: u64,
    pub reordered: u64,
    pub resets: u64,
}

impl Sequence {
    /// A family whose numbers are `bits` wide (16 or 32).
    pub fn new(bits: u32) -> Sequence {
        let bits = bits.clamp(2, 32);
        Sequence {
            bits,
            started: false,
            highest: 0,
            window: 0,
            received: 0,
            lost: 0,
            duplicates: 0,
            reordered: 0,
            resets: 0,
        }
    }

    pub fn started(&self) -> bool {
        self.started
    }

    /// The highest number seen (since the last reset).
    pub fn highest(&self) -> Option<u32> {
        self.started.then_some(self.highest)
    }

    /// The estimated loss as a fraction of the numbers expected.
    pub fn loss_ratio(&self) -> f64 {
        let expected = self.received + self.lost;
        if expected == 0 {
            0.0
        } else {
            self.lost as f64 / expected as f64
        }
    }

    /// `value - highest` as a signed serial-number distance.
    fn distance(&self, value: u32) -> i64 {
        let modulus = 1u64 << self.bits;
        let d = u64::from(value.wrapping_sub(self.highest)) & (modulus - 1);
        if d >= modulus / 2 {
            d as i64 - modulus as i64
        } else {
            d as i64
        }
    }

    pub fn push(&mut self, value: u32) -> Arrival {
        if !self.started {
            self.started = true;
            self.highest = value;
            self.window = 1;
            self.received = 1;
            return Arrival::New;
        }
        let d = self.distance(value);
        if d > i64::from(MAX_JUMP) || d <= -i64::from(WINDOW) {
            self.resets += 1;
            self.highest = value;
            self.window = 1;
            self.received += 1;
            return Arrival::Reset;
        }
        if d > 0 {
            self.lost += d as u64 - 1;
            self.window = if d >= i64::from(WINDOW) {
                1
            } else {
                (self.window << d) | 1
            };
            self.highest = value;
            self.received += 1;
            return Arrival::New;
        }
        let bit = 1u128 << (-d);
        if self.window & bit != 0 {
            self.duplicates += 1;
            return Arrival::Duplicate;
        }
        self.window |= bit;
        self.reordered += 1;
        self.lost = self.lost.saturating_sub(1);
        self.received += 1;
        Arrival::Late
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(bits: u32, values: &[u32]) -> (Sequence, Vec<Arrival>) {
        let mut s = Sequence::new(bits);
        let arrivals = values.iter().map(|v| s.push(*v)).collect();
        (s, arrivals)
    }

    #[test]
    fn gaps_duplicates_and_late_arrivals() {
        use Arrival::*;
        let (s, a) = run(32, &[10, 11, 14, 12, 12, 15, 15]);
        assert_eq!(a, vec![New, New, New, Late, Duplicate, New, Duplicate]);
        assert_eq!(
            (s.received, s.lost, s.duplicates, s.reordered, s.resets),
            (5, 1, 2, 1, 0)
        );
        assert!((s.loss_ratio() - 1.0 / 6.0).abs() < 1e-9);
    }

    #[test]
    fn sixteen_bit_sequences_wrap() {
        use Arrival::*;
        let (s, a) = run(16, &[65_534, 65_535, 0, 2, 1]);
        assert_eq!(a, vec![New, New, New, New, Late]);
        assert_eq!((s.lost, s.reordered), (0, 1));
    }

    #[test]
    fn resets_start_again() {
        use Arrival::*;
        let (s, a) = run(32, &[5_000, 5_001, 10, 11, 3_000_000]);
        assert_eq!(a, vec![New, New, Reset, New, Reset]);
        assert_eq!((s.resets, s.lost, s.highest()), (2, 0, Some(3_000_000)));
        let (s, _) = run(32, &[0, 200, 50]);
        assert_eq!((s.lost, s.resets), (199, 1));
    }
}
