//! `export`: the JSON timeline. One record per line (NDJSON, streamable) or one JSON array:
//! the capture, every datagram with its decoded fields and violations, every reassembled
//! snapshot, findings that belong to no single datagram, each conversation, and a summary.
//! The record shapes are described by `docs/timeline.schema.json`.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::net::SocketAddr;

use super::fields::{JsonFields, Omitted, RenderedJson, MAX_FIELDS_JSON};
use super::filter::Filter;
use super::packets::write_unless_failed;
use super::render::{self, json_str};
use super::time::Rfc3339;
use crate::capture::CaptureInfo;
use crate::datagram::Dialect;
use crate::display_filter::Context;
use crate::finding::Finding;
use crate::pipeline::{Rendering, RunEnd, Sink};
use crate::proto::Direction;
use crate::session::event::{DatagramEvent, Decoded, LooseFinding, ReassembledEvent};
use crate::session::Conversations;
use crate::tally::summary::Summary;

/// Writes timeline records to `out`. A write error (a closed pipe) stops the output quietly and
/// is kept for the caller.
pub struct Export<W: Write> {
    output: Output<W>,
    fields: JsonFields,
    line: String,
    /// A datagram record's end, after its fields.
    tail: String,
    filter: Filter,
    first_ts: Option<i64>,
    time: Rfc3339,
    /// The address members (`,"src_ip":…`) of the last pairs of addresses seen.
    addresses: AddressMembers,
    summary: Summary,
    /// Whether the last datagram passed the filter (its reassembled snapshot follows it).
    shown: bool,
    /// A filter that asked for what the capture does not have, known at the end.
    pub unmatched: Option<String>,
}

/// Where records go: NDJSON lines, or the members of one array.
struct Output<W: Write> {
    out: W,
    array: bool,
    records: u64,
    error: Option<io::Error>,
    /// `{"file":"NAME",`, that starts every record when several captures share the stream.
    capture: Option<String>,
}

impl<W: Write> Output<W> {
    /// Writes one record made of `parts` (a datagram's fields are written from where they were
    /// rendered, not copied into its line first).
    fn record(&mut self, parts: &[&[u8]]) {
        let [first, rest @ ..] = parts else {
            return;
        };
        self.start(first);
        for part in rest {
            self.part(part);
        }
        self.end();
    }

    /// Starts a record with its first part, which opens its object.
    fn start(&mut self, first: &[u8]) {
        let separator: &[u8] = match (self.array, self.records) {
            (true, 0) => b"[\n",
            (true, _) => b",\n",
            (false, _) => b"",
        };
        self.part(separator);
        // Every record is an object: the capture's name goes after its opening brace.
        match (&self.capture, first.split_first()) {
            (Some(capture), Some((b'{', members))) => {
                write_unless_failed(&mut self.out, &mut self.error, capture.as_bytes());
                self.part(members);
            }
            _ => self.part(first),
        }
    }

    /// The next part of the record started.
    fn part(&mut self, part: &[u8]) {
        write_unless_failed(&mut self.out, &mut self.error, part);
    }

    /// Ends the record started.
    fn end(&mut self) {
        if !self.array {
            self.part(b"\n");
        }
        self.records += 1;
    }
}

/// The address members of a record (`,"src_ip":…,"dst_port":…`) for the last pairs of addresses
/// seen: a session's few pairs (a client and the server, each way) come back record after
/// record, interleaved, so their text is written once per pair rather than once per record.
#[derive(Default)]
struct AddressMembers {
    pairs: Vec<((SocketAddr, SocketAddr), String)>,
    /// The pair replaced next once all are taken.
    next: usize,
}

impl AddressMembers {
    /// Pairs remembered: a few players' conversations, each way.
    const PAIRS: usize = 16;

