//! `rtype-inspect fields`: every display-filter field of the registry, like `tshark -G fields`:
//! one tab-separated line per field (`F`, label, filter name, Wireshark type, protocol, who
//! provides it), protocols as `P` lines, value strings as `V` lines with `--values`; or one JSON
//! document.

use std::fmt::Write as _;

use serde_json::{json, Value as Json};

use crate::proto::registry::{FieldType, FilterField, Provider, Registry, Source};

fn provider(f: &FilterField) -> &'static str {
    match f.provider {
        Provider::Dissector => "dissector",
        Provider::Wireshark => "wireshark",
        Provider::Inspect => "rtype-inspect",
    }
}

/// The protocol a field belongs to: the first segment of its name.
fn protocol(f: &FilterField) -> &str {
    f.name.split('.').next().unwrap_or(&f.name)
}

fn source(f: &FilterField) -> &'static str {
    match f.source {
        Source::Described { .. } => "described",
        Source::Bits { .. } => "bits",
        Source::Raw { .. } => "raw",
        Source::Runtime(_) => "runtime",
        Source::Rule(_) => "rule",
        Source::Role { .. } => "role",
    }
}

/// The text listing.
pub fn text(registry: &Registry, values: bool) -> String {
    let mut out = String::new();
    for f in &registry.fields {
        if f.ty == FieldType::Protocol {
            let _ = writeln!(out, "P\t{}\t{}", f.label, f.name);
            continue;
        }
        let _ = writeln!(
            out,
            "F\t{}\t{}\t{}\t{}\t{}",
            f.label,
            f.name,
            f.ty.ft_name(),
            protocol(f),
            provider(f)
        );
        if values {
            for (value, name) in f.values.list() {
                let _ = writeln!(out, "V\t{}\t{value}\t{name}", f.name);
            }
        }
    }
    out
}

/// The schema `fields --format json` follows.
pub const SCHEMA: &str = "fields/1";

/// The JSON document: the fields of `registry`, built for the snapshot profile named `profile`.
pub fn json(registry: &Registry, profile: &str) -> Json {
    let fields: Vec<Json> = registry
        .fields
        .iter()
        .map(|f| {
            let mut field = json!({
                "name": f.name,
                "label": f.label,
                "type": f.ty.ft_name(),
                "protocol": protocol(f),
                "provider": provider(f),
                "source": source(f),
            });
            let values = f.values.list();
            if !values.is_empty() {
                field["values"] = values
                    .into_iter()
                    .map(|(value, name)| json!({"value": value, "name": name}))
                    .collect();
            }
            field
        })
        .collect();
    let mut document = json!({ "profile": profile, "fields": fields });
    super::stamp(&mut document, SCHEMA);
    document
}
