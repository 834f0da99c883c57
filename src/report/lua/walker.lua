-- ---------------------------------------------------------------------------------------------
-- Walker primitives (hand-written, fixed): the generated message functions below call these to
-- read one described field at a time, mirroring the Rust walker (src/message/walk.rs). Every
-- read is bounds-checked against the payload; nothing here raises a Lua error.
--
-- A walk context `c`: tvb, base (payload offset in tvb), len (payload length), pos (offset in
-- the payload), silent (true while only testing whether a layout fits: no tree, no findings),
-- findings, facts (raw values by field role) and at (their offsets), mask, entity, prev (for ascending checks).
-- ---------------------------------------------------------------------------------------------
local function new_walk(tvb, base, len, silent)
    return { tvb = tvb, base = base, len = len, pos = 0, silent = silent, findings = {},
             facts = {}, at = {}, mask = 0, entity = 0, prev = nil }
end

--- Records a broken rule at payload offset `at` (not while testing a layout).
local function finding(c, rule, at, len, detail)
    if c.silent then return end
    c.findings[#c.findings + 1] = { rule = rule, at = at, len = len, detail = detail }
end

local function truncated(c, f, needed)
    local left = c.len - c.pos
    finding(c, RULE.truncated, c.pos, left, sfmt("%s needs %d bytes, %d left", f.name, needed, left))
    return nil
end

--- Shows the rest of the payload as undecoded bytes.
local function undecoded(c, t, at)
    if not c.silent and at < c.len then
        t:add(PF.undecoded, c.tvb(c.base + at, c.len - at))
    end
end

--- Hands the rest of the payload to the tree as bytes and stops the walk.
local function skip_rest(c, t)
    undecoded(c, t, c.pos)
    c.pos = c.len
    return false
end

local function is_finite(v)
    return v == v and v ~= math.huge and v ~= -math.huge
end

--- Reads the described field `f` at the walk's position. Returns its raw value (0 for text),
--- or nil when the payload ends inside it (a truncation finding is recorded).
local function rd(c, t, f)
    local at = c.pos
    local raw
    if f.ty == "str8" then
        if c.len - c.pos < 1 then return truncated(c, f, 1) end
        local l = c.tvb(c.base + at, 1):uint()
        c.pos = c.pos + 1
        if c.len - c.pos < l then return truncated(c, f, l) end
        c.pos = c.pos + l
        raw = 0
        if not c.silent then
            local s = l > 0 and c.tvb(c.base + at + 1, l):raw() or ""
            local r = c.tvb(c.base + at, 1 + l)
            if utf8_valid(s) then
                t:add(f.pf, r, s)
            else
                t:add(f.pf, r, "<not UTF-8: " .. c.tvb(c.base + at + 1, l):bytes():tohex() .. ">")
                finding(c, RULE.utf8, at, 1 + l, f.name)
            end
        end
    elseif f.ty == "text" or f.ty == "bytes" then
        -- A fixed byte array: text up to the first NUL, or bytes.
        local w = f.w
        if c.len - c.pos < w then return truncated(c, f, w) end
        local r = c.tvb(c.base + at, w)
        c.pos = c.pos + w
        raw = 0
        if not c.silent then
            if f.ty == "bytes" then
                t:add(f.pf, r)
            else
                local s = r:raw()
                local nul = s:find("\0", 1, true)
                if nul then s = s:sub(1, nul - 1) end
                if utf8_valid(s) then
                    t:add(f.pf, r, s)
                else
                    t:add(f.pf, r, "<not UTF-8: " .. ByteArray.new(s, true):tohex() .. ">")
                    finding(c, RULE.utf8, at, w, f.name)
                end
            end
        end
    else
        local w = f.w
        if c.len - c.pos < w then return truncated(c, f, w) end
        local r = c.tvb(c.base + at, w)
        c.pos = c.pos + w
        local value
        if f.ty == "f32" then
            value = r:float()
            raw = value
        elseif f.ty == "i16" or f.ty == "i32" then
            value = r:int()
            raw = r:uint()
        else
            value = r:uint()
            raw = value
        end
        if f.div then value = value / f.div end
        if f.finite and not is_finite(value) then
            finding(c, f.finite, at, w, f.name)
        end
        if f.ascending and (f.ty == "f32" or f.div) then
            if c.prev ~= nil and value < c.prev then
                finding(c, f.ascending, at, w, sfmt("%s %g after %g", f.name, value, c.prev))
            end
            c.prev = value
        end
        if f.known and f.known[raw] == nil then
            finding(c, f.unknown_rule, at, w, sfmt("%s 0x%02x", f.name, raw))
        end
        if f.unused and band(raw, f.unused) ~= 0 then
            finding(c, f.unused_rule, at, w, sfmt("%s 0x%04x", f.name, raw))
        end
        if not c.silent then
            local item
            if f.div then
                item = t:add(f.pf, r, value)
                item:add(f.raw_pf, r)
            else
                item = t:add(f.pf, r)
            end
            if f.bits then
                for _, b in ipairs(f.bits) do item:add(b, r) end
            end
        end
    end
    if f.role then
        c.facts[f.role] = raw
        c.at[f.role] = at
        if f.role == "UpdateMask" then
            c.mask = raw
        elseif f.role == "EntityId" then
            c.entity = raw
        end
    end
    return raw
end

--- Opens a subtree spanning from the walk's position to the end of the payload; `close` trims it.
local function open(c, t, label)
    if c.silent then return nil end
    local item = t:add(c.tvb(c.base + c.pos, c.len - c.pos), label)
    return { item = item, start = c.pos }
end

local function close(c, g)
    if g then g.item:set_len(c.pos - g.start) end
end

--- Stops at a mask bit of unknown width (reserved or undefined): the rest is undecodable.
local function unknown_bit(c, t, bit_no, rule)
    local left = c.len - c.pos
    finding(c, rule, c.pos, left, sfmt("entity %d, bit %d, %d bytes left undecoded", c.entity, bit_no, left))
    return skip_rest(c, t)
end

--- Stops at a switch tag with no case.
local function unknown_case(c, t, tag, value, rule)
    finding(c, rule, c.pos - 1, 1, sfmt("%s %d", tag, value))
    return skip_rest(c, t)
end
