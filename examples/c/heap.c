/* Heap memory allocated and freed inside the differentiated function; structs of doubles
   through pointers. */
#include <stdlib.h>
#include "enzyme.h"
#define N 4

typedef struct { double x, y, z; } vec3;

/* smoothed squares kept in a malloc'd buffer, freed before returning */
double heap_energy(const double *x, int n) {
  double *t = (double *)malloc(n * sizeof(double));
  for (int i = 0; i < n; i++) t[i] = sin(x[i]) * x[i];
  double s = 0.0;
  for (int i = 0; i < n; i++) s += t[i] * t[(i + 1) % n];
  free(t);
  return s;
}

/* potential of particles: pairwise 1/r through pointers to structs */
double potential(const vec3 *p, int n) {
  double e = 0.0;
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      double dx = p[i].x - p[j].x, dy = p[i].y - p[j].y, dz = p[i].z - p[j].z;
      e += 1.0 / sqrt(dx * dx + dy * dy + dz * dz);
    }
  return e;
}

int main(void) {
  double x[N] = {0.3, -1.1, 0.8, 2.0}, dx[N] = {0}, h = 1e-6;
  __enzyme_autodiff((void *)heap_energy, x, dx, enzyme_const, N);
  for (int k = 0; k < N; k++) {
    double xp[N], xm[N];
    for (int i = 0; i < N; i++) xp[i] = xm[i] = x[i];
    xp[k] += h; xm[k] -= h;
    check("dheap/dx", dx[k], (heap_energy(xp, N) - heap_energy(xm, N)) / (2 * h), 1e-7);
  }

  vec3 p[3] = {{0, 0, 0}, {1, 0.2, -0.3}, {-0.4, 1.1, 0.5}}, dp[3] = {{0}};
  __enzyme_autodiff((void *)potential, p, dp, 3);
  double *flat = (double *)p, *dflat = (double *)dp;
  for (int k = 0; k < 9; k++) {
    double keep = flat[k];
    flat[k] = keep + h; double ep = potential(p, 3);
    flat[k] = keep - h; double em = potential(p, 3);
    flat[k] = keep;
    check("dpotential/dp", dflat[k], (ep - em) / (2 * h), 1e-6);
  }
  return report("heap");
}
