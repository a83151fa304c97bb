"""Spike: the pass's own forward derivative of a parfor body, launched in parallel.

``spike_capture.py`` showed the derivative functions of Numba's outlined body ``B`` are right
when called serially. Here the forward derivative ``fwddiffe_B`` the pass synthesizes (taken
from the derivative's module as it is linked, ``inspection(...).stages.module_text``) is run by
our trampoline, one division per task, through ``numba_parallel_for`` at 1 and 2 threads
(``spike_launch.py``'s launcher): the derivative code is safe to run concurrently, and
``out``, ``t_out`` equal the analytic values. Then reverse mode: the split halves the pass
makes for ``B`` (``augmented_B``: runs a division and returns its tape state; ``diffe_B``:
the division's reverse from that state) run as two launches on the same schedule, the states
kept per division, and the reverse launch hands division ``k`` to the thread that ran
division ``ndiv-1-k`` forward (any thread may reverse any division): ``dx`` equals the
analytic gradient and ``d_out`` is consumed.

Run (from the worktree):  nice python docs/design/parallel_spike/spike_derivative.py
"""
import ctypes
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..")))

import numpy as np                                          # noqa: E402
import llvmlite.binding as llvm                             # noqa: E402
import numba                                                # noqa: E402
from numba.core.compiler_lock import global_compiler_lock   # noqa: E402
from numba.core.registry import cpu_target                  # noqa: E402

import spike_capture                                        # noqa: E402  (the patches)
from enzyme_py.inspection import inspection                 # noqa: E402
from spike_launch import COMMON                             # noqa: E402

ARRAY = "ptr null, ptr null, i64 {n}, i64 8, ptr {data},{shadow} i64 {n}, i64 8"
TRAMPOLINE = """
%dclo = type {{ ptr, ptr, ptr, ptr, i64, ptr }}
declare i32 @spike_fwd_B(ptr, ptr, {sched_types}, {array_types}, {array_types})
define void @tramp(ptr %args, ptr %dims, ptr %steps, ptr %clo) {{
entry:
  %sched = load ptr, ptr %args
  %wp = getelementptr ptr, ptr %args, i64 1
  %whole = load ptr, ptr %wp
  %ndiv = load i64, ptr %dims
  %own = alloca [3 x i64]
  %ret = alloca ptr
  %exc = alloca ptr
  %x = load ptr, ptr %clo
  %p1 = getelementptr %dclo, ptr %clo, i32 0, i32 1
  %tx = load ptr, ptr %p1
  %p2 = getelementptr %dclo, ptr %clo, i32 0, i32 2
  %out = load ptr, ptr %p2
  %p3 = getelementptr %dclo, ptr %clo, i32 0, i32 3
  %tout = load ptr, ptr %p3
  %p4 = getelementptr %dclo, ptr %clo, i32 0, i32 4
  %n = load i64, ptr %p4
  %p5 = getelementptr %dclo, ptr %clo, i32 0, i32 5
  %status = load ptr, ptr %p5
  %base = ptrtoint ptr %whole to i64
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
  %off = ptrtoint ptr %sp to i64
  %k0 = sub i64 %off, %base
  %k = udiv i64 %k0, 16
  store i64 %start, ptr %own
  %o1 = getelementptr i64, ptr %own, i64 1
  store i64 %end, ptr %o1
  %o2 = getelementptr i64, ptr %own, i64 2
  store i64 %k, ptr %o2
  %rc = call i32 @spike_fwd_B(ptr %ret, ptr %exc, {sched}, {x}, {out})
  %rc64 = sext i32 %rc to i64
  %old = atomicrmw or ptr %status, i64 %rc64 monotonic
  %kslot = getelementptr i64, ptr %status, i64 1
  %count = atomicrmw add ptr %kslot, i64 1 monotonic
  %j1 = add i64 %j, 1
  br label %head
done:
  ret void
}}
"""


def derivative_module(mode, renames):
    """The module of the derivative of the row map as it is linked, with the callee
    derivatives named in ``renames`` (prefix -> new name) made external under the new names
    and everything else it defines internal."""
    x = np.zeros(4)
    text = inspection(spike_capture.rowmap, ("dup", "dup"), mode,
                      types=(numba.typeof(x), numba.typeof(x))).stages.module_text
    keep = set()
    for prefix, new in renames.items():
        name = re.search(rf"^define internal i32 @({prefix}\w*__numba_parfor_gufunc\w*\.\d+)\(",
                         text, re.M).group(1)
        text = text.replace(f"@{name}(", f"@{new}(")
        keep.add(new)
    module = llvm.parse_assembly(text)
    for fn in module.functions:
        if not fn.is_declaration:
            fn.linkage = "external" if fn.name in keep else "internal"
    for gv in module.global_variables:
        if not gv.is_declaration:
            gv.linkage = "internal"
    return module


