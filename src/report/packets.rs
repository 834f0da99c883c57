//! `packets`: one line per datagram, like tshark's packet list, ending with the IDs of its
//! findings (the session's too); `-V` adds the decoded tree, `-x` a hex dump. Findings that belong
//! to no datagram follow the list (in place with `-V`). On a terminal, lines are cut or wrapped to
//! its width; on a pipe they are whole, so that `grep` finds every violation ID.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::fields::TreeFields;
use super::filter::Filter;
use super::render;
use super::time::{self, write_rfc3339, TimeFormat};
use crate::datagram::Dialect;
use crate::finding::{Detail, Finding};
use crate::message::{Facts, Open, Value, Visitor};
use crate::pipeline::{RenderAhead, RunEnd, Sink};
use crate::proto::schema::{Field, Group};
use crate::proto::Direction;
use crate::session::event::{DatagramEvent, Decoded, EntityEvent, LooseFinding, ReassembledEvent};
use crate::session::Conversations;

/// The tree visitor, switched off when only the list is wanted.
pub struct MaybeTree {
    on: bool,
    tree: TreeFields,
}

/// Off, it sees nothing of a message: the workers walk the messages for the ordered stage. On,
/// the tree is made in order, in the ordered stage.
impl RenderAhead for MaybeTree {
    type Rendered = ();
    fn unseen(&self) -> bool {
        !self.on
    }
}

impl Visitor for MaybeTree {
    fn wants(&self, _: &'static Field) -> bool {
        self.on
    }
    fn field(&mut self, field: &'static Field, at: usize, len: usize, value: Value<'_>) {
        if self.on {
            self.tree.field(field, at, len, value);
        }
    }
    fn open(&mut self, group: &'static Group, how: Open, at: usize) {
        if self.on {
            self.tree.open(group, how, at);
        }
    }
    fn close(&mut self, how: Open) {
        if self.on {
            self.tree.close(how);
        }
    }
    fn undecoded(&mut self, at: usize, bytes: &[u8]) {
        if self.on {
            self.tree.undecoded(at, bytes);
        }
    }
}

/// What `packets` prints.
#[derive(Clone, Copy, Debug, Default)]
pub struct PacketsOptions {
    pub verbose: bool,
    pub hex: bool,
    /// The terminal's width, which lines are cut and wrapped to; `None` (a pipe): whole lines.
    pub width: Option<usize>,
    /// How each line's time is written (`-t`).
    pub time: TimeFormat,
    /// Colour each line with findings by its most severe one (`--color`).
    pub color: bool,
}

/// Writes the packet list. A write error (a closed pipe) stops the output quietly.
pub struct Packets<W: Write> {
    out: W,
    options: PacketsOptions,
    fields: MaybeTree,
    filter: Filter,
    line: String,
    first_ts: Option<i64>,
    /// The times of the previous datagram read and of the previous shown (`-t d`, `-t dd`).
    previous: Option<i64>,
    previous_shown: Option<i64>,
    /// The decimals of the times: the capture's resolution, as tshark writes it.
    decimals: u32,
    local: time::Local,
    /// Whether the last datagram was shown (its reassembled snapshot is shown with it).
    shown: bool,
    /// The last datagram's frame and how many of its session findings are still to come as
    /// loose findings: its line named them already.
    raised: (u64, usize),
    /// The lines of findings that belong to no datagram, written after the list (at most
    /// [`MAX_DEFERRED`] of them; `deferred_more` counts the others).
    deferred: String,
    deferred_lines: usize,
    deferred_more: u64,
    pub error: Option<io::Error>,
    /// A filter that asked for what the capture does not have, known at the end.
    pub unmatched: Option<String>,
}

