-- Shared by the embedding specs (50-embed, 51-dlpack): shell commands, make targets, and the
-- C test host (spec/embed_test.c, built as build/embed-test).

local M = {}

-- Runs a shell command; returns its output (stdout and stderr) and whether it exited 0.
function M.sh(command)
  local p = assert(io.popen(command .. " 2>&1"))
  local out = p:read("a")
  local ok = p:close()
  return out, ok
end

function M.make(target)
  local out, ok = M.sh("make -s " .. target)
  assert(ok, "make " .. target .. " failed:\n" .. out)
  return out
end

-- Runs Lua code in the C test host; returns its output and whether it exited 0.
function M.run_host(code)
  M.make("build/embed-test")
  local script = os.tmpname()
  local f = assert(io.open(script, "w"))
  f:write(code)
  f:close()
  local out, ok = M.sh("build/embed-test " .. script)
  os.remove(script)
  return out, ok
end

return M
