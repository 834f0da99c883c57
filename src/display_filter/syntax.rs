//! Wireshark's display-filter syntax, the part our fields need: the lexer and a recursive-descent
//! parser into an expression tree whose every part knows its place in the text, for errors.
//!
//! Precedence, loosest first: `||` (`or`), `&&` (`and`), `!` (`not`), then a test: a field alone
//! (presence), or a field, a relation and a value; `any` / `all` before a field quantify over its
//! occurrences. Values are quoted strings, or unquoted literals (numbers, addresses, byte
//! strings, value-string names) whose meaning the field's type decides; sets are `{a, b, c..d}`.

use std::ops::Range;

/// A place in the filter text (byte offsets).
pub type Span = Range<usize>;

/// A syntax or meaning error at a place in the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub message: String,
    pub span: Span,
}

impl Error {
    pub fn new(message: impl Into<String>, span: Span) -> Error {
        Error {
            message: message.into(),
            span,
        }
    }
}

/// A relation between a field and a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relation {
    /// `==`, `eq`, `any_eq`: some occurrence equals.
    Eq,
    /// `!=`, `ne`, `all_ne`: the field is there and no occurrence equals (Wireshark 4's `!=`).
    AllNe,
    /// `===`, `all_eq`: every occurrence equals.
    AllEq,
    /// `!==`, `~=`, `any_ne`: some occurrence differs.
    AnyNe,
    Lt,
    Le,
    Gt,
    Ge,
    Contains,
    Matches,
    /// `&`: some occurrence has a bit of the mask set.
    BitAnd,
    In,
    NotIn,
}

/// `any` or `all` before a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantifier {
    Any,
    All,
}

/// A value as written.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// A quoted string, unescaped.
    Quoted(String),
    /// An unquoted literal, as written.
    Bare(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    pub literal: Literal,
    pub span: Span,
}

/// A set member: one value or an inclusive range.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    pub low: Value,
    pub high: Option<Value>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Rhs {
    Value(Value),
    Set(Vec<Member>),
}

/// A field as written: its name, where, and what of its value a test reads.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldRef {
    pub name: String,
    pub span: Span,
    pub view: View,
}

/// What of a field's value a test reads: the value, its length in bytes (`len(f)`), or a slice
/// of its bytes, as Wireshark writes them: `f[i:n]` (n bytes from offset i), `f[i-j]` (offsets i
/// to j), `f[i]`, `f[i:]`, `f[:n]`; a negative offset counts from the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Whole,
    Len,
    Slice { start: i64, end: SliceEnd },
}

/// Where a slice ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceEnd {
    /// After this many bytes.
    Length(i64),
    /// At this offset, included.
    Through(i64),
    /// At the value's end.
    ToEnd,
}

impl View {
    /// The bytes a slice takes of a value `len` bytes long, when they are all in it.
    pub fn range(start: i64, end: SliceEnd, len: usize) -> Option<std::ops::Range<usize>> {
        let len = i64::try_from(len).ok()?;
        let at = |offset: i64| if offset < 0 { len + offset } else { offset };
        let first = at(start);
        let last = match end {
            SliceEnd::Length(n) => first.checked_add(n)?,
            SliceEnd::Through(offset) => at(offset).checked_add(1)?,
            SliceEnd::ToEnd => len,
        };
        (0 <= first && first <= last && last <= len).then_some(first as usize..last as usize)
    }

    /// Parses the inside of `[...]`: one range, as Wireshark writes it.
    fn slice(text: &str) -> Option<View> {
        let int = |t: &str| super::compile::parse_int(t);
        let (start, end) = if let Some((i, n)) = text.split_once(':') {
            let start = if i.is_empty() { 0 } else { int(i)? };
            let end = if n.is_empty() {
                SliceEnd::ToEnd
            } else {
                SliceEnd::Length(int(n).filter(|n| *n >= 0)?)
            };
            (start, end)
        } else if let Some(dash) = text[1.min(text.len())..].find('-') {
            // `i-j`; the first character may be a minus sign (`-3--1`).
            let (i, j) = text.split_at(dash + 1);
            (int(i)?, SliceEnd::Through(int(&j[1..])?))
        } else {
            (int(text)?, SliceEnd::Length(1))
        };
        Some(View::Slice { start, end })
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Or(Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    /// The field is present.
    Exists(FieldRef),
    Test {
        quantifier: Option<(Quantifier, Span)>,
        field: FieldRef,
        relation: Relation,
        relation_span: Span,
        rhs: Rhs,
    },
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    /// An unquoted word: a field name, a keyword or a literal.
    Word(String),
    Quoted(String),
    /// `==`, `&&`, `(`, `{`, `..`, ...
    Punct(&'static str),
    End,
}

/// Characters of unquoted words: field names (`rtype.crc.mismatch`), numbers (`-1.5`, `0x14`),
/// addresses (`10.0.0.0/8`, `fe80::1`), byte strings (`aa:bb`).
fn word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '/')
}

const PUNCTS: &[&str] = &[
    "===", "!==", "==", "!=", "~=", "<=", ">=", "&&", "||", "..", "<", ">", "!", "~", "&", "(",
    ")", "{", "}", ",", "[", "]",
];

struct Lexer<'a> {
    text: &'a str,
    pos: usize,
}

