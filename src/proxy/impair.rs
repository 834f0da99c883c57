//! The impairment model of one direction of one client: what happens to each datagram (lost,
//! delayed, duplicated, let through early), drawn from its own [`SplitMix64`] stream so that the
//! same seed and the same datagrams give the same decisions.
//!
//! Delay is `--delay` plus a uniform draw in ±`--jitter` (at least 0); without `--jitter-reorder`
//! a datagram never leaves before the one before it (jitter stretches gaps, as on a real path).
//! `--reorder P` sends P of the datagrams at once, so they overtake the delayed ones (netem's
//! model). `--rate` serialises datagrams at that many bits per second behind each other.
//! Gilbert-Elliott burst loss: a good and a bad state, `p` the chance to go bad per datagram, `r`
//! to come back, with a loss chance in each state (0 and 1 by default: Gilbert's model).

use std::fmt;

use super::prng::SplitMix64;

/// The impairments of a direction, as the command line gave them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Settings {
    pub delay_ns: u64,
    pub jitter_ns: u64,
    /// Jitter may reorder datagrams.
    pub jitter_reorder: bool,
    /// Independent loss, 0 to 1.
    pub loss: f64,
    pub burst: Option<Burst>,
    pub duplicate: f64,
    /// Share of datagrams sent at once, overtaking the delayed ones.
    pub reorder: f64,
    /// Bits per second, serialised.
    pub rate_bps: Option<u64>,
    /// Largest UDP payload let through (bytes of the datagram, headers excluded).
    pub mtu: Option<usize>,
}

impl Settings {
    /// Whether anything is impaired at all.
    pub fn is_none(&self) -> bool {
        *self == Settings::default()
    }
}

/// Gilbert-Elliott parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Burst {
    /// Good to bad, per datagram.
    pub p: f64,
    /// Bad to good, per datagram.
    pub r: f64,
    pub loss_good: f64,
    pub loss_bad: f64,
}

/// Why a datagram was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    Loss,
    Burst,
    Mtu,
    Schedule,
    /// The client's queue was full (a flood): the proxy's own bound, not an impairment asked for.
    Queue,
}

impl Cause {
    pub fn name(self) -> &'static str {
        match self {
            Cause::Loss => "loss",
            Cause::Burst => "burst loss",
            Cause::Mtu => "mtu",
            Cause::Schedule => "schedule",
            Cause::Queue => "queue full",
        }
    }
}

/// What happens to one datagram: delays are from its arrival, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    Dropped(Cause),
    Delivered {
        delay_ns: u64,
        /// A second copy, and its delay.
        duplicate_ns: Option<u64>,
        /// Sent at once, ahead of the delayed ones (`--reorder`).
        reordered: bool,
    },
}

impl fmt::Display for Fate {
    /// The record's comment on the sending side.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Fate::Dropped(cause) => write!(f, "proxy: dropped ({})", cause.name()),
            Fate::Delivered {
                delay_ns,
                duplicate_ns,
                reordered,
            } => {
                write!(f, "proxy: delayed {}", Ms(delay_ns))?;
                if reordered {
                    f.write_str(", reordered")?;
                }
                if let Some(d) = duplicate_ns {
                    write!(f, ", duplicated (copy delayed {})", Ms(d))?;
                }
                Ok(())
            }
        }
    }
}

/// Nanoseconds shown as milliseconds with three decimals.
pub struct Ms(pub u64);

impl fmt::Display for Ms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03} ms", self.0 / 1_000_000, self.0 / 1000 % 1000)
    }
}

/// The state of one direction of one client.
pub struct Impairer {
    rng: SplitMix64,
    bad: bool,
    /// When the last datagram leaves, for order keeping and the rate (ns on the proxy's clock).
    last_out_ns: u64,
}

impl Impairer {
    pub fn new(rng: SplitMix64) -> Impairer {
        Impairer {
            rng,
            bad: false,
            last_out_ns: 0,
        }
    }

