//! Numbers as C's printf writes them, which is how tshark writes a field's float: `%.6g` for a
//! single-precision field (FLT_DIG), `%.15g` for a double (DBL_DIG).

/// C's `%.{digits}g`: `digits` significant digits, exponent form below 1e-4 or from
/// 10^digits, trailing zeros dropped.
pub fn write_g(out: &mut String, f: f64, digits: usize) {
    use std::fmt::Write as _;
    if !f.is_finite() {
        let text = if f.is_nan() {
            "nan"
        } else if f < 0.0 {
            "-inf"
        } else {
            "inf"
        };
        out.push_str(text);
        return;
    }
    let digits = digits.max(1);
    let scientific = format!("{f:.*e}", digits - 1);
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i64 = exponent.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if exponent < -4 || exponent >= digits as i64 {
        let sign = if exponent < 0 { '-' } else { '+' };
        let _ = write!(
            out,
            "{}e{sign}{:02}",
            trim(mantissa),
            exponent.unsigned_abs()
        );
    } else {
        let decimals = (digits as i64 - 1 - exponent).max(0) as usize;
        out.push_str(&trim(&format!("{f:.decimals$}")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_printf_g() {
        for (f, digits, text) in [
            (1.399_197e-36, 6, "1.3992e-36"),
            (100.1, 15, "100.1"),
            (100.1f32 as f64, 6, "100.1"),
            (0.0001, 6, "0.0001"),
            (0.00001, 6, "1e-05"),
            (1234567.0, 6, "1.23457e+06"),
            (-2.5, 15, "-2.5"),
            (0.0, 6, "0"),
            (f64::NAN, 6, "nan"),
        ] {
            let mut out = String::new();
            write_g(&mut out, f, digits);
            assert_eq!(out, text, "{f} at {digits}");
        }
    }
}
