//! `proxy`: a UDP relay between game clients and a server that impairs the traffic on demand
//! (delay, jitter, loss, burst loss, duplication, reordering, rate, MTU), for the datagrams a
//! direction, a display filter and a schedule select, reproducibly (`--seed`), and records what
//! each side sent and what was delivered (`-w`); it decodes what each end was delivered, shown
//! live on a terminal and in the summary; and `replay`, which re-sends a capture's client side to
//! a live server.

mod decode;
mod impair;
mod preset;
mod prng;
mod ready;
mod record;
mod relay;
mod replay;
mod select;
mod tap;
mod view;

pub use replay::{run as replay, ReplayArgs};

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Serialize;

use crate::app::{write_stdout, ColorChoice, Format};
use crate::display_filter::DisplayFilter;
use crate::proto::profile::Profile;
use crate::proto::registry::Registry;
use crate::report::live::{catch_signals, default_signals, seconds, STOP};
use crate::report::Tool;
use decode::{Figures, Loss};
use impair::{parse_burst, parse_duration, parse_percent, parse_rate, Cause, Ms, Settings};
use preset::{parse_client, ClientSettings, Preset};
use relay::{Config, Counts, Relay};
use select::{parse_window, Dir, Directions, Selector};
use view::View;

/// Clients relayed at most by default (`--max-clients`).
const MAX_CLIENTS: u16 = 64;
/// The summary document's schema (docs/schemas/proxy.schema.json).
const SCHEMA: &str = "proxy/1";
/// Bytes of datagrams waiting per client and direction, at most.
pub const QUEUE_BYTES: usize = 1 << 20;

/// Arguments of `rtype-inspect proxy`.
#[derive(clap::Args)]
pub struct ProxyArgs {
    /// Address the clients send to.
    #[arg(long, value_name = "ADDR")]
    listen: SocketAddr,
    /// The server's address.
    #[arg(long, value_name = "ADDR")]
    to: SocketAddr,
    /// Start from a network's figures, each direction its own; the options below change them.
    /// One of 4g, 3.5g, 3g, edge, gprs, satellite, high-latency, high-jitter.
    #[arg(long, value_name = "NAME", value_parser = Preset::named)]
    preset: Option<&'static Preset>,
    /// Added delay, e.g. 80ms.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    delay: Option<u64>,
    /// Delay varies uniformly by up to this much either way, e.g. 20ms.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    jitter: Option<u64>,
    /// Jitter may reorder datagrams (by default a datagram never leaves before the previous).
    #[arg(long)]
    jitter_reorder: bool,
    /// Independent loss, e.g. 5% or 0.05.
    #[arg(long, value_name = "P", value_parser = parse_percent)]
    loss: Option<f64>,
    /// Gilbert-Elliott burst loss: P,R (the chances to go from the good state to the bad one and
    /// back, per datagram) and optionally LOSS_GOOD,LOSS_BAD (default 0%,100%), e.g. 1%,30%.
    #[arg(long, value_name = "P,R[,G,B]", value_parser = parse_burst)]
    burst: Option<impair::Burst>,
    /// Send a second copy of this share of datagrams, e.g. 1%.
    #[arg(long, value_name = "P", value_parser = parse_percent)]
    duplicate: Option<f64>,
    /// Send this share of datagrams at once, ahead of the delayed ones, e.g. 2%.
    #[arg(long, value_name = "P", value_parser = parse_percent)]
    reorder: Option<f64>,
    /// Bandwidth per client and direction, e.g. 256kbit.
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    rate: Option<u64>,
    /// Drop datagrams whose UDP payload is larger than this many bytes.
    #[arg(long, value_name = "BYTES")]
    mtu: Option<usize>,
    /// The settings of one client, by its order of arrival (1: the first to send), as changes to
    /// the above: N:KEY=VALUE,... with the keys preset, delay, jitter, loss, duplicate, reorder,
    /// rate and mtu, e.g. 2:delay=150ms,loss=5%; repeatable.
    #[arg(long = "client", value_name = "N:SETTINGS", value_parser = parse_client)]
    clients: Vec<ClientSettings>,
    /// Which direction the impairments apply to.
    #[arg(long, value_enum, default_value = "both")]
    direction: Directions,
    /// Impair only the datagrams this display filter matches, e.g.
    /// 'rtype.msg_type == SERVER_SNAPSHOT'; the others pass at once.
    #[arg(long, value_name = "FILTER")]
    only: Option<String>,
    /// Drop the selected datagrams between two times (seconds since the start), e.g. 10s-12s;
    /// repeatable.
    #[arg(long, value_name = "START-END", value_parser = parse_window)]
    schedule: Vec<select::Window>,
    /// Seed of the decisions: the same seed and the same datagrams give the same decisions.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the record: a pcapng of both sides, each frame annotated with what the proxy did.
    #[arg(short = 'w', long = "write", value_name = "FILE")]
    write: Option<PathBuf>,
    /// Stop after relaying this many datagrams (both directions).
    #[arg(short = 'c', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    count: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    duration: Option<Duration>,
    /// Clients relayed at most; datagrams from further addresses are dropped.
    #[arg(long, value_name = "N", default_value_t = MAX_CLIENTS,
        value_parser = clap::value_parser!(u16).range(1..=4096))]
    max_clients: u16,
    /// Output form of the summary: text, or json (one document).
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

