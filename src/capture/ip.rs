//! IPv4, IPv6 (with extension headers) and UDP over a frame's bytes.
//!
//! Offsets are absolute in the frame so messages and hex dumps can point at
//! the exact byte. The IP length fields, not the captured length, bound what
//! follows: trailers (Ethernet padding, FCS) are cut, and bytes the capture did
//! not keep (snaplen) are counted as missing rather than treated as errors.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::link::{LinkOutcome, UdpDatagram};

pub(crate) const PROTO_UDP: u8 = 17;
const PROTO_HOP_BY_HOP: u8 = 0;
const PROTO_ROUTING: u8 = 43;
const PROTO_FRAGMENT: u8 = 44;
const PROTO_AUTH: u8 = 51;
const PROTO_DEST_OPTIONS: u8 = 60;
/// What tunnels carry: IPv4 (IP in IP), IPv6 (6in4, 6in6), GRE.
pub(crate) const PROTO_IPV4: u8 = 4;
pub(crate) const PROTO_IPV6: u8 = 41;
pub(crate) const PROTO_GRE: u8 = 47;

/// What an IP packet carries, as far as this tool cares.
#[derive(Debug)]
pub(crate) enum IpContent<'a> {
    Udp(UdpDatagram<'a>),
    Fragment(Fragment<'a>),
    /// A tunnel ([`PROTO_IPV4`], [`PROTO_IPV6`], [`PROTO_GRE`]) whose payload starts at `at`.
    Tunnel {
        protocol: u8,
        at: usize,
    },
    /// `NotUdp` or `Malformed`.
    Other(LinkOutcome<'a>),
}

/// One fragment of a datagram, as the defragmenter needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fragment<'a> {
    pub src: IpAddr,
    pub dst: IpAddr,
    /// IPv4 protocol, or the next header of the IPv6 fragment header.
    pub protocol: u8,
    pub id: u32,
    /// Byte offset of `payload` in the reassembled datagram.
    pub offset: u32,
    pub more: bool,
    /// The fragment's payload as captured, cut to the IP length.
    pub payload: &'a [u8],
    /// Bytes of this fragment the capture did not keep (snaplen).
    pub missing: usize,
}

fn malformed(offset: usize, what: &'static str) -> IpContent<'static> {
    IpContent::Other(LinkOutcome::Malformed { offset, what })
}

fn be16(d: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([d[at], d[at + 1]])
}

/// Splits the captured IP packet at its declared end: returns (bytes to keep
/// after the header start, bytes missing). A declared length of 0 is what TSO
/// and jumbograms leave in captures: trust the captured length then.
fn declared_extent(captured: usize, declared: usize) -> (usize, usize) {
    if declared == 0 {
        (captured, 0)
    } else if declared <= captured {
        (declared, 0)
    } else {
        (captured, declared - captured)
    }
}

/// IPv4 header at `at`.
pub(crate) fn parse_ipv4(data: &[u8], at: usize) -> IpContent<'_> {
    let Some(h) = data.get(at..at + 20) else {
        return malformed(at, "truncated IPv4 header");
    };
    if h[0] >> 4 != 4 {
        return malformed(at, "bad IP version");
    }
    let ihl = usize::from(h[0] & 0x0f) * 4;
    if ihl < 20 {
        return malformed(at, "bad IPv4 header length");
    }
    if data.len() < at + ihl {
        return malformed(at, "truncated IPv4 header");
    }
    let total = usize::from(be16(h, 2));
    if total != 0 && total < ihl {
        return malformed(at, "bad IPv4 total length");
    }
    let (keep, missing) = declared_extent(data.len() - at, total);
    let packet = &data[..at + keep];
    let src = IpAddr::V4(Ipv4Addr::new(h[12], h[13], h[14], h[15]));
    let dst = IpAddr::V4(Ipv4Addr::new(h[16], h[17], h[18], h[19]));
    let protocol = h[9];
    let flags_offset = be16(h, 6);
    let more = flags_offset & 0x2000 != 0;
    let offset = u32::from(flags_offset & 0x1fff) * 8;
    if protocol != PROTO_UDP {
        return match tunnel(protocol) && !more && offset == 0 {
            true => IpContent::Tunnel {
                protocol,
                at: at + ihl,
            },
            false => IpContent::Other(LinkOutcome::NotUdp),
        };
    }
    if more || offset != 0 {
        return IpContent::Fragment(Fragment {
            src,
            dst,
            protocol,
            id: u32::from(be16(h, 4)),
            offset,
            more,
            payload: &packet[at + ihl..],
            missing,
        });
    }
    parse_udp(packet, at + ihl, src, dst, missing)
}

/// IPv6 header at `at`, then its extension headers.
pub(crate) fn parse_ipv6(data: &[u8], at: usize) -> IpContent<'_> {
    let Some(h) = data.get(at..at + 40) else {
        return malformed(at, "truncated IPv6 header");
    };
    if h[0] >> 4 != 6 {
        return malformed(at, "bad IP version");
    }
    let (keep, missing) = declared_extent(data.len() - at - 40, usize::from(be16(h, 4)));
    let packet = &data[..at + 40 + keep];
    let mut src = [0u8; 16];
    let mut dst = [0u8; 16];
    src.copy_from_slice(&h[8..24]);
    dst.copy_from_slice(&h[24..40]);
    let src = IpAddr::V6(Ipv6Addr::from(src));
    let dst = IpAddr::V6(Ipv6Addr::from(dst));
    walk_ipv6(packet, at + 40, h[6], src, dst, missing, true)
}

