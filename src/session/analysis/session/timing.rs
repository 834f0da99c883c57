//! A session's snapshot timing: its periodic streams (one per message type the server sends
//! periodically), the arrivals of new snapshot ticks, and the stalls judged against each one's
//! period.

use super::*;

/// One periodic message type the server sends (rtype's SERVER_SNAPSHOT, rt's component
/// snapshots, rtnp's snapshot): when it came and how often, to judge each on its own.
#[derive(Clone, Copy, Debug)]
pub struct Stream {
    pub name: &'static str,
    pub count: u64,
    /// Frame and time of the first and last datagram.
    pub first: (u64, i64),
    pub last: (u64, i64),
    pub max_gap_nanos: i64,
}

/// A stream's period so far, when it has enough datagrams to be judged periodic: its mean
/// interval, but never shorter than the nominal one (a stream faster than nominal stalls only
/// against nominal), in microseconds.
fn judged_period(count: u64, span_nanos: i64, config: &Config) -> Option<f64> {
    let nominal = 1e6 / config.snapshot_hz;
    (count >= MIN_RATE_TICKS).then(|| (span_nanos as f64 / 1e3 / (count - 1) as f64).max(nominal))
}

/// Whether a gap of `gap` µs stalls a stream of period `period` µs.
fn stalls(gap: u32, period: f64, config: &Config) -> bool {
    f64::from(gap) > period * config.stall_multiple
}

/// A stall's detail: the stream, the gap and the period it was judged against, and the ticks
/// either side of it.
fn stall(stream: &'static str, gap: u32, period: f64, ticks: Option<(u32, u32)>) -> Detail {
    Detail::Stall {
        stream,
        gap_micros: gap,
        period_micros: period.round() as u32,
        ticks,
    }
}

impl Stream {
    /// Datagrams per second between the first and the last.
    pub fn rate_hz(&self) -> Option<f64> {
        let seconds = (self.last.1 - self.first.1) as f64 / 1e9;
        (seconds > 0.0 && self.count > 1).then(|| (self.count - 1) as f64 / seconds)
    }

    /// How long before `end` it fell silent, when that makes it a stream that stopped: enough
    /// datagrams to be periodic, silent over a second and over 10 of its mean periods.
    pub fn stopped_before(&self, end: i64) -> Option<i64> {
        let silent = end.saturating_sub(self.last.1);
        let period = (self.last.1 - self.first.1) / (self.count.max(2) as i64 - 1);
        (self.count >= MIN_RATE_TICKS
            && silent > STREAM_STOPPED_NANOS
            && silent > period.saturating_mul(10))
        .then_some(silent)
    }
}

impl Session {
    pub(super) fn snapshot_tick(
        &mut self,
        tick: u32,
        event: &DatagramEvent<'_>,
        config: &Config,
        report: &mut impl FnMut(Rule, Detail),
    ) {
        let highest = self.snapshot_ticks.highest();
        let arrival = self.snapshot_ticks.push(tick);
        if arrival == Arrival::Duplicate {
            return;
        }
        if matches!(arrival, Arrival::Late)
            || arrival == Arrival::Reset && highest.is_some_and(|h| tick < h)
        {
            report(Rule::SessionTickBackwards, Detail::Value(tick.into()));
        }
        if self.first_arrival.is_none() {
            self.first_tick = Some(tick);
        }
        self.snapshot_arrival(event, Some(tick), config, report);
    }

    /// Counts a datagram of its message's periodic stream (the first [`MAX_STREAMS`] kinds), and
    /// with a `config`, judges whether the stream stalled before it.
    pub(super) fn stream(
        &mut self,
        event: &DatagramEvent<'_>,
        config: Option<&Config>,
        report: &mut impl FnMut(Rule, Detail),
    ) {
        let Some(name) = event.message.map(|m| m.name) else {
            return;
        };
        let at = (event.frame, event.ts_nanos);
        let mut free = None;
        for slot in &mut self.streams {
            match slot {
                Some(s) if s.name == name => {
                    let gap = at.1.saturating_sub(s.last.1);
                    let period = config.and_then(|c| {
                        judged_period(s.count, s.last.1 - s.first.1, c).map(|p| (p, c))
                    });
                    if let Some((period, c)) = period {
                        let gap = super::super::dist::micros(gap);
                        if stalls(gap, period, c) {
                            report(Rule::SessionSnapshotStall, stall(name, gap, period, None));
                        }
                    }
                    s.max_gap_nanos = s.max_gap_nanos.max(gap);
                    s.last = at;
                    s.count += 1;
                    return;
                }
                Some(_) => {}
                None => {
                    free.get_or_insert(slot);
                }
            }
        }
        if let Some(slot) = free {
            *slot = Some(Stream {
                name,
                count: 1,
                first: at,
                last: at,
                max_gap_nanos: 0,
            });
        }
    }

    /// Times a new snapshot's arrival (of `tick`, for dialects with ticks), for the rate and the
    /// gaps, and judges whether the snapshots stalled before it.
    pub(super) fn snapshot_arrival(
        &mut self,
        event: &DatagramEvent<'_>,
        tick: Option<u32>,
        config: &Config,
        report: &mut impl FnMut(Rule, Detail),
    ) {
        self.last.snapshot = true;
        match self.first_arrival {
            None => self.first_arrival = Some((event.frame, event.ts_nanos)),
            Some((_, first)) => {
                let gap =
                    super::super::dist::micros(event.ts_nanos.saturating_sub(self.last_arrival));
                let arrivals = self.snapshot_gaps.count() + 1;
                if let Some(period) = judged_period(arrivals, self.last_arrival - first, config) {
                    if stalls(gap, period, config) {
                        let name = role::static_name(event).unwrap_or("snapshot");
                        let ticks = self.last_arrival_tick.zip(tick);
                        report(Rule::SessionSnapshotStall, stall(name, gap, period, ticks));
                    }
                }
                self.snapshot_gaps.add(gap);
                self.last.snapshot_gap_micros = Some(gap);
            }
        }
        self.last_arrival = event.ts_nanos;
        self.last_arrival_tick = tick;
    }
}
