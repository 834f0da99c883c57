//! Reports: tables, JSON, check, and the Lua dissector.

pub mod catalog;
pub mod check;
pub mod cut;
pub mod dialect;
pub mod diff;
pub mod entity;
pub mod export;
pub mod field_lines;
pub mod field_list;
pub mod fields;
pub mod filter;
pub mod html;
pub mod junit;
pub mod live;
pub mod lua;
pub mod packets;
#[cfg(feature = "parquet")]
pub mod parquet;
pub mod profile;
pub mod protocol_doc;
pub mod render;
pub mod sections;
pub mod stats;
pub mod summary;
pub mod table;
pub mod time;
pub mod world;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;

use crate::proto::Severity;

/// The tool that wrote the document.
// The typed reports hold it; `stamp` adds it to the others.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Tool {
    #[schemars(extend("const" = env!("CARGO_PKG_NAME")))]
    name: &'static str,
    version: &'static str,
}

impl Tool {
    /// This build of rtype-inspect.
    pub const THIS: Tool = Tool {
        name: env!("CARGO_PKG_NAME"),
        version: env!("CARGO_PKG_VERSION"),
    };
}

/// The schema of a string that is one of `names`: for the names of crate::proto's types, which
/// have no schema of their own.
pub fn names_schema(names: &[&str]) -> Schema {
    json_schema!({ "enum": names })
}

/// The schema of a [`Severity`]: its names.
pub fn severity_schema(_: &mut SchemaGenerator) -> Schema {
    names_schema(&[Severity::Info, Severity::Warning, Severity::Error].map(Severity::name))
}

/// Marks a JSON document with the schema it follows (`"<name>/<version>"`, described by
/// docs/schemas/<name>.schema.json) and the tool that wrote it, as the profile's are.
pub fn stamp(document: &mut serde_json::Value, schema: &str) {
    document["schema"] = schema.into();
    document["tool"] = serde_json::json!(Tool::THIS);
}
