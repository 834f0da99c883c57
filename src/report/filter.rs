//! Which datagrams `packets` and `export` show: filters that combine (all must match).

use std::net::IpAddr;

use crate::proto::{Direction, Rule, Severity};
use crate::session::event::DatagramEvent;

/// Filter options shared by `packets`, `export` and `live`.
#[derive(clap::Args, Clone, Default, Debug)]
pub struct FilterArgs {
    /// Message type by name (e.g. SERVER_SNAPSHOT, snapshot) or code (0x14, 20); repeatable.
    #[arg(long = "type", value_name = "TYPE")]
    types: Vec<String>,
    /// Direction: c2s (client to server) or s2c.
    #[arg(long, value_parser = ["c2s", "s2c"])]
    direction: Option<String>,
    /// Conversation id (as numbered by the summary); repeatable.
    #[arg(long, value_name = "ID")]
    conversation: Vec<u32>,
    /// Source or destination address, IP or IP:PORT.
    #[arg(long, value_name = "ADDR")]
    address: Option<String>,
    /// Frame range A-B (either end may be left out), or one frame.
    #[arg(long, value_name = "A-B")]
    frames: Option<String>,
    /// Time range in seconds from the first frame, A-B.
    #[arg(long, value_name = "A-B")]
    time: Option<String>,
    /// Only datagrams with this violation; repeatable.
    #[arg(long, value_name = "ID")]
    violation: Vec<String>,
    /// Only datagrams with a violation of at least this severity (info, warning, error).
    #[arg(long, value_parser = ["info", "warning", "error"])]
    severity: Option<String>,
}

/// Filters, parsed and checked.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    types: Vec<String>,
    direction: Option<Direction>,
    conversations: Vec<u32>,
    address: Option<(IpAddr, Option<u16>)>,
    frames: (u64, u64),
    time: (f64, f64),
    violations: Vec<Rule>,
    severity: Option<Severity>,
}

fn range<T: std::str::FromStr + Copy>(text: &str, lo: T, hi: T) -> Result<(T, T), String> {
    let bad = || format!("bad range `{text}` (expected A-B, A-, -B or A)");
    let parse = |s: &str, default: T| {
        if s.is_empty() {
            Ok(default)
        } else {
            s.trim().parse().map_err(|_| bad())
        }
    };
    match text.split_once('-') {
        Some((a, b)) => Ok((parse(a, lo)?, parse(b, hi)?)),
        None => {
            let v = parse(text, lo)?;
            Ok((v, v))
        }
    }
}

impl FilterArgs {
    pub fn build(&self) -> Result<Filter, String> {
        let address = match &self.address {
            None => None,
            Some(a) => Some(match a.parse::<std::net::SocketAddr>() {
                Ok(s) => (s.ip(), Some(s.port())),
                Err(_) => (a.parse().map_err(|_| format!("bad address `{a}`"))?, None),
            }),
        };
        let violations = self
            .violation
            .iter()
            .map(|id| {
                Rule::from_id(id).ok_or_else(|| {
                    format!("unknown violation `{id}` (see `rtype-inspect violations`)")
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Filter {
            types: self.types.iter().map(|t| t.to_ascii_uppercase()).collect(),
            direction: self.direction.as_deref().map(|d| {
                if d == "c2s" {
                    Direction::ClientToServer
                } else {
                    Direction::ServerToClient
                }
            }),
            conversations: self.conversation.clone(),
            address,
            frames: self
                .frames
                .as_deref()
                .map_or(Ok((0, u64::MAX)), |f| range(f, 0, u64::MAX))?,
            time: self
                .time
                .as_deref()
                .map_or(Ok((f64::MIN, f64::MAX)), |t| range(t, f64::MIN, f64::MAX))?,
            violations,
            severity: self.severity.as_deref().and_then(Severity::parse),
        })
    }
}

impl Filter {
    fn type_matches(&self, e: &DatagramEvent<'_>) -> bool {
        self.types.is_empty()
            || self.types.iter().any(|t| {
                let name = e.name.to_ascii_uppercase();
                let short = e.message.map(|m| m.short.to_ascii_uppercase());
                let code = t
                    .strip_prefix("0X")
                    .map_or_else(|| t.parse::<u8>().ok(), |h| u8::from_str_radix(h, 16).ok());
                *t == name
                    || Some(t) == short.as_ref()
                    || name
                        .strip_prefix("SERVER_")
                        .or(name.strip_prefix("CLIENT_"))
                        == Some(t)
                    || (code.is_some() && code == e.code)
            })
    }

    /// Whether a finding that belongs to no single datagram passes the filters that can judge it.
    pub fn matches_finding(&self, frame: u64, conversation: u32, rule: Rule) -> bool {
        frame >= self.frames.0
            && frame <= self.frames.1
            && (self.conversations.is_empty() || self.conversations.contains(&conversation))
            && (self.violations.is_empty() || self.violations.contains(&rule))
            && self.severity.is_none_or(|s| rule.severity() >= s)
            && self.types.is_empty()
            && self.direction.is_none()
            && self.address.is_none()
    }

    /// Whether the datagram passes every filter; `rel` is its time from the first frame.
    pub fn matches(&self, e: &DatagramEvent<'_>, rel: f64) -> bool {
        let addr_ok = self.address.is_none_or(|(ip, port)| {
            [e.src, e.dst]
                .iter()
                .any(|s| s.ip() == ip && port.is_none_or(|p| p == s.port()))
        });
        e.frame >= self.frames.0
            && e.frame <= self.frames.1
            && rel >= self.time.0
            && rel <= self.time.1
            && self.direction.is_none_or(|d| e.direction == Some(d))
            && (self.conversations.is_empty() || self.conversations.contains(&e.conversation))
            && addr_ok
            && self.type_matches(e)
            && (self.violations.is_empty()
                || e.findings.iter().any(|f| self.violations.contains(&f.rule)))
            && self
                .severity
                .is_none_or(|s| e.findings.iter().any(|f| f.rule.severity() >= s))
    }
}
