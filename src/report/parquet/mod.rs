//! `export --format parquet`: the capture as a dataset of Parquet tables (zstd), one file per
//! table in a Hive-style partition per capture (`DIR/<table>/capture=<NAME>/part-0.parquet`), so
//! that DuckDB, Spark, Trino, ClickHouse and pandas read many captures as one table.
//!
//! The tables and their columns are in [`tables`] (the described fields' names come from the
//! registry), the column builders in [`columns`], a table's file in [`writer`]; the sink below
//! fills them from the pipeline's events and its visitor's notes ([`record`]), and [`dataset`]
//! lays the files out and commits them.

pub mod columns;
pub mod dataset;
mod record;
mod states;
pub mod tables;
pub mod writer;

use columns::Scratch;
use record::{Carried, Place, Recorder, ScopeRow};
use states::States;
use tables::{Dataset, Target, CAPTURES, CONVERSATIONS, DATAGRAMS, FINDINGS, REASSEMBLED, RTNP};
use writer::TableWriter;

use super::fields::Sprites;
use super::filter::Filter;
use super::render;
use crate::app::OutputFile;
use crate::capture::CaptureInfo;
use crate::datagram::Dialect;
use crate::finding::Finding;
use crate::pipeline::{RunEnd, Sink};
use crate::proto::registry::Scope;
use crate::session::analysis::Analysis;
use crate::session::event::{DatagramEvent, Decoded, LooseFinding, ReassembledEvent};
use crate::session::Conversations;
use crate::tally::summary::Summary;

/// What the captures table says of the file itself (the rest comes from the run).
#[derive(Clone, Debug)]
pub struct FileFacts {
    pub file: String,
    pub size: u64,
    pub sha256: String,
}

/// Writes one capture's tables.
pub struct Parquet {
    dataset: Dataset,
    tables: Vec<TableWriter>,
    scratch: Scratch,
    fields: Recorder,
    /// The world, for `entity_states`.
    states: States,
    sprites: Sprites,
    /// An address as text (reused).
    ip: String,
    filter: Filter,
    facts: FileFacts,
    info: Option<CaptureInfo>,
    first_ts: Option<i64>,
    /// The last datagram's time and message name (a reassembled snapshot's are its chunk's).
    last_ts: i64,
    summary: Summary,
    /// Where an entity row's type goes, when its block left it out.
    entity_type: Option<Target>,
    /// The rows of the datagram just written, placed once the analysis has resolved its
    /// entities' types ([`Sink::analysed`]).
    pending: Option<(Option<ScopeRow>, ScopeRow, Place<'static>)>,
    /// The first write error; the run stops at the next frame.
    pub error: Option<String>,
    /// A filter that asked for what the capture does not have, known at the end.
    pub unmatched: Option<String>,
}

/// Microseconds since the epoch, rounded down.
fn micros(nanos: i64) -> i64 {
    nanos.div_euclid(1_000)
}

impl Parquet {
    /// A sink writing `dataset`'s tables into `files` (one temporary file per table, in order).
    pub fn new(
        dataset: Dataset,
        tables: Vec<TableWriter>,
        filter: Filter,
        facts: FileFacts,
    ) -> Parquet {
        let entity_type = dataset.entity_type();
        let states = States::new(dataset.states.clone(), dataset.state_names.clone());
        Parquet {
            states,
            entity_type,
            pending: None,
            dataset,
            tables,
            scratch: Scratch::default(),
            fields: Recorder::default(),
            sprites: Sprites::default(),
            ip: String::new(),
            filter,
            facts,
            info: None,
            first_ts: None,
            last_ts: 0,
            summary: Summary::default(),
            error: None,
            unmatched: None,
        }
    }

    /// Writes every table's last rows and footer; the files, in the order they must be put in
    /// place (the captures table last).
    pub fn finish(mut self) -> Result<Vec<OutputFile>, String> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let mut files = Vec::with_capacity(self.tables.len());
        let mut captures = None;
        for (t, table) in self.tables.into_iter().enumerate() {
            let name = &self.dataset.tables[t].name;
            let file = table
                .finish(&mut self.scratch)
                .map_err(|e| format!("{name}: {e}"))?;
            match t {
                CAPTURES => captures = Some(file),
                _ => files.push(file),
            }
        }
        files.extend(captures);
        Ok(files)
    }

