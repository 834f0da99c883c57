-- CRC-32 (reflected polynomial 0xEDB88320, init and final XOR 0xFFFFFFFF, as zlib and Ethernet),
-- table-driven, with Wireshark's `bit` module: runs in Lua 5.2 and 5.4.

--- CRC-32 of the datagram's bytes from..to (1-based), as an unsigned number: `s` holds them as
--- a Lua string, `b` as a table of byte values.
local crc32
do
    local band, bxor, rshift, tobit = bit.band, bit.bxor, bit.rshift, bit.tobit
    local sbyte, floor = string.byte, math.floor

    --- Unsigned view of a 32-bit value produced by `bit` (which returns signed results).
    local function u32(x)
        return tobit(x) % 4294967296
    end

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

    if _VERSION == "Lua 5.1" or _VERSION == "Lua 5.2" then
        -- Without bit operators in the language, every table lookup and C call counts: eight
        -- bytes at a time ("slicing by 8": tables T0..T7 give each byte's contribution eight,
        -- seven, ... positions on), read with one string.byte, XORed with two calls; the rest
        -- byte by byte, with the byte XOR as a lookup in X (X[a * 256 + b] is a xor b).
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
                crc = bxor(T7[x0], T6[x1], T5[x2], T4[(x - x2) / 256],
                    T3[b4], T2[b5], T1[b6], T0[b7])
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
end
