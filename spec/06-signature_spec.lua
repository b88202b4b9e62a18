-- gpu.signature: the parameter types of __global__ declarations, as prepare() letters.
local helpers = require "helpers"
local gpu = helpers.gpu
local parse = gpu.signature.parse

describe("gpu.signature.parse", function()
  it("reads pointers and scalar types with qualifiers", function()
    assert.are.same({a = "PPiId"}, parse[[
      __global__ void a(float *x, const float* __restrict__ y, int n, unsigned int m, double d) {}]])
    assert.are.same({real = "qQhB?Q"}, parse[[
      __global__ void real(long long a, unsigned long long b, short c, unsigned char d, bool e,
                           size_t f) {}]])
    assert.are.same({gc = "VPIiq"}, parse[[
      __global__ void gc(const __grid_constant__ Pair p, volatile int *v, unsigned u, signed s,
                         long l) {}]])
    assert.are.same({ext = "bHeVP"}, parse[[
      extern "C" __global__ void ext(int8_t a, uint16_t b, __half h, float2 f2, int arr[4]) {}]])
    assert.are.same({ns = "iQ"}, parse"__global__ void ns(std::int32_t a, std::uint64_t b) {}")
    assert.are.same({h = "eEfd"}, parse"__global__ void h(half a, __nv_bfloat16 b, float c, double d) {}")
  end)

  it("reads parameters declared without a name", function()
    assert.are.same({u = "BbHqQIf"}, parse[[
      __global__ void u(unsigned char, signed char, unsigned short, long long,
                        unsigned long long, unsigned, float);]])
  end)

  it("treats structs by value as 'V' and references/pointers to them as 'P'", function()
    assert.are.same({s = "VVPP"}, parse[[
      struct Pair { int a; float b; };
      __global__ void s(Pair p, struct Pair q, const Pair &r, Pair *ptr) {}]])
  end)

  it("ignores comments, strings, preprocessor lines and __device__ functions", function()
    assert.are.same({real = "i"}, parse[[
      // __global__ void commented(int x)
      /* __global__ void block(int y) */
      #define KERNEL __global__ void fromdefine(int a)
      __device__ int helper(float x) { return 0; }
      const char *s = "__global__ void str(int z)";
      __global__ void real(int n) {}]])
  end)

  it("skips templates (their names are mangled) but reads what follows", function()
    assert.are.same({after = "i"}, parse[[
      template <typename T> __global__ void tpl(T *x, int n) {}
      template <typename T, int N>
      __global__ void tpl2(T *x) {}
      __global__ void after(int n) {}]])
  end)

  it("handles attributes, empty lists and declarations over several lines", function()
    assert.are.same({lb = "Pi"}, parse"__global__ void __launch_bounds__(256, 2) lb(float *a, int n) {}")
    assert.are.same({nothing = "", v = ""}, parse"__global__ void nothing() {} __global__ void v(void) {}")
    assert.are.same({multi = "Pi"}, parse[[
      __global__ void
      multi(
        float *a,   // output, with a comma
        int n       /* count, too */
      ) {}]])
  end)

  it("splits parameters only at commas outside brackets", function()
    assert.are.same({tp = "VPPV", second = ""}, parse[[
      __global__ void tp(Pair<int, float> p, int (*fp)(int, int), float a[4], S s) {}
      __global__ void second(void) {}]])
  end)

  it("finds every kernel of a source", function()
    local names, src = {}, {}
    for i = 1, 20 do
      names["k" .. i] = ("P"):rep(i % 3) .. ("i"):rep(i % 2)
      local params = {}
      for _ = 1, i % 3 do params[#params + 1] = "float *p" .. #params end
      for _ = 1, i % 2 do params[#params + 1] = "int n" end
      src[#src + 1] = ("__global__ void k%d(%s) {}"):format(i, table.concat(params, ", "))
    end
    assert.are.same(names, parse(table.concat(src, "\n")))
  end)

  it("gives nothing for source without kernels", function()
    assert.are.same({}, parse(""))
    assert.are.same({}, parse("int main() { return 0; }"))
  end)
end)
