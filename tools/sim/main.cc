#include "cli.h"
#include "transports.h"

int main(int argc, char** argv) {
  mroce::sim::TransportRegistry transports;
  mroce::sim::register_builtin_transports(transports);
  return mroce::sim::run_cli(argc, argv, transports);
}
