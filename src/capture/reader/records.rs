//! Reading records: the loop that takes the window's pcap records or pcapng blocks one by one,
//! sizes and checks each, hands its frames over, steps over or stops at broken ones, and records
//! how reading ended.

use super::*;

impl CaptureReader {
    /// The reading loop. With `stop_before_packet`, returns (without consuming)
    /// at the first packet record; otherwise runs to the end. Either way, an end
    /// of input is recorded in `self.end`.
    pub(super) fn pump(&mut self, stop_before_packet: bool, deliver: &mut impl Deliver) {
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
    pub(super) fn read_end(&self) -> ReadEnd {
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
    pub(super) fn finish(&mut self, offset: u64, reason: Option<Stop>) {
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
pub(super) fn block_name(kind: u32) -> &'static str {
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
