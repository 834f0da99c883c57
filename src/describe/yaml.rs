//! A YAML document as a tree whose every node knows its line and column, built from
//! saphyr-parser's events (a streaming YAML 1.2 parser: no recursion, so no stack to exhaust).
//!
//! A description is hostile input: the text, the nesting and the node count are bounded, and
//! aliases are refused (an alias of an alias of … is the "billion laughs" expansion).

use saphyr_parser::{Event, Parser, ScalarStyle};

/// The largest description read, in bytes.
pub const MAX_BYTES: usize = 1 << 20;
/// The deepest nesting of mappings and sequences.
pub const MAX_DEPTH: usize = 32;
/// The most nodes (scalars, mappings, sequences) in one description.
pub const MAX_NODES: usize = 100_000;

/// Where a node starts: line (1-based) and column (1-based).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pos {
    pub line: u32,
    pub column: u32,
}

#[derive(Debug, Clone)]
pub enum Yaml {
    /// A scalar's text, and whether it was quoted (a quoted `0x10` is a string, not a number).
    Scalar(String, bool),
    Seq(Vec<Node>),
    /// Keys in the file's order (a key given twice is an error when the tree is built).
    Map(Vec<(Node, Node)>),
}

#[derive(Debug, Clone)]
pub struct Node {
    pub pos: Pos,
    pub value: Yaml,
}

/// An error at a position of the text.
#[derive(Debug, PartialEq, Eq)]
pub struct Error {
    pub pos: Pos,
    pub message: String,
}

impl Error {
    pub fn at(pos: Pos, message: impl Into<String>) -> Error {
        Error {
            pos,
            message: message.into(),
        }
    }
}

enum Open {
    Seq(Pos, Vec<Node>),
    /// Entries so far and a key waiting for its value.
    Map(Pos, Vec<(Node, Node)>, Option<Node>),
}

/// Parses one YAML document (a second one is an error).
pub fn parse(text: &str) -> Result<Node, Error> {
    if text.len() > MAX_BYTES {
        return Err(Error::at(
            Pos { line: 1, column: 1 },
            format!(
                "the description is {} bytes; the limit is {MAX_BYTES}",
                text.len()
            ),
        ));
    }
    let mut stack: Vec<Open> = Vec::new();
    let mut root: Option<Node> = None;
    let mut nodes = 0usize;
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|e| {
            let m = e.marker();
            Error::at(
                Pos {
                    line: m.line() as u32,
                    column: m.col() as u32 + 1,
                },
                e.info().to_string(),
            )
        })?;
        let pos = Pos {
            line: span.start.line() as u32,
            column: span.start.col() as u32 + 1,
        };
        let done = match event {
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => None,
            Event::DocumentStart(_) => {
                if root.is_some() {
                    return Err(Error::at(
                        pos,
                        "a description is one YAML document; this is a second",
                    ));
                }
                None
            }
            Event::Alias(_) => {
                return Err(Error::at(
                    pos,
                    "aliases (*name) are not accepted in a description",
                ))
            }
            Event::Scalar(text, style, _, _) => Some(Node {
                pos,
                value: Yaml::Scalar(text.into_owned(), style != ScalarStyle::Plain),
            }),
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(Error::at(
                        pos,
                        format!("nested deeper than {MAX_DEPTH} levels"),
                    ));
                }
                stack.push(match event {
                    Event::SequenceStart(..) => Open::Seq(pos, Vec::new()),
                    _ => Open::Map(pos, Vec::new(), None),
                });
                None
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Open::Seq(pos, items)) => Some(Node {
                    pos,
                    value: Yaml::Seq(items),
                }),
                Some(Open::Map(pos, entries, _)) => Some(Node {
                    pos,
                    value: Yaml::Map(entries),
                }),
                None => None,
            },
        };
        let Some(node) = done else { continue };
        nodes += 1;
        if nodes > MAX_NODES {
            return Err(Error::at(
                node.pos,
                format!("more than {MAX_NODES} YAML nodes"),
            ));
        }
        match stack.last_mut() {
            None => root = Some(node),
            Some(Open::Seq(_, items)) => items.push(node),
            Some(Open::Map(_, entries, key)) => match key.take() {
                None => {
                    if !matches!(node.value, Yaml::Scalar(..)) {
                        return Err(Error::at(node.pos, "a key must be a plain value"));
                    }
                    if let Some((first, _)) = entries.iter().find(|(k, _)| k.same_key(&node)) {
                        return Err(Error::at(
                            node.pos,
                            format!(
                                "`{}` is given twice (first at line {})",
                                node.text().unwrap_or_default(),
                                first.pos.line
                            ),
                        ));
                    }
                    *key = Some(node);
                }
                Some(k) => entries.push((k, node)),
            },
        }
    }
    root.ok_or_else(|| Error::at(Pos { line: 1, column: 1 }, "the description is empty"))
}

