//! Time buckets: one grid for the whole capture (from its first datagram, `--interval` wide),
//! bounded: when a capture outlasts [`MAX_BUCKETS`] buckets, the interval doubles and every series
//! folds its buckets in pairs, so memory stays flat however long the capture is.

use crate::proto::Direction;

/// Buckets kept per series.
pub const MAX_BUCKETS: usize = 2048;

/// Where each bucket starts, in capture time and in frames.
#[derive(Clone, Debug)]
pub struct Grid {
    /// The requested interval, and the one in use (the requested one doubled by every fold).
    pub requested_nanos: i64,
    pub interval_nanos: i64,
    start: Option<i64>,
    /// The first frame of each bucket up to the newest (an empty bucket gets the next one's), so
    /// a finding known only by its frame finds its bucket.
    first_frames: Vec<u64>,
    /// The capture time the newest bucket starts at (most datagrams fall in it: no division).
    newest_start: i64,
}

impl Grid {
    pub fn new(interval_nanos: i64) -> Grid {
        let interval = interval_nanos.max(1);
        Grid {
            requested_nanos: interval,
            interval_nanos: interval,
            start: None,
            first_frames: Vec::new(),
            newest_start: i64::MAX,
        }
    }

    /// The capture time bucket 0 starts at.
    pub fn start(&self) -> Option<i64> {
        self.start
    }

    /// Buckets so far.
    pub fn buckets(&self) -> usize {
        self.first_frames.len()
    }

    /// The bucket of a datagram at `ts_nanos`, and by how much every series must fold first (1:
    /// not at all). A time before the first datagram counts in bucket 0.
    pub fn place(&mut self, ts_nanos: i64, frame: u64) -> (usize, usize) {
        if let Some(newest) = self.first_frames.len().checked_sub(1) {
            if (ts_nanos.wrapping_sub(self.newest_start) as u64) < self.interval_nanos as u64 {
                return (newest, 1);
            }
        }
        let start = *self.start.get_or_insert(ts_nanos);
        let offset = (i128::from(ts_nanos) - i128::from(start)).max(0);
        let mut fold = 1usize;
        let mut bucket = offset / i128::from(self.interval_nanos);
        while bucket >= MAX_BUCKETS as i128 {
            fold *= 2;
            self.interval_nanos = self.interval_nanos.saturating_mul(2);
            bucket = offset / i128::from(self.interval_nanos);
        }
        if fold > 1 {
            fold_in(&mut self.first_frames, fold, |a, _| a);
        }
        let bucket = bucket as usize;
        while self.first_frames.len() <= bucket {
            self.first_frames.push(frame);
        }
        if bucket + 1 == self.first_frames.len() {
            let from = i128::from(start) + bucket as i128 * i128::from(self.interval_nanos);
            self.newest_start = i64::try_from(from).unwrap_or(i64::MAX);
        }
        (bucket, fold)
    }

    /// The bucket frame `frame` fell in (the last whose first frame is not after it).
    pub fn bucket_of_frame(&self, frame: u64) -> Option<usize> {
        let after = self.first_frames.partition_point(|f| *f <= frame);
        after.checked_sub(1)
    }
}

/// Folds `values` in groups of `factor` (a power of two), combining each group with `combine`.
pub fn fold_in<T: Copy>(values: &mut Vec<T>, factor: usize, combine: impl Fn(T, T) -> T) {
    if factor <= 1 {
        return;
    }
    let folded: Vec<T> = values
        .chunks(factor)
        .map(|group| {
            group
                .iter()
                .copied()
                .reduce(&combine)
                .expect("a chunk is not empty")
        })
        .collect();
    *values = folded;
}

/// One count per bucket, grown as the buckets come.
#[derive(Clone, Debug, Default)]
pub struct Counts(pub Vec<u64>);

impl Counts {
    pub fn add(&mut self, bucket: usize, amount: u64) {
        if self.0.len() <= bucket {
            self.0.resize(bucket + 1, 0);
        }
        self.0[bucket] = self.0[bucket].saturating_add(amount);
    }