REVERSE = """
%rclo = type {{ ptr, ptr, ptr, ptr, i64, ptr, ptr, i64 }}
declare i32 @spike_aug_B(ptr, ptr, {sched_types}, {array_types}, {array_types})
declare i32 @spike_rev_B(ptr, ptr, {sched_types}, {array_types}, {array_types}, {sched_types})
declare void @NRT_Free(ptr)
; closure: x, dx, out, dout, n, status, states, ndiv_total. halves: 0 = forward, 1 = reverse
define void @rtramp_{half}(ptr %args, ptr %dims, ptr %steps, ptr %clo) {{
entry:
  %sched = load ptr, ptr %args
  %wp = getelementptr ptr, ptr %args, i64 1
  %whole = load ptr, ptr %wp
  %ndiv = load i64, ptr %dims
  %own = alloca [3 x i64]
  %ret = alloca {{ ptr, ptr, i64, i64, ptr, [1 x i64], [1 x i64] }}
  %exc = alloca ptr
  %x = load ptr, ptr %clo
  %p1 = getelementptr %rclo, ptr %clo, i32 0, i32 1
  %tx = load ptr, ptr %p1
  %p2 = getelementptr %rclo, ptr %clo, i32 0, i32 2
  %out = load ptr, ptr %p2
  %p3 = getelementptr %rclo, ptr %clo, i32 0, i32 3
  %tout = load ptr, ptr %p3
  %p4 = getelementptr %rclo, ptr %clo, i32 0, i32 4
  %n = load i64, ptr %p4
  %p5 = getelementptr %rclo, ptr %clo, i32 0, i32 5
  %status = load ptr, ptr %p5
  %p6 = getelementptr %rclo, ptr %clo, i32 0, i32 6
  %states = load ptr, ptr %p6
  %p7 = getelementptr %rclo, ptr %clo, i32 0, i32 7
  %total = load i64, ptr %p7
  %base = ptrtoint ptr %whole to i64
  br label %head
head:
  %j = phi i64 [ 0, %entry ], [ %j1, %body ]
  %more = icmp slt i64 %j, %ndiv
  br i1 %more, label %body, label %done
body:
  %e = mul i64 %j, 2
  %mine = getelementptr i64, ptr %sched, i64 %e
  %off = ptrtoint ptr %mine to i64
  %k0 = sub i64 %off, %base
  %kk = udiv i64 %k0, 16
  %last = sub i64 %total, 1
  %flip = sub i64 %last, %kk
  %k = select i1 {reverse}, i64 %flip, i64 %kk
  %e2 = mul i64 %k, 2
  %sp = getelementptr i64, ptr %whole, i64 %e2
  %start = load i64, ptr %sp
  %ep = getelementptr i64, ptr %sp, i64 1
  %end = load i64, ptr %ep
  store i64 %start, ptr %own
  %o1 = getelementptr i64, ptr %own, i64 1
  store i64 %end, ptr %o1
  %o2 = getelementptr i64, ptr %own, i64 2
  store i64 %k, ptr %o2
  %slot = getelementptr ptr, ptr %states, i64 %k
{call}
  %rc64 = sext i32 %rc to i64
  %old = atomicrmw or ptr %status, i64 %rc64 monotonic
  %kslot = getelementptr i64, ptr %status, i64 1
  %count = atomicrmw add ptr %kslot, i64 1 monotonic
  %j1 = add i64 %j, 1
  br label %head
done:
  ret void
}}
"""
FORWARD_CALL = """  %rc = call i32 @spike_aug_B(ptr %ret, ptr %exc, {sched}, {x}, {out})
  %stp = getelementptr {{ ptr, ptr, i64, i64, ptr, [1 x i64], [1 x i64] }}, ptr %ret, i32 0, i32 4
  %state = load ptr, ptr %stp
  store ptr %state, ptr %slot"""
REVERSE_CALL = """  %state = load ptr, ptr %slot
  %rc = call i32 @spike_rev_B(ptr %ret, ptr %exc, {sched}, {x}, {out}, {tape})
  call void @NRT_Free(ptr %state)"""


