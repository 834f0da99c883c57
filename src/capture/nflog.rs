//! Linux netfilter log (LINKTYPE_NFLOG, `tcpdump -i nflog:N`) down to IP: a 4-byte header
//! (address family, version, resource id), then type-length-value attributes, one of which
//! (NFULA_PAYLOAD) is the packet.

use super::link::{truncated, LinkOutcome, Network, Start};

/// The attribute holding the packet.
const NFULA_PAYLOAD: u16 = 9;
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;

/// Where the logged packet starts. Attribute lengths and types are in the capturing host's
/// byte order: the first attribute's length tells which (it is at least 4 and fits the frame).
pub(super) fn payload(data: &[u8], at: usize) -> Start {
    let family = *data
        .get(at)
        .ok_or(truncated(at, "truncated NFLOG header"))?;
    let network = match family {
        AF_INET => Network::Ipv4,
        AF_INET6 => Network::Ipv6,
        _ => Network::ByVersion,
    };
    let mut tlv = at + 4;
    let little = match data.get(tlv..tlv + 2) {
        Some(&[a, b]) => fits(u16::from_le_bytes([a, b]), data.len() - tlv),
        _ => true,
    };
    let u16_at = |i: usize| {
        data.get(i..i + 2).map(|b| match little {
            true => u16::from_le_bytes([b[0], b[1]]),
            false => u16::from_be_bytes([b[0], b[1]]),
        })
    };
    // Each attribute takes at least 4 bytes: the walk ends with the data.
    while tlv < data.len() {
        let (Some(len), Some(kind)) = (u16_at(tlv), u16_at(tlv + 2)) else {
            return Err(truncated(tlv, "truncated NFLOG attribute"));
        };
        if !fits(len, data.len() - tlv) {
            return Err(truncated(tlv, "bad NFLOG attribute length"));
        }
        // The top bits of the type are netlink flags (nested, byte order).
        if kind & 0x3fff == NFULA_PAYLOAD {
            return Ok((network, tlv + 4));
        }
        tlv += usize::from(len).next_multiple_of(4);
    }
    Err(LinkOutcome::NotUdp)
}

/// Whether an attribute length is possible with `left` bytes from its start.
fn fits(len: u16, left: usize) -> bool {
    len >= 4 && usize::from(len) <= left
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::testutil::raw_v4_udp;
    use crate::samplegen::encap::Encap;

    #[test]
    fn payload_attribute_in_either_byte_order() {
        let ip = raw_v4_udp(b"x");
        let frame = Encap::Nflog.wrap(&ip);
        assert_eq!(payload(&frame, 0), Ok((Network::Ipv4, 16)));
        // The same attributes from a big-endian host.
        let mut big = frame.clone();
        for at in [4, 6, 12, 14] {
            big.swap(at, at + 1);
        }
        assert_eq!(payload(&big, 0), Ok((Network::Ipv4, 16)));
        // No payload attribute (a log of the header only): nothing to decode.
        assert_eq!(payload(&frame[..12], 0), Err(LinkOutcome::NotUdp));
        let mut bad = frame.clone();
        bad[12] = 0xff;
        assert_eq!(
            payload(&bad, 0),
            Err(truncated(12, "bad NFLOG attribute length"))
        );
        assert_eq!(
            payload(&frame[..14], 0),
            Err(truncated(12, "truncated NFLOG attribute"))
        );
    }
}
