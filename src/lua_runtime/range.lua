--- A TvbRange inside `tvb` for [off, off+len), clamped so that it never raises an error.
local function clamp_range(tvb, off, len)
    local n = tvb:len()
    if off < 0 then off = 0 end
    if off > n then off = n end
    if len < 0 then len = 0 end
    if off + len > n then len = n - off end
    return tvb(off, len)
end
