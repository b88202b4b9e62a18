-- tests/matmul_check.lua: the thread workers' product check (make threads, threads-capture),
-- loaded with dofile from the tree's root.  check(gpu, size, who) multiplies two size x size
-- float64 matrices of small integers (exact sums) on the GPU and compares 16 sampled
-- elements with Lua's sums; a wrong one raises, naming who.
return function(gpu, size, who)
  local ha, hb = gpu.host.empty({size, size}, "float64"), gpu.host.empty({size, size}, "float64")
  for i = 1, size * size do ha[i], hb[i] = math.random(-8, 8), math.random(-8, 8) end
  local product = gpu.gpuarray.matmul(gpu.to_gpu(ha), gpu.to_gpu(hb)):get()
  for _ = 1, 16 do
    local i, j, want = math.random(size), math.random(size), 0
    for l = 1, size do want = want + ha[(i - 1) * size + l] * hb[(l - 1) * size + j] end
    local got = product[(i - 1) * size + j]
    if got ~= want then
      error(("%s: product element %d, %d is %s, expected %s"):format(who, i, j, got, want), 0)
    end
  end
end