impl ProxyArgs {
    /// Each direction's settings (client to server first): the preset's, changed by the options.
    fn settings(&self) -> [Settings; 2] {
        let base = self.preset.map_or_else(Default::default, Preset::settings);
        base.map(|b| Settings {
            delay_ns: self.delay.unwrap_or(b.delay_ns),
            jitter_ns: self.jitter.unwrap_or(b.jitter_ns),
            jitter_reorder: self.jitter_reorder,
            loss: self.loss.unwrap_or(b.loss),
            burst: self.burst.or(b.burst),
            duplicate: self.duplicate.unwrap_or(b.duplicate),
            reorder: self.reorder.unwrap_or(b.reorder),
            rate_bps: self.rate.or(b.rate_bps),
            mtu: self.mtu.or(b.mtu),
        })
    }
}

/// Runs the proxy until Ctrl-C, `--duration` or `--count`, with the live view on stderr when it
/// is a terminal (coloured as `color` says); then prints the summary.
pub fn run(args: ProxyArgs, color: ColorChoice) -> Result<ExitCode, String> {
    let profile = Profile::document();
    let only = match &args.only {
        Some(text) => Some(
            DisplayFilter::compile(text, &Registry::new(&profile))
                .map_err(|e| format!("--only: {e}"))?,
        ),
        None => None,
    };
    let settings = args.settings();
    let config = Config {
        per_client: args
            .clients
            .iter()
            .map(|c| (c.index, c.apply(&settings)))
            .collect(),
        settings: settings.clone(),
        seed: args.seed,
        max_clients: usize::from(args.max_clients),
        queue_bytes: QUEUE_BYTES,
    };
    let mut relay = Relay::new(args.listen, args.to, config)?;
    relay.selector = Selector::new(args.direction, only, profile, args.schedule.clone());
    if let Some(path) = &args.write {
        relay.tap.record = Some(record::Record::create(path)?);
    }
    catch_signals();
    let mut view = std::io::stderr().is_terminal().then(|| View::new(color));
    eprintln!(
        "rtype-inspect proxy: {} -> {} ({})",
        relay.listen_addr(),
        args.to,
        describe_both(&settings)
    );
    let started = Instant::now();
    let (mut relayed, mut next_view) = (0u64, Duration::from_secs(1));
    while !STOP.load(Ordering::Relaxed) {
        let elapsed = started.elapsed();
        if args.duration.is_some_and(|d| elapsed >= d) || args.count.is_some_and(|c| relayed >= c) {
            break;
        }
        let until_view = next_view.saturating_sub(elapsed);
        let until_end = args
            .duration
            .map_or(until_view, |d| d.saturating_sub(elapsed));
        relayed += relay
            .step(until_view.min(until_end).min(Duration::from_millis(200)))
            .map_err(|e| format!("proxy: {e}"))?;
        if started.elapsed() >= next_view {
            next_view += Duration::from_secs(1);
            if let Some(r) = &mut relay.tap.record {
                r.flush().map_err(|e| format!("-w: {e}"))?;
            }
            if let Some(view) = &mut view {
                view.redraw(&mut relay, started.elapsed());
            }
        }
    }
    // What was accepted is delivered (when stopped by --count or --duration; Ctrl-C too, within
    // a second): the record then holds every fate the proxy decided.
    relay.drain(Instant::now() + Duration::from_secs(1));
    default_signals();
    let elapsed = started.elapsed();
    if let Some(view) = &mut view {
        view.redraw(&mut relay, elapsed);
    }
    let (summary, record) = Summary::of(relay, elapsed, &settings, args.seed);
    if let Some(r) = record {
        r.commit()?;
    }
    match args.format {
        Format::Json => {
            let text = serde_json::to_string_pretty(&summary.json()).unwrap_or_default() + "\n";
            write_stdout(text.as_bytes())
        }
        Format::Text => write_stdout(summary.text().as_bytes()),
    }
}

