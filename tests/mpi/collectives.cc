// MPI_Allreduce and MPI_Alltoall of several sizes, every element checked on every rank.
//   mpi_collectives                 the checks; one line per collective and size
//   mpi_collectives --bench BYTES N N all-reduces of BYTES (doubles), after a warm-up;
//                                   rank 0 prints the median time and the bus bandwidth
// Exits 1 after one line on the first wrong element, 2 on a bad argument.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int rank = 0;
int ranks = 1;

[[noreturn]] void die(int code, const char* what) {
  std::fprintf(stderr, "mpi_collectives: rank %d: %s\n", rank, what);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

// Element i of rank r's contribution: exact in a double, distinct per rank and index.
double value(int r, std::size_t i) {
  return static_cast<double>((r + 1) * 1000 + static_cast<int>(i % 997));
}

bool check_allreduce(std::size_t count) {
  std::vector<double> in(count), out(count, -1.0);
  for (std::size_t i = 0; i < count; ++i) in[i] = value(rank, i);
  MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_DOUBLE, MPI_SUM,
                MPI_COMM_WORLD);
  for (std::size_t i = 0; i < count; ++i) {
    double want = 0;
    for (int r = 0; r < ranks; ++r) want += value(r, i);
    if (out[i] != want) {
      std::fprintf(stderr,
                   "mpi_collectives: rank %d: allreduce of %zu: element %zu is %g, not %g\n", rank,
                   count, i, out[i], want);
      return false;
    }
  }
  return true;
}

// Block b of rank r's send buffer goes to rank b; element j of it names r, b and j.
std::int32_t tag(int from, int to, std::size_t j) {
  return static_cast<std::int32_t>(from * 1000003 + to * 7919 + static_cast<int>(j % 65521));
}

bool check_alltoall(std::size_t per_rank) {
  std::vector<std::int32_t> in(per_rank * ranks), out(per_rank * ranks, -1);
  for (int to = 0; to < ranks; ++to) {
    for (std::size_t j = 0; j < per_rank; ++j) in[to * per_rank + j] = tag(rank, to, j);
  }
  MPI_Alltoall(in.data(), static_cast<int>(per_rank), MPI_INT32_T, out.data(),
               static_cast<int>(per_rank), MPI_INT32_T, MPI_COMM_WORLD);
  for (int from = 0; from < ranks; ++from) {
    for (std::size_t j = 0; j < per_rank; ++j) {
      if (out[from * per_rank + j] != tag(from, rank, j)) {
        std::fprintf(stderr,
                     "mpi_collectives: rank %d: alltoall of %zu: element %zu from rank %d is %d, "
                     "not %d\n",
                     rank, per_rank, j, from, out[from * per_rank + j], tag(from, rank, j));
        return false;
      }
    }
  }
  return true;
}

bool parse_size(const char* s, long long* out) {
  char* end = nullptr;
  const long long v = std::strtoll(s, &end, 10);
  if (!*s || *end || v <= 0) return false;
  *out = v;
  return true;
}

int bench(long long bytes, long long iters) {
  const std::size_t count = static_cast<std::size_t>(bytes) / sizeof(double);
  if (count == 0) die(2, "--bench needs at least 8 bytes");
  std::vector<double> in(count, 1.0), out(count);
  MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_DOUBLE, MPI_SUM,
                MPI_COMM_WORLD);  // warm-up: connections, registrations
  std::vector<double> times;
  for (long long k = 0; k < iters; ++k) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_DOUBLE, MPI_SUM,
                  MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0, slowest = 0;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    times.push_back(slowest);
  }
  if (out[0] != ranks || out[count - 1] != ranks) die(1, "bench: wrong all-reduce result");
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  // Bus bandwidth as NCCL tests define it: 2 (n-1)/n of the buffer crosses each link.
  const double bus =
      static_cast<double>(count * sizeof(double)) * 2.0 * (ranks - 1) / ranks / median / 1e9 * 8;
  if (rank == 0) {
    std::printf("allreduce %lld bytes ranks %d iterations %lld median_s %.6f busbw_gbit %.3f\n",
                static_cast<long long>(count * sizeof(double)), ranks, iters, median, bus);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  int rc = 0;
  if (argc == 4 && std::string(argv[1]) == "--bench") {
    long long bytes = 0, iters = 0;
    if (!parse_size(argv[2], &bytes) || !parse_size(argv[3], &iters)) {
      die(2, "usage: mpi_collectives [--bench BYTES ITERATIONS]");
    }
    rc = bench(bytes, iters);
  } else if (argc != 1) {
    die(2, "usage: mpi_collectives [--bench BYTES ITERATIONS]");
  } else {
    // Sizes from one element to 1 MiB (and 4 MiB for all-reduce), odd ones included.
    for (std::size_t count : {std::size_t{1}, std::size_t{1000}, std::size_t{65537},
                              std::size_t{131072}, std::size_t{524288}}) {
      if (!check_allreduce(count)) die(1, "allreduce check failed");
      if (rank == 0) std::printf("ok allreduce %zu doubles on %d ranks\n", count, ranks);
    }
    for (std::size_t per_rank :
         {std::size_t{1}, std::size_t{1000}, std::size_t{16385}, std::size_t{262144}}) {
      if (!check_alltoall(per_rank)) die(1, "alltoall check failed");
      if (rank == 0) std::printf("ok alltoall %zu ints per rank on %d ranks\n", per_rank, ranks);
    }
  }
  MPI_Finalize();
  return rc;
}
