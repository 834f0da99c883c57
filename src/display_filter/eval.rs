//! Running a compiled filter on a datagram. Nothing is built per datagram: each atom keeps two
//! flags (some occurrence passed, every occurrence passed) and a count, the values it reads are
//! tested as they are met — the pipeline's facts first, then the header and message fields by a
//! walk that asks only for the fields some atom reads — and the expression is then evaluated
//! over the atoms' results.

use std::net::IpAddr;

use super::compile::{Atom, Cmp, Const, Node, Test};
use super::syntax::View;
use crate::message::{Open, Value, Visitor};
use crate::proto::schema::{Field, Group};
use crate::proto::trie::{FieldTrie, ROOT};

/// A value of one occurrence, borrowed where it is text.
#[derive(Clone, Copy, Debug)]
pub(super) enum Val<'a> {
    Int(i64),
    Float(f64),
    Bytes(&'a [u8]),
    Ip(IpAddr),
    Time(i64),
    /// Present, with no value (protocols, expert infos).
    Present,
}

impl<'a> Val<'a> {
    pub fn of(value: Value<'a>) -> Val<'a> {
        match value {
            Value::U(n) => Val::Int(n as i64),
            Value::I(n) => Val::Int(n),
            Value::F(f) => Val::Float(f),
            Value::Str(s) => Val::Bytes(s.as_bytes()),
            Value::Bytes(b) => Val::Bytes(b),
        }
    }
}

/// What an atom has seen of its field so far in this datagram.
#[derive(Clone, Copy, Debug)]
pub(super) struct AtomState {
    seen: bool,
    any: bool,
    all: bool,
}

impl AtomState {
    pub const FRESH: AtomState = AtomState {
        seen: false,
        any: false,
        all: true,
    };
}

impl Atom {
    fn result(&self, s: &AtomState) -> bool {
        match self.test {
            // A slice exists where the value holds all its bytes.
            Test::Exists if self.view != View::Whole => s.any,
            Test::Exists => s.seen,
            _ if self.all => s.seen && s.all,
            _ => s.any,
        }
    }

