-- The layouts of a row-major rows x cols matrix's values that cuBLAS reads, as GPUArrays:
-- shared by spec/38 and its child process, spec/fake_blas_worker.lua.
local gpu = require "gpu"

local M = {}

local function upload(values, dtype, shape)
  return gpu.to_gpu(gpu.host.from_table(values, dtype)):reshape(shape)
end

-- how: "plain" (row-major), "transposed" (the transposed view of the values' transpose) or
-- "wide" (rows of cols + 3 elements, the last three of each row from noise, rows * 3 values).
function M.layout(values, dtype, rows, cols, how, noise)
  if how == "transposed" then
    local t = {}
    for j = 1, cols do for i = 1, rows do t[#t + 1] = values[(i - 1) * cols + j] end end
    return upload(t, dtype, {cols, rows}).T
  elseif how == "wide" then
    local w = {}
    for i = 1, rows do
      for j = 1, cols do w[#w + 1] = values[(i - 1) * cols + j] end
      for j = 1, 3 do w[#w + 1] = noise[(i - 1) * 3 + j] end
    end
    local wide = upload(w, dtype, {rows, cols + 3})
    local size = wide.itemsize
    return gpu.GPUArray({rows, cols}, dtype, {gpudata = wide.gpudata, strides = {(cols + 3) * size, size}})
  end
  return upload(values, dtype, {rows, cols})
end

return M
