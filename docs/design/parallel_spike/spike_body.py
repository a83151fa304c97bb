"""Spike: drive Numba's own outlined parfor body through our trampoline, one division per task.

The design (../parallel_loops.md) keeps the parfor body ``B`` Numba outlines as a callee and
replaces Numba's ``__gufunc__`` wrapper by a trampoline of ours: per division ``k`` of the
schedule it hands ``B`` (or ``B``'s derivative) a private schedule array ``{start, end, k}``,
and the reduction slot ``B`` addresses is the division ``k`` instead of ``get_thread_id()``.
This script retires that: it takes the raw IR our capture records for the bodies of a
row-wise map and of a prange reduction, rewrites ``get_thread_id()`` into a load of
``sched[2 * ndim]`` (what ``ir_passes`` would do), compiles it beside a trampoline and
launches it through ``numba_parallel_for`` (spike_launch.py's launcher) at 1 and 2 threads,
checking the results against NumPy, and that a serial call of ``B`` over one division
``{0, n - 1, 0}`` (the meaning the pass differentiates) gives the same.

Run (from the worktree):  nice python docs/design/parallel_spike/spike_body.py
"""
import ctypes
import os
import re
import sys

import numpy as np
import llvmlite.binding as llvm
import numba
from numba import prange
from numba.core.compiler_lock import global_compiler_lock
from numba.core.registry import cpu_target

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..")))
import enzyme_py.numba_bridge.capture as cap        # noqa: E402  (records raw modules)
from spike_launch import COMMON                       # noqa: E402  (declarations, @launch)


@numba.njit(parallel=True)
def rowmap(x, out):
    for i in prange(x.shape[0]):
        out[i] = np.sin(x[i]) * x[i]


@numba.njit(parallel=True)
def reduce_(x):
    s = 0.0
    for i in prange(x.shape[0]):
        s += np.exp(x[i])
    return s


def body_text(dispatcher, new_name):
    """The raw IR of the dispatcher's parfor body, renamed, get_thread_id -> sched[2]."""
    cres = next(iter(dispatcher.overloads.values()))
    stack, seen = [cres.library], set()
    while stack:
        lib = stack.pop()
        if id(lib) in seen:
            continue
        seen.add(id(lib))
        if lib.name.startswith("__numba_parfor_gufunc"):
            for text in cap._recorded(lib):
                m = re.search(r'^define i32 @"?(_ZN\w*__numba_parfor_gufunc\w*)"?\(', text, re.M)
                if m:
                    text = text.replace(m.group(1), new_name)
                    return re.sub(r"(%[\w.]+) = call i64 @get_thread_id\(\)",
                                  r"%tid.p = getelementptr i64, ptr %arg.sched.4, i64 2\n"
                                  r"  \1 = load i64, ptr %tid.p", text)
        stack.extend(lib._linking_libraries)
    raise LookupError("no parfor body")


ARRAY = "ptr null, ptr null, i64 {n}, i64 8, ptr {data}, i64 {n}, i64 8"

# trampoline: numba_parallel_for's ABI; data = { ptr a, ptr b, i64 n, i64 nb, ptr status };
# per division k (its offset in the whole schedule, args[1]): a private schedule
# {start, end, k}, then B(retptr, excinfo, sched, a, b); status = {or of codes, divisions run}
CLOSURE = "%bclo = type { ptr, ptr, i64, i64, ptr }\n"
ARRAY_TYPES = "ptr, ptr, i64, i64, ptr, i64, i64"
TRAMPOLINE = """
declare i32 @{body}(ptr, ptr, {types}, {types}, {types})
define void @tramp_{name}(ptr %args, ptr %dims, ptr %steps, ptr %clo) {{
entry:
  %sched = load ptr, ptr %args
  %wp = getelementptr ptr, ptr %args, i64 1
  %whole = load ptr, ptr %wp
  %off = ptrtoint ptr %sched to i64
  %base = ptrtoint ptr %whole to i64
  %ndiv = load i64, ptr %dims
  %own = alloca [3 x i64]
  %ret = alloca ptr
  %exc = alloca ptr
  %a = load ptr, ptr %clo
  %bp = getelementptr %bclo, ptr %clo, i32 0, i32 1
  %b = load ptr, ptr %bp
  %np = getelementptr %bclo, ptr %clo, i32 0, i32 2
  %n = load i64, ptr %np
  %nbp = getelementptr %bclo, ptr %clo, i32 0, i32 3
  %nb = load i64, ptr %nbp
  %stp = getelementptr %bclo, ptr %clo, i32 0, i32 4
  %status = load ptr, ptr %stp
  br label %head
head:
  %j = phi i64 [ 0, %entry ], [ %j1, %body ]
  %more = icmp slt i64 %j, %ndiv
  br i1 %more, label %body, label %done
body:
  %e = mul i64 %j, 2
  %sp = getelementptr i64, ptr %sched, i64 %e
  %start = load i64, ptr %sp
  %ep = getelementptr i64, ptr %sp, i64 1
  %end = load i64, ptr %ep
  store i64 %start, ptr %own
  %o1 = getelementptr i64, ptr %own, i64 1
  store i64 %end, ptr %o1
  %o2 = getelementptr i64, ptr %own, i64 2
  %k0 = sub i64 %off, %base
  %k1 = udiv i64 %k0, 16
  %k = add i64 %k1, %j
  store i64 %k, ptr %o2
  %kslot = getelementptr i64, ptr %status, i64 1
  %count = atomicrmw add ptr %kslot, i64 1 monotonic
  %rc = call i32 @{body}(ptr %ret, ptr %exc, {sched}, {a}, {b})
  %rc64 = sext i32 %rc to i64
  %old = atomicrmw or ptr %status, i64 %rc64 monotonic
  %j1 = add i64 %j, 1
  br label %head
done:
  ret void
}}
"""


