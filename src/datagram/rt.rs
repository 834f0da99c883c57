//! The rt datagram (document 003): a 12-byte header and a payload, in the byte order the magic
//! shows. The document says big-endian (`52 54`); the real server sends little-endian (`54 52`,
//! spec-notes B). The view reads either, so that traffic is decoded as sent and judged after.

use std::ops::Range;

use crate::finding::{add_finding, Detail, Finding};
use crate::proto::rt::{self as desc, HEADER, HEADER_LEN};
use crate::proto::schema::Endian;
use crate::proto::schema::{field_range, Message, Role};
use crate::proto::Rule;

/// The rules the message walker raises for rt payloads, named in the description.
pub use crate::proto::rt::MESSAGE_RULES;

/// Byte ranges of the header fields, read from the description at compile time.
mod field {
    use super::*;
    pub const MAGIC: Range<usize> = field_range(HEADER, Role::Magic);
    pub const PACKET_TYPE: Range<usize> = field_range(HEADER, Role::MessageType);
    pub const FLAGS: Range<usize> = field_range(HEADER, Role::Flags);
    pub const SEQUENCE: Range<usize> = field_range(HEADER, Role::Sequence);
    pub const TIMESTAMP: Range<usize> = field_range(HEADER, Role::Timestamp);
}

/// Flags under which the payload is not plain fields: the document names these states but gives
/// no algorithm or fragment format.
const OPAQUE_FLAGS: u8 = desc::FLAG_COMPRESSED | desc::FLAG_ENCRYPTED | desc::FLAG_FRAGMENTED;

/// The byte order whose magic starts `bytes`, if either does.
pub fn endian_of(bytes: &[u8]) -> Option<Endian> {
    if bytes.starts_with(&desc::MAGIC_BE) {
        Some(Endian::Big)
    } else if bytes.starts_with(&desc::MAGIC_LE) {
        Some(Endian::Little)
    } else {
        None
    }
}

/// A typed view of an rt header over a byte slice (smoltcp style): [`Header::new_checked`]
/// checks the length and finds the byte order once; fields are then read by name.
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    buf: &'a [u8],
    endian: Endian,
}

impl<'a> Header<'a> {
    /// A header over `buf`, when it is long enough and starts with the magic in either order.
    pub fn new_checked(buf: &'a [u8]) -> Option<Header<'a>> {
        Header::in_order(buf, endian_of(buf)?)
    }
    /// A header over `buf` read in `endian`, whatever its first bytes (a datagram of a known
    /// conversation), when it is long enough.
    pub fn in_order(buf: &'a [u8], endian: Endian) -> Option<Header<'a>> {
        (buf.len() >= HEADER_LEN).then_some(Header { buf, endian })
    }
    fn uint(&self, r: Range<usize>) -> u32 {
        let bytes = &self.buf[r];
        match self.endian {
            Endian::Big => bytes.iter().fold(0, |acc, b| acc << 8 | u32::from(*b)),
            Endian::Little => bytes
                .iter()
                .rev()
                .fold(0, |acc, b| acc << 8 | u32::from(*b)),
        }
    }
    pub fn endian(&self) -> Endian {
        self.endian
    }
    /// The magic in the datagram's own byte order: always 0x5254 for a checked header.
    pub fn magic(&self) -> u16 {
        self.uint(field::MAGIC) as u16
    }
    pub fn packet_type(&self) -> u8 {
        self.buf[field::PACKET_TYPE.start]
    }
    pub fn flags(&self) -> u8 {
        self.buf[field::FLAGS.start]
    }
    pub fn reliable(&self) -> bool {
        self.flags() & desc::FLAG_RELIABLE != 0
    }
    /// Whether the payload is compressed, encrypted or a fragment, and so cannot be walked.
    pub fn opaque(&self) -> bool {
        self.flags() & OPAQUE_FLAGS != 0
    }
    pub fn compressed(&self) -> bool {
        self.flags() & desc::FLAG_COMPRESSED != 0
    }
    pub fn sequence(&self) -> u32 {
        self.uint(field::SEQUENCE)
    }
    pub fn timestamp(&self) -> u32 {
        self.uint(field::TIMESTAMP)
    }
    /// The header's bytes.
    pub fn bytes(&self) -> &'a [u8] {
        &self.buf[..HEADER_LEN]
    }
}

/// An rt datagram, checked: the header, where the payload is, and its message type.
#[derive(Clone, Copy, Debug)]
pub struct Datagram<'a> {
    pub header: Header<'a>,
    pub payload: &'a [u8],
    /// Offset of the payload in the datagram (the header's length).
    pub payload_at: usize,
    pub message: Option<&'static Message>,
}

