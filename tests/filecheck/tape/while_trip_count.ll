; A while loop with a data-dependent exit: the reverse pass replays it from a trip count
; recorded once per entry to the loop.
; RUN: --func halve --args active --stage tape
define double @halve(double %x) {
entry:
  br label %loop
loop:
  %v = phi double [ %x, %entry ], [ %h, %loop ]
  %h = fmul double %v, 0.5
  %big = fcmp ogt double %h, 1.0
  br i1 %big, label %loop, label %exit
exit:
  ret double %h
}
; CHECK: loop.i  depth 1    trips = ? (data-dependent)
; CHECK: ; taped
; CHECK: loop.i.iter  i64
