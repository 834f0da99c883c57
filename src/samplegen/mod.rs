//! Deterministic sample captures of the rtype dialect, encoded from the protocol description.
//!
//! - [`encode`]: message values (JSON, by field name) to bytes, by walking the description's nodes;
//! - [`rtype`]: whole datagrams (header, LZ4, CRC), with knobs to break each datagram rule;
//! - [`pcap`]: pcap and pcapng writers, frames, gzip;
//! - [`encap`]: an IP packet re-wrapped in each link layer and tunnel the capture layer reads;
//! - [`script`]: peers, clock, the game world, and the script sessions are written with;
//! - [`scenarios`]: the named samples and their expected findings, written by the clean session
//!   (`clean`) and the violation scripts (`violations`);
//! - [`generate_large`]: a big capture for benchmarks, streamed.
//!
//! Everything is deterministic: fixed seeds, fixed timestamps from 2026-01-01T00:00:00Z at 60 Hz,
//! byte-identical output on every run.

mod clean;
pub mod encap;
pub mod encode;
mod large;
pub mod noise;
pub mod pcap;
pub mod rt;
pub mod rtnp;
pub mod rtype;
pub mod scenarios;
pub mod script;
mod violations;

pub use large::{generate_large, generate_large_counted};
pub use scenarios::{scenario, write_all, Scenario, SCENARIOS};

#[cfg(test)]
mod tests;