impl<W: Write> Packets<W> {
    pub fn new(out: W, options: PacketsOptions, filter: Filter) -> Self {
        Packets {
            out,
            options,
            fields: MaybeTree {
                on: options.verbose,
                tree: TreeFields::default(),
            },
            filter,
            line: String::with_capacity(1024),
            first_ts: None,
            previous: None,
            previous_shown: None,
            decimals: time::decimals(false),
            local: time::Local::default(),
            shown: false,
            raised: (0, 0),
            deferred: String::new(),
            deferred_lines: 0,
            deferred_more: 0,
            error: None,
            unmatched: None,
        }
    }

    /// The writer, for a caller that takes each datagram's line as it is written (the HTML
    /// report keeps a bounded number per time bucket).
    pub fn output(&mut self) -> &mut W {
        &mut self.out
    }

    /// The writer, after the run.
    pub fn into_output(self) -> W {
        self.out
    }

    /// The findings that belong to no datagram, after the list: those kept, then how many more.
    fn write_deferred(&mut self) {
        if self.deferred_more > 0 {
            let _ = writeln!(
                self.deferred,
                "… and {} more findings that belong to no datagram (rtype-inspect check lists them)",
                self.deferred_more
            );
        }
        let deferred = std::mem::take(&mut self.deferred);
        write_unless_failed(&mut self.out, &mut self.error, deferred.as_bytes());
    }

    fn emit(&mut self) {
        write_unless_failed(&mut self.out, &mut self.error, self.line.as_bytes());
    }
}

/// The lines of findings that belong to no datagram that the list keeps for its end; the others
/// are counted, `check` listing them all.
const MAX_DEFERRED: usize = 10_000;

/// Writes a report's text (a list's line, the packet list's or `-T fields`', a part of an
/// `export` record), unless an earlier write failed: the first error is kept, and stops the run
/// ([`Sink::done`]).
pub(super) fn write_unless_failed(
    out: &mut impl Write,
    error: &mut Option<io::Error>,
    bytes: &[u8],
) {
    if error.is_none() {
        if let Err(e) = out.write_all(bytes) {
            *error = Some(e);
        }
    }
}

/// The end of a list's run: the output flushed (its error kept after any earlier one), and the
/// conversations the filter asked for that the capture does not have.
pub(super) fn end_list(
    out: &mut impl Write,
    error: &mut Option<io::Error>,
    filter: &Filter,
    end: &RunEnd<'_>,
) -> Option<String> {
    if let Err(e) = out.flush() {
        error.get_or_insert(e);
    }
    filter.missing_conversation(end.conversations.all().len())
}

/// The key fields of a message, for the one-line list.
fn key_fields(line: &mut String, e: &DatagramEvent<'_>) {
    let f: &Facts = &e.facts;
    // Inlined, so that each key is copied as the constant it is.
    #[inline(always)]
    fn number(line: &mut String, key: &str, n: Option<u64>) {
        if let Some(n) = n {
            line.push_str(key);
            render::push_u64(line, n);
        }
    }
    number(line, " seq=", e.sequence.map(u64::from));
    number(line, " tick=", e.tick.map(u64::from));
    if let (Some(i), Some(n)) = (f.chunk_index, f.total_chunks) {
        line.push_str(" chunk=");
        render::push_u64(line, u64::from(i) + 1);
        line.push('/');
        render::push_u64(line, n.into());
    }
    number(line, " entities=", f.entity_count.map(u64::from));
    number(line, " time=", f.client_time.map(u64::from));
    if let Some(t) = f.event_type {
        let name =
            render::enum_name(crate::proto::rtype::EVENT_TYPES, t.into()).unwrap_or("unknown");
        line.push_str(" event=");
        line.push_str(name);
    }
    if let Some((entity, component)) = f.component {
        number(line, " entity=", Some(entity.into()));
        number(line, " component=", Some(component.into()));
        if let Some(name) = render::enum_name(crate::proto::rt::COMPONENT_TYPES, component.into()) {
            line.push('(');
            line.push_str(name);
            line.push(')');
        }
    }
    number(line, " player=", f.player_id.map(u64::from));
    if let (Some(s), Some(t)) = (f.ack_sequence, f.ack_msg_type) {
        let _ = write!(line, " ack={s}/0x{t:02X}");
    }
    if let Some(r) = f.reason {
        let name =
            render::enum_name(crate::proto::rtype::REASON_CODES, r.into()).unwrap_or("unknown");
        line.push_str(" reason=");
        line.push_str(name);
    }
}

