//! Writing numbers, strings and addresses straight into a `String`, without `fmt`: JSON strings
//! and keys, hex, the shortest float that reads back, padded and plain integers, IP addresses.

use std::fmt::Write as _;
use std::net::IpAddr;

use crate::proto::schema::{Field, Ty};

/// Appends `s` as a JSON string literal.
pub fn json_str(out: &mut String, s: &str) {
    out.push('"');
    // Runs of characters that need no escape (all of them, in field names) are copied whole.
    let mut rest = s;
    while let Some(i) = rest
        .bytes()
        .position(|b| b == b'"' || b == b'\\' || b < 0x20)
    {
        out.push_str(&rest[..i]);
        match rest.as_bytes()[i] {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b => {
                let _ = write!(out, "\\u{b:04x}");
            }
        }
        rest = &rest[i + 1..];
    }
    out.push_str(rest);
    out.push('"');
}

/// [`json_str`] of the longest start of `s` whose escaped form takes at most `max` bytes (the
/// quotes aside); returns that start's length in bytes.
pub fn json_str_within(out: &mut String, s: &str, max: usize) -> usize {
    let start = out.len();
    json_str(out, s);
    if out.len() - start <= max + 2 {
        return s.len();
    }
    out.truncate(start);
    let (mut used, mut end) = (0, 0);
    for (i, c) in s.char_indices() {
        let width = match c {
            '"' | '\\' | '\n' | '\r' | '\t' => 2,
            c if u32::from(c) < 0x20 => 6,
            c => c.len_utf8(),
        };
        if used + width > max {
            break;
        }
        used += width;
        end = i + c.len_utf8();
    }
    json_str(out, &s[..end]);
    end
}

/// Appends `"name":`, an object key from the protocol description or a profile. Their names
/// are [a-z0-9_] (profiles are validated on load), so the escape scan of [`json_str`] is skipped.
pub fn json_key(out: &mut String, name: &str) {
    debug_assert!(
        !name.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20),
        "key {name:?} needs escaping"
    );
    out.push('"');
    out.push_str(name);
    out.push_str("\":");
}

/// Appends bytes as lowercase hex.
pub fn hex(out: &mut String, bytes: &[u8]) {
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
}

/// Appends a float to JSON: shortest form at the field's own precision; JSON has no NaN or
/// infinity, so those become the strings "NaN", "inf", "-inf".
pub(super) fn json_float(out: &mut String, field: &Field, f: f64) {
    if !f.is_finite() {
        let text = if f.is_nan() {
            "NaN"
        } else if f > 0.0 {
            "inf"
        } else {
            "-inf"
        };
        json_str(out, text);
        return;
    }
    if field.ty == Ty::F32 {
        push_f32(out, f as f32);
    } else {
        push_f64(out, f);
    }
}

/// Appends `x` exactly as `write!(out, "{x}")` does, but through zmij, which is much cheaper than
/// std's float formatting (export writes many floats); zmij is in the tree through serde_json.
pub fn push_f64(out: &mut String, x: f64) {
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1 << 52) - 1);
    let places = if exp == 0 {
        exact_places(frac, -1074)
    } else {
        exact_places(frac | 1 << 52, exp - 1075)
    };
    if !x.is_finite() || !push_shortest(out, zmij::Buffer::new().format_finite(x), places) {
        let _ = write!(out, "{x}");
    }
}

/// [`push_f64`] for `f32`, whose `Display` gives the shortest digits at single precision.
pub fn push_f32(out: &mut String, x: f32) {
    if push_eighths(out, x) {
        return;
    }
    let bits = x.to_bits();
    let exp = ((bits >> 23) & 0xff) as i32;
    let frac = u64::from(bits & 0x7f_ffff);
    let places = if exp == 0 {
        exact_places(frac, -149)
    } else {
        exact_places(frac | 1 << 23, exp - 150)
    };
    if !x.is_finite() || !push_shortest(out, zmij::Buffer::new().format_finite(x), places) {
        let _ = write!(out, "{x}");
    }
}

