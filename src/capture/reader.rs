//! Streaming capture reader: pcap (both byte orders, µs and ns) and pcapng,
//! optionally gzip-compressed, in constant memory.
//!
//! pcap-parser's block parsers read the records in place, in the buffer of a [`Window`].
//! This module owns the policy around them, because the input is hostile:
//! - before each record, its declared length is read from the bytes already in
//!   the buffer; absurd lengths stop reading with a reason instead of growing
//!   the buffer, and the buffer grows only when it is full of one legitimate
//!   record that is bigger still;
//! - every way of ending (end of file, cut record, corrupt block, I/O error)
//!   becomes a [`ReadEnd`], with everything before it delivered;
//! - refills that bring nothing are counted, so no input can make it spin.

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use pcap_parser::pcapng::{Block, InterfaceDescriptionBlock, OptionCode};
use pcap_parser::traits::PcapNGPacketBlock;
use pcap_parser::{PcapBlockOwned, PcapError, PcapHeader};

use super::linktype::LinkType;
use super::source::{self, take_error, CountingReader, ErrorSlot, OpenFailure};
use super::timestamp::{pcap_nanos, pcapng_nanos};
use super::window::{read_u32, Window};

mod block;
mod open;
mod parallel;
mod records;

use block::{article, Fault};

use parallel::FIRST_BATCH_BYTES;
pub use parallel::{thread_cpu_nanos, Ahead, StageCpu, MAX_BATCH_BYTES};
use records::block_name;

/// Initial read buffer: large enough for any ordinary packet and many per refill.
const INITIAL_BUFFER: usize = 256 * 1024;
/// Largest record accepted: legacy caplen, or pcapng block length.
pub const MAX_RECORD_LEN: usize = 16 * 1024 * 1024;
/// Largest pcap record read past the file's snaplen: libpcap's and Wireshark's maximum
/// (`MAXIMUM_SNAPLEN`, `WTAP_MAX_PACKET_SIZE_STANDARD`). Hosts with GRO/TSO, and captures taken
/// with a small `-s`, write longer records than the header says; both read on.
pub const MAX_OVERRUN_RECORD: u32 = 262_144;
/// Records longer than the snaplen listed in [`ReadEnd::overruns`]; later ones are read without.
pub const MAX_OVERRUNS: usize = 64;
/// The buffer never grows past this (one maximal record plus its header).
const MAX_BUFFER: usize = MAX_RECORD_LEN + 64 * 1024;
/// pcapng interfaces kept per section; EPBs naming later ones get [`LinkType::UNKNOWN`].
const MAX_INTERFACES: usize = 65_536;
/// Distinct link types listed in [`CaptureInfo`]: keeps the per-IDB lookup cheap
/// on hostile files with millions of interfaces; real captures have a handful.
const MAX_LINK_TYPES: usize = 64;
/// pcapng blocks skipped (framing intact, contents broken) before the file is taken as corrupt.
pub const MAX_SKIPPED_BLOCKS: usize = 64;
/// Refills in a row that bring no byte before we give up on the input.
const MAX_STALLS: u32 = 64;

const SHB_MAGIC: u32 = 0x0a0d_0d0a;
/// Capture file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureFormat {
    Pcap,
    PcapNg,
}

impl fmt::Display for CaptureFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CaptureFormat::Pcap => "pcap",
            CaptureFormat::PcapNg => "pcapng",
        })
    }
}

/// What the file says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureInfo {
    pub format: CaptureFormat,
    /// The file was gzip-compressed (detected by the 1f 8b magic, not the name).
    pub gzip: bool,
    /// pcap: nanosecond magic; pcapng: `if_tsresol` of the file's first interface is 9.
    pub nanosecond: bool,
    /// Byte order of the (first section of the) file.
    pub big_endian: bool,
    /// Distinct link types of the interfaces seen so far, in order of
    /// appearance (pcap: the header's). Complete once all frames are read
    /// (at most the first 64 distinct ones).
    pub link_types: Vec<LinkType>,
}

