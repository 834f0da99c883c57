//! The rtype datagram: header view, CRC footer, LZ4 payloads (document 002 §4, §8, §9).

use std::ops::Range;

use crate::finding::{add_finding, Detail, Finding};
use crate::proto::rtype::{
    self as desc, COMPRESSED_BIT, COMPRESS_THRESHOLD, CRC_LEN, HEADER, HEADER_15,
};
use crate::proto::schema::Endian;
use crate::proto::schema::{field_range, Direction, Message, Node, Role};
use crate::proto::Rule;

/// The rules the message walker raises for rtype payloads, named in the description.
pub use crate::proto::rtype::MESSAGE_RULES;

/// Byte ranges of the header fields, read from the description at compile time.
mod field {
    use super::*;
    pub const VERSION: Range<usize> = field_range(HEADER, Role::VersionByte);
    pub const PACKET_TYPE: Range<usize> = field_range(HEADER, Role::PacketType);
    pub const MSG_TYPE: Range<usize> = field_range(HEADER, Role::MessageType);
    pub const SEQUENCE: Range<usize> = field_range(HEADER, Role::Sequence);
    pub const TICK: Range<usize> = field_range(HEADER, Role::Tick);
    pub const PAYLOAD_LEN: Range<usize> = field_range(HEADER, Role::PayloadLen);
    pub const ORIG_SIZE: Range<usize> = field_range(HEADER, Role::OrigSize);
    pub const PAYLOAD_LEN_15: Range<usize> = field_range(HEADER_15, Role::PayloadLen);
}

/// Which header a datagram carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderLayout {
    /// The document's 17-byte header.
    Standard,
    /// The older 15-byte header of spec-notes B.
    Old15,
}

impl HeaderLayout {
    /// The header's size in bytes (a layout is never empty).
    #[allow(clippy::len_without_is_empty)]
    pub const fn len(self) -> usize {
        match self {
            HeaderLayout::Standard => desc::HEADER_LEN,
            HeaderLayout::Old15 => desc::HEADER_15_LEN,
        }
    }
    pub const fn nodes(self) -> &'static [Node] {
        match self {
            HeaderLayout::Standard => HEADER,
            HeaderLayout::Old15 => HEADER_15,
        }
    }
}

/// A typed view of an rtype header over a byte slice (smoltcp style): construct with
/// [`Header::new_checked`], which checks the length once, then read fields by name.
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    buf: &'a [u8],
    layout: HeaderLayout,
}

impl<'a> Header<'a> {
    pub fn new_checked(buf: &'a [u8], layout: HeaderLayout) -> Option<Header<'a>> {
        (buf.len() >= layout.len()).then_some(Header { buf, layout })
    }
    fn u16_at(&self, r: Range<usize>) -> u16 {
        u16::from_be_bytes([self.buf[r.start], self.buf[r.start + 1]])
    }
    pub fn layout(&self) -> HeaderLayout {
        self.layout
    }
    pub fn version_byte(&self) -> u8 {
        self.buf[field::VERSION.start]
    }
    pub fn version(&self) -> u8 {
        self.version_byte() & !COMPRESSED_BIT
    }
    /// The 15-byte header has no compression bit.
    pub fn compressed(&self) -> bool {
        self.layout == HeaderLayout::Standard && self.version_byte() & COMPRESSED_BIT != 0
    }
    pub fn packet_type(&self) -> u8 {
        self.buf[field::PACKET_TYPE.start]
    }
    pub fn msg_type(&self) -> u8 {
        self.buf[field::MSG_TYPE.start]
    }
    pub fn sequence(&self) -> u16 {
        self.u16_at(field::SEQUENCE)
    }
    pub fn tick(&self) -> u32 {
        let r = field::TICK;
        u32::from_be_bytes([
            self.buf[r.start],
            self.buf[r.start + 1],
            self.buf[r.start + 2],
            self.buf[r.start + 3],
        ])
    }
    pub fn payload_len(&self) -> u16 {
        match self.layout {
            HeaderLayout::Standard => self.u16_at(field::PAYLOAD_LEN),
            HeaderLayout::Old15 => self.u16_at(field::PAYLOAD_LEN_15),
        }
    }
    pub fn orig_size(&self) -> u16 {
        match self.layout {
            HeaderLayout::Standard => self.u16_at(field::ORIG_SIZE),
            HeaderLayout::Old15 => 0,
        }
    }
    /// The header's bytes.
    pub fn bytes(&self) -> &'a [u8] {
        &self.buf[..self.layout.len()]
    }
}

