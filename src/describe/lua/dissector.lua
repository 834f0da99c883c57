-- ---------------------------------------------------------------------------------------------
-- The interpreter (hand-written, fixed): walks each datagram as the tables above lay it out,
-- field by field, as rtype-inspect's interpreter (src/describe/decode.rs) does: the same fields,
-- the same rules broken at the same bytes. Every read is checked against the bytes there are
-- first, so that a datagram, however broken, raises expert infos and never a Lua error.
-- Offsets are 0-based; byte tables (`b`) are 1-based: the byte at offset o is b[o + 1].
-- ---------------------------------------------------------------------------------------------
local floor, sfmt, tconcat = math.floor, string.format, table.concat

--- Powers of two, made by doubling so that they are integers in Lua 5.3+ (2 ^ n is a float).
local POW2 = { [0] = 1 }
for i = 1, 56 do POW2[i] = POW2[i - 1] * 2 end

--- A number as rtype-inspect prints it: integers without a decimal point in Lua 5.2 and 5.4.
local function num(v)
    if v == floor(v) and v > -9.2e18 and v < 9.2e18 then return sfmt("%d", v) end
    return tostring(v)
end

--- The bytes b[at + 1 .. at + len] as rtype-inspect prints them: "4D 47".
local function hex(b, at, len)
    local parts = {}
    for i = 1, len do parts[i] = sfmt("%02X", b[at + i]) end
    return tconcat(parts, " ")
end

--- Whether the `len` bytes at `at` are exactly `bytes`.
local function same(b, at, len, bytes)
    if len ~= #bytes then return false end
    for i = 1, len do
        if b[at + i] ~= bytes[i] then return false end
    end
    return true
end

--- Raises rule `rule` at byte `at` of the datagram: a `<id>.violation` item holding the rule's
--- ID, with the rule's expert info saying what was expected and what was found.
local function problem(c, rule, at, field, expected, found)
    local item = c.mt:add(F_VIOLATION, clamp_range(c.tvb, at, 0), RULE_IDS[rule])
    item:set_generated()
    local where = field ~= "" and field .. ": " or ""
    item:add_proto_expert_info(E[rule], where .. "expected " .. expected .. ", found " .. found)
end

--- A problem met by a walk: inside a decompressed body, it is placed where the body starts.
local function fault(w, rule, at, field, expected, found)
    problem(w.c, rule, w.dec and w.base or at, field, expected, found)
end

--- Moves to the next whole byte after bit fields.
local function align(w)
    if w.bit > 0 then w.bit, w.pos = 0, w.pos + 1 end
end

--- Counts one more field of the datagram: past MAX_ITEMS the walk stops.
local function push(w, fd, at)
    local c = w.c
    if c.items >= MAX_ITEMS then
        fault(w, R.truncated, at, fd.name, "at most " .. MAX_ITEMS .. " fields", "more")
        return false
    end
    c.items = c.items + 1
    return true
end

--- The offset of `n` bytes at the walk's position, which moves past them; nil (and the
--- `truncated` rule) when the body ends first.
local function take(w, fd, n)
    align(w)
    local left = w.e - w.pos
    if left < 0 then left = 0 end
    if left < n then
        fault(w, R.truncated, w.pos, fd.name, num(n) .. " bytes", num(left))
        return nil
    end
    local at = w.pos
    w.pos = at + n
    return at
end

--- The byte size of a `str`, raw bytes or user type: `size`, `size-eos`, or 0.
local function size(w, fd)
    align(w)
    local s = fd.size
    if s == nil then return 0 end
    if s == EOS then
        local left = w.e - w.pos
        return left > 0 and left or 0
    end
    local n = eval(s, w.V)
    if n ~= nil and n >= 0 then return n end
    fault(w, R.valid, w.pos, fd.name, "a size of 0 or more", n and num(n) or "a field that was not read")
    return nil
end

local function check_contents(w, fd, at, len)
    if fd.contents and not same(w.b, at, len, fd.contents) then
        fault(w, R.contents, at, fd.name, fd.contents_hex, hex(w.b, at, len))
    end
