//! Opening a capture: the source (gzip or plain) and its first bytes, the pcap file header or
//! pcapng section header read, and in words why a file is refused as a capture.

use super::*;

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

/// Why a file that starts with a pcapng section header block is refused, with what is wrong
/// with the block when [`block::fault`] finds it.
fn refused_header(fault: Option<Fault>) -> String {
    match fault {
        Some(Fault::Other(words)) => format!("a pcapng section header block, but {words}"),
        _ => "a pcapng section header block that is invalid or cut".into(),
    }
}
