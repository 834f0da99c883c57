//! What the summary counts while the pipeline runs: messages per type and direction, findings
//! per rule, and what the run's end said. The summary report renders it, and the reports that
//! embed a summary (export, live, Parquet) or judge findings (check, JUnit) count with it.

use std::net::SocketAddr;

use super::profile_hint::ProfileHint;
use crate::capture::{CaptureInfo, Truncation};
use crate::datagram::Dialect;
use crate::finding::Finding;
use crate::message::NoFields;
use crate::pipeline::{RunEnd, Sink};
use crate::proto::{Direction, Rule};
use crate::session::event::{DatagramEvent, FrameCounts, LooseFinding};

/// Occurrences of one rule.
#[derive(Clone, Copy, Debug, Default)]
pub struct RuleCount {
    pub count: u64,
    pub first_frame: u64,
}

/// Frames remembered per rule (for `check`'s lists of where a rule broke); the count goes on.
pub const MAX_FRAMES: usize = 20;

/// Findings per rule, in catalog order, with the first [`MAX_FRAMES`] distinct frames of each.
/// Empty until the first finding: `check` holds one per capture until its report, and most
/// captures of a large directory have none.
#[derive(Clone, Debug, Default)]
pub struct RuleCounts {
    counts: Vec<RuleCount>,
    frames: Vec<Vec<u64>>,
}

impl RuleCounts {
    pub fn add(&mut self, rule: Rule, frame: u64) {
        self.add_finding(&Finding::new(rule, 0, crate::finding::Detail::None), frame);
    }
    /// Counts a finding: a datagram's finding of a rule broken `count` times counts `count`.
    pub fn add_finding(&mut self, finding: &Finding, frame: u64) {
        if self.counts.is_empty() {
            self.counts = vec![RuleCount::default(); Rule::all().len()];
            self.frames = vec![Vec::new(); Rule::all().len()];
        }
        let rule = finding.rule;
        let c = &mut self.counts[rule.index()];
        if c.count == 0 {
            c.first_frame = frame;
        }
        c.count += u64::from(finding.count);
        let frames = &mut self.frames[rule.index()];
        if frames.len() < MAX_FRAMES && frames.last() != Some(&frame) {
            frames.push(frame);
        }
    }
    /// Rules with at least one finding, most severe first, then by ID.
    pub fn present(&self) -> Vec<(Rule, RuleCount)> {
        let mut v: Vec<_> = Rule::all()
            .iter()
            .map(|r| (*r, self.get(*r)))
            .filter(|(_, c)| c.count > 0)
            .collect();
        v.sort_by(|a, b| {
            b.0.severity()
                .cmp(&a.0.severity())
                .then(a.0.id().cmp(b.0.id()))
        });
        v
    }
    pub fn get(&self, rule: Rule) -> RuleCount {
        self.counts.get(rule.index()).copied().unwrap_or_default()
    }
    /// The first distinct frames (at most [`MAX_FRAMES`]) where `rule` broke.
    pub fn frames(&self, rule: Rule) -> &[u64] {
        self.frames.get(rule.index()).map_or(&[], |f| f)
    }
}

/// Distinct message types listed; datagrams of further types (rtnp names its types in text, so a
/// hostile capture can bring millions) are counted in one row per dialect and direction.
pub const MAX_MESSAGE_ROWS: usize = 1024;
/// The name of that row.
pub const OTHER_TYPES: &str = "(other types)";

/// Datagrams of one message type in one direction.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct MessageCount {
    pub dialect: Dialect,
    pub direction: Option<Direction>,
    pub code: Option<u8>,
    pub name: String,
    pub count: u64,
}

/// Builds the summary while the pipeline runs.
#[derive(Default)]
pub struct Summary {
    /// Few distinct types exist, so a list searched from the last hit beats a map.
    messages: Vec<MessageCount>,
    last: usize,
    pub rules: RuleCounts,
    pub crc_failures: u64,
    pub compressed: u64,
    ending: Option<Ending>,
    no_fields: NoFields,
    /// Which bundled snapshot profile fits, when snapshots fail to decode.
    pub hint: ProfileHint,
    /// `-c N`: the run stops after N datagrams, which the summary says when it did.
    pub limit: Option<u64>,
}

