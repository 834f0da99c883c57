//! Output made in sections, one per key (a conversation), as the capture interleaves them, and
//! written in key order at the end. Past [`MAX_BUFFERED`] bytes, what the sections hold goes to
//! an unnamed temporary file ([`Spool`]) as blocks, so that memory stays flat however long
//! the output: the block list costs 12 bytes per spill of a section.

use std::collections::BTreeMap;
use std::io::{self, Read, Seek, SeekFrom, Write};

use crate::app::inputs::Spool;

/// Bytes the sections hold in memory before they spill.
const MAX_BUFFERED: usize = 1 << 20;

/// The sections (see the module's documentation).
#[derive(Default)]
pub struct Sections {
    sections: BTreeMap<u32, Section>,
    buffered: usize,
    spool: Option<Spool>,
    spooled: u64,
    /// The first error of the spool; the output stops there.
    pub error: Option<io::Error>,
}

#[derive(Default)]
struct Section {
    /// What was spilled: (offset, length) in the spool.
    blocks: Vec<(u64, u32)>,
    text: String,
}

impl Sections {
    /// Appends to section `key` with `write`.
    pub fn append(&mut self, key: u32, write: impl FnOnce(&mut String)) {
        let text = &mut self.sections.entry(key).or_default().text;
        let before = text.len();
        write(text);
        self.buffered += text.len() - before;
        if self.buffered > MAX_BUFFERED && self.error.is_none() {
            self.error = self.spill().err();
        }
    }

    fn spill(&mut self) -> io::Result<()> {
        let spool = match &mut self.spool {
            Some(spool) => spool,
            None => self.spool.insert(Spool::new()?),
        };
        for section in self.sections.values_mut() {
            // Blocks stay below 4 GiB: the buffer spills at MAX_BUFFERED.
            let len = section.text.len() as u32;
            if len > 0 {
                spool.write_all(section.text.as_bytes())?;
                section.blocks.push((self.spooled, len));
                self.spooled += u64::from(len);
                section.text.clear();
            }
        }
        self.buffered = 0;
        Ok(())
    }

    /// Writes each section to `out` in key order, between what `head` and `tail` write for its
    /// key (`head` also gets the section's index among those written).
    pub fn write_to<W: Write>(
        mut self,
        out: &mut W,
        mut head: impl FnMut(&mut W, u32, usize) -> io::Result<()>,
        mut tail: impl FnMut(&mut W, u32) -> io::Result<()>,
    ) -> io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let mut spooled = match self.spool.take() {
            Some(spool) => Some(spool.reader()?),
            None => None,
        };
        for (index, (key, section)) in self.sections.into_iter().enumerate() {
            head(out, key, index)?;
            if let Some(reader) = &mut spooled {
                for (offset, len) in section.blocks {
                    reader.seek(SeekFrom::Start(offset))?;
                    io::copy(&mut reader.by_ref().take(u64::from(len)), out)?;
                }
            }
            out.write_all(section.text.as_bytes())?;
            tail(out, key)?;
        }
        Ok(())
    }
}