def main():
    sched_types = "ptr, ptr, i64, i64, ptr, i64, i64"
    array_types = "ptr, ptr, i64, i64, ptr, ptr, i64, i64"       # data then its shadow
    ir = COMMON.replace("%clo = type { ptr, ptr, ptr, ptr, ptr, ptr }\n", "").replace(
        "declare i64 @get_thread_id()\n", "") + TRAMPOLINE.format(
        sched_types=sched_types, array_types=array_types,
        sched=ARRAY.format(n=3, data="%own", shadow=""),
        x=ARRAY.format(n="%n", data="%x", shadow=" ptr %tx,"),
        out=ARRAY.format(n="%n", data="%out", shadow=" ptr %tout,"))
    module = llvm.parse_assembly(ir)
    module.link_in(derivative_module("forward", {"fwddiffe_": "spike_fwd_B"}))
    library = cpu_target.target_context.codegen().create_library("parallel_spike_derivative")
    with global_compiler_lock:
        library.add_llvm_module(module)
        library.finalize()
    launch = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(
        library.get_pointer_to_function("launch"))
    tramp = library.get_pointer_to_function("tramp")
    rng = np.random.default_rng(3)
    n = 100_001
    x, tx = rng.standard_normal(n), rng.standard_normal(n)
    print(f"threading layer: {numba.threading_layer()}")
    for threads in (1, 2):
        numba.set_num_threads(threads)
        out, tout = np.zeros(n), np.zeros(n)
        status = np.zeros(2, np.int64)
        clo = (ctypes.c_int64 * 6)(x.ctypes.data, tx.ctypes.data, out.ctypes.data,
                                   tout.ctypes.data, n, status.ctypes.data)
        launch(tramp, ctypes.addressof(clo), n)
        assert status[0] == 0 and status[1] == threads, status
        np.testing.assert_allclose(out, np.sin(x) * x, rtol=1e-15)
        np.testing.assert_allclose(tout, tx * (np.cos(x) * x + np.sin(x)), rtol=1e-12,
                                   atol=1e-15)
        print(f"{threads} thread(s): the pass's fwddiffe_B run on {threads} division(s) in "
              "parallel: primal and tangents equal the analytic ones")
    reverse(sched_types, array_types, x)


def reverse(sched_types, array_types, x):
    args = dict(sched=ARRAY.format(n=3, data="%own", shadow=""),
                x=ARRAY.format(n="%n", data="%x", shadow=" ptr %tx,"),
                out=ARRAY.format(n="%n", data="%out", shadow=" ptr %tout,"),
                tape="ptr null, ptr null, i64 0, i64 1, ptr %state, i64 0, i64 1")
    ir = COMMON.replace("%clo = type { ptr, ptr, ptr, ptr, ptr, ptr }\n", "").replace(
        "declare i64 @get_thread_id()\n", "")
    for half, call, flip in ((0, FORWARD_CALL, "false"), (1, REVERSE_CALL, "true")):
        text = REVERSE.format(sched_types=sched_types, array_types=array_types, half=half,
                              reverse=flip, call=call.format(**args))
        if half:                           # the type and declarations once
            text = text[text.index("; closure"):]
        ir += text
    module = llvm.parse_assembly(ir)
    module.link_in(derivative_module("reverse", {"augmented_": "spike_aug_B",
                                                 "diffe_": "spike_rev_B"}))
    library = cpu_target.target_context.codegen().create_library("parallel_spike_reverse")
    with global_compiler_lock:
        library.add_llvm_module(module)
        library.finalize()
    launch = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(
        library.get_pointer_to_function("launch"))
    halves = [library.get_pointer_to_function(f"rtramp_{h}") for h in (0, 1)]
    n = x.size
    for threads in (1, 2):
        numba.set_num_threads(threads)
        out, dx = np.zeros(n), np.zeros(n)
        seed = np.random.default_rng(threads).standard_normal(n)
        dout = seed.copy()
        status = np.zeros(2, np.int64)
        states = np.zeros(threads, np.uint64)             # one tape state per division
        clo = (ctypes.c_int64 * 8)(x.ctypes.data, dx.ctypes.data, out.ctypes.data,
                                   dout.ctypes.data, n, status.ctypes.data,
                                   states.ctypes.data, threads)
        launch(halves[0], ctypes.addressof(clo), n)
        assert status[0] == 0 and status[1] == threads and np.all(states != 0), status
        np.testing.assert_allclose(out, np.sin(x) * x, rtol=1e-15)
        launch(halves[1], ctypes.addressof(clo), n)
        assert status[0] == 0 and status[1] == 2 * threads, status
        np.testing.assert_allclose(dx, seed * (np.cos(x) * x + np.sin(x)), rtol=1e-12,
                                   atol=1e-15)
        assert not dout.any(), "the reverse consumes the seed"
        print(f"{threads} thread(s): the pass's augmented_B / diffe_B as two launches, tape "
              f"state per division, division k reversed by the task that ran division ndiv-1-k: dx correct, d_out consumed")


if __name__ == "__main__":
    main()
