//! The record (`-w`): a pcapng file with two Ethernet interfaces, the client side (between the
//! clients and the proxy) and the server side (between the proxy's upstream sockets and the
//! server). A datagram appears where it was sent, annotated with what the proxy decided for it,
//! and again where it was delivered (once per copy), annotated with its delay; a dropped one
//! appears only where it was sent. So each side reads as a capture taken there would: `check`
//! and `stats` find the proxy's losses as gaps in the delivered direction, while gaps already in
//! the sent direction were lost before the proxy.

use std::io;
use std::net::SocketAddr;
use std::path::Path;

use crate::app::OutputFile;
use crate::samplegen::pcap::{udp_frame_into, Link, PcapngWriter};

/// Which side of the proxy a frame was on (its interface number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Client = 0,
    Server = 1,
}

/// The record being written; renamed into place by [`Record::commit`].
pub struct Record {
    out: PcapngWriter<OutputFile>,
    /// The frame being written, reused.
    frame: Vec<u8>,
    pub frames: u64,
}

impl Record {
    pub fn create(path: &Path) -> Result<Record, String> {
        let file = OutputFile::create(path, &[])?;
        let link = Link::Ethernet.linktype();
        let out = PcapngWriter::named(file, &[(link, "client side"), (link, "server side")])
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Record {
            out,
            frame: Vec::new(),
            frames: 0,
        })
    }

    /// One frame: `payload` from `from` to `to` on `side` at `ts_ns` (since the epoch).
    pub fn frame(
        &mut self,
        side: Side,
        ts_ns: u64,
        from: SocketAddr,
        to: SocketAddr,
        payload: &[u8],
        comment: &str,
    ) -> io::Result<()> {
        udp_frame_into(Link::Ethernet, from, to, payload, &mut self.frame)?;
        let frame = std::mem::take(&mut self.frame);
        let written = self.write(side, ts_ns, &frame, comment);
        self.frame = frame;
        written
    }

    /// One frame made already (an Ethernet frame, as [`udp_frame_into`] makes them).
    pub fn write(&mut self, side: Side, ts_ns: u64, frame: &[u8], comment: &str) -> io::Result<()> {
        self.out
            .packet_with_comment(side as u32, ts_ns / 1000, frame, comment)?;
        self.frames += 1;
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn commit(self) -> Result<(), String> {
        let file = self.out.finish().map_err(|e| e.to_string())?;
        file.commit()
    }
}
