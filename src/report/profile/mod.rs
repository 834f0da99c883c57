//! `rtype-inspect profile FILE`: where the bytes go. Per conversation and direction, for every
//! dialect: bandwidth by message type, snapshot bytes by entity type and by field (what
//! compression does to each), how often each entity is updated, time buckets, distributions, and
//! snapshot chunking, as text or as one JSON document (`"schema": "profile/1"`,
//! docs/schemas/profile.schema.json) that `diff`, `check`'s budgets and the HTML report read.
//!
//! The profiler is a [`Sink`]: the walker hands it every snapshot field with its offset and
//! length ([`costs::FieldCosts`]), the session analysis what each datagram did (round trips,
//! snapshot gaps, losses, duplicates, entities), and it folds them into [`account::Account`]s, one
//! per conversation and one for the capture, bounded in size: at most [`MAX_PROFILED`]
//! conversations get their own (later ones share one), the first [`MAX_DETAILED`] get time series
//! and entity timelines, and series fold when a capture outlasts [`series::MAX_BUCKETS`] buckets.

pub mod account;
mod costs;
pub mod document;
pub mod json;
pub mod series;
mod text;
pub mod timelines;
pub mod window;

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use serde_json::Value as Json;

use account::{
    ip_header, Account, BlockCost, FieldCost, FieldKey, Sample, SnapshotCost, TypeCost, KIND,
    OTHER_TYPE, UDP_HEADER, UNKNOWN_TYPE,
};
use costs::{bit_indices, FieldCosts};
use series::Grid;

use crate::app::inputs::{Input, InputArgs, Spool};
use crate::app::{read_capture, write_stdout, Format, ReadOpts, Reading, Term};
use crate::datagram::{rtype, Dialect};
use crate::pipeline::{RunEnd, Sink};
use crate::proto::rtype as desc;
use crate::session::analysis::Analysis;
use crate::session::entities::lifecycle;
use crate::session::event::{DatagramEvent, Decoded, EntityEvent, LooseFinding, ReassembledEvent};
use crate::session::Conversations;

/// Conversations profiled one by one; datagrams of later ones (and of conversation 0, past the
/// session layer's own limit) are profiled together.
pub const MAX_PROFILED: usize = 256;
/// Conversations (the first ones) that get time series and entity timelines.
pub const MAX_DETAILED: usize = 64;
/// Distinct rtnp JSON keys told apart in the field rows (and component kinds in the type rows).
pub const MAX_KEYS: usize = 128;
/// How often the entity timelines sample a conversation's snapshot (its entities' update
/// instants and positions), in capture time.
pub const SAMPLE_EVERY_NANOS: i64 = 100_000_000;

/// `rtype-inspect profile`'s options, as `cli::args` parsed them.
pub struct ProfileOptions {
    pub inputs: InputArgs,
    pub interval: i64,
    pub format: Format,
    pub read: ReadOpts,
}

/// A bucket width: a number of `ms` or `s` (fractions allowed), from 10 ms to one hour; in
/// nanoseconds.
pub fn parse_interval(text: &str) -> Result<i64, String> {
    let (number, unit) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1e9)
    } else {
        return Err(format!("{text:?}: give a unit, e.g. 100ms or 1s"));
    };
    let nanos = number
        .trim()
        .parse::<f64>()
        .map_err(|_| format!("{text:?}: not a duration such as 100ms or 1s"))?
        * unit;
    if !(1e7..=3.6e12).contains(&nanos) {
        return Err(format!("{text:?}: the interval must be from 10ms to 3600s"));
    }
    Ok(nanos.round() as i64)
}

