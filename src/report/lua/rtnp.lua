-- ---------------------------------------------------------------------------------------------
-- rtnp datagram driver (hand-written, fixed): the Cap'n Proto envelope read as
-- src/datagram/rtnp.rs reads it, its Text handed to Wireshark's JSON dissector, and the checks a
-- single datagram shows: size, envelope, JSON validity and limits, keep-alive text, "type"
-- present and first, known type, and the message's schema (the generated RTNP_MESSAGES table,
-- from src/proto/rtnp.rs). The JSON is parsed here with serde_json's strictness, so that what
-- the dissector calls invalid is what rtype-inspect calls invalid.
-- ---------------------------------------------------------------------------------------------

local json_dissector = Dissector.get("json")

--- Where the envelope's Text is (offset and length without the NUL), or nil, the offset of the
--- problem and what it is (src/datagram/rtnp.rs `read_envelope`).
local function read_envelope(s)
    local n = #s
    local count, words = u32_le_at(s, 0), u32_le_at(s, 4)
    if count == nil or words == nil then return nil, 0, "segment table" end
    if count ~= 0 then return nil, 0, "segment count (one segment expected)" end
    if 8 + words * 8 > n then return nil, 4, "segment size (past the datagram's end)" end
    -- Offsets are relative to the word after the pointer, signed 30-bit counts of words.
    local function target(index, lo)
        local signed = lo >= 2147483648 and lo - 4294967296 or lo
        local w = index + 1 + math.floor(signed / 4)
        if w < 0 or w > words then return nil end
        return w
    end
    local root_lo, root_hi
    if words >= 1 then root_lo, root_hi = env_word(s, 0) end
    if root_lo == nil then return nil, 8, "root pointer (empty segment)" end
    if root_lo % 4 ~= 0 or (root_lo == 0 and root_hi == 0) then return nil, 8, "root pointer (not a struct)" end
    local data_words = root_hi % 65536
    local pointer_words = math.floor(root_hi / 65536)
    local start = target(0, root_lo)
    if start == nil then return nil, 8, "root pointer (outside the segment)" end
    if pointer_words == 0 then return nil, 8, "root struct (no pointer for the Text)" end
    local text_pointer = start + data_words
    local at = 8 + text_pointer * 8
    local lo, hi
    if text_pointer < words then lo, hi = env_word(s, text_pointer) end
    if lo == nil then return nil, 8, "root struct (outside the segment)" end
    if lo == 0 and hi == 0 then return nil, at, "Text pointer (null)" end
    if lo % 4 ~= 1 or hi % 8 ~= 2 then return nil, at, "Text pointer (not a list of bytes)" end
    local len = math.floor(hi / 8)
    local first = target(text_pointer, lo)
    if first == nil then return nil, at, "Text pointer (outside the segment)" end
    local begin = 8 + first * 8
    if first * 8 + len > words * 8 then return nil, at, "Text (past the segment's end)" end
    if len == 0 or sbyte(s, begin + len) ~= 0 then return nil, begin, "Text (no NUL terminator)" end
    return begin, len - 1, words
end

--- Whether JSON text nests deeper than `limit`, counting brackets outside strings.
local function too_deep(s, limit)
    local depth, in_string, escaped = 0, false, false
    for i = 1, #s do
        local b = sbyte(s, i)
        if in_string then
            if escaped then
                escaped = false
            elseif b == 0x5C then
                escaped = true
            elseif b == 0x22 then
                in_string = false
            end
        elseif b == 0x22 then
            in_string = true
        elseif b == 0x7B or b == 0x5B then
            depth = depth + 1
            if depth > limit then return true end
        elseif b == 0x7D or b == 0x5D then
            if depth > 0 then depth = depth - 1 end
        end
    end
    return false
end

