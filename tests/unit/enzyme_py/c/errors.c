/* Constructs the C front end refuses: each error must name this file and the line. */
extern double mystery(double);

double fact(double x, int n) {
  if (n == 0) return 1.0;
  return x * fact(x, n - 1);                           /* line 6: recursion */
}

double opaque(double x) { return 2.0 * mystery(x); }    /* line 9: no derivative */

#include <stdlib.h>
double zeroed(const double *x, int n) {
  double *t = (double *)calloc(n, sizeof(double));
  for (int i = 0; i < n; i++) t[i] = x[i] * x[i];      /* line 14: calloc has no shadow */
  double s = t[0] * t[n - 1];
  free(t);
  return s;
}

double apply(double (*f)(double), double x) { return f(x) * x; }   /* line 20: indirect */
extern double j0(double);
double bessel(double x) { return j0(x) * x; }   /* line 22: libm, no built-in rule */

static void fill_rec(double *out, const double *x, int n) {
  if (n == 0) return;
  fill_rec(out, x, n - 1);
  out[n - 1] = x[n - 1] * x[n - 1];
}
void fill_squares(double *out, const double *x, int n) { fill_rec(out, x, n); }  /* line 29 */

typedef struct { double lo, hi; } pair;
static pair spread(double x, int n) {
  if (n == 0) { pair p = {x, x}; return p; }
  pair q = spread(x * 0.5, n - 1);                     /* line 34: recursion via a struct */
  q.hi += x;
  return q;
}
double width(double x, int n) { pair p = spread(x, n); return p.hi - p.lo; }

static double sum_rec(const double *x, int n) { return n == 0 ? 0.0 : x[n - 1] * x[n - 1] + sum_rec(x, n - 1); }
double sum_then_clear(double *x, int n) { double s = sum_rec(x, n); x[0] = 0.0; return s; }  /* line 41 */