/// Runs `rtype-inspect profile`. Several captures' profiles (files, directories) follow one
/// another (a blank line between), or make one JSON array, as `stats` gives them.
pub fn run(options: ProfileOptions, term: Term) -> Result<ExitCode, String> {
    let captures = options.inputs.captures("profile")?;
    let mut reading = options.read.reading()?;
    reading.count = options.inputs.count;
    let document = |file: &Path, reading: &Reading| -> Result<String, String> {
        let json = profile_of(file, reading, options.interval)?;
        Ok(match options.format {
            // One line: the document is data for tools (diff, the report, jq), and its series
            // would take a line per number pretty-printed.
            Format::Json => serde_json::to_string(&json).unwrap_or_default() + "\n",
            Format::Text => text(&json, term),
        })
    };
    if !captures.several {
        let file = &captures.inputs[0].path;
        return write_stdout(document(file, &reading.for_file(file)?)?.as_bytes());
    }
    let job = |input: &Input, reading: &Reading| {
        let mut spool = Spool::new().map_err(|e| format!("temporary file: {e}"))?;
        let out = document(&input.path, reading)?;
        spool
            .write_all(out.as_bytes())
            .map_err(|e| format!("temporary file: {e}"))?;
        Ok(spool)
    };
    captures.spool_list(&reading, job, options.format == Format::Json)
}

/// The profile document as text (what `profile` prints without `--format json`).
pub fn text(json: &Json, term: Term) -> String {
    text::render(json, term)
}

/// Profiles one capture into its JSON document (with the configuration's profile for its file).
pub fn profile_file(file: &Path, reading: &Reading, interval_nanos: i64) -> Result<Json, String> {
    profile_of(file, &reading.for_file(file)?, interval_nanos)
}

/// [`profile_file`] with the reading already made for the file.
fn profile_of(file: &Path, reading: &Reading, interval_nanos: i64) -> Result<Json, String> {
    let mut reading = reading.clone();
    reading.analysis.entity_figures = true;
    let mut profiler = Profiler::new(&file.display().to_string(), &reading, interval_nanos);
    read_capture(file, &reading, &mut profiler)?;
    profiler
        .json
        .take()
        .ok_or_else(|| format!("{}: no profile made", file.display()))
}

/// The profile being made while the pipeline runs.
pub struct Profiler {
    costs: FieldCosts,
    grid: Grid,
    total: Account,
    /// Indexed by conversation id − 1, up to [`MAX_PROFILED`].
    conversations: Vec<Option<Box<Account>>>,
    /// Conversation 0 and those past [`MAX_PROFILED`].
    others: Account,
    /// rt component kinds (type rows) and rtnp JSON keys (field rows), by index.
    kinds: Vec<&'static str>,
    keys: Vec<String>,
    /// The component kind (type code) each field slot was first seen in, for rt's field names.
    slot_kinds: Vec<u32>,
    /// When each detailed conversation's timelines sample next, and the newest capture time.
    next_sample: Vec<i64>,
    now: i64,
    /// Whether this datagram's conversation is due a sample (its blocks and their positions are
    /// then kept).
    sampled: bool,
    /// One datagram's entity blocks, their bytes by type, the (type, id) pairs that may be new,
    /// and its field costs.
    blocks: Vec<BlockCost>,
    types: Vec<TypeCost>,
    probes: Vec<(u32, u32)>,
    fields: Vec<FieldCost>,
    file: String,
    reading: Reading,
    json: Option<Json>,
}

impl Profiler {
    pub fn new(file: &str, reading: &Reading, interval_nanos: i64) -> Profiler {
        Profiler {
            costs: FieldCosts::new(&reading.layouts()),
            grid: Grid::new(interval_nanos),
            total: Account::new(true),
            conversations: Vec::new(),
            others: Account::new(false),
            kinds: Vec::new(),
            keys: Vec::new(),
            slot_kinds: Vec::new(),
            next_sample: vec![i64::MIN; MAX_DETAILED],
            now: i64::MIN,
            sampled: false,
            blocks: Vec::new(),
            types: Vec::new(),
            probes: Vec::new(),
            fields: Vec::new(),
            file: file.to_owned(),
            reading: reading.clone(),
            json: None,
        }
    }

    /// The profile as JSON (after the run).
    pub fn json(&self) -> Option<&Json> {
        self.json.as_ref()
    }

    fn fold(&mut self, factor: usize) {
        self.total.fold(factor);
        for a in self.conversations.iter_mut().flatten() {
            a.fold(factor);
        }
    }
}

/// The account of a conversation (made when first needed).
fn account<'a>(
    conversations: &'a mut Vec<Option<Box<Account>>>,
    others: &'a mut Account,
    conversation: u32,
) -> &'a mut Account {
    match (conversation as usize).checked_sub(1) {
        Some(index) if index < MAX_PROFILED => {
            if conversations.len() <= index {
                conversations.resize_with(index + 1, || None);
            }
            conversations[index].get_or_insert_with(|| Box::new(Account::new(index < MAX_DETAILED)))
        }
        _ => others,
    }
}