    fn members(&mut self, src: SocketAddr, dst: SocketAddr) -> &str {
        let key = (src, dst);
        let index = match self.pairs.iter().position(|(pair, _)| *pair == key) {
            Some(index) => index,
            None => {
                let index = if self.pairs.len() < Self::PAIRS {
                    self.pairs.push((key, String::new()));
                    self.pairs.len() - 1
                } else {
                    self.next = (self.next + 1) % Self::PAIRS;
                    self.next
                };
                let (pair, members) = &mut self.pairs[index];
                *pair = key;
                members.clear();
                members.push_str(",\"src_ip\":\"");
                render::push_ip(members, src.ip());
                members.push_str("\",\"src_port\":");
                render::push_u64(members, src.port().into());
                members.push_str(",\"dst_ip\":\"");
                render::push_ip(members, dst.ip());
                members.push_str("\",\"dst_port\":");
                render::push_u64(members, dst.port().into());
                index
            }
        };
        &self.pairs[index].1
    }
}

impl<W: Write> Export<W> {
    pub fn new(out: W, array: bool, filter: Filter) -> Self {
        Export {
            output: Output {
                out,
                array,
                records: 0,
                error: None,
                capture: None,
            },
            fields: JsonFields::default(),
            line: String::with_capacity(4096),
            tail: String::new(),
            filter,
            first_ts: None,
            time: Rfc3339::default(),
            addresses: AddressMembers::default(),
            summary: Summary::default(),
            shown: false,
            unmatched: None,
        }
    }

    /// Names the capture in a `file` field on every record, as the JSON reports name theirs:
    /// several captures' timelines in one stream. (Not `capture`: the summary record has one.)
    pub fn with_file(mut self, name: &str) -> Self {
        let mut field = String::from("{\"file\":");
        json_str(&mut field, name);
        field.push(',');
        self.output.capture = Some(field);
        self
    }

    /// The output after the run, or the write error that stopped it (a closed pipe, a full disk).
    pub fn finish(self) -> Result<W, io::Error> {
        match self.output.error {
            Some(e) => Err(e),
            None => Ok(self.output.out),
        }
    }

    /// Writes the record in `self.line`.
    fn emit(&mut self) {
        self.output.record(&[self.line.as_bytes()]);
    }

    fn relative(&mut self, ts: i64) -> f64 {
        ts.saturating_sub(*self.first_ts.get_or_insert(ts)) as f64 / 1e9
    }
}

fn json_bool(b: bool) -> &'static str {
    if b {
        "true"
    } else {
        "false"
    }
}

/// Appends `"violations":[…]` for these findings.
fn violations(line: &mut String, findings: &[Finding]) {
    line.push_str(",\"violations\":[");
    for (i, f) in findings.iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        let info = f.rule.info();
        let _ = write!(
            line,
            "{{\"id\":\"{}\",\"severity\":\"{}\",\"offset\":{},\"detail\":",
            info.id,
            info.severity.name(),
            f.at
        );
        json_str(line, &render::detail(f));
        if f.count > 1 {
            let _ = write!(line, ",\"count\":{}", f.count);
        }
        line.push('}');
    }
    line.push(']');
}

