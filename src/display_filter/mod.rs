//! Display filters: Wireshark's filter language over the fields of the registry
//! ([`crate::proto::registry`]), the names the generated dissector gives them, so that
//! `rtype-inspect -Y EXPR` and `tshark -Y EXPR` select the same frames.
//!
//! [`DisplayFilter::compile`] parses the expression and turns it, once, into atoms (a field, a
//! test, any or every occurrence) and the trees of the groups those fields sit in. For each
//! datagram, [`DisplayFilter::matches`] gives the atoms the pipeline's facts they read (frame,
//! addresses, conversation, violations, CRC …), walks the header, the message and the
//! reassembled snapshot only when some atom reads a field there — asking the walker for those
//! fields alone — and evaluates the expression; it allocates nothing once warm.

mod compile;
mod eval;
mod syntax;

use std::fmt;
use std::net::IpAddr;

use compile::Atom;
use compile::Compiled;
use eval::{evaluate, Collector, Feed, Shown, States, Transform, Trie, Val};

use crate::datagram::{rt, rtnp, rtype, Dialect};
use crate::finding::Finding;
use crate::message::{decode_message_as, MessageRules};
use crate::proto::profile::Profile;
use crate::proto::registry::{
    same_field, snapshot_message, FieldType, Registry, Runtime, Scope, Source,
};
use crate::proto::rtnp::{PING, PONG};
use crate::proto::schema::Endian;
use crate::proto::schema::{Field, Message, Node};
use crate::proto::{Rule, Severity};
use crate::session::event::{DatagramEvent, Decoded, FrameFields, LooseFinding};

/// A filter that does not compile: what is wrong, and where in the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterError {
    pub text: String,
    pub message: String,
    /// Byte offsets in `text`.
    pub span: std::ops::Range<usize>,
}

impl fmt::Display for FilterError {
    /// The message, then the filter with a caret under the problem, as tshark shows it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let column = self.text[..self.span.start.min(self.text.len())]
            .chars()
            .count();
        let width = self
            .text
            .get(self.span.clone())
            .map_or(1, |s| s.chars().count().max(1));
        writeln!(f, "{}", self.message)?;
        writeln!(f, "    {}", self.text)?;
        write!(
            f,
            "    {}^{}",
            " ".repeat(column),
            "~".repeat(width.saturating_sub(1))
        )
    }
}

impl std::error::Error for FilterError {}

/// What the pipeline knows of a datagram beyond its event.
#[derive(Clone, Copy, Debug)]
pub struct Context<'a> {
    /// The capture's first frame's time (frame.time_relative counts from it).
    pub first_ts: i64,
    pub profile: &'a Profile,
    /// The snapshot this datagram completed, when it was the last of a chunk set.
    pub reassembled: Option<&'a [u8]>,
    /// The datagram's frame, as the capture gives it.
    pub frame: FrameFields<'a>,
}

/// A compiled display filter, with its evaluation state.
#[derive(Clone)]
pub struct DisplayFilter {
    text: String,
    compiled: Compiled,
    plan: Plan,
    states: States,
    stack: Vec<usize>,
    /// Findings of the filter's own walks (the pipeline's walk reports them).
    findings: Vec<Finding>,
    /// Each conversation's protocol, from its first datagram (for findings outside datagrams).
    protocols: Vec<Option<Dialect>>,
}

impl fmt::Debug for DisplayFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DisplayFilter({:?})", self.text)
    }
}

/// A header field some atom reads: headers are fixed layouts of unsigned integers, read in place
/// (the first thing a filter usually asks, so without a walk).
#[derive(Clone)]
struct HeaderField {
    at: usize,
    width: usize,
    feeds: Vec<Feed>,
}

impl HeaderField {
    /// Adds `feed` to the field `decl` of `nodes`, a header.
    fn add(list: &mut Vec<HeaderField>, nodes: &'static [Node], decl: &Field, feed: Feed) {
        let mut at = 0;
        for node in nodes {
            let Node::Field(f) = node else { continue };
            let width = f.width().unwrap_or(0);
            if same_field(f, decl) {
                match list.iter_mut().find(|h| h.at == at) {
                    Some(h) => h.feeds.push(feed),
                    None => list.push(HeaderField {
                        at,
                        width,
                        feeds: vec![feed],
                    }),
                }
                return;
            }
            at += width;
        }
    }

