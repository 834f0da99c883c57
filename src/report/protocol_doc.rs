//! The protocol reference (docs/protocol.md), written from the protocol description: every
//! message of every dialect with its fields, their JSON paths in the export, their Wireshark
//! filter names, wire types and displays. `rtype-inspect protocol` prints it; a test keeps the
//! checked-in copy current.

use std::fmt::Write as _;

use crate::proto::profile::{BitSlot, Profile};
use crate::proto::registry::{Provider, Registry, Source};
use crate::proto::schema::{Display, Field, Message, Named, Node};
use crate::proto::{rt, rtnp, rtype, CATALOG};

/// The whole reference, in Markdown.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Protocol reference\n\n\
         Generated from the dialect descriptions in `dialects/` by `rtype-inspect protocol`; do not\n\
         edit. JSON paths are the keys of `rtype-inspect export` records (`header.…`, `fields.…`;\n\
         `[]` marks a list); filter names are those of the generated Wireshark dissector.\n",
    );
    binary(
        &mut out,
        "rtype",
        "documents 002 and 001",
        rtype::HEADER,
        rtype::MESSAGES,
    );
    masked(&mut out);
    binary(&mut out, "rt", "document 003", rt::HEADER, rt::MESSAGES);
    json(&mut out);
    filter_fields(&mut out);
    let _ = writeln!(
        out,
        "\n## Rules\n\n{} rules: see `rtype-inspect violations` and docs/violations.md.",
        CATALOG.len()
    );
    out
}

fn names(table: &[Named]) -> String {
    table
        .iter()
        .map(|n| format!("{}={}", n.value, n.name))
        .collect::<Vec<_>>()
        .join(", ")
}