/// Each direction's impairments in a few words, once when they are the same.
fn describe_both([up, down]: &[Settings; 2]) -> String {
    if up == down {
        return describe(up);
    }
    format!(
        "{}: {}; {}: {}",
        Dir::Up.name(),
        describe(up),
        Dir::Down.name(),
        describe(down)
    )
}

/// The impairments in a few words.
fn describe(s: &Settings) -> String {
    if s.is_none() {
        return "no impairment".into();
    }
    let mut parts = Vec::new();
    if s.delay_ns > 0 || s.jitter_ns > 0 {
        parts.push(format!("delay {} ± {}", Ms(s.delay_ns), Ms(s.jitter_ns)));
    }
    let pct = |name: &str, p: f64| format!("{name} {:.2}%", p * 100.0);
    for (name, p) in [
        ("loss", s.loss),
        ("duplicate", s.duplicate),
        ("reorder", s.reorder),
    ] {
        if p > 0.0 {
            parts.push(pct(name, p));
        }
    }
    if let Some(b) = s.burst {
        parts.push(format!(
            "burst loss p {:.2}% r {:.2}%",
            b.p * 100.0,
            b.r * 100.0
        ));
    }
    if let Some(r) = s.rate_bps {
        parts.push(format!("rate {r} bit/s"));
    }
    if let Some(m) = s.mtu {
        parts.push(format!("mtu {m}"));
    }
    parts.join(", ")
}

/// What the proxy did, per client and direction.
struct Summary {
    seconds: f64,
    settings: String,
    seed: u64,
    clients: Vec<ClientSummary>,
    refused: u64,
    send_errors: u64,
    waiting: usize,
    record: Option<u64>,
}

const CAUSES: [Cause; 5] = [
    Cause::Loss,
    Cause::Burst,
    Cause::Mtu,
    Cause::Schedule,
    Cause::Queue,
];

/// One client: its address, what the proxy did each way, its impairments in words, and the
/// figures of what its ends were delivered.
struct ClientSummary {
    addr: SocketAddr,
    counts: [Counts; 2],
    impairments: String,
    figures: Figures,
}

impl Summary {
    /// The summary of a relay that stopped, once its decoding ends; and its record, to commit.
    fn of(
        relay: Relay,
        elapsed: Duration,
        settings: &[Settings; 2],
        seed: u64,
    ) -> (Summary, Option<record::Record>) {
        let (waiting, ends) = (relay.waiting(), relay.ends());
        let (figures, record) = relay.tap.finish(&ends);
        let clients = relay
            .clients
            .iter()
            .zip(figures)
            .map(|(c, figures)| ClientSummary {
                addr: c.addr,
                counts: c.counts,
                impairments: describe_both(&c.settings),
                figures,
            })
            .collect();
        let summary = Summary {
            seconds: elapsed.as_secs_f64(),
            settings: describe_both(settings),
            seed,
            clients,
            refused: relay.refused,
            send_errors: relay.send_errors,
            waiting,
            record: record.as_ref().map(|r| r.frames),
        };
        (summary, record)
    }

