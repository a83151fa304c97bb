; Hand-written C-ABI functions in the shape clang -O1 emits, for the inspection tool's tests.
source_filename = "kernels.c"

define dso_local double @poly(double noundef %x, double noundef %y) local_unnamed_addr #0 {
entry:
  %xx = fmul double %x, %x
  %s = call double @llvm.sin.f64(double %y)
  %r = fadd double %xx, %s
  ret double %r
}

define dso_local double @dot(ptr noundef readonly captures(none) %x, ptr noundef readonly captures(none) %y, i64 noundef %n) local_unnamed_addr #0 {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %for.body, label %for.end

for.body:
  %i = phi i64 [ 0, %entry ], [ %inc, %for.body ]
  %acc = phi double [ 0.000000e+00, %entry ], [ %add, %for.body ]
  %px = getelementptr inbounds double, ptr %x, i64 %i
  %vx = load double, ptr %px, align 8, !tbaa !2
  %py = getelementptr inbounds double, ptr %y, i64 %i
  %vy = load double, ptr %py, align 8, !tbaa !2
  %mul = fmul double %vx, %vy
  %add = fadd double %acc, %mul
  %inc = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %inc, %n
  br i1 %done, label %for.end, label %for.body

for.end:
  %sum = phi double [ 0.000000e+00, %entry ], [ %add, %for.body ]
  ret double %sum
}

define dso_local void @axpy(ptr noundef captures(none) %out, ptr noundef readonly captures(none) %x, double noundef %a, i64 noundef %n) local_unnamed_addr #1 {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %for.body, label %for.end

for.body:
  %i = phi i64 [ 0, %entry ], [ %inc, %for.body ]
  %px = getelementptr inbounds double, ptr %x, i64 %i
  %vx = load double, ptr %px, align 8, !tbaa !2
  %ex = call double @exp(double %vx)
  %prod = fmul double %a, %ex
  %po = getelementptr inbounds double, ptr %out, i64 %i
  %old = load double, ptr %po, align 8, !tbaa !2
  %new = fadd double %old, %prod
  store double %new, ptr %po, align 8, !tbaa !2
  %inc = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %inc, %n
  br i1 %done, label %for.end, label %for.body

for.end:
  ret void
}

declare double @llvm.sin.f64(double)
declare double @exp(double) local_unnamed_addr

attributes #0 = { nounwind uwtable "frame-pointer"="none" }
attributes #1 = { noinline nounwind optnone uwtable }

!llvm.module.flags = !{!0}
!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{!"clang version 22.0.0"}
!2 = !{!3, !3, i64 0}
!3 = !{!"double", !4, i64 0}
!4 = !{!"omnipotent char", !5, i64 0}
!5 = !{!"Simple C/C++ TBAA"}