    /// Feeds the atoms the fields `bytes` (a header, perhaps cut short) holds.
    fn read(
        list: &[HeaderField],
        bytes: &[u8],
        endian: Endian,
        atoms: &[Atom],
        states: &mut States,
    ) {
        for h in list {
            let Some(b) = bytes.get(h.at..h.at + h.width) else {
                continue;
            };
            let raw = match endian {
                Endian::Big => b.iter().fold(0i64, |acc, x| acc << 8 | i64::from(*x)),
                Endian::Little => b.iter().rev().fold(0i64, |acc, x| acc << 8 | i64::from(*x)),
            };
            for f in &h.feeds {
                states.feed(atoms, f.atom, f.transform.apply(Val::Int(raw)));
            }
        }
    }
}

/// Where the values of the atoms' fields come from.
#[derive(Clone)]
struct Plan {
    runtime: Vec<(Runtime, usize)>,
    rules: Vec<(Rule, usize)>,
    rtype_header: Vec<HeaderField>,
    rt_header: Vec<HeaderField>,
    messages: Vec<(Dialect, u8, Trie)>,
    reassembled: Option<Trie>,
    rtype_undecoded: Vec<usize>,
    rt_undecoded: Vec<usize>,
    reassembled_undecoded: Vec<usize>,
    /// A walk over no fields, for atoms that read only a scope's undecoded bytes.
    no_fields: Trie,
}

impl Plan {
    fn new(compiled: &Compiled, registry: &Registry) -> Plan {
        let mut plan = Plan {
            runtime: Vec::new(),
            rules: Vec::new(),
            rtype_header: Vec::new(),
            rt_header: Vec::new(),
            messages: Vec::new(),
            reassembled: None,
            rtype_undecoded: Vec::new(),
            rt_undecoded: Vec::new(),
            reassembled_undecoded: Vec::new(),
            no_fields: Trie::default(),
        };
        for (a, atom) in compiled.atoms.iter().enumerate() {
            let field = registry.field(atom.field);
            let (described, transform) = match &field.source {
                Source::Described { .. } => (std::slice::from_ref(&atom.field), Transform::Same),
                Source::Role { of, .. } => (of.as_slice(), Transform::Same),
                Source::Bits { of, mask } => (
                    std::slice::from_ref(of),
                    Transform::Bits {
                        mask: (*mask).into(),
                        shift: mask.trailing_zeros(),
                        flag: field.ty == FieldType::Boolean,
                    },
                ),
                Source::Raw { of } => (std::slice::from_ref(of), Transform::Raw { divisor: 1.0 }),
                Source::Runtime(Runtime::Undecoded(Dialect::Rtype)) => {
                    plan.rtype_undecoded.push(a);
                    continue;
                }
                Source::Runtime(Runtime::Undecoded(_)) => {
                    plan.rt_undecoded.push(a);
                    continue;
                }
                Source::Runtime(Runtime::ReassembledUndecoded) => {
                    plan.reassembled_undecoded.push(a);
                    continue;
                }
                Source::Runtime(r) => {
                    plan.runtime.push((*r, a));
                    continue;
                }
                Source::Rule(rule) => {
                    plan.rules.push((*rule, a));
                    continue;
                }
            };
            for &d in described {
                plan.feed(registry, d, a, transform);
            }
        }
        plan
    }

