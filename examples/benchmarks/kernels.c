/* The C twins of two bench_reverse.py kernels, for bench_c.py. */
#include <math.h>

double reduce_softplus(const double *x, const double *w, long n) {
  double s = 0.0;
  for (long i = 0; i < n; i++) s += w[i] * log1p(exp(-x[i]));
  return s;
}

static void pendulum_rhs(double y, double v, double k, double c, double *dy, double *dv) {
  *dy = v;
  *dv = -k * sin(y) - c * v;
}

double rk4_pendulum(double y0, double v0, double k, double c, double dt, long steps) {
  double y = y0, v = v0;
  for (long i = 0; i < steps; i++) {
    double a1, b1, a2, b2, a3, b3, a4, b4;
    pendulum_rhs(y, v, k, c, &a1, &b1);
    pendulum_rhs(y + 0.5 * dt * a1, v + 0.5 * dt * b1, k, c, &a2, &b2);
    pendulum_rhs(y + 0.5 * dt * a2, v + 0.5 * dt * b2, k, c, &a3, &b3);
    pendulum_rhs(y + dt * a3, v + dt * b3, k, c, &a4, &b4);
    y += dt / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4);
    v += dt / 6.0 * (b1 + 2.0 * b2 + 2.0 * b3 + b4);
  }
  return y;
}