/// The index of `name` in `list`, added when new; `None` once the list holds [`MAX_KEYS`].
fn intern<T: PartialEq + Clone>(list: &mut Vec<T>, name: &T) -> Option<usize> {
    if let Some(i) = list.iter().position(|k| k == name) {
        return Some(i);
    }
    (list.len() < MAX_KEYS).then(|| {
        list.push(name.clone());
        list.len() - 1
    })
}

/// Bytes a JSON value takes written compactly.
fn json_len(value: &impl serde::Serialize) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Takes one entity block of a snapshot: its bytes go to its type's (the last type first, as
/// blocks of one type often follow each other), a (type, id) pair that may be new is kept, and
/// the block itself when the timelines sample this datagram.
#[inline]
fn add_block(
    types: &mut Vec<TypeCost>,
    probes: &mut Vec<(u32, u32)>,
    blocks: &mut Vec<BlockCost>,
    sampled: bool,
    b: BlockCost,
) {
    let found = match types.last_mut().filter(|t| t.type_code == b.type_code) {
        Some(t) => Some(t),
        None => types.iter_mut().find(|t| t.type_code == b.type_code),
    };
    match found {
        Some(t) => {
            t.updates += 1;
            t.bytes += b.bytes;
        }
        None => types.push(TypeCost {
            type_code: b.type_code,
            updates: 1,
            bytes: b.bytes,
        }),
    }
    if b.probe {
        probes.push((b.type_code, b.id));
    }
    if sampled {
        blocks.push(b);
    }
}

/// A number at `object.outer.inner` of an rtnp entity (`transform.x`, `position.y`).
fn json_position(entity: &Json, inner: &str) -> Option<f64> {
    ["transform", "position"]
        .iter()
        .find_map(|outer| entity.get(*outer)?.get(inner)?.as_f64())
}

impl Profiler {
    /// The cost of a snapshot walked field by field (rtype, rt): from the field costs, its
    /// entities' types from the analysis.
    fn walked_cost(
        &mut self,
        e: &DatagramEvent<'_>,
        a: &Analysis,
        payload: u64,
    ) -> (u64, u64, u64) {
        let touched = self.costs.total();
        let c = &self.costs;
        let resolved = a.entities().last();
        let kind = match (e.dialect, e.message) {
            (Dialect::Rt, Some(m)) => {
                let short = m.short;
                let short = short
                    .strip_suffix("_snapshot")
                    .or_else(|| short.strip_suffix("_delta"))
                    .unwrap_or(short);
                Some(intern(&mut self.kinds, &short).map_or(OTHER_TYPE, |i| KIND + i as u32))
            }
            _ => None,
        };
        // One block per entity the walk read (a block it could not finish costs nothing here:
        // its bytes are undecoded).
        let count = e.entities.len().max(c.blocks.len());
        for i in 0..count {
            let b = c.blocks.get(i).copied().unwrap_or_default();
            let end = c.blocks.get(i + 1).map_or(b.end, |next| next.at);
            let known = resolved.get(i);
            let type_id = known
                .and_then(|r| r.type_id)
                .or_else(|| e.entities.get(i).and_then(|r| r.type_id));
            let type_code = kind.unwrap_or_else(|| type_id.map_or(UNKNOWN_TYPE, u32::from));
            let block = BlockCost {
                id: e.entities.get(i).map_or(b.id, |r| r.id),
                type_code,
                bytes: u64::from(end.saturating_sub(b.at)),
                probe: kind.is_some() || known.is_none_or(|r| r.changed),
            };
            add_block(
                &mut self.types,
                &mut self.probes,
                &mut self.blocks,
                self.sampled,
                block,
            );
        }
        for bit in bit_indices(touched) {
            let (bytes, present) = c.bit_cost(bit);
            self.fields.push(FieldCost {
                // The run's layout's fields by bit; another layout's by its field.
                key: c
                    .bit_slot(bit)
                    .map_or(FieldKey::Bit(bit as u8), FieldKey::Slot),
                bytes: bytes.into(),
                present: present.into(),
            });
        }
        for slot in &c.touched {
            let (bytes, present) = c.cost(*slot);
            let s = usize::from(*slot);
            if self.slot_kinds.len() <= s {
                self.slot_kinds.resize(s + 1, UNKNOWN_TYPE);
            }
            if self.slot_kinds[s] == UNKNOWN_TYPE {
                self.slot_kinds[s] = kind.unwrap_or(UNKNOWN_TYPE);
            }
            self.fields.push(FieldCost {
                key: FieldKey::Slot(*slot),
                bytes: bytes.into(),
                present: present.into(),
            });
        }
        if c.unslotted > 0 {
            self.fields.push(FieldCost {
                key: FieldKey::Other,
                bytes: c.unslotted.into(),
                present: 0,
            });
        }
        let head = u64::from(c.head);
        let undecoded = payload.saturating_sub(head + c.in_blocks());
        (head, u64::from(c.framing), undecoded)
    }