    /// Feeds atom `a` with described field `described`'s values, through `transform`.
    fn feed(&mut self, registry: &Registry, described: usize, a: usize, transform: Transform) {
        let Source::Described { scope, path, decls } = &registry.field(described).source else {
            unreachable!("bits, raw values and roles are of described fields")
        };
        let with_divisor = |decl: &Field| match transform {
            Transform::Raw { .. } => Transform::Raw {
                divisor: f64::from(decl.divisor),
            },
            t => t,
        };
        if let Scope::Header(p) = *scope {
            let (list, nodes) = match p {
                Dialect::Rtype => (&mut self.rtype_header, crate::proto::rtype::HEADER),
                _ => (&mut self.rt_header, crate::proto::rt::HEADER),
            };
            for decl in decls {
                let transform = with_divisor(decl);
                HeaderField::add(list, nodes, decl, Feed { atom: a, transform });
            }
            return;
        }
        let trie = match *scope {
            Scope::Header(_) => unreachable!("read in place"),
            Scope::Reassembled => self.reassembled.get_or_insert_with(Trie::default),
            Scope::Message(p, code) => {
                match self.messages.iter().position(|m| m.0 == p && m.1 == code) {
                    Some(i) => &mut self.messages[i].2,
                    None => {
                        self.messages.push((p, code, Trie::default()));
                        &mut self.messages.last_mut().expect("just pushed").2
                    }
                }
            }
        };
        for decl in decls {
            let transform = with_divisor(decl);
            trie.entry(path, decl).push(Feed { atom: a, transform });
        }
    }

    fn message(&self, protocol: Dialect, code: u8) -> Option<&Trie> {
        self.messages
            .iter()
            .find(|m| m.0 == protocol && m.1 == code)
            .map(|m| &m.2)
    }
}

/// Wireshark's expert severity value of a catalog severity, as the dissector maps them.
fn expert_severity(s: Severity) -> i64 {
    match s {
        Severity::Error => 0x0080_0000,
        Severity::Warning => 0x0060_0000,
        Severity::Info => 0x0040_0000,
    }
}

impl DisplayFilter {
    /// Compiles `text` against the registry.
    pub fn compile(text: &str, registry: &Registry) -> Result<DisplayFilter, FilterError> {
        let error = |e: syntax::Error| FilterError {
            text: text.to_string(),
            message: e.message,
            span: e.span,
        };
        let expr = syntax::parse(text).map_err(error)?;
        let compiled = compile::compile(&expr, registry).map_err(error)?;
        let plan = Plan::new(&compiled, registry);
        Ok(DisplayFilter {
            text: text.to_string(),
            states: States::new(compiled.atoms.len()),
            compiled,
            plan,
            stack: Vec::new(),
            findings: Vec::new(),
            protocols: Vec::new(),
        })
    }

    /// The fields `names` (display-filter names, `-T fields -e NAME`), whose values
    /// [`DisplayFilter::values`] gives: each name compiles to a presence test, and the filter's
    /// own evaluation reads them.
    pub fn fields(names: &[String], registry: &Registry) -> Result<DisplayFilter, FilterError> {
        let mut expr: Option<syntax::Expr> = None;
        for name in names {
            let error = |message: String, span| FilterError {
                text: name.clone(),
                message,
                span,
            };
            let one = syntax::parse(name).map_err(|e| error(e.message, e.span))?;
            if !matches!(one, syntax::Expr::Exists(_)) {
                return Err(error(format!("{name}: not a field name"), 0..name.len()));
            }
            // Checked alone, so that an unknown name's error points into the name.
            compile::compile(&one, registry).map_err(|e| error(e.message, e.span))?;
            expr = Some(match expr {
                Some(before) => syntax::Expr::Or(Box::new(before), Box::new(one)),
                None => one,
            });
        }
        let Some(expr) = expr else {
            return Err(FilterError {
                text: String::new(),
                message: "no field named (-e FIELD)".into(),
                span: 0..0,
            });
        };
        let compiled = compile::compile(&expr, registry).map_err(|e| FilterError {
            text: names.join(" "),
            message: e.message,
            span: e.span,
        })?;
        let mut states = States::new(compiled.atoms.len());
        states.keep_values(
            compiled
                .atoms
                .iter()
                .map(|a| {
                    let f = registry.field(a.field);
                    match f.ty {
                        FieldType::String => Shown::Text,
                        FieldType::Bytes => Shown::HexBytes,
                        FieldType::Protocol => Shown::Nothing,
                        // Wireshark's own severity field is BASE_NONE: decimal.
                        _ if matches!(f.source, Source::Runtime(Runtime::ExpertSeverity)) => {
                            Shown::Decimal
                        }
                        FieldType::Float => Shown::Float(6),
                        FieldType::Double => Shown::Float(15),
                        FieldType::Unsigned(bits) | FieldType::Signed(bits) if f.hex => {
                            Shown::Hex(usize::from(bits).div_ceil(4))
                        }
                        _ => Shown::Decimal,
                    }
                })
                .collect(),
        );
        let plan = Plan::new(&compiled, registry);
        Ok(DisplayFilter {
            text: names.join(" "),
            states,
            compiled,
            plan,
            stack: Vec::new(),
            findings: Vec::new(),
            protocols: Vec::new(),
        })
    }