impl Datagram<'_> {
    /// The payload can be walked field by field (not compressed, encrypted or fragmented, and of
    /// a known type).
    pub fn decodable(&self) -> bool {
        self.message.is_some() && !self.header.opaque()
    }
}

/// Whether `bytes`, which start with the magic, are rt beyond their first two bytes: a header
/// with no reserved flag set, a packet type the document (or real servers) define, and a payload
/// whose size fits that type. Text that starts with "RT" fails (every printable character sets a
/// reserved flag bit), and so do most other bytes.
pub fn consistent(bytes: &[u8]) -> bool {
    Header::new_checked(bytes).is_some_and(|h| {
        h.flags() & desc::RESERVED_FLAGS == 0
            && desc::message(h.packet_type()).is_some_and(|m| m.size_fits(bytes.len() - HEADER_LEN))
    })
}

/// Checks an rt datagram: header length, magic and byte order, packet type, flags, payload size,
/// and the type's reliability. `order` is the byte order its conversation has used so far (none
/// for a conversation's first datagram): a datagram whose magic is broken, or in the other order,
/// is read in it and reported. Returns `None` when it is too short to carry a header. The
/// byte-order finding is raised on every little-endian datagram; the pipeline keeps one per
/// conversation.
pub fn parse<'a>(
    bytes: &'a [u8],
    order: Option<Endian>,
    findings: &mut Vec<Finding>,
) -> Option<Datagram<'a>> {
    let mut report =
        |rule, at: usize, detail| add_finding(findings, Finding::new(rule, at as u32, detail));
    let magic = endian_of(bytes);
    let endian = match (magic, order) {
        (Some(m), Some(o)) if m != o => {
            let found = u16::from_be_bytes([bytes[0], bytes[1]]);
            report(
                Rule::RtByteOrderSwitch,
                field::MAGIC.start,
                Detail::Value(found.into()),
            );
            o
        }
        (Some(m), _) => m,
        (None, o) => {
            if let Some(found) = bytes.first_chunk::<2>() {
                let found = u16::from_be_bytes(*found);
                report(
                    Rule::RtMagic,
                    field::MAGIC.start,
                    Detail::Value(found.into()),
                );
            }
            // Real servers send little-endian (spec-notes B).
            o.unwrap_or(Endian::Little)
        }
    };
    let Some(header) = Header::in_order(bytes, endian) else {
        report(
            Rule::RtShort,
            0,
            Detail::Sizes {
                expected: HEADER_LEN as u64,
                found: bytes.len() as u64,
            },
        );
        return None;
    };
    if header.endian() == Endian::Little {
        report(
            Rule::RtByteOrder,
            field::MAGIC.start,
            Detail::Value(u64::from(u16::from_be_bytes(desc::MAGIC_LE))),
        );
    }
    let code = header.packet_type();
    let message = desc::message(code);
    if !(0x01..=0x7F).contains(&code) {
        report(
            Rule::RtPacketType,
            field::PACKET_TYPE.start,
            Detail::Value(code.into()),
        );
    } else if message.is_none() {
        report(
            Rule::RtUnknownType,
            field::PACKET_TYPE.start,
            Detail::Value(code.into()),
        );
    }
    let flags = header.flags();
    if flags & desc::RESERVED_FLAGS != 0 {
        report(
            Rule::RtReservedFlags,
            field::FLAGS.start,
            Detail::Value(flags.into()),
        );
    }
    if header.opaque() {
        report(
            Rule::RtOpaque,
            field::FLAGS.start,
            Detail::Value(flags.into()),
        );
    }
    let payload = &bytes[HEADER_LEN..];
    if payload.len() > desc::MAX_PAYLOAD {
        let detail = Detail::Sizes {
            expected: desc::MAX_PAYLOAD as u64,
            found: payload.len() as u64,
        };
        report(Rule::RtDatagramSize, HEADER_LEN, detail);
    }
    if let Some(m) = message {
        if let Some(rule) = m.seen_rule {
            report(rule, field::PACKET_TYPE.start, Detail::None);
        }
        if !header.reliable() {
            if code == desc::CLIENT_DISCONNECT {
                report(
                    Rule::RtDisconnectUnreliable,
                    field::FLAGS.start,
                    Detail::Value(flags.into()),
                );
            } else if desc::documented_reliable(code) {
                report(
                    Rule::RtReliableFlagMissing,
                    field::FLAGS.start,
                    Detail::Value(flags.into()),
                );
            }
        }
    }
    Some(Datagram {
        header,
        payload,
        payload_at: HEADER_LEN,
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(findings: &[Finding]) -> Vec<Rule> {
        findings.iter().map(|f| f.rule).collect()
    }

    /// A datagram with the header in the given byte order.
    fn datagram(
        endian: Endian,
        code: u8,
        flags: u8,
        sequence: u32,
        timestamp: u32,
        payload: &[u8],
    ) -> Vec<u8> {
        let mut d = Vec::new();
        match endian {
            Endian::Big => {
                d.extend(0x5254u16.to_be_bytes());
                d.extend([code, flags]);
                d.extend(sequence.to_be_bytes());
                d.extend(timestamp.to_be_bytes());
            }
            Endian::Little => {
                d.extend(0x5254u16.to_le_bytes());
                d.extend([code, flags]);
                d.extend(sequence.to_le_bytes());
                d.extend(timestamp.to_le_bytes());
            }
        }
        d.extend(payload);
        d
    }

    #[test]
    fn header_fields_in_both_byte_orders() {
        for endian in [Endian::Big, Endian::Little] {
            let bytes = datagram(endian, 0x71, 0x11, 0x0102_0304, 0x0A0B_0C0D, &[0; 4]);
            let mut findings = vec![];
            let d = parse(&bytes, None, &mut findings).unwrap();
            let h = d.header;
            assert_eq!(
                (h.endian(), h.magic(), h.packet_type(), h.flags()),
                (endian, 0x5254, 0x71, 0x11)
            );
            assert_eq!((h.sequence(), h.timestamp()), (0x0102_0304, 0x0A0B_0C0D));
            assert!(h.reliable() && !h.opaque());
            assert_eq!(d.message.unwrap().name, "PING");
            assert_eq!((d.payload_at, d.payload.len()), (12, 4));
            let expected = if endian == Endian::Little {
                vec![Rule::RtByteOrder]
            } else {
                vec![]
            };
            assert_eq!(rules(&findings), expected);
        }
    }

    #[test]
    fn the_real_servers_bytes() {
        // A PLAYER_INPUT from rt-two-players.pcap, frame 142.
        let bytes = [
            0x54, 0x52, 0x10, 0x01, 0x7d, 0x7d, 0x02, 0x6b, 0x7d, 0x7d, 0x02, 0x6b, 0x00, 0x00,
            0x00, 0x00, 0x18, 0x00, 0, 0, 0, 0,
        ];
        let mut findings = vec![];
        let d = parse(&bytes, None, &mut findings).unwrap();
        assert_eq!(
            (d.header.sequence(), d.header.timestamp()),
            (0x6b02_7d7d, 0x6b02_7d7d)
        );
        assert_eq!(d.message.unwrap().name, "PLAYER_INPUT");
        assert_eq!(rules(&findings), vec![Rule::RtByteOrder]);
        assert_eq!(findings[0].detail, Detail::Value(0x5452));
    }

    #[test]
    fn short_types_flags_and_size() {
        let mut findings = vec![];
        assert!(parse(&[0x52, 0x54, 0x01, 0x00, 0x00], None, &mut findings).is_none());
        assert_eq!(
            findings,
            vec![Finding::new(
                Rule::RtShort,
                0,
                Detail::Sizes {
                    expected: 12,
                    found: 5
                }
            )]
        );
        for (code, flags, expected) in [
            (0x00, 0x00, vec![Rule::RtPacketType]),
            (0x80, 0x00, vec![Rule::RtPacketType]),
            (0x23, 0x00, vec![Rule::RtUnknownType]),
            (0x11, 0x01, vec![Rule::RtUndocumentedType]),
            (0x04, 0x00, vec![Rule::RtDisconnectUnreliable]),
            (0x21, 0x00, vec![Rule::RtReliableFlagMissing]),
            (0x21, 0x21, vec![Rule::RtReservedFlags]),
            (0x24, 0x02, vec![Rule::RtOpaque]),
        ] {
            findings.clear();
            let bytes = datagram(Endian::Big, code, flags, 0, 0, &[]);
            let d = parse(&bytes, None, &mut findings).unwrap();
            assert_eq!(
                rules(&findings),
                expected,
                "type 0x{code:02X} flags 0x{flags:02X}"
            );
            assert_eq!(d.decodable(), d.message.is_some() && flags & 0x0E == 0);
        }
        findings.clear();
        parse(
            &datagram(Endian::Big, 0x24, 0, 0, 0, &[0; 1189]),
            None,
            &mut findings,
        )
        .unwrap();
        assert_eq!(
            findings,
            vec![Finding::new(
                Rule::RtDatagramSize,
                12,
                Detail::Sizes {
                    expected: 1188,
                    found: 1189
                }
            )]
        );
    }

    #[test]
    fn a_broken_or_switched_magic_is_read_in_the_conversations_order() {
        let le = datagram(Endian::Little, 0x21, 0, 7, 9, &[]);
        let mut findings = Vec::new();
        let mut broken = le.clone();
        broken[0] ^= 0x01;
        let d = parse(&broken, Some(Endian::Little), &mut findings).unwrap();
        assert_eq!(
            (d.header.endian(), d.header.sequence()),
            (Endian::Little, 7)
        );
        assert_eq!(findings[0].rule, Rule::RtMagic);
        assert_eq!(findings[0].detail, Detail::Value(0x5552));
        findings.clear();
        let mut switched = le;
        switched[..2].copy_from_slice(&desc::MAGIC_BE);
        let d = parse(&switched, Some(Endian::Little), &mut findings).unwrap();
        assert_eq!(
            (d.header.endian(), d.header.sequence()),
            (Endian::Little, 7)
        );
        assert_eq!(findings[0].rule, Rule::RtByteOrderSwitch);
    }

    #[test]
    fn consistency_asks_more_than_the_magic() {
        // PLAYER_INPUT (0x10): the document's 12-byte body (a 24-byte packet), or real
        // servers' 10 bytes.
        assert_eq!(desc::message(0x10).unwrap().fixed_size(), Some(12));
        assert!(consistent(&datagram(
            Endian::Little,
            0x10,
            0,
            1,
            1,
            &[0; 10]
        )));
        assert!(consistent(&datagram(Endian::Big, 0x10, 0, 1, 1, &[0; 12])));
        assert!(!consistent(&datagram(Endian::Big, 0x10, 0, 1, 1, &[0; 11])));
        assert!(!consistent(&datagram(
            Endian::Big,
            0x10,
            0x40,
            1,
            1,
            &[0; 10]
        )));
        assert!(!consistent(&datagram(Endian::Big, 0x7E, 0, 1, 1, &[])));
        assert!(!consistent(b"RTSP/1.0 200 OK\r\nCSeq: 1\r\n\r\n"));
        assert!(!consistent(b"RT"));
    }
}
