-- busted output: the plain terminal report, then one last line for CI:
--   N passed, N failed, N skipped
return function(options)
  local busted = require "busted"
  local handler = require "busted.outputHandlers.plainTerminal"(options)
  busted.subscribe({"suite", "end"}, function()
    io.write(("%d passed, %d failed, %d skipped\n"):format(handler.successesCount,
      handler.failuresCount + handler.errorsCount, handler.pendingsCount))
    io.flush()
    return nil, true
  end, {priority = 2})
  return handler
end
