"""Spike: launch a gufunc-ABI body we generate (LLVM IR text) through Numba's threading layer.

Retires the key risk of issue 26: a derivative body synthesised by the pass can be run in
parallel by ``numba_parallel_for`` (whichever layer Numba loaded: workqueue, omp, tbb) from a
module we link into Numba's JIT, with Numba's scheduler (``get_sched_size``,
``do_scheduling_signed``) splitting the range, and ``atomicrmw fadd double`` works in such a
body on the pinned LLVM (x86-64: a ``lock cmpxchg`` loop).

Run (from the worktree):  nice python docs/design/parallel_spike/spike_launch.py
  NUMBA_THREADING_LAYER=omp nice python docs/design/parallel_spike/spike_launch.py
Checks (asserts) at 1 and 2 threads: out[i] += g(x[i]) equals NumPy's, every chunk ran on a
thread id < num_threads (both ids used at 2 threads), the atomic histogram equals
np.bincount to the last bit up to summation order (rtol 1e-12); prints how many updates the
non-atomic scatter lost, and the launch overhead.
"""
import ctypes
import time

import numpy as np
import llvmlite.binding as llvm
import numba
from numba.core.compiler_lock import global_compiler_lock
from numba.core.registry import cpu_target
from numba.np.ufunc import parallel

parallel._launch_threads()        # loads the layer; registers numba_parallel_for & co.

# The body ABI is numba_parallel_for's: void body(ptr args, ptr dims, ptr steps, ptr data).
# args[0] is this task's slice of the schedule (steps[0] = 16 bytes per division), args[1]
# the whole schedule (steps[1] = 0: the same for every task, so a task knows the index of
# its divisions), dims[0] the number of divisions it runs; `data` (passed unchanged to every task) is our closure:
# { ptr x, ptr out, ptr idx, ptr w, ptr hist, ptr tid_of_iteration }.
COMMON = """
%clo = type { ptr, ptr, ptr, ptr, ptr, ptr }
declare i64 @get_num_threads()
declare i64 @get_thread_id()
declare i64 @get_sched_size(i64, i64, ptr, ptr)
declare ptr @allocate_sched(i64)
declare void @deallocate_sched(ptr)
declare ptr @do_scheduling_signed(i64, ptr, ptr, i64, ptr, i64)
declare void @numba_parallel_for(ptr, ptr, ptr, ptr, ptr, i64, i64, i64)
declare double @llvm.sin.f64(double)
declare double @llvm.exp.f64(double)

; launch(body, closure, n): run body over i in [0, n) on get_num_threads() threads
define void @launch(ptr %body, ptr %clo, i64 %n) {
entry:
  %starts = alloca i64
  %stops = alloca i64
  %pargs = alloca [2 x ptr]
  %pshape = alloca [2 x i64]
  %psteps = alloca [2 x i64]
  store i64 0, ptr %starts
  %last = sub i64 %n, 1
  store i64 %last, ptr %stops
  %nt = call i64 @get_num_threads()
  %ndiv = call i64 @get_sched_size(i64 %nt, i64 1, ptr %starts, ptr %stops)
  %size = mul i64 %ndiv, 2
  %sched = call ptr @allocate_sched(i64 %size)
  %r = call ptr @do_scheduling_signed(i64 1, ptr %starts, ptr %stops, i64 %ndiv, ptr %sched, i64 0)
  store ptr %sched, ptr %pargs
  %a1 = getelementptr ptr, ptr %pargs, i64 1
  store ptr %sched, ptr %a1
  store i64 %ndiv, ptr %pshape
  %d1 = getelementptr i64, ptr %pshape, i64 1
  store i64 2, ptr %d1
  store i64 16, ptr %psteps
  %s1 = getelementptr i64, ptr %psteps, i64 1
  store i64 0, ptr %s1
  call void @numba_parallel_for(ptr %body, ptr %pargs, ptr %pshape, ptr %psteps, ptr %clo, i64 1, i64 2, i64 %nt)
  call void @deallocate_sched(ptr %sched)
  ret void
}
"""

