-- The C that gpu.operators generates, run on the CPU: kernels/elementwise.cu's helpers and
-- each expression compiled as host C++ under UndefinedBehaviorSanitizer (spec/host_eval.lua)
-- and checked against the CPU reference.  Needs clang++; pending without it.
local operators = require "gpu.operators"
local R = require "array_reference"
local H = require "host_eval"

local host_it = H.available() and it or function(name)
  pending(name .. " (no clang++)")
end

describe("generated C on the CPU (clang++ -fsanitize=undefined)", function()
  host_it("multiplies uint16 without signed int overflow", function()
    -- C promotes unsigned short to int: 65535 * 65535 overflowed it (undefined behaviour)
    local r = H.eval{{"mul", {"uint16", "uint16"}, {{65535, 40000}, {65535}}}}
    assert.are.same({1, R.wrap("uint16", 40000 * 65535)}, r[1])
    local e = operators.expression("mul", {"uint16", "uint16"}, {"a", "b"})
    assert.are.equal("((unsigned short)((unsigned int)(a) * (unsigned int)(b)))", e)
  end)
end)
