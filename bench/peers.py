"""bench/peers.py: the benchmark's figures measured with CuPy and PyTorch, for comparison.

Prints "RESULT cupy.<id> <value>" / "RESULT torch.<id> <value>" lines (times in
microseconds, bandwidths in GB/s), as bench/run.lua reads them.  A library that is not
installed, or a figure that fails, is left out with a note on stderr.
  python3 bench/peers.py [--log2n 28] [--only id,id,...]
"""
import argparse
import statistics
import sys
import time


def result(lib, fid, value):
    print(f"RESULT {lib}.{fid} {value:.6g}", flush=True)


def wall(reps, per, body, after=None):
    body()
    if after:
        after()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        body()
        times.append((time.perf_counter() - t0) * 1e6 / per)
        if after:
            after()
    return statistics.median(times)


def device(event, sync, reps, body):
    body()
    times = []
    for _ in range(reps):
        e0, e1 = event(), event()
        e0.record()
        body()
        e1.record()
        e1.synchronize()
        times.append(e0_elapsed(e0, e1) * 1e3)
    sync()
    return statistics.median(times)


def e0_elapsed(e0, e1):
    if hasattr(e0, "elapsed_time"):      # torch: ms
        return e0.elapsed_time(e1)
    import cupy                          # cupy: ms
    return cupy.cuda.get_elapsed_time(e0, e1)


def figures(lib, xp, n, want, event, sync, extra):
    """The figures both libraries share; extra(fid) runs library-specific ones."""
    def run(fid, fn):
        if fid not in want:
            return
        try:
            result(lib, fid, fn())
        except Exception as e:  # a peer's failure is a note, not the end of the run
            print(f"{lib} {fid}: {type(e).__name__}: {e}", file=sys.stderr)

    small_a = xp.asarray(rand(1000))
    small_b = xp.asarray(rand(1000))

    def small_add():
        def body():
            for _ in range(256):
                small_a + small_b
        return wall(200, 256, body, sync)
    run("small_add", small_add)

    def small_iadd():
        def body():
            for _ in range(256):
                small_a.__iadd__(small_b)
        return wall(200, 256, body, sync)
    run("small_iadd", small_iadd)

    small_c = small_a > small_b
    small_m = xp.asarray(rand(1000)).reshape(10, 100)
    small_v = xp.asarray(rand(100))

    def per_call(op):
        def body():
            for _ in range(256):
                op()
        return wall(200, 256, body, sync)
    run("small_where", lambda: per_call(lambda: xp.where(small_c, small_a, small_b)))
    run("small_broadcast", lambda: per_call(lambda: small_m + small_v))
    small_t = xp.asarray(rand(2800)).reshape(40, 70)
    small_p = xp.asarray(rand(4096)).reshape(64, 64)
    # a transposed copy: torch's contiguous(), CuPy's copy()
    copy_of = (lambda x: x.contiguous()) if hasattr(small_t, "contiguous") else (lambda x: x.copy())
    run("small_transpose", lambda: per_call(lambda: copy_of(small_t.T)))
    run("small_matmul", lambda: per_call(lambda: xp.matmul(small_p, small_p)))

    def alloc_free():
        def body():
            for _ in range(100):
                x = xp.empty(1 << 20, dtype=xp.float32)
                del x
        return wall(100, 100, body)
    run("alloc_free", alloc_free)

    a = xp.asarray(rand(n))
    b = xp.asarray(rand(n))
    c = xp.empty_like(a)
    nbytes = n * 4
    run("copy_dtod", lambda: 2 * nbytes / device(event, sync, 10, lambda: c.__setitem__(slice(None), a)) / 1e3)
    run("large_add", lambda: 3 * nbytes / device(event, sync, 10, lambda: a + b) / 1e3)
    run("sum", lambda: nbytes / device(event, sync, 10, lambda: a.sum()) / 1e3)
    run("max", lambda: nbytes / device(event, sync, 10, lambda: a.max()) / 1e3)
    run("dot", lambda: 2 * nbytes / device(event, sync, 10, lambda: xp.dot(a, b)) / 1e3)
    run("cumsum", lambda: 2 * nbytes / device(event, sync, 10, lambda: xp.cumsum(a, 0)) / 1e3)
    run("axpby_unfused", lambda: 3 * nbytes / device(event, sync, 10, lambda: 2 * a + 3 * b) / 1e3)
    extra(run, a, b, nbytes)
    del a, b, c
    sync()
    dense_figures(xp, run, want, event, sync)


