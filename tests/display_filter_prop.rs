//! Random well-typed display filters over the real captures: rtype-inspect's compiled filter
//! selects exactly the datagrams that a straightforward reference evaluator selects from the
//! export's records (the NDJSON), field values read from their JSON, semantics as Wireshark 4
//! defines them (any-match `==`, all-match `!=`, `===`, `~=`, quantifiers, sets, `not in`).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::OnceLock;

use proptest::prelude::*;
use serde_json::Value as Json;

use rtype_inspect::app::{read_capture, ReadOpts};
use rtype_inspect::report::export::Export;
use rtype_inspect::report::filter::FilterOptions;

const CAPTURES: &[&str] = &[
    "reference-17byte-1client.pcap",
    "reference-15byte-levelevents.pcap",
    "rt-two-players.pcap",
    "rtnp-solo.pcap",
];

/// A value as the reference sees it.
#[derive(Clone, Debug, PartialEq, PartialOrd)]
enum Lit {
    Int(i64),
    Float(f64),
    Str(String),
}

impl Lit {
    /// As written in a filter.
    fn text(&self) -> String {
        match self {
            Lit::Int(n) => n.to_string(),
            Lit::Float(f) => format!("{f:?}"),
            Lit::Str(s) => format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Int,
    Float,
    Str,
}

/// A field the generator uses, and how the reference reads it from a datagram record (with
/// the reassembled snapshot record that follows it, if any).
struct FieldDef {
    name: &'static str,
    kind: Kind,
    get: fn(&Record) -> Vec<Lit>,
}

struct Record {
    json: Json,
    snapshot: Option<Json>,
}

fn ints(v: &Json) -> Vec<Lit> {
    v.as_i64().map(Lit::Int).into_iter().collect()
}

fn of(r: &Record, dialect: &str) -> bool {
    r.json["dialect"] == dialect
}

/// `key` of every item of list `list` in `fields`, when the header's code is `code`.
fn items(fields: &Json, list: &str, key: &str) -> Vec<Json> {
    fields[list]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| item[key].clone())
        .filter(|v| !v.is_null())
        .collect()
}

fn code(r: &Record) -> Option<u64> {
    r.json["code"].as_u64()
}

fn num(v: &Json, kind: Kind) -> Option<Lit> {
    match kind {
        Kind::Int => v.as_i64().map(Lit::Int),
        // The export writes an f32 by its shortest decimals; filters compare the f32's exact
        // value (as Wireshark compares an FT_FLOAT, widened to a double).
        Kind::Float => v.as_f64().map(|f| Lit::Float(f64::from(f as f32))),
        Kind::Str => v.as_str().map(|s| Lit::Str(s.into())),
    }
}

const FIELDS: &[FieldDef] = &[
    FieldDef {
        name: "frame.number",
        kind: Kind::Int,
        get: |r| ints(&r.json["frame"]),
    },
    FieldDef {
        name: "udp.srcport",
        kind: Kind::Int,
        get: |r| ints(&r.json["src_port"]),
    },
    FieldDef {
        name: "udp.port",
        kind: Kind::Int,
        get: |r| [ints(&r.json["src_port"]), ints(&r.json["dst_port"])].concat(),
    },
    FieldDef {
        name: "rtype.msg_type",
        kind: Kind::Int,
        get: |r| ints(&r.json["header"]["msg_type"]),
    },
    FieldDef {
        name: "rtype.tick",
        kind: Kind::Int,
        get: |r| {
            if of(r, "rtype") {
                ints(&r.json["header"]["tick"])
            } else {
                vec![]
            }
        },
    },
    FieldDef {
        name: "rtype.sequence",
        kind: Kind::Int,
        get: |r| {
            if of(r, "rtype") {
                ints(&r.json["header"]["sequence"])
            } else {
                vec![]
            }
        },
    },
    FieldDef {
        name: "rtype.conversation",
        kind: Kind::Int,
        get: |r| {
            if of(r, "rtype") {
                ints(&r.json["conversation"])
            } else {
                vec![]
            }
        },
    },
    FieldDef {
        name: "rtype.snapshot.entity.id",
        kind: Kind::Int,
        get: |r| match code(r) {
            Some(0x14) if of(r, "rtype") => items(&r.json["fields"], "entities", "id")
                .iter()
                .filter_map(|v| num(v, Kind::Int))
                .collect(),
            _ => vec![],
        },
    },
    FieldDef {
        name: "rtype.snapshot.entity.update_mask",
        kind: Kind::Int,
        get: |r| match code(r) {
            Some(0x14) if of(r, "rtype") => items(&r.json["fields"], "entities", "update_mask")
                .iter()
                .filter_map(|v| num(v, Kind::Int))
                .collect(),
            _ => vec![],
        },
    },
    FieldDef {
        name: "rtype.snapshot.entity.pos_x",
        kind: Kind::Float,
        get: |r| match code(r) {
            Some(0x14) if of(r, "rtype") => items(&r.json["fields"], "entities", "pos_x")
                .iter()
                .filter_map(|v| num(v, Kind::Float))
                .collect(),
            _ => vec![],
        },
    },
    FieldDef {
        name: "rtype.snapshot.entity_count",
        kind: Kind::Int,
        get: |r| match code(r) {
            Some(0x14) if of(r, "rtype") => ints(&r.json["fields"]["entity_count"]),
            _ => vec![],
        },
    },
    FieldDef {
        name: "rtype.input.player_id",
        kind: Kind::Int,
        get: |r| match code(r) {
            Some(0x05) if of(r, "rtype") => ints(&r.json["fields"]["player_id"]),
            _ => vec![],
        },
    },
    FieldDef {
        name: "rtype.input.pos_y",
        kind: Kind::Float,
        get: |r| match code(r) {
            Some(0x05) if of(r, "rtype") => num(&r.json["fields"]["pos_y"], Kind::Float)
                .into_iter()
                .collect(),
            _ => vec![],
        },
    },
    FieldDef {
        name: "rtype.levelinit.archetype.sprite_id",
        kind: Kind::Str,
        get: |r| match code(r) {
            Some(0x30) if of(r, "rtype") => items(&r.json["fields"], "archetypes", "sprite_id")
                .iter()
                .filter_map(|v| num(v, Kind::Str))
                .collect(),
            _ => vec![],
        },
    },
    FieldDef {
        name: "rtype.reassembled.entity.id",
        kind: Kind::Int,
        get: |r| match &r.snapshot {
            Some(s) => items(&s["fields"], "entities", "id")
                .iter()
                .filter_map(|v| num(v, Kind::Int))
                .collect(),
            None => vec![],
        },
    },
    FieldDef {
        name: "rt.packet_type",
        kind: Kind::Int,
        get: |r| {
            if of(r, "rt") {
                ints(&r.json["header"]["packet_type"])
            } else {
                vec![]
            }
        },
    },
    FieldDef {
        name: "rt.sequence_number",
        kind: Kind::Int,
        get: |r| {
            if of(r, "rt") {
                ints(&r.json["header"]["sequence_number"])
            } else {
                vec![]
            }
        },
    },
    FieldDef {
        name: "rt.health_snapshot.entity.current_health",
        kind: Kind::Int,
        get: |r| match code(r) {
            Some(0x26) if of(r, "rt") => items(&r.json["fields"], "entities", "current_health")
                .iter()
                .filter_map(|v| num(v, Kind::Int))
                .collect(),
            _ => vec![],
        },
    },
    FieldDef {
        name: "rtnp.type",
        kind: Kind::Str,
        get: |r| {
            if of(r, "rtnp") {
                num(&r.json["fields"]["type"], Kind::Str)
                    .into_iter()
                    .collect()
            } else {
                vec![]
            }
        },
    },
    FieldDef {
        name: "_ws.expert.severity",
        kind: Kind::Int,
        get: |r| {
            r.json["violations"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| {
                    Lit::Int(match v["severity"].as_str() {
                        Some("error") => 0x0080_0000,
                        Some("warning") => 0x0060_0000,
                        _ => 0x0040_0000,
                    })
                })
                .collect()
        },
    },
];

/// The datagram records of a capture's export, each with the snapshot record it completed.
fn records(name: &str) -> &'static [Record] {
    static CACHE: OnceLock<Vec<(String, Vec<Record>)>> = OnceLock::new();
    let all = CACHE.get_or_init(|| {
        CAPTURES
            .iter()
            .map(|name| {
                let text = run(name, None);
                let mut out: Vec<Record> = Vec::new();
                for line in text.lines() {
                    let json: Json = serde_json::from_str(line).unwrap();
                    match json["kind"].as_str() {
                        Some("datagram") => out.push(Record {
                            json,
                            snapshot: None,
                        }),
                        Some("snapshot") => {
                            let last = out.last_mut().unwrap();
                            assert_eq!(last.json["frame"], json["frame"]);
                            last.snapshot = Some(json);
                        }
                        _ => {}
                    }
                }
                assert!(out.len() > 700, "{name}: {} datagrams", out.len());
                (name.to_string(), out)
            })
            .collect()
    });
    &all.iter().find(|(n, _)| n == name).unwrap().1
}

