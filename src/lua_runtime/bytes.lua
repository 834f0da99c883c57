-- Bytes: a Lua string as a table of byte values and back (runs in Lua 5.2 and 5.4).

--- The bytes of the Lua string `s` (its first `n`) as a table: b[1] is the first byte.
local bytes_of
--- The Lua string of the bytes b[from..to].
local string_of
do
    local sbyte, schar, tconcat = string.byte, string.char, table.concat
    local tunpack = table.unpack or unpack
    bytes_of = function(s, n)
        if n <= 65536 then return { sbyte(s, 1, n) } end
        local b = {}
        for i = 1, n, 65536 do
            local part = { sbyte(s, i, i + 65535 < n and i + 65535 or n) }
            for k = 1, #part do b[i + k - 1] = part[k] end
        end
        return b
    end

    string_of = function(b, from, to)
        local parts = {}
        while from <= to do
            local j = from + 4095
            if j > to then j = to end
            parts[#parts + 1] = schar(tunpack(b, from, j))
            from = j + 1
        end
        return tconcat(parts)
    end
end