    /// The values of the fields of [`DisplayFilter::fields`] in datagram `e`: `give(i, text)`
    /// for each occurrence of the `i`th field, in the order they were met.
    pub fn values(
        &mut self,
        e: &DatagramEvent<'_>,
        ctx: &Context<'_>,
        give: &mut impl FnMut(usize, &str),
    ) {
        self.matches(e, ctx);
        for (atom, text) in &self.states.values {
            give(*atom, &self.states.text[text.clone()]);
        }
    }

    /// The expression as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the datagram passes the filter.
    pub fn matches(&mut self, e: &DatagramEvent<'_>, ctx: &Context<'_>) -> bool {
        let protocol = e.dialect;
        if let Ok(i) = usize::try_from(e.conversation) {
            if i < crate::session::MAX_CONVERSATIONS + 1 {
                if self.protocols.len() <= i {
                    self.protocols.resize(i + 1, None);
                }
                self.protocols[i].get_or_insert(protocol);
            }
        }
        self.states.reset();
        let atoms = &self.compiled.atoms;
        let states = &mut self.states;
        for &(r, a) in &self.plan.runtime {
            runtime_values(r, protocol, e, ctx, &mut |v| states.feed(atoms, a, v));
        }
        if !self.plan.rules.is_empty() {
            let session = e.session.iter().map(|f| &f.finding);
            for finding in e.findings.iter().chain(session) {
                for &(rule, a) in &self.plan.rules {
                    if rule == finding.rule {
                        states.feed(atoms, a, Val::Present);
                    }
                }
            }
        }
        self.walk(e, ctx);
        evaluate(&self.compiled.root, &self.compiled.atoms, &self.states.of)
    }

    /// Whether a finding that belongs to no datagram passes the filter: it is judged as a record
    /// holding only its frame number, its conversation and itself as a violation.
    pub fn matches_loose(&mut self, f: &LooseFinding) -> bool {
        self.states.reset();
        let protocol = self
            .protocols
            .get(f.conversation as usize)
            .copied()
            .flatten();
        let atoms = &self.compiled.atoms;
        let states = &mut self.states;
        let rule = f.finding.rule;
        for &(r, a) in &self.plan.runtime {
            let mut give = |v| states.feed(atoms, a, v);
            match r {
                Runtime::Frame => give(Val::Present),
                Runtime::FrameNumber => give(Val::Int(f.frame as i64)),
                Runtime::Conversation(p) if Some(p) == protocol => {
                    give(Val::Int(f.conversation.into()))
                }
                Runtime::Violation(p) if Some(p) == protocol => {
                    give(Val::Bytes(rule.id().as_bytes()))
                }
                Runtime::ViolationSeverity(p) if Some(p) == protocol => {
                    give(Val::Int(rule.severity() as i64 + 1))
                }
                _ => {}
            }
        }
        for &(r, a) in &self.plan.rules {
            if r == rule {
                states.feed(atoms, a, Val::Present);
            }
        }
        evaluate(&self.compiled.root, &self.compiled.atoms, &self.states.of)
    }

