-- busted output: the plain terminal report, then one last line for CI:
--   N passed, N failed, N skipped
-- With SPEC_TIMES set to a file name, each test also appends a line to that file: its
-- seconds, its status, where it is defined and its full name, tab-separated (tools/gpu-checks.sh's lanes list the
-- slowest from it, to balance its lanes).
return function(options)
  local busted = require "busted"
  local handler = require "busted.outputHandlers.plainTerminal"(options)
  busted.subscribe({"suite", "end"}, function()
    io.write(("%d passed, %d failed, %d skipped\n"):format(handler.successesCount,
      handler.failuresCount + handler.errorsCount, handler.pendingsCount))
    io.flush()
    return nil, true
  end, {priority = 2})
  local times = os.getenv("SPEC_TIMES")
  if times and times ~= "" then
    busted.subscribe({"test", "end"}, function(element, _, status)
      local f = io.open(times, "a")
      if f then
        local trace = element.trace or {}
        f:write(("%.2f\t%s\t%s:%s\t%s\n"):format(element.duration or 0, status, trace.short_src or "?",
                                                 trace.currentline or "?", handler.getFullName(element)))
        f:close()
      end
      return nil, true
    end)
  end
  return handler
end