    fn json(&self) -> ProxySummary<'_> {
        let direction = |c: &Counts| Direction {
            delivered: c.delivered,
            dropped: Dropped::of(c),
            duplicated: c.duplicated,
            mean_delay_ms: mean_ms(c),
            received: c.received,
            reordered: c.reordered,
        };
        ProxySummary {
            clients: (self.clients.iter())
                .map(|c| ClientJson {
                    client: c.addr.to_string(),
                    client_to_server: direction(&c.counts[0]),
                    decoded: Decoded::of(&c.figures),
                    impairments: &c.impairments,
                    server_to_client: direction(&c.counts[1]),
                })
                .collect(),
            impairments: &self.settings,
            record_frames: self.record,
            refused: self.refused,
            schema: SCHEMA,
            seconds: self.seconds,
            seed: self.seed,
            send_errors: self.send_errors,
            tool: Tool::THIS,
            undelivered_at_stop: self.waiting,
        }
    }

    fn text(&self) -> String {
        let mut out = format!(
            "Proxy: {:.1} s, {} client(s), {}, seed {}\n",
            self.seconds,
            self.clients.len(),
            self.settings,
            self.seed
        );
        for client in &self.clients {
            let addr = client.addr;
            if client.impairments != self.settings {
                let _ = writeln!(out, "  {addr} {}", client.impairments);
            }
            for dir in [Dir::Up, Dir::Down] {
                let c = &client.counts[dir as usize];
                let causes: Vec<String> = CAUSES
                    .iter()
                    .filter(|&&k| c.dropped[k as usize] > 0)
                    .map(|&k| format!("{} {}", c.dropped[k as usize], k.name()))
                    .collect();
                let _ = writeln!(
                    out,
                    "  {addr} {:<16}  {} in, {} delivered, {} dropped{}, {} duplicated, {} reordered, mean delay {:.3} ms",
                    dir.name(),
                    c.received,
                    c.delivered,
                    c.dropped_total(),
                    if causes.is_empty() { String::new() } else { format!(" ({})", causes.join(", ")) },
                    c.duplicated,
                    c.reordered,
                    mean_ms(c)
                );
            }
            let words: Vec<String> = client.figures.words().map(|(w, _)| w).to_vec();
            let _ = writeln!(out, "  {addr} delivered: {}", words.join(", "));
        }
        if self.refused > 0 {
            let _ = writeln!(
                out,
                "  {} datagrams from clients past --max-clients dropped",
                self.refused
            );
        }
        if self.send_errors > 0 {
            let _ = writeln!(out, "  {} datagrams could not be sent on", self.send_errors);
        }
        if self.waiting > 0 {
            let _ = writeln!(
                out,
                "  {} datagrams still waiting when the proxy stopped",
                self.waiting
            );
        }
        out
    }
}

/// The summary `rtype-inspect proxy --format json` writes when it stops: the impairments, the
/// seed, per client and direction what the proxy received, delivered, duplicated, reordered and
/// dropped (by cause), and per client the figures of what its ends were delivered, decoded.
// The fields of each struct are in the order serde_json's sorted maps wrote them before.
#[derive(Serialize, JsonSchema)]
#[schemars(title = "rtype-inspect proxy", deny_unknown_fields)]
pub struct ProxySummary<'a> {
    clients: Vec<ClientJson<'a>>,
    /// The impairments in a few words, or `no impairment`.
    impairments: &'a str,
    /// Frames written to the record (-w), or null without one.
    record_frames: Option<u64>,
    /// Datagrams from addresses past --max-clients, dropped.
    refused: u64,
    #[schemars(extend("const" = SCHEMA))]
    schema: &'static str,
    #[schemars(range(min = 0))]
    seconds: f64,
    seed: u64,
    send_errors: u64,
    tool: Tool,
    /// Datagrams still waiting when the proxy stopped (due more than a second after the stop).
    undelivered_at_stop: usize,
}