def build(specs):
    ir = COMMON.replace("%clo = type { ptr, ptr, ptr, ptr, ptr, ptr }\n", "")
    ir = CLOSURE + ir.replace("declare i64 @get_thread_id()\n", "")
    texts = []
    for name, dispatcher in specs:
        body = f"spike_body_{name}"
        texts.append(body_text(dispatcher, body))
        ir += TRAMPOLINE.format(name=name, body=body, types=ARRAY_TYPES,
                                sched=ARRAY.format(n=3, data="%own"),
                                a=ARRAY.format(n="%n", data="%a"),
                                b=ARRAY.format(n="%nb", data="%b"))
        ir += f"""
define i32 @serial_{name}(ptr %own, ptr %a, i64 %n, ptr %b, i64 %nb) {{
  %ret = alloca ptr
  %exc = alloca ptr
  %rc = call i32 @{body}(ptr %ret, ptr %exc, {ARRAY.format(n=3, data="%own")},
      {ARRAY.format(n="%n", data="%a")}, {ARRAY.format(n="%nb", data="%b")})
  ret i32 %rc
}}
"""
    module = llvm.parse_assembly(ir)
    for text in texts:
        body = llvm.parse_assembly(text)
        for fn in body.functions:             # keep only the body; helpers it defines stay
            if fn.name.startswith("_ZN7cpython") or fn.name.startswith("cfunc."):
                fn.linkage = "internal"
        module.link_in(body)
    library = cpu_target.target_context.codegen().create_library("parallel_spike_body")
    with global_compiler_lock:
        library.add_llvm_module(module)
        library.finalize()
    return library


def main():
    x = np.linspace(-2.0, 2.0, 100_001)
    n = x.size
    out = np.zeros(n)
    rowmap(x[:8], out[:8])
    reduce_(x[:8])
    library = build([("rowmap", rowmap), ("reduce", reduce_)])
    launch = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(
        library.get_pointer_to_function("launch"))
    serial = {name: ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p,
                                     ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64)(
        library.get_pointer_to_function(f"serial_{name}")) for name in ("rowmap", "reduce")}
    tramp = {name: library.get_pointer_to_function(f"tramp_{name}")
             for name in ("rowmap", "reduce")}
    print(f"threading layer: {numba.threading_layer()}")
    for threads in (1, 2):
        numba.set_num_threads(threads)
        status = np.zeros(2, np.int64)               # [or of return codes, next division]
        slots = np.zeros(threads)                    # redarr: one slot per division
        for name, b, nb, check in [
                ("rowmap", out, n, lambda: np.testing.assert_allclose(
                    out, np.sin(x) * x, rtol=1e-15)),
                ("reduce", slots, threads, lambda: np.testing.assert_allclose(
                    slots.sum(), np.exp(x).sum(), rtol=1e-12))]:
            out[:] = 0.0
            slots[:] = 0.0
            status[:] = 0
            clo = (ctypes.c_int64 * 5)(x.ctypes.data, b.ctypes.data, n, nb, status.ctypes.data)
            launch(tramp[name], ctypes.addressof(clo), n)
            assert status[0] == 0 and status[1] == threads, status   # one division per thread
            check()
            if name == "reduce":                     # each division wrote its own slot
                assert np.all(slots != 0.0), slots
            own = np.array([0, n - 1, 0], np.int64)  # serial meaning: one division, slot 0
            out[:] = 0.0
            slots[:] = 0.0
            assert serial[name](own.ctypes.data, x.ctypes.data, n, b.ctypes.data, nb) == 0
            check()
        print(f"{threads} thread(s): Numba's bodies driven by our trampoline: rowmap and "
              f"reduction (slots {slots.tolist()} after the serial call) match NumPy; "
              f"{threads} division(s)")


if __name__ == "__main__":
    main()
