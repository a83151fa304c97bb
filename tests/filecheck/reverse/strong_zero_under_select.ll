; A value computed speculatively under a select (log of a possibly negative number) gets a
; strong zero: the unselected arm's NaN partial must not poison the adjoint.
; RUN: --func safe_log --args active --stage derivative
define double @safe_log(double %x) {
entry:
  %l = call double @llvm.log.f64(double %x)
  %pos = fcmp ogt double %x, 0.0
  %r = select i1 %pos, double %l, double 0.0
  ret double %r
}
declare double @llvm.log.f64(double)
; CHECK: define i32 @diffe_safe_log(
; CHECK: [[P:%[^ ]+]] = fdiv double 1.000000e+00, %x
; CHECK-NEXT: [[T:%[^ ]+]] = fmul double [[P]], [[ADJ:%[^ ]+]]
; CHECK: [[Z:%[^ ]+]] = fcmp oeq double [[ADJ]], 0.000000e+00
; CHECK: select i1 [[Z]], double -0.000000e+00, double [[T]]