    /// Whether one occurrence passes the test.
    fn passes(&self, v: Val<'_>) -> bool {
        match (&self.test, v) {
            (Test::Exists, _) => true,
            (Test::Cmp(cmp, c), v) => compare(v, c).is_some_and(|o| match cmp {
                Cmp::Eq => o.is_eq(),
                Cmp::Ne => o.is_ne(),
                Cmp::Lt => o.is_lt(),
                Cmp::Le => o.is_le(),
                Cmp::Gt => o.is_gt(),
                Cmp::Ge => o.is_ge(),
            }),
            (Test::In(ranges), v) => in_ranges(v, ranges),
            (Test::NotIn(ranges), v) => !in_ranges(v, ranges),
            (Test::Contains(needle), Val::Bytes(b)) => {
                needle.is_empty() || b.windows(needle.len()).any(|w| w == needle.as_slice())
            }
            (Test::Matches(regex), Val::Bytes(b)) => regex.is_match(b),
            (Test::BitAnd(mask), Val::Int(n)) => n & mask != 0,
            _ => false,
        }
    }
}

/// What a test with `view` reads of `v`: its length, or the slice of its bytes when they are
/// all there.
fn viewed(view: View, v: Val<'_>) -> Option<Val<'_>> {
    match (view, v) {
        (View::Len, Val::Bytes(b)) => Some(Val::Int(b.len() as i64)),
        (View::Slice { start, end }, Val::Bytes(b)) => {
            View::range(start, end, b.len()).map(|r| Val::Bytes(&b[r]))
        }
        _ => None,
    }
}

fn in_ranges(v: Val<'_>, ranges: &[(Const, Const)]) -> bool {
    ranges.iter().any(|(low, high)| {
        compare(v, low).is_some_and(|o| o.is_ge()) && compare(v, high).is_some_and(|o| o.is_le())
    })
}

/// How a value compares with a constant of its field's type (an address: equal when in the
/// network, never less or greater).
fn compare(v: Val<'_>, c: &Const) -> Option<std::cmp::Ordering> {
    use std::cmp::Ordering;
    match (v, c) {
        (Val::Int(a), Const::Int(b)) => Some(a.cmp(b)),
        (Val::Float(a), Const::Float(b)) => a.partial_cmp(b),
        (Val::Bytes(a), Const::Bytes(b)) => Some(a.cmp(b.as_slice())),
        (Val::Time(a), Const::Time(b)) => Some(a.cmp(b)),
        (Val::Ip(a), Const::Net(net, prefix)) => Some(if in_network(a, *net, *prefix) {
            Ordering::Equal
        } else {
            Ordering::Less
        }),
        _ => None,
    }
}

fn in_network(a: IpAddr, net: IpAddr, prefix: u8) -> bool {
    match (a, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// The atoms' states in one datagram and, when a caller wants the fields' values (`-T fields`),
/// each occurrence's value as text.
#[derive(Clone)]
pub(super) struct States {
    pub of: Vec<AtomState>,
    /// How each atom's values are written, when they are kept.
    shown: Option<Vec<Shown>>,
    /// The values, in the order they were met: (atom, its text in `text`).
    pub values: Vec<(usize, std::ops::Range<usize>)>,
    pub text: String,
}

/// How a value is written for `-T fields`, as tshark writes it.
#[derive(Clone, Copy, Debug)]
pub(super) enum Shown {
    Decimal,
    /// `0x` and this many lower-case hex digits (a `base.HEX` field).
    Hex(usize),
    /// Bytes as text (a string field).
    Text,
    /// Bytes as lower-case hex pairs.
    HexBytes,
    /// C's `%.Ng`: a float (N = 6, FLT_DIG) or a double (15, DBL_DIG), as Wireshark prints them.
    Float(usize),
    /// Nothing: a protocol (tshark writes its tree item's text, which the filter does not know).
    Nothing,
}

impl States {
    pub fn new(atoms: usize) -> States {
        States {
            of: vec![AtomState::FRESH; atoms],
            shown: None,
            values: Vec::new(),
            text: String::new(),
        }
    }

    /// Keeps the values met from now on, written as `shown` says (one per atom).
    pub fn keep_values(&mut self, shown: Vec<Shown>) {
        self.shown = Some(shown);
    }

    pub fn reset(&mut self) {
        self.of.fill(AtomState::FRESH);
        self.values.clear();
        self.text.clear();
    }

    /// Gives one occurrence to atom `a`.
    #[inline]
    pub fn feed(&mut self, atoms: &[Atom], a: usize, v: Val<'_>) {
        let (atom, state) = (&atoms[a], &mut self.of[a]);
        let pass = match atom.view {
            View::Whole => atom.passes(v),
            view => viewed(view, v).is_some_and(|v| atom.passes(v)),
        };
        state.seen = true;
        state.any |= pass;
        state.all &= pass;
        if let Some(shown) = &self.shown {
            let start = self.text.len();
            write_value(&mut self.text, v, shown[a]);
            self.values.push((a, start..self.text.len()));
        }
    }
}

/// Writes `v` as tshark's `-T fields` does.
fn write_value(out: &mut String, v: Val<'_>, shown: Shown) {
    use std::fmt::Write as _;
    let _ = match (v, shown) {
        (_, Shown::Nothing) => Ok(()),
        (Val::Int(n), Shown::Hex(digits)) => write!(out, "0x{n:0digits$x}"),
        (Val::Int(n), _) => write!(out, "{n}"),
        (Val::Float(f), Shown::Float(digits)) => {
            crate::number::write_g(out, f, digits);
            Ok(())
        }
        (Val::Float(f), _) => write!(out, "{f}"),
        (Val::Bytes(b), Shown::Text) => {
            out.push_str(&String::from_utf8_lossy(b));
            Ok(())
        }
        (Val::Bytes(b), _) => b.iter().try_for_each(|x| write!(out, "{x:02x}")),
        (Val::Ip(ip), _) => write!(out, "{ip}"),
        (Val::Time(t), _) => {
            let sign = if t < 0 { "-" } else { "" };
            let t = t.unsigned_abs();
            write!(out, "{sign}{}.{:09}", t / 1_000_000_000, t % 1_000_000_000)
        }
        (Val::Present, _) => Ok(()),
    };
}

/// The expression's value over the atoms' results.
pub(super) fn evaluate(node: &Node, atoms: &[Atom], states: &[AtomState]) -> bool {
    match node {
        Node::Atom(i) => atoms[*i].result(&states[*i]),
        Node::Not(a) => !evaluate(a, atoms, states),
        Node::And(a, b) => evaluate(a, atoms, states) && evaluate(b, atoms, states),
        Node::Or(a, b) => evaluate(a, atoms, states) || evaluate(b, atoms, states),
    }
}

/// How a described value becomes the value of the field an atom reads.
#[derive(Clone, Copy, Debug)]
pub(super) enum Transform {
    Same,
    /// Bits of it: a flag, or a small number shifted down.
    Bits {
        mask: i64,
        shift: u32,
        flag: bool,
    },
    /// The raw integer of a value shown divided.
    Raw {
        divisor: f64,
    },
}

impl Transform {
    pub fn apply<'a>(self, v: Val<'a>) -> Val<'a> {
        match (self, v) {
            (Transform::Same, v) => v,
            (Transform::Bits { mask, shift, flag }, Val::Int(n)) => {
                let bits = n & mask;
                Val::Int(if flag {
                    i64::from(bits != 0)
                } else {
                    bits >> shift
                })
            }
            (Transform::Raw { divisor }, Val::Float(f)) => Val::Int((f * divisor).round() as i64),
            (_, v) => v,
        }
    }
}

/// An atom fed by a field, through a transform.
#[derive(Clone, Copy, Debug)]
pub(super) struct Feed {
    pub atom: usize,
    pub transform: Transform,
}

/// The fields of one scope (a header, a message, the reassembled snapshot) the atoms read, by
/// the repeats and switch cases they sit in, with the atoms each feeds.
pub(super) type Trie = FieldTrie<Vec<Feed>>;

/// The visitor of a filter's walk: follows the groups down the trie and feeds the atoms.
pub(super) struct Collector<'a> {
    pub trie: &'a Trie,
    /// The trie node of each open group (reused across walks).
    pub stack: &'a mut Vec<usize>,
    pub atoms: &'a [Atom],
    pub states: &'a mut States,
    /// The atoms reading the scope's undecoded bytes.
    pub undecoded: &'a [usize],
}

impl Collector<'_> {
    fn at(&self) -> usize {
        self.stack.last().copied().unwrap_or(ROOT)
    }
}

impl Visitor for Collector<'_> {
    fn wants(&self, field: &'static Field) -> bool {
        self.trie.get(self.at(), field).is_some()
    }

    fn field(&mut self, field: &'static Field, _at: usize, _len: usize, value: Value<'_>) {
        if let Some(feeds) = self.trie.get(self.at(), field) {
            let v = Val::of(value);
            for f in feeds {
                self.states.feed(self.atoms, f.atom, f.transform.apply(v));
            }
        }
    }

    fn open(&mut self, group: &'static Group, how: Open, _at: usize) {
        let at = self.at();
        let next = match how {
            // A repeat's items are under its list's segment, as the dissector names them.
            Open::Item { .. } => at,
            Open::List { .. } | Open::Case => self.trie.child(at, group.filter),
        };
        self.stack.push(next);
    }

    fn close(&mut self, _how: Open) {
        self.stack.pop();
    }

    fn undecoded(&mut self, _at: usize, bytes: &[u8]) {
        for &a in self.undecoded {
            self.states.feed(self.atoms, a, Val::Bytes(bytes));
        }
    }
}
