-- examples/*.lua: each runs in a child Lua.  Without a device each must say so and exit 0
-- (after compiling its kernel with NVRTC); on a GPU each must exit 0 and print a line that
-- starts with "OK" once its result matches the CPU reference it computes.
local busted = require "busted"
local helpers = require "helpers"

local function example_files()
  local files = {}
  local listing = assert(io.popen("ls examples/*.lua 2>/dev/null"))
  for path in listing:lines() do files[#files + 1] = path end
  listing:close()
  table.sort(files)
  return files
end

local function read_file(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  return text
end

-- Runs one example as a script of its own (a child process, so os.exit and errors stay there).
local function run_example(path)
  return helpers.run_lua(("arg = {[0] = %q}\ndofile(%q)\n"):format(path, path))
end

local examples = example_files()

describe("examples", function()
  it("are there to run", function()
    assert.is_true(#examples > 0, "no examples/*.lua found (run busted from the repository root)")
  end)

  it("are each listed in the README", function()
    local readme = read_file("README.md")
    for _, path in ipairs(examples) do
      assert.is_truthy(readme:find(path, 1, true), path .. " is missing from README.md")
    end
  end)

  for _, path in ipairs(examples) do
    if helpers.has_gpu then
      busted.pending(path .. " without a device (this machine has one)")
    else
      it(path .. " without a device says so and exits 0", function()
        local out, ok = run_example(path)
        assert.is_true(ok, path .. " failed:\n" .. out)
        assert.is_truthy(out:find("No CUDA device found", 1, true),
                         path .. " did not say that no device was found:\n" .. out)
      end)
    end

    -- The stand-in driver runs no kernels, so an example's comparison with the CPU fails
    -- there, and says so on a line of its own; any other ending (a Lua error from a renamed
    -- function, a misspelt option, a wrong argument) fails this spec.  So the CPU suite
    -- checks every call an example makes, not only that it sees no device.
    it(path .. " makes each of its calls on the stand-in driver", function()
      local out, ok = helpers.run_with_fakes(("arg = {[0] = %q}\ndofile(%q)\n"):format(path, path))
      assert.is_falsy(out:find("stack traceback", 1, true), path .. " raised an error:\n" .. out)
      local finished = ok and ("\n" .. out):find("\nOK") or not ok and ("\n" .. out):find("\nFAILED: ")
      assert.is_truthy(finished, path .. " ended neither with OK nor with FAILED:\n" .. out)
    end)

    helpers.gpu_it(path .. " matches its CPU reference", function()
      local out, ok = run_example(path)
      assert.is_true(ok, path .. " failed:\n" .. out)
      assert.is_truthy(("\n" .. out):find("\nOK"), path .. " printed no OK line:\n" .. out)
    end)
  end
end)
