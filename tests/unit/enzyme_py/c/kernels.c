/* Kernels for tests/unit/enzyme_py/c/test_derive.py: each is differentiated by enzyme_py.c.derive and checked
   against central finite differences of itself (compiled by clang-22 into a shared library). */
#include <math.h>
#include <stdlib.h>

typedef struct { double x, y, z; } vec3;

static double sq(double x) { return x * x; }              /* a static helper */

double libm_mix(double x, double y) {
  return sin(x) * cos(y) + exp(0.3 * x) * log(2.0 + y * y) + pow(fabs(x) + 1.0, 1.7)
         + sqrt(1.0 + sq(x * y)) + tanh(x - y) + atan2(y, 2.0 + x * x) + hypot(x, y)
         + cbrt(3.0 + x) + expm1(0.1 * y) + log1p(x * x);
}

double three(double a, double b, double c) { return a * b * c + sq(a - c) / (1.0 + b * b); }

double dot_len(const double *a, const double *b, int n) {
  double s = 0.0;
  for (int i = 0; i < n; i++) s += a[i] * b[i];
  return s;
}

/* in place: x[i] <- sin(x[i]) * x[i-1] (x[0] kept) */
void inplace(double *x, int n) {
  for (int i = 1; i < n; i++) x[i] = sin(x[i]) * x[i - 1];
}

/* out[i] = scale * in[i]^2, scale active */
void squares(const double *in, double *out, int n, double scale) {
  for (int i = 0; i < n; i++) out[i] = scale * in[i] * in[i];
}

double pointer_walk(const double *x, int n) {
  double s = 0.0, prev = 1.0;
  for (const double *p = x, *end = x + n; p < end; p++) {
    s += prev * *p;
    prev = cos(*p);
  }
  return s;
}

double heap_temp(const double *x, int n) {
  double *t = (double *)malloc((size_t)n * sizeof(double));
  for (int i = 0; i < n; i++) t[i] = exp(-x[i] * x[i]);
  double s = 0.0;
  for (int i = 0; i < n; i++) s += t[i] * t[n - 1 - i] * x[i];
  free(t);
  return s;
}

double struct_norms(const vec3 *v, int n) {
  double s = 0.0;
  for (int i = 0; i < n; i++) s += sqrt(v[i].x * v[i].x + v[i].y * v[i].y + v[i].z * v[i].z);
  return s;
}

/* moves particles along their velocity; both arrays of structs, in place */
void advance(vec3 *pos, const vec3 *vel, int n, double dt) {
  for (int i = 0; i < n; i++) {
    pos[i].x += dt * vel[i].x * pos[i].y;
    pos[i].y += dt * vel[i].y;
    pos[i].z += dt * sin(vel[i].z);
  }
}

double branchy(double x, double y) {
  if (x > y) return x * x - y;
  return y * sin(x);
}

static double power_rec(double x, int n) { return n == 0 ? 1.0 : x * power_rec(x, n - 1); }
double rec_power(double x, int n) { return power_rec(x, n) + sin(x); }   /* recursion */

static double tree(const double *a, int lo, int hi) {
  if (hi - lo == 1) return a[lo] * a[lo];
  int mid = (lo + hi) / 2;
  return 0.5 * tree(a, lo, mid) + cos(tree(a, mid, hi));
}
double rec_tree(const double *a, int n) { return tree(a, 0, n); }
