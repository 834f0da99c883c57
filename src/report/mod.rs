//! Reports: tables, JSON, check, and the Lua dissector.

pub mod catalog;
pub mod check;
pub mod junit;
pub mod stats;
pub mod lua;
pub mod summary;
pub mod table;
pub mod time;
pub mod fields;
pub mod filter;
pub mod render;
pub mod export;
pub mod packets;
pub mod protocol_doc;
pub mod live;
