//! The live view on stderr, when it is a terminal: a header line (time, clients, what came and
//! what was dropped each way, run-wide) and a line per client (its figures as delivered over the
//! last second, between two redraws, and its impairments), redrawn in place every second. Lines are cut to the terminal's width, so that none wraps and
//! moving the cursor up over them redraws them all; at most [`MAX_ROWS`] clients are shown, so
//! that the view fits a terminal's height.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use super::decode::Second;
use super::relay::{Counts, Relay};
use super::select::Dir;
use crate::app::{ColorChoice, Term};

/// Clients shown, at most; a last line counts the others.
pub const MAX_ROWS: usize = 16;

const BOLD: &str = "\x1b[1m";
const YELLOW: &str = "\x1b[33m";
const RESET: &str = "\x1b[0m";

/// One client's line.
pub struct Row<'a> {
    pub addr: SocketAddr,
    pub impairments: &'a str,
    pub second: Second,
}

/// The view as last drawn.
pub struct View {
    color: ColorChoice,
    /// Lines drawn last time, to go back up over.
    drawn: usize,
}

impl View {
    pub fn new(color: ColorChoice) -> View {
        View { color, drawn: 0 }
    }

    /// Draws the view over the last one, at the terminal's width now; the clients' figures are
    /// those since the last redraw.
    pub fn redraw(&mut self, relay: &mut Relay, elapsed: Duration) {
        let term = Term::stderr(self.color);
        let shown: Vec<_> = relay
            .clients
            .iter()
            .take(MAX_ROWS)
            .map(|c| (c.addr, super::describe_both(&c.settings), relay.ends_of(c)))
            .collect();
        let now_ns = relay.now_ns();
        let rows: Vec<Row> = shown
            .iter()
            .map(|(addr, impairments, ends)| Row {
                addr: *addr,
                impairments,
                second: relay.tap.decoder.second(ends, now_ns),
            })
            .collect();
        let lines = render(
            &header(relay, elapsed),
            &rows,
            relay.clients.len(),
            term.width.unwrap_or(usize::MAX),
            term.color,
        );
        let mut out = String::new();
        if self.drawn > 0 {
            let _ = write!(out, "\x1b[{}A", self.drawn);
        }
        for line in &lines {
            let _ = writeln!(out, "\r\x1b[K{line}");
        }
        out += "\x1b[J";
        eprint!("{out}");
        self.drawn = lines.len();
    }
}

/// The header: time, clients, and per direction what came and what was dropped.
fn header(relay: &Relay, elapsed: Duration) -> String {
    let total = |d: Dir| {
        relay.clients.iter().fold(Counts::default(), |mut a, c| {
            let b = &c.counts[d as usize];
            a.received += b.received;
            a.dropped
                .iter_mut()
                .zip(b.dropped)
                .for_each(|(x, y)| *x += y);
            a
        })
    };
    let (up, down) = (total(Dir::Up), total(Dir::Down));
    format!(
        "{:.0} s  {} clients  up {} in, {} dropped  down {} in, {} dropped  {} waiting  \
         (clients: last second)",
        elapsed.as_secs_f64(),
        relay.clients.len(),
        up.received,
        up.dropped_total(),
        down.received,
        down.dropped_total(),
        relay.waiting()
    )
}

/// The view's lines: `header`, then a line per row (of `clients` in all), each cut to `width`
/// columns (less one: a line filling the last column wraps on some terminals), coloured when
/// `color` (the header bold, loss and findings yellow).
pub fn render(
    header: &str,
    rows: &[Row<'_>],
    clients: usize,
    width: usize,
    color: bool,
) -> Vec<String> {
    let mut lines = vec![fit(&[(header.to_string(), Some(BOLD))], width, color)];
    for row in rows {
        let mut parts = vec![(row.addr.to_string(), None)];
        for (text, notable) in row.second.words() {
            parts.push((text, notable.then_some(YELLOW)));
        }
        parts.push((row.impairments.to_string(), None));
        lines.push(fit(&parts, width, color));
    }
    if clients > rows.len() {
        let more = format!("and {} more clients", clients - rows.len());
        lines.push(fit(&[(more, None)], width, color));
    }
    lines
}

/// `parts` two spaces apart, cut to `width` − 1 columns (the cut marked `…`), each coloured with
/// its code when `color`.
fn fit(parts: &[(String, Option<&str>)], width: usize, color: bool) -> String {
    let room = width.saturating_sub(1);
    let total: usize = parts.iter().map(|(t, _)| t.chars().count()).sum::<usize>()
        + 2 * parts.len().saturating_sub(1);
    let (mut left, cut) = match total > room {
        true => (room.saturating_sub(1), true),
        false => (total, false),
    };
    let mut line = String::new();
    for (i, (text, code)) in parts.iter().enumerate() {
        if left == 0 {
            break;
        }
        if i > 0 {
            let gap = left.min(2);
            line += &"  "[..gap];
            left -= gap;
        }
        let shown: String = text.chars().take(left).collect();
        left -= shown.chars().count();
        match code.filter(|_| color) {
            Some(code) => {
                let _ = write!(line, "{code}{shown}{RESET}");
            }
            None => line += &shown,
        }
    }
    if cut {
        line.push('…');
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second() -> Second {
        Second {
            snapshot_hz: Some(57.0),
            delivered: [Some((30.0, 12.48)), Some((87.0, 336.0))],
            loss: [Some(0.0), Some(0.05)],
            rtt_mean_ms: Some(160.24),
            rtt_max_ms: Some(190.0),
            gap_max_ms: Some(50.04),
            findings: 3,
        }
    }

    #[test]
    fn lines_show_each_client_and_fit_the_width() {
        let rows = [
            Row {
                addr: "127.0.0.1:40000".parse().unwrap(),
                impairments: "delay 80.000 ms ± 0.000 ms, loss 5.00%",
                second: second(),
            },
            Row {
                addr: "127.0.0.1:40001".parse().unwrap(),
                impairments: "no impairment",
                second: Second::default(),
            },
        ];
        let header = "3 s  3 clients  up 10 in, 0 dropped  down 600 in, 30 dropped  0 waiting";
        assert_eq!(
            render(header, &rows, 3, 250, false),
            [
                header,
                "127.0.0.1:40000  snapshots 57.0/s  up 30/s 12.5 kbit/s  down 87/s 336.0 kbit/s  \
                 loss up 0.00% down 5.00%  RTT 160.2 ms max 190.0 ms  gap max 50.0 ms  \
                 findings 3  delay 80.000 ms ± 0.000 ms, loss 5.00%",
                "127.0.0.1:40001  snapshots -  up -  down -  loss up - down -  RTT - max -  \
                 gap max -  findings 0  no impairment",
                "and 1 more clients",
            ]
        );
        assert_eq!(
            render(header, &rows[..1], 1, 60, false),
            [
                "3 s  3 clients  up 10 in, 0 dropped  down 600 in, 30 dropp…",
                "127.0.0.1:40000  snapshots 57.0/s  up 30/s 12.5 kbit/s  do…",
            ]
        );
        assert_eq!(
            render(header, &rows[..1], 1, 100, true)[1],
            "127.0.0.1:40000  snapshots 57.0/s  up 30/s 12.5 kbit/s  down 87/s 336.0 kbit/s  \
             \x1b[33mloss up 0.00% down\x1b[0m…"
        );
        assert_eq!(
            render(header, &[], 0, 200, true),
            [format!("\x1b[1m{header}\x1b[0m")]
        );
    }
}