# One gufunc-ABI body per iteration statement: loops over its divisions, each [start, end]
# inclusive, and records which thread ran iteration i.
BODY = """
define void @{name}(ptr %args, ptr %dims, ptr %steps, ptr %clo) {{
entry:
  %sched = load ptr, ptr %args
  %ndiv = load i64, ptr %dims
  %tid = call i64 @get_thread_id()
  %xp = load ptr, ptr %clo
  %outpp = getelementptr %clo, ptr %clo, i32 0, i32 1
  %outp = load ptr, ptr %outpp
  %idxpp = getelementptr %clo, ptr %clo, i32 0, i32 2
  %idxp = load ptr, ptr %idxpp
  %wpp = getelementptr %clo, ptr %clo, i32 0, i32 3
  %wp = load ptr, ptr %wpp
  %hpp = getelementptr %clo, ptr %clo, i32 0, i32 4
  %hp = load ptr, ptr %hpp
  %tpp = getelementptr %clo, ptr %clo, i32 0, i32 5
  %tp = load ptr, ptr %tpp
  br label %divs
divs:
  %k = phi i64 [ 0, %entry ], [ %k1, %divend ]
  %more = icmp slt i64 %k, %ndiv
  br i1 %more, label %div, label %done
div:
  %e0 = mul i64 %k, 2
  %sp = getelementptr i64, ptr %sched, i64 %e0
  %start = load i64, ptr %sp
  %ep = getelementptr i64, ptr %sp, i64 1
  %end = load i64, ptr %ep
  br label %iter
iter:
  %i = phi i64 [ %start, %div ], [ %i1, %iter ]
  %tq = getelementptr i64, ptr %tp, i64 %i
  store i64 %tid, ptr %tq
{stmt}
  %i1 = add i64 %i, 1
  %again = icmp sle i64 %i1, %end
  br i1 %again, label %iter, label %divend
divend:
  %k1 = add i64 %k, 1
  br label %divs
done:
  ret void
}}
"""

MAP = """  %xq = getelementptr double, ptr %xp, i64 %i
  %xi = load double, ptr %xq
  %s = call double @llvm.sin.f64(double %xi)
  %g = call double @llvm.exp.f64(double %s)
  %oq = getelementptr double, ptr %outp, i64 %i
  %o = load double, ptr %oq
  %o1 = fadd double %o, %g
  store double %o1, ptr %oq"""
SCATTER = """  %iq = getelementptr i64, ptr %idxp, i64 %i
  %j = load i64, ptr %iq
  %wq = getelementptr double, ptr %wp, i64 %i
  %wi = load double, ptr %wq
  %hq = getelementptr double, ptr %hp, i64 %j
{update}"""
ATOMIC = "  %old = atomicrmw fadd ptr %hq, double %wi monotonic, align 8"
PLAIN = """  %h = load volatile double, ptr %hq
  %h1 = fadd double %h, %wi
  store volatile double %h1, ptr %hq"""

IR = COMMON + "".join(BODY.format(name=name, stmt=stmt) for name, stmt in [
    ("body_map", MAP), ("body_atomic", SCATTER.format(update=ATOMIC)),
    ("body_plain", SCATTER.format(update=PLAIN)), ("body_empty", "")])


def build():
    codegen = cpu_target.target_context.codegen()
    library = codegen.create_library("parallel_spike")
    with global_compiler_lock:
        library.add_llvm_module(llvm.parse_assembly(IR))
        library.finalize()
    asm = library.get_asm_str()
    start = asm.index("body_atomic:")
    assert "lock\t\tcmpxchgq" in asm[start:asm.index(".Lfunc_end", start)] \
        or "lock\tcmpxchgq" in asm[start:asm.index(".Lfunc_end", start)], \
        "atomicrmw fadd double is expected to lower to a lock cmpxchg loop on x86-64"
    launch = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(
        library.get_pointer_to_function("launch"))
    bodies = {name: library.get_pointer_to_function(name)
              for name in ("body_map", "body_atomic", "body_plain", "body_empty")}
    return library, launch, bodies