    /// Decides the fate of a datagram of `len` bytes arriving at `now_ns`. Every datagram draws
    /// the same number of values whatever the outcome, so one decision never shifts the next.
    pub fn decide(&mut self, s: &Settings, now_ns: u64, len: usize) -> Fate {
        let [lose, transition, burst_lose, jitter, dup, dup_jitter, reorder] =
            std::array::from_fn(|_| self.rng.unit());
        if s.mtu.is_some_and(|m| len > m) {
            return Fate::Dropped(Cause::Mtu);
        }
        if let Some(b) = s.burst {
            self.bad = if self.bad {
                transition >= b.r
            } else {
                transition < b.p
            };
            let p = if self.bad { b.loss_bad } else { b.loss_good };
            if burst_lose < p {
                return Fate::Dropped(Cause::Burst);
            }
        }
        if lose < s.loss {
            return Fate::Dropped(Cause::Loss);
        }
        let reordered = reorder < s.reorder;
        let jittered = |u: f64| {
            let spread = (2.0 * u - 1.0) * s.jitter_ns as f64;
            (s.delay_ns as f64 + spread).max(0.0) as u64
        };
        let mut out = now_ns + if reordered { 0 } else { jittered(jitter) };
        if !reordered && !s.jitter_reorder {
            out = out.max(self.last_out_ns);
        }
        if let Some(bps) = s.rate_bps.filter(|&b| b > 0) {
            let wire = (len as u128 * 8 * 1_000_000_000 / bps as u128) as u64;
            out = out.max(self.last_out_ns) + wire;
        }
        if !reordered {
            self.last_out_ns = self.last_out_ns.max(out);
        }
        let duplicate_ns = (dup < s.duplicate).then(|| {
            let copy = now_ns + jittered(dup_jitter);
            copy.max(out) - now_ns
        });
        Fate::Delivered {
            delay_ns: out - now_ns,
            duplicate_ns,
            reordered,
        }
    }
}

/// `80ms`, `1.5s`, `250us`, `0`.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (number, scale) = [("ms", 1e6), ("us", 1e3), ("ns", 1.0), ("s", 1e9)]
        .iter()
        .find_map(|(unit, scale)| t.strip_suffix(unit).map(|n| (n, *scale)))
        .unwrap_or((t, 1e6));
    match number.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && v * scale < 3.6e12 => Ok((v * scale) as u64),
        _ => Err(format!(
            "`{text}` is not a duration (e.g. 80ms, 1.5s; at most an hour)"
        )),
    }
}

/// `5%` or `0.05`: a probability.
pub fn parse_percent(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let v = match t.strip_suffix('%') {
        Some(n) => n.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    };
    match v {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("`{text}` is not a probability (e.g. 5% or 0.05)")),
    }
}

/// `256kbit`, `2mbit`, `1gbit`, `9600bit`: bits per second.
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let (number, scale) = [("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1.0)]
        .iter()
        .find_map(|(unit, scale)| t.strip_suffix(unit).map(|n| (n.to_owned(), *scale)))
        .unwrap_or((t.clone(), 1.0));
    match number.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v * scale >= 1.0 && v * scale <= 1e12 => Ok((v * scale) as u64),
        _ => Err(format!("`{text}` is not a rate (e.g. 256kbit, 2mbit)")),
    }
}

