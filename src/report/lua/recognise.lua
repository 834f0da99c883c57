-- ---------------------------------------------------------------------------------------------
-- Recognising the dialects (hand-written, fixed): the one place where the heuristic dissectors
-- decide whether a UDP payload is R-Type traffic, and of which dialect, by its first bytes as
-- `rtype-inspect` tells them apart (src/datagram/mod.rs `Dialect::detect`). The port and
-- "Decode As" dissectors use it too, to leave other traffic on their port to other dissectors.
-- ---------------------------------------------------------------------------------------------

--- The little-endian u32 at offset `at` (0-based) of the Lua string `s`, or nil past its end.
local function u32_le_at(s, at)
    if at + 4 > #s then return nil end
    local a, b, c2, d = sbyte(s, at + 1, at + 4)
    return a + b * 256 + c2 * 65536 + d * 16777216
end

--- Word `index` of a Cap'n Proto segment starting at byte 8 of `s`, as its low and high halves.
local function env_word(s, index)
    local at = 8 + index * 8
    if at + 8 > #s then return nil end
    return u32_le_at(s, at), u32_le_at(s, at + 4)
end

--- Whether the payload `s` (its first bytes at least) looks like rtnp: a JSON object, a bare
--- keep-alive, or a single-segment Cap'n Proto message (src/datagram/rtnp.rs `looks_like`).
local function rtnp_looks_like(s)
    if sbyte(s, 1) == 0x7B or s == C_RTNP.PING or s == C_RTNP.PONG then return true end
    local count, words = u32_le_at(s, 0), u32_le_at(s, 4)
    local lo = env_word(s, 0)
    if count ~= 0 or words == nil or lo == nil then return false end
    return words >= 1 and words <= C_RTNP.MAX_WORDS and lo % 4 == 0
end

--- The dialect of the UDP payload in `tvb` ("rtype", "rt" or "rtnp"), or nil: rtype by its
--- 4-byte magic, rt by its 2-byte magic in either byte order, rtnp by its shape.
local function recognise(tvb)
    local n = tvb:len()
    if n == 0 then return nil end
    local s = tvb:raw(0, n < 16 and n or 16)
    local x1, x2, x3, x4 = sbyte(s, 1, 4)
    if n >= 4 and x1 * 16777216 + x2 * 65536 + x3 * 256 + x4 == C.MAGIC then return "rtype" end
    if n >= 2 and (x1 * 256 + x2 == C_RT.MAGIC_BE or x1 * 256 + x2 == C_RT.MAGIC_LE) then return "rt" end
    if rtnp_looks_like(s) or (n > 16 and rtnp_looks_like(tvb:raw(0, n))) then return "rtnp" end
    return nil
end
