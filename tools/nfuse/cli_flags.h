// Flag values shared by every subcommand, parsed without nfuse types: the commands on the public
// API (run, bench) and those on internals (inspect, partition) read them alike.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace nfuse::cli {

// "name=1x3x224x224" -> {name, dims}; several flags accumulate. Returns "" or the error.
std::string parse_shape_flags(const std::vector<std::string>& flags, std::map<std::string, std::vector<int64_t>>* out);
// "name=file.npy" -> {name, file}. Returns "" or the error.
std::string parse_input_flags(const std::vector<std::string>& flags, std::map<std::string, std::string>* out);
// "NODE_OR_OPTYPE=BACKEND" -> {node, backend}. Returns "" or the error.
std::string parse_pin_flags(const std::vector<std::string>& flags, std::map<std::string, std::string>* out);
// A value name made safe as a file name.
std::string file_safe(const std::string& name);
// Peak resident set size of this process in MiB.
double peak_rss_mb();

}  // namespace nfuse::cli
