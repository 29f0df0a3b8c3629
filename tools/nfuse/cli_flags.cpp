#include "cli_flags.h"

#include <sys/resource.h>

#include <cctype>
#include <cstdlib>
#include <sstream>

namespace nfuse::cli {

std::string parse_shape_flags(const std::vector<std::string>& flags, std::map<std::string, std::vector<int64_t>>* out) {
  for (const std::string& f : flags) {
    const size_t eq = f.rfind('=');
    if (eq == std::string::npos || eq == 0) return "--shape '" + f + "' must look like NAME=1x3x224x224";
    std::vector<int64_t> dims;
    std::stringstream ss(f.substr(eq + 1));
    std::string part;
    while (std::getline(ss, part, 'x')) {
      char* end = nullptr;
      const long long v = std::strtoll(part.c_str(), &end, 10);
      if (part.empty() || *end != '\0' || v < 0) return "--shape '" + f + "': '" + part + "' is not a dimension";
      dims.push_back(v);
    }
    (*out)[f.substr(0, eq)] = dims;
  }
  return "";
}

std::string parse_input_flags(const std::vector<std::string>& flags, std::map<std::string, std::string>* out) {
  for (const std::string& f : flags) {
    const size_t eq = f.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == f.size())
      return "--input '" + f + "' must look like NAME=FILE.npy";
    (*out)[f.substr(0, eq)] = f.substr(eq + 1);
  }
  return "";
}

std::string parse_pin_flags(const std::vector<std::string>& flags, std::map<std::string, std::string>* out) {
  for (const std::string& pin : flags) {
    const size_t eq = pin.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == pin.size())
      return "--pin '" + pin + "' must look like NODE_OR_OPTYPE=BACKEND";
    (*out)[pin.substr(0, eq)] = pin.substr(eq + 1);
  }
  return "";
}

std::string file_safe(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) c = '_';
  if (s.empty() || s[0] == '.') s = "_" + s;
  return s;
}

double peak_rss_mb() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

std::string assumed_dims_note(const std::vector<AssumedInput>& assumed) {
  std::string dims, flags;
  for (const AssumedInput& in : assumed) {
    std::string flag = in.input + "=";
    for (size_t i = 0; i < in.dims.size(); ++i) {
      const std::string symbol = i < in.symbols.size() ? in.symbols[i] : "";
      if (in.dims[i] >= 0) {
        flag += (i ? "x" : "") + std::to_string(in.dims[i]);
        continue;
      }
      std::string upper;
      for (char c : symbol.empty() ? std::string("N") : symbol)
        upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      flag += (i ? "x" : "") + upper;
      dims += std::string(dims.empty() ? "" : ", ") + (symbol.empty() ? "an unnamed dim" : "'" + symbol + "'") +
              " (input '" + in.input + "' dim " + std::to_string(i) + ")";
    }
    flags += (flags.empty() ? "--shape " : " --shape ") + flag;
  }
  if (dims.empty()) return "";
  return "symbolic dims set to 1: " + dims + "; pass " + flags + " to choose them";
}

std::string with_assumed_dims(const std::string& message, const std::vector<AssumedInput>& assumed) {
  const std::string note = assumed_dims_note(assumed);
  return note.empty() ? message : message + " (" + note + ")";
}

}  // namespace nfuse::cli
