-- ---------------------------------------------------------------------------------------------
-- rtype datagram driver (hand-written, fixed): header layout selection, the datagram checks in
-- the order of src/datagram/rtype.rs, message decoding with variants as in src/message/walk.rs,
-- what src/pipeline/rtype_arm.rs decides per conversation (the 15-byte header reported once, the
-- LevelInit archetypes entity types are checked against, snapshot-chunk reassembly as in
-- src/session/chunks.rs), and registration. Offsets and widths come from the generated HEADERS
-- table; message layouts from the generated MSG table.
--
-- Two-pass dissection: what depends on earlier datagrams is decided the first time a frame is
-- dissected (in frame order) and kept by frame number; later passes (pinfo.visited, or
-- Wireshark's re-dissection of a selected packet) read it back.
-- ---------------------------------------------------------------------------------------------

-- Per-capture state: frame decisions, conversations, open chunk sets (oldest first).
local RS

local function rtype_reset()
    RS = { frames = {}, convs = {}, open = {} }
end
rtype_reset()

--- The state of the conversation `key` (created on first use).
local function rtype_conversation(key)
    local conv = RS.convs[key]
    if conv == nil then
        conv = { old_header = false, archetypes = nil }
        RS.convs[key] = conv
    end
    return conv
end

--- Removes the open set at position `i` (closed as missing or for the limit: reported by
--- rtype-inspect at the end of the set, not by a datagram).
local function close_set(i)
    table.remove(RS.open, i)
end

--- Adds a chunk to its set, as src/session/chunks.rs `ChunkSets::push` does. Returns the note
--- the frame keeps: the rule it broke (if any) and the set it joined.
local function push_chunk(key, tick, ts, frame, total, index, count, blocks)
    if total == 0 then
        return { rule = RULE.chunk_total_zero, detail = "totalChunks 0" }
    end
    if index >= total then
        return { rule = RULE.chunk_index, detail = sfmt("chunkIndex %d, totalChunks %d", index, total) }
    end
    local i = 1
    while i <= #RS.open do
        if ts - RS.open[i].first_ts > C.CHUNK_MAX_AGE then close_set(i) else i = i + 1 end
    end
    local set
    for _, s in ipairs(RS.open) do
        if s.key == key and s.tick == tick then set = s break end
    end
    if set == nil then
        if total > C.CHUNK_MAX_CHUNKS then
            return { rule = RULE.chunk_limit, detail = sfmt("totalChunks %d", total) }
        end
        if #RS.open == C.CHUNK_MAX_OPEN then close_set(1) end
        set = { key = key, tick = tick, total = total, first_ts = ts, parts = {}, have = 0, bytes = 0 }
        RS.open[#RS.open + 1] = set
    end
    if set.total ~= total then
        set.discarded = true
        return { rule = RULE.chunk_total_mismatch, detail = sfmt("totalChunks %d, the set has %d", total, set.total) }
    end
    if set.parts[index] then
        return { rule = RULE.chunk_duplicate, detail = sfmt("chunk %d first seen in frame %d", index, set.parts[index].frame) }
    end
    if set.discarded then return {} end
    if set.bytes + blocks:len() > C.CHUNK_MAX_BYTES then
        set.discarded = true
        return { rule = RULE.chunk_limit, detail = sfmt("the set holds %d bytes", set.bytes) }
    end
    set.parts[index] = { frame = frame, count = count, blocks = blocks }
    set.have = set.have + 1
    set.bytes = set.bytes + blocks:len()
    if set.have < set.total then return { set = set } end
    for k, s in ipairs(RS.open) do
        if s == set then table.remove(RS.open, k) break end
    end
    set.complete = frame
    local entities = 0
    local all = ByteArray.new()
    for k = 0, set.total - 1 do
        entities = entities + set.parts[k].count
        all:append(set.parts[k].blocks)
    end
    if entities > 65535 then entities = 65535 end
    set.entities = entities
    set.payload = ByteArray.new(sfmt("%02x%02x", math.floor(entities / 256), entities % 256))
    set.payload:append(all)
    return { set = set }
end

local function show_reassembled(set, root, archetypes)
    local rtvb = set.payload:tvb("Reassembled snapshot")
    local rt = root:add(rtvb(), sfmt("Reassembled snapshot (%d entities from %d chunks)", set.entities, set.total))
    for i = 0, set.total - 1 do
        rt:add(PF.chunk_frame, set.parts[i].frame):set_generated()
    end
    rt:add(PF.reassembled_length, rtvb:len()):set_generated()
    -- Entity-level findings were already reported on the chunks themselves.
    decode_message(REASSEMBLED, rtvb, 0, rtvb:len(), rt, RULE_REASSEMBLED, false, function(c) c.archetypes = archetypes end)
end

--- The header layout whose length (and, for the older header, CRC) fits the datagram.
local function layout_of(tvb, raw, n)
    local function fits(h)
        if n < h.len then return false end
        local pl = h.at.PayloadLen
        return n == h.len + tvb(pl[1], pl[2]):uint() + C.CRC_LEN
    end
    if fits(HEADERS[1]) then return HEADERS[1] end
    if fits(HEADERS[2]) then
        local stored = tvb(n - C.CRC_LEN, C.CRC_LEN):uint()
        if stored == crc32(raw, n - C.CRC_LEN) then return HEADERS[2] end
    end
    return HEADERS[1]
end

local function dissect_datagram(tvb, pinfo, root)
    local n = tvb:len()
    local raw = tvb:raw(0, n)
    local h = layout_of(tvb, raw, n)
    local found = {}
    local function report(rule, at, len, detail)
        found[#found + 1] = { rule = rule, at = at, len = len, detail = detail }
    end
    local fi = RS.frames[pinfo.number]
    local first = fi == nil
    if first then
        fi = {}
        RS.frames[pinfo.number] = fi
    end

    -- Header fields, as far as the datagram holds them.
    local hlen = h.len < n and h.len or n
    local ht = root:add(tvb(0, hlen), sfmt("Header (%d-byte layout)", h.len))
    ht:add(PF.header_len, h.len):set_generated()
    local hc = new_walk(tvb, 0, hlen, false, RULE, false)
    for _, f in ipairs(h.fields) do
        if rd(hc, ht, f) == nil then break end
    end

    if n < h.len + C.CRC_LEN then
        report(RULE.short, 0, n, sfmt("expected at least %d bytes, found %d", h.len + C.CRC_LEN, n))
        pinfo.cols.info:set(sfmt("Short datagram (%d bytes)", n))
        root:append_text(", short datagram")
        emit(root, tvb, 0, found)
        return
    end

    local function hv(role)
        local a = h.at[role]
        if a == nil then return 0 end
        return tvb(a[1], a[2]):uint()
    end
    local function off(role)
        local a = h.at[role]
        return a and a[1] or 0, a and a[2] or 0
    end

    local payload_at, payload_end = h.len, n - C.CRC_LEN
    local wire_len = payload_end - payload_at
    local announced = hv("PayloadLen")
    if announced ~= wire_len then
        local o, l = off("PayloadLen")
        report(RULE.length, o, l, sfmt("Payload Len %d, %d payload bytes in the datagram", announced, wire_len))
    end

    local stored = tvb(payload_end, C.CRC_LEN):uint()
    local computed = crc32(raw, payload_end)
    local crc_item = root:add(PF.crc, tvb(payload_end, C.CRC_LEN))
    if stored == computed then
        crc_item:append_text(" [correct]")
        crc_item:add(PF.crc_status, 1):set_generated()
    else
        crc_item:append_text(sfmt(" [incorrect, should be 0x%08x]", computed))
        crc_item:add(PF.crc_status, 0):set_generated()
        report(RULE.crc, payload_end, C.CRC_LEN, sfmt("stored 0x%08x, computed 0x%08x", stored, computed))
    end

    local vbyte = hv("VersionByte")
    local version = band(vbyte, bxor(0xFF, C.COMPRESSED_BIT))
    if version ~= C.VERSION then
        local o, l = off("VersionByte")
        report(RULE.version, o, l, sfmt("version %d", version))
    end
    local ptype = hv("PacketType")
    local ptype_ok = ptype == C.PACKET_CLIENT or ptype == C.PACKET_SERVER
    if not ptype_ok then
        local o, l = off("PacketType")
        report(RULE.packet_type, o, l, sfmt("packet type 0x%02x", ptype))
    end

    local compressed = h.compression and band(vbyte, C.COMPRESSED_BIT) ~= 0
    local orig = hv("OrigSize")
    local ptvb, pbase, plen = tvb, payload_at, wire_len
    local payload_ok = true
    if compressed then
        local o, l = off("OrigSize")
        if orig <= C.COMPRESS_THRESHOLD then
            report(RULE.compress_small, o, l, sfmt("Orig. Size %d", orig))
        end
        if wire_len >= orig then
            report(RULE.compress_not_smaller, payload_at, wire_len, sfmt("%d bytes compressed, %d uncompressed", wire_len, orig))
        end
        root:add(PF.payload, tvb(payload_at, wire_len)):prepend_text("Compressed ")
        local dec, why = lz4_block(wire_len > 0 and tvb(payload_at, wire_len):raw() or "", C.MAX_PAYLOAD)
        if dec then
            if #dec ~= orig then
                report(RULE.orig_size, o, l, sfmt("Orig. Size %d, decompressed %d bytes", orig, #dec))
            end
            if #dec > 0 then
                ptvb, pbase, plen = ByteArray.new(dec, true):tvb("Decompressed"), 0, #dec
            else
                plen = 0
            end
        else
            payload_ok = false
            report(RULE.lz4, payload_at, wire_len, why)
        end
    elseif orig ~= 0 then
        local o, l = off("OrigSize")
        report(RULE.orig_size_set, o, l, sfmt("Orig. Size %d", orig))
    end

    local mtype = hv("MessageType")
    local m = MSG[mtype]
    if m == nil then
        local o, l = off("MessageType")
        report(RULE.unknown_type, o, l, sfmt("message type 0x%02x", mtype))
    else
        if ptype_ok and m.dir ~= ptype then
            local o, l = off("PacketType")
            report(RULE.direction, o, l, sfmt("%s sent with packet type 0x%02x", m.name, ptype))
        end
        if m.seen then
            local o, l = off("MessageType")
            report(m.seen, o, l, m.name)
        end
    end

    -- The conversation: client and server by the packet type, else the message's direction, else
    -- the lower port is the server's.
    local c2s
    if ptype_ok then
        c2s = ptype == C.PACKET_CLIENT
    elseif m then
        c2s = m.dir == C.PACKET_CLIENT
    else
        c2s = pinfo.src_port > pinfo.dst_port
    end
    local key = conversation_key(RS.convs, pinfo, c2s)
    local conv = rtype_conversation(key)
    if first then
        fi.archetypes = conv.archetypes
        -- The 15-byte header is the whole conversation's departure: said once (spec-notes B).
        if h ~= HEADERS[1] then
            fi.old_header = not conv.old_header
            conv.old_header = true
        end
    end
    if fi.old_header then
        report(RULE.old_header, 0, h.len, "the conversation's first datagram with it")
    end

    local seq, tick = hv("Sequence"), hv("Tick")
    local name = m and m.name or sfmt("Unknown message 0x%02x", mtype)
    local info = sfmt("%s seq=%d tick=%d", name, seq, tick)
    root:append_text(sfmt(", %s, Seq %d, Tick %d", name, seq, tick))

    if m == nil or not payload_ok then
        if wire_len > 0 and not compressed then root:add(PF.payload, tvb(payload_at, wire_len)) end
        emit(root, tvb, 0, found)
        pinfo.cols.info:set(info)
        return
    end

    local mt = root:add(ptvb(pbase, plen), sfmt("%s (%d bytes)", m.name, plen))
    local archetypes = fi.archetypes
    local c = decode_message(m, ptvb, pbase, plen, mt, RULE, false, function(w) w.archetypes = archetypes end)

    if first and mtype == C.LEVEL_INIT then
        local a = { count = #c.types, sprites = {} }
        for k, id in ipairs(c.types) do
            if a.sprites[id] == nil then a.sprites[id] = (c.sprite_of and c.sprite_of[k]) or "" end
        end
        conv.archetypes = a
    end

    local total, index = c.facts.TotalChunks, c.facts.ChunkIndex
    if mtype == C.SNAPSHOT_CHUNK and c.entities_at ~= nil then
        info = info .. sfmt(" chunk %d/%d", index + 1, total)
        if first then
            local ea = c.entities_at
            local blocks = plen > ea and ptvb(pbase + ea, plen - ea):bytes() or ByteArray.new()
            fi.chunk = push_chunk(key, tick, pinfo.abs_ts, pinfo.number, total, index,
                c.entity_count, blocks)
        end
        local note = fi.chunk
        if note.rule then finding(c, note.rule, 0, 4, note.detail) end
        local set = note.set
        if set and set.complete == pinfo.number then
            show_reassembled(set, root, archetypes)
            info = info .. " [reassembled]"
        elseif set and set.complete then
            mt:add(PF.reassembled_in, set.complete):set_generated()
        end
    end

    emit(root, tvb, 0, found)
    emit(mt, ptvb, pbase, c.findings)
    pinfo.cols.info:set(info)
end

local function dissect(tvb, pinfo, tree)
    local n = tvb:len()
    if n < 4 or tvb(0, 4):uint() ~= C.MAGIC then return 0 end
    pinfo.cols.protocol:set("RTYPE")
    local root = tree:add(rtype, tvb())
    local ok, err = pcall(dissect_datagram, tvb, pinfo, root)
    if not ok then
        pcall(function()
            root:add_proto_expert_info(EX[RULE.malformed], "[" .. RULE.malformed .. "] " .. SUMMARY[RULE.malformed] ..
                " (" .. tostring(err) .. ")")
            pinfo.cols.info:append(" [Malformed]")
        end)
    end
    return n
end

rtype.dissector = dissect

rtype.init = function()
    rtype_reset()
end

rtype:register_heuristic("udp", function(tvb, pinfo, tree)
    if tvb:len() < 4 or tvb(0, 4):uint() ~= C.MAGIC then return false end
    dissect(tvb, pinfo, tree)
    return true
end)

rtype.prefs.udp_port = Pref.uint("UDP port", C.DEFAULT_PORT, "UDP port the R-Type server listens on (0 = heuristic only)")

local udp_table = DissectorTable.get("udp.port")
local registered_port = 0
local function register_port()
    if registered_port ~= 0 then udp_table:remove(registered_port, rtype) end
    registered_port = rtype.prefs.udp_port
    if registered_port ~= 0 then udp_table:add(registered_port, rtype) end
end
rtype.prefs_changed = register_port
register_port()
if udp_table.add_for_decode_as then pcall(udp_table.add_for_decode_as, udp_table, rtype) end
