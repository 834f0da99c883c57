//! The busiest and the quietest 1 s of a stream: a sliding window over 100 slots of 10 ms, so
//! memory is fixed however fast the stream goes, and each window's frames are known.
//!
//! A window is the 100 slots ending at one (its last slot included): the peak is taken over
//! windows ending at each event, so it catches the window's exact content up to the 10 ms its
//! start is rounded to; the minimum over the windows that lie wholly between the stream's first
//! and last events.

/// Slots per window, and a slot's length.
pub const SLOTS: usize = 100;
pub const SLOT_NANOS: i64 = 10_000_000;
/// Slots kept: the window's, rounded up to a power of two so that a slot's place is a mask.
const RING: usize = 128;

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    amount: u64,
    /// The first and the last frame that fell in the slot (0: none).
    first: u64,
    last: u64,
}

/// The extreme window found, with the frames that bound it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Extreme {
    pub amount: u64,
    /// For a peak: the first and the last frame in the window. For a minimum: the last frame
    /// before the window and the first after it (the stream was quiet between them).
    pub first_frame: u64,
    pub last_frame: u64,
}

/// A stream's 1 s windows.
#[derive(Clone, Debug)]
pub struct Window {
    slots: Box<[Slot; RING]>,
    /// The capture time the newest slot starts at (so most events find their slot without a
    /// division).
    head_start: i64,
    /// Whether the quietest window is wanted (it costs a judgement per slot).
    quiet: bool,
    /// The slot number (capture time / 10 ms) of the newest slot; `None` before the first event.
    head: Option<i64>,
    /// The oldest slot of the current window that holds an event (kept as slots leave, so a
    /// new peak knows its first frame without searching the window).
    oldest: i64,
    first: i64,
    sum: u64,
    /// The last frame before the current window.
    before: u64,
    pub peak: Extreme,
    pub min: Option<Extreme>,
}

impl Default for Window {
    fn default() -> Self {
        Window {
            slots: Box::new([Slot::default(); RING]),
            head_start: 0,
            quiet: false,
            head: None,
            oldest: 0,
            first: 0,
            sum: 0,
            before: 0,
            peak: Extreme::default(),
            min: None,
        }
    }
}

fn index(slot: i64) -> usize {
    (slot as usize) & (RING - 1)
}

impl Window {
    /// A window that also finds the quietest second.
    pub fn with_quietest() -> Window {
        Window {
            quiet: true,
            ..Window::default()
        }
    }

    /// Adds `amount` at `ts_nanos` (frame `frame`); a time before the newest slot counts in it.
    pub fn add(&mut self, ts_nanos: i64, frame: u64, amount: u64) {
        let head = match self.head {
            Some(head) if (ts_nanos.wrapping_sub(self.head_start) as u64) < SLOT_NANOS as u64 => {
                head
            }
            _ => self.place(ts_nanos, frame),
        };
        if self.sum == 0 {
            self.oldest = head;
        }
        let s = &mut self.slots[index(head)];
        if s.first == 0 {
            s.first = frame;
        }
        s.last = frame;
        s.amount += amount;
        self.sum += amount;
        if self.sum > self.peak.amount {
            self.peak = Extreme {
                amount: self.sum,
                first_frame: self.slots[index(self.oldest)].first,
                last_frame: frame,
            };
        }
    }

    /// The newest slot once an event at `ts_nanos` is in, moving the window when it is later.
    fn place(&mut self, ts_nanos: i64, frame: u64) -> i64 {
        let slot = ts_nanos.div_euclid(SLOT_NANOS);
        match self.head {
            None => {
                self.head = Some(slot);
                self.head_start = slot.saturating_mul(SLOT_NANOS);
                self.first = slot;
                slot
            }
            Some(head) if slot > head => {
                self.advance(head, slot, frame);
                self.head_start = slot.saturating_mul(SLOT_NANOS);
                slot
            }
            Some(head) => head,
        }
    }

