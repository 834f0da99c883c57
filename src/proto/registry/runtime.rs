//! The runtime's fields: those the generated dissector computes rather than reads from the
//! description (header length, CRC status, stream deltas…) and those Wireshark itself provides,
//! as tables in declaration order, with the value strings they use.

use super::{FieldType, FilterField, Provider, Runtime, Source, Values};
use crate::datagram::Dialect;
use crate::proto::schema::Named;

/// Severities as Wireshark's `_ws.expert.severity` names them (its `PI_*` values), from the
/// dissector's mapping of the catalog's (error → Error, warning → Warning, info → Note).
pub const EXPERT_SEVERITIES: &[Named] = &[
    Named {
        value: 0x0010_0000,
        name: "Comment",
    },
    Named {
        value: 0x0020_0000,
        name: "Chat",
    },
    Named {
        value: 0x0040_0000,
        name: "Note",
    },
    Named {
        value: 0x0060_0000,
        name: "Warning",
    },
    Named {
        value: 0x0080_0000,
        name: "Error",
    },
];

/// The catalog's severities as rtype-inspect's violation fields number them (in their order).
pub const SEVERITIES: &[Named] = &[
    Named {
        value: 1,
        name: "info",
    },
    Named {
        value: 2,
        name: "warning",
    },
    Named {
        value: 3,
        name: "error",
    },
];

const CRC_STATUS: &[Named] = &[
    Named {
        value: 0,
        name: "Bad",
    },
    Named {
        value: 1,
        name: "Good",
    },
    Named {
        value: 2,
        name: "Unverified",
    },
];

/// A field of the dissector's runtime (not of the description): the generated dissector declares
/// them in [`DISSECTOR_RUNTIME`]'s order (report::lua adds each its Lua key and description).
pub struct RuntimeField {
    pub name: &'static str,
    pub label: &'static str,
    pub ty: FieldType,
    /// Shown in hexadecimal.
    pub hex: bool,
    pub values: Values,
    runtime: Runtime,
}

const fn runtime(
    name: &'static str,
    label: &'static str,
    ty: FieldType,
    runtime: Runtime,
) -> RuntimeField {
    RuntimeField {
        name,
        label,
        ty,
        hex: false,
        values: Values::None,
        runtime,
    }
}

pub const DISSECTOR_RUNTIME: &[RuntimeField] = &[
    runtime(
        "rtype.header_len",
        "Header Length",
        FieldType::Unsigned(8),
        Runtime::RtypeHeaderLen,
    ),
    RuntimeField {
        hex: true,
        ..runtime(
            "rtype.crc",
            "CRC32",
            FieldType::Unsigned(32),
            Runtime::RtypeCrc,
        )
    },
    RuntimeField {
        values: Values::Named(CRC_STATUS),
        ..runtime(
            "rtype.crc.status",
            "CRC32 Status",
            FieldType::Unsigned(8),
            Runtime::RtypeCrcStatus,
        )
    },
    runtime(
        "rtype.payload",
        "Payload",
        FieldType::Bytes,
        Runtime::RtypePayload,
    ),
    runtime(
        "rtype.undecoded",
        "Undecoded",
        FieldType::Bytes,
        Runtime::Undecoded(Dialect::Rtype),
    ),
    runtime(
        "rtype.chunk.reassembled_in",
        "Reassembled in",
        FieldType::FrameNum,
        Runtime::RtypeReassembledIn,
    ),
    runtime(
        "rtype.chunk.frame",
        "Chunk in frame",
        FieldType::FrameNum,
        Runtime::RtypeChunkFrame,
    ),
    runtime(
        "rtype.reassembled.length",
        "Reassembled Length",
        FieldType::Unsigned(32),
        Runtime::RtypeReassembledLength,
    ),
    runtime(
        "rtype.reassembled.undecoded",
        "Undecoded",
        FieldType::Bytes,
        Runtime::ReassembledUndecoded,
    ),
    runtime(
        "rtype.conversation",
        "Conversation",
        FieldType::Unsigned(32),
        Runtime::Conversation(Dialect::Rtype),
    ),
    runtime(
        "rtype.stream.time_delta",
        STREAM_DELTA_LABEL,
        FieldType::RelativeTime,
        Runtime::StreamDelta(Dialect::Rtype),
    ),
    runtime(
        "rt.undecoded",
        "Undecoded",
        FieldType::Bytes,
        Runtime::Undecoded(Dialect::Rt),
    ),
    runtime(
        "rt.conversation",
        "Conversation",
        FieldType::Unsigned(32),
        Runtime::Conversation(Dialect::Rt),
    ),
    runtime(
        "rt.stream.time_delta",
        STREAM_DELTA_LABEL,
        FieldType::RelativeTime,
        Runtime::StreamDelta(Dialect::Rt),
    ),
    runtime(
        "rtnp.framing",
        "Framing",
        FieldType::String,
        Runtime::RtnpFraming,
    ),
    runtime(
        "rtnp.envelope.segments",
        "Segment Count - 1",
        FieldType::Unsigned(32),
        Runtime::RtnpSegments,
    ),
    runtime(
        "rtnp.envelope.words",
        "Segment Words",
        FieldType::Unsigned(32),
        Runtime::RtnpWords,
    ),
    runtime(
        "rtnp.envelope.text",
        "Text",
        FieldType::String,
        Runtime::RtnpEnvelopeText,
    ),
    runtime(
        "rtnp.keepalive",
        "Keep-alive Text",
        FieldType::String,
        Runtime::RtnpKeepalive,
    ),
    runtime(
        "rtnp.text",
        "Message Text (not JSON)",
        FieldType::String,
        Runtime::RtnpText,
    ),
    runtime(
        "rtnp.type",
        "Message Type",
        FieldType::String,
        Runtime::RtnpType,
    ),
    runtime(
        "rtnp.conversation",
        "Conversation",
        FieldType::Unsigned(32),
        Runtime::Conversation(Dialect::Rtnp),
    ),
    runtime(
        "rtnp.stream.time_delta",
        STREAM_DELTA_LABEL,
        FieldType::RelativeTime,
        Runtime::StreamDelta(Dialect::Rtnp),
    ),
];

