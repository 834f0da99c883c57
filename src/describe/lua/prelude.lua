-- ---------------------------------------------------------------------------------------------
-- Expressions (hand-written, fixed). rtype-inspect evaluates a description's `if`, `size` and
-- `repeat-expr` in 64-bit integers; each is compiled below into a function of V, the values
-- read so far by their field's name. Lua 5.3+ (Wireshark 4.4, 4.6) has 64-bit integers and bit
-- operators, compiled with load() so that Lua 5.2 (Wireshark 4.0) never parses them; Lua 5.2 has
-- doubles and `bit32`, whose and, or and xor see the low 32 bits. As in rtype-inspect, shift
-- counts are clamped to 0..63, `>>` is arithmetic, division truncates towards zero, and an
-- expression that divides by zero or reads a field that was not read has no value.
-- ---------------------------------------------------------------------------------------------
local band, bor, bxor, lshift, rshift, idiv
if _VERSION == "Lua 5.1" or _VERSION == "Lua 5.2" then
    local floor = math.floor
    local function count(b)
        if b < 0 then return 0 elseif b > 63 then return 63 end
        return b
    end
    band, bor, bxor = bit32.band, bit32.bor, bit32.bxor
    lshift = function(a, b) return a * 2 ^ count(b) end
    rshift = function(a, b) return floor(a / 2 ^ count(b)) end
    idiv = function(a, b)
        if b == 0 then error("division by zero", 0) end
        local q = a / b
        if q < 0 then return -floor(-q) end
        return floor(q)
    end
else
    band, bor, bxor, lshift, rshift, idiv = load([[
        local function count(b)
            if b < 0 then return 0 elseif b > 63 then return 63 end
            return b
        end
        return function(a, b) return a & b end,
            function(a, b) return a | b end,
            function(a, b) return a ~ b end,
            function(a, b) return a << count(b) end,
            function(a, b)
                b = count(b)
                if a >= 0 then return a >> b end
                return ~(~a >> b)
            end,
            function(a, b)
                if b == 0 then error("division by zero", 0) end
                local q = a // b
                if q < 0 and q * b ~= a then q = q + 1 end
                return q
            end]])()
end
local function irem(a, b)
    return a - idiv(a, b) * b
end

--- The values of V: reading a field that was not read raises, which makes the expression
--- reading it unknown (rawget reads V without raising).
local UNREAD = { __index = function() error("a field that was not read", 0) end }

--- `size-eos` and `repeat: eos`: up to the end of the body.
local EOS = {}

--- The value of expression `e` (a number, or a function of V), nil when it has none.
local function eval(e, V)
    if type(e) == "number" then return e end
    local ok, v = pcall(e, V)
    if ok and type(v) == "number" and v == v and v ~= math.huge and v ~= -math.huge then return v end
    return nil
end
