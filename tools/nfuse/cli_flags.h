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
// An input whose symbolic (or unnamed) dims the CLI set to 1 because no --shape named it.
struct AssumedInput {
  std::string input;
  std::vector<int64_t> dims;         // the model's dims, < 0 where not static
  std::vector<std::string> symbols;  // per dim: its symbolic name, "" where unnamed or static
};
// "symbolic dims set to 1: 'samples' (input 'audio' dim 1); pass --shape audio=1xSAMPLES to
// choose them", or "" when nothing was assumed.
std::string assumed_dims_note(const std::vector<AssumedInput>& assumed);
// A failure's message with the note appended, when a dim was assumed: a planning error
// ("padded input size 1 is smaller than the kernel") then says where the 1 came from.
std::string with_assumed_dims(const std::string& message, const std::vector<AssumedInput>& assumed);
// A value name made safe as a file name.
std::string file_safe(const std::string& name);
// Peak resident set size of this process in MiB.
double peak_rss_mb();

}  // namespace nfuse::cli
