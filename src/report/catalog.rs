//! The violation catalog as a table, for `rtype-inspect violations` and docs/violations.md, or
//! as one JSON document (docs/schemas/violations.schema.json).

use schemars::JsonSchema;
use serde::Serialize;

use super::{table, Tool};
use crate::app::Term;
use crate::proto::{RuleInfo, Severity, CATALOG};

/// The schema `violations --format json` follows.
pub const SCHEMA: &str = "violations/1";

/// The document `rtype-inspect violations --format json` writes: the catalog of rules traffic can
/// break, in catalog order.
// The fields of each document are in the order serde_json's sorted maps wrote them before.
#[derive(Serialize, JsonSchema)]
#[schemars(title = "rtype-inspect violations", deny_unknown_fields)]
pub struct Violations {
    rules: Vec<Rule>,
    #[schemars(extend("const" = SCHEMA))]
    schema: &'static str,
    tool: Tool,
}

/// One rule of the catalog.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Rule {
    /// The rule's stable ID, as findings, `--violation`, `--allow` and the display filters name it.
    #[schemars(regex(pattern = r"^[a-z0-9]+(\.[a-z0-9-]+)+$"))]
    id: &'static str,
    /// The protocol document and section the rule comes from, e.g. `002 §8`.
    section: &'static str,
    #[schemars(schema_with = "super::severity_schema")]
    severity: Severity,
    /// What breaking the rule means, in one line.
    summary: &'static str,
}

/// The catalog as one JSON document: every rule (ID, severity, section, summary), in catalog order.
pub fn json() -> Violations {
    let rule = |r: &RuleInfo| Rule {
        id: r.id,
        section: r.section,
        severity: r.severity,
        summary: r.summary,
    };
    Violations {
        rules: CATALOG.iter().map(rule).collect(),
        schema: SCHEMA,
        tool: Tool::THIS,
    }
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
