// Shared checks of context binaries (tests/models/context_zoo_test.cpp,
// tests/unit/context_kernel_packs_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "compile/context/context_reader.h"
#include "runtime/context_model.h"
#include "runtime/session.h"

namespace nfuse::testing {

// The arena layout of a session's plan for `inputs` (empty offsets when it has none).
struct ArenaLayout {
  std::vector<size_t> offsets;
  size_t arena_bytes = 0, tensor_arena_bytes = 0;
  bool from_binary = false;
};
inline ArenaLayout arena_layout(const runtime::Session& session, const runtime::NamedTensors& inputs) {
  std::map<std::string, std::vector<int64_t>> signature;
  for (const auto& [name, t] : inputs) signature[name] = t.dims();
  const compile::Plan* plan = session.cached_plan(signature);
  if (!plan) return {};
  return {plan->memory.offsets, plan->memory.arena_bytes, plan->tensor_arena_bytes, plan->layout_from_binary};
}

// A session of a binary took the binary's layout (arena offsets, strip heights) for `inputs`:
// the compiling session's, `compiled`.
inline void expect_stored_layout_used(const runtime::Session& loaded, const runtime::NamedTensors& inputs,
                                      const ArenaLayout& compiled) {
  const ArenaLayout got = arena_layout(loaded, inputs);
  EXPECT_TRUE(got.from_binary) << "the binary's arena layout was planned again";
  EXPECT_EQ(got.offsets, compiled.offsets);
  EXPECT_EQ(got.arena_bytes, compiled.arena_bytes);
  EXPECT_EQ(got.tensor_arena_bytes, compiled.tensor_arena_bytes);
}

// The canonical weights the loader leaves unchecked (their packed twins are what sessions read)
// are not read at all: with every byte of them inverted, a session of the binary at `nfc` loads,
// runs on `inputs` and answers bit for bit `expected`, the compiling session's outputs.
// `sources_expected`: a binary with packed weights must leave some canonical weight unchecked
// (false where every packing op also reads its weight, which is then checked at load).
inline void expect_packed_twins_alone_read(const std::filesystem::path& nfc, const runtime::NamedTensors& inputs,
                                           const std::vector<ir::Tensor>& expected, bool sources_expected = true) {
  std::ifstream in(nfc, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto info = context::read_header(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), bytes.size());
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  const std::vector<uint32_t> sources = context::pack_sources(*info);
  if (info->packs.empty() || (!sources_expected && sources.empty())) return;  // nothing left unchecked
  ASSERT_FALSE(sources.empty()) << "no packed weight names its canonical source";
  for (uint32_t i : sources)
    for (uint64_t at = info->sections[i].offset; at < info->sections[i].offset + info->sections[i].size; ++at)
      bytes[static_cast<size_t>(at)] = static_cast<char>(~bytes[static_cast<size_t>(at)]);
  const std::filesystem::path garbled = nfc.string() + ".garbled";
  {
    std::ofstream out(garbled, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  auto binary = runtime::ContextModel::open_file(garbled.string(), {});
  ASSERT_TRUE(binary.ok()) << binary.status().to_string();
  runtime::SessionOptions so;
  auto graph = (*binary)->graph(&so);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto session = runtime::Session::create(std::move(*graph), so);
  ASSERT_TRUE(session.ok()) << session.status().to_string();
  auto got = (*session)->run(inputs);
  ASSERT_TRUE(got.ok()) << sources.size() << " canonical weights inverted: " << got.status().to_string();
  ASSERT_EQ(got->size(), expected.size());
  for (size_t i = 0; i < got->size(); ++i) {
    ASSERT_EQ((*got)[i].bytes(), expected[i].bytes());
    EXPECT_EQ(std::memcmp((*got)[i].raw(), expected[i].raw(), expected[i].bytes()), 0)
        << "output " << i << " changed with " << sources.size() << " canonical weights inverted";
  }
  std::filesystem::remove(garbled);
}

}  // namespace nfuse::testing
