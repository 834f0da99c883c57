//! Timestamps as RFC 3339 text, without a calendar crate.

use super::render::{decimal_len, push_padded, push_spaces, push_u64};

/// `2026-01-01T00:00:00.000000000Z` for nanoseconds since the Unix epoch.
pub fn rfc3339(nanos: i64) -> String {
    let mut out = String::with_capacity(30);
    write_rfc3339(&mut out, nanos);
    out
}

/// Appends the RFC 3339 form of `nanos` to `out` (no allocation once `out` has room).
pub fn write_rfc3339(out: &mut String, nanos: i64) {
    push_whole_second(out, nanos.div_euclid(1_000_000_000));
    push_fraction(out, nanos.rem_euclid(1_000_000_000) as u64, 9);
    out.push('Z');
}

/// The text of a time's whole second, kept from one call to the next: a capture's datagrams
/// come many to a second, so the calendar (or the C library's time zone) is asked once a second.
#[derive(Default)]
struct WholeSecond {
    key: Option<(i64, bool)>,
    text: String,
}

impl WholeSecond {
    /// The text `write` makes of second `secs` (with `date` or not).
    fn get(&mut self, secs: i64, date: bool, write: impl FnOnce(&mut String)) -> &str {
        if self.key != Some((secs, date)) {
            self.key = Some((secs, date));
            self.text.clear();
            write(&mut self.text);
        }
        &self.text
    }
}

/// [`write_rfc3339`] for a stream of times.
#[derive(Default)]
pub struct Rfc3339(WholeSecond);

impl Rfc3339 {
    pub fn push(&mut self, out: &mut String, nanos: i64) {
        let secs = nanos.div_euclid(1_000_000_000);
        out.push_str(self.0.get(secs, true, |t| push_whole_second(t, secs)));
        push_fraction(out, nanos.rem_euclid(1_000_000_000) as u64, 9);
        out.push('Z');
    }
}

/// [`write_local`] for a stream of times.
#[derive(Default)]
pub struct Local(WholeSecond);

impl Local {
    pub fn push(&mut self, out: &mut String, nanos: i64, date: bool, decimals: u32) {
        let secs = nanos.div_euclid(1_000_000_000);
        out.push_str(self.0.get(secs, date, |t| push_local_second(t, secs, date)));
        push_fraction(out, nanos.rem_euclid(1_000_000_000) as u64, decimals);
    }
}

/// `2026-01-01T05:23:06`: the date and time of day of `secs` since the epoch, in UTC.
fn push_whole_second(out: &mut String, secs: i64) {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400) as u32);
    push_date(out, civil_from_days(days));
    out.push('T');
    push_hms(out, (rem / 3600, rem / 60 % 60, rem % 60));
}

// Nanoseconds in an i64 span the years 1677 to 2262: every part has a fixed number of digits
// (export writes one timestamp per datagram, so not through the formatting machinery).

/// `2026-01-01`.
fn push_date(out: &mut String, (y, m, d): (i64, u32, u32)) {
    push_padded(out, y as u64, 4);
    out.push('-');
    push_padded(out, m.into(), 2);
    out.push('-');
    push_padded(out, d.into(), 2);
}

/// `05:23:06`.
fn push_hms(out: &mut String, (h, mi, s): (u32, u32, u32)) {
    push_padded(out, h.into(), 2);
    out.push(':');
    push_padded(out, mi.into(), 2);
    out.push(':');
    push_padded(out, s.into(), 2);
}

/// `.179560`: `frac` nanoseconds (below a second) to `decimals` digits (6 or 9).
fn push_fraction(out: &mut String, frac: u64, decimals: u32) {
    out.push('.');
    push_padded(out, frac / 10u64.pow(9 - decimals), decimals as usize);
}

/// `packets -t`: how a datagram's time is written, with tshark's letters (`cli::args` gives the
/// letters and describes each).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimeFormat {
    Absolute,
    AbsoluteDate,
    #[default]
    Relative,
    Delta,
    DeltaDisplayed,
    Epoch,
}

/// The decimals of a capture's times, as tshark writes them: 9 for a capture with nanosecond
/// timestamps, 6 otherwise.
pub const fn decimals(nanosecond: bool) -> u32 {
    if nanosecond {
        9
    } else {
        6
    }
}

/// The width seconds are right-aligned to in the packet list: 10 with 6 decimals.
pub const fn seconds_width(decimals: u32) -> usize {
    decimals as usize + 4
}

/// Appends `nanos` as seconds with `decimals` digits (6 or 9), right-aligned to `width`, as
/// tshark writes `-t r`, `d`, `dd` (width 10) and `e` (width 0): exact, from the integer.
pub fn write_seconds(out: &mut String, nanos: i64, decimals: u32, width: usize) {
    let secs = nanos.unsigned_abs() / 1_000_000_000;
    let len = usize::from(nanos < 0) + decimal_len(secs) + 1 + decimals as usize;
    push_spaces(out, width.saturating_sub(len));
    if nanos < 0 {
        out.push('-');
    }
    push_u64(out, secs);
    push_fraction(out, nanos.unsigned_abs() % 1_000_000_000, decimals);
}

