//! Link layers down to the start of the IP header.
//!
//! Every supported link type is reduced to "IPv4 / IPv6 / by first nibble at
//! offset N", then the `ip` module takes over. Parsing is by hand over `get()`
//! slices: no panics, no allocation, exact byte offsets for messages.

use std::net::SocketAddr;

use super::ip::{self, IpContent};
pub use super::linktype::LinkType;
use super::{nflog, ppp, tunnel, wifi};

/// A UDP datagram found in a frame, borrowed from the frame's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpDatagram<'a> {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    /// The UDP payload, cut to the UDP length field when the capture holds more
    /// (Ethernet padding, trailers). When the capture holds less (snaplen), it is
    /// what was captured and `truncated_by` counts the missing bytes.
    pub payload: &'a [u8],
    pub truncated_by: u32,
    /// Offset of `payload` inside `Frame.data`, for messages and hex dumps.
    pub payload_offset: usize,
}

/// What a frame holds, as far as a UDP analyzer cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkOutcome<'a> {
    Udp(UdpDatagram<'a>),
    /// Valid IP carrying another protocol, or a non-IP frame (ARP, LLC...).
    NotUdp,
    /// A fragment of a UDP datagram: hand the frame to the
    /// [`Defragmenter`](super::Defragmenter).
    Fragment,
    /// A link type this module does not decode.
    UnsupportedLink,
    /// Broken headers; `offset` is the byte in the frame where the bad header starts.
    Malformed {
        offset: usize,
        what: &'static str,
    },
}

/// A [`LinkOutcome`] that outlives its frame: the UDP payload is kept as its length (its offset
/// is in the datagram), so that one thread's parse of a frame serves another that has the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detached {
    outcome: LinkOutcome<'static>,
    payload_len: usize,
}

impl LinkOutcome<'_> {
    pub fn detach(&self) -> Detached {
        Detached {
            outcome: self.with_payload(&[]),
            payload_len: match self {
                LinkOutcome::Udp(udp) => udp.payload.len(),
                _ => 0,
            },
        }
    }

    /// The same outcome, with `payload` as its UDP datagram's payload.
    fn with_payload<'b>(&self, payload: &'b [u8]) -> LinkOutcome<'b> {
        match self {
            LinkOutcome::Udp(udp) => LinkOutcome::Udp(UdpDatagram {
                src: udp.src,
                dst: udp.dst,
                payload,
                truncated_by: udp.truncated_by,
                payload_offset: udp.payload_offset,
            }),
            LinkOutcome::NotUdp => LinkOutcome::NotUdp,
            LinkOutcome::Fragment => LinkOutcome::Fragment,
            LinkOutcome::UnsupportedLink => LinkOutcome::UnsupportedLink,
            LinkOutcome::Malformed { offset, what } => LinkOutcome::Malformed {
                offset: *offset,
                what,
            },
        }
    }
}

impl Detached {
    /// The outcome again, over the frame's bytes `data` it was found in.
    pub fn attach<'a>(&self, data: &'a [u8]) -> LinkOutcome<'a> {
        let payload = match &self.outcome {
            LinkOutcome::Udp(udp) => {
                let at = udp.payload_offset;
                data.get(at..at + self.payload_len).unwrap_or_default()
            }
            _ => &[],
        };
        self.outcome.with_payload(payload)
    }
}

/// Finds the UDP datagram in a captured frame.
pub fn udp_from_frame(link_type: LinkType, data: &[u8]) -> LinkOutcome<'_> {
    match decode(link_type, data) {
        IpContent::Udp(udp) => LinkOutcome::Udp(udp),
        IpContent::Fragment(_) => LinkOutcome::Fragment,
        IpContent::Other(outcome) => outcome,
        // `decode` follows every tunnel.
        IpContent::Tunnel { .. } => LinkOutcome::NotUdp,
    }
}

/// Tunnels followed inside one frame (GRE in VXLAN in ...); deeper ones are malformed.
const MAX_TUNNELS: usize = 8;

