//! Fields: their keys, types, sizes, conditions, repeats, `valid` checks and roles, and the
//! nesting of user types.

use super::keys::{bytes, choice, identifier, integer, text, Keys};
use super::{err, Loader, Result, MAX_FIXED_SIZE, MAX_TYPE_DEPTH};
use crate::describe::expr::{self, Expr};
use crate::describe::model::*;
use crate::describe::yaml::Node;
use crate::proto::near::hint;

const FIELD_KEYS: &[&str] = &[
    "id",
    "type",
    "size",
    "size-eos",
    "encoding",
    "contents",
    "repeat",
    "repeat-expr",
    "if",
    "enum",
    "valid",
    "label",
    "divisor",
    "role",
    "doc",
];

impl Loader {
    /// A list of fields (a header, a message's or a type's `seq`).
    pub(super) fn seq(&mut self, node: &Node, what: &str) -> Result<Vec<Field>> {
        let Some(items) = node.items() else {
            return err(node, format!("{what} must be a list of fields"));
        };
        let mut out: Vec<Field> = Vec::new();
        for item in items {
            let f = self.field(item)?;
            if out.iter().any(|o| o.id == f.id) {
                return err(
                    item,
                    format!("two fields of one sequence are named `{}`", f.id),
                );
            }
            out.push(f);
        }
        Ok(out)
    }

    /// The index of a field name that expressions may use.
    pub(super) fn intern(&mut self, name: &str) -> u16 {
        if let Some(v) = self.var_index.get(name) {
            return *v;
        }
        let v = self.vars.len() as u16;
        self.vars.push(name.to_string());
        self.var_index.insert(name.to_string(), v);
        v
    }

    /// An expression, its names kept to be checked once every field is known.
    pub(super) fn expression(&mut self, node: &Node, what: &str) -> Result<Expr> {
        if let Some(n) = node.integer() {
            return Ok(Expr::Num(n));
        }
        let source = text(node, what)?.to_string();
        let mut names = Vec::new();
        let parsed = {
            let mut intern = |name: &str| -> std::result::Result<u16, String> {
                if self.vars.len() >= u16::MAX as usize {
                    return Err("too many names".into());
                }
                let v = self.intern(name);
                names.push(v);
                Ok(v)
            };
            expr::parse(&source, &mut intern)
        };
        let e = match parsed {
            Ok(e) => e,
            Err(m) => return err(node, format!("{what}: {m}")),
        };
        self.references
            .extend(names.into_iter().map(|v| (v, node.pos)));
        Ok(e)
    }

