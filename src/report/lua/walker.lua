-- ---------------------------------------------------------------------------------------------
-- Walker primitives (hand-written, fixed): the generated message functions below call these to
-- read one described field at a time, mirroring the Rust walker (src/message/walk.rs). Every
-- read is bounds-checked against the payload; nothing here raises a Lua error.
--
-- A walk context `c`: tvb, base (payload offset in tvb), len (payload length), pos (offset in
-- the payload), silent (true while only testing whether a layout fits: no tree, no findings),
-- rules (the dialect's walker rules: truncated, trailing, size, utf8, reserved_bit,
-- undefined_bit), le (numbers are little-endian), findings, facts (raw values by field role) and
-- at (their offsets), mask, entity, prev (for ascending checks), types (LevelInit archetype type
-- IDs read), archetypes (the conversation's announced type IDs, to check entity types against).
-- ---------------------------------------------------------------------------------------------
local function new_walk(tvb, base, len, silent, rules, le)
    return { tvb = tvb, base = base, len = len, pos = 0, silent = silent, rules = rules, le = le,
             findings = {}, facts = {}, at = {}, mask = 0, entity = 0, prev = nil, types = {} }
end

--- Records a broken rule at payload offset `at` (not while testing a layout).
local function finding(c, rule, at, len, detail)
    if c.silent then return end
    c.findings[#c.findings + 1] = { rule = rule, at = at, len = len, detail = detail }
end

local function truncated(c, f, needed)
    local left = c.len - c.pos
    finding(c, c.rules.truncated, c.pos, left, sfmt("%s needs %d bytes, %d left", f.name, needed, left))
    return nil
end

--- Shows the rest of the payload as undecoded bytes.
local function undecoded(c, t, at)
    if not c.silent and at < c.len then
        t:add(c.rules.undecoded_pf, c.tvb(c.base + at, c.len - at))
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

--- Adds `pf` over the range `r` in the walk's byte order (with an explicit value when given).
local function add_item(c, t, pf, r, value)
    if value ~= nil then
        if c.le then return t:add_le(pf, r, value) end
        return t:add(pf, r, value)
    end
    if c.le then return t:add_le(pf, r) end
    return t:add(pf, r)
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
                finding(c, c.rules.utf8, at, 1 + l, f.name)
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
                    finding(c, c.rules.utf8, at, w, f.name)
                end
            end
        end
    else
        local w = f.w
        if c.len - c.pos < w then return truncated(c, f, w) end
        local r = c.tvb(c.base + at, w)
        c.pos = c.pos + w
        local value
        local le = c.le
        if f.ty == "f32" then
            value = le and r:le_float() or r:float()
            raw = value
        elseif f.ty == "i16" or f.ty == "i32" then
            value = le and r:le_int() or r:int()
            raw = le and r:le_uint() or r:uint()
        else
            value = le and r:le_uint() or r:uint()
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
        -- An entity type the conversation's LevelInit did not announce (src/pipeline/rtype_arm.rs).
        if f.role == "EntityType" and c.archetypes and not f.div and f.ty ~= "f32" and value >= 0 then
            local sprite = c.archetypes.sprites[value]
            if sprite == nil and c.archetypes.count > 0 then
                finding(c, c.rules.unknown_entity_type, at, w, sfmt("%s %d", f.name, value))
            end
        end
        if not c.silent then
            local item
            if f.div then
                item = add_item(c, t, f.pf, r, value)
                add_item(c, item, f.raw_pf, r)
            elseif f.explicit then
                -- A ProtoField shared with a field of another integer type: given the value.
                item = add_item(c, t, f.pf, r, value)
            else
                item = add_item(c, t, f.pf, r)
            end
            if f.bits then
                for _, b in ipairs(f.bits) do add_item(c, item, b, r) end
            end
            if f.role == "EntityType" and c.archetypes and not f.div then
                local sprite = c.archetypes.sprites[value]
                if sprite then item:append_text(sfmt(" (sprite %q)", sprite)) end
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
        elseif f.role == "ArchetypeTypeId" and not c.silent then
            c.types[#c.types + 1] = raw
        elseif f.role == "ArchetypeSpriteId" and not c.silent and #c.types > 0 and f.ty == "str8" then
            local s = c.pos - at > 1 and c.tvb(c.base + at + 1, c.pos - at - 1):raw() or ""
            if utf8_valid(s) then
                c.sprite_of = c.sprite_of or {}
                c.sprite_of[#c.types] = s
            end
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

--- Decodes a message payload against its description, trying the known variants when the
--- document's layout does not fit (src/message/walk.rs `decode_message`). `prepare(c)` sets up
--- each walk that shows fields (e.g. the archetypes to check entity types against).
local function decode_message(m, tvb, base, len, tree, rules, le, prepare)
    if #m.variants > 0 then
        local probe = new_walk(tvb, base, len, true, rules, le)
        if not (m.body(probe, nil) and probe.pos == len) then
            for _, v in ipairs(m.variants) do
                local try = new_walk(tvb, base, len, true, rules, le)
                if v.fn(try, nil) and try.pos == len then
                    local c = new_walk(tvb, base, len, false, rules, le)
                    if prepare then prepare(c) end
                    finding(c, v.rule, 0, len, "")
                    v.fn(c, tree)
                    return c
                end
            end
        end
    end
    local c = new_walk(tvb, base, len, false, rules, le)
    if prepare then prepare(c) end
    local ok = m.body(c, tree)
    if ok and c.pos < len then undecoded(c, tree, c.pos) end
    if m.fixed and m.fixed ~= len then
        -- The size finding says it all: drop the truncation it caused.
        local kept = {}
        for _, fd in ipairs(c.findings) do
            if fd.rule ~= rules.truncated then kept[#kept + 1] = fd end
        end
        c.findings = kept
        finding(c, rules.size, 0, len, sfmt("expected %d bytes, found %d", m.fixed, len))
    elseif ok and c.pos < len then
        finding(c, rules.trailing, c.pos, len - c.pos, sfmt("%d bytes decoded, %d in the payload", c.pos, len))
    end
    return c
end

--- Adds the findings `list` (offsets relative to `base` in `tvb`) to `tree` as expert infos.
local function emit(tree, tvb, base, list)
    for _, fd in ipairs(list) do
        local text = "[" .. fd.rule .. "] " .. SUMMARY[fd.rule]
        if fd.detail and fd.detail ~= "" then text = text .. " (" .. fd.detail .. ")" end
        tree:add_tvb_expert_info(EX[fd.rule], clamp_range(tvb, base + fd.at, fd.len), text)
    end
end

--- The conversation of a datagram in `convs`, keyed as src/session/mod.rs keys them (the client's
--- address and port, and the server's address): one already there either way round (the server
--- answers from another port than it listens on), else the one its `c2s` direction (true: client
--- to server) makes.
local function conversation_key(convs, pinfo, c2s)
    local src, dst = tostring(pinfo.src), tostring(pinfo.dst)
    local as_client = src .. "|" .. tostring(pinfo.src_port) .. "|" .. dst
    local as_server = dst .. "|" .. tostring(pinfo.dst_port) .. "|" .. src
    if convs[as_client] ~= nil then return as_client end
    if convs[as_server] ~= nil then return as_server end
    if c2s then return as_client end
    return as_server
end
