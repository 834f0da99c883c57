//! Each datagram the proxy saw, once per side it was on (where it was sent, and where each copy
//! was delivered): made into an Ethernet frame once, decoded ([`Decoder`]), and written to the
//! record (`-w`) when there is one, with what the proxy did in its comment.

use std::fmt;
use std::io;
use std::net::SocketAddr;

use super::decode::{Decoder, Ends, Figures};
use super::record::{Record, Side};
use crate::samplegen::pcap::{udp_frame_into, Link};

#[derive(Default)]
pub struct Tap {
    /// The frame being made, reused.
    frame: Vec<u8>,
    /// Its comment, reused.
    comment: String,
    pub record: Option<Record>,
    pub decoder: Decoder,
}

impl Tap {
    /// `payload` went from `from` to `to` on `side` at `ts_ns` (since the epoch); `comment`
    /// writes what the proxy did with it, for the record.
    pub fn seen(
        &mut self,
        side: Side,
        ts_ns: u64,
        (from, to): (SocketAddr, SocketAddr),
        payload: &[u8],
        comment: impl FnOnce(&mut String) -> fmt::Result,
    ) -> io::Result<()> {
        udp_frame_into(Link::Ethernet, from, to, payload, &mut self.frame)?;
        self.decoder.frame(side, ts_ns, &self.frame);
        if let Some(record) = &mut self.record {
            self.comment.clear();
            let _ = comment(&mut self.comment);
            record.write(side, ts_ns, &self.frame, &self.comment)?;
        }
        Ok(())
    }

    /// Ends the decoding: the figures of the clients at `ends`, and the record to commit.
    pub fn finish(self, ends: &[Ends]) -> (Vec<Figures>, Option<Record>) {
        (self.decoder.finish(ends), self.record)
    }
}
