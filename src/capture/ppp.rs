//! PPP (LINKTYPE_PPP, PPP in HDLC-like framing, PPPoE sessions, PPTP's GRE) down to IP.

use super::link::{truncated, LinkOutcome, Network, Start};

/// A PPP frame at `at`: the HDLC-like address and control bytes (`ff 03`) when present, then
/// the protocol.
pub(super) fn frame(data: &[u8], at: usize) -> Start {
    match data.get(at..at + 2) {
        Some([0xff, 0x03]) => protocol(data, at + 2),
        _ => protocol(data, at),
    }
}

/// The PPP protocol field at `at` (one byte when compressed: an odd first byte), then IP.
pub(super) fn protocol(data: &[u8], at: usize) -> Start {
    let first = *data.get(at).ok_or(truncated(at, "truncated PPP header"))?;
    let (protocol, len) = match first & 1 {
        1 => (u16::from(first), 1),
        _ => match data.get(at + 1) {
            Some(&second) => (u16::from_be_bytes([first, second]), 2),
            None => return Err(truncated(at, "truncated PPP header")),
        },
    };
    match protocol {
        0x0021 => Ok((Network::Ipv4, at + len)),
        0x0057 => Ok((Network::Ipv6, at + len)),
        _ => Err(LinkOutcome::NotUdp),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_control_and_protocol_compression() {
        assert_eq!(
            frame(&[0xff, 0x03, 0x00, 0x21, 0x45], 0),
            Ok((Network::Ipv4, 4))
        );
        assert_eq!(frame(&[0x00, 0x57, 0x60], 0), Ok((Network::Ipv6, 2)));
        assert_eq!(frame(&[0x21, 0x45], 0), Ok((Network::Ipv4, 1)));
        // LCP, IPCP: not IP.
        assert_eq!(
            frame(&[0xff, 0x03, 0xc0, 0x21], 0),
            Err(LinkOutcome::NotUdp)
        );
        assert_eq!(frame(&[0x80, 0x21], 0), Err(LinkOutcome::NotUdp));
        assert_eq!(
            frame(&[0xff, 0x03, 0x00], 0),
            Err(truncated(2, "truncated PPP header"))
        );
        assert_eq!(frame(&[], 0), Err(truncated(0, "truncated PPP header")));
    }
}
