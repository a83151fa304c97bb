; clang -O1 style: no value names (numbered arguments, blocks and values).
define dso_local double @sumexp(ptr noundef readonly %0, i32 noundef %1) local_unnamed_addr #0 {
  %3 = icmp sgt i32 %1, 0
  br i1 %3, label %4, label %6

4:
  %5 = zext nneg i32 %1 to i64
  br label %8

6:
  %7 = phi double [ 0.000000e+00, %2 ], [ %14, %8 ]
  ret double %7

8:
  %9 = phi i64 [ 0, %4 ], [ %15, %8 ]
  %10 = phi double [ 0.000000e+00, %4 ], [ %14, %8 ]
  %11 = getelementptr inbounds double, ptr %0, i64 %9
  %12 = load double, ptr %11, align 8
  %13 = tail call double @exp(double %12)
  %14 = fadd double %10, %13
  %15 = add nuw nsw i64 %9, 1
  %16 = icmp eq i64 %15, %5
  br i1 %16, label %6, label %8
}
declare double @exp(double)
attributes #0 = { nounwind }
