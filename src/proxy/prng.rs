//! SplitMix64 (Steele, Lea, Flood 2014): a tiny deterministic generator, so that `--seed` gives
//! the same decisions on every machine and release. Not for secrets.

/// One stream of pseudo-random numbers.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    #[cfg(test)]
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The stream of one client and direction: its decisions do not depend on how the other
    /// clients' datagrams interleave with its own.
    pub fn stream(seed: u64, client: u64, direction: u64) -> SplitMix64 {
        let mut mix = SplitMix64(seed ^ client.wrapping_mul(0xA076_1D64_78BD_642F));
        let first = mix.next_u64() ^ direction.wrapping_mul(0xE703_7ED1_A0B4_28DB);
        SplitMix64(first)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1), from the top 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_values() {
        // The published SplitMix64 sequence for seed 0.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn streams_differ_and_repeat() {
        let a: Vec<u64> = (0..4)
            .map(|_| SplitMix64::stream(7, 1, 0).next_u64())
            .collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(
            SplitMix64::stream(7, 1, 0).next_u64(),
            SplitMix64::stream(7, 1, 1).next_u64()
        );
        let mut r = SplitMix64::new(42);
        let hits = (0..100_000).filter(|_| r.unit() < 0.25).count();
        assert!((24_000..26_000).contains(&hits), "{hits}");
    }
}
