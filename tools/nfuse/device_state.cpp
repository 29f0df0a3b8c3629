#include "device_state.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>

namespace nfuse::cli {
namespace {

bool read_number(const std::filesystem::path& file, double* out) {
  std::ifstream f(file);
  double v = 0.0;
  if (!(f >> v)) return false;
  *out = v;
  return true;
}

std::string read_word(const std::filesystem::path& file) {
  std::ifstream f(file);
  std::string w;
  f >> w;
  return w;
}

}  // namespace

nlohmann::json read_device_state() {
  namespace fs = std::filesystem;
  nlohmann::json thermal = nlohmann::json::object(), freq = nlohmann::json::object();
  std::error_code ec;
  for (const auto& zone : fs::directory_iterator("/sys/class/thermal", ec)) {
    const std::string name = zone.path().filename().string();
    double millidegrees = 0.0;
    if (name.rfind("thermal_zone", 0) != 0 || !read_number(zone.path() / "temp", &millidegrees)) continue;
    thermal[read_word(zone.path() / "type") + "/" + name] = millidegrees / 1000.0;
  }
  for (const auto& cpu : fs::directory_iterator("/sys/devices/system/cpu", ec)) {
    const std::string name = cpu.path().filename().string();
    double khz = 0.0;
    if (name.rfind("cpu", 0) != 0 || name.size() < 4 || !std::isdigit(static_cast<unsigned char>(name[3]))) continue;
    if (read_number(cpu.path() / "cpufreq" / "scaling_cur_freq", &khz)) freq[name] = khz / 1000.0;
  }
  return {{"thermal_c", thermal.empty() ? nlohmann::json("unavailable") : thermal},
          {"cpufreq_mhz", freq.empty() ? nlohmann::json("unavailable") : freq}};
}

}  // namespace nfuse::cli
