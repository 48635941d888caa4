// mroce-sim with the test-only go-back-N transport ("gbn") added to the built-in ones:
// measures the simulator itself while the real engines are absent or changing.
#include "cli.h"
#include "gbn_registration.h"
#include "transports.h"

#ifdef MROCE_SIM_HAVE_MPI
#include "sim/mpi_ranks.h"
#endif

int main(int argc, char** argv) {
  mroce::sim::TransportRegistry transports;
  mroce::sim::register_builtin_transports(transports);
  mroce::sim::testing::register_gbn(transports);
#ifdef MROCE_SIM_HAVE_MPI
  if (mroce::sim::launched_by_mpi()) {
    auto ranks = mroce::sim::init_mpi_ranks(&argc, &argv);
    return mroce::sim::run_cli(argc, argv, transports, ranks.get());
  }
#endif
  return mroce::sim::run_cli(argc, argv, transports);
}