/// Same walk as [`udp_from_frame`] but keeps the fragment details, so the
/// defragmenter sees exactly what the classifier saw. Tunnels (IP in IP, GRE, VXLAN, Geneve) are
/// followed to the packet they carry.
pub(crate) fn decode(link_type: LinkType, data: &[u8]) -> IpContent<'_> {
    let mut start = link_start(link_type, data, 0, true);
    for _ in 0..=MAX_TUNNELS {
        let content = match start {
            Ok((Network::Ipv4, at)) => ip::parse_ipv4(data, at),
            Ok((Network::Ipv6, at)) => ip::parse_ipv6(data, at),
            Ok((Network::ByVersion, at)) => match data.get(at).map(|b| b >> 4) {
                Some(4) => ip::parse_ipv4(data, at),
                Some(6) => ip::parse_ipv6(data, at),
                Some(_) => return malformed(at, "unknown IP version"),
                None => return malformed(at, "truncated IP header"),
            },
            Err(outcome) => return IpContent::Other(outcome),
        };
        start = match content {
            IpContent::Tunnel { protocol, at } => tunnel::in_ip(data, protocol, at),
            IpContent::Udp(udp) => match tunnel::in_udp(data, &udp) {
                Some(inner) => inner,
                None => return IpContent::Udp(udp),
            },
            other => return other,
        };
    }
    malformed(0, "tunnels nested too deep")
}

