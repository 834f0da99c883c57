//! Budgets: the configuration file's `[budgets]` limits, judged per conversation from its
//! profile (`check` runs the profile when budgets are set). A broken budget is a finding of its
//! own rule (`budget.*`), with the conversation, the frames of its worst window (or datagram, or
//! entity) and the value measured against the budget.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::proto::Rule;

/// The `[budgets]` table: limits `check` holds each conversation to, from its profile. Each is
/// judged on its own; a rate is judged over every 1 s window too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budgets {
    /// Snapshot bandwidth to one client (UDP payload), kbit/s, in any 1 s window.
    pub snapshot_kbps_per_client: Option<f64>,
    /// The largest UDP payload of a datagram, bytes.
    pub datagram_bytes_max: Option<f64>,
    /// The fewest updates per second of an entity alive 1 s or more.
    pub entity_updates_per_s_min: Option<f64>,
    /// The fewest snapshot ticks in any 1 s window of the snapshot stream.
    pub snapshot_hz_min: Option<f64>,
    /// The 95th-percentile round-trip time, ms.
    pub rtt_p95_ms_max: Option<f64>,
    /// The estimated loss of client messages or of snapshot ticks, percent.
    pub loss_percent_max: Option<f64>,
    /// The longest gap between two snapshot ticks, ms.
    pub snapshot_gap_ms_max: Option<f64>,
}

impl Budgets {
    /// Whether no budget is set.
    pub fn is_empty(&self) -> bool {
        *self == Budgets::default()
    }

    /// Every budget, by its key.
    pub fn entries(&self) -> [(&'static str, Option<f64>); 7] {
        [
            ("snapshot_kbps_per_client", self.snapshot_kbps_per_client),
            ("datagram_bytes_max", self.datagram_bytes_max),
            ("entity_updates_per_s_min", self.entity_updates_per_s_min),
            ("snapshot_hz_min", self.snapshot_hz_min),
            ("rtt_p95_ms_max", self.rtt_p95_ms_max),
            ("loss_percent_max", self.loss_percent_max),
            ("snapshot_gap_ms_max", self.snapshot_gap_ms_max),
        ]
    }

    /// Budgets are positive numbers (a loss a percentage from 0 to 100).
    pub fn check(&self) -> Result<(), String> {
        for (key, value) in self.entries() {
            let Some(v) = value else { continue };
            let percent = key == "loss_percent_max";
            let ok = v.is_finite()
                && if percent {
                    (0.0..=100.0).contains(&v)
                } else {
                    v > 0.0
                };
            if !ok {
                let what = if percent {
                    "a percentage from 0 to 100"
                } else {
                    "a positive number"
                };
                return Err(format!("budgets.{key} must be {what}, not {v}"));
            }
        }
        Ok(())
    }
}

/// One budget broken by one conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetBreak {
    pub rule: Rule,
    /// The budget's key in the configuration file.
    pub key: &'static str,
    pub conversation: u32,
    pub client: String,
    pub measured: f64,
    pub budget: f64,
    pub unit: &'static str,
    /// The frames the worst window spans (or the worst datagram's, twice).
    pub first_frame: u64,
    pub last_frame: u64,
    /// What was measured, in words (the entity, the sequence family…).
    pub what: String,
}

impl BudgetBreak {
    /// `312.4 kbit/s > 256 kbit/s`, as the reports say it.
    pub fn comparison(&self) -> String {
        let op = if self.key.ends_with("_min") { "<" } else { ">" };
        format!(
            "{} {} {op} {} {}",
            short(self.measured),
            self.unit,
            short(self.budget),
            self.unit
        )
    }

    /// The break as the reports write it, with its comparison where the HTML report shows it.
    pub fn written(&self, with_comparison: bool) -> BrokenBudget<'_> {
        BrokenBudget {
            budget: self.budget,
            budget_key: self.key,
            client: &self.client,
            comparison: with_comparison.then(|| self.comparison()),
            conversation: self.conversation,
            first_frame: self.first_frame,
            id: self.rule.id(),
            last_frame: self.last_frame,
            measured: self.measured,
            unit: self.unit,
            what: &self.what,
        }
    }
}

