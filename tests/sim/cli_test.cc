#include "cli.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim_test_util.h"

namespace mroce::sim::testing {
namespace {

int cli(std::vector<const char*> args) {
  args.insert(args.begin(), "mroce-sim");
  return run_cli(static_cast<int>(args.size()), args.data(), test_transports());
}

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Cli, BadUsageAndBadInputExitWithTwo) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(cli({}), 2);
  EXPECT_EQ(cli({"frobnicate"}), 2);
  EXPECT_EQ(cli({"run"}), 2);
  EXPECT_EQ(cli({"run", "no-such-scenario"}), 2);
  EXPECT_EQ(cli({"run", "smoke", "--transport", "gbn", "--set", "topology.k=odd"}), 2);
  EXPECT_EQ(cli({"run", "smoke", "--transport", "warp-drive"}), 2);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("mroce-sim: error: 'no-such-scenario' is neither a named scenario"),
            std::string::npos);
  EXPECT_NE(err.find("transport 'warp-drive' is not built into this binary (available: gbn)"),
            std::string::npos);
}

TEST(Cli, ListShowAndTransports) {
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(cli({"list"}), 0);
  EXPECT_EQ(cli({"show", "smoke"}), 0);
  EXPECT_EQ(cli({"transports"}), 0);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("htsim-perm"), std::string::npos);
  EXPECT_NE(out.find("kind = \"leaf_spine\""), std::string::npos);
  EXPECT_NE(out.find("gbn"), std::string::npos);
}

TEST(Cli, RunWritesJsonCsvAndPlots) {
  const auto dir = std::filesystem::temp_directory_path() / "mroce_sim_cli_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string json = (dir / "out.json").string();
  const std::string csv = (dir / "csv").string();
  const std::string plot = (dir / "plot").string();
  ::testing::internal::CaptureStdout();
  const int rc =
      cli({"run", "smoke", "--transport", "gbn", "--set", "workload.0.bytes=256KiB", "--json",
           json.c_str(), "--csv", csv.c_str(), "--plot", plot.c_str(), "--no-progress"});
  const std::string out = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("gbn: complete"), std::string::npos);
  EXPECT_NE(read(json).find("\"transport\": \"gbn\""), std::string::npos);
  for (const char* f :
       {"flows.csv", "samples.csv", "queues.csv", "paths.csv", "drops.csv", "summary.csv"}) {
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(csv) / f)) << f;
  }
  const std::string flows = read(std::filesystem::path(csv) / "flows.csv");
  EXPECT_EQ(std::count(flows.begin(), flows.end(), '\n'), 17);  // a header and 16 flows
  if (std::system("gnuplot --version >/dev/null 2>&1") == 0) {
    for (const char* f : {"throughput.png", "fct_cdf.png", "queues_gbn.png", "paths_gbn.png"}) {
      EXPECT_GT(std::filesystem::file_size(std::filesystem::path(plot) / f), 1000u) << f;
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mroce::sim::testing
