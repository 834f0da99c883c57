//! What is wrong with a pcapng block's structure, in words, as tshark says it: pcap-parser only
//! says that it rejected a block, and a finding must say why.

use super::{block_name, read_u32};

const SHB_TYPE: u32 = 0x0a0d_0d0a;
const IDB_TYPE: u32 = 1;
const PB_TYPE: u32 = 2;
const SPB_TYPE: u32 = 3;
const ISB_TYPE: u32 = 5;
const EPB_TYPE: u32 = 6;
const DSB_TYPE: u32 = 0x0A;

pub(super) const BAD_MAGIC: &str = "a section header block has a bad byte-order magic";

/// A fault of a block's structure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Fault {
    /// An Enhanced Packet Block's captured length runs past its block (`room` is what the
    /// block holds after its header). Its framing is intact: reading goes on after it.
    PacketTooLong { caplen: u32, room: u32 },
    /// Anything else, as a sentence.
    Other(String),
}

/// The smallest length a block of type `kind` can have: its fixed fields with the two lengths.
fn minimum(kind: u32) -> usize {
    match kind {
        SHB_TYPE => 28,
        IDB_TYPE => 20,
        PB_TYPE | EPB_TYPE => 32,
        SPB_TYPE => 16,
        ISB_TYPE => 24,
        DSB_TYPE => 20,
        _ => 12,
    }
}

/// What is wrong with a block of type `kind` whose leading length is `len`, from those two
/// alone.
pub(super) fn length_fault(kind: u32, len: u32) -> Option<String> {
    let min = minimum(kind);
    if len < 12 {
        Some(format!(
            "block total length {len} is shorter than the 12-byte minimum"
        ))
    } else if !len.is_multiple_of(4) {
        Some(format!("block total length {len} is not a multiple of 4"))
    } else if (len as usize) < min {
        let name = block_name(kind);
        Some(format!(
            "block total length {len} is shorter than the {min}-byte minimum of {} {name}",
            article(name)
        ))
    } else {
        None
    }
}

/// What is wrong with the block at the start of `data`, in a section of this byte order: None
/// when nothing is found, or when the block is not all there to judge.
pub(super) fn fault(data: &[u8], big_endian: bool) -> Option<Fault> {
    // A section header states its own byte order.
    let big_endian = match read_u32(data, 0, false)? {
        SHB_TYPE => match read_u32(data, 8, false)? {
            0x1a2b_3c4d => false,
            0x4d3c_2b1a => true,
            _ => return Some(Fault::Other(BAD_MAGIC.into())),
        },
        _ => big_endian,
    };
    let word = |at: usize| read_u32(data, at, big_endian);
    let kind = word(0)?;
    let len = word(4)?;
    if let Some(fault) = length_fault(kind, len) {
        return Some(Fault::Other(fault));
    }
    let size = len as usize;
    let trailing = word(size - 4)?;
    if trailing != len {
        return Some(Fault::Other(format!(
            "the trailing block length {trailing} differs from the leading {len}"
        )));
    }
    // pcap-parser reads past a section header's options that overrun it, and does not compare
    // its two lengths; tshark refuses both.
    if kind == SHB_TYPE {
        return option_fault(&data[..size - 4], 24, big_endian).map(Fault::Other);
    }
    if kind != PB_TYPE && kind != EPB_TYPE {
        return None;
    }
    let caplen = word(20)?;
    let room = len - 32;
    if caplen <= room {
        return None;
    }
    Some(match kind {
        EPB_TYPE => Fault::PacketTooLong { caplen, room },
        _ => Fault::Other(format!(
            "a Packet Block's captured length of {caplen} bytes does not fit in its {len}-byte block"
        )),
    })
}

/// What is wrong with the options of a block (without its trailing length) from `at` on.
fn option_fault(block: &[u8], mut at: usize, big_endian: bool) -> Option<String> {
    // Options are 4-byte aligned in a block a multiple of 4 long: each header is all there.
    while let Some(head) = read_u32(block, at, big_endian) {
        let (code, len) = match big_endian {
            true => (head >> 16, head & 0xffff),
            false => (head & 0xffff, head >> 16),
        };
        if code == 0 {
            return None;
        }
        let end = at + 4 + (len as usize).div_ceil(4) * 4;
        if end > block.len() {
            return Some(format!("an option of length {len} runs past its block"));
        }
        at = end;
    }
    None
}

