//! `rtype-inspect fields`: every display-filter field of the registry, like `tshark -G fields`:
//! one tab-separated line per field (`F`, label, filter name, Wireshark type, protocol, who
//! provides it), protocols as `P` lines, value strings as `V` lines with `--values`; or one JSON
//! document.

use std::fmt::Write as _;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;

use super::Tool;
use crate::proto::registry::{FieldType, FilterField, Provider, Registry, Source};

/// The schema `fields --format json` follows.
pub const SCHEMA: &str = "fields/1";

/// The document `rtype-inspect fields --format json` writes: every display-filter field, as
/// `tshark -G fields` lists a dissector's.
// The fields of each struct are in the order serde_json's sorted maps wrote them before.
#[derive(Serialize, JsonSchema)]
#[schemars(title = "rtype-inspect fields", deny_unknown_fields)]
pub struct Fields<'a> {
    fields: Vec<Field<'a>>,
    /// The snapshot profile whose mask-bit fields are listed (`document` without --profile).
    profile: &'a str,
    #[schemars(extend("const" = SCHEMA))]
    schema: &'static str,
    tool: Tool,
}

/// One field, or a protocol (FT_PROTOCOL).
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Field<'a> {
    label: &'a str,
    /// The display-filter name (`rtype.snapshot.entity.pos_x`).
    name: &'a str,
    /// The first segment of the name.
    protocol: &'a str,
    /// Who provides the field: the generated dissector, Wireshark itself, or rtype-inspect alone
    /// (no dissector has it).
    #[schemars(schema_with = "provider_schema")]
    provider: &'static str,
    /// Where its value comes from: a described wire field, a flag bit, raw bytes, the dissector's
    /// runtime, a catalog rule, or every described field of a role (`rtype.entity.id`: each
    /// entity id, whatever message names it).
    source: SourceKind,
    /// Wireshark's field type; FT_PROTOCOL for a protocol.
    #[serde(rename = "type")]
    #[schemars(schema_with = "type_schema")]
    ty: &'static str,
    /// The field's value strings, when it has any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1))]
    values: Vec<ValueString>,
}

/// A value and its name.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct ValueString {
    name: &'static str,
    value: u32,
}

/// [`Source`] without its data.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum SourceKind {
    Described,
    Bits,
    Raw,
    Runtime,
    Rule,
    Role,
}

fn provider_name(provider: Provider) -> &'static str {
    match provider {
        Provider::Dissector => "dissector",
        Provider::Wireshark => "wireshark",
        Provider::Inspect => "rtype-inspect",
    }
}

fn provider_schema(_: &mut SchemaGenerator) -> Schema {
    super::names_schema(
        &[Provider::Dissector, Provider::Wireshark, Provider::Inspect].map(provider_name),
    )
}

/// Every type Wireshark's fields can have: the integers are 8, 16 or 32 bits wide.
fn type_schema(_: &mut SchemaGenerator) -> Schema {
    use FieldType::*;
    let integers = [8, 16, 32]
        .into_iter()
        .flat_map(|bits| [Unsigned(bits), Signed(bits)]);
    let types = [Protocol, None, Boolean].into_iter().chain(integers);
    let types = types.chain([Float, Double, FrameNum, RelativeTime]);
    let types = types.chain([String, Bytes, Ipv4, Ipv6]);
    super::names_schema(&types.map(FieldType::ft_name).collect::<Vec<_>>())
}

fn source(f: &FilterField) -> SourceKind {
    match f.source {
        Source::Described { .. } => SourceKind::Described,
        Source::Bits { .. } => SourceKind::Bits,
        Source::Raw { .. } => SourceKind::Raw,
        Source::Runtime(_) => SourceKind::Runtime,
        Source::Rule(_) => SourceKind::Rule,
        Source::Role { .. } => SourceKind::Role,
    }
}

/// The fields of `registry`, in its order: what both the listing and the document show.
fn fields(registry: &Registry) -> impl Iterator<Item = Field<'_>> {
    registry.fields.iter().map(|f| Field {
        label: &f.label,
        // The protocol a field belongs to: the first segment of its name.
        protocol: f.name.split('.').next().unwrap_or(&f.name),
        name: &f.name,
        provider: provider_name(f.provider),
        source: source(f),
        ty: f.ty.ft_name(),
        values: (f.values.list().into_iter())
            .map(|(value, name)| ValueString { name, value })
            .collect(),
    })
}

/// The text listing.
pub fn text(registry: &Registry, values: bool) -> String {
    let mut out = String::new();
    for f in fields(registry) {
        if f.ty == FieldType::Protocol.ft_name() {
            let _ = writeln!(out, "P\t{}\t{}", f.label, f.name);
            continue;
        }
        let _ = writeln!(
            out,
            "F\t{}\t{}\t{}\t{}\t{}",
            f.label, f.name, f.ty, f.protocol, f.provider
        );
        if values {
            for v in f.values {
                let _ = writeln!(out, "V\t{}\t{}\t{}", f.name, v.value, v.name);
            }
        }
    }
    out
}

/// The JSON document: the fields of `registry`, built for the snapshot profile named `profile`.
pub fn json<'a>(registry: &'a Registry, profile: &'a str) -> Fields<'a> {
    Fields {
        fields: fields(registry).collect(),
        profile,
        schema: SCHEMA,
        tool: Tool::THIS,
    }
}
