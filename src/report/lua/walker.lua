-- ---------------------------------------------------------------------------------------------
-- Walker primitives (hand-written, fixed): the generated message functions below call these to
-- read one described field at a time, mirroring the Rust walker (src/message/walk.rs). Every
-- read is bounds-checked against the payload; nothing here raises a Lua error.
--
-- A walk context `c` (one per use, reused by every datagram; see `walk_reset`):
--   b, o, len, pos  the payload is b[o + 1 .. o + len] (a table of byte values), pos the offset
--                   of the next field in it;
--   le              numbers are little-endian;
--   vis             the tree is drawn (items get byte ranges and subtrees); when a tree is only
--                   faked (filtering, colouring) fields are added flat, by value; when there is no
--                   tree at all the walk functions get t == nil and only read and check;
--   tvb, base       the Tvb holding the payload at `base`, for byte ranges (any tree);
--   silent          only testing whether a layout fits: no tree, no findings;
--   cut             the capture holds less than the datagram (snap length): running out of bytes
--                   stops the walk without a finding;
--   rules           the dialect's walker rules: truncated, trailing, size, utf8, reserved_bit,
--                   undefined_bit, unknown_entity_type, undecoded_pf;
--   findings        broken rules (nil until the first);
--   facts           mask, entity, prev (ascending checks), entity_count, entities_at,
--                   total_chunks, chunk_index, types and sprite_of (LevelInit archetypes read),
--                   archetypes (the conversation's, to check entity types against).
--
-- Field descriptors are flat tables indexed by the generated field number: FPF (ProtoField),
-- FNAME (name in findings), FBITS (flag-bit ProtoFields), FRAW (raw ProtoField of a scaled
-- field), FDIV (its divisor), FEXPLICIT (a ProtoField shared with a field of another integer
-- type, always given its value).
-- ---------------------------------------------------------------------------------------------


local function walk_context(rules)
    return { rules = rules, b = nil, o = 0, len = 0, pos = 0, le = false, vis = false, silent = false }
end

--- Points `c` at the payload b[o + 1 .. o + len] for a new walk.
local function walk_reset(c, b, o, len, le, tvb, base, vis, silent)
    c.b, c.o, c.len, c.pos, c.le = b, o, len, 0, le
    c.tvb, c.base, c.vis, c.silent = tvb, base, vis, silent
    c.cut = false
    c.findings, c.mask, c.entity, c.prev = nil, 0, 0, nil
    c.entity_count, c.entities_at, c.total_chunks, c.chunk_index = nil, nil, nil, nil
    c.types, c.sprite_of, c.archetypes, c.item = nil, nil, nil, nil
end

--- Records a broken rule at payload offset `at` (not while testing a layout).
local function finding(c, rule, at, len, detail)
    if c.silent then return end
    local list = c.findings
    if list == nil then
        list = {}
        c.findings = list
    end
    list[#list + 1] = { rule = rule, at = at, len = len, detail = detail }
end

--- The payload ends inside field `f`, which needs `needed` bytes: a truncation, or the end of
--- what the capture holds.
local function truncated(c, f, needed)
    if c.cut then return nil end
    local left = c.len - c.pos
    finding(c, c.rules.truncated, c.pos, left, sfmt("%s needs %d bytes, %d left", FNAME[f], needed, left))
    return nil
end

--- Adds integer field `f` read at payload offset `p` (`w` bytes, value `v`) to tree `t`.
local function add_int(c, t, f, p, w, v)
    local pf = FPF[f]
    local item
    if c.vis then
        local r = c.tvb(c.base + p, w)
        if FEXPLICIT[f] then
            item = c.le and t:add_le(pf, r, v) or t:add(pf, r, v)
        else
            item = c.le and t:add_le(pf, r) or t:add(pf, r)
        end
        local bits = FBITS[f]
        if bits then
            for k = 1, #bits do
                if c.le then item:add_le(bits[k], r) else item:add(bits[k], r) end
            end
        end
        c.item = item
    else
        t:add(pf, v)
        local bits = FBITS[f]
        if bits then
            for k = 1, #bits do t:add(bits[k], v) end
        end
    end
end

--- Adds the hidden item of a role's field of its own (`rtype.entity.id`, ProtoField `pf`) for the
--- integer just read (`w` bytes, value `v`): filters find every entity id by one name.
local function role_item(c, t, pf, w, v)
    if t == nil then return end
    local item
    if c.vis then
        local r = c.tvb(c.base + c.pos - w, w)
        item = c.le and t:add_le(pf, r, v) or t:add(pf, r, v)
    else
        item = t:add(pf, v)
    end
    item:set_hidden()
end

local function U8(c, t, f)
    local p = c.pos
    if p >= c.len then return truncated(c, f, 1) end
    local v = c.b[c.o + p + 1]
    c.pos = p + 1
    if t then add_int(c, t, f, p, 1, v) end
    return v
end

local function U16(c, t, f)
    local p = c.pos
    if c.len - p < 2 then return truncated(c, f, 2) end
    local b, o = c.b, c.o + p
    local v
    if c.le then v = b[o + 2] * 256 + b[o + 1] else v = b[o + 1] * 256 + b[o + 2] end
    c.pos = p + 2
    if t then add_int(c, t, f, p, 2, v) end
    return v
end

local function U32(c, t, f)
    local p = c.pos
    if c.len - p < 4 then return truncated(c, f, 4) end
    local b, o = c.b, c.o + p
    local v
    if c.le then
        v = ((b[o + 4] * 256 + b[o + 3]) * 256 + b[o + 2]) * 256 + b[o + 1]
    else
        v = ((b[o + 1] * 256 + b[o + 2]) * 256 + b[o + 3]) * 256 + b[o + 4]
    end
    c.pos = p + 4
    if t then add_int(c, t, f, p, 4, v) end
    return v
end

--- Signed integers: the tree gets the signed value; the walk, like the Rust one, the raw bits.
local function I16(c, t, f)
    local v = U16(c, nil, f)
    if v and t then add_int(c, t, f, c.pos - 2, 2, v >= 32768 and v - 65536 or v) end
    return v
end

local function I32(c, t, f)
    local v = U32(c, nil, f)
    if v and t then add_int(c, t, f, c.pos - 4, 4, v >= 2147483648 and v - 4294967296 or v) end
    return v
end

--- The f32 at payload offset p.
local function f32_at(c, p)
    local b, o = c.b, c.o + p
    if c.le then return f32_of(b[o + 4], b[o + 3], b[o + 2], b[o + 1]) end
    return f32_of(b[o + 1], b[o + 2], b[o + 3], b[o + 4])
end

--- A float nothing checks: decoded only for a tree. Returns 0.
local function F32(c, t, f)
    local p = c.pos
    if c.len - p < 4 then return truncated(c, f, 4) end
    c.pos = p + 4
    if t then
        if c.vis then
            local r = c.tvb(c.base + p, 4)
            c.item = c.le and t:add_le(FPF[f], r) or t:add(FPF[f], r)
        else
            t:add(FPF[f], f32_at(c, p))
        end
    end
    return 0
end

--- A float a check needs: returns its value.
local function F32V(c, t, f)
    local p = c.pos
    local v = F32(c, t, f)
    if v == nil then return nil end
    return f32_at(c, p)
end

--- A fixed-point integer (a profile's divisor): shown scaled, with the raw integer beneath.
--- `read` is U8/U16/U32, `signed` its sign bit (0: unsigned). Returns the raw value.
local function SCALED(c, t, f, read, w, signed)
    local raw = read(c, nil, f)
    if raw == nil or t == nil then return raw end
    local v = raw
    if signed > 0 and v >= signed then v = v - 2 * signed end
    local p = c.pos - w
    if c.vis then
        local r = c.tvb(c.base + p, w)
        local item = c.le and t:add_le(FPF[f], r, v / FDIV[f]) or t:add(FPF[f], r, v / FDIV[f])
        if c.le then item:add_le(FRAW[f], r) else item:add(FRAW[f], r) end
        c.item = item
    else
        t:add(FPF[f], v / FDIV[f])
        t:add(FRAW[f], v)
    end
    return raw
end

--- Adds text field `f` over payload bytes [p, p + w), showing the bytes [from, to] (1-based in
--- c.b) as its text, or `<not UTF-8: hex>` with a finding.
local function add_text(c, t, f, p, w, from, to)
    local valid = utf8_valid(c.b, from, to)
    if not valid then finding(c, c.rules.utf8, p, w, FNAME[f]) end
    if t == nil then return end
    local s = from <= to and string_of(c.b, from, to) or ""
    if not valid then s = "<not UTF-8: " .. ByteArray.new(s, true):tohex() .. ">" end
    if c.vis then
        c.item = t:add(FPF[f], c.tvb(c.base + p, w), s)
    else
        t:add(FPF[f], s)
    end
end

--- A u8 length, then that many bytes of UTF-8 text. Returns 0.
local function STR8(c, t, f)
    local p = c.pos
    if c.len - p < 1 then return truncated(c, f, 1) end
    local l = c.b[c.o + p + 1]
    c.pos = p + 1
    if c.len - c.pos < l then return truncated(c, f, l) end
    c.pos = c.pos + l
    if not c.silent then add_text(c, t, f, p, 1 + l, c.o + p + 2, c.o + p + 1 + l) end
    return 0
end

--- A fixed array of `w` bytes holding text up to its first NUL. Returns 0.
local function TEXT(c, t, f, w)
    local p = c.pos
    if c.len - p < w then return truncated(c, f, w) end
    c.pos = p + w
    if not c.silent then
        local from, to = c.o + p + 1, c.o + p + w
        for i = from, to do
            if c.b[i] == 0 then
                to = i - 1
                break
            end
        end
        add_text(c, t, f, p, w, from, to)
    end
    return 0
end

--- A fixed array of `w` bytes shown as bytes. Returns 0.
local function BYTES(c, t, f, w)
    local p = c.pos
    if c.len - p < w then return truncated(c, f, w) end
    c.pos = p + w
    if t then t:add(FPF[f], c.tvb(c.base + p, w)) end
    return 0
end

-- Checks on a value just read (`w` bytes, ending at the walk's position).
local function check_finite(c, f, v, w, rule)
    if v ~= v or v == INF or v == -INF then finding(c, rule, c.pos - w, w, FNAME[f]) end
end

local function check_ascending(c, f, v, w, rule)
    if c.prev ~= nil and v < c.prev then
        finding(c, rule, c.pos - w, w, sfmt("%s %g after %g", FNAME[f], v, c.prev))
    end
    c.prev = v
end

local function check_known(c, f, v, w, known, rule)
    if known[v] == nil then finding(c, rule, c.pos - w, w, sfmt("%s 0x%02x", FNAME[f], v)) end
end

local function check_unused(c, f, v, w, mask, rule)
    if band(v, mask) ~= 0 then finding(c, rule, c.pos - w, w, sfmt("%s 0x%04x", FNAME[f], v)) end
end

--- An entity type: checked against the conversation's LevelInit archetypes
--- (src/pipeline/rtype_arm.rs), and named by the sprite of its archetype in a drawn tree.
local function entity_type(c, f, v, w)
    local a = c.archetypes
    if a == nil then return end
    local sprite = a.sprites[v]
    if sprite == nil and a.count > 0 then
        finding(c, c.rules.unknown_entity_type, c.pos - w, w, sfmt("%s %d", FNAME[f], v))
    end
    if sprite and c.vis and c.item then c.item:append_text(sfmt(" (sprite %q)", sprite)) end
end

--- A LevelInit archetype's type ID, and the sprite ID after it (str8 at payload offset p).
local function archetype_type(c, v)
    if c.silent then return end
    c.types = c.types or {}
    c.types[#c.types + 1] = v
end

local function archetype_sprite(c, p)
    if c.silent or c.types == nil then return end
    local l = c.b[c.o + p + 1]
    local from, to = c.o + p + 2, c.o + p + 1 + l
    if utf8_valid(c.b, from, to) then
        c.sprite_of = c.sprite_of or {}
        c.sprite_of[#c.types] = from <= to and string_of(c.b, from, to) or ""
    end
end

--- Shows payload bytes from `at` to the end as undecoded.
local function undecoded(c, t, at)
    if t and at < c.len then
        t:add(c.rules.undecoded_pf, c.tvb(c.base + at, c.len - at))
    end
end

--- Hands the rest of the payload to the tree as bytes and stops the walk.
local function skip_rest(c, t)
    undecoded(c, t, c.pos)
    c.pos = c.len
    return false
end

--- A subtree for a list or an item, labelled `label .. n .. (suffix)`: a text item spanning from
--- the walk's position to the end of the payload (`close` trims it) in a drawn tree; the tree
--- itself when the tree is only faked.
local function open(c, t, label, n, suffix)
    if not c.vis then return t end
    return t:add(c.tvb(c.base + c.pos, c.len - c.pos), label .. n .. (suffix or ""))
end

local function close(c, item, start)
    if c.vis then item:set_len(c.pos - start) end
end

--- The width of the fields the update mask `m` gates, when a walk without a tree may pass over
--- them in one step (none needs reading but the entity type); false otherwise. Kept by mask
--- value in the profile's `skip` table, with the offset just past the entity type (s.e).
local function skip_width(s, m)
    local w, e, d, value = 0, false, s.d, 1
    for bit = 0, 15 do
        if m % (value * 2) >= value then
            local x = d[bit]
            if not x then
                w = false
                break
            end
            if x < 0 then
                w = w - x
                e = w
            else
                w = w + x
            end
        end
        value = value * 2
    end
    s.w[m], s.e[m] = w, e
    return w
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

-- Walk contexts for testing variants (never drawn, never reporting).
local PROBE = walk_context(nil)

--- Decodes a message payload (b[o + 1 .. o + len]) against its description into the walk
--- context `c` (reset by the caller with `walk_reset`), trying the known variants when the
--- document's layout does not fit (src/message/walk.rs `decode_message`). Returns `c`.
local function decode_message(m, c, t)
    local variants = m.variants
    if #variants > 0 then
        local p = PROBE
        p.rules = c.rules
        walk_reset(p, c.b, c.o, c.len, c.le, nil, 0, false, true)
        p.cut = c.cut
        if not (m.body(p, nil) and p.pos == c.len) then
            for k = 1, #variants do
                local v = variants[k]
                walk_reset(p, c.b, c.o, c.len, c.le, nil, 0, false, true)
                p.cut = c.cut
                if v.fn(p, nil) and p.pos == c.len then
                    finding(c, v.rule, 0, c.len, "")
                    v.fn(c, t)
                    return c
                end
            end
        end
    end
    local ok = m.body(c, t)
    local len = c.len
    if ok and c.pos < len then undecoded(c, t, c.pos) end
    if c.cut then
        -- The capture holds less than the datagram: its size cannot be judged.
    elseif m.fixed and m.fixed ~= len then
        -- The size finding says it all: drop the truncation it caused.
        if c.findings then
            local kept = {}
            for _, fd in ipairs(c.findings) do
                if fd.rule ~= c.rules.truncated then kept[#kept + 1] = fd end
            end
            c.findings = kept
        end
        finding(c, c.rules.size, 0, len, sfmt("expected %d bytes, found %d", m.fixed, len))
    elseif ok and c.pos < len then
        finding(c, c.rules.trailing, c.pos, len - c.pos, sfmt("%d bytes decoded, %d in the payload", c.pos, len))
    end
    return c
end

--- Walks message `m` into the walk context `c` (reset by the caller) and tree `mt`. Of a datagram
--- the capture cut (`missing` bytes not captured), what it holds is shown, not judged: its
--- findings are dropped (capture.snaplen says why).
local function walk_message(m, c, mt, tvb, missing)
    c.cut = missing > 0
    decode_message(m, c, mt)
    if missing > 0 then
        c.findings = nil
        if mt then mt:add(tvb(tvb:len(), 0), sfmt("[%d bytes not captured]", missing)) end
    end
end

--- What every datagram driver starts from: the datagram's captured and reported lengths, whether
--- the tree is drawn, and the tree to add to (nil without one).
local function datagram_view(tvb, root, mode)
    return tvb:len(), tvb:reported_len(), mode == 2, mode > 0 and root or nil
end

--- Adds findings (payload offsets relative to `base` in `tvb`) to `tree` as expert infos: over
--- their bytes in a drawn tree, to the packet otherwise.
local function emit(tree, tvb, base, list, vis)
    if list == nil then return end
    for _, fd in ipairs(list) do
        local text = "[" .. fd.rule .. "] " .. SUMMARY[fd.rule]
        if fd.detail and fd.detail ~= "" then text = text .. " (" .. fd.detail .. ")" end
        if vis and tvb then
            tree:add_tvb_expert_info(EX[fd.rule], clamp_range(tvb, base + fd.at, fd.len), text)
        else
            tree:add_proto_expert_info(EX[fd.rule], text)
        end
    end
end
