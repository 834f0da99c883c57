//! Capture layer: files, link layers, IP and UDP.
//!
//! - [`reader`]: pcap / pcapng (optionally gzip) records, streamed in bounded memory;
//! - [`link`]: link-layer, IP and UDP decoding of one frame, without allocation, with small
//!   readers beside it for PPP, NFLOG, Wi-Fi (802.11, radiotap, PPI) and tunnels (GRE, ERSPAN,
//!   IP in IP, MPLS, MACsec, VXLAN, Geneve);
//! - [`defrag`]: bounded reassembly of fragmented UDP datagrams;
//! - [`writer`]: a streaming pcap writer (what `live -w` writes, and the sample generator);
//! - [`live`]: live capture on a Linux interface (AF_PACKET, no libpcap).
//!
//! Everything here treats the capture as hostile: no input may panic, loop
//! forever, or make memory grow with the file's size.

pub mod defrag;
mod ip;
pub mod link;
mod linktype;
pub mod live;
mod nflog;
mod ppp;
pub mod reader;
mod source;
mod timestamp;
mod tunnel;
mod wifi;
mod window;
pub mod writer;

#[cfg(test)]
mod testutil;

pub use defrag::{DefragOutcome, DefragStats, Defragmenter, OwnedUdp};
pub use link::{udp_from_frame, Detached, LinkOutcome, LinkType, UdpDatagram};
pub use reader::{
    thread_cpu_nanos, Ahead, CaptureError, CaptureFormat, CaptureInfo, CaptureReader, Frame,
    ReadEnd, StageCpu, Truncation,
};