    /// The cost of an rtnp snapshot, from its JSON: each entity's members as written compactly
    /// (key, colon, value), the rest of each entity's object as its framing, and the rest of the
    /// text as the message's head.
    fn json_cost(&mut self, json: &Json, payload: u64) -> (u64, u64, u64) {
        let mut in_entities = 0;
        let mut framing = 0;
        let entities = json.get("entities").and_then(Json::as_array);
        for entity in entities.into_iter().flatten() {
            let whole = json_len(entity);
            let mut members = 0;
            for (key, value) in entity.as_object().into_iter().flatten() {
                let bytes = json_len(key) + 1 + json_len(value);
                members += bytes;
                let key = intern(&mut self.keys, key)
                    .map_or(FieldKey::Other, |i| FieldKey::Json(i as u16));
                self.fields.push(FieldCost {
                    key,
                    bytes,
                    present: 1,
                });
            }
            framing += whole.saturating_sub(members);
            in_entities += whole;
            let id = entity
                .get("networkId")
                .or_else(|| entity.get("id"))
                .and_then(Json::as_u64)
                .unwrap_or(0);
            let block = BlockCost {
                id: id as u32,
                type_code: UNKNOWN_TYPE,
                bytes: whole,
                probe: true,
            };
            add_block(
                &mut self.types,
                &mut self.probes,
                &mut self.blocks,
                self.sampled,
                block,
            );
        }
        (payload.saturating_sub(in_entities), framing, 0)
    }
}