    /// Walks the header, message and reassembled snapshot where atoms read fields.
    fn walk(&mut self, e: &DatagramEvent<'_>, ctx: &Context<'_>) {
        let plan = &self.plan;
        let mut w = Walking {
            atoms: &self.compiled.atoms,
            states: &mut self.states,
            stack: &mut self.stack,
            findings: &mut self.findings,
            profile: ctx.profile,
        };
        match e.dialect {
            Dialect::Rtype => {
                if !plan.rtype_header.is_empty() {
                    let bytes = match e.decoded {
                        Some(Decoded::Rtype(d)) => d.header.bytes(),
                        _ => &e.bytes[..e.bytes.len().min(crate::proto::rtype::HEADER_LEN)],
                    };
                    HeaderField::read(&plan.rtype_header, bytes, rtype::ENDIAN, w.atoms, w.states);
                }
                let rules = &rtype::MESSAGE_RULES;
                if let (Some(m), Some(payload)) = (e.message, e.payload) {
                    let trie = plan.message(Dialect::Rtype, m.code);
                    if trie.is_some() || !plan.rtype_undecoded.is_empty() {
                        let trie = trie.unwrap_or(&plan.no_fields);
                        w.message(
                            m,
                            e.facts.variant,
                            payload,
                            rtype::ENDIAN,
                            rules,
                            trie,
                            &plan.rtype_undecoded,
                        );
                    }
                }
                if let Some(payload) = ctx.reassembled {
                    if plan.reassembled.is_some() || !plan.reassembled_undecoded.is_empty() {
                        let trie = plan.reassembled.as_ref().unwrap_or(&plan.no_fields);
                        let undecoded = &plan.reassembled_undecoded;
                        w.message(
                            snapshot_message(),
                            None,
                            payload,
                            rtype::ENDIAN,
                            rules,
                            trie,
                            undecoded,
                        );
                    }
                }
            }
            Dialect::Rt => {
                let Some(Decoded::Rt(d)) = e.decoded else {
                    return;
                };
                let endian = d.header.endian();
                HeaderField::read(&plan.rt_header, d.header.bytes(), endian, w.atoms, w.states);
                match d.message {
                    Some(m) if d.decodable() => {
                        let trie = plan.message(Dialect::Rt, m.code);
                        if trie.is_some() || !plan.rt_undecoded.is_empty() {
                            let trie = trie.unwrap_or(&plan.no_fields);
                            let rules = &rt::MESSAGE_RULES;
                            let variant = e.facts.variant;
                            let undecoded = &plan.rt_undecoded;
                            w.message(m, variant, d.payload, endian, rules, trie, undecoded);
                        }
                    }
                    // rt's opaque payloads (compressed, encrypted, fragmented) are undecoded whole.
                    _ if !d.payload.is_empty() => {
                        for &a in &plan.rt_undecoded {
                            w.states.feed(w.atoms, a, Val::Bytes(d.payload));
                        }
                    }
                    _ => {}
                }
            }
            Dialect::Rtnp | Dialect::Described(_) => {}
        }
    }
}

/// What a filter's walk needs besides the message: the atoms, their states, reused buffers.
struct Walking<'a> {
    atoms: &'a [Atom],
    states: &'a mut States,
    stack: &'a mut Vec<usize>,
    findings: &'a mut Vec<Finding>,
    profile: &'a Profile,
}

impl Walking<'_> {
    /// Walks `payload` as `message`, feeding the atoms of `trie`'s fields and the `undecoded`
    /// atoms (the pipeline's own walk reports the findings; these are dropped).
    #[allow(clippy::too_many_arguments)]
    fn message(
        &mut self,
        message: &'static Message,
        variant: Option<u8>,
        payload: &[u8],
        endian: Endian,
        rules: &MessageRules,
        trie: &Trie,
        undecoded: &[usize],
    ) {
        self.stack.clear();
        self.findings.clear();
        let mut c = Collector {
            trie,
            stack: self.stack,
            atoms: self.atoms,
            states: self.states,
            undecoded,
        };
        decode_message_as(
            message,
            variant,
            payload,
            0,
            endian,
            self.profile,
            rules,
            &mut c,
            self.findings,
        );
    }
}

