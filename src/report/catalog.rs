//! The violation catalog as a table, for `rtype-inspect violations` and docs/violations.md, or
//! as one JSON document (docs/schemas/violations.schema.json).

use super::table;
use crate::app::Term;
use crate::proto::CATALOG;

/// The schema `violations --format json` follows.
pub const SCHEMA: &str = "violations/1";

/// The catalog as one JSON document: every rule (ID, severity, section, summary), in catalog order.
pub fn json() -> serde_json::Value {
    let mut document = serde_json::json!({ "rules": CATALOG });
    super::stamp(&mut document, SCHEMA);
    document
}

/// The catalog as a text table.
pub fn text(term: Term) -> String {
    let mut t = table::new(term, &["ID", "Severity", "Section", "What it means"]);
    for rule in CATALOG {
        t.add_row(vec![
            table::cell(rule.id),
            table::severity_cell(rule.severity, term),
            table::cell(rule.section),
            table::cell(rule.summary),
        ]);
    }
    format!("{t}\n")
}

/// The catalog as a Markdown table, for the documentation.
pub fn markdown() -> String {
    let mut out = String::from("| ID | Severity | Section | What it means |\n|---|---|---|---|\n");
    for rule in CATALOG {
        out += &format!(
            "| `{}` | {} | {} | {} |\n",
            rule.id,
            rule.severity.name(),
            rule.section,
            rule.summary
        );
    }
    out
}
