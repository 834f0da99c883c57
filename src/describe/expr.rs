//! The integer expressions of `if`, `size` and `repeat-expr`: Kaitai's syntax, restricted to
//! integers and to the fields read before. Parsed once when the description loads; evaluated
//! per datagram over the values read so far.

/// The longest expression, in characters.
pub const MAX_LEN: usize = 256;
/// The deepest nesting of an expression.
const MAX_DEPTH: usize = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LogicAnd,
    LogicOr,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Num(i64),
    /// A field read before, by its interned name.
    Var(u16),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Bin(Op, Box<Expr>, Box<Expr>),
}

/// Parses `text`; `name` interns a field name (and says whether one is known by it).
pub fn parse(
    text: &str,
    name: &mut dyn FnMut(&str) -> Result<u16, String>,
) -> Result<Expr, String> {
    if text.len() > MAX_LEN {
        return Err(format!(
            "the expression is longer than {MAX_LEN} characters"
        ));
    }
    let tokens = tokens(text)?;
    let mut p = ExprParser {
        tokens,
        at: 0,
        name,
        depth: 0,
    };
    let e = p.binary(0)?;
    match p.tokens.get(p.at) {
        None => Ok(e),
        Some(t) => Err(format!("unexpected `{}` in `{text}`", t.text())),
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Num(i64),
    Ident(String),
    Sym(&'static str),
}

impl Token {
    fn text(&self) -> String {
        match self {
            Token::Num(n) => n.to_string(),
            Token::Ident(s) => s.clone(),
            Token::Sym(s) => (*s).to_string(),
        }
    }
}

const SYMBOLS: &[&str] = &[
    "<<", ">>", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "&", "|", "^", "<", ">", "(", ")",
];

fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let n = super::yaml::parse_integer(&text[start..i])
                .ok_or_else(|| format!("`{}` is not an integer", &text[start..i]))?;
            out.push(Token::Num(n));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(Token::Ident(text[start..i].to_string()));
        } else if let Some(sym) = SYMBOLS.iter().find(|s| text[i..].starts_with(**s)) {
            out.push(Token::Sym(sym));
            i += sym.len();
        } else {
            let ch = text[i..].chars().next().unwrap_or('?');
            return Err(format!("`{ch}` is not part of an expression"));
        }
    }
    Ok(out)
}

struct ExprParser<'n> {
    tokens: Vec<Token>,
    at: usize,
    name: &'n mut dyn FnMut(&str) -> Result<u16, String>,
    depth: usize,
}

/// Binary operators by precedence, loosest first (Kaitai's, as in C without the assignments).
fn binary_op(t: &Token) -> Option<(u8, Op)> {
    Some(match t {
        Token::Ident(s) if s == "or" => (1, Op::LogicOr),
        Token::Ident(s) if s == "and" => (2, Op::LogicAnd),
        Token::Sym("|") => (3, Op::Or),
        Token::Sym("^") => (4, Op::Xor),
        Token::Sym("&") => (5, Op::And),
        Token::Sym("==") => (6, Op::Eq),
        Token::Sym("!=") => (6, Op::Ne),
        Token::Sym("<") => (7, Op::Lt),
        Token::Sym("<=") => (7, Op::Le),
        Token::Sym(">") => (7, Op::Gt),
        Token::Sym(">=") => (7, Op::Ge),
        Token::Sym("<<") => (8, Op::Shl),
        Token::Sym(">>") => (8, Op::Shr),
        Token::Sym("+") => (9, Op::Add),
        Token::Sym("-") => (9, Op::Sub),
        Token::Sym("*") => (10, Op::Mul),
        Token::Sym("/") => (10, Op::Div),
        Token::Sym("%") => (10, Op::Rem),
        _ => return None,
    })
}