/// Walks IPv6 extension headers from `at`, whose type is `next`. Each step
/// advances at least 8 bytes, so the walk ends with the data.
/// `fragment_allowed` is false inside a reassembled datagram.
pub(crate) fn walk_ipv6(
    packet: &[u8],
    mut at: usize,
    mut next: u8,
    src: IpAddr,
    dst: IpAddr,
    missing: usize,
    fragment_allowed: bool,
) -> IpContent<'_> {
    loop {
        match next {
            PROTO_UDP => return parse_udp(packet, at, src, dst, missing),
            PROTO_HOP_BY_HOP | PROTO_ROUTING | PROTO_DEST_OPTIONS | PROTO_AUTH => {
                let Some(e) = packet.get(at..at + 2) else {
                    return malformed(at, "truncated IPv6 extension header");
                };
                let len = if next == PROTO_AUTH {
                    (usize::from(e[1]) + 2) * 4
                } else {
                    (usize::from(e[1]) + 1) * 8
                };
                if packet.len() < at + len {
                    return malformed(at, "truncated IPv6 extension header");
                }
                next = e[0];
                at += len;
            }
            PROTO_FRAGMENT => {
                let Some(f) = packet.get(at..at + 8) else {
                    return malformed(at, "truncated IPv6 fragment header");
                };
                if !fragment_allowed {
                    return malformed(at, "fragment header inside a reassembled datagram");
                }
                let bits = be16(f, 2);
                let offset = u32::from(bits >> 3) * 8;
                let more = bits & 1 != 0;
                if offset == 0 && !more {
                    // Atomic fragment (RFC 6946): the whole datagram is here.
                    next = f[0];
                    at += 8;
                    continue;
                }
                if f[0] != PROTO_UDP && f[0] != PROTO_DEST_OPTIONS {
                    return IpContent::Other(LinkOutcome::NotUdp);
                }
                return IpContent::Fragment(Fragment {
                    src,
                    dst,
                    protocol: f[0],
                    id: u32::from_be_bytes([f[4], f[5], f[6], f[7]]),
                    offset,
                    more,
                    payload: &packet[at + 8..],
                    missing,
                });
            }
            _ if tunnel(next) && fragment_allowed => {
                return IpContent::Tunnel { protocol: next, at }
            }
            _ => return IpContent::Other(LinkOutcome::NotUdp),
        }
    }
}

/// Whether an IP protocol number is a tunnel [`IpContent::Tunnel`] stands for.
fn tunnel(protocol: u8) -> bool {
    matches!(protocol, PROTO_IPV4 | PROTO_IPV6 | PROTO_GRE)
}

