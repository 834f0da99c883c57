//! Text tables that fit the terminal (whole rows on a pipe), coloured only when asked.

use comfy_table::{presets, Cell, Color, ColumnConstraint, ContentArrangement, Table};

use crate::app::Term;
use crate::proto::Severity;

/// A table with these headers: cells wrap to fit the terminal's width; on a pipe, rows are
/// whole lines, however long.
pub fn new(term: Term, headers: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED)
        .set_header(headers.iter().map(|h| Cell::new(*h)));
    match term.width {
        Some(width) => t
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(u16::try_from(width).unwrap_or(u16::MAX)),
        None => t.set_content_arrangement(ContentArrangement::Disabled),
    };
    if term.color {
        // comfy-table drops styling when stdout is not a terminal; --color always keeps it.
        t.enforce_styling();
    }
    t
}

pub fn cell(text: impl Into<String>) -> Cell {
    Cell::new(text.into())
}

/// A severity, red/yellow/blue when colour is on.
pub fn severity_cell(severity: Severity, term: Term) -> Cell {
    let c = Cell::new(severity.name());
    if !term.color {
        return c;
    }
    c.fg(match severity {
        Severity::Error => Color::Red,
        Severity::Warning => Color::Yellow,
        Severity::Info => Color::Blue,
    })
}

/// Keeps column `index` as wide as its widest cell (identifiers should not wrap).
pub fn keep_whole(table: &mut Table, index: usize) {
    if let Some(column) = table.column_mut(index) {
        column.set_constraint(ColumnConstraint::ContentWidth);
    }
}