/// "an" before a vowel, "a" otherwise.
pub(super) fn article(name: &str) -> &'static str {
    match name.starts_with(['A', 'E', 'I', 'O', 'U', 'a', 'e', 'i', 'o', 'u']) {
        true => "an",
        false => "a",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A little-endian block of this type and body, with these lengths.
    fn block(kind: u32, body: &[u8], lead: u32, trail: u32) -> Vec<u8> {
        let mut b = kind.to_le_bytes().to_vec();
        b.extend(lead.to_le_bytes());
        b.extend(body);
        b.extend(trail.to_le_bytes());
        b
    }

    fn plain(kind: u32, body: &[u8]) -> Vec<u8> {
        let len = 12 + body.len() as u32;
        block(kind, body, len, len)
    }

    fn other(s: &str) -> Option<Fault> {
        Some(Fault::Other(s.into()))
    }

    /// An EPB body: interface 0, time 0, this captured length, 4 bytes of packet.
    fn epb(caplen: u32, options: &[u8]) -> Vec<u8> {
        let mut b = [0u32, 0, 0, caplen, 4].map(u32::to_le_bytes).concat();
        b.extend(b"abcd");
        b.extend(options);
        b
    }

    #[test]
    fn each_fault_in_words() {
        let idb = [1u8, 0, 0, 0, 0xff, 0xff, 0, 0];
        let shb = [&0x1a2b_3c4du32.to_le_bytes()[..], &[1, 0, 0, 0], &[0xff; 8]].concat();
        let cases = [
            (block(6, &[], 8, 8), other("block total length 8 is shorter than the 12-byte minimum")),
            (block(6, &[0; 33], 45, 45), other("block total length 45 is not a multiple of 4")),
            (
                block(1, &[0; 4], 16, 16),
                other("block total length 16 is shorter than the 20-byte minimum of an Interface Description Block"),
            ),
            (
                block(6, &epb(4, &[0; 4]), 40, 44),
                other("the trailing block length 44 differs from the leading 40"),
            ),
            (plain(6, &epb(200, &[])), Some(Fault::PacketTooLong { caplen: 200, room: 4 })),
            (
                plain(2, &epb(200, &[])),
                other("a Packet Block's captured length of 200 bytes does not fit in its 36-byte block"),
            ),
            (
                plain(0x0a0d_0d0a, &[&shb[..], &[1, 0, 0x30, 0x30], b"abcd"].concat()),
                other("an option of length 12336 runs past its block"),
            ),
            (
                block(0x0a0d_0d0a, &shb, 28, 52),
                other("the trailing block length 52 differs from the leading 28"),
            ),
            (plain(0x0a0d_0d0a, &[&shb[..], &[1, 0, 2, 0, b'h', b'i', 0, 0]].concat()), None),
            // Sound blocks.
            (plain(6, &epb(4, &[1, 0, 2, 0, b'h', b'i', 0, 0, 0, 0, 0, 0])), None),
            (plain(1, &[&idb[..], &[9, 0, 1, 0, 6, 0, 0, 0]].concat()), None),
            (plain(4, &[0, 0, 0, 0]), None),
            // Not all there: nothing to judge yet.
            (plain(6, &epb(4, &[]))[..20].to_vec(), None),
        ];
        for (bytes, want) in cases {
            assert_eq!(fault(&bytes, false), want, "{bytes:02x?}");
        }
    }

    #[test]
    fn big_endian_blocks_read_in_their_order() {
        let mut b = 6u32.to_be_bytes().to_vec();
        b.extend(36u32.to_be_bytes());
        for w in [0u32, 0, 0, 9, 4] {
            b.extend(w.to_be_bytes());
        }
        b.extend(b"abcd");
        b.extend(36u32.to_be_bytes());
        assert_eq!(
            fault(&b, true),
            Some(Fault::PacketTooLong { caplen: 9, room: 4 })
        );
    }

    #[test]
    fn articles() {
        assert_eq!(article("Enhanced Packet Block"), "an");
        assert_eq!(article("Simple Packet Block"), "a");
    }
}
