//! What a broken rule looks like, located in its datagram: every layer raises findings (the
//! datagram checks, the message walker, the sessions, the world), so they live below them all.

use crate::proto::Rule;

/// The specifics of a finding, rendered by the report layer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Detail {
    None,
    /// A size the document expects and the one found.
    Sizes {
        expected: u64,
        found: u64,
    },
    /// A field the payload ended inside: its name, bytes needed and bytes left.
    Truncated {
        field: &'static str,
        needed: u32,
        left: u32,
    },
    /// An update-mask bit of unknown width: the entity, the bit, and the bytes left undecoded.
    MaskBit {
        entity: u32,
        bit: u8,
        left: u32,
    },
    /// A value that is not allowed or not known.
    Value(u64),
    /// A field whose value broke the rule.
    Field(&'static str),
    /// CRC stored in the footer and computed over the datagram.
    Crc {
        stored: u32,
        computed: u32,
    },
    /// A chunk set's tick and what happened to it.
    Chunks {
        tick: u32,
        have: u16,
        total: u16,
    },
    /// The bundled snapshot profile that a conversation's snapshots fit, by name.
    Layout(&'static str),
    /// Frames elsewhere that this finding relates to.
    Frames {
        first: u64,
    },
    /// A byte offset in the capture file (where reading stopped).
    At(u64),
    /// A block of the capture file that was skipped: what it is, and its byte offset.
    Block {
        block: &'static str,
        offset: u64,
    },
    /// A handshake step that should have come before this message.
    Before {
        missing: &'static str,
        message: &'static str,
    },
    /// A periodic stream (by its message name) that stopped this long before its conversation.
    Stopped {
        stream: &'static str,
        before_ms: u64,
    },
    /// A periodic stream's gap between two datagrams, and the period it was judged against, in
    /// µs; with the ticks either side of the gap when the stream has ticks.
    Stall {
        stream: &'static str,
        gap_micros: u32,
        period_micros: u32,
        ticks: Option<(u32, u32)>,
    },
    /// Two clients of one server held entity `entity` at server tick `tick` with values of
    /// `field` further apart than their layouts tell: this conversation's value, and the one
    /// conversation `with` held at frame `with_frame` (the `world` command shows both values).
    Disagree {
        entity: u32,
        tick: u32,
        field: &'static str,
        with: u32,
        with_frame: u64,
    },
    /// A periodic stream's rate, and the nominal one, per second.
    Rate {
        stream: &'static str,
        nominal: u32,
        found: u32,
    },
}

/// One broken rule, located: where it first broke in the datagram, and how many times.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Finding {
    pub rule: Rule,
    /// Byte offset in the UDP payload (the datagram) where the problem is (the first time).
    pub at: u32,
    pub detail: Detail,
    /// How many times the datagram broke the rule ([`add_finding`]): 1 but for a rule broken
    /// over and over (an unknown entity type in every entity), whose offset and detail are the
    /// first time's.
    pub count: u32,
}

impl Finding {
    pub const fn new(rule: Rule, at: u32, detail: Detail) -> Finding {
        Finding {
            rule,
            at,
            detail,
            count: 1,
        }
    }
}

/// Adds `finding` to a datagram's findings, or counts it on the finding of the same rule already
/// there: a datagram breaks each rule once, with a count, so that its findings stay as few as the
/// rules however many times a crafted payload repeats a fault.
pub fn add_finding(findings: &mut Vec<Finding>, finding: Finding) {
    match findings.iter_mut().find(|f| f.rule == finding.rule) {
        Some(f) => f.count = f.count.saturating_add(finding.count),
        None => findings.push(finding),
    }
}
