// The table of the RoCEv2 baseline's settings (MROCE_ROCE_SETTINGS and
// MROCE_DCQCN_SETTINGS in baseline/config.h), in the form of core/settings.h: the
// simulator's [transport.roce] keys read names and ranges from it.
#pragma once

#include <span>

#include "baseline/config.h"
#include "core/settings.h"

namespace mroce::baseline {

using RoceSetting = BasicSetting<RoceConfig>;

#define MROCE_ROCE_ROW(type, member, name, unit, def, min, max, meaning) \
  MROCE_SETTING_ROW_OF(RoceConfig, member, type, name, unit, def, min, max, meaning)
#define MROCE_DCQCN_ROW(type, member, name, unit, def, min, max, meaning) \
  MROCE_SETTING_ROW_OF(RoceConfig, dcqcn.member, type, name, unit, def, min, max, meaning)
inline constexpr RoceSetting kRoceSettings[] = {MROCE_ROCE_SETTINGS(MROCE_ROCE_ROW)
                                                    MROCE_DCQCN_SETTINGS(MROCE_DCQCN_ROW)};
#undef MROCE_ROCE_ROW
#undef MROCE_DCQCN_ROW

inline std::span<const RoceSetting> roce_settings() {
  return kRoceSettings;
}

}  // namespace mroce::baseline
