// What a pass changed: one human-readable line per rewrite ("folded BatchNormalization 'bn1'
// into Conv 'conv1'"). The pass manager prefixes each line with the pass name.
#pragma once

#include <string>
#include <vector>

namespace nfuse::passes {

class PassLog {
 public:
  void add(std::string line) { lines_.push_back(std::move(line)); }
  const std::vector<std::string>& lines() const { return lines_; }
  size_t size() const { return lines_.size(); }
  bool empty() const { return lines_.empty(); }

 private:
  std::vector<std::string> lines_;
};

}  // namespace nfuse::passes