/// The entity a spawn or a destruction names (the first, and how many others), with its type and
/// the type's name: its LevelInit sprite (rtype), or the document's name for it (rt).
fn entity_fields(line: &mut String, e: &DatagramEvent<'_>, sprites: &super::fields::Sprites) {
    let Some(first) = e.entities.first() else {
        return;
    };
    if first.event == EntityEvent::Update {
        return;
    }
    line.push_str(" entity=");
    render::push_u64(line, first.id.into());
    if let Some(t) = first.type_id {
        line.push_str(" type=");
        render::push_u64(line, t.into());
        let named = match e.dialect {
            Dialect::Rt => render::enum_name(crate::proto::rt::ENTITY_TYPES, t.into()),
            _ => sprites.name(t.into()),
        };
        if let Some(name) = named {
            line.push('(');
            push_printable(line, name);
            line.push(')');
        }
    }
    if e.entities.len() > 1 {
        line.push_str(" +");
        render::push_u64(line, (e.entities.len() - 1) as u64);
    }
}

/// Appends text from the capture with its spaces and control characters as `.`: one word, that
/// cannot break the line.
fn push_printable(line: &mut String, text: &str) {
    line.extend(text.chars().map(|c| {
        if c.is_whitespace() || c.is_control() {
            '.'
        } else {
            c
        }
    }));
}

/// Appends a datagram's findings (its session's too) in brackets, a run of findings that read the
/// same as one with its count (`session.entity-unknown×100`): a snapshot can break a rule once
/// per entity, and the line must still fit.
fn push_findings(line: &mut String, e: &DatagramEvent<'_>) {
    let session = e.session.iter().map(|l| &l.finding);
    let mut findings = e.findings.iter().chain(session).peekable();
    let mut first = true;
    while let Some(f) = findings.next() {
        line.push_str(if first { " [" } else { " " });
        first = false;
        push_finding(line, f);
        let mut same = 1;
        while findings.next_if(|g| reads_as(g, f)).is_some() {
            same += 1;
        }
        if same > 1 {
            line.push('×');
            render::push_u64(line, same);
        }
    }
    if !first {
        line.push(']');
    }
}

/// Whether two findings read the same in a packet line ([`push_finding`]).
fn reads_as(a: &Finding, b: &Finding) -> bool {
    let field = |f: &Finding| match f.detail {
        Detail::Field(field) => Some(field),
        _ => None,
    };
    a.rule == b.rule && field(a) == field(b)
}

/// Appends a finding's ID, with the field it names when it names one.
fn push_finding(line: &mut String, f: &Finding) {
    line.push_str(f.rule.id());
    if let Detail::Field(field) = f.detail {
        line.push('(');
        push_printable(line, field);
        line.push(')');
    }
}

/// Colours `line`, already fitted to the terminal, by the most severe of its datagram's findings,
/// as tshark's colouring rules colour a row: red for an error, yellow a warning, blue info.
fn paint(line: &mut String, e: &DatagramEvent<'_>) {
    let session = e.session.iter().map(|l| &l.finding);
    let Some(worst) = e
        .findings
        .iter()
        .chain(session)
        .map(|f| f.rule.severity())
        .max()
    else {
        return;
    };
    let code = match worst {
        crate::proto::Severity::Error => "\x1b[31m",
        crate::proto::Severity::Warning => "\x1b[33m",
        crate::proto::Severity::Info => "\x1b[34m",
    };
    line.insert_str(0, code);
    line.push_str("\x1b[0m");
}

/// Appends `n` right-aligned in `width` columns, as `{n:>width$}` does.
fn push_right(line: &mut String, n: u64, width: usize) {
    render::push_spaces(line, width.saturating_sub(render::decimal_len(n)));
    render::push_u64(line, n);
}

