//! The reading window: a capture's bytes as read, parsed in place by pcap-parser's block
//! parsers.
//!
//! pcap-parser's own streaming readers move what is left to the front of their buffer whenever
//! half of it is consumed, so a frame lives only until the next block: to cross to another
//! thread, every frame had to be copied. Here nothing parsed moves until the next refill, and
//! [`Window::hand_over`] gives the whole buffer away, its frames as ranges in it, keeping only
//! the unparsed rest (less than a record) in a fresh buffer. The block parsing and its error
//! semantics are pcap-parser's reader's, call for call.

use std::io::Read;

use pcap_parser::nom::{self, Needed, Offset};
use pcap_parser::pcapng::{
    parse_block_be, parse_block_le, parse_sectionheaderblock, Block, EnhancedPacketBlock,
};
use pcap_parser::{
    parse_pcap_frame, parse_pcap_frame_be, parse_pcap_frame_modified, parse_pcap_header,
    LegacyPcapBlock, PcapBlockOwned, PcapError, PcapHeader, EPB_MAGIC,
};

use super::source::Source;

/// The length of a pcap record's header (24 in the "modified" format, which
/// [`Window::whole_record`] leaves to pcap-parser).
const RECORD_HEADER: usize = 16;
/// The length of a pcapng Enhanced Packet Block without its packet and options.
const EPB_HEADER: usize = 32;

type LegacyParse = fn(&[u8]) -> nom::IResult<&[u8], LegacyPcapBlock<'_>, PcapError<&[u8]>>;

/// What the file is: its header and record parser, or a pcapng section's byte order.
enum Format {
    Legacy {
        header: PcapHeader,
        parse: LegacyParse,
        /// The header is the first block [`Window::next`] returns.
        header_given: bool,
    },
    Ng {
        big_endian: bool,
    },
}

/// A capture's bytes being read: the buffer, where parsing stands in it, and the format.
pub(super) struct Window {
    source: Source,
    /// `buf[..end]` holds bytes read; its length is the window's capacity.
    buf: Vec<u8>,
    /// Where parsing stands in `buf`.
    pos: usize,
    end: usize,
    /// Bytes of the input before `buf[0]`.
    base: u64,
    exhausted: bool,
    /// With [`Window::refill_to`]: fill only this far, unless the record in hand needs more.
    fill_to: usize,
    format: Format,
}