    /// Moves the newest slot from `head` to `to`, judging each window completed on the way; the
    /// event at `to` (frame `frame`) is the first after them.
    fn advance(&mut self, head: i64, to: i64, frame: u64) {
        // Past a full window of silence, every window in between is empty.
        let steps = (to - head).min(SLOTS as i64 + 1);
        for step in 0..steps {
            let completed = head + step;
            if self.quiet && completed - self.first >= SLOTS as i64 - 1 {
                self.judge_min(frame);
            }
            let leaving = &mut self.slots[index(completed + 1 - SLOTS as i64)];
            if leaving.last != 0 {
                self.before = leaving.last;
            }
            self.sum -= leaving.amount;
            *leaving = Slot::default();
        }
        if self.quiet && to - head > steps {
            // The windows wholly inside the silence hold nothing.
            self.judge_min(frame);
        }
        self.head = Some(to);
        // The oldest slot with an event, now that the window starts later.
        let start = to - (SLOTS as i64 - 1);
        if self.sum == 0 {
            self.oldest = to;
        } else {
            self.oldest = self.oldest.max(start);
            while self.slots[index(self.oldest)].first == 0 && self.oldest < to {
                self.oldest += 1;
            }
        }
    }

    /// Keeps `other`'s peak when it is the busier (windows of two streams do not add up).
    pub fn merge_peak(&mut self, other: &Window) {
        if other.peak.amount > self.peak.amount {
            self.peak = other.peak;
        }
    }

    fn judge_min(&mut self, after: u64) {
        if self.min.is_none_or(|m| self.sum < m.amount) {
            self.min = Some(Extreme {
                amount: self.sum,
                first_frame: self.before,
                last_frame: after,
            });
        }
    }

    /// The quietest window, once the stream spans at least one whole window (the window ending
    /// with its last event counts too).
    pub fn quietest(&self) -> Option<Extreme> {
        let head = self.head.filter(|_| self.quiet)?;
        let mut min = self.min;
        if head - self.first >= SLOTS as i64 - 1 && min.is_none_or(|m| self.sum < m.amount) {
            min = Some(Extreme {
                amount: self.sum,
                first_frame: self.before,
                last_frame: self.slots[index(head)].last,
            });
        }
        min
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    #[test]
    fn peak_is_the_busiest_second_with_its_frames() {
        let mut w = Window::default();
        // 10 bytes every 100 ms for 3 s, and a burst of 5 × 100 bytes at 1.5 s.
        let mut frame = 0;
        for i in 0..30 {
            frame += 1;
            w.add(i * 100 * MS, frame, 10);
            if i == 15 {
                for _ in 0..5 {
                    frame += 1;
                    w.add(i * 100 * MS + MS, frame, 100);
                }
            }
        }
        // The window ending with the burst holds the burst and the 10 events before it
        // (0.6 s .. 1.5 s), or the one ending at 2.4 s (1.5 s .. 2.4 s): 500 + 100 either way;
        // the first found wins.
        assert_eq!(w.peak.amount, 600);
        assert_eq!((w.peak.first_frame, w.peak.last_frame), (7, 21));
    }

    #[test]
    fn quietest_second_and_silences() {
        let mut w = Window::with_quietest();
        // One event every 16 ms for 2 s, then a silence of 700 ms, then 1 s more.
        let mut frame = 0;
        let mut t = 0;
        while t < 2_000 * MS {
            frame += 1;
            w.add(t, frame, 1);
            t += 16 * MS;
        }
        let before_gap = frame;
        t += 700 * MS;
        while t < 3_700 * MS {
            frame += 1;
            w.add(t, frame, 1);
            t += 16 * MS;
        }
        let q = w.quietest().unwrap();
        // The window over the silence holds about 300 ms of events at 62.5 Hz.
        assert!((17..=20).contains(&q.amount), "{q:?}");
        assert!(
            q.first_frame < before_gap && q.last_frame > before_gap,
            "{q:?}"
        );
        // A silence longer than a window: a window with nothing, between the events around it.
        let mut w = Window::with_quietest();
        w.add(0, 1, 1);
        w.add(500 * MS, 2, 1);
        w.add(5_000 * MS, 3, 1);
        w.add(5_100 * MS, 4, 1);
        assert_eq!(
            w.quietest(),
            Some(Extreme {
                amount: 0,
                first_frame: 2,
                last_frame: 3
            })
        );
        // Shorter than a window: no whole window to judge.
        let mut w = Window::with_quietest();
        w.add(0, 1, 1);
        w.add(900 * MS, 2, 1);
        assert_eq!(w.quietest(), None);
        // Timestamps at the ends of i64 neither loop nor overflow.
        let mut w = Window::with_quietest();
        w.add(i64::MIN, 1, 1);
        w.add(i64::MAX, 2, 1);
        assert_eq!(w.quietest().map(|q| q.amount), Some(0));
    }
}