pub const ENDIAN: Endian = Endian::Big;

/// An rtype datagram, checked: header, where the payload is, and what the footer says.
#[derive(Clone, Copy, Debug)]
pub struct Datagram<'a> {
    pub header: Header<'a>,
    /// The payload as it is on the wire (compressed when the header says so).
    pub wire_payload: &'a [u8],
    /// Offset of the payload in the datagram.
    pub payload_at: usize,
    pub crc_stored: u32,
    pub crc_computed: u32,
    pub message: Option<&'static Message>,
    /// Length of the decompressed payload in the caller's scratch buffer, when it was compressed and
    /// decompressed without error.
    pub decompressed: Option<usize>,
}

impl<'a> Datagram<'a> {
    pub fn crc_ok(&self) -> bool {
        self.crc_stored == self.crc_computed
    }
    /// The payload to decode: decompressed into `scratch`, or as on the wire. `None` when
    /// decompression failed (the payload can only be shown as bytes), or when `scratch` does not
    /// hold what was decompressed (a worker's batch that lost it: never a panic).
    pub fn payload<'s>(&self, scratch: &'s [u8]) -> Option<&'s [u8]>
    where
        'a: 's,
    {
        match (self.header.compressed(), self.decompressed) {
            (false, _) => Some(self.wire_payload),
            (true, Some(n)) => scratch.get(..n),
            (true, None) => None,
        }
    }

    /// The datagram without its bytes, to take back with them by [`Checked::attach`].
    pub fn detach(&self) -> Checked {
        Checked {
            layout: self.header.layout,
            payload_at: self.payload_at,
            crc_stored: self.crc_stored,
            crc_computed: self.crc_computed,
            message: self.message,
            decompressed: self.decompressed,
        }
    }
}

/// A datagram [`check`] passed, less its bytes: a worker checks the header, and the ordered
/// stage takes the outcome back with the same bytes instead of checking it again.
#[derive(Clone, Copy, Debug)]
pub struct Checked {
    layout: HeaderLayout,
    payload_at: usize,
    crc_stored: u32,
    crc_computed: u32,
    message: Option<&'static Message>,
    decompressed: Option<usize>,
}

impl Checked {
    /// The datagram again, over `bytes`: those it was checked on.
    pub fn attach(self, bytes: &[u8]) -> Datagram<'_> {
        let payload_end = bytes.len().saturating_sub(CRC_LEN);
        Datagram {
            header: Header {
                buf: bytes,
                layout: self.layout,
            },
            wire_payload: bytes.get(self.payload_at..payload_end).unwrap_or_default(),
            payload_at: self.payload_at,
            crc_stored: self.crc_stored,
            crc_computed: self.crc_computed,
            message: self.message,
            decompressed: self.decompressed,
        }
    }
}

/// Largest payload a header can announce; the scratch buffer for decompression has this size.
pub const MAX_PAYLOAD: usize = u16::MAX as usize;

/// The CRC stored in the footer (the caller checked there is one).
fn crc_stored(bytes: &[u8]) -> u32 {
    let footer = &bytes[bytes.len() - CRC_LEN..];
    u32::from_be_bytes([footer[0], footer[1], footer[2], footer[3]])
}

/// Picks the header layout whose length (and, for the older header, CRC) fits the datagram.
fn layout_of(bytes: &[u8], crc_ok: bool) -> HeaderLayout {
    let fits = |layout: HeaderLayout| {
        Header::new_checked(bytes, layout)
            .is_some_and(|h| bytes.len() == layout.len() + h.payload_len() as usize + CRC_LEN)
    };
    if fits(HeaderLayout::Standard) {
        return HeaderLayout::Standard;
    }
    if fits(HeaderLayout::Old15) && crc_ok {
        return HeaderLayout::Old15;
    }
    HeaderLayout::Standard
}