/// Appends ASCII `text` left-aligned in `width` columns, as `{text:<width$}` does.
fn push_left(line: &mut String, text: &str, width: usize) {
    line.push_str(text);
    render::push_spaces(line, width.saturating_sub(text.len()));
}

/// Cuts `line` (one line, no newline) to `width` characters, marking the cut; leaves it whole
/// when there is no width (a pipe).
fn fit(line: &mut String, width: Option<usize>) {
    let Some(width) = width else {
        return;
    };
    if let Some((i, _)) = line.char_indices().nth(width) {
        line.truncate(i);
        line.pop();
        line.push('…');
    }
}

fn findings_block(line: &mut String, findings: &[Finding], indent: &str, width: Option<usize>) {
    for f in findings {
        let info = f.rule.info();
        let _ = writeln!(
            line,
            "{indent}{} {} @{} ({})",
            info.severity.name(),
            info.id,
            f.at,
            info.section
        );
        let detail = render::detail(f);
        let text = if detail.is_empty() {
            info.summary.to_string()
        } else {
            format!("{}: {detail}", info.summary)
        };
        wrap(
            line,
            &text,
            &format!("{indent}  "),
            width.unwrap_or(usize::MAX),
        );
    }
}

/// Appends `text` as lines of at most `width` characters, each starting with `indent`.
fn wrap(out: &mut String, text: &str, indent: &str, width: usize) {
    let mut column = 0;
    for word in text.split(' ') {
        let len = word.chars().count();
        if column > 0 && column + 1 + len > width {
            out.push('\n');
            column = 0;
        }
        if column == 0 {
            out.push_str(indent);
            column = indent.chars().count();
        } else {
            out.push(' ');
            column += 1;
        }
        out.push_str(word);
        column += len;
    }
    out.push('\n');
}

/// A classic hex dump: offset, 16 bytes, ASCII.
pub fn hex_dump(out: &mut String, bytes: &[u8], indent: &str) {
    for (row, chunk) in bytes.chunks(16).enumerate() {
        let _ = write!(out, "{indent}{:04x}  ", row * 16);
        for i in 0..16 {
            match chunk.get(i) {
                Some(b) => {
                    let _ = write!(out, "{b:02x} ");
                }
                None => out.push_str("   "),
            }
            if i == 7 {
                out.push(' ');
            }
        }
        out.push(' ');
        out.extend(chunk.iter().map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '.'
            }
        }));
        out.push('\n');
    }
}

impl<W: Write> Sink for Packets<W> {
    type Fields = MaybeTree;

    fn fields(&mut self) -> &mut MaybeTree {
        &mut self.fields
    }

    fn start(&mut self, info: &crate::capture::CaptureInfo) {
        self.decimals = time::decimals(info.nanosecond);
    }

    fn begin(&mut self, conversations: &Conversations, conversation: u32) {
        if self.options.verbose {
            self.fields.tree.clear();
        }
        // Copied only when they change: the list names the entity types spawned.
        self.fields
            .tree
            .sprites
            .refresh(conversations, conversation);
    }

    fn skipped(&mut self, e: &DatagramEvent<'_>) {
        self.raised = (e.frame, 0);
        self.first_ts.get_or_insert(e.ts_nanos);
        self.previous = Some(e.ts_nanos);
    }

