//! A streaming legacy pcap writer: microsecond or nanosecond timestamps, one link type,
//! little-endian. What it writes, [`CaptureReader`](super::CaptureReader) reads back as the same
//! frames (number, time at the chosen precision, link type, bytes, original length).
//!
//! Each record goes straight to the underlying writer (wrap a file in a `BufWriter`), with no
//! allocation per record, so a capture of any length is written in flat memory.

use std::io::{self, Write};

use super::linktype::LinkType;
use super::reader::Frame;

/// Timestamp resolution of the file (the header's magic says which).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// Magic `a1b2c3d4`: the classic format every tool reads.
    Micro,
    /// Magic `a1b23c4d`: nanoseconds.
    Nano,
}

/// Snapshot length written in the header when none is given: every frame whole.
pub const DEFAULT_SNAPLEN: u32 = 262_144;

fn invalid(what: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what.to_string())
}

/// A legacy pcap file being written. See the module doc.
pub struct PcapWriter<W: Write> {
    out: W,
    precision: Precision,
    snaplen: u32,
    records: u64,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the 24-byte file header (version 2.4, zone 0, the snapshot length, the link type).
    pub fn new(
        mut out: W,
        link_type: LinkType,
        precision: Precision,
        snaplen: u32,
    ) -> io::Result<Self> {
        let magic: u32 = match precision {
            Precision::Micro => 0xA1B2_C3D4,
            Precision::Nano => 0xA1B2_3C4D,
        };
        let mut header = [0u8; 24];
        header[0..4].copy_from_slice(&magic.to_le_bytes());
        header[4..6].copy_from_slice(&2u16.to_le_bytes());
        header[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone (8..12) and sigfigs (12..16) stay 0.
        header[16..20].copy_from_slice(&snaplen.to_le_bytes());
        header[20..24].copy_from_slice(&link_type.0.to_le_bytes());
        out.write_all(&header)?;
        Ok(PcapWriter {
            out,
            precision,
            snaplen,
            records: 0,
        })
    }

    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Writes one record: `data` as captured, `orig_len` its length on the wire (at least
    /// `data.len()`), `ts_nanos` nanoseconds since the Unix epoch (cut to microseconds for
    /// [`Precision::Micro`]). Times before 1970 or past 2106 and records longer than the
    /// snapshot length are refused, as a reader would refuse them.
    pub fn write(&mut self, ts_nanos: i64, data: &[u8], orig_len: u32) -> io::Result<()> {
        if ts_nanos < 0 {
            return Err(invalid("timestamp before 1970 cannot be written to pcap"));
        }
        let secs =
            u32::try_from(ts_nanos / 1_000_000_000).map_err(|_| invalid("timestamp past 2106"))?;
        let nanos = (ts_nanos % 1_000_000_000) as u32;
        let frac = match self.precision {
            Precision::Micro => nanos / 1000,
            Precision::Nano => nanos,
        };
        let caplen = u32::try_from(data.len()).map_err(|_| invalid("frame larger than 4 GiB"))?;
        if self.snaplen != 0 && caplen > self.snaplen {
            return Err(invalid(format!(
                "frame of {caplen} bytes exceeds the snaplen {}",
                self.snaplen
            )));
        }
        let mut header = [0u8; 16];
        for (i, word) in [secs, frac, caplen, orig_len.max(caplen)]
            .into_iter()
            .enumerate()
        {
            header[4 * i..4 * i + 4].copy_from_slice(&word.to_le_bytes());
        }
        self.out.write_all(&header)?;
        self.out.write_all(data)?;
        self.records += 1;
        Ok(())
    }

    /// Writes a frame as read or captured (its link type is the file's, by the caller's word).
    pub fn write_frame(&mut self, frame: &Frame<'_>) -> io::Result<()> {
        self.write(frame.ts_nanos, frame.data, frame.orig_len)
    }

    /// Flushes the underlying writer (a live capture does so now and then, so the file can be
    /// read while it grows).
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Flushes and returns the underlying writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;
    use std::path::Path;

    use super::*;
    use crate::capture::{CaptureFormat, CaptureReader};

    /// An owned copy of a frame, to compare what was written with what is read back.
    #[derive(Debug, PartialEq, Eq)]
    struct Owned {
        number: u64,
        ts_nanos: i64,
        link_type: LinkType,
        data: Vec<u8>,
        orig_len: u32,
    }

    fn owned(f: &Frame<'_>) -> Owned {
        Owned {
            number: f.number,
            ts_nanos: f.ts_nanos,
            link_type: f.link_type,
            data: f.data.to_vec(),
            orig_len: f.orig_len,
        }
    }

    fn frames(link_type: LinkType) -> Vec<Owned> {
        let base = 1_767_225_600_000_000_000i64; // 2026-01-01T00:00:00Z
        (0..50u64)
            .map(|i| {
                let len = (i as usize * 37) % 1500;
                let data: Vec<u8> = (0..len).map(|b| (b as u64 ^ i) as u8).collect();
                // Every fifth frame was cut by a snaplen: longer on the wire than captured.
                let orig_len = len as u32 + if i % 5 == 0 { 100 } else { 0 };
                Owned {
                    number: i + 1,
                    ts_nanos: base + i as i64 * 16_666_667 + 123,
                    link_type,
                    data,
                    orig_len,
                }
            })
            .collect()
    }

    fn write_all(precision: Precision, link_type: LinkType, frames: &[Owned]) -> Vec<u8> {
        let mut w = PcapWriter::new(Vec::new(), link_type, precision, DEFAULT_SNAPLEN).unwrap();
        for f in frames {
            w.write(f.ts_nanos, &f.data, f.orig_len).unwrap();
        }
        assert_eq!(w.records(), frames.len() as u64);
        w.finish().unwrap()
    }

    fn read_back(bytes: Vec<u8>) -> (crate::capture::CaptureInfo, Vec<Owned>) {
        let mut r =
            CaptureReader::from_read(Path::new("written.pcap"), Box::new(Cursor::new(bytes)))
                .unwrap();
        let mut got = Vec::new();
        let end = r.for_each_frame(|f| got.push(owned(f))).unwrap();
        assert_eq!((end.frames, end.truncated), (got.len() as u64, None));
        (r.info().clone(), got)
    }

    #[test]
    fn nanosecond_files_read_back_identical() {
        for link in [LinkType::ETHERNET, LinkType::RAW, LinkType::LINUX_SLL] {
            let written = frames(link);
            let (info, got) = read_back(write_all(Precision::Nano, link, &written));
            assert_eq!(got, written);
            assert_eq!(info.format, CaptureFormat::Pcap);
            assert!(info.nanosecond && !info.big_endian && !info.gzip);
            assert_eq!(info.link_types, vec![link]);
        }
    }

    #[test]
    fn microsecond_files_keep_microseconds() {
        let written = frames(LinkType::ETHERNET);
        let (info, got) = read_back(write_all(Precision::Micro, LinkType::ETHERNET, &written));
        assert!(!info.nanosecond);
        let expected: Vec<Owned> = written
            .into_iter()
            .map(|f| Owned {
                ts_nanos: f.ts_nanos / 1000 * 1000,
                ..f
            })
            .collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn frames_from_a_reader_are_copied_exactly() {
        // Read a file, write its frames with write_frame, read again: the same frames.
        let original = write_all(
            Precision::Nano,
            LinkType::ETHERNET,
            &frames(LinkType::ETHERNET),
        );
        let mut r =
            CaptureReader::from_read(Path::new("a.pcap"), Box::new(Cursor::new(original.clone())))
                .unwrap();
        let mut w = PcapWriter::new(
            Vec::new(),
            LinkType::ETHERNET,
            Precision::Nano,
            DEFAULT_SNAPLEN,
        )
        .unwrap();
        r.for_each_frame(|f| w.write_frame(f).unwrap()).unwrap();
        assert_eq!(w.finish().unwrap(), original);
    }

    #[test]
    fn header_layout() {
        let w = PcapWriter::new(Vec::new(), LinkType::ETHERNET, Precision::Micro, 65_535).unwrap();
        let bytes = w.finish().unwrap();
        assert_eq!(bytes.len(), 24);
        assert_eq!(&bytes[..4], &[0xD4, 0xC3, 0xB2, 0xA1]);
        assert_eq!(&bytes[16..20], &65_535u32.to_le_bytes());
        assert_eq!(&bytes[20..24], &1u32.to_le_bytes());
        let w = PcapWriter::new(Vec::new(), LinkType::RAW, Precision::Nano, 0).unwrap();
        assert_eq!(&w.finish().unwrap()[..4], &[0x4D, 0x3C, 0xB2, 0xA1]);
        // An empty capture reads back as one, with its link type.
        let (info, got) = read_back(write_all(Precision::Nano, LinkType::RAW, &[]));
        assert!(got.is_empty());
        assert_eq!(info.link_types, vec![LinkType::RAW]);
    }

    #[test]
    fn refuses_what_a_reader_would_refuse() {
        let mut w = PcapWriter::new(Vec::new(), LinkType::ETHERNET, Precision::Nano, 100).unwrap();
        assert!(w.write(-1, b"x", 1).is_err());
        assert!(w.write(5_000_000_000 * 1_000_000_000, b"x", 1).is_err());
        assert!(w.write(0, &[0; 101], 101).is_err());
        w.write(0, &[0; 100], 90).unwrap(); // orig_len below caplen is raised to it
        assert_eq!(w.records(), 1);
        let (_, got) = read_back(w.finish().unwrap());
        assert_eq!((got.len(), got[0].orig_len), (1, 100));
    }
}
