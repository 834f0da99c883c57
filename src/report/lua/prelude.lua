-- ---------------------------------------------------------------------------------------------
-- Runtime helpers (hand-written, fixed): bytes, CRC-32, LZ4 block decompression, UTF-8, floats.
-- No field layout lives here; the layout is generated from the protocol description below.
-- Only Wireshark's `bit` module is used (no bit32, no Lua 5.3 operators), so this runs on
-- Wireshark 4.0 (Lua 5.2) to 4.4+ (Lua 5.4); the one exception, the CRC loop, is compiled with
-- load() on Lua 5.3+ only.
--
-- Speed: a datagram is read into a table of byte values once (`bytes_of`), and everything that
-- runs on every datagram (CRC, LZ4, the field walk) reads that table: no TvbRange and no C call
-- per byte or per field.
-- ---------------------------------------------------------------------------------------------
local band, bor, bxor, bnot, rshift, lshift, tobit =
    bit.band, bit.bor, bit.bxor, bit.bnot, bit.rshift, bit.lshift, bit.tobit
local sbyte, schar, sfmt, tconcat = string.byte, string.char, string.format, table.concat
local tunpack, tmove = table.unpack or unpack, table.move
local floor, INF = math.floor, math.huge

--- The bytes of the Lua string `s` (its first `n`) as a table: b[1] is the first byte.
local function bytes_of(s, n)
    if n <= 65536 then return { sbyte(s, 1, n) } end
    local b = {}
    for i = 1, n, 65536 do
        local part = { sbyte(s, i, i + 65535 < n and i + 65535 or n) }
        for k = 1, #part do b[i + k - 1] = part[k] end
    end
    return b
end

