//! The `dialect` commands: a team's own description (docs/dialect-format.md) checked against a
//! capture, its datagrams listed, its fields, its Kaitai export and its starting file.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;

use crate::capture::{self, CaptureReader, LinkOutcome};
use crate::describe::decode::{self, Decoded};
use crate::describe::model::{Description, Kind};
use crate::describe::names;
use crate::describe::view::{FieldValues, Message};
use crate::describe::Described;
use crate::proto::Severity;

/// One datagram of the dialect, decoded, as the commands see it.
pub struct Seen<'a> {
    pub frame: u64,
    /// Seconds since the first frame of the capture.
    pub time: f64,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub bytes: &'a [u8],
    pub from_client: Option<bool>,
    pub decoded: &'a Decoded<'a>,
}

/// What reading the capture found besides the dialect's datagrams.
#[derive(Default)]
pub struct Totals {
    pub frames: u64,
    pub udp: u64,
    pub datagrams: u64,
    pub other_udp: u64,
    /// The reason reading stopped early, when it did.
    pub cut: Option<String>,
}

/// Reads `capture` and decodes every datagram `d` claims, in file order. The client is the side
/// that is not on one of the description's ports, else the side that sent first.
pub fn each_datagram(
    d: &Described,
    capture: &Path,
    mut on: impl FnMut(&Seen<'_>),
) -> Result<Totals, String> {
    let mut reader = CaptureReader::open(capture).map_err(|e| e.to_string())?;
    let mut totals = Totals::default();
    let mut decoded = Decoded::default();
    let mut first_ts = None;
    let mut clients: HashMap<(SocketAddr, SocketAddr), SocketAddr> = HashMap::new();
    let desc = &d.description;
    let end = reader.for_each_frame(|frame| {
        totals.frames += 1;
        let first = *first_ts.get_or_insert(frame.ts_nanos);
        let LinkOutcome::Udp(udp) = capture::udp_from_frame(frame.link_type, frame.data) else {
            return;
        };
        totals.udp += 1;
        let key = if udp.src <= udp.dst {
            (udp.src, udp.dst)
        } else {
            (udp.dst, udp.src)
        };
        let known = clients.contains_key(&key);
        if !known && !decode::claims(desc, udp.payload, udp.src.port(), udp.dst.port()) {
            totals.other_udp += 1;
            return;
        }
        if !known && clients.len() < 65_536 {
            let client = if desc.ports.contains(&udp.src.port()) {
                udp.dst
            } else {
                udp.src
            };
            clients.insert(key, client);
        }
        let from_client = clients.get(&key).map(|c| *c == udp.src);
        totals.datagrams += 1;
        decode::decode(desc, &d.names, udp.payload, from_client, &mut decoded);
        on(&Seen {
            frame: frame.number,
            time: (frame.ts_nanos - first) as f64 / 1e9,
            src: udp.src,
            dst: udp.dst,
            bytes: udp.payload,
            from_client,
            decoded: &decoded,
        });
    });
    let end = end.map_err(|e| e.to_string())?;
    if let Some(t) = &end.truncated {
        totals.cut = Some(format!(
            "reading stopped at frame {}: {}",
            totals.frames + 1,
            t.reason
        ));
    }
    Ok(totals)
}

/// The message names of a datagram, `+`-joined when it holds several.
fn message_names(d: &Description, decoded: &Decoded<'_>) -> String {
    let names: Vec<String> = decoded
        .messages
        .iter()
        .map(|m| match (m.message, m.code) {
            (Some(i), _) => d.messages[i].name.clone(),
            (None, Some(c)) => format!("unknown {c:#04x}"),
            (None, None) => "?".into(),
        })
        .collect();
    if names.is_empty() {
        "?".into()
    } else {
        names.join("+")
    }
}

/// `dialect packets`: one line per datagram, `-V` every field, or NDJSON.
pub fn packets(file: &Path, capture: &Path, verbose: bool, json: bool) -> Result<ExitCode, String> {
    let d = Described::open(file)?;
    let desc = &d.description;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut error = None;
    let totals = each_datagram(&d, capture, |seen| {
        if error.is_some() {
            return;
        }
        let text = if json {
            serde_json::to_string(&datagram_json(&d, seen)).unwrap_or_default() + "\n"
        } else {
            datagram_text(&d, seen, verbose)
        };
        if let Err(e) = std::io::Write::write_all(&mut out, text.as_bytes()) {
            error = Some(e);
        }
    })?;
    if error.is_none() {
        if let Err(e) = std::io::Write::flush(&mut out) {
            error = Some(e);
        }
    }
    if let Some(cut) = &totals.cut {
        eprintln!("{}: {cut}", capture.display());
    }
    if totals.datagrams == 0 {
        eprintln!(
            "{}: no datagram of {} in {} frames ({} UDP)",
            capture.display(),
            desc.id,
            totals.frames,
            totals.udp
        );
    }
    crate::app::written(error)
}

fn datagram_text(d: &Described, seen: &Seen<'_>, verbose: bool) -> String {
    let desc = &d.description;
    let decoded = seen.decoded;
    let mut line = format!(
        "{:>6} {:>10.6} {} → {} {:>5} {}",
        seen.frame,
        seen.time,
        seen.src,
        seen.dst,
        seen.bytes.len(),
        message_names(desc, decoded)
    );
    crate::describe::view::info(d, decoded, &mut line);
    for p in &decoded.problems {
        let _ = write!(line, " [{}]", desc.rules[p.rule].id);
    }
    line.push('\n');
    if verbose {
        crate::describe::view::tree(d, decoded, "    ", &mut line);
        for p in &decoded.problems {
            let r = &desc.rules[p.rule];
            let _ = writeln!(line, "    {}", problem_text(r, p));
        }
    }
    line
}

fn problem_text(rule: &crate::describe::model::Rule, p: &decode::Problem<'_>) -> String {
    let field = if p.field.is_empty() {
        String::new()
    } else {
        format!("{}: ", p.field)
    };
    format!(
        "{} {} at byte {}: {field}expected {}, found {}",
        rule.id,
        rule.severity.name(),
        p.offset,
        p.expected,
        p.found
    )
}

/// One line of `dialect packets --format json`: a datagram with the timeline record's keys, one
/// message's code, name, header and fields at the top (several: in `messages`), the footer, the
/// findings. It names no schema or tool, as it never did.
// The fields of each struct are in the order serde_json's sorted maps wrote them before.
#[derive(Serialize, JsonSchema)]
#[schemars(
    title = "rtype-inspect dialect packets (one line)",
    deny_unknown_fields
)]
pub struct DatagramJson<'a> {
    /// The one message's code (null when it has none); absent when the datagram holds several or
    /// no message.
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<Option<i64>>,
    /// The description's id.
    dialect: &'a str,
    /// Null when the client is not known.
    #[schemars(schema_with = "direction_schema")]
    direction: Option<&'static str>,
    dst_ip: String,
    dst_port: u16,
    /// The one message's fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "FieldValues")]
    fields: Option<FieldValues>,
    footer: FieldValues,
    frame: u64,
    /// The one message's header.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "FieldValues")]
    header: Option<FieldValues>,
    #[schemars(extend("const" = "datagram"))]
    kind: &'static str,
    /// The datagram's length in bytes.
    length: usize,
    /// Each message, when the datagram holds several or none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<Message>")]
    messages: Option<Vec<Message>>,
    /// The one message's name (null for a code the description does not name), or the messages'
    /// names joined by `+`.
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<Option<String>>,
    src_ip: String,
    src_port: u16,
    /// Seconds since the first frame of the capture.
    time_rel: f64,
    violations: Vec<Finding<'a>>,
}