impl Lexer<'_> {
    fn next(&mut self) -> Result<(Token, Span), Error> {
        let rest = &self.text[self.pos..];
        let trimmed = rest.trim_start();
        self.pos += rest.len() - trimmed.len();
        let start = self.pos;
        let Some(c) = trimmed.chars().next() else {
            return Ok((Token::End, start..start));
        };
        if c == '"' {
            return self.quoted();
        }
        if word_char(c) && !trimmed.starts_with("..") {
            let mut end = start;
            let bytes = self.text.as_bytes();
            while end < self.text.len() {
                let ch = bytes[end] as char;
                // `100..200`: a range, not a word.
                if !word_char(ch) || (ch == '.' && bytes.get(end + 1) == Some(&b'.')) {
                    break;
                }
                end += 1;
            }
            self.pos = end;
            return Ok((Token::Word(self.text[start..end].to_string()), start..end));
        }
        for p in PUNCTS {
            if trimmed.starts_with(p) {
                self.pos += p.len();
                return Ok((Token::Punct(p), start..self.pos));
            }
        }
        let end = start + c.len_utf8();
        Err(Error::new(
            format!("\"{c}\" was unexpected in this context"),
            start..end,
        ))
    }

    /// A double-quoted string with C escapes (`\"`, `\\`, `\n`, `\t`, `\xhh`).
    fn quoted(&mut self) -> Result<(Token, Span), Error> {
        let start = self.pos;
        let mut out = String::new();
        let mut chars = self.text[start + 1..].char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.pos = start + 1 + i + 1;
                    return Ok((Token::Quoted(out), start..self.pos));
                }
                '\\' => match chars.next() {
                    Some((_, 'n')) => out.push('\n'),
                    Some((_, 't')) => out.push('\t'),
                    Some((_, 'r')) => out.push('\r'),
                    Some((_, '0')) => out.push('\0'),
                    Some((j, 'x')) => {
                        let hex = self.text.get(start + 2 + j..start + 4 + j);
                        match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                            Some(b) if b.is_ascii() => {
                                out.push(b as char);
                                chars.next();
                                chars.next();
                            }
                            _ => {
                                let at = start + 1 + j - 1;
                                return Err(Error::new(
                                    "\\x needs two hex digits of an ASCII character",
                                    at..at + 2,
                                ));
                            }
                        }
                    }
                    Some((_, other)) => out.push(other),
                    None => break,
                },
                c => out.push(c),
            }
        }
        Err(Error::new(
            "the string has no closing quote",
            start..self.text.len(),
        ))
    }
}

/// Parses a display filter.
pub fn parse(text: &str) -> Result<Expr, Error> {
    let mut lexer = Lexer { text, pos: 0 };
    let mut tokens = Vec::new();
    loop {
        let (token, span) = lexer.next()?;
        let end = token == Token::End;
        tokens.push((token, span));
        if end {
            break;
        }
    }
    let mut p = Parser {
        tokens,
        at: 0,
        depth: 0,
        tests: 0,
    };
    if p.peek() == &Token::End {
        return Err(Error::new("the filter is empty", 0..0));
    }
    let expr = p.or()?;
    match p.peek() {
        Token::End => Ok(expr),
        Token::Punct(")") => Err(Error::new("unbalanced parenthesis", p.span())),
        _ => Err(p.unexpected()),
    }
}

/// Nesting (parentheses and negations) and tests a filter may have: the parser, the compiler and
/// the evaluation recurse over the expression, and a filter is typed by a person.
const MAX_DEPTH: usize = 64;
const MAX_TESTS: usize = 1024;

struct Parser {
    tokens: Vec<(Token, Span)>,
    at: usize,
    depth: usize,
    tests: usize,
}

