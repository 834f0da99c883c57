//! Capture files: a legacy pcap writer (microsecond timestamps, the capture layer's), a pcapng writer with several
//! interfaces, frames built around UDP payloads with etherparse, and gzip.
//!
//! Both writers stream: each record goes straight to the underlying writer, so a capture of any
//! size is written in flat memory. Everything is little-endian (the byte-order magic says so).

use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};

use etherparse::{PacketBuilder, VlanId};

use crate::capture::writer::{self, Precision};
use crate::capture::LinkType;

/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// LINKTYPE_IPV4: raw IPv4, no link header.
pub const LINKTYPE_IPV4: u32 = 228;
/// Snapshot length written in the headers: every frame is captured whole.
const SNAPLEN: u32 = 65_535;

/// How a UDP datagram is framed on the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    Ethernet,
    /// Ethernet with one 802.1Q tag carrying this VLAN id.
    EthernetVlan(u16),
    /// No link header: the frame starts with the IPv4 header.
    RawIpv4,
}

impl Link {
    /// The LINKTYPE_ value of an interface carrying these frames.
    pub const fn linktype(self) -> u32 {
        match self {
            Link::Ethernet | Link::EthernetVlan(_) => LINKTYPE_ETHERNET,
            Link::RawIpv4 => LINKTYPE_IPV4,
        }
    }
}

fn invalid(what: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what.to_string())
}

/// A locally administered MAC address derived from an IP address, so frames are deterministic.
fn mac_of(ip: IpAddr) -> [u8; 6] {
    let tail = match ip {
        IpAddr::V4(v4) => v4.octets(),
        IpAddr::V6(v6) => {
            let o = v6.octets();
            [o[12], o[13], o[14], o[15]]
        }
    };
    [0x02, 0x00, tail[0], tail[1], tail[2], tail[3]]
}

/// A frame carrying `payload` from `from` to `to` over UDP, IPv4 or IPv6 as the addresses are.
pub fn udp_frame(
    link: Link,
    from: SocketAddr,
    to: SocketAddr,
    payload: &[u8],
) -> io::Result<Vec<u8>> {
    let mut frame = Vec::with_capacity(payload.len() + 70);
    udp_frame_into(link, from, to, payload, &mut frame)?;
    Ok(frame)
}

/// [`udp_frame`] into `frame` (cleared first), for a caller that reuses one buffer.
pub fn udp_frame_into(
    link: Link,
    from: SocketAddr,
    to: SocketAddr,
    payload: &[u8],
    frame: &mut Vec<u8>,
) -> io::Result<()> {
    frame.clear();
    let (src_mac, dst_mac) = (mac_of(from.ip()), mac_of(to.ip()));
    let (sport, dport) = (from.port(), to.port());
    let written = match (link, from.ip(), to.ip()) {
        (Link::RawIpv4, IpAddr::V4(s), IpAddr::V4(d)) => {
            PacketBuilder::ipv4(s.octets(), d.octets(), 64)
                .udp(sport, dport)
                .write(frame, payload)
        }
        (Link::RawIpv4, _, _) => return Err(invalid("a raw IPv4 link carries IPv4 only")),
        (Link::Ethernet, IpAddr::V4(s), IpAddr::V4(d)) => {
            PacketBuilder::ethernet2(src_mac, dst_mac)
                .ipv4(s.octets(), d.octets(), 64)
                .udp(sport, dport)
                .write(frame, payload)
        }
        (Link::Ethernet, IpAddr::V6(s), IpAddr::V6(d)) => {
            PacketBuilder::ethernet2(src_mac, dst_mac)
                .ipv6(s.octets(), d.octets(), 64)
                .udp(sport, dport)
                .write(frame, payload)
        }
        (Link::EthernetVlan(id), IpAddr::V4(s), IpAddr::V4(d)) => {
            PacketBuilder::ethernet2(src_mac, dst_mac)
                .single_vlan(VlanId::try_new(id).map_err(invalid)?)
                .ipv4(s.octets(), d.octets(), 64)
                .udp(sport, dport)
                .write(frame, payload)
        }
        (Link::EthernetVlan(id), IpAddr::V6(s), IpAddr::V6(d)) => {
            PacketBuilder::ethernet2(src_mac, dst_mac)
                .single_vlan(VlanId::try_new(id).map_err(invalid)?)
                .ipv6(s.octets(), d.octets(), 64)
                .udp(sport, dport)
                .write(frame, payload)
        }
        _ => {
            return Err(invalid(
                "source and destination are of different IP versions",
            ))
        }
    };
    written.map_err(invalid)?;
    Ok(())
}