def closure(*arrays):
    ptrs = (ctypes.c_void_p * 6)(*[a.ctypes.data for a in arrays])
    return ptrs, ctypes.addressof(ptrs)


def main():
    library, launch, bodies = build()
    print(f"threading layer: {numba.threading_layer()}, NUMBA_NUM_THREADS="
          f"{numba.config.NUMBA_NUM_THREADS}")
    rng = np.random.default_rng(0)
    n, bins = 200_000, 64
    x = rng.standard_normal(n)
    idx = rng.integers(0, bins, n).astype(np.int64)
    w = rng.random(n)
    for threads in (1, 2):
        numba.set_num_threads(threads)
        out = np.ones(n)
        hist = np.zeros(bins)
        tids = np.full(n, -1, np.int64)
        keep, clo = closure(x, out, idx, w, hist, tids)
        launch(bodies["body_map"], clo, n)
        np.testing.assert_allclose(out, 1.0 + np.exp(np.sin(x)), rtol=1e-15)
        used = sorted(set(tids.tolist()))
        assert -1 not in used and max(used) < threads, used
        if threads == 2:
            assert used == [0, 1], used
        launch(bodies["body_atomic"], clo, n)
        np.testing.assert_allclose(hist, np.bincount(idx, w, bins), rtol=1e-12)
        lost = []
        for _ in range(5):
            hist[:] = 0.0
            launch(bodies["body_plain"], clo, n)
            lost.append(int(np.sum(np.abs(hist - np.bincount(idx, w, bins)) > 1e-9)))
        print(f"{threads} thread(s): map ok, thread ids {used}, atomic histogram ok; "
              f"plain (racy) scatter: bins wrong in 5 runs: {lost}")
        timings(launch, bodies, clo, threads, n)
        wide = rng.integers(0, 1 << 16, n).astype(np.int64)
        hist_wide = np.zeros(1 << 16)       # alive while the closure points at it
        keep2, clo2 = closure(x, out, wide, w, hist_wide, tids)
        launch(bodies["body_atomic"], clo2, n)
        np.testing.assert_allclose(hist_wide, np.bincount(wide, w, 1 << 16), rtol=1e-12)
        atomic = best(lambda: launch(bodies["body_atomic"], clo2, n), 20)
        plain = best(lambda: launch(bodies["body_plain"], clo2, n), 20)
        print(f"   scatter into 65536 bins (best of 20): atomic {atomic * 1e3:.2f} ms, "
              f"plain {plain * 1e3:.2f} ms")
    del keep, keep2


@numba.njit(parallel=True)
def numba_map(x, out):             # Numba's own launch of the same loop, for comparison
    for i in numba.prange(x.shape[0]):
        out[i] += np.exp(np.sin(x[i]))


def best(call, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return min(times)


def timings(launch, bodies, clo, threads, n):
    def ours(body, m, reps):
        return best(lambda: launch(body, clo, m), reps)

    empty = ours(bodies["body_empty"], 64, 200)
    small, big = np.zeros(64), np.zeros(n)
    x = np.linspace(-1.0, 1.0, n)
    numba_map(small[:], small)
    numba_small = best(lambda: numba_map(small, small), 200)
    numba_big = best(lambda: numba_map(x, big), 20)
    mapped = ours(bodies["body_map"], n, 20)
    atomic = ours(bodies["body_atomic"], n, 20)
    plain = ours(bodies["body_plain"], n, 20)
    print(f"   launch of 64 iterations (best of 200): ours (empty body) {empty * 1e6:.1f} us, "
          f"Numba's prange map {numba_small * 1e6:.1f} us")
    print(f"   n={n} (best of 20): map ours {mapped * 1e3:.2f} ms vs Numba's "
          f"{numba_big * 1e3:.2f} ms; scatter atomic {atomic * 1e3:.2f} ms, "
          f"plain {plain * 1e3:.2f} ms (64 bins)")


if __name__ == "__main__":
    main()
