//! Link-layer header types, as numbered by tcpdump.org's LINKTYPE_ registry.
//!
//! A newtype rather than an enum: captures carry arbitrary 16/32-bit values
//! and we must keep (and print) the ones we do not decode instead of failing.

use std::fmt;

/// A LINKTYPE_ value (the `network` field of a pcap header, or an IDB's link type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkType(pub u32);

impl LinkType {
    /// BSD loopback: 4-byte address family in the *capturing host's* byte order.
    pub const NULL: LinkType = LinkType(0);
    /// Ethernet II (DIX), possibly with 802.1Q / 802.1ad tags.
    pub const ETHERNET: LinkType = LinkType(1);
    /// Raw IP; the version comes from the first nibble.
    pub const RAW: LinkType = LinkType(101);
    /// OpenBSD loopback: like NULL but the family is in network byte order.
    pub const LOOP: LinkType = LinkType(108);
    /// Linux "cooked" capture v1 (16-byte pseudo header), e.g. `tcpdump -i any`.
    pub const LINUX_SLL: LinkType = LinkType(113);
    /// Raw IPv4.
    pub const IPV4: LinkType = LinkType(228);
    /// Raw IPv6.
    pub const IPV6: LinkType = LinkType(229);
    /// Linux "cooked" capture v2 (20-byte pseudo header).
    pub const LINUX_SLL2: LinkType = LinkType(276);
    /// Placeholder for a packet whose interface is not described anywhere
    /// (pcapng EPB/SPB naming a nonexistent interface). Not a registry value.
    pub const UNKNOWN: LinkType = LinkType(u32::MAX);

    /// Short lowercase name, "unknown" for every type we do not decode.
    pub fn name(&self) -> &'static str {
        match *self {
            LinkType::NULL => "null",
            LinkType::ETHERNET => "ethernet",
            LinkType::RAW => "raw",
            LinkType::LOOP => "loop",
            LinkType::LINUX_SLL => "linux_sll",
            LinkType::IPV4 => "ipv4",
            LinkType::IPV6 => "ipv6",
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
            (LinkType(105), "unknown(105)"),
        ];
        for (lt, shown) in all {
            assert_eq!(lt.to_string(), shown);
        }
    }
}