/// One client's datagrams, each way, and what its ends were delivered.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct ClientJson<'a> {
    /// The client's address and port.
    client: String,
    client_to_server: Direction,
    decoded: Decoded,
    /// The impairments of this client's datagrams, in words: everyone's, or its own (--client).
    impairments: &'a str,
    server_to_client: Direction,
}

/// What the proxy did to one direction of one client's datagrams.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Direction {
    /// Datagrams sent on, duplicate copies included.
    delivered: u64,
    dropped: Dropped,
    duplicated: u64,
    /// Mean time from arrival to sending on, of the delivered datagrams.
    #[schemars(range(min = 0))]
    mean_delay_ms: f64,
    /// Datagrams the proxy received in this direction.
    received: u64,
    /// Sent at once, ahead of the delayed ones (--reorder).
    reordered: u64,
}

/// Datagrams dropped, by cause.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Dropped {
    burst_loss: u64,
    loss: u64,
    mtu: u64,
    queue_full: u64,
    schedule: u64,
}

impl Dropped {
    fn of(c: &Counts) -> Dropped {
        let by = |cause: Cause| c.dropped[cause as usize];
        Dropped {
            burst_loss: by(Cause::Burst),
            loss: by(Cause::Loss),
            mtu: by(Cause::Mtu),
            queue_full: by(Cause::Queue),
            schedule: by(Cause::Schedule),
        }
    }
}

/// What the client's ends were delivered, as the session analysis decodes it (the figures `stats`
/// finds in the record): the client's conversation on the client side (the client and the proxy)
/// and on the server side (its upstream socket and the server). Figures are null before there is
/// anything to measure.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Decoded {
    findings: Findings,
    rtt_ms: Rtt,
    sequences: Sequences,
    snapshots: Snapshots,
}

impl Decoded {
    fn of(f: &Figures) -> Decoded {
        let [client_side, server_side] = f.findings;
        let [client_to_server, server_to_client] = f.loss;
        Decoded {
            findings: Findings {
                client_side,
                server_side,
            },
            rtt_ms: Rtt {
                max: f.rtt_max_ms,
                p50: f.rtt_p50_ms,
                pairs: f.rtt_pairs,
            },
            sequences: Sequences {
                client_to_server,
                server_to_client,
            },
            snapshots: Snapshots {
                gap_max_ms: f.gap_max_ms,
                gap_p95_ms: f.gap_p95_ms,
                rate_hz: f.snapshot_hz,
                ticks: f.snapshots,
            },
        }
    }
}

/// Findings of the client's conversation on each side, counted as `check` counts them.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Findings {
    client_side: u64,
    server_side: u64,
}

/// Round trips from the client's pings reaching the proxy to the pongs delivered to the client.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Rtt {
    #[schemars(range(min = 0))]
    max: Option<f64>,
    #[schemars(range(min = 0))]
    p50: Option<f64>,
    /// Pings answered by a pong.
    pairs: u64,
}

/// Sequence loss of what was delivered: the client's messages as the server got them (header
/// sequence), the snapshot ticks as the client got them; null when no number was delivered.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Sequences {
    client_to_server: Option<Loss>,
    server_to_client: Option<Loss>,
}

/// The snapshot ticks delivered to the client.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Snapshots {
    /// The largest gap between ticks.
    #[schemars(range(min = 0))]
    gap_max_ms: Option<f64>,
    /// 95th percentile of the gaps between ticks.
    #[schemars(range(min = 0))]
    gap_p95_ms: Option<f64>,
    /// Ticks per second over the time they arrived in.
    #[schemars(range(min = 0))]
    rate_hz: Option<f64>,
    ticks: u64,
}

fn mean_ms(c: &Counts) -> f64 {
    if c.delivered == 0 {
        0.0
    } else {
        c.delay_ns as f64 / c.delivered as f64 / 1e6
    }
}
