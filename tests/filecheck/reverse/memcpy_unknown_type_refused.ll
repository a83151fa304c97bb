; memcpy between arrays whose element type is unknown (C pointers carry no dtype) is
; refused: the adjoint of a copy must know which bytes are floats.
; RUN-FAIL: --func copy_square --args dup,dup,const --stage derivative
define void @copy_square(ptr %x, ptr %out, i64 %n) {
entry:
  %bytes = shl i64 %n, 3
  call void @llvm.memcpy.p0.p0.i64(ptr %out, ptr %x, i64 %bytes, i1 false)
  ret void
}
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
; CHECK: memory copy of active data whose element type is unknown
; CHECK: instruction: {{.*}}call void @llvm.memcpy
; CHECK: fix:
