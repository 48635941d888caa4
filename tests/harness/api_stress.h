// An API stress run in the spirit of msquic's spinquic: random sequences of stream
// set-up and tear-down, every kind of work request, timers and a network that loses,
// duplicates, reorders and CE-marks, through several MetaRoCE engines, with what can be
// seen from outside checked after every step and every completion accounted for at the
// end. One source drives both a libFuzzer target (input bytes make the choices) and a
// seeded test sweep.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>

namespace mroce::testing {

// Where the run's choices come from.
class Choices {
 public:
  virtual ~Choices() = default;
  // Whether to take another step; false ends the random phase.
  virtual bool next_step() = 0;
  // A value in [0, n), n >= 1.
  virtual std::uint32_t pick(std::uint32_t n) = 0;
};

// Choices read from fuzzer input, one or two bytes each; zeros once it is used up.
class ByteChoices final : public Choices {
 public:
  explicit ByteChoices(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  bool next_step() override { return pos_ < bytes_.size(); }
  std::uint32_t pick(std::uint32_t n) override;

 private:
  std::span<const std::uint8_t> bytes_;
  std::size_t pos_ = 0;
};

// Choices from a seeded generator, for a fixed number of steps.
class SeededChoices final : public Choices {
 public:
  SeededChoices(std::uint64_t seed, std::uint32_t steps) : rng_(seed), left_(steps) {}
  bool next_step() override { return left_ > 0 && left_-- > 0; }
  std::uint32_t pick(std::uint32_t n) override;

 private:
  std::mt19937_64 rng_;
  std::uint32_t left_;
};

// What a run did, so a sweep can show it reached every operation.
struct StressReport {
  std::uint64_t steps = 0;
  std::uint64_t posted = 0;         // send and receive work requests accepted
  std::uint64_t succeeded[7] = {};  // successful send completions, by WrOpcode
  std::uint64_t failed = 0;         // send and receive completions with an error
  std::uint64_t abandoned = 0;      // open when their stream was destroyed
  std::uint64_t recv_matched = 0;   // receive completions matched to their SEND/WRITE_IMM
  std::uint64_t delivered = 0;
  std::uint64_t dropped = 0;
  std::uint64_t duplicated = 0;
  std::uint64_t streams_destroyed = 0;
  std::string error;  // first invariant broken; empty when none
};

// Runs steps while `choices` asks for them (or an invariant breaks), then drains the
// engines to quiescence and checks that every work request is accounted for.
StressReport run_api_stress(Choices& choices);

}  // namespace mroce::testing