    /// Writes the row groups that are full; not while a datagram's rows wait to be placed (its
    /// row numbers are those of the groups being built).
    fn flush_full(&mut self) {
        if self.pending.is_some() {
            return;
        }
        for (t, table) in self.tables.iter_mut().enumerate() {
            if self.error.is_none() && table.full() {
                if let Err(e) = table.flush(&mut self.scratch) {
                    self.error = Some(format!("{}: {e}", self.dataset.tables[t].name));
                }
            }
        }
    }

    /// A new row of a datagram's own table (not `datagrams`): its frame, time and conversation.
    fn scope_row(&mut self, table: usize, e: &DatagramEvent<'_>) -> u32 {
        let t = &mut self.tables[table];
        let row = t.new_row();
        t.col(0).set_int(row, e.frame as i64);
        t.col(1).set_int(row, micros(e.ts_nanos));
        t.col(2).set_int(row, e.conversation.into());
        row
    }

    /// The row of a finding that belongs to no datagram; `reason`, why reading stopped.
    fn loose_row(&mut self, f: &LooseFinding, reason: Option<&str>) {
        self.summary.loose(f);
        if self
            .filter
            .matches_finding(f.frame, f.conversation, f.finding.rule)
        {
            let detail = render::loose_detail(&f.finding, reason);
            self.finding(f.frame, f.conversation, &f.finding, false, &detail);
            self.flush_full();
        }
    }

    fn finding(
        &mut self,
        frame: u64,
        conversation: u32,
        f: &Finding,
        of_datagram: bool,
        detail: &str,
    ) {
        let info = f.rule.info();
        let t = &mut self.tables[FINDINGS];
        let row = t.new_row();
        t.col(0).set_int(row, frame as i64);
        t.col(1).set_int(row, conversation.into());
        t.col(2).set_str(row, info.id);
        t.col(3).set_str(row, info.severity.name());
        t.col(4).set_int(row, f.at.into());
        t.col(5).set_str(row, detail);
        t.col(6).set_bool(row, of_datagram);
        t.col(7).set_int(row, f.count.into());
    }

    /// The datagrams row: the event's facts.
    fn datagram_row(&mut self, e: &DatagramEvent<'_>, rel: f64) -> u32 {
        let t = &mut self.tables[DATAGRAMS];
        let row = t.new_row();
        let ip = &mut self.ip;
        ip.clear();
        t.col(0).set_int(row, e.frame as i64);
        t.col(1).set_int(row, micros(e.ts_nanos));
        t.col(2).set_int(row, e.ts_nanos);
        t.col(3).set_float(row, rel);
        render::push_ip(ip, e.src.ip());
        t.col(4).set_str(row, ip);
        t.col(5).set_int(row, e.src.port().into());
        ip.clear();
        render::push_ip(ip, e.dst.ip());
        t.col(6).set_str(row, ip);
        t.col(7).set_int(row, e.dst.port().into());
        t.col(8).set_int(row, e.conversation.into());
        t.col(9).set_str(row, e.dialect.name());
        if let Some(d) = e.direction {
            t.col(10).set_str(row, d.name());
        }
        t.col(11).set_int(row, e.bytes.len() as i64);
        if let Some(code) = e.code {
            t.col(12).set_int(row, code.into());
        }
        t.col(13).set_str(row, e.name);
        if let Some(s) = e.sequence {
            t.col(14).set_int(row, s.into());
        }
        if let Some(tick) = e.tick {
            t.col(15).set_int(row, tick.into());
        }
        match e.decoded {
            Some(Decoded::Rtype(d)) => {
                t.col(16).set_int(row, d.header.layout().len() as i64);
                t.col(17).set_bool(row, d.header.compressed());
                // Both CRCs only when they differ: a matching one says nothing more (and costs
                // eight incompressible bytes a row).
                if !d.crc_ok() {
                    t.col(18).set_int(row, d.crc_stored.into());
                    t.col(19).set_int(row, d.crc_computed.into());
                }
                t.col(20).set_bool(row, d.crc_ok());
            }
            Some(Decoded::Rt(_)) => t.col(17).set_bool(row, e.compressed()),
            Some(Decoded::Rtnp { .. } | Decoded::Described { .. }) | None => {}
        }
        row
    }

