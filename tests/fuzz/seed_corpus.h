// Adds this target's seed corpus in the tree (tests/fuzz/corpus/<target>/) to libFuzzer's
// inputs, from LLVMFuzzerInitialize: a directory after the first is read, never written.
#pragma once

#include <string>
#include <vector>

namespace mroce::fuzz {

// MROCE_SEED_CORPUS: the directory, set by CMakeLists.txt.
inline void add_seed_corpus(int* argc, char*** argv) {
  static std::string dir = MROCE_SEED_CORPUS;
  static std::vector<char*> args;
  args.assign(*argv, *argv + *argc);
  // Flags start with '-'; a seed directory is useful only after the writable one.
  bool has_corpus = false;
  for (int i = 1; i < *argc; ++i) has_corpus |= (*argv)[i][0] != '-';
  if (!has_corpus) return;
  args.push_back(dir.data());
  args.push_back(nullptr);
  *argc = static_cast<int>(args.size()) - 1;
  *argv = args.data();
}

}  // namespace mroce::fuzz
