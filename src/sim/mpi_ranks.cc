#include "sim/mpi_ranks.h"

#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <string>

namespace mroce::sim {

namespace {

void check(int rc, const char* call) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string(call) + " failed");
}

int count_of(std::size_t n) {
  if (n > static_cast<std::size_t>(INT_MAX)) {
    throw std::runtime_error("a message between ranks exceeds 2 GB");
  }
  return static_cast<int>(n);
}

class MpiRanks final : public Ranks {
 public:
  MpiRanks(int* argc, char*** argv) {
    int provided = 0;
    // Only the thread that runs the window's completion calls MPI.
    check(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    int r = 0, n = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    rank_ = static_cast<std::uint32_t>(r);
    size_ = static_cast<std::uint32_t>(n);
  }
  ~MpiRanks() override { MPI_Finalize(); }

  std::uint32_t rank() const override { return rank_; }
  std::uint32_t size() const override { return size_; }

  std::vector<Bytes> exchange(const std::vector<Bytes>& to) override {
    const int n = static_cast<int>(size_);
    send_counts_.assign(n, 0);
    recv_counts_.assign(n, 0);
    send_displs_.assign(n, 0);
    recv_displs_.assign(n, 0);
    std::size_t total = 0;
    for (int r = 0; r < n; ++r) {
      send_displs_[r] = count_of(total);
      if (r != static_cast<int>(rank_) && static_cast<std::size_t>(r) < to.size()) {
        send_counts_[r] = count_of(to[r].size());
      }
      total += static_cast<std::size_t>(send_counts_[r]);
    }
    send_.resize(total);
    for (int r = 0; r < n; ++r) {
      if (send_counts_[r]) {
        std::memcpy(send_.data() + send_displs_[r], to[r].data(), to[r].size());
      }
    }
    check(MPI_Alltoall(send_counts_.data(), 1, MPI_INT, recv_counts_.data(), 1, MPI_INT,
                       MPI_COMM_WORLD),
          "MPI_Alltoall");
    total = 0;
    for (int r = 0; r < n; ++r) {
      recv_displs_[r] = count_of(total);
      total += static_cast<std::size_t>(recv_counts_[r]);
    }
    recv_.resize(total);
    check(MPI_Alltoallv(send_.data(), send_counts_.data(), send_displs_.data(), MPI_BYTE,
                        recv_.data(), recv_counts_.data(), recv_displs_.data(), MPI_BYTE,
                        MPI_COMM_WORLD),
          "MPI_Alltoallv");
    std::vector<Bytes> from(size_);
    for (int r = 0; r < n; ++r) {
      from[r].assign(recv_.begin() + recv_displs_[r],
                     recv_.begin() + recv_displs_[r] + recv_counts_[r]);
    }
    return from;
  }

  std::vector<Bytes> all_gather(const Bytes& mine) override {
    const int n = static_cast<int>(size_);
    int count = count_of(mine.size());
    recv_counts_.assign(n, 0);
    recv_displs_.assign(n, 0);
    check(MPI_Allgather(&count, 1, MPI_INT, recv_counts_.data(), 1, MPI_INT, MPI_COMM_WORLD),
          "MPI_Allgather");
    std::size_t total = 0;
    bool same = true;
    for (int r = 0; r < n; ++r) {
      recv_displs_[r] = count_of(total);
      total += static_cast<std::size_t>(recv_counts_[r]);
      same &= recv_counts_[r] == count;
    }
    recv_.resize(total);
    if (same) {
      check(MPI_Allgather(mine.data(), count, MPI_BYTE, recv_.data(), count, MPI_BYTE,
                          MPI_COMM_WORLD),
            "MPI_Allgather");
    } else {
      check(MPI_Allgatherv(mine.data(), count, MPI_BYTE, recv_.data(), recv_counts_.data(),
                           recv_displs_.data(), MPI_BYTE, MPI_COMM_WORLD),
            "MPI_Allgatherv");
    }
    std::vector<Bytes> all(size_);
    for (int r = 0; r < n; ++r) {
      all[r].assign(recv_.begin() + recv_displs_[r],
                    recv_.begin() + recv_displs_[r] + recv_counts_[r]);
    }
    return all;
  }

 private:
  std::uint32_t rank_ = 0;
  std::uint32_t size_ = 1;
  std::vector<int> send_counts_, recv_counts_, send_displs_, recv_displs_;
  Bytes send_, recv_;
};

}  // namespace

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(v)) return true;
  }
  return false;
}

std::unique_ptr<Ranks> init_mpi_ranks(int* argc, char*** argv) {
  return std::make_unique<MpiRanks>(argc, argv);
}

}  // namespace mroce::sim