end

--- Checks a string's bytes [at, at + len) against its encoding.
local function check_text(w, fd, at, len)
    local b, ok = w.b, true
    if fd.ascii then
        for i = at + 1, at + len do
            if b[i] >= 0x80 then
                ok = false
                break
            end
        end
    else
        ok = utf8_valid(b, at + 1, at + len)
    end
    if not ok then
        fault(w, R.encoding, at, fd.name, fd.ascii and "ASCII" or "UTF-8", hex(b, at, len < 16 and len or 16))
    end
end

local function accepts(valid, v)
    if valid.eq ~= nil and v ~= valid.eq then return false end
    if valid.min ~= nil and v < valid.min then return false end
    if valid.max ~= nil and v > valid.max then return false end
    if valid.any then
        for _, x in ipairs(valid.any) do
            if x == v then return true end
        end
        return false
    end
    return true
end

--- An integer read: noted for expressions, checked against `contents`, `valid` and `enum`.
local function number(w, fd, at, len, v)
    w.V[fd.var] = v
    check_contents(w, fd, at, len)
    local valid = fd.valid
    if valid and not accepts(valid, v) then fault(w, valid.rule, at, fd.name, valid.expected, num(v)) end
    if fd.enum and ENUMS[fd.enum][v] == nil then
        fault(w, R.enum, at, fd.name, "a value of enum `" .. ENUM_IDS[fd.enum] .. "`", num(v))
    end
    return push(w, fd, at)
end

--- Adds a number for Wireshark to read from its bytes, in its byte order.
local function add_read(w, fd, range)
    if fd.le then return w.tree:add_le(fd.f, range) end
    return w.tree:add(fd.f, range)
end

--- Shows an integer's fixed-point value (`divisor`) after its raw one.
local function scaled(item, fd, v)
    if fd.div then item:append_text(sfmt(" (%.10g)", v / fd.div)) end
end

-- The readers, by kind; each returns false when the walk must stop.
local READ = {}
local walk

function READ.int(w, fd)
    local n = fd.w
    local at = take(w, fd, n)
    if not at then return false end
    local b, v = w.b, 0
    if fd.le then
        for i = at + n, at + 1, -1 do v = v * 256 + b[i] end
    else
        for i = at + 1, at + n do v = v * 256 + b[i] end
    end
    -- Lua 5.3+ wraps 8-byte values into signed integers already, as rtype-inspect sees them.
    if fd.signed and n < 8 and v >= POW2[8 * n - 1] then
        v = v - POW2[8 * n]
    elseif fd.signed and v >= 9223372036854775808.0 then
        v = v - 18446744073709551616.0
    end
    if not number(w, fd, at, n, v) then return false end
    scaled(add_read(w, fd, clamp_range(w.tvb, at, n)), fd, v)
    return true
end

function READ.float(w, fd)
    local at = take(w, fd, fd.w)
    if not at or not push(w, fd, at) then return false end
    add_read(w, fd, clamp_range(w.tvb, at, fd.w))
    return true
end

function READ.bits(w, fd)
    local width = fd.w
    local need = floor((w.bit + width + 7) / 8)
    if w.e - w.pos < need then
        fault(w, R.truncated, w.pos, fd.name, width .. " bits", "fewer")
        return false
    end
    local b, v = w.b, 0
    for i = 0, width - 1 do
        local bit = w.bit + i
        local byte = b[w.pos + floor(bit / 8) + 1]
        if BITS_BE then
            v = v * 2 + floor(byte / POW2[7 - bit % 8]) % 2
        else
            v = v + floor(byte / POW2[bit % 8]) % 2 * POW2[i]
        end
    end
    local at, total = w.pos, w.bit + width
    w.pos, w.bit = at + floor(total / 8), total % 8
    if not number(w, fd, at, need, v) then return false end
    scaled(w.tree:add(fd.f, clamp_range(w.tvb, at, need), v), fd, v)
    return true
end