/// Appends `x` when it is a whole number of eighths below 16384 (whole numbers, halves,
/// quarters, eighths: most of a game's positions, speeds and health), from integers; false
/// otherwise. Such a value is its own shortest form: its last place (of at most 3) is a 5, so a
/// number with fewer places is at least 0.005 away, and below 16384 an f32 is less than 0.0005
/// from the next one, so no shorter number reads back as `x`.
#[inline(always)]
pub(super) fn push_eighths(out: &mut String, x: f32) -> bool {
    // Exact: times a power of two; NaN and infinities are no whole number.
    let scaled = x * 8.0;
    let eighths = scaled as i32;
    if eighths as f32 != scaled || eighths.unsigned_abs() >= 16384 * 8 {
        return false;
    }
    if x.is_sign_negative() {
        out.push('-');
    }
    let eighths = eighths.unsigned_abs();
    push_u64(out, u64::from(eighths >> 3));
    // An eighth is 0.125: the fraction's digits are those of 125 × its eighths, without the
    // trailing zeros (.5, .25, .375).
    let thousandths = (eighths & 7) * 125;
    if thousandths != 0 {
        out.push('.');
        push_digit(out, thousandths / 100);
        if !thousandths.is_multiple_of(100) {
            push_digit(out, thousandths / 10);
            if !thousandths.is_multiple_of(10) {
                push_digit(out, thousandths);
            }
        }
    }
    true
}

/// Appends the last `width` (at most 9) decimal digits of `n`, zero-padded: a timestamp's parts.
pub fn push_padded(out: &mut String, n: u64, width: usize) {
    let power = 10u64.pow(width.min(9) as u32);
    // 10^width + n, less its leading 1: the zeros come with the digits, in one formatting.
    let mut digits = itoa::Buffer::new();
    out.push_str(&digits.format(power + n % power)[1..]);
}

/// Appends `n` spaces: padding to a column, copied from one slice rather than char by char.
pub fn push_spaces(out: &mut String, mut n: usize) {
    const SPACES: &str = "                                ";
    while n > 0 {
        let run = n.min(SPACES.len());
        out.push_str(&SPACES[..run]);
        n -= run;
    }
}

/// Digits of `n` in decimal.
pub fn decimal_len(n: u64) -> usize {
    n.checked_ilog10().unwrap_or(0) as usize + 1
}

/// Appends `n` (below 100 000) in decimal, one character at a time: for the few digits of most
/// values this is cheaper than formatting into a buffer and copying that.
#[inline(always)]
fn push_small(out: &mut String, n: u32) {
    if n >= 10_000 {
        push_digit(out, n / 10_000);
    }
    if n >= 1000 {
        push_digit(out, n / 1000);
    }
    if n >= 100 {
        push_digit(out, n / 100);
    }
    if n >= 10 {
        push_digit(out, n / 10);
    }
    push_digit(out, n);
}

/// Appends the last decimal digit of `n`.
#[inline(always)]
fn push_digit(out: &mut String, n: u32) {
    // A one-byte slice copies as one byte, where `String::push` of a char is not always inlined.
    const DIGITS: &str = "0123456789";
    let d = (n % 10) as usize;
    out.push_str(&DIGITS[d..d + 1]);
}

/// Decimal places in the exact value of `m * 2^e`: a binary fraction `odd / 2^k` has exactly
/// `k`, the last of them a 5.
fn exact_places(m: u64, e: i32) -> usize {
    if m == 0 {
        return 0;
    }
    (-(e + m.trailing_zeros() as i32)).max(0) as usize
}

