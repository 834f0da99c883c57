//! Packet timestamps to nanoseconds since the Unix epoch.
//!
//! Timestamps come from hostile files: every conversion saturates or clamps
//! instead of overflowing, whatever resolution an interface claims.

const NANOS_PER_SEC: i128 = 1_000_000_000;

/// Legacy pcap: seconds plus a fraction in µs (or ns with the nanosecond magic).
/// Cannot overflow: u32::MAX s is 4.3e18 ns, below i64::MAX.
pub(crate) fn pcap_nanos(sec: u32, frac: u32, nanosecond: bool) -> i64 {
    let frac_ns = if nanosecond {
        frac as i64
    } else {
        frac as i64 * 1000
    };
    sec as i64 * 1_000_000_000 + frac_ns
}

/// pcapng: a 64-bit count of units whose size is given by the interface's
/// `if_tsresol` (bit 7 clear: 10^-n s, set: 2^-n s), plus `if_tsoffset` seconds.
pub(crate) fn pcapng_nanos(units: u64, tsresol: u8, tsoffset_secs: i64) -> i64 {
    let units = units as i128;
    let exp = (tsresol & 0x7f) as u32;
    let nanos = if tsresol & 0x80 == 0 {
        if exp <= 9 {
            units * 10i128.pow(9 - exp)
        } else {
            match 10i128.checked_pow(exp - 9) {
                Some(div) => units / div,
                None => 0, // a unit smaller than 10^-47 s: every count rounds to 0
            }
        }
    } else {
        // units < 2^64 and 1e9 < 2^30: the product fits; exp <= 127 keeps the shift valid.
        (units * NANOS_PER_SEC) >> exp
    };
    let total = nanos + tsoffset_secs as i128 * NANOS_PER_SEC;
    total.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcap() {
        assert_eq!(pcap_nanos(1, 2, false), 1_000_002_000);
        assert_eq!(pcap_nanos(1, 2, true), 1_000_000_002);
        assert_eq!(
            pcap_nanos(u32::MAX, u32::MAX, false),
            4_294_967_295_000_000_000 + 4_294_967_295_000
        );
    }

    #[test]
    fn pcapng_resolutions() {
        assert_eq!(pcapng_nanos(1_500_000, 6, 0), 1_500_000_000);
        assert_eq!(pcapng_nanos(1_500_000_001, 9, 0), 1_500_000_001);
        assert_eq!(pcapng_nanos(15, 1, 0), 1_500_000_000);
        assert_eq!(pcapng_nanos(123_456_789_012, 12, 0), 123_456_789);
        assert_eq!(pcapng_nanos(u64::MAX, 127, 0), 0);
        // 2^-10 s units: 1024 units = 1 s, 1 unit = 976562.5 ns (floored).
        assert_eq!(pcapng_nanos(1024, 0x80 | 10, 0), 1_000_000_000);
        assert_eq!(pcapng_nanos(1, 0x80 | 10, 0), 976_562);
        assert_eq!(pcapng_nanos(u64::MAX, 0xff, 0), 0);
        assert_eq!(pcapng_nanos(2, 6, 10), 10_000_002_000);
        assert_eq!(pcapng_nanos(0, 6, -1), -1_000_000_000);
        // Absurd values clamp instead of overflowing.
        assert_eq!(pcapng_nanos(u64::MAX, 0, i64::MAX), i64::MAX);
        assert_eq!(pcapng_nanos(0, 0, i64::MIN), i64::MIN);
    }
}