    pub fn fold(&mut self, factor: usize) {
        fold_in(&mut self.0, factor, u64::saturating_add);
    }

    /// Keeps the largest value a bucket got (a series of maxima, folded with [`Counts::fold_max`]).
    pub fn raise(&mut self, bucket: usize, value: u64) {
        if self.0.len() <= bucket {
            self.0.resize(bucket + 1, 0);
        }
        self.0[bucket] = self.0[bucket].max(value);
    }

    pub fn fold_max(&mut self, factor: usize) {
        fold_in(&mut self.0, factor, u64::max);
    }
}

/// A conversation's (or the capture's) series; message types keep their bytes' own.
#[derive(Clone, Debug, Default)]
pub struct Series {
    /// Datagrams client to server, server to client.
    pub datagrams: [Counts; 2],
    /// New snapshot ticks.
    pub snapshots: Counts,
    /// Snapshot gaps ending in the bucket: how many, and their sum in microseconds.
    pub gaps: Counts,
    pub gap_micros: Counts,
    /// The longest snapshot gap ending in the bucket, in microseconds: a stall the mean hides.
    pub gap_max_micros: Counts,
    pub rtt_samples: Counts,
    pub rtt_micros: Counts,
    pub losses: Counts,
    pub duplicates: Counts,
    pub findings: Counts,
}

impl Series {
    pub fn fold(&mut self, factor: usize) {
        for c in self.counts_mut() {
            c.fold(factor);
        }
        self.gap_max_micros.fold_max(factor);
    }

    fn counts_mut(&mut self) -> [&mut Counts; 10] {
        let [c2s, s2c] = &mut self.datagrams;
        [
            c2s,
            s2c,
            &mut self.snapshots,
            &mut self.gaps,
            &mut self.gap_micros,
            &mut self.rtt_samples,
            &mut self.rtt_micros,
            &mut self.losses,
            &mut self.duplicates,
            &mut self.findings,
        ]
    }

    pub fn datagram(&mut self, bucket: usize, direction: Option<Direction>) {
        match direction {
            Some(Direction::ClientToServer) => self.datagrams[0].add(bucket, 1),
            Some(Direction::ServerToClient) => self.datagrams[1].add(bucket, 1),
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    #[test]
    fn buckets_fold_when_the_capture_outlasts_them() {
        let mut g = Grid::new(S);
        let mut c = Counts::default();
        for second in 0..(MAX_BUCKETS as i64) {
            let (b, fold) = g.place(second * S, second as u64 + 1);
            assert_eq!((b, fold), (second as usize, 1));
            c.add(b, 1);
        }
        // One more second: the interval doubles, pairs fold.
        let (b, fold) = g.place(MAX_BUCKETS as i64 * S, 9999);
        assert_eq!((b, fold, g.interval_nanos), (MAX_BUCKETS / 2, 2, 2 * S));
        c.fold(fold);
        c.add(b, 1);
        assert_eq!(c.0.len(), MAX_BUCKETS / 2 + 1);
        assert!(c.0[..MAX_BUCKETS / 2].iter().all(|n| *n == 2));
        assert_eq!(g.bucket_of_frame(3), Some(1));
        assert_eq!(g.bucket_of_frame(9999), Some(MAX_BUCKETS / 2));
        // A timestamp far in the future folds many times over, and never loops for long.
        let (b, _) = g.place(i64::MAX, 10_000);
        assert!(b < MAX_BUCKETS);
        assert!(g.buckets() <= MAX_BUCKETS);
    }

    #[test]
    fn frames_find_their_bucket() {
        let mut g = Grid::new(S / 10);
        g.place(0, 1);
        g.place(S / 10, 5);
        // Two empty buckets, then frame 9.
        g.place(4 * S / 10, 9);
        assert_eq!(
            [1, 4, 5, 8, 9, 12].map(|f| g.bucket_of_frame(f)),
            [Some(0), Some(0), Some(1), Some(1), Some(4), Some(4)]
        );
        assert_eq!(g.bucket_of_frame(0), None);
        // Earlier than the start: bucket 0.
        assert_eq!(g.place(-S, 13).0, 0);
    }
}