function READ.str(w, fd)
    local n = size(w, fd)
    if not n then return false end
    local at = take(w, fd, n)
    if not at then return false end
    check_contents(w, fd, at, n)
    local len = 0
    while len < n and w.b[at + len + 1] ~= 0 do len = len + 1 end
    check_text(w, fd, at, len)
    if not push(w, fd, at) then return false end
    w.tree:add_packet_field(fd.f, clamp_range(w.tvb, at, n), fd.ascii and ENC_ASCII or ENC_UTF_8)
    return true
end

function READ.strz(w, fd)
    align(w)
    local b, len = w.b, nil
    for i = w.pos + 1, w.e do
        if b[i] == 0 then
            len = i - w.pos - 1
            break
        end
    end
    if not len then
        fault(w, R.truncated, w.pos, fd.name, "a NUL-terminated string", "no NUL before the end")
        return false
    end
    local at = w.pos
    w.pos = at + len + 1
    check_text(w, fd, at, len)
    if not push(w, fd, at) then return false end
    w.tree:add_packet_field(fd.f, clamp_range(w.tvb, at, len + 1), fd.ascii and ENC_ASCII or ENC_UTF_8)
    return true
end

function READ.bytes(w, fd)
    local n = size(w, fd)
    if not n then return false end
    local at = take(w, fd, n)
    if not at then return false end
    check_contents(w, fd, at, n)
    if not push(w, fd, at) then return false end
    w.tree:add(fd.f, clamp_range(w.tvb, at, n))
    return true
end

--- A user type: a subtree, its fields read within its `size` when it has one.
function READ.user(w, fd)
    align(w)
    local at = w.pos
    if not push(w, fd, at) then return false end
    local item = w.tree:add(fd.f, clamp_range(w.tvb, at, 0))
    local saved_end = w.e
    if fd.size ~= nil then
        local n = size(w, fd)
        if not n then return false end
        if w.e - w.pos < n then
            fault(w, R.truncated, w.pos, fd.name, num(n) .. " bytes", num(w.e - w.pos))
            return false
        end
        w.e = w.pos + n
    end
    local tree = w.tree
    w.tree = item
    local ok = walk(w, fd.inner)
    w.tree = tree
    align(w)
    if w.e ~= saved_end then w.pos, w.e = w.e, saved_end end
    item:set_len(w.pos - at)
    return ok
end

--- A field as often as its `repeat` says; false when the walk must stop.
local function repeated(w, fd)
    local read, rep = READ[fd.k], fd.rep
    if rep == nil then return read(w, fd) end
    local n = MAX_REPEAT
    if rep ~= EOS then
        n = eval(rep, w.V)
        if n == nil then
            fault(w, R.truncated, w.pos, fd.name, "a count", "a field that was not read")
            return false
        end
        if n < 0 or n > MAX_REPEAT then
            fault(w, R.valid, w.pos, fd.name, "a count from 0 to " .. MAX_REPEAT, num(n))
            return false
        end
    end
    for _ = 1, n do
        if rep == EOS and w.pos >= w.e then break end
        local pos, bit = w.pos, w.bit
        if not read(w, fd) then return false end
        if w.pos == pos and w.bit == bit then break end
    end
    return true
end

--- Reads the fields of a sequence in order, skipping those whose `if` is false.
walk = function(w, list)
    for i = 1, #list do
        local fd = list[i]
        local on = true
        if fd.cond then
            local v = eval(fd.cond, w.V)
            if v == nil then
                fault(w, R.truncated, w.pos, fd.name, "the fields its `if` reads", "a field that was not read")
                return false
            end
            on = v ~= 0
        end
        if on and not repeated(w, fd) then return false end
    end
    return true
end

--- A walk over bytes b (of the datagram, or of a decompressed body starting at `base` in it)
--- from `pos` to `e`, adding to the current message's tree.
local function walker(c, b, tvb, base, dec, pos, e, V)
    return { c = c, b = b, tvb = tvb, base = base, dec = dec, pos = pos, bit = 0, e = e, V = V, tree = c.mt }
end

