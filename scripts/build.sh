#!/usr/bin/env bash
# Configures and builds one flavour of the tree.
#   scripts/build.sh            release build in build/
#   scripts/build.sh asan       clang, ASan+UBSan, libFuzzer targets, in build-asan/
#   scripts/build.sh tsan       clang, ThreadSanitizer, in build-tsan/ (test.sh runs its
#                               net, verbs and sim tests: the rest has no threads)
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
jobs=${JOBS:-$(nproc)}
case "$flavour" in
  release)
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build build -j "$jobs"
    ;;
  asan)
    cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
      -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
      -DMROCE_SANITIZE=ON -DMROCE_FUZZ=ON -DMROCE_BENCH=OFF >/dev/null
    cmake --build build-asan -j "$jobs"
    ;;
  tsan)
    cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
      -DMROCE_TSAN=ON -DMROCE_BENCH=OFF >/dev/null
    cmake --build build-tsan -j "$jobs"
    ;;
  *)
    echo "build.sh: unknown flavour '$flavour' (release, asan or tsan)" >&2
    exit 2
    ;;
esac