/// One captured packet record, borrowed from the reader's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// 1-based index among packet records (EPB/SPB/legacy records) in file order.
    pub number: u64,
    /// Absolute time, ns since the Unix epoch (0 for SPB, which has none).
    pub ts_nanos: i64,
    pub link_type: LinkType,
    /// Captured bytes.
    pub data: &'a [u8],
    /// Original length on the wire.
    pub orig_len: u32,
    /// Byte offset of the record in the (decompressed) capture stream.
    pub file_offset: u64,
}

/// Where and why reading stopped early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncation {
    /// The frame that was cut (frames delivered + 1) when a packet record starts there; None
    /// when another block does, or too little of one to tell.
    pub frame: Option<u64>,
    /// Byte offset (decompressed stream) where the cut record or block starts.
    pub offset: u64,
    /// What was found there, as a sentence.
    pub reason: String,
    /// The file is corrupt there (a record or block contradicts itself or the format, the gzip
    /// data fails its checks), as opposed to cut short (it ends inside a record: a capture that
    /// stopped, a partial copy).
    pub corrupt: bool,
}

impl fmt::Display for Truncation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.frame {
            Some(frame) => write!(f, "frame {frame} at byte offset {}", self.offset)?,
            None => write!(f, "byte offset {}", self.offset)?,
        }
        write!(f, ": {}", self.reason)
    }
}

/// A pcapng block skipped: its length at both ends agree, but its contents contradict it or the
/// format (a Decryption Secrets Block whose secrets are longer than the block). Reading goes on
/// after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Skipped {
    /// The next frame: frames delivered before it + 1.
    pub frame: u64,
    /// Byte offset (decompressed stream) where the block starts.
    pub offset: u64,
    /// What the block is, e.g. "Decryption Secrets Block".
    pub block: &'static str,
    /// An Enhanced Packet Block whose captured length (first) runs past the bytes its block
    /// holds for it (second): a packet tshark refuses.
    pub packet_too_long: Option<(u32, u32)>,
}

/// A pcap record longer than the file header's snaplen, read whole (up to
/// [`MAX_OVERRUN_RECORD`]) as libpcap and Wireshark do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overrun {
    /// The frame the record holds.
    pub frame: u64,
    /// Its captured length.
    pub caplen: u32,
    /// The file header's snaplen.
    pub snaplen: u32,
}

/// How reading ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadEnd {
    pub frames: u64,
    /// Some when the file was cut or corrupt in the middle of a record/block.
    pub truncated: Option<Truncation>,
    /// Blocks skipped on the way (at most [`MAX_SKIPPED_BLOCKS`]).
    pub skipped: Vec<Skipped>,
    /// Records read past the snaplen (the first [`MAX_OVERRUNS`]).
    pub overruns: Vec<Overrun>,
}

impl ReadEnd {
    /// The end of a read of `frames` frames that met nothing wrong.
    pub fn complete(frames: u64) -> ReadEnd {
        ReadEnd {
            frames,
            truncated: None,
            skipped: Vec::new(),
            overruns: Vec::new(),
        }
    }
}

/// Fatal errors: the input cannot be read as a capture at all.
#[derive(Debug)]
pub enum CaptureError {
    Io { path: PathBuf, source: io::Error },
    NotACapture { path: PathBuf, reason: String },
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaptureError::Io { path, source } => write!(f, "{}: {}", path.display(), source),
            CaptureError::NotACapture { path, reason } => {
                write!(f, "{}: not a capture file: {}", path.display(), reason)
            }
        }
    }
}

impl std::error::Error for CaptureError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CaptureError::Io { source, .. } => Some(source),
            CaptureError::NotACapture { .. } => None,
        }
    }
}

/// A pcapng interface, as far as decoding its packets needs.
#[derive(Debug, Clone, Copy)]
struct Interface {
    link_type: LinkType,
    snaplen: u32,
    tsresol: u8,
    tsoffset: i64,
}

/// Per-format decoding state.
enum Layout {
    Legacy {
        big_endian: bool,
        nanosecond: bool,
        /// 16, or 24 for the "modified" (Kuznetzov) format.
        record_header: usize,
        snaplen: u32,
        link_type: LinkType,
    },
    Ng {
        /// Byte order of the current section.
        big_endian: bool,
        /// Interfaces of the current section, by id.
        interfaces: Vec<Interface>,
        seen_interface: bool,
    },
}

