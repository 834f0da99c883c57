//! The snapshot layout each rtype conversation is read with when no profile was named. Real
//! servers depart from the document's f32 layout, and the departure is one fact: a conversation
//! whose snapshots a configured or bundled profile reads cleanly is read with that profile, and
//! carries one `rtype.snapshot.layout` finding instead of a cascade of misread fields.
//!
//! A conversation decides at its first snapshot that some layout misreads (an empty snapshot
//! fits them all, and tells nothing): it is read with the first layout, in the run's order, that
//! reads that snapshot cleanly; when none does, with the run's first, and its findings stand (as
//! the Lua dissector's preference `auto` decides). The run's order is its own profile first (the one the scan before
//! a capture file's reading found, else the document's), then the document's, then the
//! candidates. Deciding on the way, not before, works the same on a file, a pipe and a live
//! interface, and for conversations that begin late in a capture.

use crate::datagram::rtype;
use crate::finding::Finding;
use crate::message::misreads;
use crate::proto::profile::Profile;
use crate::proto::Message;
use crate::session::SnapshotLayout;

/// Snapshots a conversation's layout is decided within: past them with no snapshot that told
/// the layouts apart, it keeps the run's first. Bounds the trial decodings a conversation costs.
const UNDECIDED_SNAPSHOTS: u8 = 64;

/// Layouts a run chooses from, at most (the configuration can name any number of profiles): each
/// is one trial decoding of a snapshot not yet decided.
pub const MAX_LAYOUTS: usize = 32;

/// The layouts conversations choose from, after the run's own profile (index 0).
#[derive(Default)]
pub(super) struct Layouts {
    /// Empty when a profile was named, or `--strict-layout`: every conversation is read with the
    /// run's profile.
    others: Vec<Profile>,
    /// The index of the document's layout (0 when the run's profile is the document's).
    document: usize,
    /// The findings of the trial decodings.
    scratch: Vec<Finding>,
}

/// The layouts a run chooses from after `run` (its profile), in order: the document's, unless it
/// is `run`, then each of `candidates` not already among them; at most [`MAX_LAYOUTS`] in all.
pub fn after(run: &Profile, candidates: impl IntoIterator<Item = Profile>) -> Vec<Profile> {
    let mut others: Vec<Profile> = Vec::new();
    let document = Profile::document();
    if run.name != document.name {
        others.push(document);
    }
    for candidate in candidates {
        let name = candidate.finding_name();
        let known = run.finding_name() == name || others.iter().any(|p| p.finding_name() == name);
        if !known && others.len() + 1 < MAX_LAYOUTS {
            others.push(candidate);
        }
    }
    others
}

impl Layouts {
    /// The layouts after `run` (the run's profile), as [`after`] orders them.
    pub(super) fn new(run: &Profile, candidates: impl IntoIterator<Item = Profile>) -> Layouts {
        let others = after(run, candidates);
        let document = match others.first() {
            Some(p) if p.name == Profile::document().name => 1,
            _ => 0,
        };
        Layouts {
            others,
            document,
            scratch: Vec::new(),
        }
    }

    /// Whether conversations choose their layout (no profile was named).
    pub(super) fn choosing(&self) -> bool {
        !self.others.is_empty()
    }

    /// The profile a conversation at `layout` is read with; `run` is the run's profile.
    pub(super) fn profile<'a>(&'a self, run: &'a Profile, layout: SnapshotLayout) -> &'a Profile {
        match layout.index().checked_sub(1) {
            Some(i) => self.others.get(i).unwrap_or(run),
            None => run,
        }
    }

    /// The name of each layout, by index (the run's profile first).
    pub(super) fn names<'a>(&'a self, run: &'a Profile) -> impl Iterator<Item = &'a str> {
        std::iter::once(run.name.as_str()).chain(self.others.iter().map(|p| p.name.as_str()))
    }

