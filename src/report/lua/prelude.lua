-- ---------------------------------------------------------------------------------------------
-- Runtime helpers (hand-written, fixed): bit operations, CRC-32, LZ4 block decompression, UTF-8.
-- No field layout lives here; the layout is generated from the protocol description below.
-- Only Wireshark's `bit` module is used (no bit32, no Lua 5.3 operators), so this runs on
-- Wireshark 4.0 (Lua 5.2) to 4.4+ (Lua 5.4).
-- ---------------------------------------------------------------------------------------------
local band, bor, bxor, bnot, rshift, lshift, tobit =
    bit.band, bit.bor, bit.bxor, bit.bnot, bit.rshift, bit.lshift, bit.tobit
local sbyte, schar, sfmt, tconcat = string.byte, string.char, string.format, table.concat
local tunpack = table.unpack or unpack

--- Unsigned view of a 32-bit value produced by `bit` (which returns signed results).
local function u32(x)
    return tobit(x) % 4294967296
end

-- CRC-32 (reflected polynomial 0xEDB88320, init and final XOR 0xFFFFFFFF), table-driven.
local CRC_TABLE = {}
for i = 0, 255 do
    local c = i
    for _ = 1, 8 do
        if band(c, 1) ~= 0 then
            c = bxor(rshift(c, 1), 0xEDB88320)
        else
            c = rshift(c, 1)
        end
    end
    CRC_TABLE[i] = c
end

--- CRC-32 of the first `n` bytes of the Lua string `s`, as an unsigned number.
local function crc32(s, n)
    local crc = tobit(0xFFFFFFFF)
    for i = 1, n do
        crc = bxor(rshift(crc, 8), CRC_TABLE[band(bxor(crc, sbyte(s, i)), 0xFF)])
    end
    return u32(bnot(crc))
end

--- Joins a table of byte values into a Lua string.
local function bytes_to_string(out, n)
    local parts = {}
    local i = 1
    while i <= n do
        local j = i + 4095
        if j > n then j = n end
        parts[#parts + 1] = schar(tunpack(out, i, j))
        i = j + 1
    end
    return tconcat(parts)
end

--- Decompresses a raw LZ4 block (no frame, no size prefix) held in the Lua string `src`.
--- Returns the decompressed Lua string, or nil and a reason. Output is limited to `limit` bytes.
local function lz4_block(src, limit)
    local n = #src
    if n == 0 then return nil, "empty block" end
    local out, o, i = {}, 0, 1
    while true do
        if i > n then return nil, "block ends before a token" end
        local token = sbyte(src, i)
        i = i + 1
        local lit = rshift(token, 4)
        if lit == 15 then
            repeat
                if i > n then return nil, "block ends inside a literal length" end
                local b = sbyte(src, i)
                i = i + 1
                lit = lit + b
            until b ~= 255
        end
        if i + lit - 1 > n then return nil, "literals run past the end of the block" end
        if o + lit > limit then return nil, "output larger than " .. limit .. " bytes" end
        for k = 0, lit - 1 do
            out[o + 1 + k] = sbyte(src, i + k)
        end
        o = o + lit
        i = i + lit
        if i > n then break end -- the last sequence has literals only
        if i + 1 > n then return nil, "block ends inside a match offset" end
        local offset = sbyte(src, i) + sbyte(src, i + 1) * 256
        i = i + 2
        if offset == 0 or offset > o then return nil, "match offset " .. offset .. " out of range" end
        local mlen = band(token, 15)
        if mlen == 15 then
            repeat
                if i > n then return nil, "block ends inside a match length" end
                local b = sbyte(src, i)
                i = i + 1
                mlen = mlen + b
            until b ~= 255
        end
        mlen = mlen + 4
        if o + mlen > limit then return nil, "output larger than " .. limit .. " bytes" end
        local from = o + 1 - offset
        for k = 0, mlen - 1 do
            out[o + 1 + k] = out[from + k]
        end
        o = o + mlen
    end
    return bytes_to_string(out, o)
end

--- True when the Lua string `s` is valid UTF-8 (no overlongs, surrogates or values past U+10FFFF).
local function utf8_valid(s)
    local i, n = 1, #s
    while i <= n do
        local c = sbyte(s, i)
        local extra, min
        if c < 0x80 then
            extra = 0
        elseif c >= 0xC2 and c <= 0xDF then
            extra, min = 1, 0x80
        elseif c >= 0xE0 and c <= 0xEF then
            extra, min = 2, 0x800
        elseif c >= 0xF0 and c <= 0xF4 then
            extra, min = 3, 0x10000
        else
            return false
        end
        if extra > 0 then
            if i + extra > n then return false end
            local cp = band(c, rshift(0x7F, extra + 1))
            for k = 1, extra do
                local b = sbyte(s, i + k)
                if band(b, 0xC0) ~= 0x80 then return false end
                cp = cp * 64 + band(b, 0x3F)
            end
            if cp < min or cp > 0x10FFFF or (cp >= 0xD800 and cp <= 0xDFFF) then return false end
        end
        i = i + extra + 1
    end
    return true
end

--- A TvbRange inside `tvb` for [off, off+len), clamped so that it never raises an error.
local function clamp_range(tvb, off, len)
    local n = tvb:len()
    if off < 0 then off = 0 end
    if off > n then off = n end
    if len < 0 then len = 0 end
    if off + len > n then len = n - off end
    return tvb(off, len)
end