/// Whether `bytes`, which start with the magic, are rtype beyond their first four bytes: a header
/// whose Payload Len agrees with the datagram's size, a CRC that checks, or version 1 with a valid
/// packet type and a known message type. Random bytes after a magic pass none of these; a real
/// datagram with a bad CRC still passes the first, so it is recognised and its CRC reported.
pub fn consistent(bytes: &[u8]) -> bool {
    let Some(header) = Header::new_checked(bytes, HeaderLayout::Standard) else {
        return false;
    };
    let fits = |layout: HeaderLayout| {
        Header::new_checked(bytes, layout)
            .is_some_and(|h| bytes.len() == layout.len() + h.payload_len() as usize + CRC_LEN)
    };
    let crc_ok = || crc_stored(bytes) == crc32fast::hash(&bytes[..bytes.len() - CRC_LEN]);
    let known = || {
        header.version() == desc::VERSION
            && matches!(
                header.packet_type(),
                desc::PACKET_CLIENT | desc::PACKET_SERVER
            )
            && desc::message(header.msg_type()).is_some()
    };
    bytes.len() >= HeaderLayout::Old15.len() + CRC_LEN
        && (fits(HeaderLayout::Standard) || fits(HeaderLayout::Old15) || crc_ok() || known())
}

/// The costly part of checking an rtype datagram: its CRC, and the decompression of its payload.
/// It needs nothing from other datagrams, so the pipeline runs it ahead on its workers.
#[derive(Clone, Copy, Debug)]
pub struct Unpacked {
    layout: HeaderLayout,
    crc_computed: u32,
    /// The LZ4 outcome of a compressed payload: the decompressed length, or `None` when it failed.
    decompressed: Option<usize>,
}

impl Unpacked {
    /// The decompressed length, when the payload was compressed and LZ4 decoded it.
    pub fn decompressed(&self) -> Option<usize> {
        self.decompressed
    }
}

/// Computes `bytes`' CRC and, when its header says the payload is compressed, decompresses it into
/// `scratch` (which must be [`MAX_PAYLOAD`] bytes). Judging is left to [`check`].
pub fn unpack(bytes: &[u8], scratch: &mut [u8]) -> Unpacked {
    // The CRC covers everything before the footer whatever the header's layout, and the layout
    // check needs it: computed once, first.
    let crc_computed = bytes
        .len()
        .checked_sub(CRC_LEN)
        .map_or(0, |covered| crc32fast::hash(&bytes[..covered]));
    let crc_ok = bytes.len() >= CRC_LEN && crc_stored(bytes) == crc_computed;
    let layout = layout_of(bytes, crc_ok);
    let mut unpacked = Unpacked {
        layout,
        crc_computed,
        decompressed: None,
    };
    let Some(header) = Header::new_checked(bytes, layout) else {
        return unpacked;
    };
    if bytes.len() < layout.len() + CRC_LEN {
        return unpacked;
    }
    if header.compressed() {
        let wire_payload = &bytes[layout.len()..bytes.len() - CRC_LEN];
        unpacked.decompressed =
            lz4_flex::block::decompress_into(wire_payload, &mut scratch[..MAX_PAYLOAD]).ok();
    }
    unpacked
}

/// Checks an rtype datagram (it starts with the magic, or is on a conversation recognised as
/// rtype): magic, layout, length, CRC, version, packet type,
/// compression (decompressing into `scratch`, which must be [`MAX_PAYLOAD`] bytes), message type and
/// direction. Returns `None` when it is too short to carry a header and footer.
pub fn parse<'a>(
    bytes: &'a [u8],
    scratch: &mut [u8],
    findings: &mut Vec<Finding>,
) -> Option<Datagram<'a>> {
    check(bytes, unpack(bytes, scratch), findings)
}

