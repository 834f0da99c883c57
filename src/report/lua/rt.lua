-- ---------------------------------------------------------------------------------------------
-- rt datagram driver (hand-written, fixed): the 12-byte header in the byte order its magic shows,
-- the checks of src/datagram/rt.rs in their order, the direction as src/pipeline/rt_arm.rs finds
-- it (servers learned from CLIENT_CONNECT and SERVER_ACCEPT / REJECT), the byte order reported
-- once per conversation, and the payload walked by the generated MSG_RT layouts. First-pass
-- decisions are kept by frame number (see the shared state above).
-- ---------------------------------------------------------------------------------------------

-- Known servers (address|port), their count; by conversation, the byte order was reported and
-- the byte order of its first datagram (true: little-endian), which later ones are read in; by
-- frame, the first little-endian datagram of its conversation and a wrong direction ("client"
-- or "server": who sent it).
local RT_SERVERS, RT_SERVER_COUNT, RT_ORDER_CONV, RT_LE_CONV, RT_ORDER, RT_WRONG

local function rt_reset()
    RT_SERVERS, RT_SERVER_COUNT, RT_ORDER_CONV, RT_LE_CONV, RT_ORDER, RT_WRONG = {}, 0, {}, {}, {}, {}
end
rt_reset()

local function endpoint(addr, port)
    return tostring(addr) .. "|" .. port
end

--- The datagram's direction (true: client to server) and whether a known server says so.
local function rt_direction(pinfo, m)
    local src, dst = endpoint(pinfo.src, pinfo.src_port), endpoint(pinfo.dst, pinfo.dst_port)
    if RT_SERVERS[src] then return false, true end
    if RT_SERVERS[dst] then return true, true end
    local learn
    if m and m.code == C_RT.CLIENT_CONNECT then
        learn = dst
    elseif m and (m.code == C_RT.SERVER_ACCEPT or m.code == C_RT.SERVER_REJECT) then
        learn = src
    end
    if learn and RT_SERVER_COUNT < C_RT.MAX_SERVERS then
        RT_SERVERS[learn] = true
        RT_SERVER_COUNT = RT_SERVER_COUNT + 1
    end
    if m and not C_RT.BOTH_WAYS[m.code] then
        return m.dir == C_RT.CLIENT, false
    end
    return pinfo.src_port > pinfo.dst_port, false
end

--- The unsigned header field at `a` = { offset, width } in the datagram's byte order.
local function rt_hv(b, a, le)
    local v = 0
    if le then
        for i = a[1] + a[2], a[1] + 1, -1 do v = v * 256 + b[i] end
    else
        for i = a[1] + 1, a[1] + a[2] do v = v * 256 + b[i] end
    end
    return v
end

local RT_HEADER_WALK, RT_MESSAGE_WALK = walk_context(RULE_RT), walk_context(RULE_RT)

