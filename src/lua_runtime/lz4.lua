-- The LZ4 output buffer, reused by every datagram (the walk reads it; its strings are copied).
local LZ4_OUT = {}

--- Decompresses a raw LZ4 block (no frame, no size prefix) held in b[from..to] into LZ4_OUT,
--- after the `start` bytes already there (an LZ4 frame's earlier blocks, which its matches may
--- reach back into; 0 when absent). Returns the decompressed length so far, or nil and a
--- reason. Output is limited to `limit` bytes.
local lz4_block
do
    local floor, tmove = math.floor, table.move
    lz4_block = function(b, from, to, limit, start)
        if from > to then return nil, "empty block" end
        local out, o, i = LZ4_OUT, start or 0, from
        while true do
            if i > to then return nil, "block ends before a token" end
            local token = b[i]
            i = i + 1
            local lit = floor(token / 16)
            if lit == 15 then
                repeat
                    if i > to then return nil, "block ends inside a literal length" end
                    local x = b[i]
                    i = i + 1
                    lit = lit + x
                until x ~= 255
            end
            if i + lit - 1 > to then return nil, "literals run past the end of the block" end
            if o + lit > limit then return nil, "output larger than " .. limit .. " bytes" end
            if tmove then
                tmove(b, i, i + lit - 1, o + 1, out)
            else
                local d = i - 1 - o
                for k = o + 1, o + lit do out[k] = b[k + d] end
            end
            o = o + lit
            i = i + lit
            if i > to then break end -- the last sequence has literals only
            if i + 1 > to then return nil, "block ends inside a match offset" end
            local offset = b[i] + b[i + 1] * 256
            i = i + 2
            if offset == 0 or offset > o then
                return nil, "match offset " .. offset .. " out of range"
            end
            local mlen = token % 16
            if mlen == 15 then
                repeat
                    if i > to then return nil, "block ends inside a match length" end
                    local x = b[i]
                    i = i + 1
                    mlen = mlen + x
                until x ~= 255
            end
            mlen = mlen + 4
            if o + mlen > limit then return nil, "output larger than " .. limit .. " bytes" end
            if tmove and offset >= mlen then
                tmove(out, o - offset + 1, o - offset + mlen, o + 1)
            else
                for k = o + 1, o + mlen do out[k] = out[k - offset] end
            end
            o = o + mlen
        end
        return o
    end
end
