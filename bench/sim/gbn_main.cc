// mroce-sim with the test-only go-back-N transport ("gbn") added to the built-in ones:
// measures the simulator itself while the real engines are absent or changing.
#include "cli.h"
#include "gbn_registration.h"
#include "transports.h"

int main(int argc, char** argv) {
  mroce::sim::TransportRegistry transports;
  mroce::sim::register_builtin_transports(transports);
  mroce::sim::testing::register_gbn(transports);
  return mroce::sim::run_cli(argc, argv, transports);
}
