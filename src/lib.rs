//! rtype-inspect: a packet-capture analyzer for the R-Type UDP game protocols.
//!
//! Layers, each depending only on the ones above it:
//! - [`capture`]: files, link layers, IP and UDP;
//! - [`proto`]: the protocol description (the one table of every field) and the violation catalog;
//! - [`datagram`]: dialect detection, headers, CRC, decompression;
//! - [`message`]: message fields, decoded by walking the protocol description;
//! - [`session`]: conversations, chunk sets, sequences, timing;
//! - [`report`]: tables, JSON, `check`, the Lua generator.

pub mod capture;
pub mod cli;
pub mod datagram;
pub mod message;
pub mod pipeline;
pub mod proto;
pub mod report;
pub mod samplegen;
pub mod session;
