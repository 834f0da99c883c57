//! Networks by name (`--preset`): the figures of common links, per direction, that the other
//! impairment options then adjust.
//!
//! The figures are Loadero's table of network conditions
//! (<https://wiki.loadero.com/test-creation/participant-configuration/network-conditions/>), a
//! reference that WebRTC and browser test suites use: bandwidth down and up, loss, latency and
//! jitter. Latency is applied as the delay of each direction, jitter likewise.

use super::impair::{parse_duration, parse_percent, parse_rate, Settings};

/// One network: its name, and its figures down (server to client) and up.
#[derive(Debug)]
pub struct Preset {
    pub name: &'static str,
    down: Figures,
    up: Figures,
}

/// One direction's figures.
#[derive(Debug)]
struct Figures {
    kbit: Option<u64>,
    loss_percent: f64,
    delay_ms: u64,
    jitter_ms: u64,
}

const fn figures(kbit: Option<u64>, loss_percent: f64, delay_ms: u64, jitter_ms: u64) -> Figures {
    Figures {
        kbit,
        loss_percent,
        delay_ms,
        jitter_ms,
    }
}

/// The same figures both ways but the bandwidth.
const fn preset(
    name: &'static str,
    kbit: (Option<u64>, Option<u64>),
    loss_percent: f64,
    delay_ms: u64,
    jitter_ms: (u64, u64),
) -> Preset {
    Preset {
        name,
        down: figures(kbit.0, loss_percent, delay_ms, jitter_ms.0),
        up: figures(kbit.1, loss_percent, delay_ms, jitter_ms.1),
    }
}

pub const PRESETS: &[Preset] = &[
    preset("4g", (Some(100_000), Some(50_000)), 0.2, 45, (5, 15)),
    preset("3.5g", (Some(20_000), Some(10_000)), 0.5, 150, (10, 10)),
    preset("3g", (Some(1_200), Some(1_200)), 0.5, 250, (50, 50)),
    preset("edge", (Some(200), Some(260)), 1.0, 650, (100, 100)),
    preset("gprs", (Some(80), Some(20)), 1.0, 650, (100, 100)),
    preset("satellite", (Some(1_000), Some(256)), 0.0, 600, (0, 0)),
    preset("high-latency", (None, None), 0.0, 500, (50, 50)),
    preset("high-jitter", (None, None), 0.0, 200, (100, 100)),
];

impl Preset {
    /// The preset named `name`, or an error listing them.
    pub fn named(name: &str) -> Result<&'static Preset, String> {
        PRESETS.iter().find(|p| p.name == name).ok_or_else(|| {
            let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
            format!("no preset {name:?}; the presets are {}", names.join(", "))
        })
    }

    /// The settings of each direction, client to server first (as [`super::select::Dir`]).
    pub fn settings(&self) -> [Settings; 2] {
        [&self.up, &self.down].map(|f| Settings {
            delay_ns: f.delay_ms * 1_000_000,
            jitter_ns: f.jitter_ms * 1_000_000,
            loss: f.loss_percent / 100.0,
            rate_bps: f.kbit.map(|k| k * 1000),
            ..Settings::default()
        })
    }
}

/// `--client N:CHANGES`: the settings of the N-th client to send (1 the first), as changes to
/// everyone's: `preset=NAME` (first), then `delay=`, `jitter=`, `loss=`, `duplicate=`,
/// `reorder=`, `rate=`, `mtu=`, each as its option takes it.
#[derive(Clone, Debug)]
pub struct ClientSettings {
    /// 0 for the first client.
    pub index: usize,
    changes: Vec<Change>,
}

