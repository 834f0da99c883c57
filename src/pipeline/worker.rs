//! The stateless part of each frame's work, done on worker threads ahead of the ordered stage
//! ([`CaptureReader::for_each_frame_parallel`](crate::capture::CaptureReader)): its link layers,
//! and for an rtype datagram its CRC, its decompression, its header's check and, when the sink's
//! fields allow, the walk of its message with all that walk finds without knowing the
//! conversation (findings, facts, entities, entity types, the sink's rendering). The ordered
//! stage then keeps only what needs the datagrams before it: conversations, archetypes,
//! sessions, chunk sets, the sink.

use std::ops::Range;

use super::rtype_arm::walk_ahead;
use super::{EntityTypeAt, RenderAhead, Renderings};
use crate::capture::{self, Detached, Frame, LinkOutcome};
use crate::datagram::{rtype, Dialect};
use crate::finding::Finding;
use crate::message::{Facts, Layout, NoFields};
use crate::proto::profile::Profile;
use crate::session::analysis::bytes_hash;
use crate::session::event::EntityRef;
use crate::session::TypeSet;

/// One worker: its buffers, and what it does with a message.
pub(super) struct Worker<F> {
    profile: Profile,
    walking: Walking<F>,
    findings: Vec<Finding>,
}

/// Whether a worker walks the messages: only when its walk is the one the ordered stage would
/// make, which holds for a sink whose fields see nothing, or that renders them ahead.
enum Walking<F> {
    No,
    /// The sink's fields see nothing of a message (the summary, `check`, `stats`, `packets`
    /// without `-V`).
    Unseen,
    /// The sink's renderer (export's JSON).
    Render(F),
}

impl<F: RenderAhead> Worker<F> {
    /// A worker for a sink with these fields.
    pub(super) fn new(fields: &F, profile: &Profile) -> Worker<F> {
        let walking = if fields.unseen() {
            Walking::Unseen
        } else {
            fields.ahead().map_or(Walking::No, Walking::Render)
        };
        Worker {
            profile: profile.clone(),
            walking,
            findings: Vec::new(),
        }
    }

    /// The work on an rtype datagram's bytes.
    fn rtype(&mut self, bytes: &[u8], out: &mut Worked<F::Rendered>) -> RtypeWork {
        let unpacked = rtype::unpack(bytes, out.payloads.room());
        let payload = out.payloads.keep(unpacked.decompressed().unwrap_or(0));
        self.findings.clear();
        let checked = rtype::check(bytes, unpacked, &mut self.findings);
        let header_findings = span(&mut out.findings, &self.findings);
        let walked = checked.as_ref().and_then(|d| self.walk(d, &payload, out));
        RtypeWork {
            checked: checked.map(|d| d.detach()),
            header_findings,
            hash: bytes_hash(bytes),
            payload,
            walked,
        }
    }

    /// The message's walk, as the ordered stage would make it for a conversation that has no
    /// usual layout and no archetypes (it checks the entity types against them); `payload` is
    /// where its decompressed payload is in [`Worked::payloads`].
    fn walk(
        &mut self,
        d: &rtype::Datagram<'_>,
        payload: &Range<u32>,
        out: &mut Worked<F::Rendered>,
    ) -> Option<Walk> {
        if matches!(self.walking, Walking::No) {
            return None;
        }
        let decompressed = out.payloads.get(payload);
        self.findings.clear();
        let (entities, types) = (out.entities.len(), out.types.len());
        let mut type_set = TypeSet::default();
        let found = (
            &mut self.findings,
            &mut out.entities,
            (&mut out.types, &mut type_set),
        );
        let (layout, facts, rendered) = match &mut self.walking {
            Walking::Render(fields) => {
                fields.start_rendering(&mut out.rendered);
                let (layout, facts) = walk_ahead(d, decompressed, &self.profile, fields, found);
                let index = out.rendered.count();
                fields.drain_rendered(&mut out.rendered);
                (layout, facts, Some(index))
            }
            _ => {
                let walked = walk_ahead(d, decompressed, &self.profile, &mut NoFields, found);
                (walked.0, walked.1, None)
            }
        };
        Some(Walk {
            layout,
            facts,
            findings: span(&mut out.findings, &self.findings),
            entities: as_u32(entities..out.entities.len()),
            types: as_u32(types..out.types.len()),
            type_set,
            rendered,
        })
    }
}

impl<F: RenderAhead> capture::Ahead for Worker<F> {
    type Results = Worked<F::Rendered>;