def dense_figures(xp, run, want, event, sync):
    """The library kernels with no raw C twin: matmul (TFLOP/s), matrix-vector products (GB/s)
    and sort (ms)."""
    n = 4096
    for fid, dtype in (("matmul_f32", "float32"), ("matmul_f64", "float64"),
                       ("matmul_f16", "float16")):
        if fid not in want:
            continue
        a = xp.asarray(rand(n * n).astype(dtype)).reshape(n, n)
        b = xp.asarray(rand(n * n + 1)[:n * n].astype(dtype)).reshape(n, n)
        run(fid, lambda: 2 * n ** 3 / device(event, sync, 5, lambda: xp.matmul(a, b)) / 1e6)
        del a, b
    side = 8192
    for fid in ("matvec_f32", "matvec_t_f32"):
        if fid not in want:
            continue
        a = xp.asarray(rand(side * side)).reshape(side, side)
        v = xp.asarray(rand(side + 1)[:side])
        if fid == "matvec_t_f32":
            a = a.T
        run(fid, lambda: side * side * 4 * 20 / device(event, sync, 10, lambda: [xp.matmul(a, v) for _ in range(20)]) / 1e3)
        del a, v
    if "matmul_cols_f32" in want:
        a = xp.asarray(rand(side * side)).reshape(side, side)
        b = xp.asarray(rand(side * 4 + 1)[:side * 4]).reshape(side, 4)
        run("matmul_cols_f32", lambda: side * side * 4 * 20 / device(event, sync, 10, lambda: [xp.matmul(a, b) for _ in range(20)]) / 1e3)
        del a, b
    if "matmul_stack_f32" in want:
        a = xp.asarray(rand(10000 * 64)).reshape(10000, 8, 8)
        b = xp.asarray(rand(10000 * 64 + 1)[:10000 * 64]).reshape(10000, 8, 8)
        run("matmul_stack_f32", lambda: device(event, sync, 10, lambda: [xp.matmul(a, b) for _ in range(20)]) / 20)
        del a, b
    if "sort_f32" in want:
        x = xp.asarray(rand(1 << 24))
        run("sort_f32", lambda: device(event, sync, 5, lambda: xp.sort(x)) / 1e3)
        del x
    sync()


def rand(n):
    import numpy
    return numpy.random.default_rng(n).uniform(-1, 1, n).astype(numpy.float32)


def host_copies(lib, run, to_device, to_host, pinned_empty, log2n):
    n = 1 << min(log2n, 26)
    host = rand(n)
    pinned = pinned_empty(host)
    dev = to_device(host)
    run("htod_pageable", lambda: n * 4 / wall(5, 1, lambda: to_device(host)) / 1e3)
    run("htod_pinned", lambda: n * 4 / wall(5, 1, lambda: to_device(pinned)) / 1e3)
    run("dtoh_pageable", lambda: n * 4 / wall(5, 1, lambda: to_host(dev, None)) / 1e3)
    run("dtoh_pinned", lambda: n * 4 / wall(5, 1, lambda: to_host(dev, pinned)) / 1e3)


def bench_cupy(n, want, log2n):
    import cupy
    import cupyx
    sync = cupy.cuda.Device().synchronize

    # cupy.fuse names the kernel after the function: a lambda's "<lambda>" does not compile
    def axpby(x, y):
        return 2 * x + 3 * y

    def extra(run, a, b, nbytes):
        fused = cupy.fuse(axpby)
        run("axpby_fused", lambda: 3 * nbytes / device(cupy.cuda.Event, sync, 10, lambda: fused(a, b)) / 1e3)

    def one_run(fid, fn):
        if fid in want:
            try:
                result("cupy", fid, fn())
            except Exception as e:
                print(f"cupy {fid}: {type(e).__name__}: {e}", file=sys.stderr)

    small_x = cupy.asarray(rand(1000))
    small_y = cupy.asarray(rand(1000))
    small_z = cupy.empty_like(small_x)
    add = cupy.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x + y", "bench_add")

    def small_kernel():
        for _ in range(256):
            add(small_x, small_y, small_z)
    one_run("small_kernel", lambda: wall(200, 256, small_kernel, sync))

    dot = cupy.ReductionKernel("float32 x, float32 y", "float32 z", "x * y", "a + b", "z = a", "0",
                               "bench_dot")

    def small_reduction_kernel():
        for _ in range(256):
            dot(small_x, small_y)
    one_run("small_reduction_kernel", lambda: wall(200, 256, small_reduction_kernel, sync))

    empty = cupy.RawKernel(r'extern "C" __global__ void empty_kernel() {}', "empty_kernel")
    empty((1,), (1,), ())
    sync()

    def launches():
        for _ in range(256):
            empty((1,), (1,), ())

    def launch_sync():
        empty((1,), (1,), ())
        sync()
    one_run("launch_async_f", lambda: wall(200, 256, launches, sync))
    one_run("launch_sync_f", lambda: wall(2000, 1, launch_sync))
    figures("cupy", cupy, n, want, cupy.cuda.Event, sync, extra)

    def pinned_empty(host):
        p = cupyx.empty_pinned(host.shape, dtype="float32")
        p[...] = host
        return p

    def to_host(dev, out):
        if out is None:
            return cupy.asnumpy(dev)
        return cupy.asnumpy(dev, out=out)
    host_copies("cupy", one_run, cupy.asarray, to_host, pinned_empty, log2n)

    def compile_cold():
        times = []
        for rep in range(6):
            src = f"// cupy {rep} {time.time()}\n" + COMPILE_SOURCE
            t0 = time.perf_counter()
            cupy.RawModule(code=src).get_function("add_one")
            if rep:
                times.append((time.perf_counter() - t0) * 1e6)
        return statistics.median(times)
    one_run("compile_cold", compile_cold)


