-- ---------------------------------------------------------------------------------------------
-- Datagram driver (hand-written, fixed): header layout selection, the datagram checks in the
-- order of src/datagram/rtype.rs, message decoding with variants as in src/message/walk.rs,
-- snapshot-chunk reassembly, and registration. Offsets and widths come from the generated
-- HEADERS table; message layouts from the generated MSG table.
-- ---------------------------------------------------------------------------------------------

--- Adds the findings `list` (offsets relative to `base` in `tvb`) to `tree` as expert infos.
local function emit(tree, tvb, base, list)
    for _, fd in ipairs(list) do
        local text = "[" .. fd.rule .. "] " .. SUMMARY[fd.rule]
        if fd.detail and fd.detail ~= "" then text = text .. " (" .. fd.detail .. ")" end
        tree:add_tvb_expert_info(EX[fd.rule], clamp_range(tvb, base + fd.at, fd.len), text)
    end
end

--- Decodes a message payload against its description, trying the known variants when the
--- document's layout does not fit (src/message/walk.rs `decode_message`).
local function decode_message(m, tvb, base, len, tree)
    if #m.variants > 0 then
        local probe = new_walk(tvb, base, len, true)
        if not (m.body(probe, nil) and probe.pos == len) then
            for _, v in ipairs(m.variants) do
                local try = new_walk(tvb, base, len, true)
                if v.fn(try, nil) and try.pos == len then
                    local c = new_walk(tvb, base, len, false)
                    finding(c, v.rule, 0, len, "")
                    v.fn(c, tree)
                    return c
                end
            end
        end
    end
    local c = new_walk(tvb, base, len, false)
    local ok = m.body(c, tree)
    if ok and c.pos < len then undecoded(c, tree, c.pos) end
    if m.fixed and m.fixed ~= len then
        -- The size finding says it all: drop the truncation it caused.
        local kept = {}
        for _, fd in ipairs(c.findings) do
            if fd.rule ~= RULE.truncated then kept[#kept + 1] = fd end
        end
        c.findings = kept
        finding(c, RULE.size, 0, len, sfmt("expected %d bytes, found %d", m.fixed, len))
    elseif ok and c.pos < len then
        finding(c, RULE.trailing, c.pos, len - c.pos, sfmt("%d bytes decoded, %d in the payload", c.pos, len))
    end
    return c
end

-- Snapshot-chunk reassembly. First pass: each chunk is stored under its set, keyed by the
-- conversation's addresses and ports and the header's tick, and remembered by frame number.
-- Every pass: the frame that completed a set shows the reassembled snapshot; the other chunks
-- link to it.
local chunk_sets, chunk_frames = {}, {}

local function chunk_key(pinfo, tick)
    return tostring(pinfo.src) .. ":" .. tostring(pinfo.src_port) .. ">" .. tostring(pinfo.dst) .. ":" ..
        tostring(pinfo.dst_port) .. "#" .. tostring(tick)
end

local function store_chunk(pinfo, tick, total, index, count, blocks)
    local key = chunk_key(pinfo, tick)
    local set = chunk_sets[key]
    if set == nil or set.complete then
        set = { total = total, parts = {}, have = 0 }
        chunk_sets[key] = set
    end
    local note = { set = set }
    if set.total ~= total then
        set.bad = true
        note.rule, note.detail = RULE.chunk_total_mismatch, sfmt("totalChunks %d, the set has %d", total, set.total)
    elseif set.parts[index] then
        note.rule, note.detail = RULE.chunk_duplicate, sfmt("chunk %d first seen in frame %d", index, set.parts[index].frame)
    else
        set.parts[index] = { frame = pinfo.number, count = count, blocks = blocks }
        set.have = set.have + 1
        if set.have == set.total and not set.bad then set.complete = pinfo.number end
    end
    chunk_frames[pinfo.number] = note
end

local function show_reassembled(set, root)
    local count, blocks = 0, ByteArray.new()
    for i = 0, set.total - 1 do
        count = count + set.parts[i].count
        blocks:append(set.parts[i].blocks)
    end
    count = count % 65536
    local full = ByteArray.new(sfmt("%02x%02x", math.floor(count / 256), count % 256))
    full:append(blocks)
    local rtvb = full:tvb("Reassembled snapshot")
    local rt = root:add(rtvb(), sfmt("Reassembled snapshot (%d entities from %d chunks)", count, set.total))
    for i = 0, set.total - 1 do
        rt:add(PF.chunk_frame, set.parts[i].frame):set_generated()
    end
    rt:add(PF.reassembled_length, rtvb:len()):set_generated()
    local c = decode_message(REASSEMBLED, rtvb, 0, rtvb:len(), rt)
    for _, fd in ipairs(c.findings) do
        fd.detail = "in the reassembled snapshot" .. ((fd.detail and fd.detail ~= "") and ": " .. fd.detail or "")
    end
    emit(rt, rtvb, 0, c.findings)
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

    -- Header fields, as far as the datagram holds them.
    local hlen = h.len < n and h.len or n
    local ht = root:add(tvb(0, hlen), sfmt("Header (%d-byte layout)", h.len))
    ht:add(PF.header_len, h.len):set_generated()
    local hc = new_walk(tvb, 0, hlen, false)
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

    if h ~= HEADERS[1] then
        report(RULE.old_header, 0, h.len, "")
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
    local c = decode_message(m, ptvb, pbase, plen, mt)

    local total, index = c.facts.TotalChunks, c.facts.ChunkIndex
    if total ~= nil and index ~= nil then
        info = info .. sfmt(" chunk %d/%d", index + 1, total)
        if total == 0 then
            finding(c, RULE.chunk_total_zero, c.at.TotalChunks, 2, "")
        elseif index >= total then
            finding(c, RULE.chunk_index, c.at.ChunkIndex, 2, sfmt("chunkIndex %d, totalChunks %d", index, total))
        elseif c.entities_at ~= nil then
            if not pinfo.visited and chunk_frames[pinfo.number] == nil then
                local ea = c.entities_at
                local blocks = plen > ea and ptvb(pbase + ea, plen - ea):bytes() or ByteArray.new()
                store_chunk(pinfo, tick, total, index, c.entity_count, blocks)
            end
            local note = chunk_frames[pinfo.number]
            if note then
                if note.rule then finding(c, note.rule, c.at.TotalChunks, 4, note.detail) end
                local set = note.set
                if set.complete == pinfo.number then
                    show_reassembled(set, root)
                    info = info .. " [reassembled]"
                elseif set.complete then
                    mt:add(PF.reassembled_in, set.complete):set_generated()
                end
            end
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
    chunk_sets, chunk_frames = {}, {}
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
