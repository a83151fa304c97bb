"""Numba's complex power helpers, given LLVM bodies so the pass differentiates through them.

Numba lowers `a ** b` of complex numbers (other than `b == 2`) to a call of the C helper
`numba_cpow(ptr a, ptr b, ptr out)` (`numba_cpowf` for complex64), which calls CPython's
`_Py_c_pow`. The captured module gets a definition of each helper written in LLVM IR with the
same formula and the same libm calls (hypot, pow, atan2, exp, log, cos, sin), so the inliner
puts its body into the primal and the pass differentiates the scalar math like any other.

Non-differentiable points follow `_Py_c_pow`'s branches: `b == 0` gives 1 and `a == 0` gives 0
(NaN when `b` is not a non-negative real, where CPython raises), both with a zero derivative;
at `a == 0` the true derivative in `a` of `a ** b` is 0 for real `b >= 1` and infinite for
`0 < b < 1`, where the derivative returned (0) is a subgradient-like convention.
"""
from __future__ import annotations

import llvmlite.binding as llvm

_CPOW = """
declare double @hypot(double, double)
declare double @atan2(double, double)
declare double @llvm.pow.f64(double, double)
declare double @llvm.exp.f64(double)
declare double @llvm.log.f64(double)
declare double @llvm.cos.f64(double)
declare double @llvm.sin.f64(double)

define linkonce_odr void @numba_cpow(ptr %pa, ptr %pb, ptr %pout) {
entry:
  %ar = load double, ptr %pa
  %pai = getelementptr inbounds { double, double }, ptr %pa, i32 0, i32 1
  %ai = load double, ptr %pai
  %br = load double, ptr %pb
  %pbi = getelementptr inbounds { double, double }, ptr %pb, i32 0, i32 1
  %bi = load double, ptr %pbi
  %br0 = fcmp oeq double %br, 0.0
  %bi0 = fcmp oeq double %bi, 0.0
  %b0 = and i1 %br0, %bi0
  br i1 %b0, label %done, label %nonzero_b
nonzero_b:
  %ar0 = fcmp oeq double %ar, 0.0
  %ai0 = fcmp oeq double %ai, 0.0
  %a0 = and i1 %ar0, %ai0
  br i1 %a0, label %zero_a, label %polar
zero_a:
  %bineg = fcmp une double %bi, 0.0
  %brneg = fcmp olt double %br, 0.0
  %edom = or i1 %bineg, %brneg
  %z = select i1 %edom, double 0x7FF8000000000000, double 0.0
  br label %done
polar:
  %vabs = call double @hypot(double %ar, double %ai)
  %len0 = call double @llvm.pow.f64(double %vabs, double %br)
  %at = call double @atan2(double %ai, double %ar)
  %phase0 = fmul double %at, %br
  br i1 %bi0, label %rotate, label %complex_b
complex_b:
  %atbi = fmul double %at, %bi
  %shrink = call double @llvm.exp.f64(double %atbi)
  %len1 = fdiv double %len0, %shrink
  %logabs = call double @llvm.log.f64(double %vabs)
  %turn = fmul double %bi, %logabs
  %phase1 = fadd double %phase0, %turn
  br label %rotate
rotate:
  %len = phi double [ %len0, %polar ], [ %len1, %complex_b ]
  %phase = phi double [ %phase0, %polar ], [ %phase1, %complex_b ]
  %cos = call double @llvm.cos.f64(double %phase)
  %sin = call double @llvm.sin.f64(double %phase)
  %re = fmul double %len, %cos
  %im = fmul double %len, %sin
  br label %done
done:
  %outr = phi double [ 1.0, %entry ], [ %z, %zero_a ], [ %re, %rotate ]
  %outi = phi double [ 0.0, %entry ], [ %z, %zero_a ], [ %im, %rotate ]
  store double %outr, ptr %pout
  %pouti = getelementptr inbounds { double, double }, ptr %pout, i32 0, i32 1
  store double %outi, ptr %pouti
  ret void
}

define linkonce_odr void @numba_cpowf(ptr %pa, ptr %pb, ptr %pout) {
entry:
  %a = alloca { double, double }
  %b = alloca { double, double }
  %out = alloca { double, double }
  call void @enzyme_py.widen(ptr %pa, ptr %a)
  call void @enzyme_py.widen(ptr %pb, ptr %b)
  call void @numba_cpow(ptr %a, ptr %b, ptr %out)
  %outr = load double, ptr %out
  %pouti = getelementptr inbounds { double, double }, ptr %out, i32 0, i32 1
  %outi = load double, ptr %pouti
  %fr = fptrunc double %outr to float
  %fi = fptrunc double %outi to float
  store float %fr, ptr %pout
  %pfi = getelementptr inbounds { float, float }, ptr %pout, i32 0, i32 1
  store float %fi, ptr %pfi
  ret void
}

define linkonce_odr void @enzyme_py.widen(ptr %src, ptr %dst) {
entry:
  %r = load float, ptr %src
  %pi = getelementptr inbounds { float, float }, ptr %src, i32 0, i32 1
  %i = load float, ptr %pi
  %dr = fpext float %r to double
  %di = fpext float %i to double
  store double %dr, ptr %dst
  %pdi = getelementptr inbounds { double, double }, ptr %dst, i32 0, i32 1
  store double %di, ptr %pdi
  ret void
}
"""

_HELPERS = ("numba_cpow", "numba_cpowf")


def define_complex_power(module: llvm.ModuleRef) -> None:
    """Link the bodies of the complex power helpers into `module` when it declares one."""
    declared = {fn.name for fn in module.functions if fn.is_declaration}
    if not declared.intersection(_HELPERS):
        return
    bodies = llvm.parse_assembly(_CPOW)
    bodies.triple, bodies.data_layout = module.triple, module.data_layout
    module.link_in(bodies)