local function rt_datagram(tvb, pinfo, tree, root, mode)
    local n, reported, vis, t = datagram_view(tvb, root, mode)
    local cut = reported > n
    local frame = pinfo.number
    local b = bytes_of(tvb:raw(0, n), n)
    local found
    if cut then
        found = report(found, RULE_RT.snaplen, 0, n, sfmt("%d of %d bytes captured", n, reported))
    end
    -- The byte order: the magic's, unless the conversation's first datagram set another (a magic
    -- in the other order, or broken, is read in the conversation's and reported; src/datagram/rt.rs
    -- `parse`). A cut datagram is read so too, and not judged on it.
    local known = CONV_OF[frame] or CLAIM.conv
    local order = known and RT_LE_CONV[known]
    local magic = n >= 2 and b[1] * 256 + b[2] or nil
    local le
    if magic == C_RT.MAGIC_LE or magic == C_RT.MAGIC_BE then
        le = magic == C_RT.MAGIC_LE
        if order ~= nil and order ~= le then
            if not cut then found = report(found, RULE_RT.byte_order_switch, 0, 2, sfmt("magic %04X", magic)) end
            le = order
        end
    else
        if magic and not cut then found = report(found, RULE_RT.magic, 0, 2, sfmt("magic %04X", magic)) end
        -- Real servers send little-endian (spec-notes B).
        le = order == nil or order
    end

    local h = RT_HEADER
    local hlen = h.len < n and h.len or n
    if t then
        local ht = vis and root:add(tvb(0, hlen), sfmt("Header (%s)", le and "little-endian" or "big-endian")) or root
        walk_reset(RT_HEADER_WALK, b, 0, hlen, le, tvb, 0, vis, false)
        h.read(RT_HEADER_WALK, ht)
    end
    if n < h.len then
        if not cut then
            found = report(found, RULE_RT.short, 0, n, sfmt("expected at least %d bytes, found %d", h.len, n))
        elseif t then
            root:add(tvb(n, 0), sfmt("[%d bytes not captured]", reported - n))
        end
        local c2s = pinfo.src_port > pinfo.dst_port
        if CONV_OF[frame] == nil then c2s = rt_direction(pinfo, nil) end
        local conv, first = conversation_of(pinfo, c2s)
        if t then
            root:add(PF_RT.conversation, conv):set_generated()
            add_stream_delta(root, PF_RT.stream_delta, frame)
        end
        pinfo.cols.info:set(sfmt("%s (%d bytes)", cut and "Datagram cut by the capture" or "Short datagram", n))
        if t then root:append_text(cut and ", not captured whole" or ", short datagram") end
        if first then count_datagram(frame, "rt", conv, reported, nil, nil, "UNKNOWN", found) end
        emit(t and root or tree, tvb, 0, found, vis)
        return
    end
    local code, flags = rt_hv(b, h.at.MessageType, le), rt_hv(b, h.at.Flags, le)
    local m = MSG_RT[code]
    local o, l = at_of(h.at.MessageType)
    if code < 0x01 or code > 0x7F then
        found = report(found, RULE_RT.packet_type, o, l, sfmt("packet type 0x%02x", code))
    elseif m == nil then
        found = report(found, RULE_RT.unknown_type, o, l, sfmt("packet type 0x%02x", code))
    end
    local fo, fl = at_of(h.at.Flags)
    if band(flags, C_RT.RESERVED_FLAGS) ~= 0 then
        found = report(found, RULE_RT.reserved_flags, fo, fl, sfmt("flags 0x%02x", flags))
    end
    local opaque = band(flags, C_RT.OPAQUE_FLAGS) ~= 0
    if opaque then
        found = report(found, RULE_RT.opaque, fo, fl, sfmt("flags 0x%02x", flags))
    end
    local payload_at, plen = h.len, n - h.len
    if not cut and plen > C_RT.MAX_PAYLOAD then
        found = report(found, RULE_RT.datagram_size, payload_at, plen, sfmt("payload of %d bytes, at most %d", plen, C_RT.MAX_PAYLOAD))
    end
    if m then
        if m.seen then found = report(found, m.seen, o, l, m.name) end
        if band(flags, C_RT.FLAG_RELIABLE) == 0 then
            if code == C_RT.CLIENT_DISCONNECT then
                found = report(found, RULE_RT.disconnect_unreliable, fo, fl, sfmt("flags 0x%02x", flags))
            elseif C_RT.RELIABLE[code] then
                found = report(found, RULE_RT.reliable_flag_missing, fo, fl, sfmt("flags 0x%02x", flags))
            end
        end
    end

    local c2s = true
    if CONV_OF[frame] == nil then
        local known
        c2s, known = rt_direction(pinfo, m)
        if m ~= nil and known and not C_RT.BOTH_WAYS[m.code] and (m.dir == C_RT.CLIENT) ~= c2s then
            RT_WRONG[frame] = c2s and "client" or "server"
        end
    end
    local conv, first = conversation_of(pinfo, c2s)
    if conv ~= 0 and RT_LE_CONV[conv] == nil then RT_LE_CONV[conv] = le end
    if first and le then
        -- The byte order is the document's rule broken by the whole conversation: said once.
        if not RT_ORDER_CONV[conv] then RT_ORDER[frame] = true end
        RT_ORDER_CONV[conv] = true
    end
    if RT_WRONG[frame] then
        found = report(found, RULE_RT.direction, o, l, sfmt("%s sent by the %s", m.name, RT_WRONG[frame]))
    end
    if RT_ORDER[frame] then
        local mo, ml = at_of(h.at.Magic)
        found = report(found, RULE_RT.byte_order, mo, ml, "")
    end
    if t then
        root:add(PF_RT.conversation, conv):set_generated()
        add_stream_delta(root, PF_RT.stream_delta, frame)
    end

    local seq = rt_hv(b, h.at.Sequence, le)
    local name = m and m.name or sfmt("Unknown packet type 0x%02x", code)
    local info = sfmt("%s seq=%d%s", name, seq, le and " (little-endian)" or "")
    if t then root:append_text(sfmt(", %s, Seq %d", name, seq)) end

    local c
    if m and not opaque then
        local mt = t
        if vis then mt = root:add(tvb(payload_at, plen), sfmt("%s (%d bytes)", m.name, plen)) end
        c = RT_MESSAGE_WALK
        walk_reset(c, b, payload_at, plen, le, tvb, payload_at, vis, false)
        walk_message(m, c, mt, tvb, reported - n)
        if t then
            emit(root, tvb, 0, found, vis)
            emit(mt, tvb, payload_at, c.findings, vis)
        end
    elseif t then
        if plen > 0 then root:add(PF_RT.undecoded, tvb(payload_at, plen)) end
        if cut then root:add(tvb(n, 0), sfmt("[%d bytes not captured]", reported - n)) end
        emit(root, tvb, 0, found, vis)
    end
    if not t then
        emit(tree, nil, 0, found, false)
        if c then emit(tree, nil, 0, c.findings, false) end
    end
    if first then
        count_datagram(frame, "rt", conv, reported, c2s, code, m and m.name or "UNKNOWN", found, c and c.findings)
    end
    pinfo.cols.info:set(info)
end

local function rt_dissect(tvb, pinfo, tree)
    return dissect_as("rt", rt, "RT", RULE_RT, rt_datagram, tvb, pinfo, tree)
end
