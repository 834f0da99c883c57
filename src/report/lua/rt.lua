-- ---------------------------------------------------------------------------------------------
-- rt datagram driver (hand-written, fixed): the 12-byte header in the byte order its magic shows,
-- the checks of src/datagram/rt.rs in their order, the direction and conversation as
-- src/pipeline/rt_arm.rs finds them (servers learned from CLIENT_CONNECT and SERVER_ACCEPT /
-- REJECT), the byte order reported once per conversation, and the payload walked by the
-- generated MSG_RT layouts. First-pass decisions are kept by frame number (see the rtype driver).
-- ---------------------------------------------------------------------------------------------

local RTS

local function rt_reset()
    RTS = { frames = {}, servers = {}, server_count = 0, convs = {} }
end
rt_reset()

local function endpoint(addr, port)
    return tostring(addr) .. "|" .. tostring(port)
end

--- The datagram's direction (true: client to server) and whether a known server says so.
local function rt_direction(pinfo, m)
    local src, dst = endpoint(pinfo.src, pinfo.src_port), endpoint(pinfo.dst, pinfo.dst_port)
    if RTS.servers[src] then return false, true end
    if RTS.servers[dst] then return true, true end
    local learn
    if m and m.code == C_RT.CLIENT_CONNECT then
        learn = dst
    elseif m and (m.code == C_RT.SERVER_ACCEPT or m.code == C_RT.SERVER_REJECT) then
        learn = src
    end
    if learn and RTS.server_count < C_RT.MAX_SERVERS then
        RTS.servers[learn] = true
        RTS.server_count = RTS.server_count + 1
    end
    if m and not C_RT.BOTH_WAYS[m.code] then
        return m.dir == C_RT.CLIENT, false
    end
    return pinfo.src_port > pinfo.dst_port, false
end

