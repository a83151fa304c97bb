; Loops in canonical form (preheader, one latch, LCSSA) in Numba's ABI, for tape_report and
; cfg_dot unit tests. @counted's array x is (meminfo, parent, nitems, itemsize, data, shape,
; stride); the others take scalars. @ifelse, @parity and @clamp_loop branch: an if/else
; outside loops, one on the induction variable, and an if-then on a loop-carried float.

define i32 @counted(ptr %retptr, ptr %excinfo, ptr %x.0, ptr %x.1, i64 %x.2, i64 %x.3, ptr %x.4, i64 %x.5, i64 %x.6) {
entry:
  %guard = icmp sgt i64 %x.5, 0
  br i1 %guard, label %pre, label %exit

pre:
  br label %loop

loop:
  %i = phi i64 [ 0, %pre ], [ %i.next, %loop ]
  %s = phi double [ 0.000000e+00, %pre ], [ %s.next, %loop ]
  %p = getelementptr double, ptr %x.4, i64 %i
  %v = load double, ptr %p, align 8, !enzyme.loc !0
  %e = call double @llvm.exp.f64(double %v), !enzyme.loc !0
  %s.next = fadd double %s, %e, !enzyme.loc !0
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %x.5
  br i1 %done, label %exit.loopexit, label %loop, !enzyme.loc !1

exit.loopexit:
  %s.lcssa = phi double [ %s.next, %loop ]
  br label %exit

exit:
  %r = phi double [ 0.000000e+00, %entry ], [ %s.lcssa, %exit.loopexit ]
  store double %r, ptr %retptr, align 8
  ret i32 0
}

define i32 @from_one(ptr %retptr, ptr %excinfo, double %x, i64 %n) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 1, %entry ], [ %i.next, %loop ]
  %y = phi double [ %x, %entry ], [ %y.next, %loop ]
  %y.next = call double @llvm.sin.f64(double %y)
  %i.next = add i64 %i, 1
  %more = icmp slt i64 %i.next, %n
  br i1 %more, label %loop, label %exit

exit:
  %y.lcssa = phi double [ %y.next, %loop ]
  store double %y.lcssa, ptr %retptr, align 8
  ret i32 0
}

define i32 @step2(ptr %retptr, ptr %excinfo, double %x, i64 %n) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %y = phi double [ %x, %entry ], [ %y.next, %loop ]
  %y.next = fmul double %y, %y
  %i.next = add i64 %i, 2
  %more = icmp slt i64 %i.next, %n
  br i1 %more, label %loop, label %exit

exit:
  %y.lcssa = phi double [ %y.next, %loop ]
  store double %y.lcssa, ptr %retptr, align 8
  ret i32 0
}

define i32 @halved(ptr %retptr, ptr %excinfo, double %x, i64 %n) {
entry:
  %half = ashr i64 %n, 1
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %y = phi double [ %x, %entry ], [ %y.next, %loop ]
  %y.next = call double @llvm.cos.f64(double %y)
  %i.next = add i64 %i, 1
  %more = icmp slt i64 %i.next, %half
  br i1 %more, label %loop, label %exit

exit:
  %y.lcssa = phi double [ %y.next, %loop ]
  store double %y.lcssa, ptr %retptr, align 8
  ret i32 0
}

define i32 @before_step(ptr %retptr, ptr %excinfo, double %x, i64 %n) {
entry:
  %last = add i64 %n, -1
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %y = phi double [ %x, %entry ], [ %y.next, %loop ]
  %y.next = fmul double %y, %x
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i, %last
  br i1 %more, label %loop, label %exit

exit:
  %y.lcssa = phi double [ %y.next, %loop ]
  store double %y.lcssa, ptr %retptr, align 8
  ret i32 0
}

define i32 @triangular(ptr %retptr, ptr %excinfo, double %x, i64 %n) {
entry:
  br label %outer

outer:
  %i = phi i64 [ 0, %entry ], [ %i.next, %outer.latch ]
  %y = phi double [ %x, %entry ], [ %y.inner, %outer.latch ]
  %i.next = add i64 %i, 1
  br label %inner

inner:
  %j = phi i64 [ 0, %outer ], [ %j.next, %inner ]
  %z = phi double [ %y, %outer ], [ %z.next, %inner ]
  %z.next = call double @llvm.cos.f64(double %z)
  %j.next = add i64 %j, 1
  %jdone = icmp eq i64 %j.next, %i.next
  br i1 %jdone, label %outer.latch, label %inner

outer.latch:
  %y.inner = phi double [ %z.next, %inner ]
  %idone = icmp eq i64 %i.next, %n
  br i1 %idone, label %exit, label %outer

exit:
  %y.lcssa = phi double [ %y.inner, %outer.latch ]
  store double %y.lcssa, ptr %retptr, align 8
  ret i32 0
}

define i32 @until(ptr %retptr, ptr %excinfo, double %x) {
entry:
  br label %loop

loop:
  %y = phi double [ %x, %entry ], [ %y.next, %loop ]
  %y.next = call double @llvm.sin.f64(double %y)
  %small = fcmp olt double %y.next, 1.000000e-03
  br i1 %small, label %exit, label %loop

exit:
  %y.lcssa = phi double [ %y.next, %loop ]
  store double %y.lcssa, ptr %retptr, align 8
  ret i32 0
}

define i32 @ifelse(ptr %retptr, ptr %excinfo, double %x) {
entry:
  %c = fcmp ogt double %x, 0.000000e+00
  br i1 %c, label %then, label %else

then:
  %e = call double @llvm.exp.f64(double %x), !enzyme.loc !2
  br label %merge

else:
  %s = call double @llvm.sin.f64(double %x)
  br label %merge

merge:
  %r = phi double [ %e, %then ], [ %s, %else ]
  store double %r, ptr %retptr, align 8
  ret i32 0
}

define i32 @parity(ptr %retptr, ptr %excinfo, double %x, i64 %n) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %y = phi double [ %x, %entry ], [ %y.next, %latch ]
  %odd = and i64 %i, 1
  %even = icmp eq i64 %odd, 0
  br i1 %even, label %a, label %b

a:
  %ya = call double @llvm.sin.f64(double %y)
  br label %latch

b:
  %yb = fmul double %y, %y
  br label %latch

latch:
  %y.next = phi double [ %ya, %a ], [ %yb, %b ]
  %i.next = add i64 %i, 1
  %more = icmp slt i64 %i.next, %n
  br i1 %more, label %loop, label %exit

exit:
  %y.lcssa = phi double [ %y.next, %latch ]
  store double %y.lcssa, ptr %retptr, align 8
  ret i32 0
}

define i32 @clamp_loop(ptr %retptr, ptr %excinfo, double %x, i64 %n) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %y = phi double [ %x, %entry ], [ %y.next, %latch ]
  %big = fcmp ogt double %y, 1.000000e+00
  br i1 %big, label %shrink, label %latch

shrink:
  %half = call double @llvm.sin.f64(double %y)
  br label %latch

latch:
  %y.next = phi double [ %half, %shrink ], [ %y, %loop ]
  %i.next = add i64 %i, 1
  %more = icmp slt i64 %i.next, %n
  br i1 %more, label %loop, label %exit

exit:
  %y.lcssa = phi double [ %y.next, %latch ]
  store double %y.lcssa, ptr %retptr, align 8
  ret i32 0
}

declare double @llvm.exp.f64(double)
declare double @llvm.sin.f64(double)
declare double @llvm.cos.f64(double)

!0 = !{!"/src/kernels.py:7"}
!1 = !{!"/src/kernels.py:6"}
!2 = !{!"/src/kernels.py:12"}
