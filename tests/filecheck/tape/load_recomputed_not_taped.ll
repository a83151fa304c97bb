; A value loaded from an array the function never writes is reloaded in the reverse pass,
; not taped, and the loop's trip count is recomputed from its bound: nothing is taped.
; RUN: --func sumsq --args dup,const --stage tape
define double @sumsq(ptr %x, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %inc, %loop ]
  %acc = phi double [ 0.0, %entry ], [ %add, %loop ]
  %p = getelementptr inbounds double, ptr %x, i64 %i
  %v = load double, ptr %p, align 8
  %sq = fmul double %v, %v
  %add = fadd double %acc, %sq
  %inc = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %inc, %n
  br i1 %done, label %exit, label %loop
exit:
  ret double %add
}
; CHECK: ; taped (0 value(s)
; CHECK: ; recomputed in the reverse pass instead of taped (4):
; CHECK-DAG: %v.i   double  recompute
; CHECK-DAG: %i.i   i64     iv of loop loop.i
; CHECK-DAG: loop.i.iter  i64     recompute          sumsq.exit  trip count of loop loop.i
; CHECK: ; total tape per call: 0 bytes
