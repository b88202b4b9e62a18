"""tools/small_ops.py: CuPy's host time a call of tools/small_ops.lua's operations.

  python3 tools/small_ops.py [calls] [--lua-log LOG]

Prints "CP name us" lines (CPU time a call in microseconds, after 200 calls to warm up, over
`calls` calls between two synchronizations, as tools/small_ops.lua times lua-gpu's); with
--lua-log (that script's output) then a table of both and lua-gpu's over CuPy's.
"""
import argparse
import re
import time

import cupy as cp
import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("calls", nargs="?", type=int, default=3000)
parser.add_argument("--lua-log")
args = parser.parse_args()

h = np.random.rand(1000).astype(np.float32)
a = cp.asarray(h)
b = a.copy()
m = cp.asarray(h).reshape(10, 100)
big = cp.zeros((40, 70), cp.float32)
v = cp.full((100,), 2, cp.float32)
m64 = cp.zeros((64, 64), cp.float32)
m8 = cp.zeros((8, 8), cp.float32)
ai = cp.arange(1000, dtype=cp.int32)
cupy_us = {}


def t(name, f):
    for _ in range(200):
        f()
    cp.cuda.runtime.deviceSynchronize()
    t0 = time.process_time()
    for _ in range(args.calls):
        f()
    cp.cuda.runtime.deviceSynchronize()
    cupy_us[name] = (time.process_time() - t0) / args.calls * 1e6
    print("CP %-16s %7.2f" % (name, cupy_us[name]), flush=True)


def setitem():
    a[4] = 1.5


t("a+b", lambda: a + b)
t("sum_axis1", lambda: m.sum(axis=1))
t("sum_axis0", lambda: m.sum(axis=0))
t("max_axis", lambda: m.max(axis=1))
t("mean_number", lambda: float(a.mean()))
t("sum_number", lambda: float(a.sum()))
t("sum_dev", lambda: a.sum())
t("index_read", lambda: float(a[4]))
t("index_write", setitem)
t("slice", lambda: a[9:500])
t("slice_add", lambda: a[0:500] + b[500:1000])
t("reshape", lambda: a.reshape(10, 100))
t("transpose_view", lambda: m.T)
t("transpose_copy", lambda: m.T.copy())
t("big_T_copy", lambda: big.T.copy())
t("T_add", lambda: m.T + m.T)
t("matmul8", lambda: cp.matmul(m8, m8))
t("matmul64", lambda: cp.matmul(m64, m64))
t("matvec", lambda: cp.matmul(m, v))
t("cumsum", lambda: cp.cumsum(a))
t("sort", lambda: cp.sort(a))
t("argsort", lambda: cp.argsort(a))
t("any", lambda: bool((a > b).any()))
t("abs", lambda: cp.abs(a))
t("pow", lambda: a ** 2)
t("int_and", lambda: ai & 7)
t("maximum", lambda: cp.maximum(a, b))
t("full", lambda: cp.full((1000,), 3, cp.float32))
t("ones", lambda: cp.ones((1000,), cp.float32))
t("rand", lambda: cp.random.rand(1000))
t("randn", lambda: cp.random.randn(1000))
t("view_dtype", lambda: a.view(cp.int32))
t("ravel_T", lambda: m.T.ravel())
rk_dot = cp.ReductionKernel("float32 x, float32 y", "float32 z", "x * y", "a + b", "z = a", "0",
                            "rk_dot")
t("reduction_kernel", lambda: rk_dot(a, b))
ek_add = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x + y", "ek_add")
z = cp.empty((1000,), cp.float32)
t("elementwise_kernel", lambda: ek_add(a, b, z))

if args.lua_log:
    lua_us = {}
    for line in open(args.lua_log):
        found = re.match(r"OP (\S+)\s+([\d.]+)", line)
        if found:
            lua_us[found.group(1)] = float(found.group(2))
    print("%-16s %9s %9s %9s" % ("operation", "lua-gpu", "CuPy", "lua/CuPy"))
    for name, cupy in cupy_us.items():
        lua = lua_us.get(name)
        print("%-16s %9s %9.2f %9s" % (name, "-" if lua is None else "%.2f" % lua, cupy,
                                       "-" if lua is None else "%.2f" % (lua / cupy)))
