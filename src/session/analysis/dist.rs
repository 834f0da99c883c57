//! Bounded distributions of durations (snapshot gaps, round-trip times), and of other small
//! numbers kept the same way (the profile's datagram sizes).
//!
//! A capture may hold millions of snapshots, so samples cannot all be kept: the first
//! [`EXACT`] are kept as they are (quantiles of short series are then exact), and past that every
//! sample goes into a log-linear histogram whose buckets are at most 1/32 of their value wide, so
//! a quantile is off by at most 1.6 % (about 0.26 ms on a 16.7 ms snapshot gap). Memory is fixed:
//! 256 bytes, plus 2.5 KiB for the histogram once a series outgrows the exact samples.

/// Samples kept exactly; past this many, quantiles come from the histogram.
pub const EXACT: usize = 64;
/// Sub-buckets per power of two, as a number of bits.
const SUB_BITS: u32 = 5;
const SUB: usize = 1 << SUB_BITS;
/// Values from 2^TOP_BIT µs (16.8 s) up share the last bucket; min and max stay exact.
const TOP_BIT: u32 = 24;
const BUCKETS: usize = SUB + (TOP_BIT - SUB_BITS) as usize * SUB;

/// A distribution of durations in microseconds.
#[derive(Clone, Debug)]
pub struct Durations {
    count: u64,
    sum: u64,
    min: u32,
    max: u32,
    exact: [u32; EXACT],
    histogram: Option<Box<[u32; BUCKETS]>>,
}

impl Default for Durations {
    fn default() -> Self {
        Durations {
            count: 0,
            sum: 0,
            min: u32::MAX,
            max: 0,
            exact: [0; EXACT],
            histogram: None,
        }
    }
}

fn bucket(v: u32) -> usize {
    if (v as usize) < SUB {
        return v as usize;
    }
    let shift = (31 - v.leading_zeros()) - SUB_BITS;
    let index = SUB + shift as usize * SUB + ((v >> shift) as usize - SUB);
    index.min(BUCKETS - 1)
}

/// The middle of a bucket's range.
fn bucket_middle(index: usize) -> u32 {
    if index < SUB {
        return index as u32;
    }
    let shift = ((index - SUB) / SUB) as u32;
    bucket_lower(index) + (1u32 << shift) / 2
}

/// The lowest value of a bucket's range.
fn bucket_lower(index: usize) -> u32 {
    if index < SUB {
        return index as u32;
    }
    let shift = ((index - SUB) / SUB) as u32;
    ((SUB + (index - SUB) % SUB) as u32) << shift
}

impl Durations {
    /// Adds one duration in nanoseconds (negative ones, from timestamps going back, count as 0).
    pub fn add_nanos(&mut self, nanos: i64) {
        self.add(micros(nanos));
    }

    /// Adds one duration in microseconds.
    pub fn add(&mut self, micros: u32) {
        let n = self.count as usize;
        if n < EXACT {
            self.exact[n] = micros;
        } else {
            let histogram = self.histogram.get_or_insert_with(|| {
                let mut h = Box::new([0u32; BUCKETS]);
                for v in self.exact {
                    h[bucket(v)] += 1;
                }
                h
            });
            let b = &mut histogram[bucket(micros)];
            *b = b.saturating_add(1);
        }
        self.count += 1;
        self.sum = self.sum.saturating_add(micros.into());
        self.min = self.min.min(micros);
        self.max = self.max.max(micros);
    }

