//! Timestamps as RFC 3339 text, without a calendar crate.

use super::render::push_padded;

/// `2026-01-01T00:00:00.000000000Z` for nanoseconds since the Unix epoch.
pub fn rfc3339(nanos: i64) -> String {
    let mut out = String::with_capacity(30);
    write_rfc3339(&mut out, nanos);
    out
}

/// Appends the RFC 3339 form of `nanos` to `out` (no allocation once `out` has room).
pub fn write_rfc3339(out: &mut String, nanos: i64) {
    let secs = nanos.div_euclid(1_000_000_000);
    let frac = nanos.rem_euclid(1_000_000_000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    // Nanoseconds in an i64 span the years 1677 to 2262: every part has a fixed number of
    // digits (export writes one timestamp per datagram, so not through the formatting machinery).
    push_padded(out, y as u64, 4);
    out.push('-');
    push_padded(out, m.into(), 2);
    out.push('-');
    push_padded(out, d.into(), 2);
    out.push('T');
    push_padded(out, (rem / 3600) as u64, 2);
    out.push(':');
    push_padded(out, (rem / 60 % 60) as u64, 2);
    out.push(':');
    push_padded(out, (rem % 60) as u64, 2);
    out.push('.');
    push_padded(out, frac as u64, 9);
    out.push('Z');
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

    /// The same text as the formatting machinery writes, from 1677 to 2262.
    #[test]
    fn same_as_format() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
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
        }
    }
}
