-- ---------------------------------------------------------------------------------------------
-- Runtime helpers (hand-written, fixed): floats here; bytes, CRC-32, LZ4 block decompression,
-- UTF-8 and clamped ranges follow, from src/lua_runtime/ (shared with the dissectors generated
-- from dialect descriptions). No field layout lives here; the layout is generated from the
-- protocol description below. Only Wireshark's `bit` module is used (no bit32, no Lua 5.3
-- operators), so this runs on Wireshark 4.0 (Lua 5.2) to 4.4+ (Lua 5.4); the one exception, the
-- CRC loop, is compiled with load() on Lua 5.3+ only.
--
-- Speed: a datagram is read into a table of byte values once (`bytes_of`), and everything that
-- runs on every datagram (CRC, LZ4, the field walk) reads that table: no TvbRange and no C call
-- per byte or per field.
-- ---------------------------------------------------------------------------------------------
local band = bit.band
local sbyte, schar, sfmt, tconcat = string.byte, string.char, string.format, table.concat
local floor, INF = math.floor, math.huge

--- The IEEE 754 single-precision value of the 32-bit pattern with bytes x1 (sign) to x4.
local POW2 = {}
for e = -160, 130 do POW2[e] = 2 ^ e end
local function f32_of(x1, x2, x3, x4)
    local e = (x1 % 128) * 2 + floor(x2 / 128)
    local m = (x2 % 128) * 65536 + x3 * 256 + x4
    local v
    if e == 255 then
        if m ~= 0 then return 0 / 0 end
        v = INF
    elseif e == 0 then
        v = m * POW2[-149]
    else
        v = (m + 8388608) * POW2[e - 150]
    end
    if x1 >= 128 then return -v end
    return v
end