/// `rtype-inspect export` of a real capture, with a display filter, in this process.
fn run(name: &str, filter: Option<&str>) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    // The document's layout throughout, which the reference's FT_FLOAT positions assume (the
    // layouts found per conversation are tested in tests/check.rs).
    let opts = ReadOpts {
        quiet: true,
        strict_layout: true,
        filter: filter.map(str::to_string),
        ..ReadOpts::default()
    };
    let reading = opts.reading().unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    let no_flags = FilterOptions::default().build().unwrap();
    let mut export = Export::new(&mut out, false, no_flags);
    read_capture(&path, &reading, &mut export).unwrap();
    drop(export);
    String::from_utf8(out).unwrap()
}

/// A generated expression: its text, and its value on a record.
#[derive(Clone, Debug)]
enum Expr {
    Exists(usize),
    Cmp {
        field: usize,
        op: &'static str,
        quantifier: Option<&'static str>,
        value: Lit,
    },
    In {
        field: usize,
        not: bool,
        members: Vec<(Lit, Option<Lit>)>,
    },
    Contains(usize, String),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
}

impl Expr {
    fn text(&self) -> String {
        match self {
            Expr::Exists(f) => FIELDS[*f].name.into(),
            Expr::Cmp {
                field,
                op,
                quantifier,
                value,
            } => format!(
                "{}{} {op} {}",
                quantifier.map_or(String::new(), |q| format!("{q} ")),
                FIELDS[*field].name,
                value.text()
            ),
            Expr::In {
                field,
                not,
                members,
            } => {
                let list: Vec<String> = members
                    .iter()
                    .map(|(a, b)| match b {
                        Some(b) => format!("{}..{}", a.text(), b.text()),
                        None => a.text(),
                    })
                    .collect();
                format!(
                    "{} {}in {{{}}}",
                    FIELDS[*field].name,
                    if *not { "not " } else { "" },
                    list.join(", ")
                )
            }
            Expr::Contains(f, s) => format!(
                "{} contains {}",
                FIELDS[*f].name,
                Lit::Str(s.clone()).text()
            ),
            Expr::Not(a) => format!("!({})", a.text()),
            Expr::And(a, b) => format!("({}) && ({})", a.text(), b.text()),
            Expr::Or(a, b) => format!("({}) || ({})", a.text(), b.text()),
        }
    }

