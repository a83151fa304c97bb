; Reverse mode: a dup pointer stored into dup memory (a struct's data field) puts its shadow
; at the same place of the shadow struct in the forward sweep; the reverse leaves it there
; (a pointer has no adjoint to reset).
; RUN: --func set_data --args dup,dup --stage derivative
define void @set_data(ptr %v, ptr %x) {
entry:
  %pd = getelementptr inbounds i8, ptr %v, i64 8
  store ptr %x, ptr %pd, align 8
  store i64 1, ptr %v, align 8
  ret void
}
; CHECK: define i32 @diffe_set_data(
; CHECK: [[SPD:%[^ ]+]] = getelementptr inbounds {{(nuw )?}}i8, ptr %"v'{{[^ ]*}}, i64 8
; CHECK: store ptr %x, ptr
; CHECK-NEXT: store ptr %"x'{{[^ ]*}}, ptr [[SPD]]
; CHECK-NOT: store ptr null