/// Reads a capture file record by record. See the module doc.
pub struct CaptureReader {
    path: PathBuf,
    info: CaptureInfo,
    window: Window,
    layout: Layout,
    progress: Arc<AtomicU64>,
    io_errors: ErrorSlot,
    frames: u64,
    skipped: Vec<Skipped>,
    overruns: Vec<Overrun>,
    end: Option<ReadEnd>,
}

/// What to do after one `next()` call, decided while the parser is borrowed.
enum Step {
    Consume(usize),
    /// A packet block in prelude mode: leave it for `for_each_frame`.
    Pause,
    /// The caller wants no more frames (its output closed): consume this block and return.
    Stop(usize),
    Refill,
    /// The buffer is full and the record (of this length) is bigger.
    Grow(usize),
    /// A pcapng block of this length and type, whose framing is intact, could not be parsed; an
    /// Enhanced Packet Block's captured length and room when it is too long for its block.
    Skip(usize, u32, Option<(u32, u32)>),
    End(Option<Stop>),
}

impl Step {
    /// The step after a block of `size` bytes was handled: on, or stop where the caller asked.
    fn after(size: usize, flow: ControlFlow<()>) -> Step {
        match flow {
            ControlFlow::Continue(()) => Step::Consume(size),
            ControlFlow::Break(()) => Step::Stop(size),
        }
    }
}

/// Why reading stopped before the end: the file is cut short, or corrupt from there on.
enum Stop {
    Cut(String),
    Corrupt(String),
}
use Stop::{Corrupt, Cut};

impl CaptureReader {
    /// The capture's path (or the name given to [`CaptureReader::from_read`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn info(&self) -> &CaptureInfo {
        &self.info
    }

    /// Bytes of the underlying file consumed so far (compressed bytes for .gz).
    pub fn bytes_read(&self) -> u64 {
        self.progress.load(Ordering::Relaxed)
    }

    /// The counter behind [`CaptureReader::bytes_read`], to poll from a progress thread.
    pub fn progress_counter(&self) -> Arc<AtomicU64> {
        self.progress.clone()
    }

    /// Current capacity of the read buffer: starts at 256 KiB, grows only to fit
    /// one record, never past 16 MiB + 64 KiB.
    pub fn buffer_capacity(&self) -> usize {
        self.window.capacity()
    }

    /// Calls `on_frame` for every packet record, in file order.
    ///
    /// Corrupt or cut data after a valid header is not an error: it ends reading
    /// with [`ReadEnd::truncated`] set, after delivering every frame before it.
    /// So does an I/O error mid-file. Calling again after the end returns the
    /// same [`ReadEnd`] without frames.
    pub fn for_each_frame(
        &mut self,
        mut on_frame: impl FnMut(&Frame<'_>),
    ) -> Result<ReadEnd, CaptureError> {
        self.for_each_frame_until(|frame| {
            on_frame(frame);
            ControlFlow::Continue(())
        })
    }

    /// [`CaptureReader::for_each_frame`] until `on_frame` breaks.
    pub fn for_each_frame_until(
        &mut self,
        mut on_frame: impl FnMut(&Frame<'_>) -> ControlFlow<()>,
    ) -> Result<ReadEnd, CaptureError> {
        self.pump(false, &mut Each(&mut on_frame));
        Ok(self.read_end())
    }
}

/// What the reading loop hands its frames to.
trait Deliver {
    /// One frame; `at` is where its bytes lie in the window's buffer.
    fn frame(&mut self, frame: &Frame<'_>, at: usize) -> ControlFlow<()>;
    /// Whether to call [`Deliver::hand_over`] now rather than at the next refill.
    fn full(&self) -> bool {
        false
    }
    /// Called before each refill of the window, and when [`Deliver::full`]: the frames delivered
    /// since the last call lie in the window's parsed bytes, which a refill moves.
    fn hand_over(&mut self, _window: &mut Window) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
}

/// Frames one at a time to a closure, which borrows each only for the call.
struct Each<F>(F);

impl<F: FnMut(&Frame<'_>) -> ControlFlow<()>> Deliver for Each<F> {
    fn frame(&mut self, frame: &Frame<'_>, _: usize) -> ControlFlow<()> {
        (self.0)(frame)
    }
}

#[cfg(test)]
mod tests;