local function rt_dissect_datagram(tvb, pinfo, root)
    local n = tvb:len()
    local le = tvb(0, 2):uint() == C_RT.MAGIC_LE
    local found = {}
    local function report(rule, at, len, detail)
        found[#found + 1] = { rule = rule, at = at, len = len, detail = detail }
    end
    local fi = RTS.frames[pinfo.number]
    local first = fi == nil
    if first then
        fi = {}
        RTS.frames[pinfo.number] = fi
    end

    local h = RT_HEADER
    local hlen = h.len < n and h.len or n
    local ht = root:add(tvb(0, hlen), sfmt("Header (%s)", le and "little-endian" or "big-endian"))
    local hc = new_walk(tvb, 0, hlen, false, RULE_RT, le)
    for _, f in ipairs(h.fields) do
        if rd(hc, ht, f) == nil then break end
    end
    if n < h.len then
        report(RULE_RT.short, 0, n, sfmt("expected at least %d bytes, found %d", h.len, n))
        if first then rt_direction(pinfo, nil) end
        pinfo.cols.info:set(sfmt("Short datagram (%d bytes)", n))
        root:append_text(", short datagram")
        emit(root, tvb, 0, found)
        return
    end
    local function hv(role)
        local a = h.at[role]
        local r = tvb(a[1], a[2])
        return le and r:le_uint() or r:uint()
    end
    local function off(role)
        local a = h.at[role]
        return a[1], a[2]
    end

    local code, flags = hv("MessageType"), hv("Flags")
    local m = MSG_RT[code]
    local o, l = off("MessageType")
    if code < 0x01 or code > 0x7F then
        report(RULE_RT.packet_type, o, l, sfmt("packet type 0x%02x", code))
    elseif m == nil then
        report(RULE_RT.unknown_type, o, l, sfmt("packet type 0x%02x", code))
    end
    local fo, fl = off("Flags")
    if band(flags, C_RT.RESERVED_FLAGS) ~= 0 then
        report(RULE_RT.reserved_flags, fo, fl, sfmt("flags 0x%02x", flags))
    end
    local opaque = band(flags, C_RT.OPAQUE_FLAGS) ~= 0
    if opaque then
        report(RULE_RT.opaque, fo, fl, sfmt("flags 0x%02x", flags))
    end
    local payload_at, plen = h.len, n - h.len
    if plen > C_RT.MAX_PAYLOAD then
        report(RULE_RT.datagram_size, payload_at, plen, sfmt("payload of %d bytes, at most %d", plen, C_RT.MAX_PAYLOAD))
    end
    if m then
        if m.seen then report(m.seen, o, l, m.name) end
        if band(flags, C_RT.FLAG_RELIABLE) == 0 then
            if code == C_RT.CLIENT_DISCONNECT then
                report(RULE_RT.disconnect_unreliable, fo, fl, sfmt("flags 0x%02x", flags))
            elseif C_RT.RELIABLE[code] then
                report(RULE_RT.reliable_flag_missing, fo, fl, sfmt("flags 0x%02x", flags))
            end
        end
    end

    if first then
        local c2s, known = rt_direction(pinfo, m)
        fi.c2s = c2s
        fi.wrong_direction = m ~= nil and known and not C_RT.BOTH_WAYS[m.code] and (m.dir == C_RT.CLIENT) ~= c2s
        -- The byte order is the document's rule broken by the whole conversation: said once.
        if le then
            local key = conversation_key(RTS.convs, pinfo, c2s)
            fi.byte_order = not RTS.convs[key]
            RTS.convs[key] = true
        end
    end
    if fi.wrong_direction then
        report(RULE_RT.direction, o, l, sfmt("%s sent by the %s", m.name, fi.c2s and "client" or "server"))
    end
    if fi.byte_order then
        local mo, ml = off("Magic")
        report(RULE_RT.byte_order, mo, ml, "")
    end

    local seq = hv("Sequence")
    local name = m and m.name or sfmt("Unknown packet type 0x%02x", code)
    local info = sfmt("%s seq=%d%s", name, seq, le and " (little-endian)" or "")
    root:append_text(sfmt(", %s, Seq %d", name, seq))

    local c
    local mt
    if m and not opaque then
        mt = root:add(tvb(payload_at, plen), sfmt("%s (%d bytes)", m.name, plen))
        c = decode_message(m, tvb, payload_at, plen, mt, RULE_RT, le)
    elseif plen > 0 then
        root:add(PF_RT.undecoded, tvb(payload_at, plen))
    end
    emit(root, tvb, 0, found)
    if c then emit(mt, tvb, payload_at, c.findings) end
    pinfo.cols.info:set(info)
end

local function rt_magic(tvb)
    if tvb:len() < 2 then return false end
    local magic = tvb(0, 2):uint()
    return magic == C_RT.MAGIC_BE or magic == C_RT.MAGIC_LE
end

local function rt_dissect(tvb, pinfo, tree)
    if not rt_magic(tvb) then return 0 end
    pinfo.cols.protocol:set("RT")
    local root = tree:add(rt, tvb())
    local ok, err = pcall(rt_dissect_datagram, tvb, pinfo, root)
    if not ok then
        pcall(function()
            root:add_proto_expert_info(EX[RULE_RT.malformed], "[" .. RULE_RT.malformed .. "] " ..
                SUMMARY[RULE_RT.malformed] .. " (" .. tostring(err) .. ")")
            pinfo.cols.info:append(" [Malformed]")
        end)
    end
    return tvb:len()
end

rt.dissector = rt_dissect

rt.init = function()
    rt_reset()
end

rt:register_heuristic("udp", function(tvb, pinfo, tree)
    if not rt_magic(tvb) then return false end
    rt_dissect(tvb, pinfo, tree)
    return true
end)

rt.prefs.udp_port = Pref.uint("UDP port", 0, "UDP port the rt server listens on (0 = heuristic only)")

local rt_registered_port = 0
rt.prefs_changed = function()
    if rt_registered_port ~= 0 then udp_table:remove(rt_registered_port, rt) end
    rt_registered_port = rt.prefs.udp_port
    if rt_registered_port ~= 0 then udp_table:add(rt_registered_port, rt) end
end
if udp_table.add_for_decode_as then pcall(udp_table.add_for_decode_as, udp_table, rt) end