fn len32(n: usize) -> io::Result<u32> {
    u32::try_from(n).map_err(|_| invalid("frame larger than 4 GiB"))
}

/// A legacy pcap file (magic `a1b2c3d4`, microsecond timestamps), one link type: the capture
/// layer's writer, with the samples' snapshot length.
pub struct PcapWriter<W: Write> {
    inner: writer::PcapWriter<W>,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header.
    pub fn new(out: W, linktype: u32) -> io::Result<Self> {
        Ok(PcapWriter {
            inner: writer::PcapWriter::new(out, LinkType(linktype), Precision::Micro, SNAPLEN)?,
        })
    }

    /// Writes one record holding `frame` whole.
    pub fn record(&mut self, ts_us: u64, frame: &[u8]) -> io::Result<()> {
        let ts_nanos = ts_us
            .checked_mul(1000)
            .and_then(|ns| i64::try_from(ns).ok())
            .ok_or_else(|| invalid("timestamp past 2106"))?;
        self.inner.write(ts_nanos, frame, len32(frame.len())?)
    }

    /// Flushes and returns the underlying writer.
    pub fn finish(self) -> io::Result<W> {
        self.inner.finish()
    }
}

/// A pcapng file: one section, the given interfaces, Enhanced Packet Blocks (microseconds).
pub struct PcapngWriter<W: Write> {
    out: W,
    interfaces: usize,
    /// The block being written, reused: a long recording allocates nothing per packet.
    block: Vec<u8>,
}

impl<W: Write> PcapngWriter<W> {
    /// Writes the Section Header Block and one Interface Description Block per link type.
    pub fn new(out: W, linktypes: &[u32]) -> io::Result<Self> {
        let unnamed: Vec<(u32, &str)> = linktypes.iter().map(|&l| (l, "")).collect();
        Self::named(out, &unnamed)
    }

    /// [`PcapngWriter::new`] with a name (`if_name`) for each interface; an empty one is left out.
    pub fn named(mut out: W, interfaces: &[(u32, &str)]) -> io::Result<Self> {
        let mut shb = Vec::with_capacity(16);
        shb.extend(0x1A2B_3C4Du32.to_le_bytes());
        shb.extend(1u16.to_le_bytes());
        shb.extend(0u16.to_le_bytes());
        shb.extend((-1i64).to_le_bytes()); // section length: not given
        write_block(&mut out, 0x0A0D_0D0A, &shb)?;
        for &(linktype, name) in interfaces {
            let link =
                u16::try_from(linktype).map_err(|_| invalid("pcapng link types are 16-bit"))?;
            let mut idb = Vec::with_capacity(8);
            idb.extend(link.to_le_bytes());
            idb.extend(0u16.to_le_bytes());
            idb.extend(SNAPLEN.to_le_bytes());
            push_options(&mut idb, 2, name)?; // if_name
            write_block(&mut out, 1, &idb)?;
        }
        Ok(PcapngWriter {
            out,
            interfaces: interfaces.len(),
            block: Vec::new(),
        })
    }

    /// Writes `frame` as captured on interface `interface` (an index into the link types given).
    pub fn packet(&mut self, interface: u32, ts_us: u64, frame: &[u8]) -> io::Result<()> {
        self.packet_with_comment(interface, ts_us, frame, "")
    }

    /// [`PcapngWriter::packet`] with an `opt_comment` (Wireshark shows it as the packet's
    /// comment); an empty one is left out.
    pub fn packet_with_comment(
        &mut self,
        interface: u32,
        ts_us: u64,
        frame: &[u8],
        comment: &str,
    ) -> io::Result<()> {
        if interface as usize >= self.interfaces {
            return Err(invalid(format!("no interface {interface}")));
        }
        let len = len32(frame.len())?;
        let mut epb = std::mem::take(&mut self.block);
        epb.clear();
        epb.extend(interface.to_le_bytes());
        epb.extend(((ts_us >> 32) as u32).to_le_bytes());
        epb.extend((ts_us as u32).to_le_bytes());
        epb.extend(len.to_le_bytes());
        epb.extend(len.to_le_bytes());
        epb.extend_from_slice(frame);
        epb.resize(epb.len() + (4 - frame.len() % 4) % 4, 0);
        push_options(&mut epb, 1, comment)?; // opt_comment
        let written = write_block(&mut self.out, 6, &epb);
        self.block = epb;
        written
    }