/// `P,R` or `P,R,LOSS_GOOD,LOSS_BAD`, each a probability.
pub fn parse_burst(text: &str) -> Result<Burst, String> {
    let parts: Vec<&str> = text.split(',').collect();
    let p = |i: usize| parse_percent(parts[i]);
    match parts.len() {
        2 | 4 => Ok(Burst {
            p: p(0)?,
            r: p(1)?,
            loss_good: if parts.len() == 4 { p(2)? } else { 0.0 },
            loss_bad: if parts.len() == 4 { p(3)? } else { 1.0 },
        }),
        _ => Err(format!(
            "`{text}`: give P,R (go bad, go good) or P,R,LOSS_GOOD,LOSS_BAD"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(s: &Settings, n: usize, seed: u64) -> Vec<Fate> {
        let mut i = Impairer::new(SplitMix64::stream(seed, 0, 0));
        (0..n)
            .map(|k| i.decide(s, k as u64 * 16_666_667, 100))
            .collect()
    }

    #[test]
    fn parsing() {
        assert_eq!(parse_duration("80ms"), Ok(80_000_000));
        assert_eq!(parse_duration("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_duration("20"), Ok(20_000_000));
        assert!(parse_duration("-1ms").is_err() && parse_duration("2h").is_err());
        assert_eq!(parse_percent("5%"), Ok(0.05));
        assert_eq!(parse_percent("0.25"), Ok(0.25));
        assert!(parse_percent("150%").is_err() && parse_percent("x").is_err());
        assert_eq!(parse_rate("256kbit"), Ok(256_000));
        assert_eq!(parse_rate("2Mbit"), Ok(2_000_000));
        assert!(parse_rate("0kbit").is_err());
        let b = parse_burst("1%,30%").unwrap();
        assert_eq!((b.p, b.r, b.loss_good, b.loss_bad), (0.01, 0.3, 0.0, 1.0));
        assert!(parse_burst("1%").is_err());
    }

    #[test]
    fn loss_and_duplication_rates_and_the_seed() {
        let s = Settings {
            loss: 0.05,
            duplicate: 0.02,
            delay_ns: 80_000_000,
            ..Settings::default()
        };
        let fates = run(&s, 20_000, 9);
        let lost = fates
            .iter()
            .filter(|f| matches!(f, Fate::Dropped(_)))
            .count();
        let dups = fates
            .iter()
            .filter(|f| {
                matches!(
                    f,
                    Fate::Delivered {
                        duplicate_ns: Some(_),
                        ..
                    }
                )
            })
            .count();
        // Binomial: 5 % of 20 000 is 1000 ± 31 (one sigma); 2 % of the 19 000 kept is 380 ± 19.
        assert!((880..1120).contains(&lost), "{lost}");
        assert!((300..460).contains(&dups), "{dups}");
        assert_eq!(fates, run(&s, 20_000, 9));
        assert_ne!(fates, run(&s, 20_000, 10));
    }

    #[test]
    fn gilbert_elliott_losses_come_in_bursts() {
        let s = Settings {
            burst: Some(parse_burst("2%,25%").unwrap()),
            ..Settings::default()
        };
        let fates = run(&s, 50_000, 3);
        let lost: Vec<bool> = fates
            .iter()
            .map(|f| matches!(f, Fate::Dropped(_)))
            .collect();
        let total = lost.iter().filter(|&&l| l).count() as f64;
        // Stationary bad share p / (p + r) = 0.02 / 0.27 = 7.4 %; mean burst 1 / r = 4.
        let share = total / 50_000.0;
        assert!((0.06..0.09).contains(&share), "{share}");
        let bursts = lost.windows(2).filter(|w| !w[0] && w[1]).count() as f64;
        let mean = total / bursts;
        assert!((3.4..4.6).contains(&mean), "{mean}");
    }

    #[test]
    fn jitter_keeps_order_unless_asked_and_rate_serialises() {
        let s = Settings {
            delay_ns: 50_000_000,
            jitter_ns: 40_000_000,
            ..Settings::default()
        };
        let mut i = Impairer::new(SplitMix64::new(1));
        let mut last = 0;
        for k in 0..1000u64 {
            let now = k * 1_000_000;
            let Fate::Delivered { delay_ns, .. } = i.decide(&s, now, 10) else {
                panic!()
            };
            assert!((10_000_000..=90_000_000).contains(&delay_ns) || now + delay_ns == last);
            assert!(now + delay_ns >= last);
            last = now + delay_ns;
        }
        // 1000 bytes at 80 kbit/s take 100 ms each: the third leaves 300 ms after the first came.
        let s = Settings {
            rate_bps: Some(80_000),
            ..Settings::default()
        };
        let mut i = Impairer::new(SplitMix64::new(1));
        let delays: Vec<Fate> = (0..3).map(|_| i.decide(&s, 0, 1000)).collect();
        let expect = |ms: u64| Fate::Delivered {
            delay_ns: ms * 1_000_000,
            duplicate_ns: None,
            reordered: false,
        };
        assert_eq!(delays, vec![expect(100), expect(200), expect(300)]);
        let s = Settings {
            mtu: Some(1200),
            ..Settings::default()
        };
        assert_eq!(i.decide(&s, 0, 1201), Fate::Dropped(Cause::Mtu));
    }
}