impl Sink for Profiler {
    type Fields = FieldCosts;
    fn fields(&mut self) -> &mut FieldCosts {
        &mut self.costs
    }
    fn begin(&mut self, conversations: &Conversations, conversation: u32) {
        self.costs.reset();
        let layout = conversations.get(conversation).map(|c| c.layout.index());
        self.costs.select(layout.unwrap_or(0));
        let due = (conversation as usize)
            .checked_sub(1)
            .and_then(|i| self.next_sample.get(i));
        self.sampled = due.is_some_and(|at| self.now >= *at);
    }
    fn datagram(&mut self, _: &DatagramEvent<'_>) {}
    fn analysed(&mut self, e: &DatagramEvent<'_>, a: &Analysis) {
        self.now = self.now.max(e.ts_nanos);
        let (bucket, fold) = self.grid.place(e.ts_nanos, e.frame);
        if fold > 1 {
            self.fold(fold);
        }
        let udp = e.bytes.len() as u64;
        let payload = e.payload.map_or(0, |p| p.len() as u64);
        let wire_payload = match e.decoded {
            Some(Decoded::Rtype(d)) if e.payload.is_some() => d.wire_payload.len() as u64,
            _ => payload,
        };
        self.blocks.clear();
        self.types.clear();
        self.probes.clear();
        self.fields.clear();
        if self.sampled {
            let endian = match e.decoded {
                Some(Decoded::Rtype(_)) => Some(rtype::ENDIAN),
                Some(Decoded::Rt(d)) => Some(d.header.endian()),
                _ => None,
            };
            if let (Some(payload), Some(endian)) = (e.payload, endian) {
                self.costs.read_positions(payload, endian);
            }
        }
        let snapshot = lifecycle(e.message.and_then(|m| m.role)) == Some(EntityEvent::Update);
        let parts = match (snapshot, e.decoded) {
            (false, _) => None,
            (
                true,
                Some(Decoded::Rtnp {
                    json: Some(json), ..
                }),
            ) => Some(self.json_cost(json, payload)),
            (true, _) => Some(self.walked_cost(e, a, payload)),
        };
        let Profiler {
            total,
            conversations,
            others,
            blocks,
            types,
            probes,
            fields,
            costs,
            next_sample,
            ..
        } = self;
        let snapshot = parts.map(|(head, framing, undecoded)| SnapshotCost {
            head,
            framing,
            undecoded,
            ratio: if payload > 0 {
                wire_payload as f64 / payload as f64
            } else {
                1.0
            },
            types,
            probes,
            fields,
        });
        let sample = Sample {
            frame: e.frame,
            ts_nanos: e.ts_nanos,
            bucket,
            dialect: e.dialect,
            direction: e.direction,
            code: e.code,
            name: e.name,
            udp,
            wire: udp + UDP_HEADER + ip_header(e.src.is_ipv6()),
            payload,
            wire_payload,
            compressed: e.compressed(),
            observed: a.last(),
            findings: e.findings,
            snapshot,
            chunk: e.dialect == Dialect::Rtype && e.code == Some(desc::SNAPSHOT_CHUNK),
        };
        total.add_series(&sample);
        let account = account(conversations, others, e.conversation);
        account.add(&sample);
        if let Some(t) = &mut account.timelines {
            let json = match e.decoded {
                Some(Decoded::Rtnp { json, .. }) => json,
                _ => None,
            };
            let entities = json
                .and_then(|j| j.get("entities"))
                .and_then(Json::as_array);
            let position = |i: usize| match entities.and_then(|list| list.get(i)) {
                Some(entity) => (json_position(entity, "x"), json_position(entity, "y")),
                None => costs.blocks.get(i).map_or((None, None), |c| (c.x, c.y)),
            };
            // A sample when one is due and the datagram brought positions (a snapshot whose
            // blocks were all read field by field has none: the next one will).
            let due = (e.conversation as usize)
                .checked_sub(1)
                .and_then(|i| next_sample.get_mut(i))
                .filter(|at| e.ts_nanos >= **at);
            if let Some(next) = due {
                if (0..blocks.len()).any(|i| position(i) != (None, None)) {
                    *next = e.ts_nanos.saturating_add(SAMPLE_EVERY_NANOS);
                    for (i, b) in blocks.iter().enumerate() {
                        let (x, y) = position(i);
                        t.update(b.id, b.type_code, e.ts_nanos, x, y);
                    }
                }
            }
            for r in e.entities {
                match r.event {
                    EntityEvent::Spawn => t.lifecycle(r.id, true, e.ts_nanos),
                    EntityEvent::Destroy => t.lifecycle(r.id, false, e.ts_nanos),
                    EntityEvent::Update => {}
                }
            }
        }
    }
    fn reassembled(&mut self, r: &ReassembledEvent<'_>) {
        let c = &mut account(&mut self.conversations, &mut self.others, r.conversation).chunking;
        c.sets += 1;
        c.chunks_in_sets += u64::from(r.chunks);
        c.most_chunks = c.most_chunks.max(u64::from(r.chunks));
    }
    fn loose(&mut self, f: &LooseFinding) {
        let bucket = self.grid.bucket_of_frame(f.frame);
        self.total.loose(f.finding.rule, bucket);
        account(&mut self.conversations, &mut self.others, f.conversation)
            .loose(f.finding.rule, bucket);
    }
    fn end(&mut self, end: &RunEnd<'_>) {
        // The capture's figures are its conversations' together; its series were kept as
        // the datagrams came.
        let mut whole = Account::new(false);
        for a in self.conversations.iter().flatten() {
            whole.merge(a);
        }
        whole.merge(&self.others);
        whole.first = self.total.first;
        whole.last = self.total.last;
        whole.series = self.total.series.take();
        for row in &mut self.total.messages {
            if let Some(series) = row.series.take() {
                whole.adopt_series(row, series);
            }
        }
        self.total = whole;
        self.json = Some(json::document(self, end));
    }
}