    /// The reference semantics.
    fn eval(&self, r: &Record) -> bool {
        let cmp = |v: &Lit, op: &str, c: &Lit| match op {
            "==" | "===" => v == c,
            "!=" | "~=" => v != c,
            "<" => v < c,
            "<=" => v <= c,
            ">" => v > c,
            _ => v >= c,
        };
        match self {
            Expr::Exists(f) => !(FIELDS[*f].get)(r).is_empty(),
            Expr::Cmp {
                field,
                op,
                quantifier,
                value,
            } => {
                let values = (FIELDS[*field].get)(r);
                let all = match (*op, quantifier) {
                    (_, Some(q)) => *q == "all",
                    ("!=" | "===", None) => true,
                    _ => false,
                };
                if all {
                    !values.is_empty() && values.iter().all(|v| cmp(v, op, value))
                } else {
                    values.iter().any(|v| cmp(v, op, value))
                }
            }
            Expr::In {
                field,
                not,
                members,
            } => {
                let inside = |v: &Lit| {
                    members.iter().any(|(a, b)| match b {
                        Some(b) => v >= a && v <= b,
                        None => v == a,
                    })
                };
                let any = (FIELDS[*field].get)(r).iter().any(inside);
                any != *not
            }
            Expr::Contains(f, s) => (FIELDS[*f].get)(r)
                .iter()
                .any(|v| matches!(v, Lit::Str(t) if t.contains(s.as_str()))),
            Expr::Not(a) => !a.eval(r),
            Expr::And(a, b) => a.eval(r) && b.eval(r),
            Expr::Or(a, b) => a.eval(r) || b.eval(r),
        }
    }
}

/// Values worth comparing with: some the capture holds, and some it does not.
fn pool(field: usize) -> Vec<Lit> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for name in CAPTURES {
        for r in records(name) {
            for v in (FIELDS[field].get)(r) {
                let key = format!("{v:?}");
                if out.len() < 64 && seen.insert(key) {
                    out.push(v);
                }
            }
        }
    }
    match FIELDS[field].kind {
        Kind::Int => out.extend([Lit::Int(0), Lit::Int(1), Lit::Int(200)]),
        Kind::Float => out.extend([Lit::Float(0.0), Lit::Float(-1.5), Lit::Float(250.25)]),
        Kind::Str => out.push(Lit::Str("nothing".into())),
    }
    out
}

