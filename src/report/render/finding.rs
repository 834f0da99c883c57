//! A finding's detail in words, read after its rule's summary.

use std::fmt::Write as _;

use crate::finding::{Detail, Finding};
use crate::proto::Rule;

/// What a finding found, as words that read after its rule's summary ("expected SERVER_HELLO
/// before JOIN_REQUEST", "Payload Len says 9 bytes, the datagram holds 4"): the rule says what
/// each number means. Empty when the rule says it all.
pub fn detail(finding: &Finding) -> String {
    let first = first_detail(finding);
    match (finding.count, first.is_empty()) {
        (0 | 1, _) => first,
        (n, true) => format!("×{n} in this datagram, the first at @{}", finding.at),
        (n, false) => format!(
            "{first}; ×{n} in this datagram, the first at @{}",
            finding.at
        ),
    }
}

/// [`detail`] of a finding that belongs to no datagram, and with why reading stopped when it is
/// the finding that it did ([`crate::pipeline::Sink::cut`]): the sentence the summary gives.
pub fn loose_detail(finding: &Finding, reason: Option<&str>) -> String {
    match reason {
        Some(reason) => format!("{}: {reason}", detail(finding)),
        None => detail(finding),
    }
}

/// The detail of a finding's first time.
fn first_detail(finding: &Finding) -> String {
    use Rule as R;
    let rule = finding.rule;
    match finding.detail {
        Detail::None => String::new(),
        Detail::At(offset) => format!("at byte offset {offset} of the file"),
        Detail::Block { block, offset } => {
            let article = match block.starts_with(['A', 'E', 'I', 'O', 'U']) {
                true => "an",
                false => "a",
            };
            format!("{article} {block} at byte offset {offset}")
        }
        Detail::Before { missing, message } => format!("expected {missing} before {message}"),
        Detail::Stopped { stream, before_ms } => format!(
            "{stream} stopped {}.{:03} s before the conversation did",
            before_ms / 1000,
            before_ms % 1000
        ),
        Detail::Rate {
            stream,
            nominal,
            found,
        } => format!("{stream} at {found} per second, nominal {nominal}"),
        Detail::Stall {
            stream,
            gap_micros,
            period_micros,
            ticks,
        } => {
            let ms = |us: u32| f64::from(us) / 1000.0;
            let mut s = format!(
                "no {stream} for {:.1} ms (period {:.1} ms)",
                ms(gap_micros),
                ms(period_micros)
            );
            let missing = ticks.map(|(before, after)| (before, after.saturating_sub(before)));
            match missing {
                Some((before, 2)) => {
                    let _ = write!(s, ", tick {} missing", before + 1);
                }
                Some((before, n @ 3..)) => {
                    let _ = write!(
                        s,
                        ", ticks {}–{} missing ({})",
                        before + 1,
                        before + n - 1,
                        n - 1
                    );
                }
                Some(_) => s.push_str(", no tick missing"),
                None => {}
            }
            s
        }
        Detail::Sizes { expected, found } => match rule {
            R::RtypeShort | R::RtShort => {
                format!("{found} bytes, at least {expected} needed")
            }
            R::RtypeLength => {
                format!("Payload Len says {expected} bytes, the datagram holds {found}")
            }
            R::RtypeCompressNotSmaller => {
                format!("{expected} bytes compressed to {found}")
            }
            R::RtypeOrigSize => format!("Orig. Size says {expected} bytes, LZ4 gave {found}"),
            R::RtypeSize | R::RtSize => {
                format!("a {found}-byte payload where the document's is {expected} bytes")
            }
            R::RtypeTrailing | R::RtTrailing => format!(
                "the message ends after {expected} of {found} bytes, {} left over",
                found.saturating_sub(expected)
            ),
            R::RtypeChunkIndex => format!("chunkIndex {found} with totalChunks {expected}"),
            R::RtypeChunkTotalMismatch => {
                format!("totalChunks {found} where the tick's other chunks said {expected}")
            }
            R::RtDatagramSize | R::RtnpDatagramSize => {
                format!("{found} bytes, over the {expected} allowed")
            }
            R::RtnpJsonLimit => format!("{found} bytes of JSON, over the {expected} parsed"),
            R::CaptureOversizedRecord => {
                format!("a {found}-byte record, over the file's snaplen of {expected}")
            }
            R::CapturePacketExceedsBlock => {
                format!("a {found}-byte packet in a block with room for {expected} bytes")
            }
            R::RtUnacknowledged => format!(
                "{} of {expected} RELIABLE packets never acknowledged",
                expected.saturating_sub(found)
            ),
            R::RtnpClientId => format!("client_id {found} where assign_id gave {expected}"),
            R::RtnpEpochSequence => format!("epoch {found} where {expected} was next"),
            R::SessionSnapshotRate => {
                format!("{found} snapshots per second, nominal {expected}")
            }
            _ => format!("expected {expected}, found {found}"),
        },
        Detail::Truncated {
            field,
            needed,
            left,
        } => format!("{field} needs {needed} bytes, {left} left"),
        Detail::MaskBit { entity, bit, left } => {
            format!(
                "entity {entity}: mask bit {bit} has no known width, {left} bytes left undecoded"
            )
        }
        Detail::Value(v) => match rule {
            R::RtypeMagic => format!("it starts with {v:08X}"),
            R::RtMagic | R::RtByteOrderSwitch | R::RtByteOrder => {
                format!("magic bytes {:02X} {:02X}", v >> 8, v & 0xFF)
            }
            R::RtypeVersion => format!("version {v}"),
            R::RtypePacketType | R::RtPacketType | R::RtypeDirection | R::RtDirection => {
                format!("packet type 0x{v:02X}")
            }
            R::RtypeUnknownType | R::RtUnknownType => format!("type 0x{v:02X}"),
            R::RtypeCompressSmall => format!("{v} bytes uncompressed"),
            R::RtypeOrigSizeSet => format!("Orig. Size {v}"),
            R::RtypeReason => format!("reason code 0x{v:02X}"),
            R::RtypeInputUnusedBits => format!("unused bits 0x{v:04X} set"),
            R::RtypeUnknownEntityType => format!("entity type {v}"),
            R::RtypeUnknownEvent => format!("event type {v}"),
            R::RtypeChunkDuplicate => format!("chunk {} again", v + 1),
            R::RtypeChunkLimit => format!("{v} (the limit is in SECURITY.md)"),
            R::RtReservedFlags
            | R::RtOpaque
            | R::RtDisconnectUnreliable
            | R::RtReliableFlagMissing => format!("flags 0x{v:02X}"),
            R::RtUnknownComponent => format!("component type {v}"),
            R::RtnpClientSilent => format!("silent for {v} s"),
            R::RtnpJsonInvalid => format!("the JSON is invalid at column {v}"),
            R::RtnpJsonLimit => format!("nested deeper than {v} levels"),
            R::RtnpPlayerName => format!("{v} characters"),
            R::CaptureSnaplen => format!("{v} bytes not captured"),
            R::SessionTickBackwards => format!("tick {v}"),
            R::SessionConversationLimit => format!("{v} conversations are tracked"),
            R::SessionEntityAfterDestroy => format!("entity {v} updated after its destruction"),
            R::SessionEntitySpawnedTwice => format!("entity {v} spawned again while alive"),
            R::SessionEntityUnknown => format!("entity {v} updated, never spawned"),
            R::SessionEntityGhost => format!("entity {v} held, not in the server's full state"),
            R::SessionEntityNeverDestroyed => match v {
                1 => "1 entity still alive at the end".to_string(),
                _ => format!("{v} entities still alive at the end"),
            },
            R::SessionEntityLimit => format!("{v} entities are followed"),
            R::RtypeChunkTotalZero => String::new(),
            _ => format!("{v}"),
        },
        Detail::Field(f) => match rule {
            R::RtypeInputNonFinite => format!("{f} is not a finite number"),
            R::RtypeUnsortedKeyframes => format!("a keyframe's {f} goes back"),
            R::RtypeUtf8 | R::RtUtf8 => format!("{f} is not UTF-8"),
            R::RtnpMissingField | R::RtnpEpochMissing => format!("{f} is missing"),
            R::RtnpWrongType => format!("{f} has another type"),
            R::RtnpRange => format!("{f} is below its minimum"),
            R::RtnpTypeMissing | R::RtnpTypeNotFirst => String::new(),
            R::RtnpJsonInvalid => format!("the text is {f}"),
            _ => format!("bad {f}"),
        },
        Detail::Crc { stored, computed } => {
            format!("the footer says 0x{stored:08X}, the datagram hashes to 0x{computed:08X}")
        }
        Detail::Chunks { tick, have, total } => {
            format!("tick {tick}: {have} of {total} chunks arrived")
        }
        Detail::Frames { first } => format!("a copy of frame {first}"),
        Detail::Disagree {
            entity,
            tick,
            field,
            with,
            with_frame,
        } => format!(
            "entity {entity} at tick {tick}: {field} other than conversation #{with} held (frame {with_frame})"
        ),
        Detail::Layout(name) => match crate::proto::profile::Profile::differs_of(name) {
            Some(differs) => format!("read as profile {name}: {differs}"),
            None => format!("read as profile {name}"),
        },
    }
}
