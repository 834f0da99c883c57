//! Link-layer header types, as numbered by tcpdump.org's LINKTYPE_ registry.
//!
//! A newtype rather than an enum: captures carry arbitrary 16/32-bit values
//! and we must keep (and print) the ones we do not decode instead of failing.

use std::borrow::Cow;
use std::fmt;

mod registry;

/// A LINKTYPE_ value (the `network` field of a pcap header, or an IDB's link type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkType(pub u32);

impl LinkType {
    /// BSD loopback: 4-byte address family in the *capturing host's* byte order.
    pub const NULL: LinkType = LinkType(0);
    /// Ethernet II (DIX), possibly with 802.1Q / 802.1ad tags.
    pub const ETHERNET: LinkType = LinkType(1);
    /// PPP, with or without the HDLC-like address and control bytes.
    pub const PPP: LinkType = LinkType(9);
    /// Raw IP under the value DLT_RAW has on BSD/OS and some others (libpcap reads it as 101).
    pub const RAW_12: LinkType = LinkType(12);
    /// Raw IP under OpenBSD's DLT_RAW value (libpcap reads it as 101).
    pub const RAW_14: LinkType = LinkType(14);
    /// PPP in HDLC-like framing (RFC 1662).
    pub const PPP_HDLC: LinkType = LinkType(50);
    /// Raw IP; the version comes from the first nibble.
    pub const RAW: LinkType = LinkType(101);
    /// OpenBSD loopback: like NULL but the family is in network byte order.
    pub const LOOP: LinkType = LinkType(108);
    /// IEEE 802.11 frames without radio information.
    pub const IEEE802_11: LinkType = LinkType(105);
    /// Linux "cooked" capture v1 (16-byte pseudo header), e.g. `tcpdump -i any`.
    pub const LINUX_SLL: LinkType = LinkType(113);
    /// IEEE 802.11 behind a radiotap header (Wi-Fi monitor mode).
    pub const IEEE802_11_RADIOTAP: LinkType = LinkType(127);
    /// Per-Packet Information header, then the frame of the link type it names.
    pub const PPI: LinkType = LinkType(192);
    /// Raw IPv4.
    pub const IPV4: LinkType = LinkType(228);
    /// Raw IPv6.
    pub const IPV6: LinkType = LinkType(229);
    /// Linux netfilter log (`tcpdump -i nflog:N`): TLVs, one of which is the IP packet.
    pub const NFLOG: LinkType = LinkType(239);
    /// macOS `tcpdump -i pktap`: a header naming the frame's own link type.
    pub const PKTAP: LinkType = LinkType(258);
    /// Linux "cooked" capture v2 (20-byte pseudo header).
    pub const LINUX_SLL2: LinkType = LinkType(276);
    /// Placeholder for a packet whose interface is not described anywhere
    /// (pcapng EPB/SPB naming a nonexistent interface). Not a registry value.
    pub const UNKNOWN: LinkType = LinkType(u32::MAX);

    /// The value a link-type field holds with libpcap's FCS bits (and reserved bits) masked off:
    /// `LT_LINKTYPE`, the low 16 bits.
    pub fn from_field(field: u32) -> LinkType {
        LinkType(field & 0xffff)
    }

    /// Whether frames of this link type are decoded (its [`LinkType::name`] is not "unknown").
    pub fn decoded(&self) -> bool {
        self.name() != "unknown"
    }

    /// How reports name it: the short name of a type we decode ("ethernet"); for one we do not,
    /// its number and, when the registry has one, tcpdump's name ("link type 147 (USER0)"); "no
    /// interface" for [`LinkType::UNKNOWN`].
    pub fn label(&self) -> Cow<'static, str> {
        match (self.decoded(), registry::name(self.0)) {
            (true, _) => Cow::Borrowed(self.name()),
            _ if *self == LinkType::UNKNOWN => Cow::Borrowed("no interface"),
            (false, Some(name)) => Cow::Owned(format!("link type {} ({name})", self.0)),
            (false, None) => Cow::Owned(format!("link type {}", self.0)),
        }
    }

    /// Short lowercase name, "unknown" for every type we do not decode.
    pub fn name(&self) -> &'static str {
        match *self {
            LinkType::NULL => "null",
            LinkType::ETHERNET => "ethernet",
            LinkType::PPP | LinkType::PPP_HDLC => "ppp",
            LinkType::RAW | LinkType::RAW_12 | LinkType::RAW_14 => "raw",
            LinkType::IEEE802_11 => "ieee802_11",
            LinkType::LOOP => "loop",
            LinkType::LINUX_SLL => "linux_sll",
            LinkType::IEEE802_11_RADIOTAP => "ieee802_11_radiotap",
            LinkType::PPI => "ppi",
            LinkType::IPV4 => "ipv4",
            LinkType::IPV6 => "ipv6",
            LinkType::NFLOG => "nflog",
            LinkType::PKTAP => "pktap",
            LinkType::LINUX_SLL2 => "linux_sll2",
            _ => "unknown",
        }
    }
}

/// `ethernet(1)`: the name for people, the number for looking it up.
impl fmt::Display for LinkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_display() {
        let all = [
            (LinkType::NULL, "null(0)"),
            (LinkType::ETHERNET, "ethernet(1)"),
            (LinkType::RAW, "raw(101)"),
            (LinkType::LOOP, "loop(108)"),
            (LinkType::LINUX_SLL, "linux_sll(113)"),
            (LinkType::IPV4, "ipv4(228)"),
            (LinkType::IPV6, "ipv6(229)"),
            (LinkType::LINUX_SLL2, "linux_sll2(276)"),
            (LinkType::PPP, "ppp(9)"),
            (LinkType::RAW_12, "raw(12)"),
            (LinkType::RAW_14, "raw(14)"),
            (LinkType::PPP_HDLC, "ppp(50)"),
            (LinkType::IEEE802_11, "ieee802_11(105)"),
            (LinkType::IEEE802_11_RADIOTAP, "ieee802_11_radiotap(127)"),
            (LinkType::PPI, "ppi(192)"),
            (LinkType::NFLOG, "nflog(239)"),
            (LinkType::PKTAP, "pktap(258)"),
            (LinkType(147), "unknown(147)"),
        ];
        for (lt, shown) in all {
            assert_eq!(lt.to_string(), shown);
        }
    }

    #[test]
    fn labels_name_undecoded_types_as_tcpdump_does() {
        let all = [
            (LinkType::IEEE802_11, "ieee802_11"),
            (LinkType::ETHERNET, "ethernet"),
            (LinkType(147), "link type 147 (USER0)"),
            (LinkType(6), "link type 6 (IEEE802_5)"),
            (LinkType(195), "link type 195 (IEEE802_15_4_WITHFCS)"),
            (LinkType(60_000), "link type 60000"),
            (LinkType::UNKNOWN, "no interface"),
        ];
        for (lt, label) in all {
            assert_eq!(lt.label(), label);
        }
        assert!(LinkType::PPI.decoded() && !LinkType(147).decoded());
    }

    #[test]
    fn fcs_and_reserved_bits_are_masked() {
        for field in [105, 0x3000_0069, 0x0400_0069, 0x03ff_0069, 0xf7ff_0069] {
            assert_eq!(LinkType::from_field(field), LinkType::IEEE802_11);
        }
    }
}
