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
mod parallel;

use block::{article, Fault};

use parallel::FIRST_BATCH_BYTES;
pub use parallel::{thread_cpu_nanos, Ahead, StageCpu, MAX_BATCH_BYTES};

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
    /// Opens a capture file: gzip, pcap (both byte orders, µs and ns) or pcapng.
    pub fn open(path: &Path) -> Result<CaptureReader, CaptureError> {
        let file = File::open(path).map_err(|source| CaptureError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_read(path, Box::new(file))
    }

    /// Reads a capture from any stream (stdin...). `name` is used in messages.
    pub fn from_read(name: &Path, r: Box<dyn Read + Send>) -> Result<CaptureReader, CaptureError> {
        let path = name.to_path_buf();
        let not_capture = |reason: String| CaptureError::NotACapture {
            path: path.clone(),
            reason,
        };
        let progress = Arc::new(AtomicU64::new(0));
        let io_errors = ErrorSlot::default();
        let counted = Box::new(CountingReader::new(r, progress.clone()));
        let opened = match source::open_source(counted, io_errors.clone()) {
            Ok(o) => o,
            Err(OpenFailure::Io(source)) => return Err(CaptureError::Io { path, source }),
            Err(OpenFailure::BadGzip(e)) => {
                return Err(not_capture(format!("corrupt gzip data: {e}")))
            }
            Err(OpenFailure::Empty { gzip: false }) => {
                return Err(not_capture("empty file".into()))
            }
            Err(OpenFailure::Empty { gzip: true }) => {
                return Err(not_capture("empty after gzip decompression".into()))
            }
        };
        let gzip = opened.gzip;
        let head = &opened.head[..opened.head_len];
        let magic = &head[..head.len().min(4)];
        let shown: Vec<String> = magic.iter().map(|b| format!("{b:02x}")).collect();
        let shown = shown.join(" ");
        let looks_ng = magic == [0x0a, 0x0d, 0x0d, 0x0a];
        // The section header must fit in the buffer whole: make room for one longer than it
        // (its comments can take hundreds of KB), up to the largest block accepted. The first
        // read brings it, or no more than a first batch (the frames after it are the first
        // batch's, sized before any weight is known).
        let (capacity, first_read) = match section_header_len(head) {
            Some(len) if len > MAX_RECORD_LEN => {
                return Err(not_capture(format!(
                    "the pcapng section header block's length of {len} bytes exceeds the maximum of {MAX_RECORD_LEN}"
                )))
            }
            Some(len) => (INITIAL_BUFFER.max(len + 1), FIRST_BATCH_BYTES.max(len + 1)),
            None => (INITIAL_BUFFER, FIRST_BATCH_BYTES),
        };
        // What was found in a gzip file is what decompressing it gave: said so.
        let found = |plain: String, decompressed: String| match gzip {
            true => not_capture(format!("gzip data that decompresses to {decompressed}")),
            false => not_capture(plain),
        };
        let created = Window::open(capacity, first_read, opened.source);
        if created.is_err() {
            // An I/O error cut the header: it is the cause, whatever the parser says.
            if let Some(source) = take_error(&io_errors) {
                let corrupt = matches!(
                    source.kind(),
                    io::ErrorKind::InvalidInput
                        | io::ErrorKind::InvalidData
                        | io::ErrorKind::UnexpectedEof
                );
                return Err(if gzip && corrupt {
                    not_capture(format!("corrupt gzip data: {source}"))
                } else {
                    CaptureError::Io { path, source }
                });
            }
        }
        let mut window = match created {
            Ok(p) => p,
            // One byte of a gzip file's two-byte magic: a gzip stream cut short, most likely.
            Err(PcapError::Incomplete(_)) | Err(PcapError::Eof) if !gzip && magic == [0x1f] => {
                return Err(not_capture(
                    "too short for a capture file header (starts with 1f, as a gzip stream does: cut after one byte?)".into(),
                ))
            }
            Err(PcapError::Incomplete(_)) | Err(PcapError::Eof) if !looks_ng => {
                return Err(found(
                    format!("too short for a capture file header (starts with {shown})"),
                    format!("{} bytes, too few for a capture file header (starts with {shown})", head.len()),
                ))
            }
            Err(_) if looks_ng => {
                let words = refused_header(block::fault(head, false));
                return Err(found(words.clone(), words));
            }
            Err(_) => {
                return Err(found(
                    format!("not a pcap or pcapng file (starts with {shown})"),
                    format!("neither pcap nor pcapng (starts with {shown})"),
                ))
            }
        };
        // What pcap-parser lets pass in a section header and tshark refuses.
        let header_fault = match looks_ng {
            true => block::fault(window.data(), false),
            false => None,
        };
        let (info, layout, header_len) = match window.next() {
            Ok((_, PcapBlockOwned::NG(Block::SectionHeader(_)))) if header_fault.is_some() => {
                let words = refused_header(header_fault);
                return Err(found(words.clone(), words));
            }
            // Versions no reader knows are refused, as tshark and libpcap refuse them.
            Ok((_, PcapBlockOwned::LegacyHeader(h))) if h.version_major != 2 => {
                let words = format!(
                    "a pcap file of version {}.{}, which no reader knows (pcap files are version 2)",
                    h.version_major, h.version_minor
                );
                return Err(found(words.clone(), words));
            }
            Ok((_, PcapBlockOwned::NG(Block::SectionHeader(shb))))
                if !matches!((shb.major_version, shb.minor_version), (1, 0) | (1, 2)) =>
            {
                let words = format!(
                    "a pcapng section of version {}.{}, which no reader knows (1.0, or 1.2 as some writers put it)",
                    shb.major_version, shb.minor_version
                );
                return Err(found(words.clone(), words));
            }
            Ok((n, PcapBlockOwned::LegacyHeader(h))) => {
                let (info, layout) = legacy_layout(&h, gzip);
                (info, layout, n)
            }
            Ok((n, PcapBlockOwned::NG(Block::SectionHeader(shb)))) => {
                let big_endian = shb.big_endian();
                let info = CaptureInfo {
                    format: CaptureFormat::PcapNg,
                    gzip,
                    nanosecond: false,
                    big_endian,
                    link_types: Vec::new(),
                };
                let layout = Layout::Ng {
                    big_endian,
                    interfaces: Vec::new(),
                    seen_interface: false,
                };
                (info, layout, n)
            }
            _ => return Err(not_capture("unreadable capture header".into())),
        };
        window.consume(header_len);
        let mut reader = CaptureReader {
            path,
            info,
            window,
            layout,
            progress,
            io_errors,
            frames: 0,
            skipped: Vec::new(),
            overruns: Vec::new(),
            end: None,
        };
        // pcapng: read the interface descriptions before the first packet, so
        // `info()` is meaningful before `for_each_frame`.
        reader.pump(true, &mut Each(|_: &Frame<'_>| ControlFlow::Continue(())));
        Ok(reader)
    }

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

    /// The reading loop. With `stop_before_packet`, returns (without consuming)
    /// at the first packet record; otherwise runs to the end. Either way, an end
    /// of input is recorded in `self.end`.
    fn pump(&mut self, stop_before_packet: bool, deliver: &mut impl Deliver) {
        if self.end.is_some() {
            return;
        }
        let mut stalls = 0u32;
        loop {
            let offset = self.window.consumed();
            let address = self.window.address();
            let mut frame = |frame: &Frame<'_>| {
                let at = (frame.data.as_ptr() as usize).wrapping_sub(address);
                deliver.frame(frame, at)
            };
            // Most packets of a file lie whole in the buffer in their plainest form: such a packet
            // is read here, without the checks of `parsed_step`, all of which it passes.
            let record = match stop_before_packet {
                false => self.window.whole_record(MAX_RECORD_LEN),
                true => None,
            };
            let step = match record {
                Some((size, block)) => {
                    let (layout, info, frames) =
                        (&mut self.layout, &mut self.info, &mut self.frames);
                    Step::after(
                        size,
                        handle_block(block, offset, layout, info, frames, &mut frame),
                    )
                }
                None => self.parsed_step(offset, stop_before_packet, &mut frame),
            };
            match step {
                Step::Consume(size) => {
                    stalls = 0;
                    self.window.consume(size);
                    if deliver.full() && deliver.hand_over(&mut self.window).is_break() {
                        return;
                    }
                }
                Step::Pause => return,
                Step::Stop(size) => {
                    self.window.consume(size);
                    return;
                }
                Step::Grow(len) => {
                    // pcap-parser wants strictly more room than the record;
                    // declared_len() already capped len at MAX_RECORD_LEN.
                    let want = (self.window.capacity() * 2).max(len + 1).min(MAX_BUFFER);
                    if !self.window.grow(want) {
                        let unit = self.unit();
                        return self.finish(
                            offset,
                            Some(Corrupt(format!(
                                "the {unit} does not fit in the read buffer"
                            ))),
                        );
                    }
                }
                Step::Skip(len, kind, packet_too_long) => {
                    let block = block_name(kind);
                    if self.skipped.len() >= MAX_SKIPPED_BLOCKS {
                        let reason = format!(
                            "{} {block} that cannot be read, after {MAX_SKIPPED_BLOCKS} such blocks",
                            article(block)
                        );
                        return self.finish(offset, Some(Corrupt(reason)));
                    }
                    self.skipped.push(Skipped {
                        frame: self.frames + 1,
                        offset,
                        block,
                        packet_too_long,
                    });
                    // Later packets name interfaces by their order: keep this one's place.
                    if let (IDB_TYPE, Layout::Ng { interfaces, .. }) = (kind, &mut self.layout) {
                        if interfaces.len() < MAX_INTERFACES {
                            interfaces.push(Interface {
                                link_type: LinkType::UNKNOWN,
                                snaplen: 0,
                                tsresol: 6,
                                tsoffset: 0,
                            });
                        }
                    }
                    stalls = 0;
                    self.window.consume(len);
                }
                Step::Refill => {
                    if deliver.hand_over(&mut self.window).is_break() {
                        return;
                    }
                    let before = self.window.data().len();
                    if self.window.refill().is_err() {
                        return self.finish(offset, Some(Cut("a read error".into())));
                    }
                    if self.window.data().len() == before && !self.window.exhausted() {
                        stalls += 1;
                        if stalls > MAX_STALLS {
                            return self
                                .finish(offset, Some(Cut("the input makes no progress".into())));
                        }
                    }
                }
                Step::End(reason) => return self.finish(offset, reason),
            }
        }
    }

    /// The step after the next block as pcap-parser reads it, with the checks around it: every
    /// block [`Window::whole_record`] leaves, and the end of the input.
    fn parsed_step(
        &mut self,
        offset: u64,
        stop_before_packet: bool,
        frame: &mut impl FnMut(&Frame<'_>) -> ControlFlow<()>,
    ) -> Step {
        let available = self.window.data().len();
        let declared = match declared_len(&self.layout, self.window.data()) {
            Ok(d) => d,
            Err(reason) => return Step::End(Some(Corrupt(reason))),
        };
        let unit = self.unit();
        let intact = intact_block(&self.layout, self.window.data());
        let overrun = overrun(&self.layout, self.window.data());
        let fault = match self.layout {
            Layout::Ng { big_endian, .. } => block::fault(self.window.data(), big_endian),
            Layout::Legacy { .. } => None,
        };
        match self.window.next() {
            Ok((size, block)) => {
                let is_packet = matches!(
                    block,
                    PcapBlockOwned::Legacy(_)
                        | PcapBlockOwned::NG(Block::EnhancedPacket(_))
                        | PcapBlockOwned::NG(Block::SimplePacket(_))
                );
                let header_fault = match (&block, fault) {
                    (PcapBlockOwned::NG(Block::SectionHeader(_)), Some(Fault::Other(w))) => Some(w),
                    _ => None,
                };
                if size == 0 {
                    Step::End(Some(Corrupt("the parser made no progress".into())))
                } else if let Some(words) = header_fault {
                    // A section header pcap-parser lets pass and tshark refuses.
                    Step::End(Some(Corrupt(words)))
                } else if stop_before_packet && is_packet {
                    Step::Pause
                } else {
                    let (layout, info, frames) =
                        (&mut self.layout, &mut self.info, &mut self.frames);
                    let flow = handle_block(block, offset, layout, info, frames, frame);
                    if let Some((caplen, snaplen)) = overrun {
                        if self.overruns.len() < MAX_OVERRUNS {
                            self.overruns.push(Overrun {
                                frame: self.frames,
                                caplen,
                                snaplen,
                            });
                        }
                    }
                    Step::after(size, flow)
                }
            }
            Err(PcapError::Eof) => Step::End(None),
            Err(PcapError::Incomplete(_)) | Err(PcapError::BufferTooSmall) => {
                match declared {
                    Some(len) if len <= available => rejected(len, intact, fault, || {
                        format!("the {unit}'s contents disagree with its length {len}")
                    }),
                    // Grow only once the buffer is full of this record: a cut
                    // file claiming a huge record never allocates for it.
                    _ if available < self.window.capacity() => Step::Refill,
                    Some(len) => Step::Grow(len),
                    None => Step::End(Some(Corrupt(format!(
                        "the {unit} does not fit in the read buffer"
                    )))),
                }
            }
            // The parser wanted more than a block that is all there: its contents overrun it.
            Err(PcapError::UnexpectedEof) if declared.is_some_and(|len| len <= available) => {
                let len = declared.unwrap_or(0);
                rejected(len, intact, fault, || {
                    format!("the {unit}'s contents disagree with its length {len}")
                })
            }
            Err(PcapError::UnexpectedEof) => {
                if available == 0 {
                    Step::End(None)
                } else {
                    Step::End(Some(Cut(match declared {
                        Some(d) => {
                            format!("the file ends {available} bytes into a {d}-byte {unit}")
                        }
                        None => format!("the file ends {available} bytes into a {unit}"),
                    })))
                }
            }
            Err(PcapError::ReadError) => Step::End(Some(Cut("a read error".into()))),
            Err(e) => {
                let parser = describe(&e);
                match declared {
                    Some(len) => rejected(len, intact, fault, || {
                        format!("the {unit} is corrupt: {parser}")
                    }),
                    None => Step::End(Some(Corrupt(format!("the {unit} is corrupt: {parser}")))),
                }
            }
        }
    }

    /// How reading ended, or how it stands when the caller stopped it.
    fn read_end(&self) -> ReadEnd {
        self.end.clone().unwrap_or(ReadEnd {
            frames: self.frames,
            truncated: None,
            skipped: self.skipped.clone(),
            overruns: self.overruns.clone(),
        })
    }

    /// "record" for pcap, "block" for pcapng: the word the messages use.
    fn unit(&self) -> &'static str {
        match self.layout {
            Layout::Legacy { .. } => "record",
            Layout::Ng { .. } => "block",
        }
    }

    /// Records the end of reading. A kept I/O error wins over any other reason:
    /// it is the cause, the rest is a consequence.
    fn finish(&mut self, offset: u64, reason: Option<Stop>) {
        let reason = match take_error(&self.io_errors) {
            // The gzip layer's checks failed: corrupt data. A stream that ends early: cut.
            Some(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::InvalidData | io::ErrorKind::InvalidInput
                ) =>
            {
                Some(Corrupt(format!("the gzip data is corrupt: {e}")))
            }
            Some(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                Some(Cut(format!("the gzip data ends early: {e}")))
            }
            Some(e) => Some(Cut(format!("a read error: {e}"))),
            None => reason,
        };
        // Name the frame only when a packet record starts where reading stopped.
        let packet = match self.layout {
            Layout::Legacy { .. } => true,
            Layout::Ng { big_endian, .. } => {
                matches!(read_u32(self.window.data(), 0, big_endian), Some(2 | 3 | 6))
            }
        };
        self.end = Some(ReadEnd {
            frames: self.frames,
            skipped: self.skipped.clone(),
            overruns: self.overruns.clone(),
            truncated: reason.map(|reason| {
                let (reason, corrupt) = match reason {
                    Cut(r) => (r, false),
                    Corrupt(r) => (r, true),
                };
                Truncation {
                    frame: packet.then_some(self.frames + 1),
                    offset,
                    reason,
                    corrupt,
                }
            }),
        });
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

fn legacy_layout(h: &PcapHeader, gzip: bool) -> (CaptureInfo, Layout) {
    // The upper bits of the link type field carry FCS information (LT_LINKTYPE).
    let link_type = LinkType::from_field(h.network.0 as u32);
    let big_endian = h.is_bigendian();
    let nanosecond = h.is_nanosecond_precision();
    let info = CaptureInfo {
        format: CaptureFormat::Pcap,
        gzip,
        nanosecond,
        big_endian,
        link_types: vec![link_type],
    };
    let layout = Layout::Legacy {
        big_endian,
        nanosecond,
        record_header: if h.is_modified_format() { 24 } else { 16 },
        snaplen: h.snaplen,
        link_type,
    };
    (info, layout)
}

/// The length of the next record or block, from the bytes already buffered:
/// `Ok(None)` when too few bytes are there to tell, `Err` when the length alone
/// proves the data unusable.
fn declared_len(layout: &Layout, data: &[u8]) -> Result<Option<usize>, String> {
    match layout {
        Layout::Legacy {
            big_endian,
            record_header,
            snaplen,
            ..
        } => {
            if data.len() < *record_header {
                return Ok(None);
            }
            let caplen = read_u32(data, 8, *big_endian).unwrap_or(0);
            if caplen as usize > MAX_RECORD_LEN {
                return Err(format!(
                    "a record length of {caplen} bytes exceeds the maximum of {MAX_RECORD_LEN}"
                ));
            }
            if *snaplen != 0 && caplen > *snaplen && caplen > MAX_OVERRUN_RECORD {
                return Err(format!(
                    "a record length of {caplen} bytes exceeds the file's snaplen of {snaplen} \
                     and the maximum of {MAX_OVERRUN_RECORD}"
                ));
            }
            Ok(Some(record_header + caplen as usize))
        }
        Layout::Ng { big_endian, .. } => {
            let Some(block_type) = read_u32(data, 0, false) else {
                return Ok(None);
            };
            let big_endian = if block_type == SHB_MAGIC {
                // A new section states its own byte order.
                match read_u32(data, 8, false) {
                    None => return Ok(None),
                    Some(0x1a2b_3c4d) => false,
                    Some(0x4d3c_2b1a) => true,
                    Some(_) => return Err(block::BAD_MAGIC.into()),
                }
            } else {
                *big_endian
            };
            let Some(len) = read_u32(data, 4, big_endian) else {
                return Ok(None);
            };
            if len < 12 || len % 4 != 0 {
                return Err(block::length_fault(0, len).unwrap_or_default());
            }
            if len as usize > MAX_RECORD_LEN {
                return Err(format!(
                    "a block length of {len} bytes exceeds the maximum of {MAX_RECORD_LEN}"
                ));
            }
            Ok(Some(len as usize))
        }
    }
}

/// The captured length and the snaplen of the pcap record at the start of `data` when it is
/// longer than the file's snaplen ([`declared_len`] has refused those no capture can hold).
fn overrun(layout: &Layout, data: &[u8]) -> Option<(u32, u32)> {
    let Layout::Legacy {
        big_endian,
        snaplen,
        ..
    } = layout
    else {
        return None;
    };
    let caplen = read_u32(data, 8, *big_endian)?;
    (*snaplen != 0 && caplen > *snaplen).then_some((caplen, *snaplen))
}

const IDB_TYPE: u32 = 1;

/// The length a pcapng section header block at the start of a file declares.
fn section_header_len(head: &[u8]) -> Option<usize> {
    if read_u32(head, 0, false)? != SHB_MAGIC {
        return None;
    }
    let big_endian = match read_u32(head, 8, false)? {
        0x1a2b_3c4d => false,
        0x4d3c_2b1a => true,
        _ => return None,
    };
    Some(read_u32(head, 4, big_endian)? as usize)
}

/// The type of the pcapng block at the start of `data` when its framing is intact: all of it is
/// there, its length is the same at both ends, and it is not a section header (whose contents
/// say how to read what follows). Such a block can be stepped over when its contents are broken.
fn intact_block(layout: &Layout, data: &[u8]) -> Option<u32> {
    let Layout::Ng { big_endian, .. } = layout else {
        return None;
    };
    let kind = read_u32(data, 0, *big_endian)?;
    let len = read_u32(data, 4, *big_endian)? as usize;
    let trailing = read_u32(data, len.checked_sub(4)?, *big_endian)?;
    (kind != SHB_MAGIC && len >= 12 && len.is_multiple_of(4) && trailing as usize == len)
        .then_some(kind)
}

/// A pcapng block type's name, for findings.
fn block_name(kind: u32) -> &'static str {
    match kind {
        IDB_TYPE => "Interface Description Block",
        2 => "Packet Block",
        3 => "Simple Packet Block",
        4 => "Name Resolution Block",
        5 => "Interface Statistics Block",
        6 => "Enhanced Packet Block",
        9 => "systemd Journal Export Block",
        0x0A => "Decryption Secrets Block",
        0x8000_0001 => "Process Information Block",
        0x0BAD | 0x4000_0BAD => "Custom Block",
        _ => "block of an unknown type",
    }
}

/// The step for a pcapng block all in the buffer that the parser rejects: skipped when its framing
/// is intact (an Enhanced Packet Block too short for its packet said so), else the end of reading,
/// with what is wrong with it, or `otherwise` when the checks of [`block::fault`] find nothing.
fn rejected(
    len: usize,
    intact: Option<u32>,
    fault: Option<Fault>,
    otherwise: impl FnOnce() -> String,
) -> Step {
    match (intact, fault) {
        (Some(kind), Some(Fault::PacketTooLong { caplen, room })) => {
            Step::Skip(len, kind, Some((caplen, room)))
        }
        (Some(kind), _) => Step::Skip(len, kind, None),
        (None, Some(Fault::Other(words))) => Step::End(Some(Corrupt(words))),
        (None, _) => Step::End(Some(Corrupt(otherwise()))),
    }
}

/// Why a file that starts with a pcapng section header block is refused, with what is wrong
/// with the block when [`block::fault`] finds it.
fn refused_header(fault: Option<Fault>) -> String {
    match fault {
        Some(Fault::Other(words)) => format!("a pcapng section header block, but {words}"),
        _ => "a pcapng section header block that is invalid or cut".into(),
    }
}

/// One parser error, for people.
fn describe(e: &PcapError<&[u8]>) -> String {
    match e {
        PcapError::NomError(_, kind) | PcapError::OwnedNomError(_, kind) => {
            format!("parser rejected it ({})", kind.description())
        }
        other => format!("{other}"),
    }
}

/// `if_tsresol` and `if_tsoffset` from an IDB, in the section's byte order
/// (pcap-parser always reads the offset as little-endian).
fn interface_timing(idb: &InterfaceDescriptionBlock<'_>, big_endian: bool) -> (u8, i64) {
    let mut tsresol = 6;
    let mut tsoffset = 0;
    for opt in &idb.options {
        let value = opt.value();
        if opt.code == OptionCode::IfTsresol && opt.len >= 1 && !value.is_empty() {
            tsresol = value[0];
        } else if opt.code == OptionCode::IfTsoffset && opt.len == 8 && value.len() >= 8 {
            let mut b = [0u8; 8];
            b.copy_from_slice(&value[..8]);
            tsoffset = if big_endian {
                i64::from_be_bytes(b)
            } else {
                i64::from_le_bytes(b)
            };
        }
    }
    (tsresol, tsoffset)
}

/// Applies one parsed block: updates interface state, or delivers a frame.
fn handle_block<F: FnMut(&Frame<'_>) -> ControlFlow<()>>(
    block: PcapBlockOwned<'_>,
    offset: u64,
    layout: &mut Layout,
    info: &mut CaptureInfo,
    frames: &mut u64,
    on_frame: &mut F,
) -> ControlFlow<()> {
    match (block, layout) {
        (
            PcapBlockOwned::Legacy(b),
            Layout::Legacy {
                nanosecond,
                link_type,
                ..
            },
        ) => {
            *frames += 1;
            on_frame(&Frame {
                number: *frames,
                ts_nanos: pcap_nanos(b.ts_sec, b.ts_usec, *nanosecond),
                link_type: *link_type,
                data: b.data,
                orig_len: b.origlen,
                file_offset: offset,
            })
        }
        (
            PcapBlockOwned::NG(block),
            Layout::Ng {
                big_endian,
                interfaces,
                seen_interface,
            },
        ) => match block {
            Block::SectionHeader(shb) => {
                *big_endian = shb.big_endian();
                interfaces.clear();
                ControlFlow::Continue(())
            }
            Block::InterfaceDescription(idb) => {
                let (tsresol, tsoffset) = interface_timing(&idb, *big_endian);
                let link_type = LinkType::from_field(u32::from(idb.linktype.0 as u16));
                if !*seen_interface {
                    *seen_interface = true;
                    info.nanosecond = tsresol == 9;
                }
                if info.link_types.len() < MAX_LINK_TYPES && !info.link_types.contains(&link_type) {
                    info.link_types.push(link_type);
                }
                if interfaces.len() < MAX_INTERFACES {
                    interfaces.push(Interface {
                        link_type,
                        snaplen: idb.snaplen,
                        tsresol,
                        tsoffset,
                    });
                }
                ControlFlow::Continue(())
            }
            Block::EnhancedPacket(epb) => {
                let iface = interfaces.get(epb.if_id as usize);
                let (link_type, tsresol, tsoffset) = iface.map_or((LinkType::UNKNOWN, 6, 0), |i| {
                    (i.link_type, i.tsresol, i.tsoffset)
                });
                let units = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
                *frames += 1;
                on_frame(&Frame {
                    number: *frames,
                    ts_nanos: pcapng_nanos(units, tsresol, tsoffset),
                    link_type,
                    data: epb.packet_data(),
                    orig_len: epb.origlen,
                    file_offset: offset,
                })
            }
            Block::SimplePacket(spb) => {
                // SPB: interface 0, no timestamp; captured length is implied.
                let iface = interfaces.first();
                let mut len = spb.data.len().min(spb.origlen as usize);
                if let Some(i) = iface {
                    if i.snaplen != 0 {
                        len = len.min(i.snaplen as usize);
                    }
                }
                *frames += 1;
                on_frame(&Frame {
                    number: *frames,
                    ts_nanos: 0,
                    link_type: iface.map_or(LinkType::UNKNOWN, |i| i.link_type),
                    data: &spb.data[..len],
                    orig_len: spb.origlen,
                    file_offset: offset,
                })
            }
            // NRB, ISB, DSB, custom, journal, process info: nothing we need.
            _ => ControlFlow::Continue(()),
        },
        // A legacy header mid-stream or a block of the other format cannot
        // come from pcap-parser's readers; ignore rather than panic.
        _ => ControlFlow::Continue(()),
    }
}

#[cfg(test)]
mod tests;
