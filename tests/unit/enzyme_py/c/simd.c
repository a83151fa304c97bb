/* SIMD kernels for tests/unit/enzyme_py/c/test_simd.py: GCC/clang vector types (vector_size)
   and loops clang vectorises at -O2/-O3. Vector types are declared 8-byte (4-byte) aligned so
   that NumPy arrays can be passed for them. */
#include <math.h>

typedef double v2 __attribute__((vector_size(16), aligned(8)));
typedef double v4 __attribute__((vector_size(32), aligned(8)));
typedef float f4 __attribute__((vector_size(16), aligned(4)));

/* the example: a lane-wise product stored through a pointer */
void v2_product(v2 *out, const v2 *a, const v2 *b) { *out = *a * *b; }

/* lane-wise fadd, fsub, fmul, fdiv, fneg with splat constants */
void v2_arith(v2 *out, const v2 *a, const v2 *b) {
  *out = *a + *b * *a - *a / (*b * *b + 3.0) - (-*b) * 0.5;
}

/* fma and math intrinsics on vectors, then a horizontal sum by element access */
double v4_math(const v4 *a, const v4 *b, const v4 *c) {
  v4 r = __builtin_elementwise_fma(*a, *b, *c);
  v4 s = __builtin_elementwise_sqrt(r * r + 1.0) + __builtin_elementwise_sin(*a)
         + __builtin_elementwise_exp(*b * 0.3) * __builtin_elementwise_abs(*c)
         + __builtin_elementwise_pow(*b * *b + 1.0, *a);
  return s[0] + s[1] + s[2] + s[3];
}

/* shuffles picking lanes of both operands (one lane twice), insert and extract (also at a
   variable lane) */
double v4_shuffle(const v4 *a, const v4 *b, int k) {
  v4 s = __builtin_shufflevector(*a, *b, 3, 0, 5, 5);
  v4 t = s * *a;
  t[1] = t[2] * (*b)[k];
  v2 lo = __builtin_shufflevector(t, t, 0, 1);
  return lo[0] * t[3] + lo[1] + t[k];
}

/* horizontal maximum (llvm.vector.reduce.fmax) */
double v4_max(const v4 *a) { return __builtin_reduce_max(*a * *a + *a); }

/* float32 lanes, with a conversion of an integer vector (inactive) */
float f4_mix(const f4 *a, const f4 *b, int n) {
  typedef int i4 __attribute__((vector_size(16)));
  i4 k = {n, 1, 2, 3};
  f4 r = *a * *a + *b * __builtin_convertvector(k, f4);
  return r[0] * r[1] + r[2] - r[3];
}

/* a loop carrying a vector: the reverse pass reads every s (a vector on the tape) */
double v2_loop(const v2 *a, int n) {
  v2 s = {1.0, 0.5};
  for (int i = 0; i < n; i++) s = s * a[i] + 0.25;
  return s[0] * s[1];
}

/* lane-wise selections (llvm.maxnum / llvm.minnum on vectors) */
void v2_extrema(v2 *out, const v2 *a, const v2 *b) {
  *out = __builtin_elementwise_max(*a, *b * *b) * *a + __builtin_elementwise_min(*a, *b);
}

/* loops LLVM's loop vectoriser turns into <2 x double> / <4 x double> code at -O2/-O3 */
void axpy_sq(double *y, const double *x, double a, int n) {
  for (int i = 0; i < n; i++) y[i] = a * x[i] * x[i] + y[i] * x[i];
}

double dot(const double *x, const double *y, int n) {
  double s = 0.0;
  for (int i = 0; i < n; i++) s += x[i] * y[i];
  return s;
}

double sum_of_products(const double *x, int n) {
  double s = 0.0;
#pragma clang loop vectorize(enable) interleave(enable)
  for (int i = 0; i < n; i++) s += x[i] * x[i] * (1.0 + x[i]);
  return s;
}

/* struct copies of vectors (llvm.memcpy at -O0; vector loads and stores once optimised) */
typedef struct { v2 lo, hi; } v2pair;
void v2_pair(v2pair *out, const v2pair *in) {
  v2pair t = *in;
  v2 s = t.lo;
  t.lo = t.hi * s;
  t.hi = s * s + t.hi;
  *out = t;
}
