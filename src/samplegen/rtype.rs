//! Whole rtype datagrams: header, optional LZ4, CRC32 footer (document 002 §4, §8, §9).
//!
//! The header is encoded from the description's header nodes like any message, so its layout
//! lives only in `proto::rtype`. The builder's knobs break the datagram on purpose, one rule each,
//! for the violation samples.

use std::sync::OnceLock;

use serde_json::{json, Value};

use super::encode::{encode_message, encode_nodes};
use crate::datagram::rtype::HeaderLayout;
use crate::proto::profile::Profile;
use crate::proto::rtype::{
    COMPRESSED_BIT, COMPRESS_THRESHOLD, MAGIC, PACKET_CLIENT, PACKET_SERVER, VERSION,
};
use crate::proto::schema::{Direction, Message};

/// The header has no masked fields, so any profile will do; this one is built once.
fn document_profile() -> &'static Profile {
    static DOCUMENT: OnceLock<Profile> = OnceLock::new();
    DOCUMENT.get_or_init(Profile::document)
}

/// Whether and how the payload is LZ4-compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// As a conforming sender does (002 §9): only payloads over 64 bytes, only when strictly smaller.
    Auto,
    Never,
    /// Always, whatever the size or the gain.
    Force,
    /// Set the compression bit and put the payload on the wire as given, as if it were LZ4
    /// (to send bytes that do not decompress). Orig. Size is the payload's length unless overridden.
    Raw,
}

/// Builds one rtype datagram. Defaults are a conforming datagram; each knob breaks one thing.
#[derive(Clone, Debug)]
pub struct RtypeBuilder {
    layout: HeaderLayout,
    version: u8,
    packet_type: u8,
    msg_type: u8,
    sequence: u16,
    tick: u32,
    compression: Compression,
    orig_size: Option<u16>,
    payload_len: Option<u16>,
    corrupt_crc: bool,
}

impl RtypeBuilder {
    /// A datagram of message type `msg_type` with packet type `packet_type`.
    pub fn new(packet_type: u8, msg_type: u8) -> RtypeBuilder {
        RtypeBuilder {
            layout: HeaderLayout::Standard,
            version: VERSION,
            packet_type,
            msg_type,
            sequence: 0,
            tick: 0,
            compression: Compression::Auto,
            orig_size: None,
            payload_len: None,
            corrupt_crc: false,
        }
    }

    /// A datagram for `msg`, with the packet type of its direction.
    pub fn for_message(msg: &Message) -> RtypeBuilder {
        let packet_type = match msg.direction {
            Direction::ClientToServer => PACKET_CLIENT,
            Direction::ServerToClient => PACKET_SERVER,
        };
        RtypeBuilder::new(packet_type, msg.code)
    }

