// Conversions between enum ibv_rate, multiples of 2.5 Gbit/s and Mbit/s.
#include <infiniband/verbs.h>

namespace {

struct Rate {
  ibv_rate rate;
  int mult;  // of 2.5 Gbit/s; -1 when the rate is not a multiple
  int mbps;
};

constexpr Rate kRates[] = {
    {IBV_RATE_2_5_GBPS, 1, 2500},      {IBV_RATE_5_GBPS, 2, 5000},
    {IBV_RATE_10_GBPS, 4, 10000},      {IBV_RATE_20_GBPS, 8, 20000},
    {IBV_RATE_30_GBPS, 12, 30000},     {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},     {IBV_RATE_80_GBPS, 32, 80000},
    {IBV_RATE_120_GBPS, 48, 120000},   {IBV_RATE_14_GBPS, -1, 14062},
    {IBV_RATE_56_GBPS, -1, 56250},     {IBV_RATE_112_GBPS, -1, 112500},
    {IBV_RATE_168_GBPS, -1, 168750},   {IBV_RATE_25_GBPS, -1, 25781},
    {IBV_RATE_100_GBPS, -1, 103125},   {IBV_RATE_200_GBPS, -1, 206250},
    {IBV_RATE_300_GBPS, -1, 309375},   {IBV_RATE_28_GBPS, -1, 28125},
    {IBV_RATE_50_GBPS, -1, 53125},     {IBV_RATE_400_GBPS, -1, 425000},
    {IBV_RATE_600_GBPS, -1, 637500},   {IBV_RATE_800_GBPS, -1, 850000},
    {IBV_RATE_1200_GBPS, -1, 1275000},
};

const Rate* find(ibv_rate rate) {
  for (const Rate& r : kRates) {
    if (r.rate == rate) return &r;
  }
  return nullptr;
}

}  // namespace

extern "C" {

int ibv_rate_to_mult(ibv_rate rate) {
  const Rate* r = find(rate);
  return r ? r->mult : -1;
}

ibv_rate mult_to_ibv_rate(int mult) {
  for (const Rate& r : kRates) {
    if (r.mult == mult) return r.rate;
  }
  return IBV_RATE_MAX;
}

int ibv_rate_to_mbps(ibv_rate rate) {
  const Rate* r = find(rate);
  return r ? r->mbps : -1;
}

ibv_rate mbps_to_ibv_rate(int mbps) {
  for (const Rate& r : kRates) {
    if (r.mbps == mbps) return r.rate;
  }
  return IBV_RATE_MAX;
}

}  // extern "C"
