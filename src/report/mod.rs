//! Reports: tables, JSON, check, and the Lua dissector.

pub mod catalog;
pub mod check;
pub mod diff;
pub mod export;
pub mod field_list;
pub mod fields;
pub mod filter;
pub mod html;
pub mod junit;
pub mod live;
pub mod lua;
pub mod packets;
pub mod parquet;
pub mod profile;
pub mod profile_hint;
pub mod protocol_doc;
pub mod render;
pub mod stats;
pub mod summary;
pub mod table;
pub mod time;
