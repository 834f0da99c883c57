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
