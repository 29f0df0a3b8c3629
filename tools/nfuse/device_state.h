// What the kernel says about the device's temperature and clocks, from /sys: every thermal zone's
// temperature (C) and every CPU's current frequency (MHz). Where /sys has none (VMs, containers)
// the field is the string "unavailable": never a made-up number.
#pragma once

#include <nlohmann/json.hpp>

namespace nfuse::cli {

// {"thermal_c": {"ZONE_TYPE/thermal_zoneN": 41.5, ...} | "unavailable",
//  "cpufreq_mhz": {"cpu0": 2400.0, ...} | "unavailable"}
nlohmann::json read_device_state();

}  // namespace nfuse::cli