/// Appends `nanos` (since the epoch) as local time, with the date or not, to `decimals` digits
/// (6 or 9), as tshark's `-t ad` and `-t a` write it.
pub fn write_local(out: &mut String, nanos: i64, date: bool, decimals: u32) {
    push_local_second(out, nanos.div_euclid(1_000_000_000), date);
    push_fraction(out, nanos.rem_euclid(1_000_000_000) as u64, decimals);
}

/// `2026-01-01 05:23:06` (or without the date): `secs` since the epoch in local time.
fn push_local_second(out: &mut String, secs: i64, date: bool) {
    let (y, mo, d, h, mi, s) = local_civil(secs);
    if date {
        push_date(out, (y, mo, d));
        out.push(' ');
    }
    push_hms(out, (h, mi, s));
}

/// The local calendar date and time of `secs` since the epoch (the C library's time zone, TZ);
/// UTC where there is none.
fn local_civil(secs: i64) -> (i64, u32, u32, u32, u32, u32) {
    // time_t is 32 bits on some targets: a time out of its range is written in UTC.
    #[cfg(unix)]
    #[allow(irrefutable_let_patterns)]
    if let Ok(t) = libc::time_t::try_from(secs) {
        // SAFETY: localtime_r reads `t` and writes the zeroed struct we own; nothing else.
        let mut tm: libc::tm = unsafe { std::mem::zeroed() };
        if !unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
            let part = |v: libc::c_int| u32::try_from(v).unwrap_or(0);
            return (
                i64::from(tm.tm_year) + 1900,
                part(tm.tm_mon + 1),
                part(tm.tm_mday),
                part(tm.tm_hour),
                part(tm.tm_min),
                part(tm.tm_sec),
            );
        }
    }
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    let rem = rem as u32;
    (y, m, d, rem / 3600, rem / 60 % 60, rem % 60)
}

/// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_dates() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00.000000000Z");
        assert_eq!(
            super::rfc3339(1_767_225_600_000_000_001),
            "2026-01-01T00:00:00.000000001Z"
        );
        assert_eq!(
            super::rfc3339(951_782_400_000_000_000),
            "2000-02-29T00:00:00.000000000Z"
        );
    }

    #[test]
    fn seconds_as_tshark_writes_them() {
        let seconds = |nanos: i64, decimals: u32, width: usize| {
            let mut out = String::new();
            super::write_seconds(&mut out, nanos, decimals, width);
            out
        };
        assert_eq!(seconds(2_016_000, 6, 10), "  0.002016");
        assert_eq!(seconds(2_016_123, 9, 13), "  0.002016123");
        assert_eq!(seconds(2_016_999, 6, 10), "  0.002016", "cut, not rounded");
        assert_eq!(seconds(-1_500_000_000, 6, 10), " -1.500000");
        assert_eq!(
            seconds(1_795_325_308_443_701_123, 9, 0),
            "1795325308.443701123"
        );
        assert_eq!(seconds(i64::MIN, 9, 0), "-9223372036.854775808");
        let mut local = String::new();
        super::write_local(&mut local, 1_795_325_308_443_701_123, false, 9);
        assert!(local.ends_with(":28.443701123"), "{local}");
    }

    /// The same text as the formatting machinery writes, from 1677 to 2262.
    #[test]
    fn same_as_format() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut cached = super::Rfc3339::default();
        let mut local = super::Local::default();
        for _ in 0..100_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let nanos = state as i64 >> (state % 40);
            let nanos = if state.is_multiple_of(7) {
                i64::MIN + (nanos & 0xffff)
            } else {
                nanos
            };
            let secs = nanos.div_euclid(1_000_000_000);
            let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
            let (y, m, d) = super::civil_from_days(days);
            let expected = format!(
                "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:09}Z",
                rem / 3600,
                rem / 60 % 60,
                rem % 60,
                nanos.rem_euclid(1_000_000_000)
            );
            assert_eq!(super::rfc3339(nanos), expected, "{nanos}");
            // The stream writers, on a new second and then within it.
            for nanos in [nanos, nanos.saturating_add(1)] {
                let mut out = String::new();
                cached.push(&mut out, nanos);
                assert_eq!(out, super::rfc3339(nanos), "{nanos}");
                let date = state.is_multiple_of(2);
                let (mut out, mut expected) = (String::new(), String::new());
                local.push(&mut out, nanos, date, 6);
                super::write_local(&mut expected, nanos, date, 6);
                assert_eq!(out, expected, "{nanos}");
            }
        }
    }
}
