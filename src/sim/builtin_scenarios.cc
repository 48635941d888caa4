// Named scenarios, runnable as `mroce-sim run NAME`. Each is a complete TOML scenario;
// `mroce-sim show NAME` prints it as a starting point for a file of one's own.
#include "sim/scenario.h"

namespace mroce::sim {

// A table of scenario texts, not logic: its length says nothing of its complexity.
// NOLINTNEXTLINE(readability-function-size)
const std::vector<NamedScenario>& builtin_scenarios() {
  static const std::vector<NamedScenario> kScenarios = {
      {"smoke", "16 hosts on a leaf-spine, permutation of 1 MiB writes (seconds to run)",
       R"toml(name = "smoke"
description = "16 hosts, 2 leaves, 4 spines; every host writes 1 MiB to another"
[topology]
kind = "leaf_spine"
hosts = 16
hosts_per_leaf = 8
spines = 4
[[workload]]
kind = "permutation"
bytes = "1MiB"
)toml"},
      {"htsim-perm",
       "htsim's benchmark: 128 hosts, k=8 fat-tree, 100G, 1us hops, 1-BDP queues, "
       "permutation of 32 MB flows (~1M data packets)",
       R"toml(name = "htsim-perm"
description = "128 hosts, 3-tier k=8 fat-tree, 100 Gbit/s, 1 us per hop, queues of one BDP, permutation of 32 MB"
mtu = 4096
[topology]
kind = "fat_tree"
k = 8
link_rate = "100Gbps"
link_delay = "1us"
[queue]
bdp = 1.0
[output]
sample_interval = "20us"
[[workload]]
kind = "permutation"
bytes = "32MB"
)toml"},
      {"e1-allreduce", "E1: 64 hosts, ring all-reduce of 64 MiB per rank",
       R"toml(name = "e1-allreduce"
description = "64 hosts on a leaf-spine (8 leaves x 8 hosts, 8 spines), ring all-reduce of 64 MiB"
[topology]
kind = "leaf_spine"
hosts = 64
hosts_per_leaf = 8
spines = 8
[[workload]]
kind = "ring_allreduce"
bytes = "64MiB"
op = "send"
)toml"},
      {"e1-alltoall", "E1: 64 hosts, all-to-all of 256 KiB per pair",
       R"toml(name = "e1-alltoall"
description = "64 hosts on a leaf-spine (8 leaves x 8 hosts, 8 spines), all-to-all of 256 KiB per pair"
[topology]
kind = "leaf_spine"
hosts = 64
hosts_per_leaf = 8
spines = 8
[[workload]]
kind = "all_to_all"
bytes = "256KiB"
)toml"},
      {"e2-loss", "E2: 64-host permutation of 8 MiB with 1% random loss on fabric links",
       R"toml(name = "e2-loss"
description = "64 hosts, permutation of 8 MiB writes, 1% random loss on switch-to-switch links (--set loss.rate=...)"
stop = "1s"
[topology]
kind = "leaf_spine"
hosts = 64
hosts_per_leaf = 8
spines = 8
[loss]
rate = 0.01
scope = "fabric"
[[workload]]
kind = "permutation"
bytes = "8MiB"
)toml"},
      {"e3-multiplane",
       "E3: 4-plane fabric, 64 hosts, all-to-all (4,032 flows; --set topology.planes=1..8)",
       R"toml(name = "e3-multiplane"
description = "64 hosts with 4 NICs each on 4 leaf-spine planes, all-to-all of 1 MiB per pair"
[topology]
kind = "leaf_spine"
hosts = 64
hosts_per_leaf = 8
spines = 8
planes = 4
[queue]
nic_packets = 8  # the host pulls packets for all its NICs while each holds fewer than this
[[workload]]
kind = "all_to_all"
bytes = "1MiB"
)toml"},
      {"e4-plane-failure",
       "E4: 4 planes, plane 1 black-holed from 500us to 2ms during a permutation",
       R"toml(name = "e4-plane-failure"
description = "64 hosts, 4 planes, permutation of 64 MiB; plane 1 fails silently at 500 us and heals at 2 ms"
[topology]
kind = "leaf_spine"
hosts = 64
hosts_per_leaf = 8
spines = 8
planes = 4
[queue]
nic_packets = 8  # the host pulls packets for all its NICs while each holds fewer than this
[[workload]]
kind = "permutation"
bytes = "64MiB"
[[failure]]
target = "plane"
plane = 1
mode = "silent"
at = "500us"
recover = "2ms"
)toml"},
      {"e5-incast",
       "E5: 1,000 storage hosts answer one READ each to one receiver (k=16 fat-tree; "
       "--set workload.0.senders=N)",
       R"toml(name = "e5-incast"
description = "1,024-host k=16 fat-tree; host 0 reads 256 KiB from each of 1,000 hosts at once"
[topology]
kind = "fat_tree"
k = 16
[output]
sample_interval = "2us"
[[workload]]
kind = "incast"
receiver = 0
senders = 1000
bytes = "256KiB"
op = "read"
)toml"},
      {"scale-across",
       "two k=4 fat-tree data centers joined by 4 long-haul links (400G, 1 ms one way), "
       "ring all-reduce of 64 MiB over both (--set topology.long_haul_delay=10ms)",
       R"toml(name = "scale-across"
description = "2 data centers of 16 hosts (k=4 fat-trees), cores joined pairwise by 400 Gbit/s long-haul links of 1 ms one way with queues of one long-haul round trip; ring all-reduce of 64 MiB over all 32 hosts"
[topology]
kind = "fat_tree"
k = 4
data_centers = 2
long_haul_rate = "400Gbps"
long_haul_delay = "1ms"
[output]
sample_interval = "100us"
[transport.roce]
ack_timeout = "32ms"  # the 1 ms default is shorter than the long-haul round trip
[transport.mroce]
bdp_start = 1  # slow start opens at once to the long-haul round trip at the line rate
max_paths = 256  # and opens paths past 16 where the window needs them (SPEC 5.1)
[[workload]]
kind = "ring_allreduce"
bytes = "64MiB"
op = "send"
)toml"},
      {"scale-across-a2a",
       "scale-across's two data centers, all-to-all of 4 MiB per pair (992 flows, "
       "half of them across)",
       R"toml(name = "scale-across-a2a"
description = "2 data centers of 16 hosts (k=4 fat-trees), cores joined pairwise by 400 Gbit/s long-haul links of 1 ms one way with queues of one long-haul round trip; all-to-all of 4 MiB per pair"
[topology]
kind = "fat_tree"
k = 4
data_centers = 2
long_haul_rate = "400Gbps"
long_haul_delay = "1ms"
[output]
sample_interval = "100us"
[transport.roce]
ack_timeout = "32ms"  # the 1 ms default is shorter than the long-haul round trip
[transport.mroce]
bdp_start = 1  # slow start opens at once to the long-haul round trip at the line rate
max_paths = 256  # and opens paths past 16 where the window needs them (SPEC 5.1)
[[workload]]
kind = "all_to_all"
bytes = "4MiB"
)toml"},
      {"kv-cache",
       "KV-cache reads: 16 readers on a k=8 fat-tree each READ from 32 of the 112 storage "
       "hosts at once, 4 READs of 16 KiB to 1 MiB per pair",
       R"toml(name = "kv-cache"
description = "128-host k=8 fat-tree; 16 readers spread over the pods each READ at once from 32 storage hosts drawn at random, 4 READs per pair back to back, sizes drawn from 16 KiB, 128 KiB and 1 MiB"
[topology]
kind = "fat_tree"
k = 8
[output]
sample_interval = "5us"
[[workload]]
kind = "kv_cache"
readers = 16
fanout = 32
messages = 4
sizes = "16KiB, 128KiB, 1MiB"
)toml"},
  };
  return kScenarios;
}

}  // namespace mroce::sim