    pub fn sequence(mut self, sequence: u16) -> Self {
        self.sequence = sequence;
        self
    }
    pub fn tick(mut self, tick: u32) -> Self {
        self.tick = tick;
        self
    }
    /// The older 15-byte header of spec-notes B (no Orig. Size, never compressed).
    pub fn old_header(mut self) -> Self {
        self.layout = HeaderLayout::Old15;
        self
    }
    pub fn layout(mut self, layout: HeaderLayout) -> Self {
        self.layout = layout;
        self
    }
    /// The version (bits 0-6 of the version byte).
    pub fn version(mut self, version: u8) -> Self {
        self.version = version;
        self
    }
    pub fn packet_type(mut self, packet_type: u8) -> Self {
        self.packet_type = packet_type;
        self
    }
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }
    /// Writes this Orig. Size instead of the true one (or instead of 0 when uncompressed).
    pub fn orig_size(mut self, orig_size: u16) -> Self {
        self.orig_size = Some(orig_size);
        self
    }
    /// Writes this Payload Len instead of the true one.
    pub fn payload_len(mut self, payload_len: u16) -> Self {
        self.payload_len = Some(payload_len);
        self
    }
    /// Flips the footer's bits, leaving header and payload intact.
    pub fn corrupt_crc(mut self) -> Self {
        self.corrupt_crc = true;
        self
    }

    /// Encodes `value` as `msg` (by the description) and builds the datagram around it.
    pub fn build_message(
        &self,
        msg: &'static Message,
        value: &Value,
        profile: &Profile,
    ) -> Result<Vec<u8>, String> {
        self.build(&encode_message(msg, value, profile)?)
    }

    /// Builds the datagram carrying `payload` (uncompressed; the builder compresses it).
    pub fn build(&self, payload: &[u8]) -> Result<Vec<u8>, String> {
        let (wire, compressed) = self.wire_payload(payload)?;
        let true_orig = if compressed { payload.len() } else { 0 };
        let orig_size = self.orig_size.map_or(true_orig, usize::from);
        let payload_len = self.payload_len.map_or(wire.len(), usize::from);
        let too_big = |what: &str, n: usize| format!("{what} {n} does not fit the header's u16");
        let header = json!({
            "magic": u32::from_be_bytes(MAGIC),
            "version_byte": self.version | if compressed { COMPRESSED_BIT } else { 0 },
            "packet_type": self.packet_type,
            "msg_type": self.msg_type,
            "sequence": self.sequence,
            "tick": self.tick,
            "payload_len": u16::try_from(payload_len).map_err(|_| too_big("payload length", payload_len))?,
            "orig_size": u16::try_from(orig_size).map_err(|_| too_big("original size", orig_size))?,
        });
        let mut datagram = Vec::with_capacity(self.layout.len() + wire.len() + 4);
        encode_nodes(
            self.layout.nodes(),
            &header,
            document_profile(),
            &mut datagram,
        )
        .map_err(|e| format!("header: {e}"))?;
        datagram.extend_from_slice(&wire);
        let mut crc = crc32fast::hash(&datagram);
        if self.corrupt_crc {
            crc = !crc;
        }
        datagram.extend_from_slice(&crc.to_be_bytes());
        Ok(datagram)
    }

    /// The payload as it goes on the wire, and whether it is compressed.
    fn wire_payload(&self, payload: &[u8]) -> Result<(Vec<u8>, bool), String> {
        let old = self.layout == HeaderLayout::Old15;
        match self.compression {
            Compression::Never => Ok((payload.to_vec(), false)),
            Compression::Auto if old || payload.len() <= COMPRESS_THRESHOLD => {
                Ok((payload.to_vec(), false))
            }
            Compression::Auto => {
                let packed = lz4_flex::block::compress(payload);
                Ok(if packed.len() < payload.len() {
                    (packed, true)
                } else {
                    (payload.to_vec(), false)
                })
            }
            Compression::Force | Compression::Raw if old => {
                Err("the 15-byte header has no compression bit".to_string())
            }
            Compression::Force => Ok((lz4_flex::block::compress(payload), true)),
            Compression::Raw => Ok((payload.to_vec(), true)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datagram::rtype::{parse, MAX_PAYLOAD};
    use crate::proto::Rule;

    fn rules_of(datagram: &[u8]) -> Vec<Rule> {
        let mut scratch = vec![0; MAX_PAYLOAD];
        let mut findings = vec![];
        parse(datagram, &mut scratch, &mut findings);
        findings.iter().map(|f| f.rule).collect()
    }

    #[test]
    fn conforming_datagrams_parse_clean() {
        let small = RtypeBuilder::new(PACKET_CLIENT, 0x04)
            .sequence(3)
            .tick(9)
            .build(&[0, 0, 0, 5])
            .unwrap();
        assert_eq!(small.len(), 17 + 4 + 4);
        assert_eq!(rules_of(&small), vec![]);
        let big = vec![0u8; 200];
        let packed = RtypeBuilder::new(PACKET_SERVER, 0x14).build(&big).unwrap();
        assert_eq!(packed[4], 0x81);
        assert_eq!(rules_of(&packed), vec![]);
        let old = RtypeBuilder::new(PACKET_CLIENT, 0x01)
            .old_header()
            .build(&[])
            .unwrap();
        assert_eq!(old.len(), 15 + 4);
        assert_eq!(rules_of(&old), vec![Rule::RtypeOldHeader]);
    }

    #[test]
    fn knobs_break_one_rule_each() {
        let b = || RtypeBuilder::new(PACKET_CLIENT, 0x04);
        let ping = [0, 0, 0, 5];
        assert_eq!(
            rules_of(&b().corrupt_crc().build(&ping).unwrap()),
            vec![Rule::RtypeCrc]
        );
        assert_eq!(
            rules_of(&b().version(2).build(&ping).unwrap()),
            vec![Rule::RtypeVersion]
        );
        assert_eq!(
            rules_of(&b().packet_type(3).build(&ping).unwrap()),
            vec![Rule::RtypePacketType]
        );
        assert_eq!(
            rules_of(&b().payload_len(9).build(&ping).unwrap()),
            vec![Rule::RtypeLength]
        );
        assert_eq!(
            rules_of(&b().orig_size(70).build(&ping).unwrap()),
            vec![Rule::RtypeOrigSizeSet]
        );
        let garbage = RtypeBuilder::new(PACKET_SERVER, 0x14)
            .compression(Compression::Raw)
            .orig_size(100);
        assert_eq!(
            rules_of(&garbage.build(&[0xF0, 0xFF, 0xFF, 0xFF]).unwrap()),
            vec![Rule::RtypeLz4]
        );
        assert!(RtypeBuilder::new(PACKET_CLIENT, 1)
            .old_header()
            .compression(Compression::Force)
            .build(&[])
            .is_err());
    }
}
