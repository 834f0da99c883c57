-- ---------------------------------------------------------------------------------------------
-- Recognising the dialects (hand-written, fixed), as src/datagram/mod.rs `Dialect::recognise`
-- does: first bytes that start like a dialect (`Dialect::detect`), then a header or framing that
-- is consistent beyond them (each dialect's `consistent`), read from the generated tables
-- (HEADERS, MSG and MSG_RT with their sizes, RTNP_MESSAGES). Ordinary UDP that merely starts the
-- same way (text starting "RT", a JSON broadcast, zeros like a segment table) is not claimed.
-- A datagram of a conversation already recognised is its dialect without asking this (see
-- `claim` below, with the conversations).
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

--- The dialect whose first bytes start the payload `s` (n bytes), or nil (`Dialect::detect`).
local function detect(s, n)
    local x1, x2, x3, x4 = sbyte(s, 1, 4)
    if n >= 4 and x1 * 16777216 + x2 * 65536 + x3 * 256 + x4 == C.MAGIC then return "rtype" end
    if n >= 2 and (x1 * 256 + x2 == C_RT.MAGIC_BE or x1 * 256 + x2 == C_RT.MAGIC_LE) then return "rt" end
    if rtnp_looks_like(s) then return "rtnp" end
    return nil
end

--- The big-endian value of the `a` = { offset, width } bytes of `s`.
local function be_at(s, a)
    local v = 0
    for i = a[1] + 1, a[1] + a[2] do v = v * 256 + sbyte(s, i) end
    return v
end

--- rtype's header of version 1 with a valid packet type and a known message type (of the
--- 17-byte layout; the caller checked it is there).
local function rtype_known(s)
    local at = HEADERS[1].at
    local ptype = be_at(s, at.PacketType)
    return be_at(s, at.VersionByte) % C.COMPRESSED_BIT == C.VERSION
        and (ptype == C.PACKET_CLIENT or ptype == C.PACKET_SERVER) and MSG[be_at(s, at.MessageType)] ~= nil
end

--- src/datagram/rtype.rs `consistent`: a Payload Len that agrees with the size (either layout),
--- a CRC that checks, or a known header.
local function rtype_consistent(s, n)
    if n < HEADERS[1].len or n < HEADERS[2].len + C.CRC_LEN then return false end
    for _, h in ipairs(HEADERS) do
        if n >= h.len and n == h.len + be_at(s, h.at.PayloadLen) + C.CRC_LEN then return true end
    end
    if be_at(s, { n - C.CRC_LEN, C.CRC_LEN }) == crc32(s, bytes_of(s, n), 1, n - C.CRC_LEN) then return true end
    return rtype_known(s)
end

--- The rt header's unsigned field `a` = { offset, width } of `s`, little-endian when `le`.
local function rt_at(s, a, le)
    if not le then return be_at(s, a) end
    local v = 0
    for i = a[1] + a[2], a[1] + 1, -1 do v = v * 256 + sbyte(s, i) end
    return v
end

--- src/datagram/rt.rs `consistent` (`whole`: the payload's size is known and must fit the type):
--- no reserved flag set and a packet type the document or real servers define.
local function rt_consistent(s, n, whole)
    if n < RT_HEADER.len then return false end
    local le = sbyte(s, 1) * 256 + sbyte(s, 2) == C_RT.MAGIC_LE
    if band(rt_at(s, RT_HEADER.at.Flags, le), C_RT.RESERVED_FLAGS) ~= 0 then return false end
    local m = MSG_RT[rt_at(s, RT_HEADER.at.MessageType, le)]
    return m ~= nil and (not whole or m.sizes == nil or m.sizes[n - RT_HEADER.len] == true)
end

-- src/datagram/rtnp.rs `consistent`, defined with the envelope reader and JSON parser (rtnp.lua).
local rtnp_consistent

--- The dialect the UDP payload in `tvb` proves by itself, or nil: `Dialect::recognise`, and of a
--- datagram the capture cut short, what it holds shows (src/pipeline/mod.rs `recognise_cut`).
local function recognise(tvb)
    local n = tvb:len()
    if n == 0 then return nil end
    -- The first bytes decide whether the rest is worth reading (most UDP is not).
    local dialect = detect(tvb:raw(0, n < 16 and n or 16), n)
    if dialect == nil then return nil end
    local s = tvb:raw(0, n)
    if tvb:reported_len() > n then
        if dialect == "rtype" then return n >= HEADERS[1].len and rtype_known(s) and dialect or nil end
        if dialect == "rt" then return rt_consistent(s, n, false) and dialect or nil end
        return dialect
    end
    if dialect == "rtype" then return rtype_consistent(s, n) and dialect or nil end
    if dialect == "rt" then return rt_consistent(s, n, true) and dialect or nil end
    return rtnp_consistent(s, n) and dialect or nil
end
