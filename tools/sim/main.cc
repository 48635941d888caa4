#include "cli.h"
#include "transports.h"

#ifdef MROCE_SIM_HAVE_MPI
#include "sim/mpi_ranks.h"
#endif

int main(int argc, char** argv) {
  mroce::sim::TransportRegistry transports;
  mroce::sim::register_builtin_transports(transports);
#ifdef MROCE_SIM_HAVE_MPI
  // Started by mpirun: the runs are split over its ranks.
  if (mroce::sim::launched_by_mpi()) {
    auto ranks = mroce::sim::init_mpi_ranks(&argc, &argv);
    return mroce::sim::run_cli(argc, argv, transports, ranks.get());
  }
#endif
  return mroce::sim::run_cli(argc, argv, transports);
}