impl ExprParser<'_> {
    fn binary(&mut self, min: u8) -> Result<Expr, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!("the expression nests deeper than {MAX_DEPTH}"));
        }
        let mut left = self.unary()?;
        while let Some((prec, op)) = self.tokens.get(self.at).and_then(binary_op) {
            if prec <= min {
                break;
            }
            self.at += 1;
            let right = self.binary(prec)?;
            left = Expr::Bin(op, Box::new(left), Box::new(right));
        }
        self.depth -= 1;
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, String> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        match token {
            None => Err("the expression ends too soon".into()),
            Some(Token::Num(n)) => Ok(Expr::Num(n)),
            Some(Token::Sym("-")) => Ok(Expr::Neg(Box::new(self.nested_unary()?))),
            Some(Token::Ident(s)) if s == "not" => Ok(Expr::Not(Box::new(self.nested_unary()?))),
            Some(Token::Ident(s)) if s == "true" => Ok(Expr::Num(1)),
            Some(Token::Ident(s)) if s == "false" => Ok(Expr::Num(0)),
            Some(Token::Ident(s)) => Ok(Expr::Var((self.name)(&s)?)),
            Some(Token::Sym("(")) => {
                let e = self.binary(0)?;
                match self.tokens.get(self.at) {
                    Some(Token::Sym(")")) => {
                        self.at += 1;
                        Ok(e)
                    }
                    _ => Err("a `(` is not closed".into()),
                }
            }
            Some(t) => Err(format!("unexpected `{}`", t.text())),
        }
    }

    fn nested_unary(&mut self) -> Result<Expr, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!("the expression nests deeper than {MAX_DEPTH}"));
        }
        let e = self.unary();
        self.depth -= 1;
        e
    }
}

impl Expr {
    /// The value, with `var` giving each field's (`None`: not read, which makes the whole
    /// expression unknown). Arithmetic wraps; division by zero is unknown.
    pub fn eval(&self, var: &dyn Fn(u16) -> Option<i64>) -> Option<i64> {
        Some(match self {
            Expr::Num(n) => *n,
            Expr::Var(v) => var(*v)?,
            Expr::Neg(e) => e.eval(var)?.wrapping_neg(),
            Expr::Not(e) => i64::from(e.eval(var)? == 0),
            Expr::Bin(op, a, b) => {
                let (a, b) = (a.eval(var)?, b.eval(var)?);
                match op {
                    Op::Add => a.wrapping_add(b),
                    Op::Sub => a.wrapping_sub(b),
                    Op::Mul => a.wrapping_mul(b),
                    Op::Div => a.checked_div(b)?,
                    Op::Rem => a.checked_rem(b)?,
                    Op::And => a & b,
                    Op::Or => a | b,
                    Op::Xor => a ^ b,
                    Op::Shl => a.wrapping_shl(b.clamp(0, 63) as u32),
                    Op::Shr => a.wrapping_shr(b.clamp(0, 63) as u32),
                    Op::Eq => i64::from(a == b),
                    Op::Ne => i64::from(a != b),
                    Op::Lt => i64::from(a < b),
                    Op::Le => i64::from(a <= b),
                    Op::Gt => i64::from(a > b),
                    Op::Ge => i64::from(a >= b),
                    Op::LogicAnd => i64::from(a != 0 && b != 0),
                    Op::LogicOr => i64::from(a != 0 || b != 0),
                }
            }
        })
    }

    /// The expression as Kaitai and Lua both read it (`names` gives the field names back).
    pub fn render(&self, names: &dyn Fn(u16) -> String, lua: bool) -> String {
        match self {
            Expr::Num(n) => n.to_string(),
            Expr::Var(v) => names(*v),
            Expr::Neg(e) => format!("-({})", e.render(names, lua)),
            Expr::Not(e) if lua => format!("(({}) == 0 and 1 or 0)", e.render(names, lua)),
            Expr::Not(e) => format!("not ({})", e.render(names, lua)),
            Expr::Bin(op, a, b) => {
                let (a, b) = (a.render(names, lua), b.render(names, lua));
                if lua {
                    lua_binary(*op, &a, &b)
                } else {
                    format!("({a} {} {b})", op_text(*op))
                }
            }
        }
    }
}

