//! Reports: tables, JSON, check, and the Lua dissector.

pub mod catalog;
pub mod lua;
pub mod summary;
pub mod table;
pub mod time;