impl Window {
    /// Reads the first bytes (one read of `first` at most, which [`Source`] makes fill them) and
    /// recognises the format, as pcap-parser's `create_reader` does.
    pub(super) fn open(
        capacity: usize,
        first: usize,
        mut source: Source,
    ) -> Result<Window, PcapError<&'static [u8]>> {
        let mut buf = vec![0; capacity];
        let first = first.min(capacity);
        let end = source
            .read(&mut buf[..first])
            .or(Err(PcapError::ReadError))?;
        if end == 0 {
            return Err(PcapError::Eof);
        }
        let data = &buf[..end];
        let format = if parse_sectionheaderblock(data).is_ok() {
            Format::Ng { big_endian: false }
        } else {
            match parse_pcap_header(data) {
                Ok((_, header)) => {
                    let parse: LegacyParse =
                        match (header.is_modified_format(), header.is_bigendian()) {
                            (true, _) => parse_pcap_frame_modified,
                            (false, true) => parse_pcap_frame_be,
                            (false, false) => parse_pcap_frame,
                        };
                    Format::Legacy {
                        header,
                        parse,
                        header_given: false,
                    }
                }
                Err(nom::Err::Incomplete(Needed::Size(n))) => {
                    return Err(PcapError::Incomplete(n.into()))
                }
                Err(nom::Err::Incomplete(Needed::Unknown)) => return Err(PcapError::Incomplete(0)),
                Err(_) => return Err(PcapError::HeaderNotRecognized),
            }
        };
        Ok(Window {
            source,
            buf,
            pos: 0,
            end,
            base: 0,
            exhausted: false,
            fill_to: usize::MAX,
            format,
        })
    }

    /// The next block and its length (not consumed), or why there is none.
    pub(super) fn next(&mut self) -> Result<(usize, PcapBlockOwned<'_>), PcapError<&[u8]>> {
        let data = &self.buf[self.pos..self.end];
        let (rem, block) = match &mut self.format {
            Format::Legacy {
                header,
                header_given: given @ false,
                ..
            } => {
                *given = true;
                return Ok((header.size(), PcapBlockOwned::from(header.clone())));
            }
            _ if data.is_empty() && self.exhausted => return Err(PcapError::Eof),
            Format::Legacy { parse, .. } => match parse(data) {
                Ok((rem, b)) => (rem, PcapBlockOwned::from(b)),
                Err(e) => return Err(failure(e, self.exhausted, data.len(), self.buf.len())),
            },
            Format::Ng { big_endian } => {
                let parse = if *big_endian {
                    parse_block_be
                } else {
                    parse_block_le
                };
                match parse(data) {
                    Ok((rem, b)) => {
                        if let Block::SectionHeader(shb) = &b {
                            *big_endian = shb.big_endian();
                        }
                        (rem, PcapBlockOwned::from(b))
                    }
                    Err(e) => return Err(failure(e, self.exhausted, data.len(), self.buf.len())),
                }
            }
        };
        Ok((data.offset(rem), block))
    }

    /// The next packet when it lies whole in the buffer in its plainest form, with a length
    /// within `max`: a pcap record with the standard header and within the file's snaplen (once
    /// the file header is given), or a pcapng Enhanced Packet Block without options. That is the
    /// block [`Window::next`] would return, read without its general machinery and without the
    /// caller's checks before it, all of which such a block passes. None otherwise: anything
    /// else is left to the general path, which reports it as before.
    pub(super) fn whole_record(&self, max: usize) -> Option<(usize, PcapBlockOwned<'_>)> {
        let data = &self.buf[self.pos..self.end];
        match &self.format {
            Format::Legacy {
                header,
                header_given: true,
                ..
            } if !header.is_modified_format() => pcap_record(data, header, max),
            Format::Ng { big_endian } => enhanced_packet(data, *big_endian, max),
            Format::Legacy { .. } => None,
        }
    }

    /// The bytes not parsed yet.
    pub(super) fn data(&self) -> &[u8] {
        &self.buf[self.pos..self.end]
    }

    /// Bytes of the input parsed so far.
    pub(super) fn consumed(&self) -> u64 {
        self.base + self.pos as u64
    }

    pub(super) fn consume(&mut self, len: usize) {
        self.pos = (self.pos + len).min(self.end);
    }

    /// The buffer's address: where a frame's bytes (from the block [`Window::next`] returned)
    /// lie in it is their address less this.
    pub(super) fn address(&self) -> usize {
        self.buf.as_ptr() as usize
    }

    /// Moves the unparsed bytes to the front and reads more after them (one read).
    pub(super) fn refill(&mut self) -> std::io::Result<()> {
        self.buf.copy_within(self.pos..self.end, 0);
        self.base += self.pos as u64;
        self.end -= self.pos;
        self.pos = 0;
        // Fill only as far as asked, unless the bytes in hand are already past it (a record
        // still incomplete there needs the rest of the buffer).
        let limit = if self.end < self.fill_to {
            self.fill_to.min(self.buf.len())
        } else {
            self.buf.len()
        };
        let space = &mut self.buf[self.end..limit];
        if space.is_empty() {
            return Ok(());
        }
        let read = self.source.read(space)?;
        self.exhausted = read == 0;
        self.end += read;
        Ok(())
    }

    /// Makes the next refills read only up to `bytes` into the buffer: how big a batch is.
    pub(super) fn refill_to(&mut self, bytes: usize) {
        self.fill_to = bytes.max(1);
    }

    pub(super) fn exhausted(&self) -> bool {
        self.exhausted
    }

    /// Room for bytes in the buffer.
    pub(super) fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Makes room for `capacity` bytes; false if there already is.
    pub(super) fn grow(&mut self, capacity: usize) -> bool {
        if capacity <= self.buf.len() {
            return false;
        }
        self.buf.resize(capacity, 0);
        true
    }

    /// Gives the buffer away with what was parsed in it, and goes on in `fresh`, of `size`
    /// bytes (or more for the unparsed bytes), which takes those bytes. A batch's buffer is
    /// thus the size of the batch: batches in flight hold no more than they read.
    pub(super) fn hand_over(&mut self, mut fresh: Vec<u8>, size: usize) -> Vec<u8> {
        let left = self.end - self.pos;
        let size = size.max(left + 1);
        if fresh.capacity() > 2 * size {
            fresh = Vec::new();
        }
        // A recycled buffer keeps its length: no need to zero it again.
        fresh.resize(size, 0);
        fresh[..left].copy_from_slice(&self.buf[self.pos..self.end]);
        self.base += self.pos as u64;
        self.pos = 0;
        self.end = left;
        std::mem::replace(&mut self.buf, fresh)
    }
}

