//! The byte stream under the capture parser.
//!
//! The reading window ([`super::window`]) reads through a plain `Read`, flattens every I/O
//! failure into `PcapError::ReadError` as pcap-parser's readers do, and probes the file format
//! from the result of a *single* `read` call. This module wraps the raw input so that:
//! - compressed bytes are counted for the progress bar ([`CountingReader`]);
//! - gzip is detected from its magic (1f 8b), not from the file name;
//! - the first read fills the whole probe buffer, so a short read from a pipe or
//!   from the gzip decoder cannot make a valid pcapng look unrecognized;
//! - the real `io::Error` is kept aside ([`ErrorSlot`]) to be named in messages,
//!   and the stream reports end of input after it.

use std::io::{self, Cursor, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use flate2::read::MultiGzDecoder;

/// Where [`Source`] leaves the last I/O error, since the window's errors drop it.
pub(crate) type ErrorSlot = Arc<Mutex<Option<io::Error>>>;

/// Takes the error left in the slot, if any (a poisoned lock only loses the message).
pub(crate) fn take_error(slot: &ErrorSlot) -> Option<io::Error> {
    slot.lock().ok().and_then(|mut e| e.take())
}

/// Counts the bytes read from the underlying file (compressed bytes for .gz).
pub(crate) struct CountingReader<R> {
    inner: R,
    counter: Arc<AtomicU64>,
}

impl<R: Read> CountingReader<R> {
    pub(crate) fn new(inner: R, counter: Arc<AtomicU64>) -> Self {
        CountingReader { inner, counter }
    }
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// The reader the window reads.
pub(crate) struct Source {
    inner: Box<dyn Read + Send>,
    /// The next read must fill the buffer (or reach end of input): see module doc.
    fill_next: bool,
    /// An error was kept: the input is over.
    failed: bool,
    errors: ErrorSlot,
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.failed {
            return Ok(0);
        }
        let fill = std::mem::take(&mut self.fill_next);
        let mut total = 0;
        while total < buf.len() {
            match self.inner.read(&mut buf[total..]) {
                Ok(0) => break,
                Ok(n) => {
                    total += n;
                    if !fill {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Deliver what we have, then end of input. The reader names
                    // the kept error when reading ends, however it ends; failing
                    // the read instead would lose the data read before the error.
                    if let Ok(mut slot) = self.errors.lock() {
                        *slot = Some(e);
                    }
                    self.failed = true;
                    break;
                }
            }
        }
        Ok(total)
    }
}

/// Bytes [`open_source`] looks at first: a pcapng section header's type, length and byte-order
/// magic.
pub(crate) const HEAD: usize = 12;

/// Result of [`open_source`]: the stream to parse and what the first bytes said.
pub(crate) struct Opened {
    pub source: Source,
    pub gzip: bool,
    /// First bytes of the (decompressed) capture: the magic for error messages, and a pcapng
    /// section header's length.
    pub head: [u8; HEAD],
    pub head_len: usize,
}

/// Why [`open_source`] failed.
pub(crate) enum OpenFailure {
    Io(io::Error),
    /// The input is gzip but the compressed data is corrupt.
    BadGzip(io::Error),
    /// Nothing to read (after decompression when `gzip`).
    Empty {
        gzip: bool,
    },
}

type BoxRead = Box<dyn Read + Send>;

/// Reads up to `N` bytes without losing them: returns them, how many were
/// read, and a reader that yields them again before the rest.
fn peek<const N: usize>(mut r: BoxRead) -> io::Result<([u8; N], usize, BoxRead)> {
    let mut head = [0u8; N];
    let mut len = 0;
    while len < N {
        match r.read(&mut head[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    let again = Cursor::new(head[..len].to_vec()).chain(r);
    Ok((head, len, Box::new(again)))
}

/// Wraps `raw` (already counted) into the stream the window will read.
pub(crate) fn open_source(
    raw: Box<dyn Read + Send>,
    errors: ErrorSlot,
) -> Result<Opened, OpenFailure> {
    let (head, len, raw) = peek::<2>(raw).map_err(OpenFailure::Io)?;
    let gzip = len == 2 && head == [0x1f, 0x8b];
    let stream: Box<dyn Read + Send> = if gzip {
        Box::new(MultiGzDecoder::new(raw))
    } else {
        raw
    };
    let (head, head_len, stream) = peek::<HEAD>(stream).map_err(|e| {
        let corrupt = matches!(
            e.kind(),
            io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof
        );
        if gzip && corrupt {
            OpenFailure::BadGzip(e)
        } else {
            OpenFailure::Io(e)
        }
    })?;
    if head_len == 0 {
        return Err(OpenFailure::Empty { gzip });
    }
    Ok(Opened {
        source: Source {
            inner: stream,
            fill_next: true,
            failed: false,
            errors,
        },
        gzip,
        head,
        head_len,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Returns one byte per read call, like a slow pipe.
    struct Trickle(Vec<u8>, usize);
    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.1 >= self.0.len() || buf.is_empty() {
                return Ok(0);
            }
            buf[0] = self.0[self.1];
            self.1 += 1;
            Ok(1)
        }
    }

    #[test]
    fn first_read_fills_the_buffer_then_reads_pass_through() {
        let slot = ErrorSlot::default();
        let data: Vec<u8> = (0u8..100).collect();
        let opened = open_source(Box::new(Trickle(data.clone(), 0)), slot)
            .ok()
            .unwrap();
        assert!(!opened.gzip);
        assert_eq!(&opened.head[..opened.head_len], &data[..HEAD]);
        let mut src = opened.source;
        let mut buf = [0u8; 64];
        assert_eq!(src.read(&mut buf).unwrap(), 64);
        assert_eq!(&buf[..], &data[..64]);
        // Later reads may be short.
        let n = src.read(&mut buf).unwrap();
        assert!((1..=36).contains(&n));
    }

    #[test]
    fn io_errors_are_kept_for_messages() {
        struct Failing;
        impl Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::other("disk on fire"))
            }
        }
        let slot = ErrorSlot::default();
        let mut src = Source {
            inner: Box::new(Failing),
            fill_next: false,
            failed: false,
            errors: slot.clone(),
        };
        assert_eq!(src.read(&mut [0u8; 8]).unwrap(), 0);
        assert_eq!(src.read(&mut [0u8; 8]).unwrap(), 0);
        assert_eq!(take_error(&slot).unwrap().to_string(), "disk on fire");
    }

    #[test]
    fn empty_input() {
        let r = open_source(Box::new(io::empty()), ErrorSlot::default());
        assert!(matches!(r, Err(OpenFailure::Empty { gzip: false })));
    }
}
