-- ---------------------------------------------------------------------------------------------
-- Per-capture state shared by the three dialects (hand-written, fixed): conversations numbered
-- as rtype-inspect numbers them, the statistics of Statistics → R-Type, and what the tree looks
-- like.
--
-- Two-pass dissection: what depends on earlier datagrams is decided the first time a frame is
-- dissected (in frame order) and kept in flat tables keyed by frame number (only the frames it
-- concerns); later passes (pinfo.visited, or Wireshark's re-dissection of a selected packet)
-- read it back.
-- ---------------------------------------------------------------------------------------------

-- Conversations: number by key, the conversation of each frame, their endpoints and counts.
local CONVS, CONV_COUNT, CONV_OF, CONV_LIST
-- Streams (a conversation's direction): `last`, the relative time of each one's last datagram by
-- key; `delta`, the time since its stream's previous datagram of each frame (an NSTime), by frame.
local STREAMS
-- Statistics: datagrams by dialect, direction and message, findings by rule.
local STATS

-- Claims (one table: Lua allows 200 locals in the file's main function): `overflow`, the dialect
-- of the frames of conversation 0 (past the limit) by frame; the datagram whose claim was last
-- decided on its first pass (`frame`, `sport`, `dport`), the `dialect` claimed and the
-- conversation `conv` it belongs to (nil: a new one); the dialect being dissected (`dissecting`).
local CLAIM

local function shared_reset()
    CONVS, CONV_COUNT, CONV_OF, CONV_LIST = {}, 0, {}, {}
    STREAMS = { last = {}, delta = {} }
    STATS = { messages = {}, rules = {}, datagrams = 0 }
    CLAIM = { overflow = {} }
end
shared_reset()

--- The dialect the UDP payload in `tvb` is claimed as, or nil, as src/pipeline/mod.rs decides:
--- every datagram of a recognised conversation is its dialect (one whose magic or framing broke
--- is that dialect's malformed datagram); any other proves its dialect by itself (`recognise`),
--- which starts a conversation, or is other UDP. Decided on the frame's first pass, in frame
--- order, and read back on later ones.
local function claim(tvb, pinfo)
    local frame = pinfo.number
    local conv = CONV_OF[frame]
    if conv == nil and pinfo.visited then return nil end
    if conv ~= nil then
        if conv == 0 then return CLAIM.overflow[frame] end
        return CONV_LIST[conv].dialect
    end
    -- First pass: the heuristic dissectors and the port ask in turn; decide once. The
    -- conversation, either way round (src/session/mod.rs `Conversations::find`).
    local sport, dport = pinfo.src_port, pinfo.dst_port
    local c = CLAIM
    if c.frame ~= frame or c.sport ~= sport or c.dport ~= dport then
        c.frame, c.sport, c.dport = frame, sport, dport
        local src, dst = tostring(pinfo.src), tostring(pinfo.dst)
        conv = CONVS[src .. "|" .. sport .. "|" .. dst] or CONVS[dst .. "|" .. dport .. "|" .. src]
        c.conv = conv
        c.dialect = conv and CONV_LIST[conv].dialect or recognise(tvb)
    end
    return c.dialect
end

--- The conversation number of the frame: on its first pass, the conversation its addresses
--- belong to either way round (the server answers from another port than it listens on), else
--- a new one numbered in order of first appearance, its client and server by `c2s` (true: the
--- datagram goes from client to server), as src/session/mod.rs keys them: the client's address
--- and port with the server's address. Past the limit of conversations, 0. Also returns whether
--- this is the frame's first pass.
local function conversation_of(pinfo, c2s)
    local frame = pinfo.number
    local n = CONV_OF[frame]
    if n then return n, false end
    -- The claim found it (every first pass claims before it dissects).
    n = CLAIM.conv
    if n == nil then
        local src, dst, sport, dport = tostring(pinfo.src), tostring(pinfo.dst), pinfo.src_port, pinfo.dst_port
        local as_client, as_server = src .. "|" .. sport .. "|" .. dst, dst .. "|" .. dport .. "|" .. src
        if CONV_COUNT < C.MAX_CONVERSATIONS then
            CONV_COUNT = CONV_COUNT + 1
            n = CONV_COUNT
            local client, server
            if c2s then
                CONVS[as_client] = n
                client, server = src .. ":" .. sport, dst .. ":" .. dport
            else
                CONVS[as_server] = n
                client, server = dst .. ":" .. dport, src .. ":" .. sport
            end
            CONV_LIST[n] = { client = client, server = server, first = frame, datagrams = 0, bytes = 0,
                             dialect = CLAIM.dissecting }
        else
            n = 0
            CLAIM.overflow[frame] = CLAIM.dissecting
        end
    end
    CONV_OF[frame] = n
    if n ~= 0 then
        -- The stream's time delta, in whole nanoseconds as rtype-inspect counts them.
        local key, now = c2s and n or -n, pinfo.rel_ts
        local last = STREAMS.last[key]
        if last then
            local ns = math.floor((now - last) * 1e9 + 0.5)
            local secs = math.floor(ns / 1000000000)
            STREAMS.delta[frame] = NSTime(secs, ns - secs * 1000000000)
        end
        STREAMS.last[key] = now
    end
    return n, true
end

--- Adds the frame's stream time delta (`field`: its dialect's) to `root`, when it has one.
local function add_stream_delta(root, field, frame)
    local delta = STREAMS.delta[frame]
    if delta then root:add(field, delta):set_generated() end
end

--- Counts a datagram (on its first pass) for the statistics: its conversation (and `bytes`),
--- its message by dialect, direction (true: client to server, nil: unknown) and code (or name),
--- and the findings in the lists f1 to f3 (nil: none).
local function count_datagram(frame, dialect, conv, bytes, c2s, code, name, f1, f2, f3)
    STATS.datagrams = STATS.datagrams + 1
    local c = CONV_LIST[conv]
    if c then
        c.datagrams = c.datagrams + 1
        c.bytes = c.bytes + bytes
    end
    local by_dir = STATS.messages[dialect]
    if by_dir == nil then
        by_dir = {}
        STATS.messages[dialect] = by_dir
    end
    local dir = c2s == nil and 0 or (c2s and 1 or 2)
    local by_key = by_dir[dir]
    if by_key == nil then
        by_key = {}
        by_dir[dir] = by_key
    end
    local key = code or name
    local m = by_key[key]
    if m == nil then
        by_key[key] = { count = 1, code = code, name = name }
    else
        m.count = m.count + 1
    end
    if f1 == nil and f2 == nil and f3 == nil then return end
    for _, list in ipairs({ f1 or {}, f2 or {}, f3 or {} }) do
        for _, fd in ipairs(list) do
            local r = STATS.rules[fd.rule]
            if r == nil then
                STATS.rules[fd.rule] = { count = 1, first = frame }
            else
                r.count = r.count + 1
            end
        end
    end
end

--- 0: no tree (only columns and expert infos are wanted); 1: a tree that is only faked (filters,
--- colouring, custom columns, -T fields: fields are needed, not their layout); 2: a tree that is
--- drawn. Wireshark passes its root as a fake item whose text is "Wireshark Lua fake item" when
--- a tree is drawn (4.0 to 4.6), and also when it is only faked up to 4.4; 4.6 leaves a faked
--- tree's text nil, as it is without a tree. What tells the two apart in every version is
--- whether a subtree is there (no tree: none), which wslua shows only in the TreeItem's
--- `tostring` ("has subtree=true", checked in 4.0, 4.4 and 4.6); asked only when the text is nil.
local function tree_mode(tree)
    if tree.visible then return 2 end
    if tree.text ~= nil or tostring(tree):find("has subtree=true", 1, true) then return 1 end
    return 0
end

--- Dissects `tvb` as `dialect` (returns 0 when it is not that) with the driver `datagram`, under
--- protocol `proto`, column text `column`: a Lua error in the driver becomes the dialect's
--- malformed expert info (`rules.malformed`) instead of Wireshark's.
local function dissect_as(dialect, proto, column, rules, datagram, tvb, pinfo, tree)
    if claim(tvb, pinfo) ~= dialect then return 0 end
    CLAIM.dissecting = dialect
    pinfo.cols.protocol:set(column)
    local mode = tree_mode(tree)
    local root = mode > 0 and tree:add(proto, tvb()) or tree
    local ok, err = pcall(datagram, tvb, pinfo, tree, root, mode)
    if not ok then
        pcall(function()
            root:add_proto_expert_info(EX[rules.malformed], "[" .. rules.malformed .. "] " .. SUMMARY[rules.malformed] ..
                " (" .. tostring(err) .. ")")
            pinfo.cols.info:append(" [Malformed]")
        end)
    end
    return tvb:len()
end

-- ---------------------------------------------------------------------------------------------
-- rtype datagram driver (hand-written, fixed): header layout selection, the datagram checks in
-- the order of src/datagram/rtype.rs, message decoding with variants as in src/message/walk.rs,
-- what src/pipeline/rtype_arm.rs decides per conversation (the 15-byte header reported once, the
-- LevelInit archetypes entity types are checked against, snapshot-chunk reassembly as in
-- src/session/chunks.rs), and registration. Offsets and widths come from the generated HEADERS
-- table; message layouts from the generated MSG table.
-- ---------------------------------------------------------------------------------------------

-- First-pass decisions by frame: the conversation's first 15-byte header, chunk notes (a rule
-- broken), the frame that completed a chunk's set, the set a frame completed, the profile a
-- conversation's snapshots fit, the profile whose departure from the document a frame reports
-- (preference auto). Archetypes: per conversation, the LevelInit versions by frame.
local OLD_HEADER, CHUNK_NOTE, REASSEMBLED_IN, COMPLETED, SUGGESTED, DEPARTS, ARCHETYPES
-- By conversation: the 15-byte header was seen, a profile was suggested, the profile its
-- snapshots are read with from a frame on (preference auto; false: the document's, decided).
local OLD_HEADER_CONV, SUGGESTED_CONV, LAYOUT_CONV
-- Open chunk sets (oldest first), each keyed by conversation and tick.
local OPEN_SETS

local function rtype_reset()
    OLD_HEADER, CHUNK_NOTE, REASSEMBLED_IN, COMPLETED, SUGGESTED, DEPARTS, ARCHETYPES = {}, {}, {}, {}, {}, {}, {}
    OLD_HEADER_CONV, SUGGESTED_CONV, LAYOUT_CONV, OPEN_SETS = {}, {}, {}, {}
end
rtype_reset()

--- The archetypes a frame's entity types are checked against: those of the conversation's last
--- LevelInit before it.
local function archetypes_at(conv, frame)
    local versions = ARCHETYPES[conv]
    if versions == nil then return nil end
    for k = #versions, 1, -1 do
        if versions[k].frame < frame then return versions[k].archetypes end
    end
    return nil
end

-- Walk contexts: the header, the message, the reassembled snapshot.
local HEADER_WALK, MESSAGE_WALK, REASSEMBLED_WALK = walk_context(RULE), walk_context(RULE), walk_context(RULE_REASSEMBLED)

--- Adds a finding of the datagram itself to `list` (created when nil); returns the list.
local function report(list, rule, at, len, detail)
    list = list or {}
    list[#list + 1] = { rule = rule, at = at, len = len, detail = detail }
    return list
end

--- Adds a chunk to its set, as src/session/chunks.rs `ChunkSets::push` does. Returns the rule it
--- broke and its detail, if any; records the set it completed, if it did. `blocks` are the
--- chunk's entity bytes; `wire`, how to get them again: the same string, or for an LZ4 payload
--- { the compressed payload, the offset of the entities once decompressed } (a completed set
--- keeps the bytes as captured, so that what the dissector keeps is never more than the capture).
local function push_chunk(conv, tick, ts, frame, total, index, count, blocks, wire)
    if total == 0 then return RULE.chunk_total_zero, "totalChunks 0" end
    if index >= total then return RULE.chunk_index, sfmt("chunkIndex %d, totalChunks %d", index, total) end
    local i = 1
    while i <= #OPEN_SETS do
        if ts - OPEN_SETS[i].first_ts > C.CHUNK_MAX_AGE then table.remove(OPEN_SETS, i) else i = i + 1 end
    end
    local set
    for _, s in ipairs(OPEN_SETS) do
        if s.conv == conv and s.tick == tick then set = s break end
    end
    if set == nil then
        if total > C.CHUNK_MAX_CHUNKS then return RULE.chunk_limit, sfmt("totalChunks %d", total) end
        if #OPEN_SETS == C.CHUNK_MAX_OPEN then table.remove(OPEN_SETS, 1) end
        set = { conv = conv, tick = tick, total = total, first_ts = ts, frames = {}, counts = {}, blocks = {},
                wire = {}, have = 0, bytes = 0 }
        OPEN_SETS[#OPEN_SETS + 1] = set
    end
    if set.total ~= total then
        set.discarded = true
        return RULE.chunk_total_mismatch, sfmt("totalChunks %d, the set has %d", total, set.total)
    end
    if set.frames[index] then
        return RULE.chunk_duplicate, sfmt("chunk %d first seen in frame %d", index, set.frames[index])
    end
    if set.discarded then return nil end
    if set.bytes + #blocks > C.CHUNK_MAX_BYTES then
        set.discarded = true
        return RULE.chunk_limit, sfmt("the set holds %d bytes", set.bytes)
    end
    set.frames[index], set.counts[index], set.blocks[index], set.wire[index] = frame, count, blocks, wire
    set.have = set.have + 1
    set.bytes = set.bytes + #blocks
    if set.have < set.total then return nil end
    -- Complete: the set leaves the open ones. Its payload is walked once now; what is kept is its
    -- frames and its chunks as captured, to rebuild the payload when the frame is shown again.
    for k, s in ipairs(OPEN_SETS) do
        if s == set then table.remove(OPEN_SETS, k) break end
    end
    local entities = 0
    local frames, wires = {}, {}
    for k = 0, set.total - 1 do
        entities = entities + set.counts[k]
        frames[k + 1], wires[k + 1] = set.frames[k], set.wire[k]
        REASSEMBLED_IN[set.frames[k]] = frame
    end
    if entities > 65535 then entities = 65535 end
    COMPLETED[frame] = {
        frames = frames, entities = entities, wires = wires,
        payload = schar(floor(entities / 256), entities % 256) .. tconcat(set.blocks, "", 0, set.total - 1),
    }
    return nil
end

--- The payload of a completed set, rebuilt from its chunks as captured.
local function rebuilt_payload(done)
    local parts = { schar(floor(done.entities / 256), done.entities % 256) }
    for k, wire in ipairs(done.wires) do
        if type(wire) == "string" then
            parts[k + 1] = wire
        else
            local packed = wire[1]
            local n = lz4_block(bytes_of(packed, #packed), 1, #packed, C.MAX_PAYLOAD) or 0
            parts[k + 1] = wire[2] < n and string_of(LZ4_OUT, wire[2] + 1, n) or ""
        end
    end
    return tconcat(parts)
end

--- Walks (and, in a tree, shows) the snapshot a chunk completed. Its findings are the same as a
--- SERVER_SNAPSHOT's with that payload; they are kept from the first pass for passes without a
--- tree.
local function reassembled(done, root, mode, archetypes)
    if mode == 0 and done.walked then return done.findings end
    local payload = done.payload or rebuilt_payload(done)
    done.payload = nil
    local n = #payload
    local rtvb, rt
    if mode > 0 then
        rtvb = ByteArray.new(payload, true):tvb("Reassembled snapshot")
        if mode == 2 then
            rt = root:add(rtvb(), sfmt("Reassembled snapshot (%d entities from %d chunks)", done.entities, #done.frames))
        else
            rt = root
        end
        for _, f in ipairs(done.frames) do rt:add(PF.chunk_frame, f):set_generated() end
        rt:add(PF.reassembled_length, n):set_generated()
    end
    local c = REASSEMBLED_WALK
    walk_reset(c, bytes_of(payload, n), 0, n, false, rtvb, 0, mode == 2, false)
    c.archetypes = archetypes
    decode_message(REASSEMBLED, c, rt)
    done.walked, done.findings = true, c.findings
    if mode > 0 then emit(rt, rtvb, 0, c.findings, mode == 2) end
    return c.findings
end

--- The header layout whose length (and, for the older header, CRC) fits the datagram (its bytes
--- as the string `s` and the table `b`).
local function layout_of(s, b, n)
    local function fits(h)
        if n < h.len then return false end
        local pl = h.at.PayloadLen
        return n == h.len + b[pl[1] + 1] * 256 + b[pl[1] + 2] + C.CRC_LEN
    end
    if fits(HEADERS[1]) then return HEADERS[1] end
    if fits(HEADERS[2]) then
        local e = n - C.CRC_LEN
        local stored = ((b[e + 1] * 256 + b[e + 2]) * 256 + b[e + 3]) * 256 + b[e + 4]
        if stored == crc32(s, b, 1, e) then return HEADERS[2] end
    end
    return HEADERS[1]
end

--- The big-endian unsigned header field at `a` = { offset, width } (0 when the layout has none).
local function hv(b, a)
    if a == nil then return 0 end
    local v = 0
    for i = a[1] + 1, a[1] + a[2] do v = v * 256 + b[i] end
    return v
end

local function at_of(a)
    if a == nil then return 0, 0 end
    return a[1], a[2]
end

--- The other bundled profile that reads a snapshot payload the selected one cannot, if any.
local function profile_that_fits(m, c)
    local selected = PROFILE
    local found
    for _, p in ipairs(PROFILES) do
        if p ~= selected then
            PROFILE = p
            local probe = PROBE
            probe.rules = RULE
            walk_reset(probe, c.b, c.o, c.len, false, nil, 0, false, true)
            if m.body(probe, nil) and probe.pos == c.len then found = p break end
        end
    end
    PROFILE = selected
    return found
end

-- What a snapshot that stops decoding breaks: its layout is not the profile's.
local SNAPSHOT_MISFIT = { [RULE.truncated] = true, [RULE.trailing] = true, [RULE.reserved_bit] = true,
                          [RULE.undefined_bit] = true }

-- The walk context of `misreads`: no tree, findings kept.
local MISFIT_WALK = walk_context(RULE)

--- Whether profile `p` misreads snapshot payload b[o + 1 .. o + len] as message `m` (a field cut
--- short, bytes left over, a mask bit it reserves or does not define), as src/message/walk.rs
--- `misreads`.
local function misreads(m, b, o, len, p)
    local selected = PROFILE
    PROFILE = p
    local c = MISFIT_WALK
    walk_reset(c, b, o, len, false, nil, 0, false, false)
    decode_message(m, c, nil)
    PROFILE = selected
    for _, fd in ipairs(c.findings or {}) do
        if SNAPSHOT_MISFIT[fd.rule] then return true end
    end
    return false
end

--- With the preference auto, the profile conversation `conv` reads snapshot `m` (payload
--- b[o + 1 .. o + len]) of `frame` with. Deciding (first pass, whole datagrams): the
--- conversation's first snapshot the document misreads and a bundled profile reads makes that
--- profile the conversation's from this frame on, and the frame reports the departure; when no
--- bundled profile reads it, the conversation keeps the document's (src/pipeline/layouts.rs).
local function auto_profile(conv, frame, m, b, o, len, deciding)
    local chosen = LAYOUT_CONV[conv]
    if chosen and frame >= chosen.frame then return chosen.profile end
    if deciding and m.masked and chosen == nil and misreads(m, b, o, len, PROFILES[1]) then
        LAYOUT_CONV[conv] = false
        for k = 2, #PROFILES do
            if PROFILES[k].bundled and not misreads(m, b, o, len, PROFILES[k]) then
                LAYOUT_CONV[conv] = { frame = frame, profile = PROFILES[k] }
                DEPARTS[frame] = PROFILES[k]
                return PROFILES[k]
            end
        end
    end
    return PROFILES[1]
end

local function rtype_datagram(tvb, pinfo, tree, root, mode)
    local n, reported, vis, t = datagram_view(tvb, root, mode)
    local cut = reported > n
    local frame = pinfo.number
    local raw = tvb:raw(0, n)
    local b = bytes_of(raw, n)
    local h = layout_of(raw, b, n)
    local found

    -- Header fields, as far as the datagram holds them.
    local hlen = h.len < n and h.len or n
    if t then
        local ht = vis and root:add(tvb(0, hlen), sfmt("Header (%d-byte layout)", h.len)) or root
        ht:add(PF.header_len, h.len):set_generated()
        walk_reset(HEADER_WALK, b, 0, hlen, false, tvb, 0, vis, false)
        h.read(HEADER_WALK, ht)
    end
    if cut then
        found = report(found, RULE.snaplen, 0, n, sfmt("%d of %d bytes captured", n, reported))
    end

    if n < h.len + C.CRC_LEN and not (cut and n >= h.len) then
        if not cut then
            found = report(found, RULE.short, 0, n, sfmt("expected at least %d bytes, found %d", h.len + C.CRC_LEN, n))
        elseif t then
            root:add(tvb(n, 0), sfmt("[%d bytes not captured]", reported - n))
        end
        local what = cut and "Datagram cut by the capture" or "Short datagram"
        pinfo.cols.info:set(sfmt("%s (%d bytes)", what, n))
        if t then root:append_text(cut and ", not captured whole" or ", short datagram") end
        local conv, first = conversation_of(pinfo, pinfo.src_port > pinfo.dst_port)
        if t then
            root:add(PF.conversation, conv):set_generated()
            add_stream_delta(root, PF.stream_delta, frame)
        end
        if first then count_datagram(frame, "rtype", conv, reported, nil, nil, "UNKNOWN", found) end
        emit(t and root or tree, tvb, 0, found, vis)
        return
    end

    -- A datagram of an rtype conversation whose magic broke is rtype's malformed datagram.
    local magic = hv(b, h.at.Magic)
    if magic ~= C.MAGIC and not cut then
        found = report(found, RULE.magic, 0, 4, sfmt("it starts with %08X", magic))
    end

    -- The payload: what the datagram holds between header and CRC (of a cut datagram, what the
    -- capture holds of it).
    local payload_at = h.len
    local payload_end = cut and (n < reported - C.CRC_LEN and n or reported - C.CRC_LEN) or n - C.CRC_LEN
    local wire_len = payload_end - payload_at
    local announced = hv(b, h.at.PayloadLen)
    if not cut and announced ~= wire_len then
        local o, l = at_of(h.at.PayloadLen)
        found = report(found, RULE.length, o, l, sfmt("Payload Len %d, %d payload bytes in the datagram", announced, wire_len))
    end

    if cut then
        if t then root:add(PF.crc_status, 2):set_generated():append_text(" (not captured)") end
    elseif not CHECK_CRC then
        if t then
            root:add(PF.crc, tvb(payload_end, C.CRC_LEN)):append_text(" [unverified]")
            root:add(PF.crc_status, 2):set_generated()
        end
    else
        local e = payload_end
        local stored = ((b[e + 1] * 256 + b[e + 2]) * 256 + b[e + 3]) * 256 + b[e + 4]
        local computed = crc32(raw, b, 1, e)
        if stored == computed then
            if t then
                local crc_item = root:add(PF.crc, tvb(payload_end, C.CRC_LEN))
                if vis then crc_item:append_text(" [correct]") end
                crc_item:add(PF.crc_status, 1):set_generated()
            end
        else
            if t then
                local crc_item = root:add(PF.crc, tvb(payload_end, C.CRC_LEN))
                if vis then crc_item:append_text(sfmt(" [incorrect, should be 0x%08x]", computed)) end
                crc_item:add(PF.crc_status, 0):set_generated()
            end
            found = report(found, RULE.crc, payload_end, C.CRC_LEN, sfmt("stored 0x%08x, computed 0x%08x", stored, computed))
        end
    end

    local vbyte = hv(b, h.at.VersionByte)
    local version = vbyte % 128
    if version ~= C.VERSION then
        local o, l = at_of(h.at.VersionByte)
        found = report(found, RULE.version, o, l, sfmt("version %d", version))
    end
    local ptype = hv(b, h.at.PacketType)
    local ptype_ok = ptype == C.PACKET_CLIENT or ptype == C.PACKET_SERVER
    if not ptype_ok then
        local o, l = at_of(h.at.PacketType)
        found = report(found, RULE.packet_type, o, l, sfmt("packet type 0x%02x", ptype))
    end

    -- The payload to walk: pb[po + 1 .. po + plen], in ptvb at pbase.
    local compressed = h.compression and vbyte >= C.COMPRESSED_BIT
    local orig = hv(b, h.at.OrigSize)
    local pb, po, plen, ptvb, pbase = b, payload_at, wire_len, tvb, payload_at
    local payload_ok = true
    if compressed then
        local o, l = at_of(h.at.OrigSize)
        if orig <= C.COMPRESS_THRESHOLD then
            found = report(found, RULE.compress_small, o, l, sfmt("Orig. Size %d", orig))
        end
        if not cut and wire_len >= orig then
            found = report(found, RULE.compress_not_smaller, payload_at, wire_len, sfmt("%d bytes compressed, %d uncompressed", wire_len, orig))
        end
        if t then root:add(PF.payload, tvb(payload_at, wire_len)):prepend_text("Compressed ") end
        if cut then
            -- A block cut short cannot be decompressed.
            payload_ok = false
        else
            local dec, why = lz4_block(b, payload_at + 1, payload_end, C.MAX_PAYLOAD)
            if dec then
                if dec ~= orig then
                    found = report(found, RULE.orig_size, o, l, sfmt("Orig. Size %d, decompressed %d bytes", orig, dec))
                end
                pb, po, plen, pbase = LZ4_OUT, 0, dec, 0
                ptvb = nil
                if t and dec > 0 then ptvb = ByteArray.new(string_of(LZ4_OUT, 1, dec), true):tvb("Decompressed") end
            else
                payload_ok = false
                found = report(found, RULE.lz4, payload_at, wire_len, why)
            end
        end
    elseif orig ~= 0 then
        local o, l = at_of(h.at.OrigSize)
        found = report(found, RULE.orig_size_set, o, l, sfmt("Orig. Size %d", orig))
    end

    local mtype = hv(b, h.at.MessageType)
    local m = MSG[mtype]
    if m == nil then
        local o, l = at_of(h.at.MessageType)
        found = report(found, RULE.unknown_type, o, l, sfmt("message type 0x%02x", mtype))
    else
        if ptype_ok and m.dir ~= ptype then
            local o, l = at_of(h.at.PacketType)
            found = report(found, RULE.direction, o, l, sfmt("%s sent with packet type 0x%02x", m.name, ptype))
        end
        if m.seen then
            local o, l = at_of(h.at.MessageType)
            found = report(found, m.seen, o, l, m.name)
        end
    end

    -- The conversation: client and server by the packet type, else the message's direction, else
    -- the lower port is the server's.
    local c2s
    if ptype_ok then
        c2s = ptype == C.PACKET_CLIENT
    elseif m then
        c2s = m.dir == C.PACKET_CLIENT
    end
    local conv, first = conversation_of(pinfo, c2s == nil and pinfo.src_port > pinfo.dst_port or c2s)
    if first and h ~= HEADERS[1] then
        -- The 15-byte header is the whole conversation's departure: said once (spec-notes B).
        if not OLD_HEADER_CONV[conv] then OLD_HEADER[frame] = true end
        OLD_HEADER_CONV[conv] = true
    end
    if OLD_HEADER[frame] then
        found = report(found, RULE.old_header, 0, h.len, "the conversation's first datagram with it")
    end
    if t then
        root:add(PF.conversation, conv):set_generated()
        add_stream_delta(root, PF.stream_delta, frame)
    end

    local seq, tick = hv(b, h.at.Sequence), hv(b, h.at.Tick)
    local name = m and m.name or sfmt("Unknown message 0x%02x", mtype)
    local info = sfmt("%s seq=%d tick=%d", name, seq, tick)
    if t then root:append_text(sfmt(", %s, Seq %d, Tick %d", name, seq, tick)) end

    local c
    local done
    local suggested
    if m and payload_ok then
        local mt = t
        if vis then mt = root:add(ptvb(pbase, plen), sfmt("%s (%d bytes)", m.name, plen)) end
        if AUTO then
            PROFILE = auto_profile(conv, frame, m, pb, po, plen, first and not cut)
            local p = DEPARTS[frame]
            if p then
                found = report(found, RULE.snapshot_layout, payload_at, 0,
                    p.differs and sfmt("read as profile %s: %s", p.name, p.differs) or "read as profile " .. p.name)
            end
        end
        c = MESSAGE_WALK
        walk_reset(c, pb, po, plen, false, ptvb, pbase, vis, false)
        c.archetypes = archetypes_at(conv, frame)
        walk_message(m, c, mt, tvb, reported - n)

        if first and mtype == C.LEVEL_INIT and not cut then
            local a = { count = c.types and #c.types or 0, sprites = {} }
            for k, id in ipairs(c.types or {}) do
                if a.sprites[id] == nil then a.sprites[id] = (c.sprite_of and c.sprite_of[k]) or "" end
            end
            ARCHETYPES[conv] = ARCHETYPES[conv] or {}
            local versions = ARCHETYPES[conv]
            versions[#versions + 1] = { frame = frame, archetypes = a }
        end

        if not AUTO and m.masked and first and not SUGGESTED_CONV[conv] and c.findings and not cut then
            for _, fd in ipairs(c.findings) do
                if SNAPSHOT_MISFIT[fd.rule] then
                    local p = profile_that_fits(m, c)
                    if p then
                        SUGGESTED_CONV[conv] = true
                        SUGGESTED[frame] = p.name
                    end
                    break
                end
            end
        end
        suggested = SUGGESTED[frame]

        if mtype == C.SNAPSHOT_CHUNK and c.entities_at ~= nil then
            local total, index = c.total_chunks, c.chunk_index
            info = info .. sfmt(" chunk %d/%d", index + 1, total)
            if first and not cut then
                local ea = c.entities_at
                local blocks = plen > ea and string_of(pb, po + ea + 1, po + plen) or ""
                local wire = compressed and { string_of(b, payload_at + 1, payload_end), ea } or blocks
                local rule, detail = push_chunk(conv, tick, pinfo.abs_ts, frame, total, index, c.entity_count, blocks,
                    wire)
                if rule then CHUNK_NOTE[frame] = { rule = rule, detail = detail } end
            end
            local note = CHUNK_NOTE[frame]
            if note then finding(c, note.rule, 0, 4, note.detail) end
            done = COMPLETED[frame]
            if done then
                info = info .. " [reassembled]"
            elseif REASSEMBLED_IN[frame] and t then
                mt:add(PF.reassembled_in, REASSEMBLED_IN[frame]):set_generated()
            end
        end
        if t then emit(root, tvb, 0, found, vis) end
        if t then emit(mt, ptvb, pbase, c.findings, vis) end
    elseif t then
        if wire_len > 0 and not compressed then root:add(PF.payload, tvb(payload_at, wire_len)) end
        if cut and t then root:add(tvb(n, 0), sfmt("[%d bytes not captured]", reported - n)) end
        emit(root, tvb, 0, found, vis)
    end
    local rfindings
    if done then rfindings = reassembled(done, root, mode, archetypes_at(conv, frame)) end
    if suggested then
        local text = sfmt("[%s] %s (%s)", RULE.profile_suggested, SUMMARY[RULE.profile_suggested], suggested)
        if t then root:add_proto_expert_info(EX[RULE.profile_suggested], text) else tree:add_proto_expert_info(EX[RULE.profile_suggested], text) end
    end
    if not t then
        -- No tree: the expert infos still count (Statistics, -z expert, the Expert column).
        emit(tree, nil, 0, found, false)
        if c then emit(tree, nil, 0, c.findings, false) end
        if rfindings then emit(tree, nil, 0, rfindings, false) end
    end
    if first then
        count_datagram(frame, "rtype", conv, reported, c2s, mtype, m and m.name or "UNKNOWN", found, c and c.findings,
            rfindings)
    end
    pinfo.cols.info:set(info)
end

--- The rtype dissector (port, Decode As and heuristic): 0 when the payload is not rtype.
local function rtype_dissect(tvb, pinfo, tree)
    return dissect_as("rtype", rtype, "RTYPE", RULE, rtype_datagram, tvb, pinfo, tree)
end