/// A broken budget in `check --format json` and in the data the HTML report embeds.
// The fields are in the order serde_json's sorted maps wrote them before.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct BrokenBudget<'a> {
    budget: f64,
    /// The budget's key in the configuration file.
    budget_key: &'static str,
    client: &'a str,
    /// `312.4 kbit/s > 256 kbit/s`, as the reports say it (the HTML report's data only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    comparison: Option<String>,
    conversation: u32,
    /// The first frame of the worst window (or the worst datagram).
    first_frame: u64,
    /// The budget's rule.
    #[schemars(regex(pattern = r"^budget\."))]
    id: &'static str,
    last_frame: u64,
    measured: f64,
    unit: &'static str,
    /// What was measured, in words.
    what: &'a str,
}

/// A number with at most 2 decimals, without trailing zeros.
pub(crate) fn short(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn f(v: &Json) -> Option<f64> {
    v.as_f64()
}

fn frame(v: &Json) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// The budgets `profile` (a profile document) breaks, conversation by conversation.
pub fn judge(profile: &Json, budgets: &Budgets) -> Vec<BudgetBreak> {
    let mut out = Vec::new();
    for c in profile["conversations"].as_array().into_iter().flatten() {
        let conversation = c["id"].as_u64().unwrap_or(0) as u32;
        let client = c["client"].as_str().unwrap_or("").to_owned();
        let mut broke = |rule, key, measured: f64, budget, unit, frames: (u64, u64), what| {
            out.push(BudgetBreak {
                rule,
                key,
                conversation,
                client: client.clone(),
                measured,
                budget,
                unit,
                first_frame: frames.0,
                last_frame: frames.1,
                what,
            })
        };
        let s = &c["snapshots"];
        if let (Some(budget), Some(kbps)) = (
            budgets.snapshot_kbps_per_client,
            f(&s["peak"]["kbps"]).filter(|_| s["datagrams"].as_u64() > Some(0)),
        ) {
            if kbps > budget {
                let p = &s["peak"];
                broke(
                    Rule::BudgetSnapshotKbps,
                    "snapshot_kbps_per_client",
                    kbps,
                    budget,
                    "kbit/s",
                    (frame(&p["first_frame"]), frame(&p["last_frame"])),
                    "snapshot bytes in the busiest second".into(),
                );
            }
        }
        let largest = &c["datagram_sizes"]["largest"];
        if let (Some(budget), Some(bytes)) = (budgets.datagram_bytes_max, f(&largest["bytes"])) {
            if bytes > budget {
                let at = frame(&largest["frame"]);
                broke(
                    Rule::BudgetDatagramBytes,
                    "datagram_bytes_max",
                    bytes,
                    budget,
                    "bytes",
                    (at, at),
                    "the largest datagram's UDP payload".into(),
                );
            }
        }
        let slowest = &c["entities"]["slowest"];
        if let (Some(budget), Some(rate)) = (
            budgets.entity_updates_per_s_min,
            f(&slowest["updates_per_s"]),
        ) {
            if rate < budget {
                broke(
                    Rule::BudgetEntityUpdateRate,
                    "entity_updates_per_s_min",
                    rate,
                    budget,
                    "updates/s",
                    (
                        frame(&slowest["first_frame"]),
                        frame(&slowest["last_frame"]),
                    ),
                    format!("entity {}", slowest["entity"]),
                );
            }
        }
        let quiet = &s["quietest_second"];
        if let (Some(budget), Some(ticks)) = (budgets.snapshot_hz_min, f(&quiet["ticks"])) {
            if ticks < budget {
                broke(
                    Rule::BudgetSnapshotHz,
                    "snapshot_hz_min",
                    ticks,
                    budget,
                    "Hz",
                    (frame(&quiet["before_frame"]), frame(&quiet["after_frame"])),
                    "snapshot ticks in the quietest second (between the frames)".into(),
                );
            }
        }
        let rtt = &c["distributions"]["rtt_ms"];
        if let (Some(budget), Some(p95)) = (budgets.rtt_p95_ms_max, f(&rtt["p95"])) {
            if p95 > budget {
                let at = frame(&c["rtt_max_frame"]);
                broke(
                    Rule::BudgetRttP95,
                    "rtt_p95_ms_max",
                    p95,
                    budget,
                    "ms",
                    (at, at),
                    format!("p95 of {} round trips (frame: the longest)", rtt["count"]),
                );
            }
        }
        let gap = &c["distributions"]["snapshot_gap_ms"];
        if let (Some(budget), Some(longest)) = (budgets.snapshot_gap_ms_max, f(&gap["max"])) {
            if longest > budget {
                let at = frame(&c["snapshot_gap_max_frame"]);
                broke(
                    Rule::BudgetSnapshotGap,
                    "snapshot_gap_ms_max",
                    longest,
                    budget,
                    "ms",
                    (at, at),
                    "the longest gap between snapshot ticks (frame: the snapshot after it)".into(),
                );
            }
        }
        if let Some(budget) = budgets.loss_percent_max {
            let loss = &c["loss"];
            let worst = [
                ("client messages", "client"),
                ("snapshot ticks", "snapshots"),
            ]
            .into_iter()
            .filter_map(|(name, key)| Some((name, f(&loss[key]["percent"])?)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
            if let Some((name, percent)) = worst.filter(|w| w.1 > budget) {
                let p = &loss["peak"];
                broke(
                    Rule::BudgetLossPercent,
                    "loss_percent_max",
                    percent,
                    budget,
                    "%",
                    (frame(&p["first_frame"]), frame(&p["last_frame"])),
                    format!("{name} (frames: the second with the most losses)"),
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_budget_judged_from_its_figure() {
        let profile = json!({"conversations": [{
            "id": 3, "client": "10.0.0.2:41002",
            "snapshots": {"datagrams": 10, "peak": {"kbps": 300.5, "first_frame": 4, "last_frame": 90},
                "quietest_second": {"ticks": 40, "before_frame": 100, "after_frame": 140}},
            "datagram_sizes": {"largest": {"bytes": 1300, "frame": 77}},
            "entities": {"slowest": {"entity": 68, "updates_per_s": 12.5, "first_frame": 5, "last_frame": 500}},
            "distributions": {"rtt_ms": {"p95": 80.25, "count": 20},
                "snapshot_gap_ms": {"max": 200.4}},
            "rtt_max_frame": 321, "snapshot_gap_max_frame": 268,
            "loss": {"client": {"percent": 0.5}, "snapshots": {"percent": 2.0},
                "peak": {"first_frame": 200, "last_frame": 260}},
        }]});
        let all = Budgets {
            snapshot_kbps_per_client: Some(256.0),
            datagram_bytes_max: Some(1200.0),
            entity_updates_per_s_min: Some(20.0),
            snapshot_hz_min: Some(55.0),
            rtt_p95_ms_max: Some(50.0),
            loss_percent_max: Some(1.0),
            snapshot_gap_ms_max: Some(100.0),
        };
        let broken = judge(&profile, &all);
        let seen: Vec<(Rule, String, u64, u64)> = broken
            .iter()
            .map(|b| (b.rule, b.comparison(), b.first_frame, b.last_frame))
            .collect();
        assert_eq!(
            seen,
            [
                (
                    Rule::BudgetSnapshotKbps,
                    "300.5 kbit/s > 256 kbit/s".into(),
                    4,
                    90
                ),
                (
                    Rule::BudgetDatagramBytes,
                    "1300 bytes > 1200 bytes".into(),
                    77,
                    77
                ),
                (
                    Rule::BudgetEntityUpdateRate,
                    "12.5 updates/s < 20 updates/s".into(),
                    5,
                    500
                ),
                (Rule::BudgetSnapshotHz, "40 Hz < 55 Hz".into(), 100, 140),
                (Rule::BudgetRttP95, "80.25 ms > 50 ms".into(), 321, 321),
                (
                    Rule::BudgetSnapshotGap,
                    "200.4 ms > 100 ms".into(),
                    268,
                    268
                ),
                (Rule::BudgetLossPercent, "2 % > 1 %".into(), 200, 260),
            ]
        );
        assert_eq!(broken[2].what, "entity 68");
        assert!(broken[6].what.starts_with("snapshot ticks"));
        // Within every budget: nothing.
        let loose = Budgets {
            snapshot_kbps_per_client: Some(400.0),
            datagram_bytes_max: Some(1400.0),
            entity_updates_per_s_min: Some(10.0),
            snapshot_hz_min: Some(30.0),
            rtt_p95_ms_max: Some(100.0),
            loss_percent_max: Some(5.0),
            snapshot_gap_ms_max: Some(250.0),
        };
        assert_eq!(judge(&profile, &loose), []);
        assert_eq!(judge(&profile, &Budgets::default()), []);
    }
}
