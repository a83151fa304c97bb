/* Selections (fmax/fmin, fabs, copysign, ?:) whose unpicked operand has an infinite partial
   (sqrt(fabs(x)) at x = 0), and kernels where a zero tangent or adjoint meets an infinite
   partial (strong_zero): tests/unit/enzyme_py/c/test_selections.py. */
#define _GNU_SOURCE     /* C23's fmaximum_num / fminimum in glibc's math.h */
#include <math.h>
#include <stdlib.h>

double fmax_root(double x, double y) { return fmax(sqrt(fabs(x)), y); }

double fmin_root(double x, double y) { return fmin(y, -sqrt(fabs(x))); }

/* fmaximum_num is llvm.maximumnum from -O0 on; fminimum stays a libm call */
double c23_min_max(double x, double y) {
    double r = sqrt(fabs(x));
    return fmaximum_num(r, y) + fminimum(y - 2.0, -r) + fmaximum(x, y) * fminimum_num(y, x);
}

double ternary_chain(double x, double y, double z) {
    double r = sqrt(fabs(x));
    double a = y < 0.0 ? r : (z > 0.0 ? y * z : y - z);
    return fmax(fmax(a, y), fmin(z, r + 5.0)) + (x > 1.0 ? r : z * z);
}

double sign_ops(double x, double y) {
    return fabs(x) * y + copysign(x, y) + copysign(y * y, x - 0.5);
}

double first(double x, double y) { return fmax(x, y) + 2.0 * fmin(x, y); }

double absolute(double x) { return fabs(x); }

double signed_copy(double x, double y) { return copysign(x, y); }

/* sum |p[i+1] - p[i]| over x padded with n_pad zeros, |d| written as sqrt(d * d) */
double padded_variation(const double *x, int n, int n_pad) {
    double *p = malloc(sizeof(double) * (n + n_pad));
    for (int i = 0; i < n + n_pad; i++) p[i] = i < n ? x[i] : 0.0;
    double s = 0.0;
    for (int i = 0; i < n + n_pad - 1; i++) {
        double d = p[i + 1] - p[i];
        s += sqrt(d * d);
    }
    free(p);
    return s;
}

/* sum w[i] sqrt((a[i] - b[i])^2), with w[i] = 0 where a[i] = b[i] (padding) */
double masked_distance(const double *a, const double *b, const double *w, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        double d = a[i] - b[i];
        s += w[i] * sqrt(d * d);
    }
    return s;
}