/// Appends zmij's shortest form `s` of a value with `places` exact decimal places, rewritten as
/// `Display` writes it; false (nothing appended) where that is not a cheap rewrite.
///
/// Both give the same shortest digits, but zmij writes "1.0" for `Display`'s "1" and "1e-7" or
/// "1e+16" where `Display` never uses an exponent. And where the value lies exactly halfway
/// between two shortest candidates (one more exact decimal place than shown, that place a 5:
/// 2.00390625 as an f32), zmij rounds to even ("2.0039062") and std away from zero
/// ("2.0039063"): those few go through `write!` too.
fn push_shortest(out: &mut String, s: &str, places: usize) -> bool {
    // One pass over the (short) text for both the exponent and the point.
    let mut dot = None;
    for (i, b) in s.bytes().enumerate() {
        match b {
            b'e' => return false,
            b'.' => dot = Some(i),
            _ => {}
        }
    }
    let (s, shown) = match dot {
        Some(dot) if &s[dot..] == ".0" => (&s[..dot], 0),
        Some(dot) => (s, s.len() - dot - 1),
        None => (s, 0),
    };
    if places == shown + 1 {
        return false;
    }
    out.push_str(s);
    true
}

/// Appends an integer in decimal, as `write!(out, "{n}")` does but without the formatting
/// machinery (export writes dozens per datagram).
#[inline]
pub fn push_u64(out: &mut String, n: u64) {
    // Most of a game's numbers (ids, masks, counts, health) have a few digits.
    if n < 100_000 {
        push_small(out, n as u32);
    } else {
        push_large(out, n);
    }
}

/// [`push_u64`] of larger numbers.
#[inline(never)]
fn push_large(out: &mut String, n: u64) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// [`push_u64`] for signed integers.
#[inline]
pub fn push_i64(out: &mut String, n: i64) {
    if n < 0 {
        out.push('-');
    }
    push_u64(out, n.unsigned_abs());
}