--- Checks the checksum of the message at `at` whose footer is at `footer_at`.
local function check_sum(c, V, at, footer_at)
    local k = D.checksum
    local stated = rawget(V, k.var)
    if stated == nil then return end
    local n = c.n
    local from = k.from < 0 and n + k.from or k.from
    local to = k.to < 0 and n + k.to or k.to
    if from < 0 or to < 0 or from > n or to > n or from > to then return end
    local computed = checksum(c, from, to)
    if k.mask then stated, computed = stated % k.mask, computed % k.mask end
    if stated ~= computed then
        local field_at = (k.footer and footer_at or at) + k.offset
        problem(c, R.checksum, field_at, k.name, sfmt("0x%x", computed), sfmt("0x%x", stated))
    end
end

--- Checks the length field of the message at `at` (header values `hv`, body from `body_start`)
--- and returns the body's length.
local function check_length(c, hv, at, body_start)
    local rest = c.n - body_start
    local natural = rest
    if not D.many then natural = rest > D.footer_len and rest - D.footer_len or 0 end
    local L = D.length
    if not L or hv[L.field] == nil then return natural end
    local stated = hv[L.field] + L.adjust
    local around = D.header_len + D.footer_len
    local expected, found = stated, natural
    if L.covers == "message" then
        expected, found = stated - around, natural + around
    elseif L.covers == "datagram" then
        expected, found = stated - at - around, c.n
    end
    local fits
    if D.many then fits = expected >= 0 and expected + D.footer_len <= rest else fits = expected == natural end
    if not fits then problem(c, R.length, at + L.offset, L.name, num(stated) .. " bytes", num(found) .. " bytes") end
    if expected >= 0 and expected < natural then return expected end
    return natural
end

--- Reads the body [body_start, body_end) of message `m` (nil: an unknown type), decompressed
--- when its header says so.
local function body(c, hv, V, m, at, body_start, body_end)
    local b, tvb, dec, e = c.b, c.tvb, false, body_end
    local comp = D.compression
    if comp and hv[comp.flag] ~= nil and band(hv[comp.flag], comp.mask) ~= 0 then
        local out, len, out_tvb = inflate(c, body_start, body_end, comp.original and hv[comp.original])
        if out then
            b, tvb, dec, e = out, out_tvb or c.tvb, true, len
        else
            problem(c, R.compression, body_start, "", "a body that decompresses", len)
            b = nil
        end
    end
    if m == nil then
        local code = hv[D.type_field]
        if code ~= nil then
            local shown = code >= 0 and sfmt("0x%02x", code) or num(code)
            problem(c, R["unknown-type"], at + D.type_offset, D.type_name, "a message type the description names", shown)
        end
        return
    end
    if c.from_client ~= nil and m.dir and c.from_client ~= (m.dir == "client-to-server") then
        problem(c, R.direction, at, "", m.dir, c.from_client and "client-to-server" or "server-to-client")
    end
    if not b then return end
    local w = walker(c, b, tvb, body_start, dec, dec and 0 or body_start, e, V)
    if walk(w, m.seq) then
        align(w)
        if w.pos < w.e then
            fault(w, R.trailing, w.pos, "", "the end of the body", num(w.e - w.pos) .. " more bytes")
        end
    end
end