/// A stream is one direction of one conversation (as `udp.time_delta` is one UDP stream's): a
/// stall in it shows as one long delta (`session.snapshot-stall` says which ticks it lost).
const STREAM_DELTA_LABEL: &str =
    "Time since the previous datagram of the stream (conversation and direction)";

/// The fields Wireshark itself provides that filters on our traffic need.
pub(super) const WIRESHARK_FIELDS: &[RuntimeField] = &[
    runtime("frame", "Frame", FieldType::Protocol, Runtime::Frame),
    runtime(
        "frame.number",
        "Frame Number",
        FieldType::Unsigned(32),
        Runtime::FrameNumber,
    ),
    runtime(
        "frame.len",
        "Frame length on the wire",
        FieldType::Unsigned(32),
        Runtime::FrameLen,
    ),
    runtime(
        "frame.cap_len",
        "Frame length stored into the capture file",
        FieldType::Unsigned(32),
        Runtime::FrameCapLen,
    ),
    runtime(
        "frame.time_relative",
        "Time since reference or first frame",
        FieldType::RelativeTime,
        Runtime::TimeRelative,
    ),
    runtime(
        "frame.time_delta",
        "Time delta from previous captured frame",
        FieldType::RelativeTime,
        Runtime::TimeDelta,
    ),
    runtime(
        "frame.time_epoch",
        "Epoch Time",
        FieldType::RelativeTime,
        Runtime::TimeEpoch,
    ),
    runtime(
        "ip",
        "Internet Protocol Version 4",
        FieldType::Protocol,
        Runtime::Ip,
    ),
    runtime("ip.src", "Source Address", FieldType::Ipv4, Runtime::IpSrc),
    runtime(
        "ip.dst",
        "Destination Address",
        FieldType::Ipv4,
        Runtime::IpDst,
    ),
    runtime(
        "ip.addr",
        "Source or Destination Address",
        FieldType::Ipv4,
        Runtime::IpAddr,
    ),
    runtime(
        "ipv6",
        "Internet Protocol Version 6",
        FieldType::Protocol,
        Runtime::Ipv6,
    ),
    runtime(
        "ipv6.src",
        "Source Address",
        FieldType::Ipv6,
        Runtime::Ipv6Src,
    ),
    runtime(
        "ipv6.dst",
        "Destination Address",
        FieldType::Ipv6,
        Runtime::Ipv6Dst,
    ),
    runtime(
        "ipv6.addr",
        "Source or Destination Address",
        FieldType::Ipv6,
        Runtime::Ipv6Addr,
    ),
    runtime(
        "udp",
        "User Datagram Protocol",
        FieldType::Protocol,
        Runtime::Udp,
    ),
    runtime(
        "udp.srcport",
        "Source Port",
        FieldType::Unsigned(16),
        Runtime::UdpSrcPort,
    ),
    runtime(
        "udp.dstport",
        "Destination Port",
        FieldType::Unsigned(16),
        Runtime::UdpDstPort,
    ),
    runtime(
        "udp.port",
        "Source or Destination Port",
        FieldType::Unsigned(16),
        Runtime::UdpPort,
    ),
    runtime(
        "udp.length",
        "Length",
        FieldType::Unsigned(16),
        Runtime::UdpLength,
    ),
    runtime(
        "_ws.expert",
        "Expert Info",
        FieldType::Protocol,
        Runtime::Expert,
    ),
    RuntimeField {
        hex: true,
        values: Values::Named(EXPERT_SEVERITIES),
        ..runtime(
            "_ws.expert.severity",
            "Severity level",
            FieldType::Unsigned(32),
            Runtime::ExpertSeverity,
        )
    },
];

/// The filter field of runtime field `f`, provided by `provider`.
pub(super) fn runtime_field(f: &RuntimeField, provider: Provider) -> FilterField {
    FilterField {
        column: None,
        name: f.name.into(),
        label: f.label.into(),
        ty: f.ty,
        hex: f.hex,
        values: f.values,
        source: Source::Runtime(f.runtime),
        provider,
    }
}