/// Gives `give` the values of a pipeline fact of datagram `e`.
/// A described field's value as filters compare it: a fixed-point field scaled, text as bytes.
fn described_value(value: &crate::describe::decode::Value, divisor: Option<f64>) -> Val<'_> {
    use crate::describe::decode::Value;
    match (value, divisor) {
        (Value::Int(i), Some(d)) => Val::Float(*i as f64 / d),
        (Value::Int(i), None) => Val::Int(*i),
        (Value::UInt(u), _) => Val::Int(*u as i64),
        (Value::Float(f), _) => Val::Float(*f),
        (Value::Text(t), _) => Val::Bytes(t.as_bytes()),
        (Value::Bytes(b), _) => Val::Bytes(b),
        (Value::Group, _) => Val::Present,
    }
}

fn runtime_values(
    r: Runtime,
    protocol: Dialect,
    e: &DatagramEvent<'_>,
    ctx: &Context<'_>,
    give: &mut impl FnMut(Val<'_>),
) {
    let v4 = |ip: IpAddr| ip.is_ipv4().then_some(Val::Ip(ip));
    let v6 = |ip: IpAddr| ip.is_ipv6().then_some(Val::Ip(ip));
    let rtype = match e.decoded {
        Some(Decoded::Rtype(d)) => Some(d),
        _ => None,
    };
    let rtnp = match e.decoded {
        Some(Decoded::Rtnp {
            framing,
            text,
            json,
        }) => Some((framing, text, json)),
        _ => None,
    };
    let mut one = |v: Option<Val<'_>>| {
        if let Some(v) = v {
            give(v)
        }
    };
    match r {
        // A dialect's tree item spans the UDP payload, as the dissector adds it.
        Runtime::Protocol(p) => one((p == protocol).then_some(Val::Bytes(e.bytes))),
        Runtime::Frame => one(Some(Val::Bytes(ctx.frame.bytes))),
        Runtime::Udp => one(Some(Val::Present)),
        Runtime::FrameNumber => one(Some(Val::Int(e.frame as i64))),
        Runtime::FrameLen => one(Some(Val::Int(ctx.frame.len.into()))),
        Runtime::FrameCapLen => one(Some(Val::Int(ctx.frame.cap_len.into()))),
        Runtime::TimeRelative => one(Some(Val::Time(e.ts_nanos.saturating_sub(ctx.first_ts)))),
        Runtime::TimeDelta => one(Some(Val::Time(ctx.frame.time_delta))),
        Runtime::TimeEpoch => one(Some(Val::Time(e.ts_nanos))),
        Runtime::Ip => one(e.src.is_ipv4().then_some(Val::Present)),
        Runtime::Ipv6 => one(e.src.is_ipv6().then_some(Val::Present)),
        Runtime::IpSrc => one(v4(e.src.ip())),
        Runtime::IpDst => one(v4(e.dst.ip())),
        Runtime::IpAddr => {
            one(v4(e.src.ip()));
            one(v4(e.dst.ip()));
        }
        Runtime::Ipv6Src => one(v6(e.src.ip())),
        Runtime::Ipv6Dst => one(v6(e.dst.ip())),
        Runtime::Ipv6Addr => {
            one(v6(e.src.ip()));
            one(v6(e.dst.ip()));
        }
        Runtime::UdpSrcPort => one(Some(Val::Int(e.src.port().into()))),
        Runtime::UdpDstPort => one(Some(Val::Int(e.dst.port().into()))),
        Runtime::UdpPort => {
            one(Some(Val::Int(e.src.port().into())));
            one(Some(Val::Int(e.dst.port().into())));
        }
        Runtime::UdpLength => one(Some(Val::Int(ctx.frame.udp_len.into()))),
        Runtime::Expert => {
            for _ in e.findings {
                one(Some(Val::Present));
            }
        }
        Runtime::ExpertSeverity => {
            for f in e.findings {
                one(Some(Val::Int(expert_severity(f.rule.severity()))));
            }
        }
        Runtime::DescribedField(d, f) => {
            if let Some(Decoded::Described { index, decoded }) = e.decoded {
                let divisor = |f: usize| {
                    crate::describe::loaded::all()
                        .get(usize::from(index))
                        .and_then(|l| l.described.names.fields.get(f))
                        .and_then(|f| f.divisor)
                };
                let wanted = usize::from(f);
                if index == d {
                    for item in decoded.items.iter().filter(|i| i.field == wanted) {
                        one(Some(described_value(&item.value, divisor(wanted))));
                    }
                }
            }
        }
        Runtime::DescribedMessage(d) if protocol == Dialect::Described(d) => {
            one(Some(Val::Bytes(e.name.as_bytes())))
        }
        Runtime::DescribedMessage(_) => {}
        Runtime::Conversation(p) if p == protocol => one(Some(Val::Int(e.conversation.into()))),
        Runtime::StreamDelta(p) if p == protocol => one(ctx.frame.stream_delta.map(Val::Time)),
        Runtime::Violation(p) if p == protocol => {
            let session = e.session.iter().map(|f| &f.finding);
            for f in e.findings.iter().chain(session) {
                one(Some(Val::Bytes(f.rule.id().as_bytes())));
            }
        }
        Runtime::ViolationSeverity(p) if p == protocol => {
            let session = e.session.iter().map(|f| &f.finding);
            for f in e.findings.iter().chain(session) {
                one(Some(Val::Int(f.rule.severity() as i64 + 1)));
            }
        }
        Runtime::Conversation(_)
        | Runtime::StreamDelta(_)
        | Runtime::Violation(_)
        | Runtime::ViolationSeverity(_) => {}
        Runtime::RtypeHeaderLen if protocol == Dialect::Rtype => one(Some(Val::Int(
            rtype.map_or(crate::proto::rtype::HEADER_LEN, |d| d.header.layout().len()) as i64,
        ))),
        Runtime::RtypeCrc => one(rtype.map(|d| Val::Int(d.crc_stored.into()))),
        Runtime::RtypeCrcStatus => one(rtype.map(|d| Val::Int(d.crc_ok().into()))),
        Runtime::RtypePayload => one(rtype.and_then(|d| {
            let compressed = d.header.compressed();
            let shown = compressed || (e.message.is_none() && !d.wire_payload.is_empty());
            shown.then_some(Val::Bytes(d.wire_payload))
        })),
        Runtime::RtypeReassembledLength => one(ctx.reassembled.map(|p| Val::Int(p.len() as i64))),
        Runtime::RtnpFraming => one(rtnp.map(|(f, _, _)| Val::Bytes(f.name().as_bytes()))),
        Runtime::RtnpSegments | Runtime::RtnpWords => {
            let at = if r == Runtime::RtnpSegments { 0 } else { 4 };
            let envelope = rtnp.is_some_and(|(f, _, _)| f == rtnp::Framing::Envelope);
            one(e
                .bytes
                .get(at..at + 4)
                .filter(|_| envelope)
                .map(|b| Val::Int(u32::from_le_bytes([b[0], b[1], b[2], b[3]]).into())))
        }
        Runtime::RtnpEnvelopeText => {
            let envelope = rtnp.is_some_and(|(f, _, _)| f == rtnp::Framing::Envelope);
            one(rtnp::read_envelope(e.bytes)
                .ok()
                .filter(|_| envelope)
                .and_then(|text| e.bytes.get(text))
                .map(Val::Bytes))
        }
        Runtime::RtnpKeepalive => one(rtnp
            .and_then(|(_, text, _)| text)
            .filter(|t| *t == PING || *t == PONG)
            .map(|t| Val::Bytes(t.as_bytes()))),
        Runtime::RtnpText => one(rtnp.and_then(|(_, text, json)| match (text, json) {
            (Some(t), None) => Some(Val::Bytes(t.as_bytes())),
            _ => None,
        })),
        Runtime::RtnpType => one(rtnp
            .and_then(|(_, _, json)| json)
            .and_then(|j| j.get(crate::proto::rtnp::TYPE_KEY))
            .and_then(|t| t.as_str())
            .map(|t| Val::Bytes(t.as_bytes()))),
        Runtime::RtypeHeaderLen
        | Runtime::Undecoded(_)
        | Runtime::ReassembledUndecoded
        | Runtime::RtypeReassembledIn
        | Runtime::RtypeChunkFrame => {}
    }
}