fn pools() -> &'static Vec<Vec<Lit>> {
    static POOLS: OnceLock<Vec<Vec<Lit>>> = OnceLock::new();
    POOLS.get_or_init(|| (0..FIELDS.len()).map(pool).collect())
}

fn atom() -> impl Strategy<Value = Expr> {
    (
        0..FIELDS.len(),
        any::<prop::sample::Index>(),
        any::<prop::sample::Index>(),
        0..9usize,
    )
        .prop_map(|(field, a, b, shape)| {
            let pool = &pools()[field];
            let (x, y) = (a.get(pool).clone(), b.get(pool).clone());
            let ordered = |x: Lit, y: Lit| if x <= y { (x, y) } else { (y, x) };
            let kind = FIELDS[field].kind;
            match shape {
                0 => Expr::Exists(field),
                1..=3 => {
                    let ops = ["==", "!=", "<", "<=", ">", ">=", "===", "~="];
                    let op = ops[a.index(ops.len())];
                    let quantifier = match (op, b.index(4)) {
                        ("==" | "<" | "<=" | ">" | ">=", 0) => Some("all"),
                        ("==" | "<" | ">", 1) => Some("any"),
                        _ => None,
                    };
                    Expr::Cmp {
                        field,
                        op,
                        quantifier,
                        value: x,
                    }
                }
                4 | 5 if kind != Kind::Str => {
                    let (lo, hi) = ordered(x.clone(), y);
                    Expr::In {
                        field,
                        not: shape == 5,
                        members: vec![(x, None), (lo, Some(hi))],
                    }
                }
                4 | 5 => Expr::In {
                    field,
                    not: shape == 5,
                    members: vec![(x, None), (y, None)],
                },
                6 if kind == Kind::Str => {
                    let Lit::Str(s) = x else { unreachable!() };
                    let cut = a.index(s.len().max(1));
                    Expr::Contains(field, s.chars().skip(cut / 2).take(3).collect())
                }
                _ => Expr::Cmp {
                    field,
                    op: "==",
                    quantifier: None,
                    value: x,
                },
            }
        })
}

fn expr() -> impl Strategy<Value = Expr> {
    atom().prop_recursive(3, 8, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|a| Expr::Not(Box::new(a))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::And(Box::new(a), Box::new(b))),
            (inner.clone(), inner).prop_map(|(a, b)| Expr::Or(Box::new(a), Box::new(b))),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn compiled_filters_agree_with_the_reference(e in expr(), capture in 0..CAPTURES.len()) {
        let name = CAPTURES[capture];
        let text = e.text();
        let expected: Vec<u64> = records(name)
            .iter()
            .filter(|r| e.eval(r))
            .map(|r| r.json["frame"].as_u64().unwrap())
            .collect();
        let got: Vec<u64> = run(name, Some(&text))
            .lines()
            .filter_map(|l| serde_json::from_str::<Json>(l).ok())
            .filter(|r| r["kind"] == "datagram")
            .map(|r| r["frame"].as_u64().unwrap())
            .collect();
        prop_assert_eq!(got, expected, "-Y {} on {}", text, name);
    }
}

/// Repeated fields where any-match and all-match differ, checked on every capture whatever the
/// generator draws.
#[test]
fn repeated_fields_agree_with_the_reference() {
    let field = |name: &str| FIELDS.iter().position(|f| f.name == name).unwrap();
    let cases = [
        ("udp.port", "!=", Lit::Int(50010)),
        ("udp.port", "~=", Lit::Int(50010)),
        ("udp.port", "===", Lit::Int(4242)),
        ("rtype.snapshot.entity.id", "!=", Lit::Int(0)),
        ("rtype.snapshot.entity.id", "===", Lit::Int(0)),
        (
            "rt.health_snapshot.entity.current_health",
            "!=",
            Lit::Int(100),
        ),
    ];
    for name in CAPTURES {
        for (f, op, value) in &cases {
            let e = Expr::Cmp {
                field: field(f),
                op,
                quantifier: None,
                value: value.clone(),
            };
            let expected: Vec<u64> = records(name)
                .iter()
                .filter(|r| e.eval(r))
                .map(|r| r.json["frame"].as_u64().unwrap())
                .collect();
            let got: Vec<u64> = run(name, Some(&e.text()))
                .lines()
                .filter_map(|l| serde_json::from_str::<Json>(l).ok())
                .filter(|r| r["kind"] == "datagram")
                .map(|r| r["frame"].as_u64().unwrap())
                .collect();
            assert_eq!(got, expected, "-Y {} on {name}", e.text());
        }
    }
}