fn display(field: &Field) -> String {
    match field.display {
        Display::Enum(t) => format!("enum: {}", names(t)),
        Display::Flags(t) => {
            format!(
                "flags: {}",
                t.iter()
                    .map(|n| format!("0x{:X}={}", n.value, n.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
        Display::MessageType => "message type".into(),
        Display::Hex => "hex".into(),
        Display::Text => "text".into(),
        Display::Float => "float".into(),
        Display::Dec if field.divisor != 1 => format!("÷{}", field.divisor),
        Display::Dec => String::new(),
    }
}

fn wire_type(field: &Field) -> String {
    if field.array > 0 {
        format!("u8[{}]", field.array)
    } else {
        field.ty.name().to_string()
    }
}

fn row(out: &mut String, path: &str, filter: &str, field: &Field) {
    let _ = writeln!(
        out,
        "| `{path}` | `{filter}` | {} | {} | {} |",
        wire_type(field),
        field.label,
        display(field)
    );
}

const TABLE_HEAD: &str = "| JSON path | filter | type | label | display |\n|---|---|---|---|---|\n";

/// Rows for `nodes`, under JSON path `path` and filter prefix `filter`.
fn nodes(out: &mut String, nodes: &[Node], path: &str, filter: &str) {
    for node in nodes {
        match node {
            Node::Field(f) => row(
                out,
                &format!("{path}{}", f.name),
                &format!("{filter}.{}", f.name),
                f,
            ),
            Node::Repeat { count, item } => {
                row(
                    out,
                    &format!("{path}{}", count.name),
                    &format!("{filter}.{}", count.name),
                    count,
                );
                self::nodes(
                    out,
                    item.nodes,
                    &format!("{path}{}[].", item.name),
                    &format!("{filter}.{}", item.filter),
                );
            }
            Node::Switch { tag, cases, .. } => {
                row(
                    out,
                    &format!("{path}{}", tag.name),
                    &format!("{filter}.{}", tag.name),
                    tag,
                );
                for case in *cases {
                    let (p, f) = (
                        format!("{path}{}.", case.group.name),
                        format!("{filter}.{}", case.group.filter),
                    );
                    self::nodes(out, case.group.nodes, &p, &f);
                }
            }
            Node::Masked => {
                let _ = writeln!(out, "| `{path}…` | `{filter}.…` | | fields gated by the update mask | see the mask table |");
            }
        }
    }
}

fn binary(
    out: &mut String,
    dialect: &str,
    documents: &str,
    header: &'static [Node],
    messages: &[Message],
) {
    let _ = write!(
        out,
        "\n## {dialect} ({documents})\n\n### Header\n\n{TABLE_HEAD}"
    );
    for node in header {
        if let Node::Field(f) = node {
            row(
                out,
                &format!("header.{}", f.name),
                &format!("{dialect}.{}", f.name),
                f,
            );
        }
    }
    for m in messages {
        let size = match m.fixed_size() {
            None => "variable size".to_string(),
            Some(1) => "1 byte".to_string(),
            Some(n) => format!("{n} bytes"),
        };
        let _ = write!(
            out,
            "\n### 0x{:02X} {} ({}, {size}, {})\n\n",
            m.code,
            m.name,
            m.direction.arrow(),
            m.section
        );
        if m.body.is_empty() {
            out.push_str("No payload.\n");
        } else {
            out.push_str(TABLE_HEAD);
            nodes(out, m.body, "fields.", &format!("{dialect}.{}", m.short));
        }
        for v in m.variants {
            let how = if v.extends_body {
                "the document's layout followed by"
            } else {
                "instead:"
            };
            let _ = write!(
                out,
                "\nKnown variant (reported as `{}`), {how}\n\n",
                v.rule.id()
            );
            if v.nodes.is_empty() {
                out.push_str("an empty payload.\n");
            } else {
                out.push_str(TABLE_HEAD);
                nodes(out, v.nodes, "fields.", &format!("{dialect}.{}", m.short));
            }
        }
        if let Some(rule) = m.seen_rule {
            let _ = writeln!(out, "\nReported whenever it is seen: `{}`.", rule.id());
        }
    }
}

/// The document's snapshot mask table (profiles replace it).
fn masked(out: &mut String) {
    out.push_str("\n### Snapshot update mask (document 001 §6.2; `--profile` replaces it)\n\n");
    out.push_str(
        "| bit | JSON key | filter | type | label | display |\n|---|---|---|---|---|---|\n",
    );
    for (bit, slot) in Profile::document().bits().iter().enumerate() {
        match slot {
            BitSlot::Field(f) => {
                let _ = writeln!(
                    out,
                    "| {bit} | `{}` | `rtype.snapshot.entity.{}` | {} | {} | {} |",
                    f.name,
                    f.name,
                    wire_type(f),
                    f.label,
                    display(f)
                );
            }
            BitSlot::Reserved => {
                let _ = writeln!(out, "| {bit} | | | reserved: unknown width | | |");
            }
            BitSlot::Undefined => {
                let _ = writeln!(out, "| {bit} | | | undefined: unknown width | | |");
            }
        }
    }
}

/// The display-filter fields that are not message fields: the dissector's runtime, Wireshark's,
/// and rtype-inspect's own, from the registry.
fn filter_fields(out: &mut String) {
    out.push_str(
        "\n## Other display-filter fields\n\n\
         Besides the message fields above, `-Y` filters (and Wireshark, for all but the last kind)\n\
         know these; each rule of the catalog is a field too, by its ID (`rtype.crc.mismatch`).\n\
         `rtype-inspect fields` lists every field with its type.\n\n\
         | filter | type | label | provided by |\n|---|---|---|---|\n",
    );
    let registry = Registry::new(&Profile::document());
    for f in &registry.fields {
        if !matches!(f.source, Source::Runtime(_) | Source::Role { .. }) {
            continue;
        }
        let by = match f.provider {
            Provider::Dissector => "the dissector",
            Provider::Wireshark => "Wireshark",
            Provider::Inspect => "rtype-inspect only",
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {by} |",
            f.name,
            f.ty.ft_name(),
            f.label
        );
    }
}

fn json(out: &mut String) {
    out.push_str("\n## rtnp (document 004)\n\nJSON messages, in a Cap'n Proto envelope or raw; the export shows the whole message under\n`fields`. Required properties per type (Appendix B):\n\n| type | direction | properties (required ones marked *) |\n|---|---|---|\n");
    fn props(fields: &[rtnp::JsonField], out: &mut Vec<String>) {
        for f in fields {
            out.push(format!(
                "`{}`{}: {}",
                f.path,
                if f.required { "*" } else { "" },
                f.ty.name()
            ));
            props(f.fields, out);
        }
    }
    for m in rtnp::MESSAGES {
        let mut list = vec!["`type`*: string".to_string()];
        props(m.fields, &mut list);
        let _ = writeln!(
            out,
            "| `{}` | {} | {} |",
            m.message.name,
            m.message.direction.arrow(),
            list.join(", ")
        );
    }
}
