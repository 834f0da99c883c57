//! The catalog of rules traffic can break: a stable ID, a severity, the document's section and a
//! one-line explanation each. Declared once here; `rtype-inspect violations`, the README's list,
//! the JSON output and the Lua dissector's expert infos all read this table.

use serde::Serialize;

/// How bad breaking a rule is: error for a broken MUST, warning for a broken SHOULD, info for
/// notable facts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub const fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }

    pub fn parse(s: &str) -> Option<Severity> {
        match s {
            "info" => Some(Severity::Info),
            "warning" => Some(Severity::Warning),
            "error" => Some(Severity::Error),
            _ => None,
        }
    }
}

/// Everything the catalog says about one rule.
#[derive(Debug, Serialize)]
pub struct RuleInfo {
    pub id: &'static str,
    pub severity: Severity,
    /// Document and section, e.g. `002 §8`.
    pub section: &'static str,
    pub summary: &'static str,
}

macro_rules! rules {
    ($($variant:ident = $id:literal, $sev:ident, $section:literal, $summary:literal;)*) => {
        /// A rule of the catalog. The variant is the handle code uses; [`Rule::info`] the facts.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Rule { $($variant),* }

        /// Every rule, in catalog order.
        pub const CATALOG: &[RuleInfo] = &[
            $(RuleInfo { id: $id, severity: Severity::$sev, section: $section, summary: $summary }),*
        ];

        impl Rule {
            pub const ALL: &'static [Rule] = &[$(Rule::$variant),*];
        }
    };
}

