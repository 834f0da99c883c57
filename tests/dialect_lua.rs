//! The Lua dissector `rtype-inspect dialect dissector` writes from a description, run by tshark
//! 4.0 (Lua 5.2), 4.4 and 4.6 (Lua 5.4) over hand-built datagrams: the template's (`dialect
//! new`) value by value and through display filters, and the template's and two descriptions
//! that use the rest of the format (big endian, bit fields both ways, many messages per datagram,
//! LZ4 and zlib bodies, every length cover and checksum algorithm, strz, size-eos, repeat eos,
//! a rule of their own, no magic) compared item by item (name, offset, length, value) with
//! rtype-inspect's interpreter, and their expert infos rule by rule with `dialect check --format
//! json`. A tshark that is missing skips, or fails in CI (tests/support/tshark.rs).

#[path = "support/template.rs"]
mod template;
use template::{entity, mg};
#[path = "support/bin.rs"]
mod bin;
#[path = "support/datagrams.rs"]
mod datagrams;
#[path = "support/skip.rs"]
mod skip;
#[path = "support/tshark.rs"]
mod tshark;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::Command;

use rtype_inspect::describe::decode::{decode, Decoded, Value};
use rtype_inspect::describe::{lua, Described, TEMPLATE};
use serde_json::Value as Json;
use tshark::{command, tsharks, Tshark};

/// A scratch file path unique to this test binary.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dialect_lua");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A datagram: source port, destination port, UDP payload.
type Datagram = (u16, u16, Vec<u8>);

/// A description, its datagrams, and its files written in the scratch directory.
struct Case {
    name: &'static str,
    described: Described,
    description: PathBuf,
    script: PathBuf,
    capture: PathBuf,
    payloads: Vec<Vec<u8>>,
}

