//! `packets -T fields -e FIELD…`: one line per datagram with the named fields' values, as
//! tshark writes them. The fields are the display filter's, read by its own evaluation.

use std::io::{self, Write};

use super::filter::Filter;
use super::packets::{end_list, write_unless_failed};
use crate::display_filter::{Context, DisplayFilter};
use crate::pipeline::{Rendering, RunEnd, Sink};
use crate::session::event::{DatagramEvent, LooseFinding};

/// Which occurrences of a repeated field are printed (`-E occurrence=f|l|a`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Occurrence {
    First,
    Last,
    #[default]
    All,
}

/// tshark's `-E` options that `-T fields` honours.
#[derive(Clone, Debug)]
pub struct FieldOptions {
    pub separator: String,
    pub aggregator: String,
    pub header: bool,
    pub occurrence: Occurrence,
}

impl Default for FieldOptions {
    fn default() -> Self {
        FieldOptions {
            separator: "\t".into(),
            aggregator: ",".into(),
            header: false,
            occurrence: Occurrence::All,
        }
    }
}

impl FieldOptions {
    /// Applies one `-E NAME=VALUE`, with tshark's names and its `/t` (tab) and `/s` (space).
    pub fn set(&mut self, option: &str) -> Result<(), String> {
        let (name, value) = option
            .split_once('=')
            .ok_or_else(|| format!("-E {option}: expected NAME=VALUE"))?;
        let character = |v: &str| match v {
            "/t" => "\t".to_string(),
            "/s" => " ".to_string(),
            v => v.to_string(),
        };
        match (name, value) {
            ("separator", v) => self.separator = character(v),
            ("aggregator", v) => self.aggregator = character(v),
            ("header", "y") => self.header = true,
            ("header", "n") => self.header = false,
            ("occurrence", "f") => self.occurrence = Occurrence::First,
            ("occurrence", "l") => self.occurrence = Occurrence::Last,
            ("occurrence", "a") => self.occurrence = Occurrence::All,
            ("header" | "occurrence", v) => {
                return Err(format!("-E {name}={v}: not one of tshark's values"))
            }
            _ => {
                return Err(format!(
                    "-E {name}: unknown (separator, aggregator, header, occurrence)"
                ))
            }
        }
        Ok(())
    }
}

/// Writes a line of field values per datagram shown. A write error (a closed pipe) stops the
/// output quietly.
pub struct FieldLines<W: Write> {
    out: W,
    names: Vec<String>,
    fields: DisplayFilter,
    options: FieldOptions,
    filter: Filter,
    first_ts: Option<i64>,
    /// No walk of its own: the values are read by the filter's walk, of those fields alone.
    no_walk: crate::message::NoFields,
    /// Each field's values in this datagram, joined, and how many; reused.
    cells: Vec<(String, usize)>,
    line: String,
    pub error: Option<io::Error>,
    /// A filter that asked for what the capture does not have, known at the end.
    pub unmatched: Option<String>,
}

impl<W: Write> FieldLines<W> {
    /// `fields` is [`DisplayFilter::fields`] of `names`.
    pub fn new(
        out: W,
        names: Vec<String>,
        fields: DisplayFilter,
        options: FieldOptions,
        filter: Filter,
    ) -> Self {
        FieldLines {
            out,
            no_walk: crate::message::NoFields,
            cells: vec![(String::new(), 0); names.len()],
            names,
            fields,
            options,
            filter,
            first_ts: None,
            line: String::new(),
            error: None,
            unmatched: None,
        }
    }

    fn write_line(&mut self) {
        self.line.push('\n');
        write_unless_failed(&mut self.out, &mut self.error, self.line.as_bytes());
    }
}

impl<W: Write> Sink for FieldLines<W> {
    type Fields = crate::message::NoFields;

    fn fields(&mut self) -> &mut Self::Fields {
        &mut self.no_walk
    }

    fn start(&mut self, _info: &crate::capture::CaptureInfo) {
        if self.options.header {
            self.line.clear();
            self.line
                .push_str(&self.names.join(&self.options.separator));
            self.write_line();
        }
    }

    fn skipped(&mut self, e: &DatagramEvent<'_>) {
        self.first_ts.get_or_insert(e.ts_nanos);
    }

    /// Datagrams come with their context, through [`Sink::datagram_in`].
    fn datagram(&mut self, _e: &DatagramEvent<'_>) {}

    fn datagram_in(
        &mut self,
        e: &DatagramEvent<'_>,
        context: &Context<'_>,
        _rendered: Option<Rendering<'_, Self>>,
    ) {
        // The same relative time `packets`' --time filter judges by.
        let rel = e
            .ts_nanos
            .saturating_sub(*self.first_ts.get_or_insert(e.ts_nanos)) as f64
            / 1e9;
        if self.error.is_some() || !self.filter.matches(e, rel) {
            return;
        }
        for (cell, count) in &mut self.cells {
            cell.clear();
            *count = 0;
        }
        let (cells, options) = (&mut self.cells, &self.options);
        self.fields.values(e, context, &mut |i, text| {
            let (cell, count) = &mut cells[i];
            match options.occurrence {
                Occurrence::First if *count > 0 => return,
                Occurrence::Last => cell.clear(),
                Occurrence::All if *count > 0 => cell.push_str(&options.aggregator),
                _ => {}
            }
            *count += 1;
            cell.push_str(text);
        });
        self.line.clear();
        for (i, (cell, _)) in self.cells.iter().enumerate() {
            if i > 0 {
                self.line.push_str(&self.options.separator);
            }
            self.line.push_str(cell);
        }
        self.write_line();
    }

    fn loose(&mut self, _finding: &LooseFinding) {}

    fn end(&mut self, end: &RunEnd<'_>) {
        self.unmatched = end_list(&mut self.out, &mut self.error, &self.filter, end);
    }

    fn done(&self) -> bool {
        self.error.is_some()
    }
}
