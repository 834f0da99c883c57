//! Which snapshot profile fits, when snapshots fail to decode: a real build's snapshots
//! judged against the document's f32 layout give a hundred findings that are all one fact.
//!
//! Before a capture file is read, its first snapshots are read once more with the document's
//! layout ([`fitting_layout`]): when they fail and one candidate profile (the configuration's
//! `[profiles]`, then the bundled ones) decodes every failing one cleanly, the capture is read
//! with that profile, and each conversation gets one
//! `rtype.snapshot.layout` finding at its first snapshot instead of the cascade. The summary
//! still says which profile fits when the capture was read in a layout that fails.

use std::path::Path;

use crate::capture::CaptureReader;
use crate::datagram::{rtype, Dialect};
use crate::finding::Finding;
use crate::message::{misreads, NoFields};
use crate::pipeline::{Pipeline, RunEnd, Sink};
use crate::proto::profile::Profile;
use crate::proto::rtype as desc;
use crate::session::event::{DatagramEvent, LooseFinding};

/// Failing snapshots tried with each bundled profile; enough to tell a layout from chance, and
/// bounded so that a capture of nothing but broken snapshots costs little more.
const PROBES: u32 = 64;

/// Datagrams the scan before a capture's reading looks at, at most: the snapshots come early,
/// and a capture without them costs this much more, not a second reading.
const SCAN_DATAGRAMS: u64 = 4096;

/// Tries failing snapshots with every bundled profile.
pub struct ProfileHint {
    profiles: Vec<Profile>,
    /// Per profile, the probed snapshots it decoded without a layout finding.
    clean: Vec<u32>,
    probed: u32,
    findings: Vec<Finding>,
}

impl Default for ProfileHint {
    /// Tries the bundled profiles.
    fn default() -> Self {
        ProfileHint::new(Profile::all_bundled())
    }
}

impl ProfileHint {
    /// Tries `profiles`, in their order: the first that reads every probe is the suggestion.
    pub fn new(profiles: Vec<Profile>) -> ProfileHint {
        ProfileHint {
            clean: vec![0; profiles.len()],
            profiles,
            probed: 0,
            findings: Vec::new(),
        }
    }

    /// Probes `e` when it is an rtype snapshot whose layout failed.
    pub fn datagram(&mut self, e: &DatagramEvent<'_>) {
        let (Some(message), Some(payload)) = (e.message, e.payload) else {
            return;
        };
        if !snapshot(e)
            || self.probed >= PROBES
            || !e
                .findings
                .iter()
                .any(|f| rtype::MESSAGE_RULES.misfit(f.rule))
        {
            return;
        }
        self.probed += 1;
        for (profile, clean) in self.profiles.iter().zip(&mut self.clean) {
            let rules = &rtype::MESSAGE_RULES;
            *clean += u32::from(!misreads(
                message,
                payload,
                rtype::ENDIAN,
                profile,
                rules,
                &mut self.findings,
            ));
        }
    }

    /// The first profile that decoded every probed snapshot, with how many were probed.
    pub fn suggestion(&self) -> Option<(&Profile, u32)> {
        let i = self
            .clean
            .iter()
            .position(|c| self.probed > 0 && *c == self.probed)?;
        Some((&self.profiles[i], self.probed))
    }
}

/// Whether `e` is an rtype snapshot (whole or chunk).
fn snapshot(e: &DatagramEvent<'_>) -> bool {
    e.dialect == Dialect::Rtype
        && e.message
            .is_some_and(|m| matches!(m.code, desc::SNAPSHOT | desc::SNAPSHOT_CHUNK))
}

/// What the scan before a capture's reading found of its snapshots' layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    /// The document's layout reads the snapshots scanned (or there were none, or the file
    /// cannot be read: its reading says why).
    Document,
    /// The document's misreads some, and this candidate (its [`Profile::finding_name`]) reads
    /// every one it misread.
    Profile(&'static str),
}

/// The layout a capture file's snapshots fit: its first [`PROBES`] snapshots (within its first
/// [`SCAN_DATAGRAMS`] datagrams, on `port`) are read with the document's layout, and one of
/// `candidates` must decode every one that failed (the first that does).
pub fn fitting_layout(file: &Path, port: Option<u16>, candidates: &[Profile]) -> Fit {
    let Ok(mut reader) = CaptureReader::open(file) else {
        return Fit::Document;
    };
    let mut scan = Scan {
        hint: ProfileHint::new(candidates.to_vec()),
        snapshots: 0,
        datagrams: 0,
        no_fields: NoFields,
    };
    let run = Pipeline::new(Profile::document(), port).run(&mut reader, &mut scan);
    let hint = &scan.hint;
    match (run, hint.suggestion()) {
        (Err(_), _) => Fit::Document,
        (Ok(_), Some((profile, _))) => Fit::Profile(profile.finding_name()),
        // None fits them all: each conversation still finds its own, or says none does.
        (Ok(_), None) => Fit::Document,
    }
}

/// The scan of [`fitting_layout`]: probes failing snapshots until enough were seen.
struct Scan {
    hint: ProfileHint,
    snapshots: u32,
    datagrams: u64,
    no_fields: NoFields,
}

impl Sink for Scan {
    type Fields = NoFields;
    fn fields(&mut self) -> &mut NoFields {
        &mut self.no_fields
    }
    fn datagram(&mut self, e: &DatagramEvent<'_>) {
        self.datagrams += 1;
        self.snapshots += u32::from(snapshot(e));
        self.hint.datagram(e);
    }
    fn loose(&mut self, _: &LooseFinding) {}
    fn end(&mut self, _: &RunEnd<'_>) {}
    fn done(&self) -> bool {
        self.snapshots >= PROBES || self.datagrams >= SCAN_DATAGRAMS
    }
}
