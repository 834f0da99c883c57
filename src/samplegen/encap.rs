//! An IP packet re-wrapped in each link layer and tunnel the capture layer decodes, the way the
//! captures that carry them write it: what the link-layer tests run a real session through, and
//! compare with its Ethernet original.

use crate::capture::LinkType;

/// A link layer or tunnel around an IP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encap {
    /// Raw IP under DLT_RAW's BSD/OS value.
    Raw12,
    /// Raw IP under OpenBSD's DLT_RAW value.
    Raw14,
    /// PPP with the HDLC-like address and control bytes.
    Ppp,
    /// PPP over Ethernet, session stage.
    Pppoe,
    /// Linux netfilter log: a packet-header TLV, then the payload TLV.
    Nflog,
    /// An 802.11 data frame (to the access point), LLC/SNAP.
    Ieee80211,
    /// Radiotap (a flags field saying the frame ends with its FCS), then 802.11 and its FCS.
    Radiotap,
    /// PPI naming 802.11.
    Ppi,
    /// macOS PKTAP naming Ethernet.
    Pktap,
    /// GRE (with a key) over IPv4 over Ethernet.
    Gre,
    /// ERSPAN type II (GRE 0x88BE with a sequence number) over IPv4 over Ethernet.
    ErspanII,
    /// ERSPAN type III with its platform subheader (GRE 0x22EB).
    ErspanIII,
    /// IP in IPv4 (protocol 4, or 41 for IPv6: 6in4) over Ethernet.
    IpInIp,
    /// Two MPLS labels over Ethernet.
    Mpls,
    /// MACsec with an SCI, integrity only (not encrypted), over Ethernet.
    Macsec,
    /// VXLAN (UDP port 4789) over IPv4 over Ethernet.
    Vxlan,
    /// Geneve (UDP port 6081) with one option, over IPv4 over Ethernet.
    Geneve,
}

impl Encap {
    pub const ALL: &'static [Encap] = &[
        Encap::Raw12,
        Encap::Raw14,
        Encap::Ppp,
        Encap::Pppoe,
        Encap::Nflog,
        Encap::Ieee80211,
        Encap::Radiotap,
        Encap::Ppi,
        Encap::Pktap,
        Encap::Gre,
        Encap::ErspanII,
        Encap::ErspanIII,
        Encap::IpInIp,
        Encap::Mpls,
        Encap::Macsec,
        Encap::Vxlan,
        Encap::Geneve,
    ];

    /// The link type of a capture of such frames.
    pub const fn link_type(self) -> LinkType {
        match self {
            Encap::Raw12 => LinkType::RAW_12,
            Encap::Raw14 => LinkType::RAW_14,
            Encap::Ppp => LinkType::PPP,
            Encap::Nflog => LinkType::NFLOG,
            Encap::Ieee80211 => LinkType::IEEE802_11,
            Encap::Radiotap => LinkType::IEEE802_11_RADIOTAP,
            Encap::Ppi => LinkType::PPI,
            Encap::Pktap => LinkType::PKTAP,
            _ => LinkType::ETHERNET,
        }
    }

    /// `ip` (an IPv4 or IPv6 packet) in this encapsulation.
    pub fn wrap(self, ip: &[u8]) -> Vec<u8> {
        let v6 = ip.first().is_some_and(|b| b >> 4 == 6);
        let ethertype: u16 = if v6 { 0x86dd } else { 0x0800 };
        let mut f = Vec::with_capacity(ip.len() + 96);
        match self {
            Encap::Raw12 | Encap::Raw14 => {}
            Encap::Ppp => f.extend([0xff, 0x03, 0x00, if v6 { 0x57 } else { 0x21 }]),
            Encap::Pppoe => {
                ethernet(&mut f, 0x8864);
                f.extend([0x11, 0x00, 0x12, 0x34]);
                f.extend(((ip.len() + 2) as u16).to_be_bytes());
                f.extend([0x00, if v6 { 0x57 } else { 0x21 }]);
            }
            Encap::Nflog => {
                f.extend([if v6 { 10 } else { 2 }, 0, 0, 5]);
                // NFULA_PACKET_HDR: hardware protocol, hook, padding (lengths in host order).
                f.extend(8u16.to_le_bytes());
                f.extend(1u16.to_le_bytes());
                f.extend(ethertype.to_be_bytes());
                f.extend([3, 0]);
                f.extend(((ip.len() + 4) as u16).to_le_bytes());
                f.extend(9u16.to_le_bytes());
                f.extend_from_slice(ip);
                f.resize(f.len().next_multiple_of(4), 0);
                return f;
            }
            Encap::Ieee80211 => ieee80211(&mut f, ethertype),
            Encap::Radiotap => {
                // Present: flags (bit 1); flags 0x10: the frame ends with its FCS.
                f.extend([0, 0, 9, 0, 0x02, 0, 0, 0, 0x10]);
                ieee80211(&mut f, ethertype);
                f.extend_from_slice(ip);
                f.extend([0xde, 0xad, 0xbe, 0xef]);
                return f;
            }
            Encap::Ppi => {
                f.extend([0, 0, 8, 0]);
                f.extend(105u32.to_le_bytes());
                ieee80211(&mut f, ethertype);
            }
            Encap::Pktap => {
                let mut header = [0u8; 108];
                header[0..4].copy_from_slice(&108u32.to_le_bytes());
                header[4..8].copy_from_slice(&1u32.to_le_bytes());
                header[8..12].copy_from_slice(&1u32.to_le_bytes());
                header[12..15].copy_from_slice(b"en0");
                f.extend(header);
                ethernet(&mut f, ethertype);
            }
            Encap::Gre => {
                let gre = [
                    0x20,
                    0x00,
                    (ethertype >> 8) as u8,
                    ethertype as u8,
                    0,
                    0,
                    0,
                    7,
                ];
                outer_ipv4(&mut f, 47, gre.len() + ip.len());
                f.extend(gre);
            }
            Encap::ErspanII => {
                // GRE: sequence number; ERSPAN II: version 1, VLAN 0, session 5, index 0.
                let inner = 14 + ip.len();
                outer_ipv4(&mut f, 47, 8 + 8 + inner);
                f.extend([0x10, 0x00, 0x88, 0xbe, 0, 0, 0, 1]);
                f.extend([0x10, 0x00, 0x00, 0x05, 0, 0, 0, 0]);
                ethernet(&mut f, ethertype);
            }
            Encap::ErspanIII => {
                // GRE: sequence number; ERSPAN III: version 2, session 5, timestamp, SGT,
                // O bit: an 8-byte platform subheader follows.
                let inner = 14 + ip.len();
                outer_ipv4(&mut f, 47, 8 + 12 + 8 + inner);
                f.extend([0x10, 0x00, 0x22, 0xeb, 0, 0, 0, 1]);
                f.extend([0x20, 0x00, 0x00, 0x05, 0, 0, 1, 0, 0, 0, 0, 0x01]);
                f.extend([0x08, 0, 0, 0, 0, 0, 0, 0]);
                ethernet(&mut f, ethertype);
            }
            Encap::IpInIp => outer_ipv4(&mut f, if v6 { 41 } else { 4 }, ip.len()),
            Encap::Mpls => {
                ethernet(&mut f, 0x8847);
                f.extend([0x00, 0x01, 0x00, 0x40]); // label 16
                f.extend([0x00, 0x02, 0x01, 0x40]); // label 32, bottom of stack
            }
            Encap::Macsec => {
                ethernet(&mut f, 0x88e5);
                // TCI: SC (an SCI follows), not encrypted, not changed; SL 0; PN; SCI.
                f.extend([0x20, 0x00, 0, 0, 0, 1]);
                f.extend([0x02, 0, 0, 0, 0, 1, 0, 1]);
                f.extend(ethertype.to_be_bytes());
                f.extend_from_slice(ip);
                f.extend([0x1c; 16]); // ICV
                return f;
            }
            Encap::Vxlan => {
                let inner = 14 + ip.len();
                outer_udp(&mut f, 4789, 8 + inner);
                f.extend([0x08, 0, 0, 0, 0, 0, 0x2a, 0]);
                ethernet(&mut f, ethertype);
            }
            Encap::Geneve => {
                let inner = 14 + ip.len();
                outer_udp(&mut f, 6081, 8 + 8 + inner);
                // Version 0, 2 words of options; protocol: Ethernet; VNI 42; one 4-byte option.
                f.extend([0x02, 0x00, 0x65, 0x58, 0, 0, 0x2a, 0]);
                f.extend([0x01, 0x02, 0x80, 0x01, 0xca, 0xfe, 0xf0, 0x0d]);
                ethernet(&mut f, ethertype);
            }
        }
        f.extend_from_slice(ip);
        f
    }
}