    fn datagram(&mut self, e: &DatagramEvent<'_>) {
        let rel = e
            .ts_nanos
            .saturating_sub(*self.first_ts.get_or_insert(e.ts_nanos)) as f64
            / 1e9;
        let previous = self.previous.replace(e.ts_nanos);
        self.raised = (e.frame, e.session.len());
        self.shown = self.error.is_none() && self.filter.matches(e, rel);
        if !self.shown {
            return;
        }
        let previous_shown = self.previous_shown.replace(e.ts_nanos);
        let line = &mut self.line;
        line.clear();
        let dir = e.direction.map_or("?→?", Direction::arrow);
        push_right(line, e.frame, 7);
        line.push(' ');
        let since = |t: Option<i64>| e.ts_nanos.saturating_sub(t.unwrap_or(e.ts_nanos));
        let (decimals, width) = (self.decimals, time::seconds_width(self.decimals));
        match self.options.time {
            TimeFormat::Relative => {
                time::write_seconds(line, since(self.first_ts), decimals, width);
            }
            TimeFormat::Delta => time::write_seconds(line, since(previous), decimals, width),
            TimeFormat::DeltaDisplayed => {
                time::write_seconds(line, since(previous_shown), decimals, width);
            }
            TimeFormat::Epoch => time::write_seconds(line, e.ts_nanos, decimals, 0),
            TimeFormat::Absolute | TimeFormat::AbsoluteDate => self.local.push(
                line,
                e.ts_nanos,
                self.options.time == TimeFormat::AbsoluteDate,
                decimals,
            ),
        }
        line.push_str(" #");
        push_left(line, itoa::Buffer::new().format(e.conversation), 3);
        line.push(' ');
        line.push_str(dir);
        line.push(' ');
        push_left(line, e.dialect.name(), 5);
        push_right(line, e.bytes.len() as u64, 6);
        line.push(' ');
        line.push_str(e.name);
        key_fields(line, e);
        if let Some(Decoded::Described { index, decoded }) = e.decoded {
            if let Some(l) = crate::describe::loaded::all().get(usize::from(index)) {
                crate::describe::view::info(&l.described, decoded, line);
            }
        }
        entity_fields(line, e, &self.fields.tree.sprites);
        push_findings(line, e);
        fit(line, self.options.width);
        if self.options.color {
            paint(line, e);
        }
        line.push('\n');
        if self.options.verbose {
            let _ = write!(line, "  Frame {}: {} bytes at ", e.frame, e.bytes.len());
            write_rfc3339(line, e.ts_nanos);
            let _ = writeln!(line, ", {} → {}", e.src, e.dst);
            let _ = write!(line, "  {} {}", e.dialect.name(), e.name);
            if let Some(code) = e.code {
                let _ = write!(line, " (0x{code:02X})");
            }
            if let Some(Decoded::Rtype(d)) = e.decoded {
                let crc = if d.crc_ok() {
                    "ok".to_string()
                } else {
                    format!("BAD, computed 0x{:08X}", d.crc_computed)
                };
                let _ = write!(
                    line,
                    ", {}-byte header, CRC 0x{:08X} {crc}",
                    d.header.layout().len(),
                    d.crc_stored
                );
                if d.header.compressed() {
                    let _ = write!(
                        line,
                        ", LZ4 {} → {} bytes",
                        d.wire_payload.len(),
                        e.payload.map_or(0, <[u8]>::len)
                    );
                }
            }
            if let Some(Decoded::Rt(d)) = e.decoded {
                let little = d.header.endian() == crate::proto::schema::Endian::Little;
                line.push_str(if little {
                    ", little-endian"
                } else {
                    ", big-endian"
                });
            }
            line.push('\n');
            line.push_str(&self.fields.tree.out);
            if let Some(Decoded::Described { index, decoded }) = e.decoded {
                if let Some(l) = crate::describe::loaded::all().get(usize::from(index)) {
                    crate::describe::view::tree(&l.described, decoded, "  ", line);
                }
            }
            // rtnp messages are JSON, shown whole rather than field by field.
            if let Some(Decoded::Rtnp {
                framing,
                text,
                json,
            }) = e.decoded
            {
                let _ = writeln!(line, "  Message ({})", framing.name());
                let shown = json.and_then(|j| serde_json::to_string_pretty(j).ok());
                for l in shown.as_deref().or(text).unwrap_or("(not UTF-8)").lines() {
                    let _ = writeln!(line, "    {l}");
                }
            }
            if !(e.findings.is_empty() && e.session.is_empty()) {
                line.push_str("  Violations\n");
                findings_block(line, e.findings, "    ", self.options.width);
                for l in e.session {
                    let one = std::slice::from_ref(&l.finding);
                    findings_block(line, one, "    ", self.options.width);
                }
            }
        }
        if self.options.hex {
            hex_dump(line, e.bytes, "  ");
            if let (Some(p), Some(Decoded::Rtype(d))) = (e.payload, e.decoded) {
                if d.header.compressed() {
                    line.push_str("  Decompressed payload\n");
                    hex_dump(line, p, "  ");
                }
            }
        }
        self.emit();
    }

