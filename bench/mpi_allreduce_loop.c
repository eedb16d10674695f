/* A plain MPI_Allreduce loop, the reference for opmeter's collective/mpi allreduce
 * (docs/benchmarks-pending/scale.md): fp32 sum of BYTES bytes out of place, SAMPLES samples of
 * CALLS calls each, a barrier before each sample, the slowest rank's time; prints the median
 * seconds per call.  mpirun -np 2 mpi_allreduce_loop BYTES [SAMPLES] [CALLS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  long bytes = argc > 1 ? atol(argv[1]) : 1048576;
  int samples = argc > 2 ? atoi(argv[2]) : 50, calls = argc > 3 ? atoi(argv[3]) : 10;
  int n = (int)(bytes / 4);
  float* in = malloc((size_t)n * 4);
  float* out = malloc((size_t)n * 4);
  double* t = malloc((size_t)samples * sizeof(double));
  for (int i = 0; i < n; ++i) in[i] = (float)((rank * 7 + i * 3) % 11 - 5);
  for (int i = 0; i < 5; ++i) MPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  for (int s = 0; s < samples; ++s) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int c = 0; c < calls; ++c) MPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double mine = (MPI_Wtime() - t0) / calls;
    MPI_Allreduce(&mine, &t[s], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  }
  qsort(t, (size_t)samples, sizeof(double), by_value);
  if (rank == 0) printf("MPI_Allreduce fp32 %ld bytes: median %.3f us per call over %d samples of %d calls\n", bytes,
                        t[samples / 2] * 1e6, samples, calls);
  free(in), free(out), free(t);
  MPI_Finalize();
  return 0;
}