impl Node {
    /// A scalar's text.
    pub fn text(&self) -> Option<&str> {
        match &self.value {
            Yaml::Scalar(s, _) => Some(s),
            _ => None,
        }
    }

    fn same_key(&self, other: &Node) -> bool {
        self.text().is_some() && self.text() == other.text()
    }

    /// What the node is, for error messages.
    pub fn kind(&self) -> &'static str {
        match &self.value {
            Yaml::Scalar(..) => "a value",
            Yaml::Seq(_) => "a list",
            Yaml::Map(_) => "a map",
        }
    }

    /// A map's entries.
    pub fn entries(&self) -> Option<&[(Node, Node)]> {
        match &self.value {
            Yaml::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// A list's items.
    pub fn items(&self) -> Option<&[Node]> {
        match &self.value {
            Yaml::Seq(items) => Some(items),
            _ => None,
        }
    }

    /// An unquoted scalar as an integer: decimal, `0x` hex, `0b` binary, with `_` separators
    /// and an optional sign.
    pub fn integer(&self) -> Option<i64> {
        match &self.value {
            Yaml::Scalar(s, false) => parse_integer(s),
            _ => None,
        }
    }

    /// An unquoted scalar as a number (integer or decimal).
    pub fn number(&self) -> Option<f64> {
        match &self.value {
            Yaml::Scalar(s, false) => parse_integer(s)
                .map(|i| i as f64)
                .or_else(|| s.parse::<f64>().ok().filter(|f| f.is_finite())),
            _ => None,
        }
    }
}

/// An integer as a description writes it.
pub fn parse_integer(text: &str) -> Option<i64> {
    let t = text.trim().replace('_', "");
    let (negative, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest.to_string()),
        None => (false, t.strip_prefix('+').unwrap_or(&t).to_string()),
    };
    let magnitude = if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()?
    } else if let Some(bin) = t.strip_prefix("0b") {
        u64::from_str_radix(bin, 2).ok()?
    } else if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        t.parse::<u64>().ok()?
    } else {
        return None;
    };
    let value = i64::try_from(magnitude).ok()?;
    Some(if negative { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_based() {
        let root = parse("a: 1\nb:\n  - x\n  - 0x10\n").unwrap();
        let entries = root.entries().unwrap();
        assert_eq!(entries[1].0.pos, Pos { line: 2, column: 1 });
        let items = entries[1].1.items().unwrap();
        assert_eq!(items[1].pos, Pos { line: 4, column: 5 });
        assert_eq!(items[1].integer(), Some(16));
    }

    #[test]
    fn hostile_shapes_are_errors() {
        let deep = "[".repeat(100) + &"]".repeat(100);
        assert!(parse(&deep).unwrap_err().message.contains("deeper than 32"));
        let alias = "a: &x 1\nb: *x\n";
        assert!(parse(alias).unwrap_err().message.contains("aliases"));
        let twice = "a: 1\na: 2\n";
        let e = parse(twice).unwrap_err();
        assert_eq!(
            (e.pos.line, e.message.as_str()),
            (2, "`a` is given twice (first at line 1)")
        );
        assert!(parse("a: [1, 2").is_err());
        assert!(parse("").is_err());
    }

    #[test]
    fn integers_as_written() {
        assert_eq!(parse_integer("0xA3"), Some(0xA3));
        assert_eq!(parse_integer("-4"), Some(-4));
        assert_eq!(parse_integer("1_000"), Some(1000));
        assert_eq!(parse_integer("0b101"), Some(5));
        assert_eq!(parse_integer("1.5"), None);
        assert_eq!(parse_integer("0xFFFFFFFFFFFFFFFFF"), None);
    }
}