    fn reassembled(&mut self, e: &ReassembledEvent<'_>) {
        if !self.shown || !self.options.verbose {
            return;
        }
        self.line.clear();
        let _ = writeln!(
            self.line,
            "  Reassembled snapshot: tick {}, {} chunks from frame {} to {}",
            e.tick, e.chunks, e.first_frame, e.frame
        );
        for l in self.fields.tree.out.lines() {
            let _ = writeln!(self.line, "  {l}");
        }
        self.emit();
    }

    fn loose(&mut self, f: &LooseFinding) {
        self.loose_line(f, None);
    }

    fn cut(&mut self, f: &LooseFinding, reason: &str) {
        self.loose_line(f, Some(reason));
    }

    fn end(&mut self, end: &RunEnd<'_>) {
        self.write_deferred();
        self.unmatched = end_list(&mut self.out, &mut self.error, &self.filter, end);
    }

    fn done(&self) -> bool {
        self.error.is_some()
    }
}

impl<W: Write> Packets<W> {
    /// The line of a finding that belongs to no datagram; `reason`, why reading stopped.
    fn loose_line(&mut self, f: &LooseFinding, reason: Option<&str>) {
        // A session finding of the datagram just handled: on its line (or hidden with it).
        if self.raised.1 > 0 && self.raised.0 == f.frame {
            self.raised.1 -= 1;
            return;
        }
        if self.error.is_some()
            || !self
                .filter
                .matches_finding(f.frame, f.conversation, f.finding.rule)
        {
            return;
        }
        self.line.clear();
        let _ = write!(
            self.line,
            "{:>7} {:>width$} #{:<3} finding",
            f.frame,
            "",
            f.conversation,
            width = time::seconds_width(self.decimals)
        );
        let info = f.finding.rule.info();
        let detail = render::loose_detail(&f.finding, reason);
        let _ = write!(self.line, " [{}] {detail}", info.id);
        fit(&mut self.line, self.options.width);
        self.line.push('\n');
        if self.options.verbose {
            self.emit();
        } else if self.deferred_lines < MAX_DEFERRED {
            self.deferred.push_str(&self.line);
            self.deferred_lines += 1;
        } else {
            self.deferred_more += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Rule;

    #[test]
    fn findings_of_no_datagram_are_kept_up_to_the_limit() {
        let options = PacketsOptions::default();
        let every = super::super::filter::FilterOptions::default()
            .build()
            .unwrap();
        let mut packets = Packets::new(Vec::new(), options, every);
        for frame in 0..MAX_DEFERRED as u64 + 5 {
            packets.loose(&LooseFinding {
                frame,
                conversation: 1,
                finding: Finding::new(Rule::SessionEntityNeverDestroyed, 0, Detail::Value(2)),
            });
        }
        assert!(packets.output().is_empty(), "nothing before the end");
        assert!(
            packets.deferred.len() < 1 << 20,
            "{}",
            packets.deferred.len()
        );
        packets.write_deferred();
        let text = String::from_utf8(packets.into_output()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), MAX_DEFERRED + 1);
        assert!(
            lines[0]
                .starts_with("      0            #1   finding [session.entity-never-destroyed]"),
            "{}",
            lines[0]
        );
        assert_eq!(
            lines[MAX_DEFERRED],
            "… and 5 more findings that belong to no datagram (rtype-inspect check lists them)"
        );
    }
}