    /// One field: its type, size, encoding, condition, repeat, enum, `valid`, label and role.
    fn field(&mut self, node: &Node) -> Result<Field> {
        let keys = Keys::of(node, "a field", FIELD_KEYS)?;
        let id = identifier(keys.need("id", "a field")?, "a field id")?;
        let endian_default = self.endian.unwrap_or(Endian::Little);
        let mut endian = endian_default;
        let contents = keys
            .get("contents")
            .map(|n| bytes(n, "contents"))
            .transpose()?;
        let kind = match keys.get("type") {
            None => Kind::Bytes,
            Some(t) => {
                let name = text(t, "a type")?;
                match primitive(name) {
                    Some((kind, e)) => {
                        if let Some(e) = e {
                            endian = e;
                        }
                        kind
                    }
                    None => match self.type_names.iter().position(|n| n == name) {
                        Some(i) => Kind::User(i),
                        None => {
                            let known = PRIMITIVES
                                .iter()
                                .copied()
                                .chain(self.type_names.iter().map(String::as_str));
                            return err(t, format!("`{name}` is not a type{}", hint(name, known)));
                        }
                    },
                }
            }
        };
        let size = match (keys.get("size"), keys.get("size-eos")) {
            (Some(_), Some(n)) => return err(n, "a field has `size` or `size-eos`, not both"),
            (Some(n), None) => {
                let e = self.expression(n, "size")?;
                if let Expr::Num(v) = e {
                    if !(0..=MAX_FIXED_SIZE).contains(&v) {
                        return err(n, format!("size must be from 0 to {MAX_FIXED_SIZE}"));
                    }
                }
                Size::Bytes(e)
            }
            (None, Some(n)) => match text(n, "size-eos")? {
                "true" => Size::ToEnd,
                _ => return err(n, "size-eos must be true"),
            },
            (None, None) => match (&kind, &contents) {
                (Kind::Bytes, Some(c)) => Size::Bytes(Expr::Num(c.len() as i64)),
                _ => Size::Natural,
            },
        };
        if matches!(kind, Kind::Str | Kind::Bytes) && size == Size::Natural {
            return err(
                node,
                format!(
                    "field `{id}` needs `size` or `size-eos` (its type has no width of its own)"
                ),
            );
        }
        if matches!(
            kind,
            Kind::Int { .. } | Kind::Float { .. } | Kind::Bits { .. } | Kind::Strz
        ) && size != Size::Natural
        {
            return err(
                node,
                format!("field `{id}`: a number or `strz` has no `size`"),
            );
        }
        let encoding = match keys.get("encoding") {
            Some(n) => choice(
                n,
                "an encoding",
                &[
                    (Encoding::Ascii, "ASCII"),
                    (Encoding::Utf8, "UTF-8"),
                    (Encoding::Ascii, "ascii"),
                    (Encoding::Utf8, "utf-8"),
                    (Encoding::Utf8, "UTF8"),
                ],
            )?,
            None => Encoding::Utf8,
        };
        let repeat = match keys.get("repeat") {
            None => {
                if let Some(n) = keys.get("repeat-expr") {
                    return err(n, "repeat-expr goes with `repeat: expr`");
                }
                Repeat::Once
            }
            Some(n) => match text(n, "repeat")? {
                "expr" => Repeat::Count(
                    self.expression(keys.need("repeat-expr", "`repeat: expr`")?, "repeat-expr")?,
                ),
                "eos" => Repeat::UntilEnd,
                other => {
                    return err(
                        n,
                        format!(
                            "`repeat: {other}` is not supported; use expr or eos{}",
                            hint(other, ["expr", "eos"])
                        ),
                    )
                }
            },
        };
        let cond = keys
            .get("if")
            .map(|n| self.expression(n, "if"))
            .transpose()?;
        let enumeration = match keys.get("enum") {
            None => None,
            Some(n) => {
                let name = text(n, "an enum")?;
                match self.enum_names.iter().position(|e| e == name) {
                    Some(i) => Some(i),
                    None => {
                        return err(
                            n,
                            format!(
                                "no enum is named `{name}`{}",
                                hint(name, self.enum_names.iter().map(String::as_str))
                            ),
                        )
                    }
                }
            }
        };
        let valid = keys.get("valid").map(|n| self.valid(n)).transpose()?;
        if (valid.is_some() || enumeration.is_some())
            && !matches!(kind, Kind::Int { .. } | Kind::Bits { .. })
        {
            return err(
                node,
                format!("field `{id}`: `valid` and `enum` apply to integers"),
            );
        }
        let divisor = match keys.get("divisor") {
            Some(n) => match n.number() {
                Some(d) if d != 0.0 => Some(d),
                _ => return err(n, "divisor must be a number other than 0"),
            },
            None => None,
        };
        let roles: Vec<(FieldRole, &str)> = FieldRole::ALL.to_vec();
        let role = keys
            .get("role")
            .map(|n| choice(n, "a field role", &roles))
            .transpose()?;
        let label = match keys.get("label") {
            Some(n) => text(n, "a label")?.to_string(),
            None => label_of(&id),
        };
        let doc = match keys.get("doc") {
            Some(n) => text(n, "doc")?.trim().to_string(),
            None => String::new(),
        };
        let var = self.intern(&id);
        Ok(Field {
            id,
            var,
            label,
            doc,
            kind,
            endian,
            size,
            encoding,
            contents,
            repeat,
            cond,
            enumeration,
            valid,
            divisor,
            role,
            line: node.pos.line,
        })
    }

