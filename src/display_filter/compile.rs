//! From the expression tree to what the evaluation runs: every test becomes an atom (a field,
//! a test on one value, and whether any or every occurrence must pass), its value converted
//! once to the field's type; the fields the atoms read are sorted by where their values come
//! from, so that a datagram's walk visits only those.

use std::net::IpAddr;

use super::syntax::{
    Error, Expr, FieldRef, Literal, Member, Quantifier, Relation, Rhs, Span, Value, View,
};
use crate::proto::registry::{FieldType, FilterField, Registry, Runtime, Source, Values};

/// A value converted to the field's type.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Const {
    Int(i64),
    Float(f64),
    /// Strings and byte sequences, compared byte by byte.
    Bytes(Vec<u8>),
    /// An address, or a network with its prefix length.
    Net(IpAddr, u8),
    /// Nanoseconds.
    Time(i64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// What one occurrence of a field must satisfy.
#[derive(Clone, Debug)]
pub(super) enum Test {
    /// Any occurrence at all (presence).
    Exists,
    Cmp(Cmp, Const),
    /// Within one of these inclusive ranges.
    In(Vec<(Const, Const)>),
    /// Outside every range (`all f not in {…}`, `any f not in {…}`).
    NotIn(Vec<(Const, Const)>),
    Contains(Vec<u8>),
    Matches(regex::bytes::Regex),
    BitAnd(i64),
}

/// One test of one field, over its occurrences.
#[derive(Clone, Debug)]
pub(super) struct Atom {
    pub field: usize,
    pub test: Test,
    /// Every occurrence must pass (and there must be one); otherwise some occurrence must.
    pub all: bool,
    /// What of each occurrence the test reads.
    pub view: View,
}

/// The expression over the atoms' results.
#[derive(Clone, Debug)]
pub(super) enum Node {
    Atom(usize),
    Not(Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
}

#[derive(Clone)]
pub(super) struct Compiled {
    pub root: Node,
    pub atoms: Vec<Atom>,
}

/// Compiles `expr` against the registry.
pub(super) fn compile(expr: &Expr, registry: &Registry) -> Result<Compiled, Error> {
    let mut atoms = Vec::new();
    let root = node(expr, registry, &mut atoms)?;
    Ok(Compiled { root, atoms })
}

fn node(expr: &Expr, registry: &Registry, atoms: &mut Vec<Atom>) -> Result<Node, Error> {
    Ok(match expr {
        Expr::Or(a, b) => Node::Or(
            Box::new(node(a, registry, atoms)?),
            Box::new(node(b, registry, atoms)?),
        ),
        Expr::And(a, b) => Node::And(
            Box::new(node(a, registry, atoms)?),
            Box::new(node(b, registry, atoms)?),
        ),
        Expr::Not(a) => Node::Not(Box::new(node(a, registry, atoms)?)),
        Expr::Exists(f) => {
            let field = lookup(registry, &f.name, &f.span)?;
            viewed(registry.field(field), f)?;
            atoms.push(Atom {
                field,
                test: Test::Exists,
                all: false,
                view: f.view,
            });
            Node::Atom(atoms.len() - 1)
        }
        Expr::Test {
            quantifier,
            field,
            relation,
            relation_span,
            rhs,
        } => {
            let id = lookup(registry, &field.name, &field.span)?;
            let viewed = viewed(registry.field(id), field)?;
            let f = &viewed;
            let relation_error = |what: &str| {
                Error::new(
                    format!(
                        "{} (type={}) cannot participate in {what}",
                        f.name,
                        f.ty.describe()
                    ),
                    field.span.clone(),
                )
            };
            if matches!(f.ty, FieldType::Protocol | FieldType::None) {
                return Err(Error::new(
                    format!(
                        "{} is a {}: it can only be tested for presence",
                        f.name,
                        if f.ty == FieldType::Protocol {
                            "protocol"
                        } else {
                            "label (an expert info)"
                        }
                    ),
                    field.span.clone(),
                ));
            }
            let ordered = !matches!(f.ty, FieldType::Ipv4 | FieldType::Ipv6);
            let value = |v: &Value| convert(f, v, *relation);
            let (test, default_all, negate) = match (relation, rhs) {
                (Relation::In | Relation::NotIn, Rhs::Set(members)) => {
                    let ranges = members
                        .iter()
                        .map(|m| range(f, m, ordered))
                        .collect::<Result<Vec<_>, _>>()?;
                    match (relation, quantifier) {
                        // `f not in S` is `!(f in S)`, true when the field is absent.
                        (Relation::NotIn, None) => (Test::In(ranges), false, true),
                        (Relation::NotIn, Some(_)) => (Test::NotIn(ranges), false, false),
                        _ => (Test::In(ranges), false, false),
                    }
                }
                (Relation::Contains, Rhs::Value(v)) => {
                    if !matches!(f.ty, FieldType::String | FieldType::Bytes) {
                        return Err(relation_error("contains comparison"));
                    }
                    let Const::Bytes(b) = value(v)? else {
                        unreachable!("strings and bytes convert to bytes")
                    };
                    (Test::Contains(b), false, false)
                }
                (Relation::Matches, Rhs::Value(v)) => {
                    if !matches!(f.ty, FieldType::String | FieldType::Bytes) {
                        return Err(relation_error("matches comparison"));
                    }
                    let Literal::Quoted(pattern) = &v.literal else {
                        return Err(Error::new(
                            "matches requires a double quoted string on the right side",
                            v.span.clone(),
                        ));
                    };
                    // Wireshark's matches is case-insensitive unless the pattern says `(?-i)`.
                    let regex = regex::bytes::RegexBuilder::new(pattern)
                        .case_insensitive(true)
                        .size_limit(1 << 20)
                        .build()
                        .map_err(|e| {
                            let first = e.to_string();
                            let line = first.lines().last().unwrap_or_default();
                            let line = line.trim().trim_start_matches("error: ");
                            Error::new(
                                format!("invalid regular expression: {line}"),
                                v.span.clone(),
                            )
                        })?;
                    (Test::Matches(regex), false, false)
                }
                (Relation::BitAnd, Rhs::Value(v)) => {
                    if !f.ty.is_integer() {
                        return Err(relation_error("bitwise and"));
                    }
                    let Const::Int(mask) = value(v)? else {
                        unreachable!("integers convert to integers")
                    };
                    (Test::BitAnd(mask), false, false)
                }
                (r, Rhs::Value(v)) => {
                    let (cmp, all) = match r {
                        Relation::Eq => (Cmp::Eq, false),
                        Relation::AllNe => (Cmp::Ne, true),
                        Relation::AllEq => (Cmp::Eq, true),
                        Relation::AnyNe => (Cmp::Ne, false),
                        Relation::Lt => (Cmp::Lt, false),
                        Relation::Le => (Cmp::Le, false),
                        Relation::Gt => (Cmp::Gt, false),
                        _ => (Cmp::Ge, false),
                    };
                    if !ordered && !matches!(cmp, Cmp::Eq | Cmp::Ne) {
                        return Err(Error::new(
                            format!(
                                "{} (type={}) has no order: compare it with == or !=",
                                f.name,
                                f.ty.describe()
                            ),
                            relation_span.clone(),
                        ));
                    }
                    (Test::Cmp(cmp, value(v)?), all, false)
                }
                (_, Rhs::Set(_)) => unreachable!("only in takes a set"),
            };
            let all = match quantifier {
                Some((Quantifier::All, _)) => true,
                Some((Quantifier::Any, _)) => false,
                None => default_all,
            };
            atoms.push(Atom {
                field: id,
                test,
                all,
                view: field.view,
            });
            let atom = Node::Atom(atoms.len() - 1);
            if negate {
                Node::Not(Box::new(atom))
            } else {
                atom
            }
        }
    })
}

/// The field as a test of `at` sees it: its length an integer, a slice of it bytes. Only byte
/// and string fields are sliced or measured: the walk reads values, not their bytes.
fn viewed(f: &FilterField, at: &FieldRef) -> Result<FilterField, Error> {
    let bytes;
    let f = match protocol_bytes(f) {
        Some(b) => {
            bytes = b;
            &bytes
        }
        None => f,
    };
    let (ty, name) = match at.view {
        View::Whole => return Ok(f.clone()),
        View::Len => (FieldType::Unsigned(32), format!("len({})", f.name)),
        View::Slice { .. } => (FieldType::Bytes, format!("a slice of {}", f.name)),
    };
    if !matches!(f.ty, FieldType::String | FieldType::Bytes) {
        return Err(Error::new(
            format!(
                "{} (type={}): rtype-inspect takes slices and len() of byte and string fields only",
                f.name,
                f.ty.describe()
            ),
            at.span.clone(),
        ));
    }
    Ok(FilterField {
        name,
        ty,
        values: Values::None,
        ..f.clone()
    })
}

/// A protocol whose bytes a filter reads compares as a byte field, as in Wireshark: the frame
/// (`frame contains "RT"`), and a dialect, whose tree item spans the UDP payload (`rtype[0:4]`).
fn protocol_bytes(f: &FilterField) -> Option<FilterField> {
    matches!(
        f.source,
        Source::Runtime(Runtime::Frame | Runtime::Protocol(_))
    )
    .then(|| FilterField {
        ty: FieldType::Bytes,
        values: Values::None,
        ..f.clone()
    })
}

fn lookup(registry: &Registry, name: &str, span: &Span) -> Result<usize, Error> {
    let Some(id) = registry.get(name) else {
        let near = registry.nearest(name, 3);
        let hint = match near.as_slice() {
            [] => String::new(),
            [one] => format!("; did you mean {one}?"),
            more => format!("; did you mean {}?", more.join(", ")),
        };
        let what = if name.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
            format!("{name}: a test starts with a field, not a value")
        } else {
            format!("{name}: no such field{hint} (rtype-inspect fields lists them)")
        };
        return Err(Error::new(what, span.clone()));
    };
    match registry.field(id).source {
        Source::Runtime(Runtime::RtypeReassembledIn | Runtime::RtypeChunkFrame) => Err(Error::new(
            format!(
                "{name}: the frames of a chunk set are known only once it completes; rtype-inspect does not filter on them (rtype.reassembled.length marks the frame that completed a set)"
            ),
            span.clone(),
        )),
        _ => Ok(id),
    }
}

fn range(f: &FilterField, m: &Member, ordered: bool) -> Result<(Const, Const), Error> {
    let low = convert(f, &m.low, Relation::In)?;
    let Some(high) = &m.high else {
        return Ok((low.clone(), low));
    };
    if !ordered || f.ty == FieldType::String || f.ty == FieldType::Bytes {
        return Err(Error::new(
            format!("{} (type={}) has no ranges", f.name, f.ty.describe()),
            m.low.span.start..high.span.end,
        ));
    }
    Ok((low, convert(f, high, Relation::In)?))
}

/// Converts a literal to the field's type, or says why it cannot be one.
fn convert(f: &FilterField, v: &Value, relation: Relation) -> Result<Const, Error> {
    let text = match &v.literal {
        Literal::Quoted(s) | Literal::Bare(s) => s.as_str(),
    };
    let quoted = matches!(v.literal, Literal::Quoted(_));
    let invalid = |what: &str| {
        let literal = if quoted {
            format!("the string \"{text}\"")
        } else {
            format!("\"{text}\"")
        };
        Error::new(
            format!(
                "{literal} is not a valid {what}: {} is of type {}",
                f.name,
                f.ty.describe()
            ),
            v.span.clone(),
        )
    };
    Ok(match f.ty {
        FieldType::Boolean => match text.to_ascii_lowercase().as_str() {
            "1" | "true" => Const::Int(1),
            "0" | "false" => Const::Int(0),
            _ => return Err(invalid("boolean (true, false, 1 or 0)")),
        },
        FieldType::Unsigned(_) | FieldType::Signed(_) | FieldType::FrameNum => {
            let named = f.values.value_of(text).map(i64::from);
            let number = if quoted && !matches!(f.values, Values::None) {
                None
            } else {
                parse_int(text)
            };
            let Some(n) = named.or(number) else {
                return Err(match f.values {
                    Values::None => invalid("integer"),
                    _ => Error::new(
                        format!(
                            "\"{text}\" cannot be found among the possible values for {} (rtype-inspect fields --values lists them)",
                            f.name
                        ),
                        v.span.clone(),
                    ),
                });
            };
            let (low, high) = match f.ty {
                FieldType::Unsigned(bits) => (0, (1i64 << bits) - 1),
                FieldType::Signed(bits) => (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1),
                _ => (0, i64::MAX),
            };
            if relation != Relation::BitAnd && !(low..=high).contains(&n) {
                return Err(Error::new(
                    format!(
                        "{text} is out of range for {} (type={}, {low} to {high})",
                        f.name,
                        f.ty.describe()
                    ),
                    v.span.clone(),
                ));
            }
            Const::Int(n)
        }
        FieldType::Float | FieldType::Double => match text.parse::<f64>() {
            Ok(x) if x.is_finite() && !quoted => Const::Float(x),
            _ => match parse_int(text).filter(|_| !quoted) {
                Some(n) => Const::Float(n as f64),
                None => return Err(invalid("number")),
            },
        },
        FieldType::String => Const::Bytes(text.as_bytes().to_vec()),
        FieldType::Bytes => match (quoted, parse_bytes(text)) {
            (false, Some(bytes)) => Const::Bytes(bytes),
            (true, _) => Const::Bytes(text.as_bytes().to_vec()),
            // As Wireshark: a number of one byte is that byte (`frame[12] == 0x08`).
            (false, None) => match parse_int(text).and_then(|n| u8::try_from(n).ok()) {
                Some(byte) => Const::Bytes(vec![byte]),
                None => return Err(invalid("byte sequence (aa:bb:cc)")),
            },
        },
        FieldType::RelativeTime => match parse_time(text) {
            Some(t) if !quoted => Const::Time(t),
            _ => return Err(invalid("time in seconds")),
        },
        FieldType::Ipv4 | FieldType::Ipv6 => {
            let (addr, prefix) = text.split_once('/').unwrap_or((text, ""));
            let addr: Option<IpAddr> = addr
                .parse()
                .ok()
                .filter(|a: &IpAddr| a.is_ipv4() == (f.ty == FieldType::Ipv4));
            let max = if f.ty == FieldType::Ipv4 { 32 } else { 128 };
            let prefix = if prefix.is_empty() {
                Some(max)
            } else {
                prefix.parse::<u8>().ok().filter(|p| *p <= max)
            };
            match (addr, prefix) {
                (Some(a), Some(p)) => Const::Net(a, p),
                _ => return Err(invalid("address (or network a/n)")),
            }
        }
        FieldType::Protocol | FieldType::None => unreachable!("refused before"),
    })
}

/// An integer as C writes it: decimal, `0x` hex, `0` octal, with an optional minus sign.
pub(super) fn parse_int(text: &str) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let magnitude = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        i64::from_str_radix(hex, 16).ok()?
    } else if digits.len() > 1 && digits.starts_with('0') {
        i64::from_str_radix(&digits[1..], 8).ok()?
    } else if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse().ok()?
    } else {
        return None;
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// Hex bytes separated by `:`, `-` or `.` (`aa:bb:cc`), or written together (`aabbcc`).
fn parse_bytes(text: &str) -> Option<Vec<u8>> {
    let parts: Vec<&str> = if text.contains([':', '-', '.']) {
        text.split([':', '-', '.']).collect()
    } else if text.len() <= 2 {
        vec![text]
    } else if text.len().is_multiple_of(2) {
        (0..text.len())
            .step_by(2)
            .map(|i| &text[i..i + 2])
            .collect()
    } else {
        return None;
    };
    parts
        .iter()
        .map(|p| {
            (p.len() == 2 || p.len() == 1)
                .then(|| u8::from_str_radix(p, 16).ok())
                .flatten()
        })
        .collect()
}

/// Seconds with up to nine decimals, as exact nanoseconds.
pub(super) fn parse_time(text: &str) -> Option<i64> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text),
    };
    let (whole, fraction) = rest.split_once('.').unwrap_or((rest, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
        || fraction.len() > 9
    {
        return None;
    }
    let seconds: i64 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let nanos: i64 = format!("{fraction:0<9}").parse().ok()?;
    let t = seconds.checked_mul(1_000_000_000)?.checked_add(nanos)?;
    Some(if negative { -t } else { t })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals() {
        assert_eq!(parse_int("0x14"), Some(20));
        assert_eq!(parse_int("024"), Some(20));
        assert_eq!(parse_int("-7"), Some(-7));
        assert_eq!(parse_int("0"), Some(0));
        assert_eq!(parse_int("1e1"), None);
        assert_eq!(parse_int("09"), None);
        assert_eq!(parse_bytes("aa:0b:c"), Some(vec![0xAA, 0x0B, 0x0C]));
        assert_eq!(parse_bytes("a35fc81d"), Some(vec![0xA3, 0x5F, 0xC8, 0x1D]));
        assert_eq!(parse_bytes("xyz"), None);
        assert_eq!(parse_time("0.5"), Some(500_000_000));
        assert_eq!(parse_time("-1.000000001"), Some(-1_000_000_001));
        assert_eq!(parse_time("3"), Some(3_000_000_000));
        assert_eq!(parse_time("0.1234567891"), None);
    }
}
