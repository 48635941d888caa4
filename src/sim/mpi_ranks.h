// Ranks over MPI (built only when CMake finds MPI: library mroce_sim_mpi).
#pragma once

#include <memory>

#include "sim/ranks.h"

namespace mroce::sim {

// True when this process was started by an MPI launcher (mpirun, mpiexec, srun).
bool launched_by_mpi();

// Initializes MPI on MPI_COMM_WORLD; the returned object finalizes it when destroyed.
std::unique_ptr<Ranks> init_mpi_ranks(int* argc, char*** argv);

}  // namespace mroce::sim
