//! Arbitrary text into the snapshot profile parser: a profile is accepted or rejected with a
//! message, never a panic. The parser leaks the strings of accepted fields by design (fields are
//! `'static`, one profile per process), so leak detection is off for this target
//! (`-detect_leaks=0`); the 64 KiB input limit bounds what one parse can leak.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtype_inspect::proto::profile::{BitSlot, Profile, MASK_BITS};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(profile) = Profile::parse(text) {
        assert_eq!(profile.bits.len(), MASK_BITS);
        for slot in &profile.bits {
            if let BitSlot::Field(f) = slot {
                assert!(f.width().is_some(), "a profile field has a fixed width");
                assert!(f.divisor >= 1);
            }
        }
    }
});