impl Sink for Summary {
    type Fields = NoFields;
    fn fields(&mut self) -> &mut NoFields {
        &mut self.no_fields
    }
    fn datagram(&mut self, e: &DatagramEvent<'_>) {
        let same = |m: &MessageCount| {
            m.code == e.code
                && m.direction == e.direction
                && m.dialect == e.dialect
                && m.name == e.name
        };
        match self
            .messages
            .get(self.last)
            .filter(|m| same(m))
            .map(|_| self.last)
            .or_else(|| self.messages.iter().position(same))
        {
            Some(i) => {
                self.messages[i].count += 1;
                self.last = i;
            }
            None if self.messages.len() >= MAX_MESSAGE_ROWS => {
                let other = |m: &MessageCount| {
                    m.code.is_none()
                        && m.direction == e.direction
                        && m.dialect == e.dialect
                        && m.name == OTHER_TYPES
                };
                match self.messages.iter().position(other) {
                    Some(i) => self.messages[i].count += 1,
                    None => {
                        let (dialect, direction, name) =
                            (e.dialect, e.direction, OTHER_TYPES.to_owned());
                        self.messages.push(MessageCount {
                            dialect,
                            direction,
                            code: None,
                            name,
                            count: 1,
                        });
                    }
                }
            }
            None => {
                let (dialect, direction, code, name) =
                    (e.dialect, e.direction, e.code, e.name.to_owned());
                self.messages.push(MessageCount {
                    dialect,
                    direction,
                    code,
                    name,
                    count: 1,
                });
            }
        }
        self.hint.datagram(e);
        self.crc_failures += u64::from(e.crc_failed());
        self.compressed += u64::from(e.compressed());
        for f in e.findings {
            self.rules.add_finding(f, e.frame);
        }
    }
    fn loose(&mut self, f: &LooseFinding) {
        self.rules.add_finding(&f.finding, f.frame);
    }
    fn end(&mut self, end: &RunEnd<'_>) {
        let conversations = end.conversations.all().iter();
        self.ending = Some(Ending {
            config_file: end.config.map(|p| p.display().to_string()),
            profile: end.profile.to_owned(),
            info: end.info.clone(),
            frames: end.read.frames,
            truncated: end.read.truncated.clone(),
            stopped_after: self.limit.filter(|n| end.counts.datagrams >= *n),
            first_ts: end.first_ts,
            last_ts: end.last_ts,
            counts: end.counts,
            snapshots_reassembled: end.snapshots_reassembled,
            conversations: conversations
                .map(|c| ConversationLine {
                    id: c.id,
                    dialect: c.dialect,
                    client: c.client,
                    server: c.server,
                    first_frame: c.first_frame,
                    layout: (c.dialect == Dialect::Rtype).then(|| end.layout(c).to_owned()),
                })
                .collect(),
            displayed: end
                .displayed
                .map(|(expression, n)| (expression.to_owned(), n)),
        });
    }
}

impl Summary {
    /// The message counts, by dialect, direction, code and name.
    pub fn messages(&self) -> Vec<MessageCount> {
        let mut sorted = self.messages.clone();
        sorted.sort();
        sorted
    }

    /// What the run's end said.
    pub fn ending(&self) -> &Ending {
        self.ending.as_ref().expect("summary read after the run")
    }
}

/// What the run's end said that the summary reports, kept past the end: the reports are
/// written after the run.
pub struct Ending {
    /// The configuration file the run read.
    pub config_file: Option<String>,
    /// The snapshot profile of the run ([`RunEnd::profile`]).
    pub profile: String,
    pub info: CaptureInfo,
    pub frames: u64,
    pub truncated: Option<Truncation>,
    /// `-c N` stopped the run after N datagrams.
    pub stopped_after: Option<u64>,
    pub first_ts: Option<i64>,
    pub last_ts: Option<i64>,
    pub counts: FrameCounts,
    pub snapshots_reassembled: u64,
    pub conversations: Vec<ConversationLine>,
    /// With a display filter: its text, and how many datagrams it passed.
    pub displayed: Option<(String, u64)>,
}

/// One conversation, as the summary lists it.
pub struct ConversationLine {
    pub id: u32,
    pub dialect: Dialect,
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub first_frame: u64,
    /// rtype: the snapshot profile it was read with.
    pub layout: Option<String>,
}
