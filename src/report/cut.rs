//! `-w FILE` on `packets` and `export`: the frames whose datagrams pass the filters (`-Y`, the
//! report filters, `--port`, `-c`), copied into a pcap file, as tshark's `-w` does (cut a 2 GB
//! capture down to the stall, and send that).
//!
//! The pipeline says which datagrams pass, not which bytes carried them, so the capture is read
//! again to copy its frames: once through the pipeline, selecting frames; when datagrams came in
//! IP fragments, once more to find the frames of the selected ones' fragments; once to copy.
//! Standard input cannot be read again: `-w` needs a file. The pcap has the input's link type
//! and timestamp precision (a pcapng input gives a pcap too: one link type, nanoseconds when its
//! first interface's are); it is written beside the target and renamed into place when whole.

use std::ops::ControlFlow;
use std::path::Path;

use super::filter::Filter;
use crate::app::read::STDIN;
use crate::app::{read_capture, OutputFile, Reading};
use crate::capture::defrag::{MAX_FRAGMENTS, MAX_HELD_BYTES, MAX_SETS, SET_TIMEOUT_NANOS};
use crate::capture::writer::{PcapWriter, Precision, DEFAULT_SNAPLEN};
use crate::capture::{CaptureReader, DefragOutcome, Defragmenter, Frame, LinkOutcome, LinkType};
use crate::pipeline::{RunEnd, Sink, Watch, Watched};
use crate::session::event::{DatagramEvent, LooseFinding};

/// Frame numbers, one bit each: memory an eighth of a byte per frame of the capture (a record is
/// at least 16 bytes, so at most 1/128 of the file's size), whatever the filters select.
#[derive(Debug, Default)]
pub struct FrameSet {
    words: Vec<u64>,
    last: u64,
}

impl FrameSet {
    pub fn insert(&mut self, frame: u64) {
        let word = (frame / 64) as usize;
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1 << (frame % 64);
        self.last = self.last.max(frame);
    }

    pub fn contains(&self, frame: u64) -> bool {
        self.words
            .get((frame / 64) as usize)
            .is_some_and(|w| w & (1 << (frame % 64)) != 0)
    }

    /// The highest frame in the set (0 when empty).
    pub fn last(&self) -> u64 {
        self.last
    }
}

/// Notes the frames of the datagrams that pass `filter` (as `packets` and `export` judge them)
/// while the report (if any) written beside the cut gets everything.
struct Cut {
    filter: Filter,
    first_ts: Option<i64>,
    selected: FrameSet,
    /// Whether the run reassembled IP fragments (their frames are found by another reading).
    fragments: bool,
}

impl Watch for Cut {
    fn datagram(&mut self, e: &DatagramEvent<'_>, shown: bool) -> bool {
        let first = *self.first_ts.get_or_insert(e.ts_nanos);
        let rel = e.ts_nanos.saturating_sub(first) as f64 / 1e9;
        if shown && self.filter.matches(e, rel) {
            self.selected.insert(e.frame);
        }
        true
    }
    fn end(&mut self, end: &RunEnd<'_>) {
        self.fragments = end.counts.reassembled_fragments > 0;
    }
    /// Never done early: the cut wants every selected frame, even when the report beside it has
    /// stopped (`export -w cut.pcap | head`).
    fn done(&self, _: bool) -> bool {
        false
    }
}

/// A report that writes nothing: `packets -w` prints no packet list (as tshark's `-w`).
#[derive(Default)]
pub struct NoReport {
    no_fields: crate::message::NoFields,
}