    /// The rtnp_messages row: the framing and the JSON message whole.
    fn rtnp_row(&mut self, e: &DatagramEvent<'_>) {
        let row = self.scope_row(RTNP, e);
        let t = &mut self.tables[RTNP];
        if let Some(Decoded::Rtnp {
            framing,
            text,
            json,
        }) = e.decoded
        {
            t.col(3).set_str(row, framing.name());
            t.col(4).set_str(row, e.name);
            match (json, text) {
                (Some(json), _) => t.col(5).set_str(row, &json.to_string()),
                (None, Some(text)) => t.col(6).set_str(row, text),
                (None, None) => {}
            }
        }
    }
}

impl Sink for Parquet {
    type Fields = Recorder;

    fn fields(&mut self) -> &mut Recorder {
        &mut self.fields
    }

    fn start(&mut self, info: &CaptureInfo) {
        self.info = Some(info.clone());
    }

    fn begin(&mut self, conversations: &Conversations, conversation: u32) {
        self.fields.clear();
        self.sprites.refresh(conversations, conversation);
    }

    fn skipped(&mut self, e: &DatagramEvent<'_>) {
        self.first_ts.get_or_insert(e.ts_nanos);
        self.states.apply(e, &self.fields, None);
    }

    fn datagram(&mut self, e: &DatagramEvent<'_>) {
        self.summary.datagram(e);
        let first = *self.first_ts.get_or_insert(e.ts_nanos);
        let rel = e.ts_nanos.saturating_sub(first) as f64 / 1e9;
        self.last_ts = e.ts_nanos;
        let matched = self.filter.matches(e, rel);
        let states = matched.then(|| &mut self.tables[self.dataset.entity_states]);
        self.states.apply(e, &self.fields, states);
        if !matched {
            self.fields.clear();
            return;
        }
        let row = self.datagram_row(e, rel);
        let place = Place {
            frame: e.frame as i64,
            time_us: micros(e.ts_nanos),
            conversation: e.conversation,
            message: e.message.map_or("UNKNOWN", |m| m.name),
        };
        let (protocol, own) = match e.dialect {
            Dialect::Rtype => (Dialect::Rtype, DATAGRAMS),
            Dialect::Rt => (Dialect::Rt, self.dataset.rt_messages),
            Dialect::Rtnp => {
                self.rtnp_row(e);
                (Dialect::Rtnp, RTNP)
            }
            // A described dialect's datagrams are rows of `datagrams` (frame, addresses,
            // message name, findings); their fields are not columns yet.
            Dialect::Described(_) => (e.dialect, DATAGRAMS),
        };
        if matches!(e.dialect, Dialect::Rtype | Dialect::Rt) {
            let body_scope = Scope::Message(protocol, e.code.unwrap_or(0));
            let body_table = match (e.message, self.dataset.routes.get(body_scope)) {
                (Some(_), Some(route)) => route.table,
                _ => own,
            };
            let header_row = if own == DATAGRAMS {
                row
            } else {
                self.scope_row(own, e)
            };
            let body_row = match body_table {
                t if t == own => header_row,
                t => self.scope_row(t, e),
            };
            let header = ScopeRow {
                scope: Some(Scope::Header(protocol)),
                table: own,
                row: header_row,
            };
            let body = ScopeRow {
                scope: e.message.map(|_| body_scope),
                table: body_table,
                row: body_row,
            };
            self.pending = Some((Some(header), body, place));
        }
        for f in e.findings {
            self.finding(e.frame, e.conversation, f, true, &render::detail(f));
        }
        self.flush_full();
    }