#[derive(Clone, Debug)]
enum Change {
    Preset(&'static Preset),
    Delay(u64),
    Jitter(u64),
    Loss(f64),
    Duplicate(f64),
    Reorder(f64),
    Rate(u64),
    Mtu(usize),
}

/// Parses `N:key=value,...`.
pub fn parse_client(text: &str) -> Result<ClientSettings, String> {
    let usage = || format!("`{text}`: give N:key=value,... (e.g. 2:delay=150ms,loss=5%)");
    let (number, list) = text.split_once(':').ok_or_else(usage)?;
    let index = match number.trim().parse::<usize>() {
        Ok(n @ 1..=4096) => n - 1,
        _ => {
            return Err(format!(
                "`{number}`: the client's number is 1 to 4096 (1: the first to send)"
            ))
        }
    };
    let changes = list
        .split(',')
        .map(|pair| {
            let (key, value) = pair.split_once('=').ok_or_else(usage)?;
            Ok(match key.trim() {
                "preset" => Change::Preset(Preset::named(value)?),
                "delay" => Change::Delay(parse_duration(value)?),
                "jitter" => Change::Jitter(parse_duration(value)?),
                "loss" => Change::Loss(parse_percent(value)?),
                "duplicate" => Change::Duplicate(parse_percent(value)?),
                "reorder" => Change::Reorder(parse_percent(value)?),
                "rate" => Change::Rate(parse_rate(value)?),
                "mtu" => Change::Mtu(value.parse().map_err(|_| format!("`{value}` is not a size in bytes"))?),
                other => {
                    return Err(format!(
                        "`{other}`: a client's settings are preset, delay, jitter, loss, duplicate, reorder, rate and mtu"
                    ))
                }
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(ClientSettings { index, changes })
}

impl ClientSettings {
    /// `everyone`'s settings (client to server first) with this client's changes.
    pub fn apply(&self, everyone: &[Settings; 2]) -> [Settings; 2] {
        let mut both = everyone.clone();
        for change in &self.changes {
            if let Change::Preset(p) = change {
                let reorder = everyone[0].jitter_reorder;
                both = p.settings().map(|s| Settings {
                    jitter_reorder: reorder,
                    ..s
                });
                continue;
            }
            for s in &mut both {
                match *change {
                    Change::Preset(_) => {}
                    Change::Delay(ns) => s.delay_ns = ns,
                    Change::Jitter(ns) => s.jitter_ns = ns,
                    Change::Loss(p) => s.loss = p,
                    Change::Duplicate(p) => s.duplicate = p,
                    Change::Reorder(p) => s.reorder = p,
                    Change::Rate(bps) => s.rate_bps = Some(bps),
                    Change::Mtu(bytes) => s.mtu = Some(bytes),
                }
            }
        }
        both
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preset_gives_each_direction_its_figures() {
        let [up, down] = Preset::named("edge").unwrap().settings();
        assert_eq!(
            (up.rate_bps, down.rate_bps, up.delay_ns, down.jitter_ns),
            (Some(260_000), Some(200_000), 650_000_000, 100_000_000)
        );
        assert_eq!((up.loss, down.loss), (0.01, 0.01));
        assert_eq!(
            Preset::named("5g").err().unwrap(),
            "no preset \"5g\"; the presets are 4g, 3.5g, 3g, edge, gprs, satellite, high-latency, high-jitter"
        );
    }

    #[test]
    fn a_client_changes_everyones_settings() {
        let one = Settings {
            loss: 0.1,
            jitter_reorder: true,
            ..Settings::default()
        };
        let everyone = [one.clone(), one];
        let second = parse_client("2:delay=150ms,loss=5%").unwrap();
        assert_eq!(second.index, 1);
        let [up, down] = second.apply(&everyone);
        assert_eq!(
            (up.delay_ns, up.loss, down.delay_ns, down.loss),
            (150_000_000, 0.05, 150_000_000, 0.05)
        );
        assert!(up.jitter_reorder);
        let [up, down] = parse_client("1:preset=gprs,loss=0")
            .unwrap()
            .apply(&everyone);
        assert_eq!(
            (up.rate_bps, down.rate_bps, up.loss, up.jitter_reorder),
            (Some(20_000), Some(80_000), 0.0, true)
        );
        for (bad, error) in [
            ("0:delay=1ms", "`0`: the client's number is 1 to 4096 (1: the first to send)"),
            ("1:speed=3", "`speed`: a client's settings are preset, delay, jitter, loss, duplicate, reorder, rate and mtu"),
            ("delay=1ms", "`delay=1ms`: give N:key=value,... (e.g. 2:delay=150ms,loss=5%)"),
        ] {
            assert_eq!(parse_client(bad).unwrap_err(), error);
        }
    }
}