impl Case {
    fn new(name: &'static str, yaml: &str, datagrams: Vec<Datagram>) -> Case {
        let described = Described::from_text(name, yaml).unwrap();
        let description = scratch(&format!("{name}.yaml"));
        std::fs::write(&description, yaml).unwrap();
        let script = scratch(&format!("{name}.lua"));
        let (code, _, stderr) = bin::run(&[
            "dialect",
            "dissector",
            description.to_str().unwrap(),
            "-o",
            script.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{stderr}");
        let capture = scratch(&format!("{name}.pcap"));
        datagrams::write_pcap(&capture, &datagrams);
        let payloads = datagrams.into_iter().map(|d| d.2).collect();
        Case {
            name,
            described,
            description,
            script,
            capture,
            payloads,
        }
    }

    fn id(&self) -> &str {
        &self.described.description.id
    }

    /// tshark `ts` over the capture with the dissector, plus `args`: its stdout, after checking
    /// that it ran and raised no Lua error.
    fn tshark(&self, ts: Tshark, args: &[&str]) -> String {
        let out = command(ts, &self.capture, &self.script)
            .args(args)
            .output()
            .expect("tshark runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            out.status.success(),
            "{} on {}: {stderr}",
            ts.name(),
            self.name
        );
        for text in [&stdout, &stderr] {
            assert!(
                !text.contains("Lua Error") && !text.contains("Lua:"),
                "{} on {}: a Lua error:\n{}",
                ts.name(),
                self.name,
                text.lines()
                    .filter(|l| l.contains("Lua"))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
        stdout
    }

    /// The rule IDs `dialect check --format json` reports, by frame, in its order.
    fn check(&self) -> BTreeMap<u64, Vec<String>> {
        let (_, stdout, stderr) = bin::run(&[
            "dialect",
            "check",
            "--format",
            "json",
            self.description.to_str().unwrap(),
            self.capture.to_str().unwrap(),
        ]);
        let report: Json =
            serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
        let mut rules: BTreeMap<u64, Vec<String>> = BTreeMap::new();
        for f in report["findings"].as_array().unwrap() {
            let frame = f["frame"].as_u64().unwrap();
            rules
                .entry(frame)
                .or_default()
                .push(f["id"].as_str().unwrap().to_string());
        }
        rules
    }

    /// The frames `dialect packets` decodes as the dialect's.
    fn claimed(&self) -> Vec<u64> {
        let (code, stdout, stderr) = bin::run(&[
            "dialect",
            "packets",
            "--format",
            "json",
            self.description.to_str().unwrap(),
            self.capture.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{stderr}");
        stdout
            .lines()
            .map(|l| {
                serde_json::from_str::<Json>(l).unwrap()["frame"]
                    .as_u64()
                    .unwrap()
            })
            .collect()
    }
}

/// What tshark shows of one frame: whether the dissector took it, its fields in tree order
/// (`<id>.message`, `<id>.violation` and expert infos left out) and the violations' rule IDs.
#[derive(Debug, Default)]
struct Shown {
    claimed: bool,
    fields: Vec<ShownField>,
    violations: Vec<String>,
}

#[derive(Debug)]
struct ShownField {
    name: String,
    pos: usize,
    size: usize,
    show: String,
    value: String,
}

/// tshark's PDML of the capture, by frame number.
fn pdml(case: &Case, ts: Tshark) -> BTreeMap<u64, Shown> {
    let xml = case.tshark(ts, &["-T", "pdml"]);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let mut frames = BTreeMap::new();
    for (i, packet) in doc
        .root_element()
        .children()
        .filter(|n| n.has_tag_name("packet"))
        .enumerate()
    {
        let mut shown = Shown::default();
        for proto in packet
            .children()
            .filter(|n| n.attribute("name") == Some(case.id()))
        {
            shown.claimed = true;
            collect(case.id(), proto, &mut shown);
        }
        frames.insert(i as u64 + 1, shown);
    }
    frames
}

fn collect(id: &str, node: roxmltree::Node, shown: &mut Shown) {
    for field in node.children().filter(|n| n.has_tag_name("field")) {
        let name = field.attribute("name").unwrap_or("");
        let number = |key: &str| {
            field
                .attribute(key)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        if name == format!("{id}.violation") {
            shown
                .violations
                .push(field.attribute("show").unwrap_or("").to_string());
        } else if name != format!("{id}.message") && name.starts_with(&format!("{id}.")) {
            shown.fields.push(ShownField {
                name: name.to_string(),
                pos: number("pos"),
                size: number("size"),
                show: field.attribute("show").unwrap_or("").to_string(),
                value: field.attribute("value").unwrap_or("").to_string(),
            });
            collect(id, field, shown);
        }
    }
}

/// Bytes before the UDP payload in `write_pcap`'s frames (raw IPv4, then UDP).
const PAYLOAD_AT: usize = 28;

/// Where one item of rtype-inspect's interpreter and tshark's field differ, if they do.
fn differs(
    described: &Described,
    item: &rtype_inspect::describe::decode::Item,
    shown: &ShownField,
) -> Option<String> {
    let name = &described.names.fields[item.field].name;
    // A decompressed body is a data source of its own: PDML gives its items' offsets in it,
    // plus the payload's offset in the frame for those directly under the protocol's item.
    let pos = shown.pos.wrapping_sub(PAYLOAD_AT);
    let at = item.offset as usize;
    let placed = pos == at || (item.decompressed && shown.pos == at);
    if *name != shown.name || !placed || shown.size != item.len as usize {
        return Some(format!(
            "{name} @{}+{}{} against tshark's {} @{pos}+{}",
            item.offset,
            item.len,
            if item.decompressed {
                " (decompressed)"
            } else {
                ""
            },
            shown.name,
            shown.size
        ));
    }
    let same = match &item.value {
        Value::Int(i) => parse_int(&shown.show) == Some(i128::from(*i)),
        Value::UInt(u) => parse_int(&shown.show) == Some(i128::from(*u)),
        Value::Float(f) => shown
            .show
            .parse::<f64>()
            .is_ok_and(|s| (s - f).abs() <= 1e-6 * f.abs().max(1.0)),
        // Text that is not plain is shown with Wireshark's escapes or replacement characters.
        Value::Text(t) if t.chars().all(|c| !c.is_control() && c != '\u{FFFD}') => shown.show == *t,
        Value::Text(_) | Value::Group => true,
        Value::Bytes(b) => shown.value == b.iter().map(|x| format!("{x:02x}")).collect::<String>(),
    };
    (!same).then(|| format!("{name}: {:?} against tshark's {:?}", item.value, shown.show))
}

fn parse_int(text: &str) -> Option<i128> {
    match text.strip_prefix("0x") {
        Some(hex) => i128::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// Runs `case` in every tshark: the same frames are the dialect's as for `dialect packets`, the
/// same items as rtype-inspect's interpreter decodes, and the same rules as `dialect check`.
fn agree(case: &Case, test: &str) {
    let claimed = case.claimed();
    let rules = case.check();
    let mut decoded = Decoded::default();
    for ts in tsharks(test) {
        let frames = pdml(case, ts);
        let mut diffs = Vec::new();
        for (&frame, shown) in &frames {
            let payload = &case.payloads[frame as usize - 1];
            if shown.claimed != claimed.contains(&frame) {
                diffs.push(format!(
                    "frame {frame}: tshark claims it: {}",
                    shown.claimed
                ));
                continue;
            }
            let empty = Vec::new();
            let expected = rules.get(&frame).unwrap_or(&empty);
            if shown.violations != *expected {
                diffs.push(format!(
                    "frame {frame}: rules {:?}, dialect check {expected:?}",
                    shown.violations
                ));
            }
            if !shown.claimed {
                continue;
            }
            let d = &case.described;
            decode(&d.description, &d.names, payload, None, &mut decoded);
            if decoded.items.len() != shown.fields.len() {
                diffs.push(format!(
                    "frame {frame}: {} items, tshark {} fields: {:?}",
                    decoded.items.len(),
                    shown.fields.len(),
                    shown.fields.iter().map(|f| &f.name).collect::<Vec<_>>()
                ));
            }
            for (item, field) in decoded.items.iter().zip(&shown.fields) {
                if let Some(why) = differs(d, item, field) {
                    diffs.push(format!("frame {frame}: {why}"));
                }
            }
        }
        assert_eq!(
            frames.len(),
            case.payloads.len(),
            "{} on {}",
            ts.name(),
            case.name
        );
        assert!(
            diffs.is_empty(),
            "{} on {}:\n{}",
            ts.name(),
            case.name,
            diffs.join("\n")
        );
    }
}

// ------------------------------------------------------------------------------------------------
// The template (`dialect new`)
// ------------------------------------------------------------------------------------------------

const CLIENT: u16 = 40000;
const SERVER: u16 = 4242;

fn template_datagrams() -> Vec<Datagram> {
    let mut snapshot = 1000u32.to_le_bytes().to_vec();
    snapshot.push(2);
    snapshot.extend(entity(7, 1, 15, -20, Some(80)));
    snapshot.extend(entity(8, 2, -5, 300, None));
    let mut bad_crc = mg(0x20, 5, &1u64.to_le_bytes(), None);
    *bad_crc.last_mut().unwrap() ^= 0xFF;
    let mut truncated = mg(0x10, 8, &snapshot, None);
    truncated.truncate(20);
    vec![
        (
            CLIENT,
            SERVER,
            mg(0x01, 1, b"alice\0\0\0\0\0\0\0\0\0\0\0", None),
        ),
        (SERVER, CLIENT, mg(0x02, 2, &[9], None)),
        (SERVER, CLIENT, mg(0x10, 3, &snapshot, None)),
        (
            CLIENT,
            SERVER,
            mg(0x20, 4, &123_456_789u64.to_le_bytes(), None),
        ),
        (CLIENT, SERVER, bad_crc),
        (CLIENT, SERVER, mg(0x20, 6, &1u64.to_le_bytes(), Some(9))),
        (CLIENT, SERVER, mg(0x99, 7, b"abc", None)),
        (SERVER, CLIENT, truncated),
        // In the conversation: judged; its magic is wrong.
        (CLIENT, SERVER, b"XX\x01\x00\x00\x00\x00".to_vec()),
        // A new conversation on the port without the magic, and another port: not the dialect's.
        (CLIENT + 1, SERVER, b"XX\x01\x00\x00\x00\x00".to_vec()),
        (CLIENT, 9999, mg(0x20, 9, &1u64.to_le_bytes(), None)),
    ]
}

/// The template's case, written once: the tests run in parallel and must not read a file
/// another is rewriting.
fn template() -> &'static Case {
    static CASE: std::sync::OnceLock<Case> = std::sync::OnceLock::new();
    CASE.get_or_init(|| Case::new("template", TEMPLATE, template_datagrams()))
}

/// The columns and fields of every frame of the template's datagrams, `|`-separated.
const TEMPLATE_FIELDS: &[&str] = &[
    "frame.number",
    "_ws.col.Protocol",
    "_ws.col.Info",
    "mygame.message",
    "mygame.header.type",
    "mygame.header.seq",
    "mygame.header.size",
    "mygame.hello.name",
    "mygame.welcome.player_id",
    "mygame.snapshot.tick",
    "mygame.snapshot.count",
    "mygame.snapshot.entities.id",
    "mygame.snapshot.entities.kind",
    "mygame.snapshot.entities.x",
    "mygame.snapshot.entities.y",
    "mygame.snapshot.entities.has_health",
    "mygame.snapshot.entities.health",
    "mygame.ping.time",
    "mygame.footer.crc",
    "mygame.violation",
];

/// What every tshark shows: the unknown type without a message name, the truncated snapshot up
/// to its first entity's id (and the 4 bytes where its footer would be as the CRC), the datagram
/// without the magic in the conversation as the dialect's, the two others as plain UDP.
const TEMPLATE_ROWS: &[&str] = &[
    "1|mygame|HELLO|HELLO|0x01|1|16|alice|||||||||||0x26d4e1a2|",
    "2|mygame|WELCOME|WELCOME|0x02|2|1||9||||||||||0x1900635a|mygame.valid",
    "3|mygame|SNAPSHOT|SNAPSHOT|0x10|3|26|||1000|2|7,8|1,2|15,-5|-20,300|1,0|80||0xf85008c2|",
    "4|mygame|PING|PING|0x20|4|8|||||||||||123456789|0x2b0582f9|",
    "5|mygame|PING|PING|0x20|5|8|||||||||||1|0xcef22b28|mygame.crc.mismatch",
    "6|mygame|PING|PING|0x20|6|9|||||||||||1|0xa9ae92e6|mygame.length",
    "7|mygame|unknown 0x99||0x99|7|3||||||||||||0x4a90f9fc|mygame.unknown-type",
    "8|mygame|SNAPSHOT|SNAPSHOT|0x10|8|26|||1000|2|7|||||||0xec000f01|mygame.length,mygame.truncated,mygame.crc.mismatch",
    "9|mygame|?|||||||||||||||||mygame.magic",
    "10|UDP|40001 → 4242 Len=7|||||||||||||||||",
    "11|UDP|40000 → 9999 Len=19|||||||||||||||||",
];

/// The template's datagrams, value by value, in every tshark: the columns, every field (the
/// string to its first NUL, signed and fixed-point numbers, the bit fields, the `if`), and the
/// rules broken, as `<id>.violation` fields.
#[test]
fn tshark_shows_the_template_value_by_value() {
    let case = template();
    let mut args = vec!["-T", "fields", "-E", "separator=|", "-E", "occurrence=a"];
    for f in TEMPLATE_FIELDS {
        args.extend(["-e", f]);
    }
    for ts in tsharks("tshark_shows_the_template_value_by_value") {
        let stdout = case.tshark(ts, &args);
        let rows: Vec<&str> = stdout.lines().collect();
        assert_eq!(rows, TEMPLATE_ROWS, "{}", ts.name());
    }
}

/// Display filters on the template's fields select the frames they should, in every tshark.
#[test]
fn display_filters_find_the_template_fields() {
    let case = template();
    let filters: &[(&str, &[u64])] = &[
        ("mygame", &[1, 2, 3, 4, 5, 6, 7, 8, 9]),
        ("mygame.snapshot.entities.health == 80", &[3]),
        ("mygame.snapshot.entities.kind == 2", &[3]),
        ("mygame.snapshot.entities.x < 0", &[3]),
        ("mygame.hello.name == \"alice\"", &[1]),
        ("mygame.welcome.player_id > 4", &[2]),
        ("mygame.message == \"PING\"", &[4, 5, 6]),
        ("mygame.violation == \"mygame.crc.mismatch\"", &[5, 8]),
        ("mygame.crc.mismatch", &[5, 8]),
        ("_ws.expert.severity == error", &[2, 5, 6, 7, 8, 9]),
        ("mygame.header.type == 0x99", &[7]),
    ];
    for ts in tsharks("display_filters_find_the_template_fields") {
        for (filter, frames) in filters {
            let stdout = case.tshark(ts, &["-Y", filter, "-T", "fields", "-e", "frame.number"]);
            let seen: Vec<u64> = stdout.lines().map(|l| l.parse().unwrap()).collect();
            assert_eq!(seen, *frames, "{}: {filter}", ts.name());
        }
    }
}

/// The expert infos of every frame are the findings `dialect check --format json` reports, in
/// its order, each with the rule's severity.
#[test]
fn tshark_raises_what_dialect_check_reports_on_the_template() {
    let case = template();
    let rules = case.check();
    assert_eq!(
        rules.values().map(Vec::len).sum::<usize>(),
        8,
        "the template's datagrams break eight rules: {rules:?}"
    );
    let severities: BTreeMap<&str, &str> = case
        .described
        .description
        .rules
        .iter()
        .map(|r| (r.id.as_str(), r.severity.name()))
        .collect();
    for ts in tsharks("tshark_raises_what_dialect_check_reports_on_the_template") {
        let stdout = case.tshark(
            ts,
            &[
                "-T",
                "fields",
                "-E",
                "separator=|",
                "-e",
                "frame.number",
                "-e",
                "mygame.violation",
                "-e",
                "_ws.expert.severity",
            ],
        );
        for line in stdout.lines() {
            let mut parts = line.split('|');
            let frame: u64 = parts.next().unwrap().parse().unwrap();
            let raised: Vec<&str> = parts
                .next()
                .unwrap()
                .split(',')
                .filter(|s| !s.is_empty())
                .collect();
            let expected: Vec<&str> = rules
                .get(&frame)
                .map(|r| r.iter().map(String::as_str).collect())
                .unwrap_or_default();
            assert_eq!(raised, expected, "{} frame {frame}", ts.name());
            // Wireshark's severity values: error 0x00800000, warning 0x00600000.
            let levels: Vec<&str> = parts
                .next()
                .unwrap()
                .split(',')
                .filter(|s| !s.is_empty())
                .collect();
            let wanted: Vec<&str> = expected
                .iter()
                .map(|r| match severities[r] {
                    "error" => "8388608",
                    "warning" => "6291456",
                    _ => "4194304",
                })
                .collect();
            assert_eq!(levels, wanted, "{} frame {frame}", ts.name());
        }
    }
}

#[test]
fn tshark_agrees_with_the_interpreter_on_the_template() {
    agree(
        template(),
        "tshark_agrees_with_the_interpreter_on_the_template",
    );
}

// ------------------------------------------------------------------------------------------------
// A description in big endian, many messages per datagram, LZ4
// ------------------------------------------------------------------------------------------------

const KITCHEN: &str = r#"
meta:
  id: kitchen
  title: Kitchen sink
  endian: be
  bit-endian: le
detect:
  magic: "KS"
  ports: [5555]
header:
  - id: magic
    contents: "KS"
  - { id: type, type: u1, role: message-type }
  - { id: flags, type: u1, role: flags }
  - { id: orig, type: u2 }
  - { id: len, type: u2, role: length }
framing:
  length: { field: len, covers: message }
  checksum: { algorithm: sum8, field: sum, covers: [0, -1] }
  compression: { algorithm: lz4-block, flag: flags, mask: 0x80, original-size: orig }
  messages-per-datagram: many
footer:
  - { id: sum, type: u1, role: checksum }
messages:
  0x01:
    id: state
    seq:
      - { id: count, type: u1 }
      - { id: items, type: item, repeat: expr, repeat-expr: "count * 2 / 2" }
      - { id: extra, type: s4le, if: "(flags & 0x01) != 0" }
      - { id: ratio, type: f4 }
      - { id: big, type: f8le }
      - { id: serial, type: u8, enum: serial }
  0x02:
    id: blob
    seq:
      - { id: tag, contents: [0xCA, 0xFE] }
      - { id: n, type: u2 }
      - { id: data, size: n - 1 }
      - { id: boxed, type: box, size: 3 }
  0x03:
    id: quiet
    seq: []
types:
  item:
    seq:
      - { id: lo, type: b3 }
      - { id: hi, type: b5 }
      - { id: wide, type: b12 }
      - { id: rest, type: b4 }
      - { id: v, type: s2, valid: { min: -100, max: 100 } }
  box:
    seq:
      - { id: a, type: u1 }
enums:
  serial:
    1: one
    0x123456789: big
"#;

/// A kitchen message: "KS", type, flags, original size, length (the message's), body, and a
/// sum byte left 0.
fn ks(kind: u8, flags: u8, orig: u16, body: &[u8]) -> Vec<u8> {
    let mut d = b"KS".to_vec();
    d.extend([kind, flags]);
    d.extend(orig.to_be_bytes());
    d.extend((body.len() as u16 + 9).to_be_bytes());
    d.extend(body);
    d.push(0);
    d
}

/// Sets the last byte to the sum of the others.
fn summed(mut d: Vec<u8>) -> Vec<u8> {
    let n = d.len() - 1;
    d[n] = d[..n].iter().fold(0u8, |a, b| a.wrapping_add(*b));
    d
}

fn state_body(items: &[[u8; 5]], extra: bool, serial: u64) -> Vec<u8> {
    let mut b = vec![items.len() as u8];
    items.iter().for_each(|i| b.extend(i));
    if extra {
        b.extend((-7i32).to_le_bytes());
    }
    b.extend(1.5f32.to_be_bytes());
    b.extend((-2.25f64).to_le_bytes());
    b.extend(serial.to_be_bytes());
    b
}

fn kitchen_datagrams() -> Vec<Datagram> {
    let items = [
        [0b1010_1101, 0x34, 0x5C, 0x00, 0x2A],
        [0xFF, 0xFF, 0xFF, 0xFF, 0x9C],
    ];
    let plain = state_body(&items, true, 1);
    let packed = lz4_flex::block::compress(&plain);
    let mut two = ks(0x01, 0x01, 0, &state_body(&items, true, 0x1_2345_6789));
    two.extend(ks(0x03, 0, 0, &[]));
    let mut blob = vec![0xCA, 0xFE, 0, 5, 1, 2, 3, 4];
    blob.extend([9, 8, 7]);
    let mut bad_blob = vec![0xCA, 0xFF, 0, 0];
    bad_blob.extend([1, 2]);
    let mut long = ks(0x03, 0, 0, &[]);
    long[7] = 40;
    let p = |d: Vec<u8>| (41000, 5555, d);
    vec![
        p(summed(ks(0x01, 0, 0, &state_body(&items, false, 1)))),
        p(summed(two)),
        p(summed(ks(0x02, 0, 0, &blob))),
        p(summed(ks(0x02, 0, 0, &bad_blob))),
        p(summed(ks(0x01, 0x81, plain.len() as u16, &packed))),
        p(summed(ks(0x01, 0x81, plain.len() as u16 + 1, &packed))),
        p(summed(ks(0x01, 0x80, 4, &[0x40, 1, 2, 3, 4]))),
        p(summed(ks(0x03, 0x80, 0, &[]))),
        p(summed(ks(0x01, 0, 0, &[200, 1, 2]))),
        p(summed(ks(
            0x01,
            0,
            0,
            &state_body(&[[0, 0, 0, 0x01, 0xF4]], false, 1),
        ))),
        p(summed(ks(0x03, 0, 0, &[1, 2]))),
        p(summed(long)),
        p(summed(ks(0x07, 0, 0, &[1]))),
        p(ks(0x01, 0, 0, &state_body(&items, false, 2))),
    ]
}

#[test]
fn tshark_agrees_with_the_interpreter_on_many_messages_and_lz4() {
    let case = Case::new("kitchen", KITCHEN, kitchen_datagrams());
    agree(
        &case,
        "tshark_agrees_with_the_interpreter_on_many_messages_and_lz4",
    );
}

/// Without ports, the dissector finds the dialect by its magic alone, as a heuristic dissector.
#[test]
fn tshark_finds_a_dialect_without_ports_by_its_magic() {
    let yaml = KITCHEN.replace("  ports: [5555]\n", "");
    let case = Case::new("kitchen-heuristic", &yaml, kitchen_datagrams());
    assert!(case.described.description.ports.is_empty());
    agree(&case, "tshark_finds_a_dialect_without_ports_by_its_magic");
}

// ------------------------------------------------------------------------------------------------
// A description without a magic, with zlib bodies and strings
// ------------------------------------------------------------------------------------------------

const ZLIBBY: &str = r#"
meta:
  id: zlibby
  title: Zlib and no magic
  endian: le
detect:
  ports: [6000, 6001]
  min-length: 6
rules:
  - id: zlibby.speed.too-fast
    severity: warning
    summary: a speed above the limit
header:
  - { id: sum, type: u1, role: checksum }
  - { id: type, type: u1, role: message-type }
  - { id: flags, type: b1 }
  - { id: pad, type: b7 }
  - { id: total, type: u2, role: length }
  - { id: ver, type: u1, valid: 3 }
framing:
  length: { field: total, covers: datagram, adjust: 1 }
  checksum: { algorithm: xor8, field: sum, covers: [1, -1] }
  compression: { algorithm: zlib, flag: flags, mask: 1 }
messages:
  0x10:
    id: chat
    direction: client-to-server
    seq:
      - { id: who, type: strz, encoding: ASCII }
      - { id: text, type: strz }
      - { id: tail, size-eos: true }
  0x11:
    id: moves
    direction: server-to-client
    seq:
      - { id: moves, type: move, repeat: eos }
  0x12:
    id: label
    seq:
      - { id: text, type: str, size: 8, encoding: UTF-8 }
types:
  move:
    seq:
      - { id: kind, type: u1, valid: { any-of: [1, 2, 4] } }
      - { id: speed, type: u2, valid: { max: 300, rule: zlibby.speed.too-fast } }
      - { id: bonus, type: u1, if: "kind == 4 and speed > 10" }
"#;

/// A zlibby datagram: xor of the bytes after the first but the last, type, the compressed flag
/// (the top bit), total length less one, version, body.
fn zl(kind: u8, compressed: bool, ver: u8, body: &[u8]) -> Vec<u8> {
    let mut d = vec![0, kind, if compressed { 0x80 } else { 0 }];
    d.extend((body.len() as u16 + 5).to_le_bytes());
    d.push(ver);
    d.extend(body);
    let n = d.len() - 1;
    d[0] = d[1..n].iter().fold(0, |a, b| a ^ b);
    d
}

fn deflate(bytes: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(bytes).unwrap();
    z.finish().unwrap()
}

fn zlibby_datagrams() -> Vec<Datagram> {
    let moves = [4, 20, 0, 7, 3, 144, 1, 1, 5, 0].to_vec();
    let mut bad_crc = zl(0x12, false, 3, b"label\0\0\0");
    bad_crc[0] ^= 1;
    let (c, s) = (41000, 6000);
    vec![
        (c, s, zl(0x10, false, 3, b"bob\0h\xC3\xA9llo\0\x01\x02")),
        (c, s, zl(0x10, false, 3, b"b\xE9b\0h\xFFllo\0")),
        (s, c, zl(0x11, false, 3, &moves)),
        (s, c, zl(0x11, true, 3, &deflate(&moves))),
        (s, c, zl(0x11, true, 3, &deflate(&[]))),
        (s, c, zl(0x11, true, 3, b"not zlib")),
        (s, c, zl(0x11, true, 3, b"")),
        (s, c, zl(0x12, false, 3, "añb\0\0\0\0\0".as_bytes())),
        (s, c, zl(0x10, false, 4, b"x\0y\0")),
        (c, s, zl(0x13, false, 3, b"")),
        (c, s, bad_crc),
        (c, s, zl(0x10, false, 3, b"no end")),
        (c, s, vec![1, 0x10, 0]),
        (c + 1, 6001, vec![1, 0x10, 0]),
    ]
}

#[test]
fn tshark_agrees_with_the_interpreter_on_zlib_strings_and_no_magic() {
    let case = Case::new("zlibby", ZLIBBY, zlibby_datagrams());
    agree(
        &case,
        "tshark_agrees_with_the_interpreter_on_zlib_strings_and_no_magic",
    );
}

// ------------------------------------------------------------------------------------------------
// A CRC-32C in a header field of two bytes
// ------------------------------------------------------------------------------------------------

const CASTAGNOLI: &str = r#"
meta: { id: castagnoli, endian: be }
detect: { magic: [0xC5], ports: [7000] }
header:
  - { id: magic, contents: [0xC5] }
  - { id: type, type: u1, role: message-type }
  - { id: crc, type: u2, role: checksum }
framing:
  checksum: { algorithm: crc32c, field: crc, covers: [4, -1] }
messages:
  1:
    id: data
    seq:
      - { id: rest, size-eos: true }
"#;

/// CRC-32C (Castagnoli, reflected), bit by bit.
fn crc32c(bytes: &[u8]) -> u32 {
    !bytes.iter().fold(!0u32, |mut c, b| {
        c ^= u32::from(*b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0x82F6_3B78 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
        c
    })
}

/// A castagnoli datagram whose checksum field holds the low half of the CRC-32C of its body but the
/// last byte, plus `wrong`.
fn cast(body: &[u8], wrong: u16) -> Vec<u8> {
    let crc = (crc32c(&body[..body.len() - 1]) as u16).wrapping_add(wrong);
    let mut d = vec![0xC5, 1];
    d.extend(crc.to_be_bytes());
    d.extend(body);
    d
}

#[test]
fn tshark_agrees_with_the_interpreter_on_crc32c() {
    let datagrams = vec![
        (42000, 7000, cast(b"123456789!", 0)),
        (42000, 7000, cast(b"123456789!", 1)),
        (42000, 7000, cast(&[0xFF; 300], 0)),
    ];
    let case = Case::new("castagnoli", CASTAGNOLI, datagrams);
    assert_eq!(case.check().len(), 1, "one datagram breaks its checksum");
    agree(&case, "tshark_agrees_with_the_interpreter_on_crc32c");
}

// ------------------------------------------------------------------------------------------------
// The Lua text
// ------------------------------------------------------------------------------------------------

/// The same description gives the same file, from the library and from `dialect dissector -o -`.
#[test]
fn the_dissector_is_deterministic() {
    let d = Described::from_text("template", TEMPLATE).unwrap();
    let once = lua::generate(&d);
    assert_eq!(
        once,
        lua::generate(&Described::from_text("template", TEMPLATE).unwrap())
    );
    let path = scratch("deterministic.yaml");
    std::fs::write(&path, TEMPLATE).unwrap();
    let (code, stdout, stderr) =
        bin::run(&["dialect", "dissector", path.to_str().unwrap(), "-o", "-"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, once);
}

/// Lua 5.2 (Wireshark 4.0) reads the whole file: the Lua 5.3 operators only appear in chunks
/// compiled with load() on Lua 5.3+; and Lua 5.4 compiles it (when `lua5.4` is installed).
#[test]
fn the_dissector_is_lua_5_2_and_5_4() {
    for (name, yaml) in [
        ("template", TEMPLATE),
        ("kitchen", KITCHEN),
        ("zlibby", ZLIBBY),
        ("castagnoli", CASTAGNOLI),
    ] {
        let text = lua::generate(&Described::from_text(name, yaml).unwrap());
        let mut outside = String::new();
        for (i, part) in text.split("load([[").enumerate() {
            let rest = if i == 0 {
                part
            } else {
                part.split_once("]])").map_or("", |p| p.1)
            };
            outside.push_str(rest);
        }
        for line in outside.lines().map(|l| l.split("--").next().unwrap_or("")) {
            for op in [" & ", " | ", " // ", " >> ", " << ", " ~ "] {
                assert!(
                    !line.contains(op),
                    "{name}: Lua 5.3 operator `{}` in Lua 5.2: {line}",
                    op.trim()
                );
            }
        }
        if !Command::new("lua5.4")
            .arg("-v")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            skip::missing(
                "the_dissector_is_lua_5_2_and_5_4",
                "no lua5.4 (apt-get install lua5.4)",
            );
            return;
        }
        let path = scratch(&format!("syntax-{name}.lua"));
        std::fs::write(&path, &text).unwrap();
        let out = Command::new("lua5.4")
            .args([
                "-e",
                &format!("assert(loadfile({:?}))", path.to_str().unwrap()),
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// An unreadable description is an error message, not a file.
#[test]
fn a_bad_description_is_an_error() {
    let path = scratch("bad.yaml");
    std::fs::write(&path, "meta: {id: x}\n").unwrap();
    let out = scratch("bad.lua");
    let (code, _, stderr) = bin::run(&[
        "dialect",
        "dissector",
        path.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(stderr.contains("bad.yaml"), "{stderr}");
    assert!(!out.exists());
}