    fn analysed(&mut self, e: &DatagramEvent<'_>, analysis: &Analysis) {
        let Some((header, body, place)) = self.pending.take() else {
            return;
        };
        let carried = Carried {
            target: self.entity_type,
            refs: e.entities,
            resolved: analysis.entities().last(),
        };
        self.fields.place(
            &self.dataset.routes,
            header,
            body,
            &place,
            &mut self.tables,
            &self.sprites,
            &carried,
        );
        self.flush_full();
    }

    fn reassembled(&mut self, e: &ReassembledEvent<'_>) {
        let t = &mut self.tables[REASSEMBLED];
        let row = t.new_row();
        t.col(0).set_int(row, e.frame as i64);
        t.col(1).set_int(row, micros(self.last_ts));
        t.col(2).set_int(row, e.conversation.into());
        t.col(3).set_int(row, e.tick.into());
        t.col(4).set_int(row, e.chunks.into());
        t.col(5).set_int(row, e.first_frame as i64);
        let place = Place {
            frame: e.frame as i64,
            time_us: micros(self.last_ts),
            conversation: e.conversation,
            message: crate::proto::registry::snapshot_message().name,
        };
        let body = ScopeRow {
            scope: Some(Scope::Reassembled),
            table: REASSEMBLED,
            row,
        };
        self.fields.place(
            &self.dataset.routes,
            None,
            body,
            &place,
            &mut self.tables,
            &self.sprites,
            &Carried {
                target: None,
                refs: &[],
                resolved: &[],
            },
        );
        self.flush_full();
    }

    fn loose(&mut self, f: &LooseFinding) {
        self.loose_row(f, None);
    }

    fn cut(&mut self, f: &LooseFinding, reason: &str) {
        self.loose_row(f, Some(reason));
    }

    fn end(&mut self, end: &RunEnd<'_>) {
        self.summary.end(end);
        self.unmatched = self
            .filter
            .missing_conversation(end.conversations.all().len());
        for c in end.conversations.all() {
            let t = &mut self.tables[CONVERSATIONS];
            let row = t.new_row();
            t.col(0).set_int(row, c.id.into());
            t.col(1).set_str(row, c.dialect.name());
            t.col(2).set_str(row, &c.client.to_string());
            t.col(3).set_str(row, &c.server.to_string());
            t.col(4).set_int(row, c.first_frame as i64);
            if c.dialect == Dialect::Rtype {
                t.col(5).set_str(row, end.layout(c));
            }
        }
        let findings: u64 = self.summary.rules.present().iter().map(|r| r.1.count).sum();
        let facts = self.facts.clone();
        let t = &mut self.tables[CAPTURES];
        let row = t.new_row();
        t.col(0).set_str(row, &facts.file);
        t.col(1).set_int(row, facts.size as i64);
        t.col(2).set_str(row, &facts.sha256);
        t.col(3).set_str(row, &end.info.format.to_string());
        t.col(4).set_bool(row, end.info.gzip);
        t.col(5).set_bool(row, end.info.nanosecond);
        let links: Vec<_> = end.info.link_types.iter().map(|l| l.label()).collect();
        t.col(6).set_str(row, &links.join(","));
        t.col(7).set_int(row, end.read.frames as i64);
        t.col(8).set_int(row, end.counts.datagrams as i64);
        if let (Some(first), Some(last)) = (end.first_ts, end.last_ts) {
            t.col(9).set_int(row, micros(first));
            t.col(10).set_int(row, micros(last));
            t.col(11)
                .set_float(row, last.saturating_sub(first) as f64 / 1e9);
        }
        t.col(12).set_bool(row, end.read.truncated.is_some());
        t.col(13).set_int(row, end.conversations.all().len() as i64);
        t.col(14).set_int(row, findings as i64);
        t.col(15).set_str(row, end.profile);
        t.col(16).set_str(row, env!("CARGO_PKG_VERSION"));
        t.col(17).set_str(row, &self.summary.json().to_string());
    }

    fn done(&self) -> bool {
        self.error.is_some()
    }
}
