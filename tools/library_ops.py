"""tools/library_ops.py: CuPy's device time of tools/library_ops.lua's calls.

  python3 tools/library_ops.py

Each line: the median of 5 timings between CUDA events (after one untimed call), in ms, as
tools/library_ops.lua reports lua-gpu's.  LIBRARY_OPS_ONLY=<regular expression> times only
the calls whose names match it.
"""
import os
import re
import statistics

import cupy as cp
import cupyx.scipy.special

only = os.environ.get("LIBRARY_OPS_ONLY")


def matrices(n, dtype):
    a = cp.random.rand(n, n) * 2 - 1 + cp.eye(n) * n
    spd = a @ a.T + cp.eye(n) * n
    return a.astype(dtype), spd.astype(dtype)


a32, spd32 = matrices(4096, cp.float32)
a64, spd64 = matrices(4096, cp.float64)
b64 = cp.random.rand(4096)
e64, espd64 = matrices(1024, cp.float64)
tall64 = cp.random.rand(4096, 256)
s4, spd4 = matrices(4, cp.float32)
stack4 = cp.tile(s4.reshape(1, 4, 4), (10000, 1, 1)) + cp.random.rand(10000, 4, 4, dtype=cp.float32) * 0.1
spd_stack4 = cp.tile(spd4.reshape(1, 4, 4), (10000, 1, 1))
rhs4 = cp.random.rand(10000, 4, 1, dtype=cp.float32)
m32 = cp.random.rand(4096, 4096, dtype=cp.float32)
batch64 = cp.random.rand(256, 64, 64, dtype=cp.float32)
t3 = cp.random.rand(64, 128, 256, dtype=cp.float32)
t3b = cp.random.rand(128, 256, 32, dtype=cp.float32)
deep, deep_cols4 = cp.random.rand(64, 32768, dtype=cp.float32), cp.random.rand(32768, 4, dtype=cp.float32)
wide, wide_cols = cp.random.rand(512, 16384, dtype=cp.float32), cp.random.rand(16384, 512, dtype=cp.float32)
n = 1 << 26
u = cp.random.rand(n, dtype=cp.float32)
signal, taps = cp.random.rand(1 << 20, dtype=cp.float32), cp.random.rand(1000, dtype=cp.float32)
obs = cp.random.rand(64, 1 << 20)
bins = cp.linspace(0, 1, 101)
ints = (cp.random.rand(1 << 24) * (1 << 26)).astype(cp.int32)
ints2 = (cp.random.rand(1 << 24) * (1 << 26)).astype(cp.int32)
poly = cp.random.rand(9, dtype=cp.float32)
tests = cp.random.rand(1000, dtype=cp.float32)
vec3 = cp.random.rand(1 << 24, 3, dtype=cp.float32)
rng = cp.random.default_rng()

cases = [
    ("solve f64 4096", lambda: cp.linalg.solve(a64, b64)),
    ("inv f32 4096", lambda: cp.linalg.inv(a32)),
    ("inv f64 4096", lambda: cp.linalg.inv(a64)),
    ("det f64 4096", lambda: cp.linalg.det(a64)),
    ("cholesky f32 4096", lambda: cp.linalg.cholesky(spd32)),
    ("cholesky f64 4096", lambda: cp.linalg.cholesky(spd64)),
    ("qr f64 4096", lambda: cp.linalg.qr(a64)),
    ("eigh f64 1024", lambda: cp.linalg.eigh(espd64)),
    ("svd f64 1024", lambda: cp.linalg.svd(e64)),
    ("eig f64 1024", lambda: cp.linalg.eig(e64)),
    ("lstsq f64 4096x256", lambda: cp.linalg.lstsq(tall64, b64, rcond=None)),
    ("pinv f64 1024", lambda: cp.linalg.pinv(e64)),
    ("inv 10000 4x4", lambda: cp.linalg.inv(stack4)),
    ("solve 10000 4x4", lambda: cp.linalg.solve(stack4, rhs4)),
    ("det 10000 4x4", lambda: cp.linalg.det(stack4)),
    ("cholesky 10000 4x4", lambda: cp.linalg.cholesky(spd_stack4)),
    ("eigh 10000 4x4", lambda: cp.linalg.eigh(spd_stack4)),
    ("einsum ij,jk 4096", lambda: cp.einsum("ij,jk->ik", m32, m32)),
    ("einsum bij,bjk", lambda: cp.einsum("bij,bjk->bik", batch64, batch64)),
    ("einsum ij->ji copy", lambda: cp.einsum("ij->ji", m32).copy()),
    ("einsum ii->i", lambda: cp.einsum("ii->i", m32).copy()),
    ("tensordot 2 axes", lambda: cp.tensordot(t3, t3b, 2)),
    ("matmul 64x32768x4", lambda: deep @ deep_cols4),
    ("matmul 512x16384x512", lambda: wide @ wide_cols),
    ("normal 2^26", lambda: cp.random.normal(0, 1, n, dtype=cp.float32)),
    ("uniform 2^26", lambda: cp.random.uniform(-1, 1, n, dtype=cp.float32)),
    ("randint 2^26", lambda: cp.random.randint(0, 1000, n, dtype=cp.int32)),
    ("permutation 2^24", lambda: cp.random.permutation(1 << 24)),
    ("choice 2^20 of 2^24", lambda: cp.random.choice(1 << 24, 1 << 20, replace=False)),
    ("choice 1000 of 2^30", lambda: cp.random.choice(1 << 30, 1000, replace=False)),
    ("standard_gamma 2^26", lambda: cp.random.standard_gamma(2.5, n, dtype=cp.float32)),
    ("exponential 2^26", lambda: cp.random.exponential(1, n, dtype=cp.float32)),
    ("poisson 2^26", lambda: cp.random.poisson(10, n)),
    ("binomial 2^26", lambda: cp.random.binomial(100, 0.3, n)),
    ("beta 2^26", lambda: cp.random.beta(2, 3, n, dtype=cp.float32)),
    ("erf 2^26", lambda: cupyx.scipy.special.erf(u)),
    ("digamma 2^26", lambda: cupyx.scipy.special.digamma(u)),
    ("lgamma 2^26", lambda: cupyx.scipy.special.gammaln(u)),
    ("logaddexp 2^26", lambda: cp.logaddexp(u, u)),
    ("intersect1d 2^24", lambda: cp.intersect1d(ints, ints2)),
    ("union1d 2^24", lambda: cp.union1d(ints, ints2)),
    ("lexsort 2 keys 2^24", lambda: cp.lexsort(cp.stack([ints, ints2]))),
    ("polyval deg 8 2^26", lambda: cp.polyval(poly, u)),
    ("gradient 8192^2", lambda: cp.gradient(m32)),
    ("convolve 2^20 1000", lambda: cp.convolve(signal, taps)),
    ("cov 64 x 2^20", lambda: cp.cov(obs)),
    ("isin 2^26 1000", lambda: cp.isin(u, tests)),
    ("digitize 2^26 101", lambda: cp.digitize(u, bins)),
    ("around 2^26", lambda: cp.around(u, 2)),
    ("cross 2^24", lambda: cp.cross(vec3, vec3)),
]


def device_ms(f, repeats=5):
    f()
    cp.cuda.Device().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(repeats):
        start.record()
        f()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return statistics.median(times)


for name, call in cases:
    if only is None or re.search(only, name):
        try:
            print(f"{name:<22} {device_ms(call):10.3f} ms")
        except Exception as error:  # a call CuPy lacks, or one it refuses
            print(f"{name:<22} error: {type(error).__name__}: {error}")