    /// Decides a conversation's layout (`layout`, while undecided) at a snapshot (`message`,
    /// `payload`). Returns the name of the layout it is now read with, for its finding, when that
    /// one is not the document's.
    pub(super) fn decide(
        &mut self,
        run: &Profile,
        layout: &mut SnapshotLayout,
        message: &'static Message,
        payload: &[u8],
    ) -> Option<&'static str> {
        let SnapshotLayout::Undecided(seen) = *layout else {
            return None;
        };
        if self.others.is_empty() {
            return None;
        }
        let rules = &rtype::MESSAGE_RULES;
        let mut misread = false;
        let mut first_clean = None;
        for (i, profile) in std::iter::once(run).chain(&self.others).enumerate() {
            if misreads(
                message,
                payload,
                rtype::ENDIAN,
                profile,
                rules,
                &mut self.scratch,
            ) {
                misread = true;
            } else if first_clean.is_none() {
                first_clean = Some(i);
            }
        }
        match (misread, first_clean) {
            (true, Some(i)) => {
                *layout = SnapshotLayout::Read(i as u8);
                (i != self.document).then(|| self.profile(run, *layout).finding_name())
            }
            // No layout reads it: the conversation keeps the run's, and its findings stand.
            (true, None) => {
                *layout = SnapshotLayout::Read(0);
                None
            }
            (false, _) if seen + 1 >= UNDECIDED_SNAPSHOTS => {
                *layout = SnapshotLayout::Read(0);
                None
            }
            _ => {
                *layout = SnapshotLayout::Undecided(seen + 1);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::rtype as desc;

    /// A SERVER_SNAPSHOT payload: entity 1 with `mask` and `fields`, or no entity.
    fn snapshot(entity: Option<(u16, &[u8])>) -> Vec<u8> {
        let mut p = u16::from(entity.is_some()).to_be_bytes().to_vec();
        if let Some((mask, fields)) = entity {
            p.extend(1u32.to_be_bytes());
            p.extend(mask.to_be_bytes());
            p.extend(fields);
        }
        p
    }

    fn bundled() -> Vec<Profile> {
        Profile::all_bundled()
    }

    #[test]
    fn a_conversation_decides_at_its_first_snapshot_some_layout_misreads() {
        let message = desc::message(desc::SNAPSHOT).unwrap();
        let run = Profile::document();
        let mut layouts = Layouts::new(&run, bundled());
        let mut layout = SnapshotLayout::default();
        // An empty snapshot fits every layout: still undecided.
        let empty = snapshot(None);
        assert_eq!(layouts.decide(&run, &mut layout, message, &empty), None);
        assert_eq!(layout, SnapshotLayout::Undecided(1));
        // x as i16 × 10 and a score on bit 10: the 17-byte build's, which the document misreads.
        let mut fields = 1001i16.to_be_bytes().to_vec();
        fields.extend(7i32.to_be_bytes());
        let departs = snapshot(Some((0x0402, &fields)));
        let name = layouts.decide(&run, &mut layout, message, &departs);
        assert_eq!(name, Some("reference-17byte"));
        let SnapshotLayout::Read(i) = layout else {
            panic!("{layout:?}")
        };
        assert_eq!(layouts.profile(&run, layout).name, "reference-17byte");
        assert_eq!(
            layouts.names(&run).nth(usize::from(i)),
            Some("reference-17byte")
        );
        // Decided: later snapshots change nothing.
        assert_eq!(layouts.decide(&run, &mut layout, message, &departs), None);
        assert_eq!(layout, SnapshotLayout::Read(i));
    }

    #[test]
    fn a_snapshot_no_layout_reads_keeps_the_runs_and_no_finding() {
        let message = desc::message(desc::SNAPSHOT).unwrap();
        let run = Profile::document();
        let mut layouts = Layouts::new(&run, bundled());
        let mut layout = SnapshotLayout::default();
        // Bit 15 is reserved by every layout.
        let broken = snapshot(Some((0x8000, &[])));
        assert_eq!(layouts.decide(&run, &mut layout, message, &broken), None);
        assert_eq!(layout, SnapshotLayout::Read(0));
    }

    #[test]
    fn undecided_conversations_settle_after_64_snapshots() {
        let message = desc::message(desc::SNAPSHOT).unwrap();
        let run = Profile::document();
        let mut layouts = Layouts::new(&run, bundled());
        let mut layout = SnapshotLayout::default();
        let empty = snapshot(None);
        for seen in 1..UNDECIDED_SNAPSHOTS {
            layouts.decide(&run, &mut layout, message, &empty);
            assert_eq!(layout, SnapshotLayout::Undecided(seen));
        }
        layouts.decide(&run, &mut layout, message, &empty);
        assert_eq!(layout, SnapshotLayout::Read(0));
    }

    #[test]
    fn a_run_chooses_from_at_most_32_layouts() {
        let run = Profile::document();
        let candidates = (0..40).map(|n| {
            Profile::parse(&format!(
                "name = \"p{n}\"\n[bits]\n1 = {{ name = \"x\", label = \"X\", type = \"i16\" }}\n"
            ))
            .unwrap()
        });
        let layouts = Layouts::new(&run, candidates);
        assert_eq!(layouts.names(&run).count(), MAX_LAYOUTS);
        assert_eq!(layouts.names(&run).nth(31), Some("p30"));
        // A profile named like the run's, or twice, is one layout.
        let layouts = Layouts::new(&run, [Profile::document(), Profile::document()]);
        assert_eq!(layouts.names(&run).count(), 1);
        // With the run's profile not the document's, the document's comes second.
        let found = &bundled()[0];
        let layouts = Layouts::new(found, bundled());
        let names: Vec<&str> = layouts.names(found).collect();
        assert_eq!(names, ["reference-17byte", "document", "reference-15byte"]);
    }
}
