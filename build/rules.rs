//! A bundled dialect's `rules`: its entries of the rule catalog (src/proto/rules.rs splices them
//! between the capture's rules and the session's), the rules one datagram decides, by kind (the
//! Lua runtime's), and the rules the message walker raises.

use std::fmt::Write;

use super::{capitalised, err, get, items, map, required, text, yaml::Node, Result};

/// The walker's rules a dialect must name, by kind. `reserved-bit` and `undefined-bit` are
/// raised only in masked messages: a dialect without them names neither, and the walker's
/// table gives `trailing` in their place (never raised).
const WALKER: &[&str] = &["truncated", "trailing", "size", "utf8"];
const MASK_BITS: &[&str] = &["reserved-bit", "undefined-bit"];

/// A dialect's rules, compiled.
pub(super) struct Rules {
    /// `Variant = "id", Severity, "section", "summary";` lines for the catalog's `rules!`.
    pub catalog: String,
    /// The kinds and their constants' names, in the description's order.
    kinds: Vec<(String, String)>,
}

/// `orig-size-set` → `OrigSizeSet`: a rule constant's words.
fn words(kind: &str) -> String {
    kind.split('-').map(capitalised).collect()
}

pub(super) fn compile(root: &Node) -> Result<Rules> {
    let meta = required(root, "meta", "a dialect")?;
    let dialect = text(required(meta, "id", "meta")?, "an id")?;
    let mut rules = Rules {
        catalog: String::new(),
        kinds: Vec::new(),
    };
    let Some(list) = get(root, "rules") else {
        return Ok(rules);
    };
    for rule in items(list, "rules")? {
        map(
            rule,
            "a rule",
            &["kind", "id", "severity", "section", "summary", "scope"],
        )?;
        let kind = text(required(rule, "kind", "a bundled rule")?, "a kind")?;
        if kind.is_empty()
            || !kind
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return err(rule.pos, "a kind is lower-case words joined by `-`");
        }
        if rules.kinds.iter().any(|(k, _)| k == kind) {
            return err(rule.pos, format!("two rules of kind `{kind}`"));
        }
        let id = text(required(rule, "id", "a rule")?, "a rule ID")?;
        if !id.starts_with(&format!("{dialect}.")) {
            return err(
                rule.pos,
                format!("a rule ID of {dialect} starts `{dialect}.`"),
            );
        }
        let severity = match text(required(rule, "severity", "a rule")?, "a severity")? {
            "info" => "Info",
            "warning" => "Warning",
            "error" => "Error",
            _ => return err(rule.pos, "a severity is info, warning or error"),
        };
        let section = text(required(rule, "section", "a rule")?, "a section")?;
        let summary = text(required(rule, "summary", "a rule")?, "a summary")?;
        let datagram = match get(rule, "scope").map(|s| text(s, "a scope")).transpose()? {
            None | Some("datagram") => true,
            Some("conversation") => false,
            Some(_) => return err(rule.pos, "a scope is datagram or conversation"),
        };
        let variant = capitalised(dialect) + &words(kind);
        let _ = writeln!(
            rules.catalog,
            "{variant} = {id:?}, {severity}, {section:?}, {summary:?};"
        );
        if datagram {
            rules.kinds.push((kind.to_string(), variant));
        }
    }
    Ok(rules)
}

impl Rules {
    /// The constant of the rule of `kind`, if the dialect names one one datagram decides.
    fn variant(&self, kind: &str) -> Option<&str> {
        self.kinds
            .iter()
            .find(|(k, _)| k == kind)
            .map(|(_, v)| v.as_str())
    }

    /// `DATAGRAM_RULES`: the rules one datagram decides, by kind.
    pub(super) fn datagram_rules(&self) -> String {
        let entries: Vec<String> = self
            .kinds
            .iter()
            .map(|(kind, variant)| format!("({kind:?}, Rule::{variant})"))
            .collect();
        format!(
            "/// The rules one datagram decides, by kind: what the Lua runtime raises (as `kind`\n\
             /// with `_` for `-`) or the description attaches to a field or message.\n\
             pub const DATAGRAM_RULES: &[(&str, Rule)] = &[{}];\n",
            entries.join(", ")
        )
    }

    /// `MESSAGE_RULES`: the walker's rules, by kind.
    pub(super) fn walker(&self, root: &Node) -> Result<String> {
        let mut fields = String::new();
        for kind in WALKER {
            let Some(variant) = self.variant(kind) else {
                return err(
                    root.pos,
                    format!("a dialect of messages names its `{kind}` rule"),
                );
            };
            let _ = write!(fields, "{}: Rule::{variant}, ", kind.replace('-', "_"));
        }
        let trailing = self.variant("trailing").unwrap_or_default();
        for kind in MASK_BITS {
            let variant = self.variant(kind).unwrap_or(trailing);
            let _ = write!(fields, "{}: Rule::{variant}, ", kind.replace('-', "_"));
        }
        Ok(format!(
            "/// The rules the message walker raises for this dialect's payloads.\n\
             pub const MESSAGE_RULES: MessageRules = MessageRules {{ {fields}}};\n"
        ))
    }
}