impl Sink for NoReport {
    type Fields = crate::message::NoFields;
    fn fields(&mut self) -> &mut Self::Fields {
        &mut self.no_fields
    }
    fn datagram(&mut self, _: &DatagramEvent<'_>) {}
    fn loose(&mut self, _: &LooseFinding) {}
    fn end(&mut self, _: &RunEnd<'_>) {}
}

/// Reads `file` into `inner` (the report written beside the cut) and writes the frames of the
/// datagrams that pass `filter` to `target`, whole or not at all. Returns the report.
pub fn write<S: Sink>(
    file: &Path,
    reading: &Reading,
    filter: Filter,
    target: &Path,
    inner: S,
) -> Result<S, String> {
    if file.as_os_str() == STDIN {
        return Err(
            "-w reads the capture twice (to select, then to copy its frames): give a file, not \
             standard input"
                .into(),
        );
    }
    // Created first: a target that cannot be written fails before a long read.
    let out = OutputFile::create(target, &[file])?;
    let mut inner = inner;
    let mut cut = Watched {
        sink: &mut inner,
        watch: Cut {
            filter,
            first_ts: None,
            selected: FrameSet::default(),
            fragments: false,
        },
    };
    read_capture(file, reading, &mut cut)?;
    let Cut {
        mut selected,
        fragments,
        ..
    } = cut.watch;
    let open = || CaptureReader::open(file).map_err(|e| e.to_string());
    if fragments {
        add_fragments(&mut open()?, &mut selected).map_err(|e| e.to_string())?;
    }
    copy(&mut open()?, &selected, out)?.commit()?;
    Ok(inner)
}

/// The fragments of a datagram not yet complete: one of its frames (to tell which later
/// fragments are of the same datagram), and the numbers of its frames so far.
struct Pending {
    link_type: LinkType,
    sample: Vec<u8>,
    first_ts: i64,
    frames: Vec<u64>,
}

impl Pending {
    /// Whether `frame` is a fragment of this datagram, by the defragmenter's own judgement: two
    /// fragments of different datagrams open two sets in a fresh one.
    fn has(&self, frame: &Frame<'_>) -> bool {
        let mut defrag = Defragmenter::new();
        defrag.push(self.link_type, &self.sample, 0);
        defrag.push(frame.link_type, frame.data, 0);
        defrag.unfinished() != 2
    }
}

/// Adds to `selected` the frames that carried each selected reassembled datagram's other
/// fragments (the pipeline selected the frame that completed it). Follows the pipeline's
/// defragmenter, within its bounds: as many datagrams pending, bytes held, fragments each and
/// time to complete.
fn add_fragments(
    reader: &mut CaptureReader,
    selected: &mut FrameSet,
) -> Result<(), crate::capture::CaptureError> {
    let mut defrag = Defragmenter::new();
    let mut pending: Vec<Pending> = Vec::new();
    let last = selected.last();
    reader.for_each_frame_until(|frame| {
        if frame.number > last {
            return ControlFlow::Break(());
        }
        if crate::capture::udp_from_frame(frame.link_type, frame.data) != LinkOutcome::Fragment {
            return ControlFlow::Continue(());
        }
        pending.retain(|p| frame.ts_nanos.saturating_sub(p.first_ts) <= SET_TIMEOUT_NANOS);
        let at = pending.iter().position(|p| p.has(frame));
        match (defrag.push(frame.link_type, frame.data, frame.ts_nanos), at) {
            (DefragOutcome::Complete(_), Some(i)) => {
                let datagram = pending.remove(i);
                if selected.contains(frame.number) {
                    for f in datagram.frames {
                        selected.insert(f);
                    }
                }
            }
            (DefragOutcome::Pending, Some(i)) => {
                let p = &mut pending[i];
                if p.frames.len() < MAX_FRAGMENTS as usize {
                    p.frames.push(frame.number);
                }
            }
            (DefragOutcome::Pending, None) => {
                if pending.len() >= MAX_SETS {
                    pending.remove(0);
                }
                pending.push(Pending {
                    link_type: frame.link_type,
                    sample: frame.data.to_vec(),
                    first_ts: frame.ts_nanos,
                    frames: vec![frame.number],
                });
                let mut held: usize = pending.iter().map(|p| p.sample.len()).sum();
                while held > MAX_HELD_BYTES && pending.len() > 1 {
                    held -= pending.remove(0).sample.len();
                }
            }
            // Dropped by the defragmenter, or a datagram whose other fragments are not known.
            _ => {}
        }
        ControlFlow::Continue(())
    })?;
    Ok(())
}

/// Copies the frames in `selected` from `reader` to a pcap written to `out`, and returns `out`
/// to be committed.
fn copy(
    reader: &mut CaptureReader,
    selected: &FrameSet,
    out: OutputFile,
) -> Result<OutputFile, String> {
    let shown = out.target().display().to_string();
    let precision = if reader.info().nanosecond {
        Precision::Nano
    } else {
        Precision::Micro
    };
    let new_writer = |out, link_type| {
        PcapWriter::new(out, link_type, precision, DEFAULT_SNAPLEN)
            .map_err(|e| format!("{shown}: {e}"))
    };
    let last = selected.last();
    let mut out = Some(out);
    let mut writer: Option<(LinkType, PcapWriter<OutputFile>)> = None;
    let mut failed: Option<String> = None;
    let read = reader.for_each_frame_until(|frame| {
        if frame.number > last {
            return ControlFlow::Break(());
        }
        if !selected.contains(frame.number) {
            return ControlFlow::Continue(());
        }
        if writer.is_none() {
            match out.take().map(|o| new_writer(o, frame.link_type)) {
                Some(Ok(w)) => writer = Some((frame.link_type, w)),
                Some(Err(e)) => failed = Some(e),
                None => {}
            }
        }
        let Some((link_type, w)) = writer.as_mut() else {
            return ControlFlow::Break(());
        };
        let result = if frame.link_type == *link_type {
            w.write_frame(frame).map_err(|e| e.to_string())
        } else {
            Err(format!(
                "its link type {} is not the first selected frame's ({}), and a pcap file holds \
                 one link type",
                frame.link_type.name(),
                link_type.name()
            ))
        };
        match result {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                failed = Some(format!("{shown}: frame {}: {e}", frame.number));
                ControlFlow::Break(())
            }
        }
    });
    read.map_err(|e| e.to_string())?;
    if let Some(e) = failed {
        return Err(e);
    }
    let writer = match (writer, out) {
        (Some((_, w)), _) => w,
        // Nothing selected: an empty capture, of the input's (first) link type.
        (None, Some(out)) => {
            let link_type = reader
                .info()
                .link_types
                .first()
                .copied()
                .unwrap_or(LinkType::ETHERNET);
            new_writer(out, link_type)?
        }
        (None, None) => return Err(format!("{shown}: not written")),
    };
    writer.finish().map_err(|e| format!("{shown}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_sets_hold_what_was_inserted() {
        let mut s = FrameSet::default();
        for f in [1, 63, 64, 1000] {
            s.insert(f);
        }
        let held: Vec<u64> = (0..1100).filter(|f| s.contains(*f)).collect();
        assert_eq!(held, [1, 63, 64, 1000]);
        assert_eq!(s.last(), 1000);
        assert!(!FrameSet::default().contains(5));
    }
}