/// Appends an address as its `Display` does; IPv4 without the formatting machinery.
pub fn push_ip(out: &mut String, ip: IpAddr) {
    match ip {
        IpAddr::V4(v4) => {
            for (i, octet) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    out.push('.');
                }
                push_u64(out, octet.into());
            }
        }
        IpAddr::V6(v6) => {
            let _ = write!(out, "{v6}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_f32(x: f32) {
        let mut s = String::new();
        push_f32(&mut s, x);
        assert_eq!(s, format!("{x}"), "f32 {:#010x}", x.to_bits());
    }

    fn check_f64(x: f64) {
        let mut s = String::new();
        push_f64(&mut s, x);
        assert_eq!(s, format!("{x}"), "f64 {:#018x}", x.to_bits());
    }

    #[test]
    fn padded_numbers_keep_their_last_digits() {
        let padded = |n: u64, width: usize| {
            let mut s = String::from("<");
            push_padded(&mut s, n, width);
            s
        };
        assert_eq!(padded(7, 2), "<07");
        assert_eq!(padded(2026, 4), "<2026");
        assert_eq!(padded(912_345, 6), "<912345");
        assert_eq!(padded(45, 9), "<000000045");
        assert_eq!(padded(1_795_325_308, 9), "<795325308");
        assert_eq!(padded(u64::MAX, 9), "<709551615");
        assert_eq!(padded(5, 0), "<");
        assert_eq!(padded(5, 12), "<000000005", "at most 9 digits");
        let mut s = String::new();
        push_spaces(&mut s, 70);
        assert_eq!(s, " ".repeat(70));
        assert_eq!((decimal_len(0), decimal_len(9), decimal_len(10)), (1, 1, 2));
        assert_eq!(decimal_len(u64::MAX), 20);
    }

    /// xorshift64: reproducible pseudo-random bits without a dependency.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn floats_as_display_writes_them() {
        for x in [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.1,
            1e-7,
            1e16,
            123456789.0,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            f32::from_bits(1),
            f32::from_bits(0x007f_ffff),
            f32::MAX,
            f32::MIN,
            f32::EPSILON,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            // Exactly halfway between two shortest candidates, where std rounds up and zmij to
            // even: 2.00390625, 131072.125, 0.000244140625.
            f32::from_bits(0x4000_4000),
            f32::from_bits(0x4800_0008),
            f32::from_bits(0x3980_0000),
        ] {
            check_f32(x);
        }
        for x in [
            0.0,
            -0.0,
            1e-7,
            1e16,
            123456789.0,
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            f64::MAX,
            f64::INFINITY,
            f64::NAN,
            f64::from(f32::MAX),
        ] {
            check_f64(x);
        }
        // Every f32 with up to 3 decimal places near the short path's bound (eighths), and
        // every whole number, half and quarter on both sides of it.
        for k in -(16_400 * 8)..16_400 * 8 {
            check_f32(k as f32 / 8.0);
        }
        for k in -(1 << 16)..1 << 16 {
            check_f32(k as f32 + 0.25);
            check_f32(k as f32 * 4.0 + 0.5);
        }
        // Fixed-point profile fields (tenths, hundredths) read as f32.
        for k in -100_000..100_000 {
            check_f32(k as f32 / 10.0);
            check_f32(k as f32 / 100.0);
        }
        // Divisor fields: i16 / 10 and i32 / 1000 in f64.
        for n in i16::MIN..=i16::MAX {
            check_f64(f64::from(n) / 10.0);
            check_f64(f64::from(n) / 1000.0);
        }
        let mut state = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..1_000_000 {
            check_f64(f64::from(xorshift(&mut state) as i32) / 1000.0);
        }
        // Any f32 bit pattern (NaN and infinities are written before this path).
        let mut tested = 0;
        while tested < 3_000_000 {
            let x = f32::from_bits(xorshift(&mut state) as u32);
            if x.is_finite() {
                check_f32(x);
                tested += 1;
            }
        }
    }

    #[test]
    fn zmij_path_is_taken_for_ordinary_values() {
        // The comparison above would pass through `write!` alone; make sure it exercised zmij.
        let mut s = String::new();
        let (mut a, mut b) = (zmij::Buffer::new(), zmij::Buffer::new());
        assert!(push_shortest(&mut s, a.format_finite(1.5f32), 1));
        assert!(push_shortest(&mut s, b.format_finite(-3.0f64), 0));
        assert_eq!(s, "1.5-3");
        // And that the short path above took the values it should, and only those.
        let mut s = String::new();
        assert!(push_eighths(&mut s, -97.125));
        assert!(push_eighths(&mut s, -0.0));
        assert!(push_eighths(&mut s, 16383.875));
        assert!(!push_eighths(&mut s, 16384.0));
        assert!(!push_eighths(&mut s, 0.0625));
        assert!(!push_eighths(&mut s, f32::NAN));
        assert!(!push_eighths(&mut s, f32::INFINITY));
        assert_eq!(s, "-97.125-016383.875");
    }

    #[test]
    fn integers_and_keys() {
        let mut state = 1;
        for n in [0, 1, 9, 10, 99, 100, u64::MAX, i64::MAX as u64]
            .into_iter()
            .chain((0..10_000).map(|_| xorshift(&mut state) >> (state % 64)))
        {
            let mut s = String::new();
            push_u64(&mut s, n);
            assert_eq!(s, n.to_string());
        }
        for n in (-100_100..100_100).chain([i64::MIN, i64::MAX, -99_999_999]) {
            let mut s = String::new();
            push_i64(&mut s, n);
            assert_eq!(s, n.to_string());
        }
        let mut s = String::new();
        push_i64(&mut s, i64::MIN);
        json_key(&mut s, "pos_x");
        assert_eq!(s, "-9223372036854775808\"pos_x\":");
        for ip in [
            "0.0.0.0",
            "10.0.0.1",
            "255.255.255.255",
            "192.168.1.20",
            "::1",
            "fe80::2",
        ] {
            let mut s = String::new();
            push_ip(&mut s, ip.parse().unwrap());
            assert_eq!(s, ip);
        }
    }
}
