//! Wi-Fi monitor captures down to IP: IEEE 802.11 data frames (LLC/SNAP), behind radiotap or
//! PPI headers.

use super::link::{after_ethertype, truncated, LinkOutcome, LinkType, Start};

/// An 802.11 frame at `at`: a data frame that carries data and is not protected, then its
/// LLC/SNAP header. Management and control frames, null data and encrypted frames are not UDP.
pub(super) fn ieee802_11(data: &[u8], at: usize) -> Start {
    let fc = data
        .get(at..at + 2)
        .ok_or(truncated(at, "truncated 802.11 header"))?;
    let (kind, subtype, flags) = ((fc[0] >> 2) & 0x03, fc[0] >> 4, fc[1]);
    // Type 2: data; subtype bit 2: no data; flag 0x40: protected.
    if kind != 2 || subtype & 0x04 != 0 || flags & 0x40 != 0 {
        return Err(LinkOutcome::NotUdp);
    }
    let qos = subtype & 0x08 != 0;
    // Three addresses, a fourth between access points (to and from DS), QoS control, and HT
    // control when a QoS frame has the order flag.
    let len = 24
        + 6 * usize::from(flags & 0x03 == 0x03)
        + 2 * usize::from(qos)
        + 4 * usize::from(qos && flags & 0x80 != 0);
    let llc = data
        .get(at + len..at + len + 8)
        .ok_or(truncated(at, "truncated 802.11 header"))?;
    // LLC/SNAP (RFC 1042) or 802.1H bridge tunnel encapsulation.
    match llc[..6] {
        [0xaa, 0xaa, 0x03, 0x00, 0x00, 0x00 | 0xf8] => {
            after_ethertype(data, at + len + 8, u16::from_be_bytes([llc[6], llc[7]]))
        }
        _ => Err(LinkOutcome::NotUdp),
    }
}

/// A radiotap header at `at` (its length, little-endian, at byte 2), then 802.11. A trailing
/// FCS is left: the IP length ends the packet before it.
pub(super) fn radiotap(data: &[u8], at: usize) -> Start {
    let h = data
        .get(at..at + 4)
        .ok_or(truncated(at, "truncated radiotap header"))?;
    let len = usize::from(u16::from_le_bytes([h[2], h[3]]));
    if h[0] != 0 || len < 8 {
        return Err(truncated(at, "bad radiotap header"));
    }
    ieee802_11(data, at + len)
}

/// A PPI header at `at`: its length and the link type of the frame after it (little-endian).
pub(super) fn ppi(data: &[u8], at: usize) -> Result<(LinkType, usize), LinkOutcome<'static>> {
    let h = data
        .get(at..at + 8)
        .ok_or(truncated(at, "truncated PPI header"))?;
    let len = usize::from(u16::from_le_bytes([h[2], h[3]]));
    let dlt = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
    if h[0] != 0 || len < 8 {
        return Err(truncated(at, "bad PPI header"));
    }
    Ok((LinkType::from_field(dlt), at + len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::link::{udp_from_frame, Network};
    use crate::capture::testutil::*;
    use crate::samplegen::encap::Encap;

    #[test]
    fn data_frames_in_every_address_form() {
        let frame = Encap::Ieee80211.wrap(&raw_v4_udp(b"x"));
        assert_eq!(ieee802_11(&frame, 0), Ok((Network::Ipv4, 34)));
        // Not QoS: no QoS control.
        let mut plain = frame.clone();
        plain[0] = 0x08;
        plain.drain(24..26);
        assert_eq!(ieee802_11(&plain, 0), Ok((Network::Ipv4, 32)));
        // Between access points: a fourth address.
        let mut wds = plain.clone();
        wds[1] = 0x03;
        wds.splice(24..24, [0u8; 6]);
        assert_eq!(ieee802_11(&wds, 0), Ok((Network::Ipv4, 38)));
        // QoS with HT control.
        let mut ht = frame.clone();
        ht[1] |= 0x80;
        ht.splice(26..26, [0u8; 4]);
        assert_eq!(ieee802_11(&ht, 0), Ok((Network::Ipv4, 38)));
    }

    #[test]
    fn what_is_not_a_readable_data_frame() {
        let frame = Encap::Ieee80211.wrap(&raw_v4_udp(b"x"));
        for (byte, value) in [(0, 0x80), (0, 0xc8), (1, 0x41)] {
            // A beacon, QoS null data, a protected frame.
            let mut f = frame.clone();
            f[byte] = value;
            assert_eq!(
                udp_from_frame(LinkType::IEEE802_11, &f),
                LinkOutcome::NotUdp
            );
        }
        assert_eq!(
            udp_from_frame(LinkType::IEEE802_11, &frame[..30]),
            truncated(0, "truncated 802.11 header")
        );
        let radiotap = Encap::Radiotap.wrap(&raw_v4_udp(b"x"));
        let mut bad = radiotap.clone();
        bad[2] = 4;
        assert_eq!(
            udp_from_frame(LinkType::IEEE802_11_RADIOTAP, &bad),
            truncated(0, "bad radiotap header")
        );
        let ppi = Encap::Ppi.wrap(&raw_v4_udp(b"x"));
        assert_eq!(
            udp_from_frame(LinkType::PPI, &ppi[..6]),
            truncated(0, "truncated PPI header")
        );
        // PPI naming PPI: does not nest.
        let mut nested = ppi.clone();
        nested[4] = 192;
        assert_eq!(
            udp_from_frame(LinkType::PPI, &nested),
            LinkOutcome::UnsupportedLink
        );
    }
}
