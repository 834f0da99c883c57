-- ---------------------------------------------------------------------------------------------
-- Statistics, preferences and registration (hand-written, fixed).
-- ---------------------------------------------------------------------------------------------

--- The columns of `rows` (lists of strings) left-aligned under `head`, as text lines.
local function text_table(head, rows)
    -- Widths in characters: UTF-8 continuation bytes do not count.
    local function width(cell) return #(cell:gsub("[\128-\191]", "")) end
    local widths = {}
    for k, cell in ipairs(head) do widths[k] = width(cell) end
    for _, row in ipairs(rows) do
        for k, cell in ipairs(row) do
            if widths[k] < width(cell) then widths[k] = width(cell) end
        end
    end
    local lines = {}
    local function line(row)
        local cells = {}
        for k, cell in ipairs(row) do
            local pad = widths[k] - width(cell)
            cells[k] = k < #row and cell .. string.rep(" ", pad) or cell
        end
        lines[#lines + 1] = "  " .. tconcat(cells, "  ")
    end
    line(head)
    for _, row in ipairs(rows) do line(row) end
    return tconcat(lines, "\n")
end

local DIALECT_ORDER = { rtype = 1, rt = 2, rtnp = 3 }
local SEVERITY_ORDER = { error = 1, warning = 2, info = 3 }

--- The capture's statistics as text: its conversations, the message counts and the violations,
--- as the summary of `rtype-inspect` lists them.
local function statistics_text()
    local out = { sfmt("R-Type: %d datagram%s, %d conversation%s", STATS.datagrams, STATS.datagrams == 1 and "" or "s",
        CONV_COUNT, CONV_COUNT == 1 and "" or "s") }
    local rows = {}
    for n = 1, CONV_COUNT do
        local c = CONV_LIST[n]
        rows[#rows + 1] = { tostring(n), c.client, c.server, tostring(c.first), tostring(c.datagrams), tostring(c.bytes) }
    end
    if #rows > 0 then
        out[#out + 1] = "\nConversations\n" .. text_table({ "#", "Client", "Server", "First frame", "Datagrams", "Bytes" }, rows)
        -- The endpoints of those conversations: each client, and each server by its address (it
        -- answers from other ports than the one it listens on).
        local endpoints, order = {}, {}
        for n = 1, CONV_COUNT do
            local c = CONV_LIST[n]
            for _, e in ipairs({ { c.client, "client" }, { c.server:match("^(.*):%d+$") or c.server, "server" } }) do
                local row = endpoints[e[1]]
                if row == nil then
                    row = { name = e[1], role = e[2], conversations = 0, datagrams = 0, bytes = 0 }
                    endpoints[e[1]] = row
                    order[#order + 1] = row
                end
                row.conversations = row.conversations + 1
                row.datagrams = row.datagrams + c.datagrams
                row.bytes = row.bytes + c.bytes
            end
        end
        rows = {}
        for _, e in ipairs(order) do
            rows[#rows + 1] = { e.name, e.role, tostring(e.conversations), tostring(e.datagrams), tostring(e.bytes) }
        end
        out[#out + 1] = "\nEndpoints\n" .. text_table({ "Endpoint", "Role", "Conversations", "Datagrams", "Bytes" }, rows)
    end
    local messages = {}
    for dialect, by_dir in pairs(STATS.messages) do
        for dir, by_key in pairs(by_dir) do
            for _, m in pairs(by_key) do
                messages[#messages + 1] = { dialect = dialect, dir = dir, code = m.code, name = m.name, count = m.count }
            end
        end
    end
    table.sort(messages, function(a, b)
        if a.dialect ~= b.dialect then return DIALECT_ORDER[a.dialect] < DIALECT_ORDER[b.dialect] end
        if a.dir ~= b.dir then return a.dir < b.dir end
        if (a.code or -1) ~= (b.code or -1) then return (a.code or -1) < (b.code or -1) end
        return a.name < b.name
    end)
    rows = {}
    for _, m in ipairs(messages) do
        rows[#rows + 1] = { m.dialect, ({ [0] = "?", "C→S", "S→C" })[m.dir], m.code and sfmt("0x%02X", m.code) or "",
                            m.name, tostring(m.count) }
    end
    out[#out + 1] = "\nMessages\n" .. text_table({ "Dialect", "Direction", "Code", "Message", "Count" }, rows)
    local rules = {}
    for id, r in pairs(STATS.rules) do rules[#rules + 1] = { id = id, count = r.count, first = r.first } end
    table.sort(rules, function(a, b)
        local sa, sb = SEVERITY_ORDER[SEVERITY[a.id]] or 4, SEVERITY_ORDER[SEVERITY[b.id]] or 4
        if sa ~= sb then return sa < sb end
        return a.id < b.id
    end)
    if #rules == 0 then
        out[#out + 1] = "\nNo violations."
    else
        rows = {}
        for _, r in ipairs(rules) do
            rows[#rows + 1] = { r.id, SEVERITY[r.id] or "", tostring(r.count), tostring(r.first),
                                SUMMARY[r.id] .. " (" .. (SECTION[r.id] or "") .. ")" }
        end
        out[#out + 1] = "\nViolations\n" .. text_table({ "Violation", "Severity", "Count", "First", "What (document section)" }, rows)
    end
    return tconcat(out, "\n") .. "\n"
end

-- Statistics → R-Type in Wireshark; `tshark -z rtype,stat` prints the same at the end.
if gui_enabled() then
    register_menu("R-Type", function()
        local window = TextWindow.new("R-Type statistics")
        window:set(statistics_text())
    end, MENU_STAT_GENERIC)
end
-- Follow R-Type entity: filters the frames that name the selected packet's entity (the first
-- one it names), by its protocol's entity field (FOLLOW). Where Wireshark has register_packet_menu
-- (4.4 and 4.6 have it, 4.0 has not) it is in the packet list's context menu; elsewhere it is
-- under Analyze, asking for the id. tshark has no menus: nothing is registered there.
local function follow(name, id)
    set_filter(sfmt("%s == %d", name, id))
    apply_filter()
end
if gui_enabled() then
    for _, name in ipairs(FOLLOW) do
        local label = "Follow R-Type entity (" .. name .. ")"
        if register_packet_menu then
            register_packet_menu("R-Type/" .. label, function(...)
                for _, f in ipairs({ ... }) do
                    if f.name == name then return follow(name, f.value) end
                end
            end, name)
        else
            register_menu(label, function()
                new_dialog(label, function(text)
                    local id = tonumber(text)
                    if id and id >= 0 and id < 4294967296 and id == math.floor(id) then follow(name, id) end
                end, "Entity ID")
            end, MENU_ANALYZE_UNSORTED)
        end
    end
end
register_stat_cmd_arg("rtype,stat", function()
    local listener = Listener.new("frame", "rtype || rt || rtnp")
    function listener.draw()
        io.write("\n" .. statistics_text())
    end
end)

-- Preferences (Edit → Preferences → Protocols → RTYPE, RT, RTNP; tshark -o rtype.profile:NAME).
local profile_choices = { { "auto", "Automatic: the document's, or per conversation the bundled profile its snapshots fit", 0 } }
for i, p in ipairs(PROFILES) do profile_choices[i + 1] = { p.name, p.label, i } end
rtype.prefs.profile = Pref.enum("Snapshot profile", DEFAULT_PROFILE, "Layout of the fields an entity's update mask "
    .. "gates: automatic (a conversation whose snapshots the document misreads is read with the bundled "
    .. "profile that reads them, and says so), the document's, or a real build's (see samples/profiles/)",
    profile_choices, false)
rtype.prefs.check_crc = Pref.bool("Check the CRC32 footer", true, "Compute each datagram's CRC-32 and report a mismatch")
rtype.prefs.heuristic = Pref.bool("Recognise rtype on any UDP port", true,
    "Try every UDP datagram for the rtype magic (as rtype_udp in Analyze → Enabled Protocols)")
rtype.prefs.udp_port = Pref.uint("UDP port", C.DEFAULT_PORT, "UDP port the R-Type server listens on (0 = heuristic only)")
rt.prefs.heuristic = Pref.bool("Recognise rt on any UDP port", true, "Try every UDP datagram for the rt magic")
rt.prefs.udp_port = Pref.uint("UDP port", 0, "UDP port the rt server listens on (0 = heuristic only)")
rtnp.prefs.heuristic = Pref.bool("Recognise rtnp on any UDP port", true,
    "Try every UDP datagram for JSON, a keep-alive or a Cap'n Proto envelope")
rtnp.prefs.udp_port = Pref.uint("UDP port", 0, "UDP port the rtnp server listens on (0 = heuristic only)")

local HEURISTIC = { rtype = true, rt = true, rtnp = true }
local udp_table = DissectorTable.get("udp.port")
local PORTS = {}

--- Registers `proto` (named `name`) on its port preference, instead of the previous port.
local function register_port(proto, name)
    if PORTS[name] and PORTS[name] ~= 0 then udp_table:remove(PORTS[name], proto) end
    PORTS[name] = proto.prefs.udp_port
    if PORTS[name] ~= 0 then udp_table:add(PORTS[name], proto) end
end

rtype.prefs_changed = function()
    AUTO = rtype.prefs.profile == 0
    PROFILE = PROFILES[rtype.prefs.profile] or PROFILES[1]
    CHECK_CRC = rtype.prefs.check_crc
    HEURISTIC.rtype = rtype.prefs.heuristic
    register_port(rtype, "rtype")
end
rt.prefs_changed = function()
    HEURISTIC.rt = rt.prefs.heuristic
    register_port(rt, "rt")
end
rtnp.prefs_changed = function()
    HEURISTIC.rtnp = rtnp.prefs.heuristic
    register_port(rtnp, "rtnp")
end

rtype.dissector, rt.dissector, rtnp.dissector = rtype_dissect, rt_dissect, rtnp_dissect
register_port(rtype, "rtype")
rtype.init = function()
    shared_reset()
    rtype_reset()
end
rt.init = rt_reset
rtnp.init = rtnp_reset

rtype:register_heuristic("udp", function(tvb, pinfo, tree)
    return HEURISTIC.rtype and rtype_dissect(tvb, pinfo, tree) > 0
end)
rt:register_heuristic("udp", function(tvb, pinfo, tree)
    return HEURISTIC.rt and rt_dissect(tvb, pinfo, tree) > 0
end)
rtnp:register_heuristic("udp", function(tvb, pinfo, tree)
    return HEURISTIC.rtnp and rtnp_dissect(tvb, pinfo, tree) > 0
end)

-- Decode As → UDP port → RTYPE, RT or RTNP (tshark -d udp.port==4242,rtnp).
if udp_table.add_for_decode_as then
    for _, proto in ipairs({ rtype, rt, rtnp }) do pcall(udp_table.add_for_decode_as, udp_table, proto) end
end