fn direction_schema(_: &mut SchemaGenerator) -> Schema {
    schemars::json_schema!({ "enum": ["client_to_server", "server_to_client", null] })
}

fn datagram_json<'a>(d: &'a Described, seen: &Seen<'_>) -> DatagramJson<'a> {
    let desc = &d.description;
    let decoded = seen.decoded;
    let (mut messages, footer) = crate::describe::view::typed_messages(d, decoded);
    let mut record = DatagramJson {
        code: None,
        dialect: &desc.id,
        direction: seen.from_client.map(|c| {
            if c {
                "client_to_server"
            } else {
                "server_to_client"
            }
        }),
        dst_ip: seen.dst.ip().to_string(),
        dst_port: seen.dst.port(),
        fields: None,
        footer,
        frame: seen.frame,
        header: None,
        kind: "datagram",
        length: seen.bytes.len(),
        messages: None,
        name: None,
        src_ip: seen.src.ip().to_string(),
        src_port: seen.src.port(),
        time_rel: seen.time,
        violations: decoded
            .problems
            .iter()
            .map(|p| finding(desc, None, p))
            .collect(),
    };
    if messages.len() == 1 {
        let only = messages.remove(0);
        record.code = only.code;
        record.fields = Some(only.fields);
        record.header = Some(only.header);
        record.name = only.name;
    } else {
        record.name = Some(Some(message_names(desc, decoded)));
        record.messages = Some(messages);
    }
    record
}

