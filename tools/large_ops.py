"""tools/large_ops.py: CuPy's device time of tools/large_ops.lua's operations.

  python3 tools/large_ops.py

Each line: the median of 5 timings between CUDA events (after one untimed call), in ms, and
GB/s counting each element's nominal bytes, as tools/large_ops.lua reports lua-gpu's
(LARGE_OPS_BATCH=k: k calls back to back a timing, as there).
"""
import os
import statistics

import cupy as cp
import cupyx

n = 1 << 26
batch = int(os.environ.get("LARGE_OPS_BATCH", "1"))
a = cp.random.rand(n, dtype=cp.float32) * 2 - 1
b = cp.random.rand(n, dtype=cp.float32)
d = a.astype(cp.float64)
ia = (a * 1000).astype(cp.int32)
idx = (cp.random.rand(n) * (n - 1)).astype(cp.int64)
m = a.reshape(8192, 8192)
rows64, cols64 = a.reshape(n // 64, 64), a.reshape(64, n // 64)
mask = a > 0
target = cp.zeros(n, dtype=cp.float32)
small = (b * 1000).astype(cp.int32)
sorted_b = cp.sort(b)
xp_points = cp.linspace(-1, 1, 1000)
fp_points = cp.random.rand(1000)
cm = m.astype(cp.complex64)  # the transforms' complex input

cases = [  # (name, nominal bytes an element, call)
    ("copy", 8, lambda: a.copy()),
    ("sum", 4, lambda: a.sum()),
    ("max", 4, lambda: a.max()),
    ("argmax", 4, lambda: a.argmax()),
    ("argmin", 4, lambda: a.argmin()),
    ("mean", 4, lambda: a.mean()),
    ("var", 4, lambda: a.var()),
    ("any", 1, lambda: mask.any()),
    ("count_nonzero", 1, lambda: cp.count_nonzero(mask)),
    ("sum bool", 1, lambda: mask.sum()),
    ("where", 13, lambda: cp.where(mask, a, b)),
    ("clip", 8, lambda: cp.clip(a, -0.5, 0.5)),
    ("isnan", 5, lambda: cp.isnan(a)),
    ("astype f64", 12, lambda: a.astype(cp.float64)),
    ("astype i32", 8, lambda: a.astype(cp.int32)),
    ("exp", 8, lambda: cp.exp(a)),
    ("a:gt(b)", 9, lambda: a > b),
    ("maximum", 12, lambda: cp.maximum(a, b)),
    ("take", 16, lambda: cp.take(a, idx)),
    ("put", 16, lambda: cp.put(target, idx, a, mode="wrap")),
    ("put raise", 16, lambda: cp.put(target, idx, a, mode="raise")),
    ("scatter_add", 16, lambda: cupyx.scatter_add(target, idx, a)),
    ("bincount", 4, lambda: cp.bincount(small)),
    ("histogram", 4, lambda: cp.histogram(a, bins=100)[0]),
    ("searchsorted", 12, lambda: cp.searchsorted(sorted_b, a)),
    ("cumsum f64", 16, lambda: cp.cumsum(d)),
    ("cumsum i32", 12, lambda: cp.cumsum(ia)),  # int64 out
    ("cumsum axis 1", 8, lambda: cp.cumsum(m, axis=1)),
    ("cumsum axis 0", 8, lambda: cp.cumsum(m, axis=0)),
    ("cumsum 2^20x64 ax1", 8, lambda: cp.cumsum(rows64, axis=1)),
    ("cumsum 64x2^20 ax0", 8, lambda: cp.cumsum(cols64, axis=0)),
    ("cumprod", 8, lambda: cp.cumprod(b)),
    ("nansum", 4, lambda: cp.nansum(a)),
    ("nanmax axis 1", 4, lambda: cp.nanmax(m, axis=1)),
    ("nanmean", 4, lambda: cp.nanmean(a)),
    ("median", 4, lambda: cp.median(a)),
    ("median axis 1", 4, lambda: cp.median(m, axis=1)),
    ("nanmedian axis 1", 4, lambda: cp.nanmedian(m, axis=1)),
    ("quantile 0.9", 4, lambda: cp.quantile(a, 0.9)),
    ("diff", 8, lambda: cp.diff(a)),
    ("tril", 8, lambda: cp.tril(m)),
    ("pad", 8, lambda: cp.pad(m, 4)),
    ("interp", 12, lambda: cp.interp(a, xp_points, fp_points)),
    ("unique inverse", 4, lambda: cp.unique(small, return_index=True, return_inverse=True)[2]),
    ("rfft", 12, lambda: cp.fft.rfft(a)),
    ("fft rows c64", 16, lambda: cp.fft.fft(cm)),
    ("fft2 c64", 16, lambda: cp.fft.fft2(cm)),
    ("sum f64", 8, lambda: d.sum()),
    ("sum axis 1", 4, lambda: m.sum(axis=1)),
    ("sum axis 0", 4, lambda: m.sum(axis=0)),
    ("max axis 1", 4, lambda: m.max(axis=1)),
    ("argmax axis 1", 4, lambda: m.argmax(axis=1)),
    ("transpose copy", 8, lambda: m.T.copy()),
    ("extract", 6, lambda: cp.extract(mask, a)),
    ("rand", 4, lambda: cp.random.rand(n, dtype=cp.float32)),
    ("randn", 4, lambda: cp.random.randn(n, dtype=cp.float32)),
    ("concatenate", 16, lambda: cp.concatenate([a, b])),
    ("a[::2] copy", 4, lambda: a[::2].copy()),
]

start, stop = cp.cuda.Event(), cp.cuda.Event()
for name, nbytes, call in cases:
    try:
        call()
        cp.cuda.Device().synchronize()
        times = []
        for _ in range(5):
            start.record()
            outs = [call() for _ in range(batch)]
            stop.record()
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop) / batch)
            del outs
        ms = statistics.median(times)
        print(f"{name:18s} {ms:8.3f} ms  {nbytes * n / ms / 1e6:7.0f} GB/s")
    except Exception as e:  # a function CuPy lacks: say so and go on
        print(f"{name:18s} error: {e}")
