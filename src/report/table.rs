//! Text tables that fit 100 columns, coloured only when asked (on a TTY).

use comfy_table::{presets, Cell, Color, ColumnConstraint, ContentArrangement, Table};

use crate::proto::Severity;

/// Width every human report fits in.
pub const WIDTH: u16 = 100;

/// A table with these headers, wrapping its cells to fit [`WIDTH`].
pub fn new(headers: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(WIDTH)
        .set_header(headers.iter().map(|h| Cell::new(*h)));
    t
}

pub fn cell(text: impl Into<String>) -> Cell {
    Cell::new(text.into())
}

/// A severity, red/yellow/blue when colour is on.
pub fn severity_cell(severity: Severity, color: bool) -> Cell {
    let c = Cell::new(severity.name());
    if !color {
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
