//! Tunnels and the link-layer shims of port mirrors, cloud VPCs and data-centre fabrics, down to
//! the packet they carry: IP in IP and 6in4, GRE (with ERSPAN types I-III and PPTP), MPLS,
//! MACsec without encryption, VXLAN and Geneve (by their IANA ports, as Wireshark decodes them).

use super::ip::{PROTO_GRE, PROTO_IPV4, PROTO_IPV6};
use super::link::{
    after_ethertype, be16, ethernet, truncated, LinkOutcome, Network, Start, UdpDatagram,
    ETHERTYPE_TEB,
};

const VXLAN_PORT: u16 = 4789;
const GENEVE_PORT: u16 = 6081;
const ERSPAN_I_II: u16 = 0x88be;
const ERSPAN_III: u16 = 0x22eb;

/// The packet an IP tunnel carries, its payload at `at`.
pub(super) fn in_ip(data: &[u8], protocol: u8, at: usize) -> Start {
    match protocol {
        PROTO_IPV4 => Ok((Network::Ipv4, at)),
        PROTO_IPV6 => Ok((Network::Ipv6, at)),
        PROTO_GRE => gre(data, at),
        _ => Err(LinkOutcome::NotUdp),
    }
}

/// The frame a VXLAN or Geneve datagram carries, or None when `udp` is neither.
pub(super) fn in_udp(data: &[u8], udp: &UdpDatagram<'_>) -> Option<Start> {
    let at = udp.payload_offset;
    let header = udp.payload.get(..8)?;
    match udp.dst.port() {
        // The I flag: a valid VNI.
        VXLAN_PORT if header[0] & 0x08 != 0 => Some(ethernet(data, at + 8)),
        // Version 0; options in 4-byte words; an EtherType.
        GENEVE_PORT if header[0] >> 6 == 0 => {
            let options = usize::from(header[0] & 0x3f) * 4;
            let protocol = u16::from_be_bytes([header[2], header[3]]);
            Some(after_ethertype(data, at + 8 + options, protocol))
        }
        _ => None,
    }
}

/// A GRE header at `at` (RFC 2784 and 2890; version 1 is PPTP's), and what follows it.
fn gre(data: &[u8], at: usize) -> Start {
    let h = data
        .get(at..at + 4)
        .ok_or(truncated(at, "truncated GRE header"))?;
    let (flags, version) = (h[0], h[1] & 0x07);
    let protocol = u16::from_be_bytes([h[2], h[3]]);
    let sequence = flags & 0x10 != 0;
    let len = match version {
        // Checksum or routing: 4; key: 4; sequence: 4. Routing entries are obsolete.
        0 if flags & 0x40 != 0 => return Err(LinkOutcome::NotUdp),
        0 => {
            4 + 4 * usize::from(flags & 0x80 != 0)
                + 4 * usize::from(flags & 0x20 != 0)
                + 4 * usize::from(sequence)
        }
        // Key (always), sequence, acknowledgement.
        1 => 8 + 4 * usize::from(sequence) + 4 * usize::from(h[1] & 0x80 != 0),
        _ => return Err(LinkOutcome::NotUdp),
    };
    let at = at + len;
    if data.len() < at {
        return Err(truncated(at - len, "truncated GRE header"));
    }
    match protocol {
        // ERSPAN type I has no header of its own (and no sequence number); type II has 8 bytes.
        ERSPAN_I_II => after_ethertype(data, at + 8 * usize::from(sequence), ETHERTYPE_TEB),
        // ERSPAN type III: 12 bytes, and an 8-byte platform subheader when its O bit is set.
        ERSPAN_III => {
            let o = data
                .get(at + 11)
                .ok_or(truncated(at, "truncated ERSPAN header"))?;
            after_ethertype(data, at + 12 + 8 * usize::from(o & 1), ETHERTYPE_TEB)
        }
        _ => after_ethertype(data, at, protocol),
    }
}

/// What an MPLS label stack carries.
pub(super) enum AfterMpls {
    /// An IP packet (its first nibble says the version).
    Ip((Network, usize)),
    /// An Ethernet pseudowire: the Ethernet header starts here, after the control word.
    Ethernet(usize),
}

