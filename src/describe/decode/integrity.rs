//! The checks and transforms of a whole message's bytes: its checksum (CRC-32C and the others)
//! and its body's decompression, bounded by [`MAX_DECOMPRESSED`].

use std::io::Read;

use super::*;

#[allow(clippy::too_many_arguments)]
pub(super) fn check_sum<'n>(
    d: &Description,
    names: &'n Names,
    c: &ChecksumRule,
    bytes: &[u8],
    message_at: usize,
    footer_at: usize,
    vars: &[Option<i64>],
    problems: &mut Vec<Problem<'n>>,
) {
    let (field, at, name) = match c.field {
        Place::Header(i) => (
            &d.header[i],
            message_at + offset_of(d, i),
            names.fields[names.header.slots[i].field].name.as_str(),
        ),
        Place::Footer(i) => (
            &d.footer[i],
            footer_at + fixed_width(&d.footer[..i], &d.types).unwrap_or(0),
            names.fields[names.footer.slots[i].field].name.as_str(),
        ),
    };
    let Some(stated) = vars[field.var as usize] else {
        return;
    };
    let resolve = |o: i64| -> Option<usize> {
        let v = if o < 0 { bytes.len() as i64 + o } else { o };
        usize::try_from(v).ok().filter(|v| *v <= bytes.len())
    };
    let (Some(from), Some(to)) = (resolve(c.from), resolve(c.to)) else {
        return;
    };
    if from > to {
        return;
    }
    let covered = &bytes[from..to];
    let computed: u64 = match c.algorithm {
        ChecksumAlgorithm::Crc32 => u64::from(crc32fast::hash(covered)),
        ChecksumAlgorithm::Crc32c => u64::from(crc32c(covered)),
        ChecksumAlgorithm::Sum8 => u64::from(covered.iter().fold(0u8, |a, b| a.wrapping_add(*b))),
        ChecksumAlgorithm::Xor8 => u64::from(covered.iter().fold(0u8, |a, b| a ^ b)),
    };
    let mask = match field.kind {
        Kind::Int { width, .. } if width < 8 => (1u64 << (width * 8)) - 1,
        _ => u64::MAX,
    };
    if (stated as u64) & mask != computed & mask {
        problems.push(Problem {
            rule: Description::rule_index(Check::Checksum),
            offset: at as u32,
            field: name,
            expected: format!("{:#x}", computed & mask),
            found: format!("{:#x}", stated as u64 & mask),
        });
    }
}

/// CRC-32C (Castagnoli), reflected, as iSCSI and SCTP compute it.
fn crc32c(bytes: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut t = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0x82F6_3B78 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            t[i] = c;
            i += 1;
        }
        t
    };
    !bytes.iter().fold(!0u32, |c, b| {
        TABLE[((c ^ u32::from(*b)) & 0xFF) as usize] ^ (c >> 8)
    })
}

pub(super) fn decompress(
    algorithm: CompressionAlgorithm,
    input: &[u8],
    original: Option<i64>,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    out.clear();
    match algorithm {
        CompressionAlgorithm::Lz4Block => {
            let size = original.unwrap_or(0);
            if size < 0 || size as usize > MAX_DECOMPRESSED {
                return Err(format!("an original size of {size} bytes"));
            }
            out.resize(size as usize, 0);
            match lz4_flex::block::decompress_into(input, out) {
                Ok(n) if n == size as usize => Ok(()),
                Ok(n) => Err(format!("{n} bytes, not the {size} the header states")),
                Err(e) => Err(format!("LZ4 data that fails: {e}")),
            }
        }
        CompressionAlgorithm::Lz4Frame => {
            read_bounded(lz4_flex::frame::FrameDecoder::new(input), out)
        }
        CompressionAlgorithm::Zlib => read_bounded(flate2::read::ZlibDecoder::new(input), out),
    }
}

fn read_bounded(reader: impl Read, out: &mut Vec<u8>) -> Result<(), String> {
    match reader.take(MAX_DECOMPRESSED as u64 + 1).read_to_end(out) {
        Ok(n) if n > MAX_DECOMPRESSED => Err(format!("more than {MAX_DECOMPRESSED} bytes")),
        Ok(_) => Ok(()),
        Err(e) => Err(format!("data that fails: {e}")),
    }
}
