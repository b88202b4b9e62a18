-- A CPU model of kernels/scan.cu's single-pass scan with decoupled look-back, step for step
-- (tile counter, striped load, per-thread totals, warp shuffles, aggregate and prefix
-- publishing, the sliding look-back window of 32 lanes' statuses, the seeded per-thread
-- rescan, rows scanned each on their own), so spec 31 can check its indexing and its order of
-- combination without a GPU.
-- Blocks are coroutines run in a random interleaving, at most `resident` at a time, yielding
-- wherever the kernel could be overtaken (and while spinning on a flag).

local M = {}

local NOT_READY, AGGREGATE, PREFIX = 0, 1, 2

-- scan(values, op, opts) -> a new table of the scan of values (1-based).
-- opts: block, items, look_back (statuses a lane reads; default the kernel's 128, 32, 2),
-- row_len (default #values: one row; a divisor of #values), exclusive, neutral, junk (what the kernel's gpu_t() stands for: the filler past the end;
-- must be a valid operand), poison (what tiles before a row's first hold: op must reject it), resident
-- (default 8), random (a function like math.random).
function M.scan(values, op, opts)
  local BLOCK, ITEMS = opts.block or 128, opts.items or 32
  local LOOK_BACK = opts.look_back or 2
  local WINDOW = 32 * LOOK_BACK
  assert(BLOCK % 32 == 0)
  local WARPS, TILE = BLOCK // 32, BLOCK * ITEMS
  local random = opts.random or math.random
  local n = #values
  local row_len = opts.row_len or n
  assert(row_len > 0 and n % row_len == 0)
  local row_tiles = (row_len + TILE - 1) // TILE
  local tiles = row_tiles * (n // row_len)
  local counter = 0
  local flags, aggregates, prefixes = {}, {}, {}
  for t = 0, tiles - 1 do flags[t] = NOT_READY end
  local out = {}

  local function publish(tile, flag, v)
    if flag == PREFIX then prefixes[tile] = v else aggregates[tile] = v end
    flags[tile] = flag
  end

  -- __shfl_up_sync: every lane reads the value lane - delta held before the step.
  local function shfl_up(v, lane_of, delta, lane)
    return lane >= delta and v[lane_of - delta] or v[lane_of]
  end

  -- Lane `lane` holds the LOOK_BACK statuses from e - WINDOW + lane * LOOK_BACK on; a status
  -- once read is kept, and only those not ready are read again.
  local function look_back(tile, row_first)
    local prefix, has = nil, false
    local e = tile
    while true do
      local flag, v = {}, {}
      repeat
        local waiting = false
        for i = 0, WINDOW - 1 do
          local p = e - WINDOW + i
          if flag[i] == nil or flag[i] == NOT_READY then flag[i] = p < row_first and PREFIX or flags[p] end
          if flag[i] == NOT_READY then waiting = true end
        end
        if waiting then coroutine.yield() end
      until not waiting
      local lane_prefix = {}
      for lane = 0, 31 do
        for j = 0, LOOK_BACK - 1 do
          local i = lane * LOOK_BACK + j
          local p = e - WINDOW + i
          local x
          if p < row_first then x = opts.poison
          else x = flag[i] == PREFIX and prefixes[p] or aggregates[p] end
          if j == 0 or flag[i] == PREFIX then v[lane] = x else v[lane] = op(v[lane], x) end
          if flag[i] == PREFIX then lane_prefix[lane] = true end
        end
      end
      local found = false
      local start = 0
      for lane = 31, 0, -1 do
        if lane_prefix[lane] then start, found = lane, true break end
      end
      local off = 1
      while off < 32 do
        local old = table.move(v, 0, 31, 0, {})
        for lane = 0, 31 do
          if lane - off >= start then v[lane] = op(old[lane - off], old[lane]) end
        end
        off = off * 2
      end
      local window = v[31]
      if has then prefix = op(window, prefix) else prefix = window end
      has = true
      if found then return prefix end
      e = e - WINDOW
    end
  end

  local function block()
    coroutine.yield()
    local tile
    -- the counter (the kernel takes blockIdx.x for rows of one tile, where no tile waits)
    tile, counter = counter, counter + 1
    coroutine.yield()
    local row = tile // row_tiles
    local row_first = row * row_tiles
    local in_row = (tile - row_first) * TILE
    local base = row * row_len + in_row
    local count = math.min(row_len - in_row, TILE)
    local smem = {}
    for j = 0, TILE - 1 do smem[j] = j < count and values[base + j + 1] or opts.junk end
    local items, total, inclusive = {}, {}, {}
    for t = 0, BLOCK - 1 do
      local it = {}
      for q = 0, ITEMS - 1 do it[q] = smem[t * ITEMS + q] end
      items[t] = it
      local s = it[0]
      for q = 1, ITEMS - 1 do s = op(s, it[q]) end
      total[t] = s
      inclusive[t] = s
    end
    local lane_prefix, warp_totals = {}, {}
    for w = 0, WARPS - 1 do
      local off = 1
      while off < 32 do
        local old = table.move(inclusive, w * 32, w * 32 + 31, w * 32, {})
        for lane = 0, 31 do
          local t = w * 32 + lane
          if lane >= off then inclusive[t] = op(shfl_up(old, t, off, lane), old[t]) end
        end
        off = off * 2
      end
      for lane = 0, 31 do
        local t = w * 32 + lane
        lane_prefix[t] = shfl_up(inclusive, t, 1, lane)
      end
      warp_totals[w] = inclusive[w * 32 + 31]
    end
    local aggregate = warp_totals[0]
    for w = 1, WARPS - 1 do aggregate = op(aggregate, warp_totals[w]) end
    local block_prefix
    if tile == row_first then
      if row_tiles > 1 then publish(tile, PREFIX, aggregate) end
    else
      publish(tile, AGGREGATE, aggregate)
      coroutine.yield()
      block_prefix = look_back(tile, row_first)
      publish(tile, PREFIX, op(block_prefix, aggregate))
    end
    coroutine.yield()
    for t = 0, BLOCK - 1 do
      local warp, lane = t // 32, t % 32
      local run, has = nil, false
      if tile > row_first then run, has = block_prefix, true end
      for w = 0, warp - 1 do
        if has then run = op(run, warp_totals[w]) else run = warp_totals[w] end
        has = true
      end
      if lane > 0 then
        if has then run = op(run, lane_prefix[t]) else run = lane_prefix[t] end
        has = true
      end
      local it = items[t]
      for q = 0, ITEMS - 1 do
        local v = it[q]
        if opts.exclusive then
          it[q] = has and run or opts.neutral
          if has then run = op(run, v) else run = v end
        else
          if has then run = op(run, v) else run = v end
          it[q] = run
        end
        has = true
      end
      for q = 0, ITEMS - 1 do smem[t * ITEMS + q] = it[q] end
    end
    for j = 0, count - 1 do out[base + j + 1] = smem[j] end
  end

  -- Launch the grid in a random block order, opts.resident blocks at a time.
  local waiting, running = tiles, {}
  local steps, limit = 0, 1000 * (tiles + 1) * (tiles + 1)
  while waiting > 0 or #running > 0 do
    while waiting > 0 and #running < (opts.resident or 8) do
      running[#running + 1] = coroutine.create(block)
      waiting = waiting - 1
    end
    local i = random(#running)
    local ok, err = coroutine.resume(running[i])
    if not ok then error(err, 0) end
    if coroutine.status(running[i]) == "dead" then table.remove(running, i) end
    steps = steps + 1
    if steps > limit then error("scan_sim: no progress (deadlock?)") end
  end
  return out, tiles
end

return M