fn op_text(op: Op) -> &'static str {
    match op {
        Op::Add => "+",
        Op::Sub => "-",
        Op::Mul => "*",
        Op::Div => "/",
        Op::Rem => "%",
        Op::And => "&",
        Op::Or => "|",
        Op::Xor => "^",
        Op::Shl => "<<",
        Op::Shr => ">>",
        Op::Eq => "==",
        Op::Ne => "!=",
        Op::Lt => "<",
        Op::Le => "<=",
        Op::Gt => ">",
        Op::Ge => ">=",
        Op::LogicAnd => "and",
        Op::LogicOr => "or",
    }
}

/// A binary operation in Lua 5.2-compatible form: integers are numbers, booleans are 0 or 1,
/// bit operations, division and remainder go through the helpers the generated dissector
/// defines (`idiv` and `irem` truncate towards zero, and raise on a zero divisor, as `eval`).
fn lua_binary(op: Op, a: &str, b: &str) -> String {
    let truth = |cond: String| format!("(({cond}) and 1 or 0)");
    match op {
        Op::Add | Op::Sub | Op::Mul => format!("({a} {} {b})", op_text(op)),
        Op::Div => format!("idiv({a}, {b})"),
        Op::Rem => format!("irem({a}, {b})"),
        Op::And => format!("band({a}, {b})"),
        Op::Or => format!("bor({a}, {b})"),
        Op::Xor => format!("bxor({a}, {b})"),
        Op::Shl => format!("lshift({a}, {b})"),
        Op::Shr => format!("rshift({a}, {b})"),
        Op::Eq => truth(format!("{a} == {b}")),
        Op::Ne => truth(format!("{a} ~= {b}")),
        Op::Lt | Op::Le | Op::Gt | Op::Ge => truth(format!("{a} {} {b}", op_text(op))),
        Op::LogicAnd => truth(format!("{a} ~= 0 and {b} ~= 0")),
        Op::LogicOr => truth(format!("{a} ~= 0 or {b} ~= 0")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, vars: &[(&str, i64)]) -> Option<i64> {
        let names: Vec<&str> = vars.iter().map(|v| v.0).collect();
        let mut intern = |n: &str| {
            names
                .iter()
                .position(|x| *x == n)
                .map(|i| i as u16)
                .ok_or_else(|| format!("no field `{n}`"))
        };
        let e = parse(text, &mut intern).unwrap();
        e.eval(&|v| Some(vars[v as usize].1))
    }

    #[test]
    fn precedence_as_in_kaitai() {
        assert_eq!(run("flags & 0x02 != 0", &[("flags", 2)]), Some(0));
        assert_eq!(run("(flags & 0x02) != 0", &[("flags", 2)]), Some(1));
        assert_eq!(run("count * 4 + 2", &[("count", 3)]), Some(14));
        assert_eq!(run("a > 1 and not b", &[("a", 2), ("b", 0)]), Some(1));
        assert_eq!(run("-a << 2", &[("a", 1)]), Some(-4));
        assert_eq!(run("a / 0", &[("a", 1)]), None);
    }

    #[test]
    fn errors_say_what() {
        let mut none = |n: &str| Err::<u16, _>(format!("no field `{n}`"));
        assert_eq!(parse("x + 1", &mut none).unwrap_err(), "no field `x`");
        assert_eq!(
            parse("1 +", &mut none).unwrap_err(),
            "the expression ends too soon"
        );
        assert_eq!(parse("(1", &mut none).unwrap_err(), "a `(` is not closed");
        assert_eq!(
            parse("1 $ 2", &mut none).unwrap_err(),
            "`$` is not part of an expression"
        );
        let deep = "(".repeat(40) + "1" + &")".repeat(40);
        assert!(parse(&deep, &mut none).unwrap_err().contains("deeper"));
        let long = "1+".repeat(200) + "1";
        assert!(parse(&long, &mut none).unwrap_err().contains("longer"));
    }
}