--- Decodes the datagram in `c`, message after message; returns nothing, raises what it finds.
local function decode(c)
    local b, n = c.b, c.n
    c.mt = c.root:add(P, clamp_range(c.tvb, 0, n))
    if D.magic and not same(b, 0, n < #D.magic and n or #D.magic, D.magic) then
        problem(c, R.magic, 0, "", D.magic_hex, hex(b, 0, n < #D.magic and n or #D.magic))
        return
    end
    local at = 0
    while true do
        local V = setmetatable({}, UNREAD)
        local seen = {}
        c.seen[#c.seen + 1] = seen
        if at > 0 then c.mt = c.root:add(P, clamp_range(c.tvb, at, n - at)) end
        local header = walker(c, b, c.tvb, 0, false, at, n, V)
        if not walk(header, HEADER) then return end
        local hv = {}
        for i, var in ipairs(D.header_vars) do hv[i] = rawget(V, var) end
        local body_start = header.pos
        seen.code = hv[D.type_field]
        local m = seen.code ~= nil and MESSAGES[seen.code] or nil
        seen.m = m
        if m then
            c.mt:add(F_MESSAGE, clamp_range(c.tvb, at + D.type_offset, D.type_width), m.name):set_generated()
            c.mt:append_text(", " .. m.name)
        end
        local body_end = body_start + check_length(c, hv, at, body_start)
        body(c, hv, V, m, at, body_start, body_end)
        local nxt = body_end
        if D.footer_len > 0 then
            local w = walker(c, b, c.tvb, 0, false, body_end, n, V)
            if not walk(w, FOOTER) then return end
            nxt = w.pos
        end
        if checksum then check_sum(c, V, at, body_end) end
        if not D.many or nxt >= n or nxt <= at or #c.seen >= MAX_REPEAT then return end
        c.mt:set_len(nxt - at)
        at = nxt
    end
end

--- The Info column: the message names, `+`-joined, as `rtype-inspect dialect packets`.
local function info(seen)
    local names = {}
    for i, s in ipairs(seen) do
        if s.m then
            names[i] = s.m.name
        elseif s.code ~= nil then
            names[i] = "unknown " .. (s.code >= 0 and sfmt("0x%02x", s.code) or num(s.code))
        else
            names[i] = "?"
        end
    end
    if #names == 0 then return "?" end
    return tconcat(names, "+")
end

-- ---------------------------------------------------------------------------------------------
-- Recognition and registration. A conversation (its two UDP endpoints) is the dialect's from
-- its first datagram the dialect claims (by its magic and ports, as rtype-inspect's `claims`);
-- its later datagrams are decoded whatever they hold. Its client is the side not on one of the
-- dialect's ports, else the side that sent first: the `direction` rule needs it.
-- ---------------------------------------------------------------------------------------------
local PORTS = {}
for _, port in ipairs(D.ports) do PORTS[port] = true end
-- At most this many conversations are remembered, as by rtype-inspect's `dialect` commands.
local MAX_CONVERSATIONS = 65536
local conversations, conversation_count = {}, 0

function P.init()
    conversations, conversation_count = {}, 0
end

local function claims(b, n, src_port, dst_port)
    if #D.ports > 0 and not PORTS[src_port] and not PORTS[dst_port] then return false end
    if n < D.min_length then return false end
    return not D.magic or same(b, 0, #D.magic, D.magic)
end

--- Decodes the datagram when it is the dialect's; returns whether it was.
local function dissect(tvb, pinfo, tree)
    local n = tvb:len()
    local s = tvb:raw(0, n)
    local b = bytes_of(s, n)
    local src = tostring(pinfo.src) .. " " .. pinfo.src_port
    local dst = tostring(pinfo.dst) .. " " .. pinfo.dst_port
    local key = src < dst and src .. " " .. dst or dst .. " " .. src
    local conversation = conversations[key]
    -- Frames before the first claimed one stay unclaimed when Wireshark dissects them again.
    if not conversation or pinfo.number < conversation.first then
        if not claims(b, n, pinfo.src_port, pinfo.dst_port) then return false end
        if not conversation and conversation_count < MAX_CONVERSATIONS then
            conversation = { first = pinfo.number, client = PORTS[pinfo.src_port] and dst or src }
            conversations[key] = conversation
            conversation_count = conversation_count + 1
        end
    end
    local from_client
    if conversation then from_client = conversation.client == src end
    pinfo.cols.protocol:set(D.id)
    local c = { tvb = tvb, s = s, b = b, n = n, root = tree, from_client = from_client, items = 0, seen = {} }
    decode(c)
    pinfo.cols.info:set(info(c.seen))
    return true
end

function P.dissector(tvb, pinfo, tree)
    if dissect(tvb, pinfo, tree) then return tvb:len() end
    return 0
end

local udp_port = DissectorTable.get("udp.port")
for _, port in ipairs(D.ports) do udp_port:add(port, P) end
if D.magic then P:register_heuristic("udp", dissect) end