impl<W: Write> Export<W> {
    /// Writes a datagram's record: its fields from the fields visitor, or, rendered ahead, from
    /// their batch.
    fn datagram_record(&mut self, e: &DatagramEvent<'_>, rendered: Option<(&RenderedJson, usize)>) {
        self.summary.datagram(e);
        let rel = self.relative(e.ts_nanos);
        self.shown = self.filter.matches(e, rel);
        if !self.shown {
            return;
        }
        let line = &mut self.line;
        line.clear();
        line.push_str("{\"kind\":\"datagram\",\"frame\":");
        render::push_u64(line, e.frame);
        line.push_str(",\"time\":\"");
        self.time.push(line, e.ts_nanos);
        line.push_str("\",\"time_rel\":");
        render::push_f64(line, rel);
        line.push_str(self.addresses.members(e.src, e.dst));
        line.push_str(",\"conversation\":");
        render::push_u64(line, e.conversation.into());
        line.push_str(",\"dialect\":\"");
        line.push_str(e.dialect.name());
        line.push_str("\",\"direction\":\"");
        line.push_str(e.direction.map_or("unknown", Direction::name));
        line.push_str("\",\"length\":");
        render::push_u64(line, e.bytes.len() as u64);
        if let Some(code) = e.code {
            line.push_str(",\"code\":");
            render::push_u64(line, code.into());
        }
        line.push_str(",\"name\":");
        json_str(line, e.name);
        match e.decoded {
            Some(Decoded::Rtype(d)) => {
                line.push_str(",\"header_len\":");
                render::push_u64(line, d.header.layout().len() as u64);
                line.push_str(",\"compressed\":");
                line.push_str(json_bool(d.header.compressed()));
                line.push_str(",\"crc\":{\"stored\":");
                render::push_u64(line, d.crc_stored.into());
                line.push_str(",\"computed\":");
                render::push_u64(line, d.crc_computed.into());
                line.push_str(",\"ok\":");
                line.push_str(json_bool(d.crc_ok()));
                line.push('}');
            }
            Some(Decoded::Rt(_)) => {}
            // rtnp has no described fields: its header is the framing, its fields the JSON message
            // whole (or its text, when it is not JSON).
            Some(Decoded::Rtnp {
                framing,
                text,
                json,
            }) => {
                let _ = write!(line, ",\"header\":{{\"framing\":\"{}\"}}", framing.name());
                // The JSON whole, or the text as far as the record's limit goes.
                let start = line.len();
                if let Some(json) = json {
                    line.push_str(",\"fields\":");
                    let _ = write!(line, "{json}");
                }
                if json.is_none() || line.len() - start > MAX_FIELDS_JSON {
                    line.truncate(start);
                    if let Some(text) = text {
                        line.push_str(",\"fields\":{\"text\":");
                        let shown = render::json_str_within(line, text, MAX_FIELDS_JSON);
                        line.push('}');
                        let mut omitted = Omitted::default();
                        if shown < text.len() {
                            omitted.add(shown, 0, (text.len() - shown) as u64);
                        }
                        omitted.push_json(line);
                    }
                }
            }
            // A described dialect's header and fields, nested as its types nest.
            Some(Decoded::Described { index, decoded }) => {
                if let Some(l) = crate::describe::loaded::all().get(usize::from(index)) {
                    let (messages, footer) = crate::describe::view::messages(&l.described, decoded);
                    if let Some(first) = messages.first() {
                        let _ = write!(
                            line,
                            ",\"header\":{},\"fields\":{}",
                            first["header"], first["fields"]
                        );
                    }
                    if messages.len() > 1 {
                        let _ =
                            write!(line, ",\"messages\":{}", serde_json::Value::Array(messages));
                    }
                    if !footer.is_empty() {
                        let _ = write!(line, ",\"footer\":{}", serde_json::Value::Object(footer));
                    }
                }
            }
            None => {}
        }
        self.tail.clear();
        match rendered {
            None => {
                let fields = self.fields.finish();
                violations(&mut self.tail, e.findings);
                self.tail.push('}');
                self.output
                    .record(&[line.as_bytes(), fields.as_bytes(), self.tail.as_bytes()]);
            }
            Some((all, index)) => {
                self.output.start(line.as_bytes());
                let output = &mut self.output;
                let omitted = all.pieces(index, &self.fields.sprites, |piece| {
                    output.part(piece.as_bytes())
                });
                omitted.push_json(&mut self.tail);
                violations(&mut self.tail, e.findings);
                self.tail.push('}');
                self.output.part(self.tail.as_bytes());
                self.output.end();
            }
        }
    }
}

impl<W: Write> Export<W> {
    /// The record of a finding that belongs to no datagram; `reason`, why reading stopped.
    fn loose_record(&mut self, f: &LooseFinding, reason: Option<&str>) {
        self.summary.loose(f);
        if !self
            .filter
            .matches_finding(f.frame, f.conversation, f.finding.rule)
        {
            return;
        }
        let info = f.finding.rule.info();
        self.line.clear();
        let _ = write!(
            self.line,
            "{{\"kind\":\"finding\",\"frame\":{},\"conversation\":{},\"id\":\"{}\",\"severity\":\"{}\",\"offset\":{},\"detail\":",
            f.frame,
            f.conversation,
            info.id,
            info.severity.name(),
            f.finding.at
        );
        json_str(&mut self.line, &render::loose_detail(&f.finding, reason));
        self.line.push('}');
        self.emit();
    }
}

impl<W: Write> Sink for Export<W> {
    type Fields = JsonFields;

    fn fields(&mut self) -> &mut JsonFields {
        &mut self.fields
    }