    /// Flushes the underlying writer (a file being recorded can then be read while it grows).
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// One text option (`code`, padded to 32 bits) and the end of options; nothing when `text` is
/// empty.
fn push_options(body: &mut Vec<u8>, code: u16, text: &str) -> io::Result<()> {
    if text.is_empty() {
        return Ok(());
    }
    let len = u16::try_from(text.len()).map_err(|_| invalid("pcapng option longer than 64 KiB"))?;
    body.extend(code.to_le_bytes());
    body.extend(len.to_le_bytes());
    body.extend_from_slice(text.as_bytes());
    body.resize(body.len() + (4 - text.len() % 4) % 4, 0);
    body.extend([0u8; 4]); // opt_endofopt
    Ok(())
}

/// A pcapng block: type, total length, body padded to 32 bits, total length again.
fn write_block<W: Write>(out: &mut W, block_type: u32, body: &[u8]) -> io::Result<()> {
    let padding = (4 - body.len() % 4) % 4;
    let total = len32(12 + body.len() + padding)?;
    out.write_all(&block_type.to_le_bytes())?;
    out.write_all(&total.to_le_bytes())?;
    out.write_all(body)?;
    out.write_all(&[0u8; 3][..padding])?;
    out.write_all(&total.to_le_bytes())
}

/// Gzips `bytes` deterministically (no file name, modification time 0).
pub fn gzip(bytes: &[u8]) -> io::Result<Vec<u8>> {
    let mut encoder = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes)?;
    encoder.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn frames_have_the_expected_sizes() {
        let (c, s) = (addr("10.0.0.2:41002"), addr("10.0.0.1:50010"));
        assert_eq!(
            udp_frame(Link::Ethernet, c, s, &[1, 2, 3]).unwrap().len(),
            14 + 20 + 8 + 3
        );
        assert_eq!(
            udp_frame(Link::EthernetVlan(42), c, s, &[1]).unwrap().len(),
            18 + 20 + 8 + 1
        );
        assert_eq!(udp_frame(Link::RawIpv4, c, s, &[]).unwrap().len(), 20 + 8);
        let (c6, s6) = (addr("[fd00::5]:41005"), addr("[fd00::1]:50010"));
        assert_eq!(
            udp_frame(Link::Ethernet, c6, s6, &[]).unwrap().len(),
            14 + 40 + 8
        );
        assert!(udp_frame(Link::RawIpv4, c6, s6, &[]).is_err());
        assert!(udp_frame(Link::Ethernet, c, s6, &[]).is_err());
    }

    #[test]
    fn pcap_layout() {
        let mut w = PcapWriter::new(Vec::new(), LINKTYPE_ETHERNET).unwrap();
        w.record(1_767_225_600_000_001, &[9; 5]).unwrap();
        let bytes = w.finish().unwrap();
        assert_eq!(bytes.len(), 24 + 16 + 5);
        assert_eq!(&bytes[..4], &[0xD4, 0xC3, 0xB2, 0xA1]);
        assert_eq!(&bytes[24..28], &1_767_225_600u32.to_le_bytes());
        assert_eq!(&bytes[28..32], &1u32.to_le_bytes());
    }

    #[test]
    fn pcapng_blocks_are_padded() {
        let mut w = PcapngWriter::new(Vec::new(), &[LINKTYPE_ETHERNET, LINKTYPE_IPV4]).unwrap();
        w.packet(1, 5, &[1, 2, 3, 4, 5]).unwrap();
        assert!(w.packet(2, 5, &[]).is_err());
        let bytes = w.finish().unwrap();
        assert_eq!(bytes.len(), 28 + 20 + 20 + (32 + 8));
        assert_eq!(bytes.len() % 4, 0);
    }
}
