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
pub mod profile_hint;
pub mod protocol_doc;
pub mod render;
pub mod sections;
pub mod stats;
pub mod summary;
pub mod table;
pub mod time;
pub mod world;

/// Marks a JSON document with the schema it follows (`"<name>/<version>"`, described by
/// docs/schemas/<name>.schema.json) and the tool that wrote it, as the profile's are.
pub fn stamp(document: &mut serde_json::Value, schema: &str) {
    document["schema"] = schema.into();
    document["tool"] =
        serde_json::json!({"name": env!("CARGO_PKG_NAME"), "version": env!("CARGO_PKG_VERSION")});
}