    fn frame(&mut self, frame: &Frame<'_>, out: &mut Self::Results, room: bool) {
        let link = capture::udp_from_frame(frame.link_type, frame.data);
        let rtype = match &link {
            LinkOutcome::Udp(udp)
                if room && Dialect::detect(udp.payload) == Some(Dialect::Rtype) =>
            {
                Some(self.rtype(udp.payload, out))
            }
            _ => None,
        };
        out.frames.push(FrameWork {
            link: link.detach(),
            rtype,
        });
    }

    fn size(out: &Self::Results) -> usize {
        out.frames.len() * size_of::<FrameWork>()
            + out.payloads.used
            + out.rendered.size()
            + out.findings.len() * size_of::<Finding>()
            + out.entities.len() * size_of::<EntityRef>()
            + out.types.len() * size_of::<EntityTypeAt>()
    }

    fn clear(out: &mut Self::Results, limit: usize) {
        // A batch of hostile datagrams (each decompressing to 64 KiB, or naming thousands of
        // entities) gives its memory back.
        if out.capacity() > 2 * limit {
            *out = Worked::default();
        }
        out.frames.clear();
        out.payloads.used = 0;
        out.rendered.clear();
        out.findings.clear();
        out.entities.clear();
        out.types.clear();
    }
}

/// A batch's work: each frame's, with the bytes and lists they point into end to end.
#[derive(Default)]
pub(super) struct Worked<R> {
    frames: Vec<FrameWork>,
    payloads: Payloads,
    rendered: R,
    findings: Vec<Finding>,
    entities: Vec<EntityRef>,
    types: Vec<EntityTypeAt>,
}

/// One frame's work.
struct FrameWork {
    link: Detached,
    /// For an rtype datagram (unless the batch's results were full).
    rtype: Option<RtypeWork>,
}

struct RtypeWork {
    /// The header's check, and its findings in [`Worked::findings`].
    checked: Option<rtype::Checked>,
    header_findings: Range<u32>,
    hash: u64,
    /// The decompressed payload, in [`Worked::payloads`].
    payload: Range<u32>,
    walked: Option<Walk>,
}

/// A message's walk, its lists in [`Worked`].
struct Walk {
    layout: Option<Layout>,
    facts: Facts,
    findings: Range<u32>,
    entities: Range<u32>,
    types: Range<u32>,
    /// The entity types it names, as a set.
    type_set: TypeSet,
    /// The index of its rendering.
    rendered: Option<usize>,
}

/// What the ordered stage gets of a frame's work.
pub(super) struct FrameAhead<'w, R> {
    pub link: LinkOutcome<'w>,
    pub rtype: Option<RtypeAhead<'w, R>>,
}

/// An rtype datagram's work done ahead.
pub(super) struct RtypeAhead<'w, R> {
    /// The header's check: the datagram (to take back with its bytes), and its findings.
    pub checked: Option<rtype::Checked>,
    pub header_findings: &'w [Finding],
    /// The datagram's [`bytes_hash`].
    pub hash: u64,
    pub payload: &'w [u8],
    pub walked: Option<Walked<'w, R>>,
}

/// A message's walk done ahead, for a conversation with no usual layout and no archetypes.
pub(super) struct Walked<'w, R> {
    pub layout: Option<Layout>,
    pub facts: Facts,
    /// The walk's findings (not the header's), before the entity types are checked.
    pub findings: &'w [Finding],
    pub entities: &'w [EntityRef],
    pub types: &'w [EntityTypeAt],
    /// The types as a set.
    pub type_set: TypeSet,
    /// The sink's rendering of the fields, when it renders ahead: the batch's renderings, and
    /// its index in them.
    pub rendered: Option<(&'w R, usize)>,
}

impl<R: Renderings> Worked<R> {
    /// The bytes its buffers hold on to.
    fn capacity(&self) -> usize {
        self.frames.capacity() * size_of::<FrameWork>()
            + self.payloads.bytes.capacity()
            + self.rendered.capacity()
            + self.findings.capacity() * size_of::<Finding>()
            + self.entities.capacity() * size_of::<EntityRef>()
            + self.types.capacity() * size_of::<EntityTypeAt>()
    }

