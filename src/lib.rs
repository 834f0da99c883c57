//! rtype-inspect: a packet-capture analyzer for the R-Type UDP game protocols.
//!
//! Layers, each depending only on the ones above it:
//! - [`capture`]: files, link layers, IP and UDP;
//! - [`proto`]: the protocol description (the one table of every field) and the violation catalog;
//! - [`datagram`]: dialect detection, headers, CRC, decompression;
//! - [`message`]: message fields, decoded by walking the protocol description;
//! - [`session`]: conversations, chunk sets, sequences, timing, and the events the pipeline emits;
//! - [`display_filter`]: Wireshark's filter language over the registry's fields;
//! - [`pipeline`]: frames through the layers above, in order, into a report's sink;
//! - [`world`]: each conversation's entities rebuilt from what its client received, for the
//!   reports that follow an entity or show the world at a time;
//! - [`tally`]: counts shared by several reports (the summary's messages and findings per rule);
//! - [`app`]: configuration, reading options and the read loop, output files and the terminal;
//! - [`tally`]: what several reports count, below them: the budgets a profile breaks;
//! - [`report`]: tables, JSON, `check`, the Lua generator;
//! - [`lua_runtime`]: the hand-written Lua both generated Wireshark dissectors share;
//! - [`proxy`]: the impairing relay between game clients and a server, and its record;
//! - [`cli`]: the arguments, and which report each command runs.

pub mod app;
pub mod capture;
pub mod cli;
pub mod datagram;
pub mod describe;
pub mod display_filter;
pub mod finding;
pub mod lua_runtime;
pub mod message;
pub mod number;
pub mod pipeline;
pub mod proto;
pub mod proxy;
pub mod report;
pub mod samplegen;
pub mod session;
pub mod tally;
pub mod world;