    fn start(&mut self, info: &CaptureInfo) {
        self.line.clear();
        let _ = write!(self.line, "{{\"kind\":\"capture\",\"format\":\"{}\",\"gzip\":{},\"nanosecond\":{},\"link_types\":[", info.format, info.gzip, info.nanosecond);
        for (i, l) in info.link_types.iter().enumerate() {
            let _ = write!(
                self.line,
                "{}\"{}\"",
                if i > 0 { "," } else { "" },
                l.label()
            );
        }
        self.line.push_str("]}");
        self.emit();
    }

    fn begin(&mut self, conversations: &Conversations, conversation: u32) {
        self.fields.clear();
        self.fields.sprites.refresh(conversations, conversation);
    }

    fn skipped(&mut self, e: &DatagramEvent<'_>) {
        self.first_ts.get_or_insert(e.ts_nanos);
    }

    fn datagram(&mut self, e: &DatagramEvent<'_>) {
        self.datagram_record(e, None);
    }

    /// A datagram rendered ahead is written from its batch, uncopied.
    fn datagram_in(
        &mut self,
        e: &DatagramEvent<'_>,
        _context: &Context<'_>,
        rendered: Option<Rendering<'_, Self>>,
    ) {
        self.datagram_record(e, rendered);
    }

    fn reassembled(&mut self, e: &ReassembledEvent<'_>) {
        if !self.shown {
            return;
        }
        self.line.clear();
        let _ = write!(
            self.line,
            "{{\"kind\":\"snapshot\",\"frame\":{},\"conversation\":{},\"tick\":{},\"chunks\":{},\"first_frame\":{}",
            e.frame, e.conversation, e.tick, e.chunks, e.first_frame
        );
        self.line.push_str(self.fields.finish());
        self.line.push('}');
        self.emit();
    }

    fn loose(&mut self, f: &LooseFinding) {
        self.loose_record(f, None);
    }

    fn cut(&mut self, f: &LooseFinding, reason: &str) {
        self.loose_record(f, Some(reason));
    }

    fn end(&mut self, end: &RunEnd<'_>) {
        self.summary.end(end);
        self.unmatched = self
            .filter
            .missing_conversation(end.conversations.all().len());
        for c in end.conversations.all() {
            self.line.clear();
            let _ = write!(
                self.line,
                "{{\"kind\":\"conversation\",\"id\":{},\"dialect\":\"{}\",\"client\":\"{}\",\"server\":\"{}\",\"first_frame\":{}",
                c.id,
                c.dialect.name(),
                c.client,
                c.server,
                c.first_frame
            );
            if c.dialect == Dialect::Rtype {
                let _ = write!(self.line, ",\"layout\":\"{}\"", end.layout(c));
            }
            self.line.push('}');
            self.emit();
        }
        let mut summary = self.summary.json().clone();
        summary["kind"] = "summary".into();
        self.line = summary.to_string();
        self.emit();
        let output = &mut self.output;
        if output.array && output.error.is_none() {
            let closing: &[u8] = if output.records == 0 {
                b"[]\n"
            } else {
                b"\n]\n"
            };
            if let Err(e) = output.out.write_all(closing) {
                output.error = Some(e);
            }
        }
        if let Err(e) = output.out.flush() {
            output.error.get_or_insert(e);
        }
    }

    fn done(&self) -> bool {
        self.output.error.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_members_are_each_pairs_own_however_many_pairs_come_back() {
        let mut members = AddressMembers::default();
        let addr = |i: u16| SocketAddr::from(([10, 0, (i >> 8) as u8, i as u8], 4000 + i));
        // More pairs than are remembered, each way, twice over: every lookup is its pair's text,
        // remembered or written again.
        for _ in 0..2 {
            for i in 0..AddressMembers::PAIRS as u16 + 4 {
                for (src, dst) in [(addr(i), addr(999)), (addr(999), addr(i))] {
                    let expected = format!(
                        ",\"src_ip\":\"{}\",\"src_port\":{},\"dst_ip\":\"{}\",\"dst_port\":{}",
                        src.ip(),
                        src.port(),
                        dst.ip(),
                        dst.port()
                    );
                    assert_eq!(members.members(src, dst), expected);
                }
            }
        }
        assert_eq!(members.pairs.len(), AddressMembers::PAIRS);
    }
}