/// The MPLS label stack at `at`, to its bottom label, and what it carries: the first nibble
/// decides (4, 6: IP; 0: a pseudowire control word, then Ethernet), as Wireshark guesses it.
pub(super) fn mpls(data: &[u8], mut at: usize) -> Result<AfterMpls, LinkOutcome<'static>> {
    loop {
        let label = data
            .get(at..at + 4)
            .ok_or(truncated(at, "truncated MPLS label"))?;
        at += 4;
        if label[2] & 0x01 != 0 {
            break;
        }
    }
    match data.get(at).map(|b| b >> 4) {
        Some(4) => Ok(AfterMpls::Ip((Network::Ipv4, at))),
        Some(6) => Ok(AfterMpls::Ip((Network::Ipv6, at))),
        Some(0) => Ok(AfterMpls::Ethernet(at + 4)),
        Some(_) => Err(LinkOutcome::NotUdp),
        None => Err(truncated(at, "truncated MPLS payload")),
    }
}

/// The MACsec SecTAG at `at` (after its EtherType): the EtherType of the data it protects and
/// where that data starts. Encrypted or modified data cannot be read: not UDP.
pub(super) fn macsec(data: &[u8], at: usize) -> Result<(u16, usize), LinkOutcome<'static>> {
    let tci = *data.get(at).ok_or(truncated(at, "truncated MACsec tag"))?;
    // E (encrypted), C (changed).
    if tci & 0x0c != 0 {
        return Err(LinkOutcome::NotUdp);
    }
    // TCI and AN, short length, packet number; then the SCI when the SC bit says so.
    let tag = 6 + 8 * usize::from(tci & 0x20 != 0);
    let ethertype = be16(data, at + tag).ok_or(truncated(at, "truncated MACsec tag"))?;
    Ok((ethertype, at + tag + 2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::link::{udp_from_frame, LinkType};
    use crate::capture::testutil::*;
    use crate::samplegen::encap::Encap;

    #[test]
    fn every_tunnel_carries_the_datagram_whole_in_both_ip_versions() {
        for ip in [raw_v4_udp(b"in a tunnel"), raw_v6_udp(b"in a tunnel")] {
            for &encap in Encap::ALL {
                let frame = encap.wrap(&ip);
                match udp_from_frame(encap.link_type(), &frame) {
                    LinkOutcome::Udp(u) => {
                        assert_eq!(u.payload, b"in a tunnel", "{encap:?}");
                        // Where the payload lies, before any trailer (ICV, FCS, padding).
                        let at = frame.windows(11).rposition(|w| w == b"in a tunnel");
                        assert_eq!(Some(u.payload_offset), at, "{encap:?}");
                    }
                    other => panic!("{encap:?}: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn tunnels_cut_short_are_malformed_and_never_panic() {
        let ip = raw_v4_udp(b"cut");
        for &encap in Encap::ALL {
            let frame = encap.wrap(&ip);
            for cut in 0..frame.len() {
                let _ = udp_from_frame(encap.link_type(), &frame[..cut]);
            }
        }
        let gre = Encap::Gre.wrap(&ip);
        assert_eq!(
            udp_from_frame(LinkType::ETHERNET, &gre[..14 + 20 + 6]),
            truncated(34, "truncated GRE header")
        );
    }

    #[test]
    fn what_cannot_be_read_is_not_udp() {
        let ip = raw_v4_udp(b"x");
        // MACsec, encrypted.
        let mut encrypted = Encap::Macsec.wrap(&ip);
        encrypted[14] |= 0x0c;
        assert_eq!(
            udp_from_frame(LinkType::ETHERNET, &encrypted),
            LinkOutcome::NotUdp
        );
        // GRE with (obsolete) routing.
        let mut routed = Encap::Gre.wrap(&ip);
        routed[34] |= 0x40;
        assert_eq!(
            udp_from_frame(LinkType::ETHERNET, &routed),
            LinkOutcome::NotUdp
        );
        // A VXLAN datagram without its I flag is the UDP datagram itself.
        let mut plain = Encap::Vxlan.wrap(&ip);
        plain[42] = 0;
        match udp_from_frame(LinkType::ETHERNET, &plain) {
            LinkOutcome::Udp(u) => assert_eq!(u.dst.port(), VXLAN_PORT),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn nesting_is_bounded() {
        // IP in IP, 20 deep.
        let mut ip = raw_v4_udp(b"deep");
        for _ in 0..20 {
            let mut outer = Encap::IpInIp.wrap(&ip);
            ip = outer.split_off(14);
        }
        assert_eq!(
            udp_from_frame(LinkType::RAW, &ip),
            truncated(0, "tunnels nested too deep")
        );
    }
}