    /// Frame `index`'s work; `data` is the frame's bytes.
    pub(super) fn frame<'w>(&'w self, index: usize, data: &'w [u8]) -> Option<FrameAhead<'w, R>> {
        let work = self.frames.get(index)?;
        let rtype = work.rtype.as_ref().map(|r| RtypeAhead {
            checked: r.checked,
            header_findings: slice(&self.findings, &r.header_findings),
            hash: r.hash,
            payload: self.payloads.get(&r.payload),
            walked: r.walked.as_ref().map(|w| Walked {
                layout: w.layout,
                facts: w.facts,
                findings: slice(&self.findings, &w.findings),
                entities: slice(&self.entities, &w.entities),
                types: slice(&self.types, &w.types),
                type_set: w.type_set,
                rendered: w.rendered.map(|index| (&self.rendered, index)),
            }),
        });
        Some(FrameAhead {
            link: work.link.attach(data),
            rtype,
        })
    }
}

/// A batch's decompressed payloads, end to end. LZ4 writes each one in place, after those kept:
/// the bytes past them stay initialised from one batch to the next, so that a payload is
/// written once and never copied.
#[derive(Default)]
struct Payloads {
    bytes: Vec<u8>,
    /// How many of `bytes` the kept payloads take.
    used: usize,
}

impl Payloads {
    /// Room for the next payload: [`rtype::MAX_PAYLOAD`] bytes, as [`rtype::unpack`] takes.
    fn room(&mut self) -> &mut [u8] {
        let end = self.used + rtype::MAX_PAYLOAD;
        if self.bytes.len() < end {
            self.bytes.resize(end, 0);
        }
        &mut self.bytes[self.used..end]
    }

    /// Keeps the first `len` bytes of the room; returns where they are.
    fn keep(&mut self, len: usize) -> Range<u32> {
        let start = self.used;
        self.used += len;
        as_u32(start..self.used)
    }

    fn get(&self, r: &Range<u32>) -> &[u8] {
        slice(&self.bytes[..self.used], r)
    }
}

/// Appends `items` to `all`, returning where they are.
fn span<T: Copy>(all: &mut Vec<T>, items: &[T]) -> Range<u32> {
    let start = all.len();
    all.extend_from_slice(items);
    as_u32(start..all.len())
}

/// A batch's results stay far below 4 GiB ([`capture::reader::MAX_BATCH_BYTES`] and one frame).
fn as_u32(r: Range<usize>) -> Range<u32> {
    r.start as u32..r.end as u32
}

fn slice<'a, T>(all: &'a [T], r: &Range<u32>) -> &'a [T] {
    all.get(r.start as usize..r.end as usize)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Visitor;
    use crate::pipeline::{Named, Types};
    use crate::session::event::EntityEvent;

    #[test]
    fn payloads_kept_stay_whole_while_the_next_are_written() {
        let mut p = Payloads::default();
        p.room()[..3].copy_from_slice(b"abc");
        let first = p.keep(3);
        p.room()[..2].copy_from_slice(b"de");
        // The room past a kept payload is written over by the next, never the payload.
        p.room()[..4].copy_from_slice(b"fghi");
        let second = p.keep(4);
        let nothing = p.keep(0);
        assert_eq!((p.get(&first), p.get(&second)), (&b"abc"[..], &b"fghi"[..]));
        assert_eq!(p.get(&nothing), b"");
        assert_eq!(p.used, 7);
        assert_eq!(p.bytes.len(), 3 + rtype::MAX_PAYLOAD);
        // A new batch writes from the start again, in the bytes already there.
        p.used = 0;
        p.room()[..1].copy_from_slice(b"j");
        let third = p.keep(1);
        assert_eq!(p.get(&third), b"j");
        assert_eq!(p.bytes.len(), 3 + rtype::MAX_PAYLOAD);
    }

    #[test]
    fn an_entity_type_names_only_its_own_messages_entity() {
        let other = EntityRef {
            id: 7,
            event: EntityEvent::Update,
            type_id: None,
            at: 20,
        };
        // A worker's batch: another message's entity is already there.
        let mut entities = vec![other];
        let (mut list, mut set) = (vec![(5, 60)], TypeSet::default());
        let mut named = Named {
            inner: &mut NoFields,
            at: 100,
            first: 1,
            entities: &mut entities,
            types: Types::Gathered(&mut list, &mut set),
        };
        named.entity_type(3, 4);
        named.entity(9, 10);
        named.entity_type(300, 14);
        let typed: Vec<_> = entities.iter().map(|e| (e.id, e.type_id, e.at)).collect();
        assert_eq!(typed, [(7, None, 20), (9, Some(300), 110)]);
        // Every type is listed where it is, after the batch's others, and gathered.
        assert_eq!(list, [(5, 60), (3, 104), (300, 114)]);
        let mut expected = TypeSet::default();
        expected.insert(3);
        expected.insert(300);
        assert_eq!(set, expected);
    }
}
