//! Which datagrams `packets` and `export` show: filters that combine (all must match).

use std::net::IpAddr;

use crate::proto::rt as rt_desc;
use crate::proto::rtnp as rtnp_desc;
use crate::proto::rtype as rtype_desc;
use crate::proto::{Direction, Rule, Severity};
use crate::session::event::DatagramEvent;

/// Filter options shared by `packets`, `export` and `live`.
#[derive(Clone, Default, Debug)]
pub struct FilterOptions {
    pub types: Vec<String>,
    pub direction: Option<String>,
    pub conversation: Vec<u32>,
    pub address: Option<String>,
    pub frames: Option<String>,
    pub time: Option<String>,
    pub violation: Vec<String>,
    pub severity: Option<String>,
}

/// Filters, parsed and checked.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    types: Vec<TypeName>,
    direction: Option<Direction>,
    conversations: Vec<u32>,
    address: Option<(IpAddr, Option<u16>)>,
    frames: (u64, u64),
    time: (f64, f64),
    violations: Vec<Rule>,
    severity: Option<Severity>,
}

/// A `--type` value: a message's name (`SERVER_SNAPSHOT`, or `SNAPSHOT` without the direction's
/// prefix), its short name, or its code; names in any case. Parsed once, so that matching a
/// datagram neither allocates nor parses.
#[derive(Clone, Debug)]
struct TypeName {
    text: String,
    code: Option<u8>,
}

impl TypeName {
    fn new(text: &str) -> TypeName {
        let upper = text.to_ascii_uppercase();
        let code = upper
            .strip_prefix("0X")
            .map_or_else(|| upper.parse().ok(), |h| u8::from_str_radix(h, 16).ok());
        TypeName { text: upper, code }
    }

    fn matches(&self, e: &DatagramEvent<'_>) -> bool {
        let t = self.text.as_str();
        let without = |prefix: &str| {
            e.name
                .get(..prefix.len())
                .is_some_and(|p| p.eq_ignore_ascii_case(prefix))
                && e.name
                    .get(prefix.len()..)
                    .is_some_and(|rest| rest.eq_ignore_ascii_case(t))
        };
        e.name.eq_ignore_ascii_case(t)
            || e.message.is_some_and(|m| m.short.eq_ignore_ascii_case(t))
            || without("SERVER_")
            || without("CLIENT_")
            || (self.code.is_some() && self.code == e.code)
    }
}

/// `A-B`, `A-`, `-B` or `A`, checked to hold at least one value; `what` names the option.
fn range<T: std::str::FromStr + Copy + PartialOrd + std::fmt::Display>(
    what: &str,
    text: &str,
    lo: T,
    hi: T,
) -> Result<(T, T), String> {
    let (a, b) = parse_range(text, lo, hi)
        .map_err(|()| format!("{what} `{text}`: expected A-B, A-, -B or A"))?;
    if a > b {
        return Err(format!(
            "{what} `{text}` matches nothing: its start {a} is after its end {b}"
        ));
    }
    Ok((a, b))
}

fn parse_range<T: std::str::FromStr + Copy>(text: &str, lo: T, hi: T) -> Result<(T, T), ()> {
    let bad = || ();
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

impl FilterOptions {
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
                Rule::from_id(id)
                    .ok_or_else(|| crate::app::config::unknown_rules("--violation", &[id]))
            })
            .collect::<Result<_, _>>()?;
        for t in &self.types {
            known_type(t)?;
        }
        Ok(Filter {
            types: self.types.iter().map(|t| TypeName::new(t)).collect(),
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
                .map_or(Ok((0, u64::MAX)), |f| range("--frames", f, 0, u64::MAX))?,
            time: self.time.as_deref().map_or(Ok((f64::MIN, f64::MAX)), |t| {
                range("--time", t, f64::MIN, f64::MAX)
            })?,
            violations,
            severity: self.severity.as_deref().and_then(Severity::parse),
        })
    }
}