fn malformed(offset: usize, what: &'static str) -> IpContent<'static> {
    IpContent::Other(LinkOutcome::Malformed { offset, what })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Network {
    Ipv4,
    Ipv6,
    /// Raw IP: the version nibble decides.
    ByVersion,
}

/// Where the network header starts, or the outcome when it never does.
pub(super) type Start = Result<(Network, usize), LinkOutcome<'static>>;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
/// 802.1Q, 802.1ad (QinQ outer) and the pre-standard QinQ tags 0x9100-0x9300.
const VLAN_TAGS: [u16; 5] = [0x8100, 0x88a8, 0x9100, 0x9200, 0x9300];
/// Transparent Ethernet bridging: an Ethernet frame follows (GRE, Geneve).
pub(super) const ETHERTYPE_TEB: u16 = 0x6558;
const ETHERTYPE_MPLS: [u16; 2] = [0x8847, 0x8848];
const ETHERTYPE_PPPOE_SESSION: u16 = 0x8864;
/// PPP (PPTP's enhanced GRE).
const ETHERTYPE_PPP: u16 = 0x880b;
const ETHERTYPE_MACSEC: u16 = 0x88e5;
/// ARPHRD_NETLINK: the SLL protocol field holds a netlink family, not an EtherType.
const ARPHRD_NETLINK: u16 = 824;

pub(super) fn be16(data: &[u8], at: usize) -> Option<u16> {
    data.get(at..at + 2)
        .map(|b| u16::from_be_bytes([b[0], b[1]]))
}

/// A header cut short at `offset`.
pub(super) fn truncated(offset: usize, what: &'static str) -> LinkOutcome<'static> {
    LinkOutcome::Malformed { offset, what }
}

/// Where the network header starts in a frame of `link_type` whose link header is at `at`.
/// `outer` is false inside a header that names the frame's link type (PPI, PKTAP): those do not
/// nest.
fn link_start(link_type: LinkType, data: &[u8], at: usize, outer: bool) -> Start {
    match link_type {
        LinkType::ETHERNET => ethernet(data, at),
        LinkType::LINUX_SLL => {
            // packet type(2) ARPHRD(2) addr len(2) addr(8) protocol(2)
            let protocol =
                be16(data, at + 14).ok_or(truncated(at, "truncated Linux cooked header"))?;
            if be16(data, at + 2) == Some(ARPHRD_NETLINK) {
                return Err(LinkOutcome::NotUdp);
            }
            after_ethertype(data, at + 16, protocol)
        }
        LinkType::LINUX_SLL2 => {
            // protocol(2) reserved(2) ifindex(4) ARPHRD(2) packet type(1) addr len(1) addr(8)
            if data.len() < at + 20 {
                return Err(truncated(at, "truncated Linux cooked v2 header"));
            }
            if be16(data, at + 8) == Some(ARPHRD_NETLINK) {
                return Err(LinkOutcome::NotUdp);
            }
            after_ethertype(data, at + 20, be16(data, at).unwrap_or(0))
        }
        LinkType::RAW | LinkType::RAW_12 | LinkType::RAW_14 => Ok((Network::ByVersion, at)),
        LinkType::IPV4 => Ok((Network::Ipv4, at)),
        LinkType::IPV6 => Ok((Network::Ipv6, at)),
        LinkType::NULL | LinkType::LOOP => {
            // NULL stores the family in the capturing host's byte order, LOOP in
            // network order; families are small, so whichever reading fits 16 bits wins.
            let b = data
                .get(at..at + 4)
                .ok_or(truncated(at, "truncated loopback header"))?;
            let mut family = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            if family > 0xffff {
                family = family.swap_bytes();
            }
            match family {
                2 => Ok((Network::Ipv4, at + 4)),
                // AF_INET6 is 24 on NetBSD/OpenBSD, 28 on FreeBSD, 30 on macOS.
                24 | 28 | 30 => Ok((Network::Ipv6, at + 4)),
                _ => Err(LinkOutcome::NotUdp),
            }
        }
        LinkType::PPP | LinkType::PPP_HDLC => ppp::frame(data, at),
        LinkType::NFLOG => nflog::payload(data, at),
        LinkType::IEEE802_11 => wifi::ieee802_11(data, at),
        LinkType::IEEE802_11_RADIOTAP => wifi::radiotap(data, at),
        LinkType::PPI if outer => {
            let (inner, at) = wifi::ppi(data, at)?;
            link_start(inner, data, at, false)
        }
        LinkType::PKTAP if outer => {
            let (inner, at) = pktap(data, at)?;
            link_start(inner, data, at, false)
        }
        _ => Err(LinkOutcome::UnsupportedLink),
    }
}

/// macOS PKTAP: the header's length and the frame's own link type (host byte order: little
/// endian on every Mac), then the frame.
fn pktap(data: &[u8], at: usize) -> Result<(LinkType, usize), LinkOutcome<'static>> {
    let h = data
        .get(at..at + 12)
        .ok_or(truncated(at, "truncated PKTAP header"))?;
    let len = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize;
    let dlt = u32::from_le_bytes([h[8], h[9], h[10], h[11]]);
    if len < 12 || data.len() < at + len {
        return Err(truncated(at, "bad PKTAP header length"));
    }
    Ok((LinkType::from_field(dlt), at + len))
}

/// An Ethernet header at `at`, and what follows it.
pub(super) fn ethernet(data: &[u8], at: usize) -> Start {
    let ethertype = be16(data, at + 12).ok_or(truncated(at, "truncated Ethernet header"))?;
    after_ethertype(data, at + 14, ethertype)
}

/// Follows an EtherType through any number of VLAN tags, MPLS labels, MACsec tags and Ethernet
/// headers (a bridged frame, an MPLS pseudowire). Each step consumes at least 4 bytes, so the
/// loop ends with the data.
pub(super) fn after_ethertype(data: &[u8], mut at: usize, mut ethertype: u16) -> Start {
    loop {
        match ethertype {
            ETHERTYPE_IPV4 => return Ok((Network::Ipv4, at)),
            ETHERTYPE_IPV6 => return Ok((Network::Ipv6, at)),
            t if VLAN_TAGS.contains(&t) => {
                ethertype = be16(data, at + 2).ok_or(truncated(at, "truncated VLAN tag"))?;
                at += 4;
            }
            ETHERTYPE_TEB => {
                ethertype =
                    be16(data, at + 12).ok_or(truncated(at, "truncated Ethernet header"))?;
                at += 14;
            }
            t if ETHERTYPE_MPLS.contains(&t) => match tunnel::mpls(data, at)? {
                tunnel::AfterMpls::Ip(start) => return Ok(start),
                tunnel::AfterMpls::Ethernet(next) => (ethertype, at) = (ETHERTYPE_TEB, next),
            },
            ETHERTYPE_MACSEC => (ethertype, at) = tunnel::macsec(data, at)?,
            ETHERTYPE_PPPOE_SESSION => return ppp::protocol(data, at + 6),
            ETHERTYPE_PPP => return ppp::frame(data, at),
            _ => return Err(LinkOutcome::NotUdp),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::testutil::*;
    use etherparse::{PacketBuilder, VlanId};

    const PAYLOAD: &[u8] = b"hello rtype";

    fn expect_udp<'a>(outcome: LinkOutcome<'a>) -> UdpDatagram<'a> {
        match outcome {
            LinkOutcome::Udp(u) => u,
            other => panic!("expected UDP, got {other:?}"),
        }
    }

    fn check_v4(lt: LinkType, frame: &[u8], ip_offset: usize) {
        let u = expect_udp(udp_from_frame(lt, frame));
        assert_eq!(u.src, "10.0.0.1:4000".parse().unwrap(), "{lt}");
        assert_eq!(u.dst, "10.0.0.2:5000".parse().unwrap());
        assert_eq!(u.payload, PAYLOAD);
        assert_eq!(u.truncated_by, 0);
        assert_eq!(u.payload_offset, ip_offset + 20 + 8);
    }

    fn check_v6(lt: LinkType, frame: &[u8], ip_offset: usize) {
        let u = expect_udp(udp_from_frame(lt, frame));
        assert_eq!(u.src, "[2001:db8::1]:4000".parse().unwrap(), "{lt}");
        assert_eq!(u.dst, "[2001:db8::2]:5000".parse().unwrap());
        assert_eq!(u.payload, PAYLOAD);
        assert_eq!(u.payload_offset, ip_offset + 40 + 8);
    }

    #[test]
    fn ethernet_plain_vlan_qinq_and_stacked() {
        let plain = eth_v4_udp(PAYLOAD);
        check_v4(LinkType::ETHERNET, &plain, 14);

        let mut single = Vec::new();
        PacketBuilder::ethernet2([1; 6], [2; 6])
            .single_vlan(VlanId::try_new(42).unwrap())
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .udp(4000, 5000)
            .write(&mut single, PAYLOAD)
            .unwrap();
        check_v4(LinkType::ETHERNET, &single, 18);

        let mut double = Vec::new();
        PacketBuilder::ethernet2([1; 6], [2; 6])
            .double_vlan(VlanId::try_new(1).unwrap(), VlanId::try_new(2).unwrap())
            .ipv6(V6_SRC, V6_DST, 64)
            .udp(4000, 5000)
            .write(&mut double, PAYLOAD)
            .unwrap();
        check_v6(LinkType::ETHERNET, &double, 22);

        // 802.1ad outer + two 802.1Q tags, built by hand.
        let ip = raw_v4_udp(PAYLOAD);
        let mut stacked = vec![2u8; 12];
        stacked.extend_from_slice(&[
            0x88, 0xa8, 0, 1, 0x81, 0x00, 0, 2, 0x81, 0x00, 0, 3, 0x08, 0x00,
        ]);
        stacked.extend_from_slice(&ip);
        check_v4(LinkType::ETHERNET, &stacked, 26);

        // A tag cut short.
        assert_eq!(
            udp_from_frame(LinkType::ETHERNET, &stacked[..24]),
            LinkOutcome::Malformed {
                offset: 22,
                what: "truncated VLAN tag"
            }
        );
        assert_eq!(
            udp_from_frame(LinkType::ETHERNET, &plain[..13]),
            LinkOutcome::Malformed {
                offset: 0,
                what: "truncated Ethernet header"
            }
        );
    }

    #[test]
    fn ethernet_padding_is_trimmed() {
        // A 1-byte payload makes a 43-byte frame; Ethernet pads it to 60.
        let mut frame = eth_v4_udp(b"x");
        frame.resize(60, 0xee);
        let u = expect_udp(udp_from_frame(LinkType::ETHERNET, &frame));
        assert_eq!(u.payload, b"x");
        assert_eq!(u.truncated_by, 0);
        assert_eq!(u.payload_offset, 42);
    }

    #[test]
    fn snaplen_cut_payload_reports_missing_bytes() {
        let frame = eth_v4_udp(PAYLOAD);
        let cut = &frame[..frame.len() - 4];
        let u = expect_udp(udp_from_frame(LinkType::ETHERNET, cut));
        assert_eq!(u.payload, &PAYLOAD[..PAYLOAD.len() - 4]);
        assert_eq!(u.truncated_by, 4);
        // Cut inside the UDP header.
        assert_eq!(
            udp_from_frame(LinkType::ETHERNET, &frame[..14 + 20 + 5]),
            LinkOutcome::Malformed {
                offset: 34,
                what: "truncated UDP header"
            }
        );
    }

    #[test]
    fn non_ip_and_non_udp() {
        let mut arp = vec![0u8; 12];
        arp.extend_from_slice(&[0x08, 0x06]);
        arp.extend_from_slice(&[0u8; 28]);
        assert_eq!(
            udp_from_frame(LinkType::ETHERNET, &arp),
            LinkOutcome::NotUdp
        );

        let mut tcp = Vec::new();
        PacketBuilder::ethernet2([1; 6], [2; 6])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(1, 2, 3, 4)
            .write(&mut tcp, b"abc")
            .unwrap();
        assert_eq!(
            udp_from_frame(LinkType::ETHERNET, &tcp),
            LinkOutcome::NotUdp
        );
        assert_eq!(
            udp_from_frame(LinkType(147), &tcp),
            LinkOutcome::UnsupportedLink
        );
        assert_eq!(
            udp_from_frame(LinkType::UNKNOWN, &tcp),
            LinkOutcome::UnsupportedLink
        );
    }

    #[test]
    fn linux_cooked_v1_and_v2() {
        let mut sll = Vec::new();
        PacketBuilder::linux_sll(
            etherparse::LinuxSllPacketType::HOST,
            6,
            [1, 2, 3, 4, 5, 6, 0, 0],
        )
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .udp(4000, 5000)
        .write(&mut sll, PAYLOAD)
        .unwrap();
        check_v4(LinkType::LINUX_SLL, &sll, 16);

        let ip = raw_v6_udp(PAYLOAD);
        let mut sll2 = vec![
            0x86, 0xdd, 0, 0, 0, 0, 0, 3, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0,
        ];
        sll2.extend_from_slice(&ip);
        check_v6(LinkType::LINUX_SLL2, &sll2, 20);
        assert_eq!(
            udp_from_frame(LinkType::LINUX_SLL2, &sll2[..19]),
            LinkOutcome::Malformed {
                offset: 0,
                what: "truncated Linux cooked v2 header"
            }
        );
        // SLL with a VLAN tag left in.
        let mut tagged = sll[..14].to_vec();
        tagged.extend_from_slice(&[0x81, 0x00, 0, 7, 0x08, 0x00]);
        tagged.extend_from_slice(&raw_v4_udp(PAYLOAD));
        check_v4(LinkType::LINUX_SLL, &tagged, 20);
    }

    #[test]
    fn raw_ip_types() {
        let v4 = raw_v4_udp(PAYLOAD);
        let v6 = raw_v6_udp(PAYLOAD);
        check_v4(LinkType::RAW, &v4, 0);
        check_v6(LinkType::RAW, &v6, 0);
        check_v4(LinkType::IPV4, &v4, 0);
        check_v6(LinkType::IPV6, &v6, 0);
        assert_eq!(
            udp_from_frame(LinkType::IPV4, &v6),
            LinkOutcome::Malformed {
                offset: 0,
                what: "bad IP version"
            }
        );
        assert_eq!(
            udp_from_frame(LinkType::RAW, &[0x50, 0, 0]),
            LinkOutcome::Malformed {
                offset: 0,
                what: "unknown IP version"
            }
        );
        assert_eq!(
            udp_from_frame(LinkType::RAW, &[]),
            LinkOutcome::Malformed {
                offset: 0,
                what: "truncated IP header"
            }
        );
    }

    #[test]
    fn bsd_loopback_both_byte_orders() {
        let v4 = raw_v4_udp(PAYLOAD);
        let v6 = raw_v6_udp(PAYLOAD);
        for (family, ip, v6_expected) in [
            (2u32, &v4, false),
            (24, &v6, true),
            (28, &v6, true),
            (30, &v6, true),
        ] {
            for header in [family.to_le_bytes(), family.to_be_bytes()] {
                for lt in [LinkType::NULL, LinkType::LOOP] {
                    let mut frame = header.to_vec();
                    frame.extend_from_slice(ip);
                    if v6_expected {
                        check_v6(lt, &frame, 4);
                    } else {
                        check_v4(lt, &frame, 4);
                    }
                }
            }
        }
        let mut other = 7u32.to_le_bytes().to_vec();
        other.extend_from_slice(&v4);
        assert_eq!(udp_from_frame(LinkType::NULL, &other), LinkOutcome::NotUdp);
        assert_eq!(
            udp_from_frame(LinkType::LOOP, &[0, 0]),
            LinkOutcome::Malformed {
                offset: 0,
                what: "truncated loopback header"
            }
        );
    }

    #[test]
    fn never_panics_on_prefixes_and_noise() {
        let frames = [
            eth_v4_udp(PAYLOAD),
            raw_v6_udp(PAYLOAD),
            ipv6_with_extensions(PAYLOAD),
        ];
        let types = [
            LinkType::ETHERNET,
            LinkType::RAW,
            LinkType::NULL,
            LinkType::LOOP,
            LinkType::LINUX_SLL,
            LinkType::LINUX_SLL2,
            LinkType::IPV4,
            LinkType::IPV6,
        ];
        let mut seed = 0x1234_5678u32;
        for f in &frames {
            for lt in types {
                for cut in 0..=f.len() {
                    let _ = udp_from_frame(lt, &f[..cut]);
                    let mut noisy = f[..cut].to_vec();
                    for b in noisy.iter_mut() {
                        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                        if seed >> 28 == 0 {
                            *b = (seed >> 16) as u8;
                        }
                    }
                    let _ = udp_from_frame(lt, &noisy);
                }
            }
        }
    }
}
