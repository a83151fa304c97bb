; Forward mode: a pointer loaded from shadowed memory (a `double **` marked dup) has as its
; shadow the pointer loaded from the same place of the shadow memory (Enzyme's convention:
; the caller's shadow holds shadow pointers); the tangent is loaded through it.
; RUN: --func first_square --args dup --mode forward --stage derivative
define double @first_square(ptr %x) {
entry:
  %row = load ptr, ptr %x, align 8
  %v = load double, ptr %row, align 8
  %r = fmul double %v, %v
  ret double %r
}
; CHECK: define i32 @fwddiffe_first_square(
; CHECK: [[ROW:%[^ ]+]] = load ptr, ptr %x
; CHECK-NEXT: [[SROW:%[^ ]+]] = load ptr, ptr %"x'
; CHECK: load double, ptr [[ROW]]
; CHECK: load double, ptr [[SROW]]