--- The Lua string of the bytes b[from..to].
local function string_of(b, from, to)
    local parts = {}
    while from <= to do
        local j = from + 4095
        if j > to then j = to end
        parts[#parts + 1] = schar(tunpack(b, from, j))
        from = j + 1
    end
    return tconcat(parts)
end

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
    CRC_TABLE[i] = u32(c)
end

--- CRC-32 of the datagram's bytes from..to (1-based), as an unsigned number: `s` holds them as
--- a Lua string, `b` as a table of byte values.
local crc32
if _VERSION == "Lua 5.1" or _VERSION == "Lua 5.2" then
    -- Without bit operators in the language, every table lookup and C call counts: eight bytes at
    -- a time ("slicing by 8": tables T0..T7 give each byte's contribution eight, seven, ...
    -- positions on), read with one string.byte, XORed with two calls; the rest byte by byte,
    -- with the byte XOR as a lookup in X (X[a * 256 + b] is a xor b).
    local T = { [0] = CRC_TABLE }
    for k = 1, 7 do
        T[k] = {}
        for i = 0, 255 do
            local prev = T[k - 1][i]
            T[k][i] = u32(bxor(floor(prev / 256), CRC_TABLE[prev % 256]))
        end
    end
    local T0, T1, T2, T3, T4, T5, T6, T7 = T[0], T[1], T[2], T[3], T[4], T[5], T[6], T[7]
    local X = {}
    for a = 0, 255 do
        for x = 0, 255 do X[a * 256 + x] = bxor(a, x) end
    end
    crc32 = function(s, _, from, to)
        local crc = 4294967295
        local i = from
        while i <= to - 7 do
            local b0, b1, b2, b3, b4, b5, b6, b7 = sbyte(s, i, i + 7)
            local x = bxor(crc, b0 + b1 * 256 + b2 * 65536 + b3 * 16777216)
            if x < 0 then x = x + 4294967296 end
            local x0 = x % 256
            x = (x - x0) / 256
            local x1 = x % 256
            x = (x - x1) / 256
            local x2 = x % 256
            crc = bxor(T7[x0], T6[x1], T5[x2], T4[(x - x2) / 256], T3[b4], T2[b5], T1[b6], T0[b7])
            if crc < 0 then crc = crc + 4294967296 end
            i = i + 8
        end
        while i <= to do
            local low = crc % 256
            crc = bxor((crc - low) / 256, T0[X[low * 256 + sbyte(s, i)]])
            if crc < 0 then crc = crc + 4294967296 end
            i = i + 1
        end
        return 4294967295 - crc
    end
else
    crc32 = load([[
        local T = ...
        return function(_, b, from, to)
            local crc = 0xFFFFFFFF
            for i = from, to do crc = (crc >> 8) ~ T[(crc ~ b[i]) & 0xFF] end
            return crc ~ 0xFFFFFFFF
        end]])(CRC_TABLE)
end

-- The LZ4 output buffer, reused by every datagram (the walk reads it; its strings are copied).
local LZ4_OUT = {}

--- Decompresses a raw LZ4 block (no frame, no size prefix) held in b[from..to] into LZ4_OUT.
--- Returns the decompressed length, or nil and a reason. Output is limited to `limit` bytes.
local function lz4_block(b, from, to, limit)
    if from > to then return nil, "empty block" end
    local out, o, i = LZ4_OUT, 0, from
    while true do
        if i > to then return nil, "block ends before a token" end
        local token = b[i]
        i = i + 1
        local lit = floor(token / 16)
        if lit == 15 then
            repeat
                if i > to then return nil, "block ends inside a literal length" end
                local x = b[i]
                i = i + 1
                lit = lit + x
            until x ~= 255
        end
        if i + lit - 1 > to then return nil, "literals run past the end of the block" end
        if o + lit > limit then return nil, "output larger than " .. limit .. " bytes" end
        if tmove then
            tmove(b, i, i + lit - 1, o + 1, out)
        else
            local d = i - 1 - o
            for k = o + 1, o + lit do out[k] = b[k + d] end
        end
        o = o + lit
        i = i + lit
        if i > to then break end -- the last sequence has literals only
        if i + 1 > to then return nil, "block ends inside a match offset" end
        local offset = b[i] + b[i + 1] * 256
        i = i + 2
        if offset == 0 or offset > o then return nil, "match offset " .. offset .. " out of range" end
        local mlen = token % 16
        if mlen == 15 then
            repeat
                if i > to then return nil, "block ends inside a match length" end
                local x = b[i]
                i = i + 1
                mlen = mlen + x
            until x ~= 255
        end
        mlen = mlen + 4
        if o + mlen > limit then return nil, "output larger than " .. limit .. " bytes" end
        if tmove and offset >= mlen then
            tmove(out, o - offset + 1, o - offset + mlen, o + 1)
        else
            for k = o + 1, o + mlen do out[k] = out[k - offset] end
        end
        o = o + mlen
    end
    return o
end

--- True when b[from..to] is valid UTF-8 (no overlongs, surrogates or values past U+10FFFF).
local function utf8_valid(b, from, to)
    local i = from
    while i <= to do
        local c = b[i]
        if c < 0x80 then
            i = i + 1
        else
            local extra, min, cp
            if c >= 0xC2 and c <= 0xDF then
                extra, min, cp = 1, 0x80, c - 0xC0
            elseif c >= 0xE0 and c <= 0xEF then
                extra, min, cp = 2, 0x800, c - 0xE0
            elseif c >= 0xF0 and c <= 0xF4 then
                extra, min, cp = 3, 0x10000, c - 0xF0
            else
                return false
            end
            if i + extra > to then return false end
            for k = 1, extra do
                local x = b[i + k]
                if x < 0x80 or x > 0xBF then return false end
                cp = cp * 64 + (x - 0x80)
            end
            if cp < min or cp > 0x10FFFF or (cp >= 0xD800 and cp <= 0xDFFF) then return false end
            i = i + extra + 1
        end
    end
    return true
end

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

--- A TvbRange inside `tvb` for [off, off+len), clamped so that it never raises an error.
local function clamp_range(tvb, off, len)
    local n = tvb:len()
    if off < 0 then off = 0 end
    if off > n then off = n end
    if len < 0 then len = 0 end
    if off + len > n then len = n - off end
    return tvb(off, len)
end
