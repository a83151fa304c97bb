; A value loaded from memory the function later overwrites must be taped: the reverse pass
; cannot reload it.
; RUN: --func square_in_place --args dup,const --stage tape
define void @square_in_place(ptr %x, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %inc, %loop ]
  %p = getelementptr inbounds double, ptr %x, i64 %i
  %v = load double, ptr %p, align 8
  %sq = fmul double %v, %v
  store double %sq, ptr %p, align 8
  %inc = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %inc, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
; CHECK: ; taped
; CHECK: %v.i {{.*}}double{{.*}}loop.i{{.*}}8
