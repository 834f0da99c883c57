//! Which bundled snapshot profile fits, when snapshots fail to decode: a user of a real build
//! sees its snapshots judged against the document's f32 layout and a hundred findings; the
//! summary says which `--profile` would decode them cleanly.

use crate::datagram::{rtype, Dialect};
use crate::message::{decode_message, Finding, NoFields};
use crate::proto::profile::{Profile, BUNDLED};
use crate::proto::rtype as desc;
use crate::proto::Rule;
use crate::session::event::DatagramEvent;

/// Failing snapshots tried with each bundled profile; enough to tell a layout from chance, and
/// bounded so that a capture of nothing but broken snapshots costs little more.
const PROBES: u32 = 64;

/// The rules that say a snapshot's layout does not fit.
const LAYOUT_RULES: &[Rule] = &[
    Rule::RtypeReservedBit,
    Rule::RtypeUndefinedBit,
    Rule::RtypeTruncated,
    Rule::RtypeTrailing,
];

/// Tries failing snapshots with every bundled profile.
pub struct ProfileHint {
    profiles: Vec<Profile>,
    /// Per profile, the probed snapshots it decoded without a layout finding.
    clean: Vec<u32>,
    probed: u32,
    findings: Vec<Finding>,
}

impl Default for ProfileHint {
    fn default() -> Self {
        let profiles: Vec<Profile> = BUNDLED
            .iter()
            .filter_map(|(name, _)| Profile::bundled(name))
            .collect();
        ProfileHint {
            clean: vec![0; profiles.len()],
            profiles,
            probed: 0,
            findings: Vec::new(),
        }
    }
}

impl ProfileHint {
    /// Probes `e` when it is an rtype snapshot whose layout failed.
    pub fn datagram(&mut self, e: &DatagramEvent<'_>) {
        let (Some(message), Some(payload)) = (e.message, e.payload) else {
            return;
        };
        let snapshot = matches!(message.code, desc::SNAPSHOT | desc::SNAPSHOT_CHUNK);
        if e.dialect != Dialect::Rtype
            || !snapshot
            || self.probed >= PROBES
            || !e.findings.iter().any(|f| LAYOUT_RULES.contains(&f.rule))
        {
            return;
        }
        self.probed += 1;
        for (profile, clean) in self.profiles.iter().zip(&mut self.clean) {
            self.findings.clear();
            decode_message(
                message,
                payload,
                0,
                rtype::ENDIAN,
                profile,
                &rtype::MESSAGE_RULES,
                &mut NoFields,
                &mut self.findings,
            );
            if !self.findings.iter().any(|f| LAYOUT_RULES.contains(&f.rule)) {
                *clean += 1;
            }
        }
    }

    /// The bundled profile that decoded every probed snapshot, with how many were probed.
    pub fn suggestion(&self) -> Option<(&str, u32)> {
        let i = self
            .clean
            .iter()
            .position(|c| self.probed > 0 && *c == self.probed)?;
        Some((&self.profiles[i].name, self.probed))
    }
}