/// A finding: `id`, `severity` and `offset` as the bundled dialects' violations have them, and
/// what was expected and found; `frame` when it is listed apart from its datagram.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Finding<'a> {
    expected: String,
    /// The filter name of the field, empty when the finding is about no one field.
    field: String,
    found: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    frame: Option<u64>,
    /// The rule's id.
    id: &'a str,
    /// Offset in the datagram (inside a decompressed body: where the body starts).
    offset: u32,
    /// The section of the description's document the rule comes from.
    section: &'a str,
    #[schemars(schema_with = "super::severity_schema")]
    severity: Severity,
}

fn finding<'a>(desc: &'a Description, frame: Option<u64>, p: &decode::Problem<'_>) -> Finding<'a> {
    let r = &desc.rules[p.rule];
    Finding {
        expected: p.expected.clone(),
        field: p.field.to_string(),
        found: p.found.clone(),
        frame,
        id: &r.id,
        offset: p.offset,
        section: &r.section,
        severity: r.severity,
    }
}

/// The document `dialect check --format json` writes. It names no schema or tool, as it never
/// did.
#[derive(Serialize, JsonSchema)]
#[schemars(title = "rtype-inspect dialect check", deny_unknown_fields)]
pub struct CheckJson<'a> {
    /// The datagrams decoded without a finding.
    clean: u64,
    /// Why reading stopped early, when it did.
    cut: Option<String>,
    /// The datagrams of the dialect.
    datagrams: u64,
    /// The description file.
    description: String,
    dialect: &'a str,
    errors: u64,
    /// The datagrams with findings.
    failed: u64,
    /// The capture.
    file: String,
    /// The findings, the first 100,000.
    findings: Vec<Finding<'a>>,
    frames: u64,
    /// How many times each message of the description was seen, by name.
    messages: BTreeMap<&'a str, u64>,
    warnings: u64,
}
/// `dialect check`: the datagrams the description fails to parse, field by field. Exits 1 when
/// one breaks an error rule, 2 when the capture holds no datagram of the dialect.
pub fn check(file: &Path, capture: &Path, json: bool) -> Result<ExitCode, String> {
    let d = Described::open(file)?;
    let desc = &d.description;
    let mut lines = String::new();
    let mut findings: Vec<Finding<'_>> = Vec::new();
    let (mut failed, mut errors, mut warnings) = (0u64, 0u64, 0u64);
    let mut by_message: Vec<u64> = vec![0; desc.messages.len()];
    let totals = each_datagram(&d, capture, |seen| {
        for m in &seen.decoded.messages {
            if let Some(i) = m.message {
                by_message[i] += 1;
            }
        }
        if seen.decoded.problems.is_empty() {
            return;
        }
        failed += 1;
        for p in &seen.decoded.problems {
            let r = &desc.rules[p.rule];
            match r.severity {
                Severity::Error => errors += 1,
                Severity::Warning => warnings += 1,
                Severity::Info => {}
            }
            if findings.len() < 100_000 {
                findings.push(finding(desc, Some(seen.frame), p));
                let _ = writeln!(lines, "frame {}: {}", seen.frame, problem_text(r, p));
            }
        }
    })?;
    let shown = capture.display();
    let clean = totals.datagrams - failed;
    let summary = format!(
        "{shown}: {} datagrams of {} in {} frames: {clean} decoded cleanly, {failed} with findings ({errors} {}, {warnings} {})",
        totals.datagrams,
        desc.id,
        totals.frames,
        if errors == 1 { "error" } else { "errors" },
        if warnings == 1 { "warning" } else { "warnings" },
    );
    let code = if totals.datagrams == 0 {
        2
    } else if errors > 0 {
        1
    } else {
        0
    };
    let text = if json {
        let messages = desc
            .messages
            .iter()
            .zip(&by_message)
            .map(|(m, n)| (m.name.as_str(), *n))
            .collect();
        serde_json::to_string_pretty(&CheckJson {
            clean,
            cut: totals.cut,
            datagrams: totals.datagrams,
            description: file.display().to_string(),
            dialect: &desc.id,
            errors,
            failed,
            file: capture.display().to_string(),
            findings,
            frames: totals.frames,
            messages,
            warnings,
        })
        .unwrap_or_default()
            + "\n"
    } else {
        let mut text = lines;
        if let Some(cut) = &totals.cut {
            let _ = writeln!(text, "{shown}: {cut}");
        }
        if totals.datagrams == 0 {
            let _ = writeln!(
                text,
                "{shown}: no datagram of {} in {} frames ({} UDP): nothing was judged",
                desc.id, totals.frames, totals.udp
            );
        }
        text + &summary + "\n"
    };
    crate::app::write_stdout(text.as_bytes())?;
    Ok(ExitCode::from(code))
}