impl Parser {
    fn peek(&self) -> &Token {
        &self.tokens[self.at].0
    }
    fn span(&self) -> Span {
        self.tokens[self.at].1.clone()
    }
    fn bump(&mut self) -> (Token, Span) {
        let t = self.tokens[self.at].clone();
        if self.at + 1 < self.tokens.len() {
            self.at += 1;
        }
        t
    }
    fn is_word(&self, words: &[&str]) -> bool {
        matches!(self.peek(), Token::Word(w) if words.contains(&w.as_str()))
    }
    fn is_punct(&self, puncts: &[&str]) -> bool {
        matches!(self.peek(), Token::Punct(p) if puncts.contains(p))
    }
    fn unexpected(&self) -> Error {
        match self.peek() {
            Token::End => Error::new("unexpected end of filter expression", self.span()),
            Token::Word(w) => Error::new(
                format!("\"{w}\" was unexpected in this context"),
                self.span(),
            ),
            Token::Quoted(s) => Error::new(
                format!("\"{s}\" was unexpected in this context"),
                self.span(),
            ),
            Token::Punct(p) => Error::new(
                format!("\"{p}\" was unexpected in this context"),
                self.span(),
            ),
        }
    }

    fn or(&mut self) -> Result<Expr, Error> {
        let mut left = self.and()?;
        while self.is_punct(&["||"]) || self.is_word(&["or"]) {
            self.bump();
            let right = self.and()?;
            left = Expr::Or(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, Error> {
        let mut left = self.not()?;
        while self.is_punct(&["&&"]) || self.is_word(&["and"]) {
            self.bump();
            let right = self.not()?;
            left = Expr::And(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<Expr, Error> {
        if self.is_punct(&["!"]) || self.is_word(&["not"]) {
            let span = self.bump().1;
            self.deeper(span)?;
            let inner = self.not()?;
            self.depth -= 1;
            return Ok(Expr::Not(Box::new(inner)));
        }
        self.test()
    }

    fn deeper(&mut self, span: Span) -> Result<(), Error> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::new(
                format!("the filter nests deeper than {MAX_DEPTH} levels"),
                span,
            ));
        }
        Ok(())
    }

    fn test(&mut self) -> Result<Expr, Error> {
        if self.is_punct(&["("]) {
            let open = self.bump().1;
            self.deeper(open.clone())?;
            let inner = self.or()?;
            self.depth -= 1;
            if !self.is_punct(&[")"]) {
                return Err(match self.peek() {
                    Token::End => Error::new("unbalanced parenthesis", open),
                    _ => self.unexpected(),
                });
            }
            self.bump();
            return Ok(inner);
        }
        self.tests += 1;
        if self.tests > MAX_TESTS {
            return Err(Error::new(
                format!("the filter has more than {MAX_TESTS} tests"),
                self.span(),
            ));
        }
        let quantifier = if self.is_word(&["any", "all"]) {
            let (token, span) = self.bump();
            let q = match token {
                Token::Word(w) if w == "all" => Quantifier::All,
                _ => Quantifier::Any,
            };
            Some((q, span))
        } else {
            None
        };
        let field = match self.peek().clone() {
            Token::Word(name)
                if name == "len" && matches!(self.tokens[self.at + 1].0, Token::Punct("(")) =>
            {
                self.len()?
            }
            Token::Word(name) if !is_keyword(&name) => {
                let span = self.bump().1;
                let view = self.slice()?;
                FieldRef { name, span, view }
            }
            Token::Quoted(s) => {
                return Err(Error::new(
                    format!("\"{s}\" is a value: a test starts with a field"),
                    self.span(),
                ))
            }
            _ => return Err(self.unexpected()),
        };
        let Some((relation, relation_span)) = self.relation() else {
            if let Some((_, span)) = quantifier {
                return Err(Error::new(
                    "a quantifier needs a relation (e.g. all f > 1)",
                    span,
                ));
            }
            if field.view == View::Len {
                return Err(Error::new(
                    "len() needs a relation (e.g. len(rtype.payload) > 10)",
                    field.span,
                ));
            }
            return Ok(Expr::Exists(field));
        };
        let rhs = if matches!(relation, Relation::In | Relation::NotIn) {
            Rhs::Set(self.set()?)
        } else {
            Rhs::Value(self.value()?)
        };
        Ok(Expr::Test {
            quantifier,
            field,
            relation,
            relation_span,
            rhs,
        })
    }

    /// `len(field)`, the `len` word next.
    fn len(&mut self) -> Result<FieldRef, Error> {
        let start = self.bump().1.start;
        self.bump();
        let Token::Word(name) = self.peek().clone() else {
            return Err(Error::new(
                "len() takes a field: len(rtype.payload)",
                self.span(),
            ));
        };
        self.bump();
        if !self.is_punct(&[")"]) {
            return Err(Error::new(
                "len() takes one field and a closing parenthesis",
                self.span(),
            ));
        }
        let end = self.bump().1.end;
        Ok(FieldRef {
            name,
            span: start..end,
            view: View::Len,
        })
    }

    /// A slice after a field name (`[0:4]`), if there is one.
    fn slice(&mut self) -> Result<View, Error> {
        if !self.is_punct(&["["]) {
            return Ok(View::Whole);
        }
        let open = self.bump().1;
        let inside = match self.peek().clone() {
            Token::Word(w) => Some((w, self.bump().1)),
            _ => None,
        };
        let view = inside.as_ref().and_then(|(w, _)| View::slice(w));
        if !self.is_punct(&["]"]) || view.is_none() {
            let span = inside.map_or(open.clone(), |(_, s)| s);
            return Err(Error::new(
                "a slice is one range: [i:n], [i-j], [i], [i:] or [:n] (bytes; negative offsets count from the end)",
                span,
            ));
        }
        self.bump();
        Ok(view.unwrap_or(View::Whole))
    }

    fn relation(&mut self) -> Option<(Relation, Span)> {
        let relation = match self.peek() {
            Token::Punct(p) => match *p {
                "==" => Relation::Eq,
                "!=" => Relation::AllNe,
                "===" => Relation::AllEq,
                "!==" | "~=" => Relation::AnyNe,
                "<" => Relation::Lt,
                "<=" => Relation::Le,
                ">" => Relation::Gt,
                ">=" => Relation::Ge,
                "~" => Relation::Matches,
                "&" => Relation::BitAnd,
                _ => return None,
            },
            Token::Word(w) => match w.as_str() {
                "eq" | "any_eq" => Relation::Eq,
                "ne" | "all_ne" => Relation::AllNe,
                "all_eq" => Relation::AllEq,
                "any_ne" => Relation::AnyNe,
                "lt" => Relation::Lt,
                "le" => Relation::Le,
                "gt" => Relation::Gt,
                "ge" => Relation::Ge,
                "contains" => Relation::Contains,
                "matches" => Relation::Matches,
                "in" => Relation::In,
                "not" if matches!(&self.tokens[self.at + 1].0, Token::Word(w) if w == "in") => {
                    let start = self.bump().1.start;
                    let end = self.bump().1.end;
                    return Some((Relation::NotIn, start..end));
                }
                _ => return None,
            },
            _ => return None,
        };
        Some((relation, self.bump().1))
    }

    fn value(&mut self) -> Result<Value, Error> {
        let literal = match self.peek().clone() {
            Token::Quoted(s) => Literal::Quoted(s),
            Token::Word(w) if !is_keyword(&w) => Literal::Bare(w),
            _ => return Err(self.unexpected()),
        };
        Ok(Value {
            literal,
            span: self.bump().1,
        })
    }

    fn set(&mut self) -> Result<Vec<Member>, Error> {
        if !self.is_punct(&["{"]) {
            return Err(Error::new(
                "a set is written {a, b, c} or {low..high}",
                self.span(),
            ));
        }
        self.bump();
        let mut members = Vec::new();
        loop {
            let low = self.value()?;
            let high = if self.is_punct(&[".."]) {
                self.bump();
                Some(self.value()?)
            } else {
                None
            };
            members.push(Member { low, high });
            if self.is_punct(&[","]) {
                self.bump();
            } else if self.is_punct(&["}"]) {
                self.bump();
                return Ok(members);
            } else if matches!(self.peek(), Token::Word(_) | Token::Quoted(_)) {
                return Err(Error::new(
                    "set members are separated by commas",
                    self.span(),
                ));
            } else {
                return Err(self.unexpected());
            }
        }
    }
}

/// Words that are operators, never fields or values.
fn is_keyword(word: &str) -> bool {
    matches!(
        word,
        "and"
            | "or"
            | "not"
            | "in"
            | "eq"
            | "ne"
            | "lt"
            | "le"
            | "gt"
            | "ge"
            | "contains"
            | "matches"
            | "any_eq"
            | "all_eq"
            | "any_ne"
            | "all_ne"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, start: usize) -> FieldRef {
        FieldRef {
            view: View::Whole,
            name: name.into(),
            span: start..start + name.len(),
        }
    }

    #[test]
    fn precedence_and_quantifiers() {
        let e = parse("a || b && !c").unwrap();
        assert_eq!(
            e,
            Expr::Or(
                Box::new(Expr::Exists(field("a", 0))),
                Box::new(Expr::And(
                    Box::new(Expr::Exists(field("b", 5))),
                    Box::new(Expr::Not(Box::new(Expr::Exists(field("c", 11)))))
                ))
            )
        );
        let Expr::Test {
            quantifier,
            relation,
            rhs,
            ..
        } = parse("all x.y not in {1, 0x10..0x20}").unwrap()
        else {
            panic!()
        };
        assert_eq!(quantifier.map(|q| q.0), Some(Quantifier::All));
        assert_eq!(relation, Relation::NotIn);
        let Rhs::Set(members) = rhs else { panic!() };
        assert_eq!(members.len(), 2);
        assert_eq!(
            members[1].high.as_ref().unwrap().literal,
            Literal::Bare("0x20".into())
        );
    }

    #[test]
    fn ranges_split_words_and_strings_unescape() {
        let Expr::Test { rhs, .. } = parse("t in {1.5..2}").unwrap() else {
            panic!()
        };
        let Rhs::Set(m) = rhs else { panic!() };
        assert_eq!(m[0].low.literal, Literal::Bare("1.5".into()));
        let Expr::Test { rhs, .. } = parse(r#"s == "a\"b\x41""#).unwrap() else {
            panic!()
        };
        assert_eq!(
            rhs,
            Rhs::Value(Value {
                literal: Literal::Quoted("a\"bA".into()),
                span: 5..15
            })
        );
    }

    const SLICE: &str = "a slice is one range: [i:n], [i-j], [i], [i:] or [:n] (bytes; negative offsets count from the end)";

    #[test]
    fn slices_and_len_read_as_wireshark_writes_them() {
        let view = |text: &str| match parse(text).unwrap() {
            Expr::Exists(f) | Expr::Test { field: f, .. } => f.view,
            other => panic!("{other:?}"),
        };
        let slice = |start, end| View::Slice { start, end };
        assert_eq!(view("a"), View::Whole);
        assert_eq!(view("len(a) > 3"), View::Len);
        assert_eq!(view("a[1:2] == 01:02"), slice(1, SliceEnd::Length(2)));
        assert_eq!(view("a[1-2]"), slice(1, SliceEnd::Through(2)));
        assert_eq!(view("a[-3--1]"), slice(-3, SliceEnd::Through(-1)));
        assert_eq!(view("a[3]"), slice(3, SliceEnd::Length(1)));
        assert_eq!(view("a[2:]"), slice(2, SliceEnd::ToEnd));
        assert_eq!(view("a[:2]"), slice(0, SliceEnd::Length(2)));
        assert_eq!(view("a[-2:]"), slice(-2, SliceEnd::ToEnd));
        // The bytes each takes of a 5-byte value; none past its end.
        let range = |start, end| View::range(start, end, 5);
        assert_eq!(range(1, SliceEnd::Length(2)), Some(1..3));
        assert_eq!(range(1, SliceEnd::Through(2)), Some(1..3));
        assert_eq!(range(-3, SliceEnd::Through(-1)), Some(2..5));
        assert_eq!(range(-2, SliceEnd::ToEnd), Some(3..5));
        assert_eq!(range(5, SliceEnd::ToEnd), Some(5..5));
        assert_eq!(range(4, SliceEnd::Length(2)), None);
        assert_eq!(range(-6, SliceEnd::ToEnd), None);
        assert_eq!(range(3, SliceEnd::Through(1)), None);
        assert_eq!(range(0, SliceEnd::Length(i64::MAX)), None);
    }

    #[test]
    fn errors_point_at_the_problem() {
        for (text, message, span) in [
            ("", "the filter is empty", 0..0),
            ("a ==", "unexpected end of filter expression", 4..4),
            ("a == 1 b", "\"b\" was unexpected in this context", 7..8),
            ("(a == 1", "unbalanced parenthesis", 0..1),
            ("a == 1)", "unbalanced parenthesis", 6..7),
            ("a in {1 2}", "set members are separated by commas", 8..9),
            ("a == \"x", "the string has no closing quote", 5..7),
            ("a $ 1", "\"$\" was unexpected in this context", 2..3),
            (
                "all a",
                "a quantifier needs a relation (e.g. all f > 1)",
                0..3,
            ),
            ("a[1:2:3] == 1", SLICE, 2..7),
            ("a[x] == 1", SLICE, 2..3),
            ("a[] == 1", SLICE, 1..2),
            (
                "len(a)",
                "len() needs a relation (e.g. len(rtype.payload) > 10)",
                0..6,
            ),
            (
                "len(a b",
                "len() takes one field and a closing parenthesis",
                6..7,
            ),
        ] {
            assert_eq!(parse(text), Err(Error::new(message, span)), "{text}");
        }
    }
}
