; Forward mode: a store through a shadowed pointer stores the tangent through the shadow
; pointer, formed by the same address arithmetic (tangent arithmetic carries `contract`).
; RUN: --func scale_into --args dup,dup,const --mode forward --stage derivative
define void @scale_into(ptr %x, ptr %out, i64 %i) {
entry:
  %px = getelementptr inbounds double, ptr %x, i64 %i
  %v = load double, ptr %px, align 8
  %e = call double @llvm.exp.f64(double %v)
  %po = getelementptr inbounds double, ptr %out, i64 %i
  store double %e, ptr %po, align 8
  ret void
}
declare double @llvm.exp.f64(double)
; CHECK: define i32 @fwddiffe_scale_into(
; CHECK: [[SX:%[^ ]+]] = getelementptr inbounds double, ptr %"x'.4", i64 %i
; CHECK: [[TX:%[^ ]+]] = load double, ptr [[SX]]
; CHECK: [[E:%[^ ]+]] = tail call double @llvm.exp.f64
; CHECK: [[T:%[^ ]+]] = fmul contract double [[E]], [[TX]]
; CHECK: [[SO:%[^ ]+]] = getelementptr inbounds double, ptr %"out'.4", i64 %i
; CHECK: store double [[E]], ptr
; CHECK-NEXT: store double [[T]], ptr [[SO]]