    /// A field's `valid`: the values it may take, and the rule a value outside them raises.
    fn valid(&mut self, node: &Node) -> Result<Valid> {
        let mut v = Valid {
            rule: Description::rule_index(Check::Valid),
            ..Valid::default()
        };
        if let Some(eq) = node.integer() {
            v.eq = Some(eq);
            return Ok(v);
        }
        let keys = Keys::of(node, "valid", &["eq", "min", "max", "any-of", "rule"])?;
        v.eq = keys.get("eq").map(|n| integer(n, "valid.eq")).transpose()?;
        v.min = keys
            .get("min")
            .map(|n| integer(n, "valid.min"))
            .transpose()?;
        v.max = keys
            .get("max")
            .map(|n| integer(n, "valid.max"))
            .transpose()?;
        if let Some(n) = keys.get("any-of") {
            let Some(items) = n.items() else {
                return err(n, "valid.any-of must be a list");
            };
            v.any_of = items
                .iter()
                .map(|i| integer(i, "valid.any-of"))
                .collect::<Result<_>>()?;
        }
        if let Some(n) = keys.get("rule") {
            let id = text(n, "valid.rule")?;
            match self.rules.iter().position(|r| r.id == id) {
                Some(i) => v.rule = i,
                None => {
                    return err(
                        n,
                        format!(
                            "no rule is named `{id}`{}",
                            hint(id, self.rules.iter().map(|r| r.id.as_str()))
                        ),
                    )
                }
            }
        }
        Ok(v)
    }
}

const PRIMITIVES: &[&str] = &[
    "u1", "u2", "u4", "u8", "s1", "s2", "s4", "s8", "f4", "f8", "str", "strz",
];

/// A primitive type name: its kind and, when it says one, its byte order.
fn primitive(name: &str) -> Option<(Kind, Option<Endian>)> {
    match name {
        "str" => return Some((Kind::Str, None)),
        "strz" => return Some((Kind::Strz, None)),
        _ => {}
    }
    if let Some(bits) = name.strip_prefix('b') {
        return match bits.parse::<u8>() {
            Ok(w @ 1..=32) if !bits.starts_with('0') => Some((Kind::Bits { width: w }, None)),
            _ => None,
        };
    }
    let (base, endian) = if let Some(b) = name.strip_suffix("le") {
        (b, Some(Endian::Little))
    } else if let Some(b) = name.strip_suffix("be") {
        (b, Some(Endian::Big))
    } else {
        (name, None)
    };
    let kind = match base {
        "u1" => Kind::Int {
            width: 1,
            signed: false,
        },
        "u2" => Kind::Int {
            width: 2,
            signed: false,
        },
        "u4" => Kind::Int {
            width: 4,
            signed: false,
        },
        "u8" => Kind::Int {
            width: 8,
            signed: false,
        },
        "s1" => Kind::Int {
            width: 1,
            signed: true,
        },
        "s2" => Kind::Int {
            width: 2,
            signed: true,
        },
        "s4" => Kind::Int {
            width: 4,
            signed: true,
        },
        "s8" => Kind::Int {
            width: 8,
            signed: true,
        },
        "f4" => Kind::Float { width: 4 },
        "f8" => Kind::Float { width: 8 },
        _ => return None,
    };
    Some((kind, endian))
}

/// `entity_id` → `Entity Id`.
fn label_of(id: &str) -> String {
    id.split('_')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// User types may nest at most [`MAX_TYPE_DEPTH`] deep, and never in a cycle (each type's depth
/// is computed once, so a wide description costs no more than its fields).
pub(super) fn check_type_depth(types: &[TypeDef], nodes: &[(Node, Node)]) -> Result<()> {
    const TOO_DEEP: usize = MAX_TYPE_DEPTH + 1;
    /// `None`: not computed; `Some(TOO_DEEP)` also marks a type being computed (a cycle).
    fn depth(types: &[TypeDef], t: usize, memo: &mut [Option<usize>], level: usize) -> usize {
        if let Some(d) = memo[t] {
            return d;
        }
        if level > MAX_TYPE_DEPTH {
            return TOO_DEEP;
        }
        memo[t] = Some(TOO_DEEP);
        let mut d = 0;
        for f in &types[t].seq {
            if let Kind::User(u) = f.kind {
                d = d.max(1 + depth(types, u, memo, level + 1)).min(TOO_DEEP);
            }
        }
        memo[t] = Some(d);
        d
    }
    let mut memo = vec![None; types.len()];
    for t in 0..types.len() {
        if depth(types, t, &mut memo, 0) >= TOO_DEEP {
            return err(
                &nodes[t].0,
                format!(
                    "type `{}` contains itself or nests deeper than {MAX_TYPE_DEPTH} types",
                    types[t].id
                ),
            );
        }
    }
    Ok(())
}
