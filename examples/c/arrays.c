/* Arrays with lengths: a loss over a vector (reverse: gradient; forward: directional
   derivative), an in-place update, and a loop walking a pointer. */
#include "enzyme.h"
#define N 5

double loss(const double *w, const double *x, int n) {
  double s = 0.0;
  for (int i = 0; i < n; i++) {
    double p = tanh(w[0] * x[i] + w[1]);
    s += p * p;
  }
  return s;
}

/* x[i] <- x[i] * x[i-1] in place, then the sum of the squares */
double prefix_product(double *x, int n) {
  for (int i = 1; i < n; i++) x[i] = x[i] * x[i - 1];
  double s = 0.0;
  for (int i = 0; i < n; i++) s += x[i] * x[i];
  return s;
}

/* walks the array with a pointer increment */
double walk(const double *x, int n) {
  double s = 0.0;
  for (const double *p = x, *end = x + n; p != end; p++) s += exp(*p) * *p;
  return s;
}

int main(void) {
  double w[2] = {0.3, -0.2}, dw[2] = {0, 0}, x[N] = {0.1, -0.4, 0.9, 1.3, -2.0};
  double h = 1e-6;
  __enzyme_autodiff((void *)loss, w, dw, enzyme_const, x, N);
  for (int k = 0; k < 2; k++) {
    double wp[2] = {w[0], w[1]}, wm[2] = {w[0], w[1]};
    wp[k] += h; wm[k] -= h;
    check("dloss/dw", dw[k], (loss(wp, x, N) - loss(wm, x, N)) / (2 * h), 1e-7);
  }
  double tw[2] = {1.0, -0.5};
  double t = __enzyme_fwddiff((void *)loss, w, tw, enzyme_const, x, N);
  check("forward loss", t, dw[0] * tw[0] + dw[1] * tw[1], 1e-10);

  double y[N], dy[N] = {0}, y0[N] = {0.9, 1.1, -0.7, 0.8, 1.2};
  for (int i = 0; i < N; i++) y[i] = y0[i];
  __enzyme_autodiff((void *)prefix_product, y, dy, N);
  for (int k = 0; k < N; k++) {
    double yp[N], ym[N];
    for (int i = 0; i < N; i++) yp[i] = ym[i] = y0[i];
    yp[k] += h; ym[k] -= h;
    check("dprefix/dy", dy[k], (prefix_product(yp, N) - prefix_product(ym, N)) / (2 * h),
          1e-7);
  }

  double dx[N] = {0};
  __enzyme_autodiff((void *)walk, x, dx, N);
  for (int k = 0; k < N; k++) check("dwalk/dx", dx[k], exp(x[k]) * (1 + x[k]), 1e-12);
  return report("arrays");
}