COMPILE_SOURCE = r'''extern "C" __global__ void add_one(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
'''


def bench_torch(n, want, log2n):
    import torch
    if not torch.cuda.is_available():
        print("torch: no CUDA device", file=sys.stderr)
        return
    sync = torch.cuda.synchronize

    torch.backends.cuda.matmul.allow_tf32 = False     # float32 products in float32, as lua-gpu's

    class XP:       # the few NumPy-style names figures() uses
        float32 = torch.float32
        matmul = staticmethod(torch.matmul)
        where = staticmethod(torch.where)

        @staticmethod
        def sort(x):
            return torch.sort(x).values

        @staticmethod
        def asarray(x):
            return torch.from_numpy(x).cuda()

        @staticmethod
        def empty(k, dtype):
            return torch.empty(k, dtype=dtype, device="cuda")

        @staticmethod
        def empty_like(x):
            return torch.empty_like(x)

        @staticmethod
        def dot(x, y):
            return torch.dot(x, y)

        @staticmethod
        def cumsum(x, axis):
            return torch.cumsum(x, axis)

    def event():
        return torch.cuda.Event(enable_timing=True)

    def extra(run, a, b, nbytes):
        del run, a, b, nbytes

    figures("torch", XP, n, want, event, sync, extra)

    def one_run(fid, fn):
        if fid in want:
            try:
                result("torch", fid, fn())
            except Exception as e:
                print(f"torch {fid}: {type(e).__name__}: {e}", file=sys.stderr)

    def to_device(h):
        t = h if isinstance(h, torch.Tensor) else torch.from_numpy(h)
        return t.to("cuda")

    def to_host(dev, out):
        if out is None:
            return dev.cpu()
        out.copy_(dev)
        return out

    def pinned_empty(host):
        return torch.from_numpy(host).pin_memory()
    host_copies("torch", one_run, to_device, to_host, pinned_empty, log2n)

    def graph_figures():
        x = torch.rand(1024, device="cuda")
        s = torch.cuda.Stream()

        def loop():
            with torch.cuda.stream(s):
                for _ in range(100):
                    x.add_(1.0)
            s.synchronize()
        t_loop = wall(50, 1, loop)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s):
            for _ in range(100):
                x.add_(1.0)

        def replay():
            g.replay()
            sync()
        t_replay = wall(50, 1, replay)
        return t_loop, t_replay
    if {"graph_loop", "graph_replay", "graph_speedup"} & want:
        try:
            t_loop, t_replay = graph_figures()
            result("torch", "graph_loop", t_loop)
            result("torch", "graph_replay", t_replay)
            result("torch", "graph_speedup", t_loop / t_replay)
        except Exception as e:
            print(f"torch graph: {type(e).__name__}: {e}", file=sys.stderr)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--log2n", type=int, default=28)
    p.add_argument("--only", default="")
    args = p.parse_args()
    want = set(filter(None, args.only.split(","))) or None
    n = 1 << args.log2n
    for lib, fn in (("cupy", bench_cupy), ("torch", bench_torch)):
        try:
            __import__(lib)
        except ImportError:
            print(f"{lib} not installed: skipped", file=sys.stderr)
            continue
        if want is None:
            want_lib = ALL_IDS
        else:
            want_lib = want
        try:
            fn(n, want_lib, args.log2n)
        except Exception as e:
            print(f"{lib}: {type(e).__name__}: {e}", file=sys.stderr)


ALL_IDS = {"launch_async_f", "launch_sync_f", "small_add", "small_iadd", "small_kernel",
           "small_where", "small_broadcast", "small_reduction_kernel", "small_transpose",
           "small_matmul",
           "alloc_free", "copy_dtod", "large_add", "sum", "max", "dot", "cumsum",
           "axpby_unfused", "axpby_fused", "htod_pageable", "htod_pinned",
           "dtoh_pageable", "dtoh_pinned", "compile_cold", "graph_loop", "graph_replay",
           "graph_speedup", "matmul_f32", "matmul_f64", "matmul_f16", "matvec_f32", "matvec_t_f32",
           "matmul_cols_f32", "matmul_stack_f32", "sort_f32"}

if __name__ == "__main__":
    main()