/// A `--type` must name a message of some dialect (its name, its short name, the name without
/// `SERVER_`/`CLIENT_`, or a code): a typo would otherwise match nothing, silently.
fn known_type(t: &str) -> Result<(), String> {
    let upper = t.to_ascii_uppercase();
    if let Some(code) = upper.strip_prefix("0X").map_or_else(
        || upper.parse::<u8>().ok(),
        |h| u8::from_str_radix(h, 16).ok(),
    ) {
        return if rtype_desc::message(code).is_some() || rt_desc::message(code).is_some() {
            Ok(())
        } else {
            Err(format!(
                "--type {t}: no dialect has a message with code 0x{code:02X}"
            ))
        };
    }
    let names = || {
        rtype_desc::MESSAGES
            .iter()
            .chain(rt_desc::MESSAGES)
            .chain(rtnp_desc::MESSAGES.iter().map(|m| &m.message))
            .flat_map(|m| {
                let bare = m
                    .name
                    .strip_prefix("SERVER_")
                    .or(m.name.strip_prefix("CLIENT_"));
                [Some(m.name), Some(m.short), bare].into_iter().flatten()
            })
    };
    if names().any(|n| n.eq_ignore_ascii_case(t)) {
        return Ok(());
    }
    let nearest = names()
        .map(|n| {
            (
                crate::proto::near::edit_distance(&n.to_ascii_uppercase(), &upper),
                n,
            )
        })
        .min();
    Err(match nearest {
        Some((d, n)) if d <= 3 => format!("--type {t}: no such message type; did you mean {n}?"),
        _ => format!("--type {t}: no such message type (`rtype-inspect protocol` lists them)"),
    })
}

impl Filter {
    /// The conversations asked for that the capture does not have, for an error after the run
    /// ("conversation 9 does not exist; the capture has 3").
    pub fn missing_conversation(&self, count: usize) -> Option<String> {
        let missing = self
            .conversations
            .iter()
            .find(|c| **c == 0 || **c as usize > count)?;
        Some(format!(
            "--conversation {missing}: conversation {missing} does not exist; the capture has {count}"
        ))
    }

    fn type_matches(&self, e: &DatagramEvent<'_>) -> bool {
        self.types.is_empty() || self.types.iter().any(|t| t.matches(e))
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

    /// Whether the datagram passes every filter; `rel` is its time from the first frame. The
    /// violation filters see its own findings and the session findings it raised.
    pub fn matches(&self, e: &DatagramEvent<'_>, rel: f64) -> bool {
        let rules = || {
            e.findings
                .iter()
                .chain(e.session.iter().map(|l| &l.finding))
                .map(|f| f.rule)
        };
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
            && (self.violations.is_empty() || rules().any(|r| self.violations.contains(&r)))
            && self
                .severity
                .is_none_or(|s| rules().any(|r| r.severity() >= s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datagram::Dialect;
    use crate::message::Facts;
    use crate::session::event::DescribedRole;

    /// A datagram named `name`, of rtype message `code` when it is described.
    fn named(name: &str, code: u8) -> DatagramEvent<'_> {
        DatagramEvent {
            frame: 1,
            ts_nanos: 0,
            src: "10.0.0.2:41000".parse().unwrap(),
            dst: "10.0.0.1:50010".parse().unwrap(),
            bytes: &[],
            hash: 0,
            dialect: Dialect::Rtype,
            conversation: 1,
            direction: None,
            decoded: None,
            code: Some(code),
            sequence: None,
            tick: None,
            message: crate::proto::rtype::message(code),
            role: crate::proto::rtype::message(code).and_then(DescribedRole::of),
            ack: None,
            name,
            payload: None,
            facts: Facts::default(),
            findings: &[],
            session: &[],
            entities: &[],
        }
    }

    #[test]
    fn a_type_is_a_name_in_any_case_without_its_prefix_its_short_name_or_its_code() {
        let snapshot = named("SERVER_SNAPSHOT", 0x14);
        let short = crate::proto::rtype::message(0x14).unwrap().short;
        for t in [
            "SERVER_SNAPSHOT",
            "server_snapshot",
            "Snapshot",
            short,
            "0x14",
            "20",
        ] {
            assert!(TypeName::new(t).matches(&snapshot), "{t}");
        }
        for t in ["SERVER_", "SNAPSHOT_CHUNK", "CLIENT_SNAPSHOT", "0x15", "21"] {
            assert!(!TypeName::new(t).matches(&snapshot), "{t}");
        }
        // A name that is text from the wire (rtnp), with a character across the prefix's end.
        let wire = named("SERVERéX", 0);
        assert!(!TypeName::new("X").matches(&wire));
        assert!(!TypeName::new("serverÉx").matches(&wire));
        assert!(TypeName::new("serverée").matches(&named("SERVERéE", 0)));
    }
}
