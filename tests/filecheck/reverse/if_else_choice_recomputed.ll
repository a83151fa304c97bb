; Which branch an if/else took is recomputed from the branch condition in the reverse pass
; (its inputs are still available), not recorded on the tape.
; RUN: --func pick --args active,active --stage derivative --no-canonicalize
define double @pick(double %x, double %y) {
entry:
  %c = fcmp ogt double %x, %y
  br i1 %c, label %then, label %else
then:
  %a = fmul double %x, %x
  br label %merge
else:
  %b = fmul double %y, 3.0
  br label %merge
merge:
  %r = phi double [ %a, %then ], [ %b, %else ]
  ret double %r
}
; CHECK: define i32 @diffe_pick(
; CHECK-NOT: tape.grow
; CHECK-LABEL: pick.exit.rev:
; CHECK: [[WHICH:%[^ ]+]] = select i1 %c.i, i32 0, i32 1
; CHECK-NEXT: switch i32 [[WHICH]], label %pick.exit.rev.to.then.i [ i32 1, label %pick.exit.rev.to.else.i ]
