//! Hand-written Lua that both generated Wireshark dissectors carry: the bundled dialects'
//! (`report::lua`) and a described dialect's (`describe::lua`). Each chunk is self-contained (it
//! takes what it needs from Lua's libraries and Wireshark's `bit` module itself), so a generator
//! emits only the chunks it calls, in any order, and runs in Wireshark 4.0 (Lua 5.2) to 4.6
//! (Lua 5.4). Written once here so that a fix reaches both dissectors.

use std::fmt::Write as _;

/// `bytes_of(s, n)`: a Lua string as a table of byte values; `string_of(b, from, to)` back.
pub const BYTES: &str = include_str!("lua_runtime/bytes.lua");
/// `crc32(s, b, from, to)`: the IEEE CRC-32 of bytes from..to (1-based, inclusive), given as both
/// the string `s` and its byte table `b`.
pub const CRC32: &str = include_str!("lua_runtime/crc32.lua");
/// `lz4_block(b, from, to, limit)`: a raw LZ4 block decompressed into the table `LZ4_OUT`.
pub const LZ4: &str = include_str!("lua_runtime/lz4.lua");
/// `utf8_valid(b, from, to)`: whether bytes from..to of a byte table are valid UTF-8.
pub const UTF8: &str = include_str!("lua_runtime/utf8.lua");
/// `clamp_range(tvb, off, len)`: a TvbRange that never raises, clamped to the buffer.
pub const RANGE: &str = include_str!("lua_runtime/range.lua");

/// A double-quoted Lua string literal for `s` (any bytes).
pub fn lua_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for b in s.bytes() {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            0x20..=0x7E => out.push(b as char),
            _ => {
                let _ = write!(out, "\\{b:03}");
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lua_strings_are_escaped() {
        assert_eq!(lua_str("a\"b\\c\n→"), "\"a\\\"b\\\\c\\n\\226\\134\\146\"");
    }
}