-- A strict JSON parser (RFC 8259, as serde_json accepts it): values are { t = "object", keys,
-- map, first }, { t = "array", items }, { t = "string", v }, { t = "number", v }, { t = "bool" },
-- { t = "null" }. Errors are raised with error() and caught by the caller's pcall.
local function json_parse(s)
    local pos, n = 1, #s
    local function fail(what) error({ json = what .. " at byte " .. pos }, 0) end
    local function ws()
        while pos <= n do
            local b = sbyte(s, pos)
            if b == 0x20 or b == 0x09 or b == 0x0A or b == 0x0D then pos = pos + 1 else break end
        end
    end
    local function hex4()
        local h = s:sub(pos, pos + 3)
        if #h < 4 or not h:match("^%x%x%x%x$") then fail("invalid escape") end
        pos = pos + 4
        return tonumber(h, 16)
    end
    local function utf8_of(cp)
        if cp < 0x80 then return schar(cp) end
        if cp < 0x800 then return schar(0xC0 + math.floor(cp / 64), 0x80 + cp % 64) end
        if cp < 0x10000 then
            return schar(0xE0 + math.floor(cp / 4096), 0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
        end
        return schar(0xF0 + math.floor(cp / 262144), 0x80 + math.floor(cp / 4096) % 64,
            0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
    end
    local function str()
        pos = pos + 1 -- the opening quote
        local parts = {}
        local run = pos
        while true do
            if pos > n then fail("EOF while parsing a string") end
            local b = sbyte(s, pos)
            if b == 0x22 then
                parts[#parts + 1] = s:sub(run, pos - 1)
                pos = pos + 1
                return tconcat(parts)
            elseif b == 0x5C then
                parts[#parts + 1] = s:sub(run, pos - 1)
                local e = sbyte(s, pos + 1)
                pos = pos + 2
                if e == 0x22 then parts[#parts + 1] = "\""
                elseif e == 0x5C then parts[#parts + 1] = "\\"
                elseif e == 0x2F then parts[#parts + 1] = "/"
                elseif e == 0x62 then parts[#parts + 1] = "\b"
                elseif e == 0x66 then parts[#parts + 1] = "\f"
                elseif e == 0x6E then parts[#parts + 1] = "\n"
                elseif e == 0x72 then parts[#parts + 1] = "\r"
                elseif e == 0x74 then parts[#parts + 1] = "\t"
                elseif e == 0x75 then
                    local cp = hex4()
                    if cp >= 0xDC00 and cp <= 0xDFFF then fail("lone leading surrogate in hex escape") end
                    if cp >= 0xD800 and cp <= 0xDBFF then
                        if s:sub(pos, pos + 1) ~= "\\u" then fail("unexpected end of hex escape") end
                        pos = pos + 2
                        local low = hex4()
                        if low < 0xDC00 or low > 0xDFFF then fail("lone leading surrogate in hex escape") end
                        cp = (cp - 0xD800) * 1024 + (low - 0xDC00) + 0x10000
                    end
                    parts[#parts + 1] = utf8_of(cp)
                else
                    fail("invalid escape")
                end
                run = pos
            elseif b < 0x20 then
                fail("control character in a string")
            else
                pos = pos + 1
            end
        end
    end
    local function num()
        local from = pos
        if sbyte(s, pos) == 0x2D then pos = pos + 1 end
        local b = sbyte(s, pos)
        if b == 0x30 then
            pos = pos + 1
            local d = sbyte(s, pos)
            if d and d >= 0x30 and d <= 0x39 then fail("invalid number") end
        elseif b and b >= 0x31 and b <= 0x39 then
            repeat pos = pos + 1 b = sbyte(s, pos) until not (b and b >= 0x30 and b <= 0x39)
        else
            fail("invalid number")
        end
        if sbyte(s, pos) == 0x2E then
            pos = pos + 1
            b = sbyte(s, pos)
            if not (b and b >= 0x30 and b <= 0x39) then fail("invalid number") end
            repeat pos = pos + 1 b = sbyte(s, pos) until not (b and b >= 0x30 and b <= 0x39)
        end
        b = sbyte(s, pos)
        if b == 0x65 or b == 0x45 then
            pos = pos + 1
            b = sbyte(s, pos)
            if b == 0x2B or b == 0x2D then pos = pos + 1 b = sbyte(s, pos) end
            if not (b and b >= 0x30 and b <= 0x39) then fail("invalid number") end
            repeat pos = pos + 1 b = sbyte(s, pos) until not (b and b >= 0x30 and b <= 0x39)
        end
        local v = tonumber(s:sub(from, pos - 1))
        if v == nil or v ~= v or v == math.huge or v == -math.huge then fail("number out of range") end
        return { t = "number", v = v }
    end
    local value
    local function lit(word, v)
        if s:sub(pos, pos + #word - 1) ~= word then fail("expected value") end
        pos = pos + #word
        return v
    end
    value = function()
        ws()
        local b = sbyte(s, pos)
        if b == nil then fail("EOF while parsing a value") end
        if b == 0x7B then
            pos = pos + 1
            local o = { t = "object", keys = {}, map = {} }
            ws()
            if sbyte(s, pos) == 0x7D then pos = pos + 1 return o end
            while true do
                ws()
                if sbyte(s, pos) ~= 0x22 then fail("key must be a string") end
                local k = str()
                if o.first == nil then o.first = k end
                ws()
                if sbyte(s, pos) ~= 0x3A then fail("expected `:`") end
                pos = pos + 1
                local v = value()
                if o.map[k] == nil then o.keys[#o.keys + 1] = k end
                o.map[k] = v
                ws()
                local d = sbyte(s, pos)
                pos = pos + 1
                if d == 0x7D then return o end
                if d ~= 0x2C then fail("expected `,` or `}`") end
            end
        elseif b == 0x5B then
            pos = pos + 1
            local a = { t = "array", items = {} }
            ws()
            if sbyte(s, pos) == 0x5D then pos = pos + 1 return a end
            while true do
                a.items[#a.items + 1] = value()
                ws()
                local d = sbyte(s, pos)
                pos = pos + 1
                if d == 0x5D then return a end
                if d ~= 0x2C then fail("expected `,` or `]`") end
            end
        elseif b == 0x22 then
            return { t = "string", v = str() }
        elseif b == 0x74 then
            return lit("true", { t = "bool", v = true })
        elseif b == 0x66 then
            return lit("false", { t = "bool", v = false })
        elseif b == 0x6E then
            return lit("null", { t = "null" })
        elseif b == 0x2D or (b >= 0x30 and b <= 0x39) then
            return num()
        end
        fail("expected value")
    end
    local v = value()
    ws()
    if pos <= n then fail("trailing characters") end
    return v
end

rtnp_consistent = function(s, n)
    if sbyte(s, 1) ~= 0x7B then return read_envelope(s) ~= nil end
    -- Raw JSON: an object within the limits whose "type" is one of the document's messages.
    if n > C_RTNP.MAX_JSON or too_deep(s, C_RTNP.MAX_DEPTH) or not utf8_valid(bytes_of(s, n), 1, n) then return false end
    local ok, v = pcall(json_parse, s)
    if not ok or v.t ~= "object" then return false end
    local jt = v.map[C_RTNP.TYPE_KEY]
    local m = jt and jt.t == "string" and RTNP_MESSAGES[jt.v]
    return m and not m.seen and true or false
end

--- Whether a JSON value has the JSON Schema type `ty` (src/datagram/rtnp.rs `has_type`).
local function has_type(v, ty)
    if ty == "string" then return v.t == "string" end
    if ty == "number" then return v.t == "number" end
    if ty == "integer" then return v.t == "number" and math.floor(v.v) == v.v end
    if ty == "boolean" then return v.t == "bool" end
    if ty == "object" then return v.t == "object" end
    if ty == "array" then return v.t == "array" end
    return false
end

--- Adds a finding about `path` unless the datagram already has one of that rule for it.
local function rtnp_once(found, rule, at, len, path)
    for _, fd in ipairs(found) do
        if fd.rule == rule and fd.path == path then return end
    end
    found[#found + 1] = { rule = rule, at = at, len = len, detail = path, path = path }
end

local check_value
local function check_fields(object, fields, found, at, len)
    for _, field in ipairs(fields) do
        local v = object.map[field.key]
        if v == nil then
            if field.required then rtnp_once(found, field.missing, at, len, field.path) end
        else
            check_value(v, field, found, at, len)
        end
    end
end

check_value = function(v, field, found, at, len)
    if not has_type(v, field.ty) then
        return rtnp_once(found, RULE_RTNP.wrong_type, at, len, field.path)
    end
    if field.minimum and v.t == "number" and v.v < field.minimum then
        rtnp_once(found, RULE_RTNP.range, at, len, field.path)
    end
    if v.t == "object" then
        check_fields(v, field.fields, found, at, len)
    elseif v.t == "array" and #field.fields > 0 then
        for _, item in ipairs(v.items) do
            if item.t == "object" then
                check_fields(item, field.fields, found, at, len)
            else
                rtnp_once(found, RULE_RTNP.wrong_type, at, len, field.path)
            end
        end
    end
end

-- Known servers (address|port) and their count.
local RTNP_SERVERS, RTNP_SERVER_COUNT

local function rtnp_reset()
    RTNP_SERVERS, RTNP_SERVER_COUNT = {}, 0
end
rtnp_reset()

--- The datagram's direction (true: client to server), as src/pipeline/rtnp_arm.rs finds it: a
--- known server, the server port, the message's direction (learning the server), or the lower
--- port.
local function rtnp_direction(pinfo, message)
    local src, dst = endpoint(pinfo.src, pinfo.src_port), endpoint(pinfo.dst, pinfo.dst_port)
    if RTNP_SERVERS[src] then return false end
    if RTNP_SERVERS[dst] then return true end
    local sport, dport, c2s = pinfo.src_port, pinfo.dst_port, nil
    if sport == C_RTNP.SERVER_PORT and dport ~= C_RTNP.SERVER_PORT then
        c2s = false
    elseif dport == C_RTNP.SERVER_PORT and sport ~= C_RTNP.SERVER_PORT then
        c2s = true
    elseif message then
        c2s = message.dir == C.PACKET_CLIENT
    else
        return sport > dport
    end
    if RTNP_SERVER_COUNT < C_RT.MAX_SERVERS then
        local server = c2s and dst or src
        if not RTNP_SERVERS[server] then
            RTNP_SERVERS[server] = true
            RTNP_SERVER_COUNT = RTNP_SERVER_COUNT + 1
        end
    end
    return c2s
end

local rtnp_done

local function rtnp_datagram(tvb, pinfo, tree, root, mode)
    local n, reported, vis, t = datagram_view(tvb, root, mode)
    local cut = reported > n
    local frame = pinfo.number
    local s = tvb:raw(0, n)
    local found
    local raw_framing = sbyte(s, 1) == 0x7B or s == C_RTNP.PING or s == C_RTNP.PONG
    if cut then
        -- The text is not all there: nothing about it can be judged.
        found = report(found, RULE_RTNP.snaplen, 0, n, sfmt("%d of %d bytes captured", n, reported))
        if t then
            root:add(PF_RTNP.framing, raw_framing and "raw" or "envelope"):set_generated()
            root:add(tvb(n, 0), sfmt("[%d bytes not captured]", reported - n))
        end
        return rtnp_done(pinfo, tree, root, t, vis, tvb, frame, reported, "UNKNOWN", nil, found)
    end
    if n > C_RTNP.MAX_DATAGRAM then
        found = report(found, RULE_RTNP.datagram_size, 0, n, sfmt("%d bytes, at most %d", n, C_RTNP.MAX_DATAGRAM))
    end
    local text_at, text_len
    if raw_framing then
        if t then root:add(PF_RTNP.framing, "raw"):set_generated() end
        text_at, text_len = 0, n
    else
        local et
        if t then
            root:add(PF_RTNP.framing, "envelope"):set_generated()
            et = vis and root:add(tvb(0, n), "Cap'n Proto envelope") or root
            if n >= 4 then et:add_le(PF_RTNP.segments, tvb(0, 4)) end
            if n >= 8 then et:add_le(PF_RTNP.words, tvb(4, 4)) end
        end
        local begin, len, words = read_envelope(s)
        if begin then
            if t then et:add(PF_RTNP.text_bytes, tvb(begin, len + 1), s:sub(begin + 1, begin + len)) end
            local stop = 8 + words * 8
            if stop < n then
                found = report(found, RULE_RTNP.envelope, stop, n - stop, sfmt("%d bytes after the segment's end", n - stop))
            end
            if vis then et:set_len(stop < n and stop or n) end
            text_at, text_len = begin, len
        else
            found = report(found, RULE_RTNP.envelope, len, 1, words)
        end
    end
    local message, type_name, json
    local name = "UNKNOWN"
    if text_at then
        local text = s:sub(text_at + 1, text_at + text_len)
        local function report_text(rule, detail)
            found = report(found, rule, text_at, text_len, detail)
        end
        if text == C_RTNP.PING or text == C_RTNP.PONG then
            if t then root:add(PF_RTNP.keepalive, tvb(text_at, text_len), text) end
            message = RTNP_MESSAGES[text]
            name = text
        elseif text_len > C_RTNP.MAX_JSON then
            report_text(RULE_RTNP.json_limit, sfmt("%d bytes, at most %d", text_len, C_RTNP.MAX_JSON))
        elseif too_deep(text, C_RTNP.MAX_DEPTH) then
            report_text(RULE_RTNP.json_limit, sfmt("nested deeper than %d", C_RTNP.MAX_DEPTH))
        elseif not utf8_valid(bytes_of(text, text_len), 1, text_len) then
            report_text(RULE_RTNP.json_invalid, "not UTF-8")
        else
            if text:find("[\128-\255]") then report_text(RULE_RTNP.json_non_ascii, "") end
            local ok, v = pcall(json_parse, text)
            if not ok then
                report_text(RULE_RTNP.json_invalid, type(v) == "table" and v.json or tostring(v))
            elseif v.t ~= "object" then
                report_text(RULE_RTNP.json_invalid, "not an object")
            else
                json = v
            end
        end
        if t and json == nil and text_len > 0 and utf8_valid(bytes_of(text, text_len), 1, text_len) then
            root:add(PF_RTNP.text, tvb(text_at, text_len), text)
        elseif t and json == nil and text_len == 0 then
            root:add(PF_RTNP.text, tvb(text_at, 0), "")
        end
        if json then
            local jt = json.map[C_RTNP.TYPE_KEY]
            if jt and jt.t == "string" then
                type_name = jt.v
                name = jt.v
                if t then root:add(PF_RTNP.type, tvb(text_at, text_len), jt.v) end
                local m = RTNP_MESSAGES[jt.v]
                if m and not m.seen then message = m end
            end
            if json_dissector and text_len > 0 and mode > 0 then
                pcall(function() json_dissector:call(tvb(text_at, text_len):tvb(), pinfo, tree) end)
            end
        end
        if message and message.seen then report_text(message.seen, "") end
        if json then
            if type_name == nil then
                report_text(RULE_RTNP.type_missing, C_RTNP.TYPE_KEY)
            else
                if json.first ~= C_RTNP.TYPE_KEY then report_text(RULE_RTNP.type_not_first, "first is " .. json.first) end
                if message then
                    found = found or {}
                    check_fields(json, message.fields, found, text_at, text_len)
                else
                    report_text(RULE_RTNP.unknown_type, type_name)
                end
            end
        end
    end
    return rtnp_done(pinfo, tree, root, t, vis, tvb, frame, reported, name, message, found)
end

rtnp_done = function(pinfo, tree, root, t, vis, tvb, frame, reported, name, message, found)
    local c2s = true
    if CONV_OF[frame] == nil then c2s = rtnp_direction(pinfo, message) end
    local conv, first = conversation_of(pinfo, c2s)
    if t then
        root:add(PF_RTNP.conversation, conv):set_generated()
        add_stream_delta(root, PF_RTNP.stream_delta, frame)
        root:append_text(", " .. name)
    end
    emit(t and root or tree, tvb, 0, found, vis)
    if first then count_datagram(frame, "rtnp", conv, reported, c2s, nil, name, found) end
    pinfo.cols.protocol:set("RTNP")
    pinfo.cols.info:set(name)
end

local function rtnp_dissect(tvb, pinfo, tree)
    return dissect_as("rtnp", rtnp, "RTNP", RULE_RTNP, rtnp_datagram, tvb, pinfo, tree)
end