    /// Adds another distribution's samples (of another conversation, for a capture's totals):
    /// as if they had been added here, within the histogram's precision.
    pub fn merge(&mut self, other: &Durations) {
        let Some(theirs) = &other.histogram else {
            for v in &other.exact[..other.count as usize] {
                self.add(*v);
            }
            return;
        };
        let exact = &self.exact[..(self.count as usize).min(EXACT)];
        let mine = self.histogram.get_or_insert_with(|| {
            let mut h = Box::new([0u32; BUCKETS]);
            for v in exact {
                h[bucket(*v)] += 1;
            }
            h
        });
        for (a, b) in mine.iter_mut().zip(theirs.iter()) {
            *a = a.saturating_add(*b);
        }
        self.count += other.count;
        self.sum = self.sum.saturating_add(other.sum);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    pub fn count(&self) -> u64 {
        self.count
    }
    pub fn min_ms(&self) -> Option<f64> {
        (self.count > 0).then(|| ms(self.min))
    }
    pub fn max_ms(&self) -> Option<f64> {
        (self.count > 0).then(|| ms(self.max))
    }
    pub fn mean_ms(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64 / 1_000.0)
    }

    /// The nearest-rank quantile `q` (0..=1) in milliseconds: the smallest sample with at least
    /// `q` of the samples at or below it. Exact up to [`EXACT`] samples, within 1.6 % after.
    pub fn quantile_ms(&self, q: f64) -> Option<f64> {
        self.quantile(q).map(ms)
    }

    /// The smallest, the largest and the sum of the samples, in the unit they were added in.
    pub fn min(&self) -> Option<u32> {
        (self.count > 0).then_some(self.min)
    }
    pub fn max(&self) -> Option<u32> {
        (self.count > 0).then_some(self.max)
    }
    pub fn sum(&self) -> u64 {
        self.sum
    }

    /// The samples in log buckets, `2^bits` per power of two (at most 32), as `(low, high,
    /// count)` with `low` included and `high` not, empty buckets left out; values below `2^bits`
    /// get a bucket each. Exact: the buckets kept are finer.
    pub fn histogram(&self, bits: u32) -> Vec<(u32, u32, u64)> {
        let bits = bits.min(SUB_BITS);
        let coarse = |v: u32| -> (u32, u32) {
            if v < 1 << bits {
                return (v, v + 1);
            }
            let shift = 31 - v.leading_zeros() - bits;
            let low = (v >> shift) << shift;
            (low, low.saturating_add(1 << shift))
        };
        let mut out: Vec<(u32, u32, u64)> = Vec::new();
        let mut add = |v: u32, n: u64| {
            let (low, high) = coarse(v);
            match out.iter_mut().find(|b| b.0 == low) {
                Some(b) => b.2 += n,
                None => out.push((low, high, n)),
            }
        };
        match &self.histogram {
            None => {
                for v in &self.exact[..self.count as usize] {
                    add(*v, 1);
                }
            }
            Some(h) => {
                for (index, n) in h.iter().enumerate().filter(|(_, n)| **n > 0) {
                    add(bucket_lower(index), u64::from(*n));
                }
            }
        }
        out.sort_unstable();
        out
    }

    /// [`Durations::quantile_ms`] in the unit the samples were added in.
    pub fn quantile(&self, q: f64) -> Option<u32> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).clamp(1, self.count);
        let micros = match &self.histogram {
            None => {
                let mut sorted = self.exact;
                let sorted = &mut sorted[..self.count as usize];
                sorted.sort_unstable();
                sorted[rank as usize - 1]
            }
            // The extremes are known exactly.
            Some(_) if rank == self.count => self.max,
            Some(_) if rank == 1 => self.min,
            Some(h) => {
                let mut seen = 0u64;
                let index = h.iter().position(|c| {
                    seen += u64::from(*c);
                    seen >= rank
                });
                index
                    .map_or(self.max, bucket_middle)
                    .clamp(self.min, self.max)
            }
        };
        Some(micros)
    }
}

/// A duration in nanoseconds as the whole microseconds a distribution keeps (negative ones as 0,
/// saturating at `u32::MAX`, 71 minutes).
pub fn micros(nanos: i64) -> u32 {
    u32::try_from(nanos.max(0) / 1_000).unwrap_or(u32::MAX)
}