/// The `u32` at `at` in `data`, in the file's byte order.
pub(super) fn read_u32(data: &[u8], at: usize, big_endian: bool) -> Option<u32> {
    let bytes = data.get(at..at + 4)?.try_into().ok()?;
    Some(match big_endian {
        true => u32::from_be_bytes(bytes),
        false => u32::from_le_bytes(bytes),
    })
}

/// [`Window::whole_record`] of a pcap file (not the "modified" format) with this header.
fn pcap_record<'a>(
    data: &'a [u8],
    header: &PcapHeader,
    max: usize,
) -> Option<(usize, PcapBlockOwned<'a>)> {
    let word = |at| read_u32(data, at, header.is_bigendian());
    let caplen = word(8)?;
    let within_snaplen = header.snaplen == 0 || caplen <= header.snaplen;
    if caplen as usize > max || !within_snaplen {
        return None;
    }
    let size = RECORD_HEADER + caplen as usize;
    let record = LegacyPcapBlock {
        ts_sec: word(0)?,
        ts_usec: word(4)?,
        caplen,
        origlen: word(12)?,
        data: data.get(RECORD_HEADER..size)?,
    };
    Some((size, PcapBlockOwned::from(record)))
}

/// [`Window::whole_record`] of a pcapng section in this byte order: an Enhanced Packet Block
/// whose length is a multiple of 4, within `max`, repeated at its end, and exactly its header
/// and its padded packet (no options).
fn enhanced_packet(
    data: &[u8],
    big_endian: bool,
    max: usize,
) -> Option<(usize, PcapBlockOwned<'_>)> {
    let word = |at| read_u32(data, at, big_endian);
    if word(0)? != EPB_MAGIC {
        return None;
    }
    let len = word(4)?;
    let size = len as usize;
    let caplen = word(20)?;
    let padded = (caplen as usize).checked_add(3)? & !3;
    // A multiple of 4, as the header and the padded packet are.
    let plain = size == EPB_HEADER + padded && size <= max;
    if !plain || word(size - 4)? != len {
        return None;
    }
    let block = EnhancedPacketBlock {
        block_type: read_u32(data, 0, false)?,
        block_len1: len,
        if_id: word(8)?,
        ts_high: word(12)?,
        ts_low: word(16)?,
        caplen,
        origlen: word(24)?,
        data: data.get(28..28 + padded)?,
        options: Vec::new(),
        block_len2: len,
    };
    Some((size, PcapBlockOwned::NG(Block::EnhancedPacket(block))))
}

/// A parser's failure as pcap-parser's readers report it, with `available` bytes unparsed in a
/// buffer of `capacity`.
fn failure(
    e: nom::Err<PcapError<&[u8]>>,
    exhausted: bool,
    available: usize,
    capacity: usize,
) -> PcapError<&[u8]> {
    match e {
        nom::Err::Error(e) | nom::Err::Failure(e) => e,
        nom::Err::Incomplete(_) if exhausted => PcapError::UnexpectedEof,
        nom::Err::Incomplete(Needed::Size(n)) if available + usize::from(n) >= capacity => {
            PcapError::BufferTooSmall
        }
        nom::Err::Incomplete(Needed::Size(n)) => PcapError::Incomplete(n.into()),
        nom::Err::Incomplete(Needed::Unknown) => PcapError::Incomplete(0),
    }
}