/// The document `dialect fields --format json` writes. It names no schema or tool, as it never
/// did.
#[derive(Serialize, JsonSchema)]
#[schemars(title = "rtype-inspect dialect fields", deny_unknown_fields)]
pub struct FieldsJson<'a> {
    dialect: &'a str,
    fields: Vec<DialectField<'a>>,
}

/// One filter field of the description.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct DialectField<'a> {
    /// What a fixed-point field's integer is divided by.
    divisor: Option<f64>,
    /// The id of the enum that names the values.
    #[serde(rename = "enum")]
    enumeration: Option<&'a str>,
    label: &'a str,
    /// The display-filter name.
    name: &'a str,
    /// Wireshark's type, without FT_ (`uint16`, `string`, `protocol`, `none` for a user type).
    #[serde(rename = "type")]
    ty: String,
}

/// `dialect fields`: every filter field of the description, as `fields` lists the bundled ones.
pub fn fields(file: &Path, json: bool) -> Result<ExitCode, String> {
    let d = Described::open(file)?;
    let desc = &d.description;
    let type_name = |k: Kind, i: usize| -> String {
        match (k, i) {
            (_, names::PROTOCOL) => "protocol".into(),
            (Kind::Int { width, signed }, _) => format!(
                "{}{}",
                if signed { "int" } else { "uint" },
                u32::from(width) * 8
            ),
            (Kind::Bits { width }, _) => format!(
                "uint{}",
                if width <= 8 {
                    8
                } else if width <= 16 {
                    16
                } else {
                    32
                }
            ),
            (Kind::Float { width: 4 }, _) => "float".into(),
            (Kind::Float { .. }, _) => "double".into(),
            (Kind::Str | Kind::Strz, _) => "string".into(),
            (Kind::Bytes, _) => "bytes".into(),
            (Kind::User(_), _) => "none".into(),
        }
    };
    let text = if json {
        let fields = d
            .names
            .fields
            .iter()
            .enumerate()
            .map(|(i, f)| DialectField {
                divisor: f.divisor,
                enumeration: f.enumeration.map(|e| desc.enums[e].id.as_str()),
                label: &f.label,
                name: &f.name,
                ty: type_name(f.kind, i),
            })
            .collect();
        serde_json::to_string_pretty(&FieldsJson {
            dialect: &desc.id,
            fields,
        })
        .unwrap_or_default()
            + "\n"
    } else {
        let mut t = String::new();
        for (i, f) in d.names.fields.iter().enumerate() {
            let _ = writeln!(t, "{}\t{}\t{}", f.name, type_name(f.kind, i), f.label);
        }
        t
    };
    crate::app::write_stdout(text.as_bytes())
}

/// Writes `text` to `output` (a temporary file renamed into place), or to standard output.
pub fn write_out(output: Option<&Path>, text: &str) -> Result<ExitCode, String> {
    match output {
        Some(path) if !crate::app::output::is_stdout(path) => {
            crate::app::write_file(path, text.as_bytes())
                .map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(ExitCode::SUCCESS)
        }
        _ => crate::app::write_stdout(text.as_bytes()),
    }
}

/// `dialect ksy`.
pub fn ksy(file: &Path, output: Option<&Path>) -> Result<ExitCode, String> {
    let d = Described::open(file)?;
    write_out(
        output,
        &crate::describe::ksy::export(&d.description, &file.display().to_string()),
    )
}