/// [`parse`] with the CRC and decompression done already by [`unpack`] (the payload is in the
/// scratch buffer `unpack` was given).
pub fn check<'a>(
    bytes: &'a [u8],
    unpacked: Unpacked,
    findings: &mut Vec<Finding>,
) -> Option<Datagram<'a>> {
    let mut report =
        |rule, at: usize, detail| add_finding(findings, Finding::new(rule, at as u32, detail));
    let layout = unpacked.layout;
    if bytes.len() < layout.len() + CRC_LEN {
        let detail = Detail::Sizes {
            expected: (layout.len() + CRC_LEN) as u64,
            found: bytes.len() as u64,
        };
        report(Rule::RtypeShort, 0, detail);
        return None;
    }
    let header = Header::new_checked(bytes, layout)?;
    if !bytes.starts_with(&desc::MAGIC) {
        let found = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        report(Rule::RtypeMagic, 0, Detail::Value(found.into()));
    }
    let payload_at = layout.len();
    let payload_end = bytes.len() - CRC_LEN;
    if layout == HeaderLayout::Old15 {
        report(Rule::RtypeOldHeader, 0, Detail::None);
    }
    let announced = header.payload_len() as usize;
    if payload_at + announced != payload_end {
        let at = field::PAYLOAD_LEN.start;
        report(
            Rule::RtypeLength,
            at,
            Detail::Sizes {
                expected: announced as u64,
                found: (payload_end - payload_at) as u64,
            },
        );
    }
    let crc_stored = crc_stored(bytes);
    let crc_computed = unpacked.crc_computed;
    if crc_stored != crc_computed {
        report(
            Rule::RtypeCrc,
            payload_end,
            Detail::Crc {
                stored: crc_stored,
                computed: crc_computed,
            },
        );
    }
    if header.version() != desc::VERSION {
        report(
            Rule::RtypeVersion,
            field::VERSION.start,
            Detail::Value(header.version().into()),
        );
    }
    let direction = match header.packet_type() {
        desc::PACKET_CLIENT => Some(Direction::ClientToServer),
        desc::PACKET_SERVER => Some(Direction::ServerToClient),
        other => {
            report(
                Rule::RtypePacketType,
                field::PACKET_TYPE.start,
                Detail::Value(other.into()),
            );
            None
        }
    };
    let wire_payload = &bytes[payload_at..payload_end];
    let mut decompressed = None;
    let orig = header.orig_size() as usize;
    if header.compressed() {
        if orig <= COMPRESS_THRESHOLD {
            report(
                Rule::RtypeCompressSmall,
                field::ORIG_SIZE.start,
                Detail::Value(orig as u64),
            );
        }
        if wire_payload.len() >= orig {
            let detail = Detail::Sizes {
                expected: orig as u64,
                found: wire_payload.len() as u64,
            };
            report(Rule::RtypeCompressNotSmaller, payload_at, detail);
        }
        match unpacked.decompressed {
            Some(n) => {
                if n != orig {
                    report(
                        Rule::RtypeOrigSize,
                        field::ORIG_SIZE.start,
                        Detail::Sizes {
                            expected: orig as u64,
                            found: n as u64,
                        },
                    );
                }
                decompressed = Some(n);
            }
            None => report(Rule::RtypeLz4, payload_at, Detail::None),
        }
    } else if orig != 0 {
        report(
            Rule::RtypeOrigSizeSet,
            field::ORIG_SIZE.start,
            Detail::Value(orig as u64),
        );
    }
    let message = desc::message(header.msg_type());
    match message {
        None => report(
            Rule::RtypeUnknownType,
            field::MSG_TYPE.start,
            Detail::Value(header.msg_type().into()),
        ),
        Some(m) => {
            if direction.is_some_and(|d| d != m.direction) {
                report(
                    Rule::RtypeDirection,
                    field::PACKET_TYPE.start,
                    Detail::Value(header.packet_type().into()),
                );
            }
            if let Some(rule) = m.seen_rule {
                report(rule, field::MSG_TYPE.start, Detail::None);
            }
        }
    }
    Some(Datagram {
        header,
        wire_payload,
        payload_at,
        crc_stored,
        crc_computed,
        message,
        decompressed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::rtype::MAGIC;

    fn datagram(version: u8, ptype: u8, mtype: u8, payload: &[u8], orig: u16) -> Vec<u8> {
        let mut d = MAGIC.to_vec();
        d.extend([version, ptype, mtype, 0, 7, 0, 0, 0, 9]);
        d.extend((payload.len() as u16).to_be_bytes());
        d.extend(orig.to_be_bytes());
        d.extend(payload);
        let crc = crc32fast::hash(&d);
        d.extend(crc.to_be_bytes());
        d
    }

    fn rules(findings: &[Finding]) -> Vec<Rule> {
        findings.iter().map(|f| f.rule).collect()
    }

    #[test]
    fn header_fields_and_crc() {
        let bytes = datagram(1, 1, 4, &[0, 0, 0, 5], 0);
        let mut scratch = vec![0; MAX_PAYLOAD];
        let mut findings = vec![];
        let d = parse(&bytes, &mut scratch, &mut findings).unwrap();
        assert_eq!(rules(&findings), vec![]);
        assert_eq!(
            (d.header.sequence(), d.header.tick(), d.header.payload_len()),
            (7, 9, 4)
        );
        assert_eq!(d.message.unwrap().name, "CLIENT_PING");
        assert!(d.crc_ok());
        assert_eq!(d.payload(&scratch).unwrap(), &[0, 0, 0, 5]);
    }

    #[test]
    fn crc_length_version_direction() {
        let mut bytes = datagram(2, 2, 4, &[0, 0, 0, 5], 0);
        *bytes.last_mut().unwrap() ^= 1;
        let mut scratch = vec![0; MAX_PAYLOAD];
        let mut findings = vec![];
        parse(&bytes, &mut scratch, &mut findings).unwrap();
        assert_eq!(
            rules(&findings),
            vec![Rule::RtypeCrc, Rule::RtypeVersion, Rule::RtypeDirection]
        );
    }

    #[test]
    fn compression() {
        let plain: Vec<u8> = (0..200u8).map(|i| i % 7).collect();
        let packed = lz4_flex::block::compress(&plain);
        let bytes = datagram(0x81, 2, 0x14, &packed, 200);
        let mut scratch = vec![0; MAX_PAYLOAD];
        let mut findings = vec![];
        let d = parse(&bytes, &mut scratch, &mut findings).unwrap();
        assert_eq!(rules(&findings), vec![]);
        assert_eq!(d.payload(&scratch).unwrap(), &plain[..]);
        let bytes = datagram(0x81, 2, 0x14, &packed, 199);
        findings.clear();
        parse(&bytes, &mut scratch, &mut findings).unwrap();
        assert_eq!(rules(&findings), vec![Rule::RtypeOrigSize]);
        let bytes = datagram(0x81, 2, 0x14, &[0xF0, 1, 2], 40);
        findings.clear();
        let d = parse(&bytes, &mut scratch, &mut findings).unwrap();
        assert_eq!(
            rules(&findings),
            vec![Rule::RtypeCompressSmall, Rule::RtypeLz4]
        );
        assert!(d.payload(&scratch).is_none());
    }

    #[test]
    fn a_detached_check_attaches_to_the_same_datagram() {
        let plain: Vec<u8> = (0..200u8).map(|i| i % 7).collect();
        let packed = lz4_flex::block::compress(&plain);
        let mut bytes = datagram(0x81, 2, 0x14, &packed, 200);
        *bytes.last_mut().unwrap() ^= 1;
        let mut scratch = vec![0; MAX_PAYLOAD];
        let d = parse(&bytes, &mut scratch, &mut vec![]).unwrap();
        let again = d.detach().attach(&bytes);
        fn view<'a>(d: &Datagram<'a>) -> impl PartialEq + std::fmt::Debug + 'a {
            let h = d.header;
            let header = (
                h.layout(),
                h.sequence(),
                h.tick(),
                h.msg_type(),
                h.compressed(),
            );
            let footer = (d.crc_stored, d.crc_computed, d.crc_ok());
            let payload = (d.wire_payload, d.payload_at, d.decompressed);
            (header, footer, payload, d.message.map(|m| m.name))
        }
        assert_eq!(view(&again), view(&d));
        assert!(!again.crc_ok());
        assert_eq!(again.payload(&scratch).unwrap(), &plain[..]);
        // A scratch that does not hold what was decompressed gives no payload, not a panic.
        assert_eq!(again.payload(&scratch[..199]), None);
        // Other bytes than its own (never given) yield a datagram all the same, not a panic.
        let short = d.detach().attach(&bytes[..3]);
        assert_eq!(short.wire_payload, &[] as &[u8]);
    }

    #[test]
    fn old_header_and_short() {
        let mut d = MAGIC.to_vec();
        d.extend([1, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0]);
        let crc = crc32fast::hash(&d);
        d.extend(crc.to_be_bytes());
        let mut scratch = vec![0; MAX_PAYLOAD];
        let mut findings = vec![];
        let h = parse(&d, &mut scratch, &mut findings).unwrap();
        assert_eq!(h.header.layout(), HeaderLayout::Old15);
        assert_eq!(rules(&findings), vec![Rule::RtypeOldHeader]);
        findings.clear();
        assert!(parse(&d[..10], &mut scratch, &mut findings).is_none());
        assert_eq!(rules(&findings), vec![Rule::RtypeShort]);
    }
}