/// UDP header at `at`. `packet` ends where the IP layer says it ends (or where
/// the capture stopped, with `ip_missing` bytes not captured).
pub(crate) fn parse_udp(
    packet: &[u8],
    at: usize,
    src: IpAddr,
    dst: IpAddr,
    ip_missing: usize,
) -> IpContent<'_> {
    let Some(u) = packet.get(at..at + 8) else {
        return malformed(at, "truncated UDP header");
    };
    let udp_len = usize::from(be16(u, 4));
    if udp_len < 8 {
        return malformed(at, "bad UDP length");
    }
    let ip_carries = packet.len() - at + ip_missing;
    if udp_len > ip_carries {
        return malformed(at, "UDP length exceeds IP payload");
    }
    let declared_end = at + udp_len;
    let end = declared_end.min(packet.len());
    IpContent::Udp(UdpDatagram {
        src: SocketAddr::new(src, be16(u, 0)),
        dst: SocketAddr::new(dst, be16(u, 2)),
        payload: &packet[at + 8..end],
        truncated_by: (declared_end - end) as u32,
        payload_offset: at + 8,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::testutil::*;

    fn udp(c: IpContent<'_>) -> UdpDatagram<'_> {
        match c {
            IpContent::Udp(u) => u,
            other => panic!("expected UDP, got {other:?}"),
        }
    }

    #[test]
    fn ipv4_options_are_skipped_by_ihl() {
        let mut p = raw_v4_udp(b"payload");
        // Insert 8 bytes of options (NOP NOP NOP ... EOL), fix IHL and total length.
        p.splice(20..20, [1, 1, 1, 1, 1, 1, 1, 0]);
        p[0] = 0x47;
        let total = p.len() as u16;
        p[2..4].copy_from_slice(&total.to_be_bytes());
        let u = udp(parse_ipv4(&p, 0));
        assert_eq!(u.payload, b"payload");
        assert_eq!(u.payload_offset, 28 + 8);
    }

    #[test]
    fn ipv4_bad_lengths() {
        let mut p = raw_v4_udp(b"x");
        p[0] = 0x44;
        assert_eq!(
            udp_err(parse_ipv4(&p, 0)),
            LinkOutcome::Malformed {
                offset: 0,
                what: "bad IPv4 header length"
            }
        );
        let mut p = raw_v4_udp(b"x");
        p[0] = 0x4f; // 60-byte header, 29-byte packet
        assert_eq!(
            udp_err(parse_ipv4(&p, 0)),
            LinkOutcome::Malformed {
                offset: 0,
                what: "truncated IPv4 header"
            }
        );
        let mut p = raw_v4_udp(b"x");
        p[2..4].copy_from_slice(&19u16.to_be_bytes());
        assert_eq!(
            udp_err(parse_ipv4(&p, 0)),
            LinkOutcome::Malformed {
                offset: 0,
                what: "bad IPv4 total length"
            }
        );
        // UDP length larger than what IP carries.
        let mut p = raw_v4_udp(b"abcd");
        p[24..26].copy_from_slice(&100u16.to_be_bytes());
        assert_eq!(
            udp_err(parse_ipv4(&p, 0)),
            LinkOutcome::Malformed {
                offset: 20,
                what: "UDP length exceeds IP payload"
            }
        );
        let mut p = raw_v4_udp(b"abcd");
        p[24..26].copy_from_slice(&7u16.to_be_bytes());
        assert_eq!(
            udp_err(parse_ipv4(&p, 0)),
            LinkOutcome::Malformed {
                offset: 20,
                what: "bad UDP length"
            }
        );
    }

    #[test]
    fn ipv4_total_length_cuts_trailer_and_zero_means_captured() {
        let mut p = raw_v4_udp(b"abcd");
        p.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]); // FCS-like trailer
        assert_eq!(udp(parse_ipv4(&p, 0)).payload, b"abcd");
        // TSO leaves total length 0: use what was captured, bounded by UDP length.
        p[2..4].copy_from_slice(&0u16.to_be_bytes());
        assert_eq!(udp(parse_ipv4(&p, 0)).payload, b"abcd");
    }

    #[test]
    fn ipv4_fragments_are_detected() {
        let frags = v4_fragments(&[7u8; 100], 0x1234, 48);
        for (i, f) in frags.iter().enumerate() {
            match parse_ipv4(f, 0) {
                IpContent::Fragment(fr) => {
                    assert_eq!(fr.id, 0x1234);
                    assert_eq!(fr.offset, 48 * i as u32);
                    assert_eq!(fr.more, i + 1 < frags.len());
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn ipv6_extension_headers_are_walked() {
        let p = ipv6_with_extensions(b"through the chain");
        let u = udp(parse_ipv6(&p, 0));
        assert_eq!(u.payload, b"through the chain");
        // 40 + hop-by-hop 8 + routing 24 + dest options 16 + atomic fragment 8 + UDP 8.
        assert_eq!(u.payload_offset, 40 + 8 + 24 + 16 + 8 + 8);
        assert_eq!(u.src, "[2001:db8::1]:4000".parse().unwrap());
        // Every strict prefix that cuts the header chain is malformed, never a panic.
        for cut in 40..(40 + 8 + 24 + 16 + 8 + 8) {
            assert!(matches!(
                parse_ipv6(&p[..cut], 0),
                IpContent::Other(LinkOutcome::Malformed { .. })
            ));
        }
    }

    #[test]
    fn ipv6_fragment_and_other_protocols() {
        let frags = v6_fragments(&[1u8; 64], 99, 32);
        match parse_ipv6(&frags[1], 0) {
            IpContent::Fragment(f) => {
                assert_eq!(
                    (f.id, f.offset, f.more, f.protocol),
                    (99, 32, true, PROTO_UDP)
                );
            }
            other => panic!("{other:?}"),
        }
        let mut icmp = raw_v6_udp(b"x");
        icmp[6] = 58;
        assert_eq!(udp_err(parse_ipv6(&icmp, 0)), LinkOutcome::NotUdp);
    }

    fn udp_err(c: IpContent<'_>) -> LinkOutcome<'_> {
        match c {
            IpContent::Other(o) => o,
            other => panic!("expected an outcome, got {other:?}"),
        }
    }
}
