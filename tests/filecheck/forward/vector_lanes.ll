; Vector forward mode (width 2): a float's tangent is a <2 x double>, and the rule for
; sin scales both lanes by one cos (tangent arithmetic may contract into multiply-adds).
; RUN: --func wave --args dup --mode forward --width 2 --stage derivative
define double @wave(double %x) {
entry:
  %s = call double @llvm.sin.f64(double %x)
  ret double %s
}
declare double @llvm.sin.f64(double)
; CHECK: define i32 @fwddiffe_wave(
; CHECK: call contract double @llvm.cos.f64
; CHECK: fmul contract <2 x double>