fn ms(micros: u32) -> f64 {
    f64::from(micros) / 1_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_ordered_and_narrow() {
        let mut last = 0;
        for v in [
            0u32,
            1,
            31,
            32,
            33,
            63,
            64,
            65,
            1_000,
            16_667,
            100_000,
            (1 << 24) - 1,
        ] {
            let b = bucket(v);
            assert!(b >= last, "{v}");
            last = b;
            let mid = bucket_middle(b);
            assert!(
                (f64::from(mid) - f64::from(v)).abs() <= f64::from(v) / 32.0 + 0.5,
                "{v} -> {mid}"
            );
        }
        assert_eq!(bucket(u32::MAX), BUCKETS - 1);
        assert_eq!(bucket((1 << 24) - 1), BUCKETS - 1);
    }

    #[test]
    fn exact_quantiles_for_short_series() {
        let mut d = Durations::default();
        assert_eq!(d.quantile_ms(0.5), None);
        for v in [5_000, 1_000, 3_000, 2_000, 4_000] {
            d.add(v);
        }
        assert_eq!(d.quantile_ms(0.5), Some(3.0));
        assert_eq!(d.quantile_ms(0.0), Some(1.0));
        assert_eq!(d.quantile_ms(0.99), Some(5.0));
        assert_eq!(
            (d.min_ms(), d.max_ms(), d.mean_ms()),
            (Some(1.0), Some(5.0), Some(3.0))
        );
    }

    #[test]
    fn histogram_quantiles_within_bucket_width() {
        let mut d = Durations::default();
        for i in 0..10_000u32 {
            d.add(if i % 100 == 0 { 33_333 } else { 16_667 });
        }
        let p50 = d.quantile_ms(0.5).unwrap();
        assert!((p50 - 16.667).abs() < 16.667 / 64.0, "{p50}");
        assert_eq!(d.quantile_ms(1.0), Some(33.333));
        assert!((d.quantile_ms(0.995).unwrap() - 33.333).abs() < 33.333 / 64.0);
        assert_eq!(d.count(), 10_000);
    }

    #[test]
    fn histograms_in_log_buckets() {
        let mut d = Durations::default();
        for v in [3, 5, 5, 40, 45, 100] {
            d.add(v);
        }
        // Two buckets per power of two: [4, 6), [32, 48), [96, 128); 3 below 4 alone.
        let exact = d.histogram(1);
        assert_eq!(exact, [(3, 4, 1), (4, 6, 2), (32, 48, 2), (96, 128, 1)]);
        // The same buckets once the samples are past the exact ones.
        for _ in 0..EXACT {
            d.add(1000);
        }
        let mut h = d.histogram(1);
        assert_eq!(h.pop(), Some((768, 1024, EXACT as u64)));
        assert_eq!(h, exact);
        assert_eq!(
            (d.min(), d.max(), d.quantile(0.01)),
            (Some(3), Some(1000), Some(3))
        );
    }

    #[test]
    fn merged_distributions_are_the_samples_together() {
        let (mut a, mut b, mut both) = (
            Durations::default(),
            Durations::default(),
            Durations::default(),
        );
        for i in 0..100u32 {
            a.add(i * 7);
            both.add(i * 7);
        }
        for i in 0..30u32 {
            b.add(5_000 + i);
            both.add(5_000 + i);
        }
        let mut ab = a.clone();
        ab.merge(&b);
        let mut ba = b.clone();
        ba.merge(&a);
        for d in [&ab, &ba] {
            assert_eq!(
                (d.count(), d.sum(), d.min(), d.max()),
                (130, both.sum(), Some(0), Some(5_029))
            );
            assert_eq!(d.histogram(3), both.histogram(3));
            assert_eq!(d.quantile(0.9), both.quantile(0.9));
        }
    }

    #[test]
    fn negative_and_huge_durations_saturate() {
        let mut d = Durations::default();
        d.add_nanos(-5);
        d.add_nanos(i64::MAX);
        assert_eq!(d.min_ms(), Some(0.0));
        assert_eq!(d.max_ms(), Some(f64::from(u32::MAX) / 1_000.0));
    }
}