/// An Ethernet header (fixed addresses) announcing `ethertype`.
fn ethernet(f: &mut Vec<u8>, ethertype: u16) {
    f.extend([0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1]);
    f.extend(ethertype.to_be_bytes());
}

/// An 802.11 QoS data frame to the access point, and its LLC/SNAP header.
fn ieee80211(f: &mut Vec<u8>, ethertype: u16) {
    f.extend([0x88, 0x01, 0x2c, 0x00]);
    f.extend([0x02, 0, 0, 0, 0, 0x0a]); // BSSID
    f.extend([0x02, 0, 0, 0, 0, 0x01]); // source
    f.extend([0x02, 0, 0, 0, 0, 0x02]); // destination
    f.extend([0x10, 0x00]); // sequence
    f.extend([0x00, 0x00]); // QoS control
    f.extend([0xaa, 0xaa, 0x03, 0, 0, 0]);
    f.extend(ethertype.to_be_bytes());
}

/// Ethernet and an IPv4 header (checksum right) carrying `len` bytes of `protocol`.
fn outer_ipv4(f: &mut Vec<u8>, protocol: u8, len: usize) {
    ethernet(f, 0x0800);
    let total = (20 + len) as u16;
    let mut h = [
        0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, protocol, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2,
    ];
    h[2..4].copy_from_slice(&total.to_be_bytes());
    let sum = h
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum::<u32>();
    let folded = (sum & 0xffff) + (sum >> 16);
    let checksum = !((folded & 0xffff) + (folded >> 16)) as u16;
    h[10..12].copy_from_slice(&checksum.to_be_bytes());
    f.extend(h);
}

/// Ethernet, IPv4 and a UDP header (no checksum) to `port`, carrying `len` bytes.
fn outer_udp(f: &mut Vec<u8>, port: u16, len: usize) {
    outer_ipv4(f, 17, 8 + len);
    f.extend(49_152u16.to_be_bytes());
    f.extend(port.to_be_bytes());
    f.extend(((8 + len) as u16).to_be_bytes());
    f.extend([0, 0]);
}