rules! {
    // Capture layer.
    CaptureTruncated = "capture.truncated", Error, "pcap",
        "the capture file ends in the middle of a record; everything before the cut was decoded";
    CaptureMalformedPacket = "capture.malformed-packet", Warning, "pcap",
        "a frame's link, IP or UDP header is malformed; the frame was skipped";
    CaptureSnaplen = "capture.snaplen", Warning, "pcap",
        "a datagram was cut short by the capture's snapshot length";
    CaptureFragmentDropped = "capture.fragment-dropped", Warning, "pcap",
        "IP fragments were dropped (limit reached, overlap or expiry) before reassembly";
    // rtype datagram.
    RtypeShortDatagram = "rtype.datagram.short", Error, "002 §4",
        "datagram shorter than the 17-byte header plus the 4-byte CRC";
    RtypeOldHeader = "rtype.header.15-byte", Error, "002 §4",
        "older 15-byte header (no Orig. Size, no compression bit); the header MUST be 17 bytes";
    RtypeVersion = "rtype.header.version", Error, "002 §4, §10",
        "version is not 1; implementations MUST validate the version";
    RtypePacketType = "rtype.header.packet-type", Error, "002 §4",
        "packet type is neither 0x01 (client to server) nor 0x02 (server to client)";
    RtypeLength = "rtype.header.payload-len", Error, "002 §2, §10",
        "Payload Len disagrees with the datagram's size (17 + PayloadLen + 4)";
    RtypeCrc = "rtype.crc.mismatch", Error, "002 §8",
        "CRC32 footer does not match header and payload; receivers MUST discard the packet";
    RtypeCompressSmall = "rtype.compress.small", Warning, "002 §9",
        "payload compressed although its uncompressed size is 64 bytes or less";
    RtypeCompressNotSmaller = "rtype.compress.not-smaller", Warning, "002 §9",
        "payload compressed although the compressed form is not strictly smaller";
    RtypeOrigSizeSet = "rtype.compress.orig-size-set", Warning, "002 §4.1",
        "Orig. Size is not 0 on an uncompressed payload (it SHOULD be 0)";
    RtypeLz4 = "rtype.compress.lz4", Error, "002 §4.1, §9",
        "LZ4 decompression failed; the payload is shown as bytes";
    RtypeOrigSize = "rtype.compress.orig-size", Error, "002 §4.1",
        "decompressed size differs from Orig. Size, which MUST be exact";
    // rtype messages.
    RtypeUnknownType = "rtype.message.unknown-type", Warning, "002 §5",
        "message type not defined by the documents; shown as bytes";
    RtypeDirection = "rtype.message.direction", Error, "002 §5",
        "message type sent with the wrong packet type (direction)";
    RtypeTruncated = "rtype.message.truncated", Error, "002 §6.1, §10",
        "payload ends inside a field";
    RtypeTrailing = "rtype.message.trailing", Warning, "002 §5",
        "bytes left after the message's last field";
    RtypeSize = "rtype.message.size", Error, "002 §5",
        "wrong payload size for a fixed-size message";
    RtypeEmptyPong = "rtype.pong.empty", Warning, "002 §5.2",
        "SERVER_PONG without its u32 clientTime echo (real servers echo sequence and tick instead)";
    RtypeReason = "rtype.reason.unknown", Info, "002 §9",
        "reason code not in the reserved list; shown generically";
    RtypeInputNonFinite = "rtype.input.non-finite", Error, "002 §6.2",
        "CLIENT_INPUT carries a NaN or infinite float; it MUST be rejected";
    RtypeInputUnusedBits = "rtype.input.unused-bits", Info, "spec-notes A",
        "CLIENT_INPUT sets input flag bits 10-15, which the game does not use";
    RtypeUtf8 = "rtype.string.utf8", Warning, "001 §3, 002 §5.2",
        "a string is not valid UTF-8; shown as bytes";
    RtypeReservedBit = "rtype.snapshot.reserved-bit", Warning, "001 §6.2",
        "snapshot mask sets reserved bit 7 or 8, of unknown width: the rest of the snapshot is undecodable";
    RtypeUndefinedBit = "rtype.snapshot.undefined-bit", Warning, "001 §6.2",
        "snapshot mask sets a bit the document does not define: the rest of the snapshot is undecodable";
    RtypeUnknownEntityType = "rtype.snapshot.unknown-entity-type", Info, "001 §6.3",
        "entityType not announced by the conversation's LevelInit";
    RtypeBossTrailer = "rtype.levelinit.boss-trailer", Warning, "001 §3",
        "LevelInit carries a boss trailer after the archetypes, which the document does not define";
    RtypeUnknownEvent = "rtype.levelevent.unknown-type", Info, "001 §4",
        "unknown LevelEvent type; clients MUST ignore it";
    RtypeUnsortedKeyframes = "rtype.levelevent.unsorted-keyframes", Warning, "001 §4",
        "set_scroll keyframes are not sorted by time";
    RtypeLevelTransition = "rtype.leveltransition.sent", Warning, "001 §5",
        "LevelTransition is reserved and not emitted by the current build, yet it was sent";
    RtypeChunkTotalZero = "rtype.chunk.total-zero", Error, "001 §7",
        "SnapshotChunk with totalChunks = 0";
    RtypeChunkIndex = "rtype.chunk.index-out-of-range", Error, "001 §7",
        "SnapshotChunk chunkIndex is not below totalChunks";
    RtypeChunkTotalMismatch = "rtype.chunk.total-mismatch", Warning, "001 §7",
        "chunks of one tick disagree on totalChunks; the set SHOULD be discarded";
    RtypeChunkDuplicate = "rtype.chunk.duplicate", Warning, "001 §7",
        "the same chunk of a tick arrived more than once";
    RtypeChunkMissing = "rtype.chunk.missing", Warning, "001 §7, §9",
        "a chunk set never completed: chunks were missing when it was closed";
    RtypeChunkLimit = "rtype.chunk.limit", Warning, "SECURITY.md",
        "too many chunk sets open at once, or a set grew too large; the oldest was closed";
}

impl Rule {
    pub fn info(self) -> &'static RuleInfo {
        &CATALOG[self as usize]
    }
    pub fn id(self) -> &'static str {
        self.info().id
    }
    pub fn severity(self) -> Severity {
        self.info().severity
    }
    pub fn from_id(id: &str) -> Option<Rule> {
        Rule::ALL.iter().copied().find(|r| r.id() == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_table_aligned() {
        for (i, rule) in Rule::ALL.iter().enumerate() {
            assert_eq!(*rule as usize, i);
            assert_eq!(Rule::from_id(rule.id()), Some(*rule));
        }
        let mut ids: Vec<_> = CATALOG.iter().map(|r| r.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), CATALOG.len());
    }
}
