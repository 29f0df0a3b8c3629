// Shared checks of context binaries (tests/models/context_zoo_test.cpp,
// tests/unit/context_kernel_packs_test.cpp).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/pack_store.h"
#include "compile/context/context_reader.h"
#include "runtime/context_model.h"
#include "runtime/session.h"

namespace nfuse::testing {

// A session of `binary` as sessions of a binary read it (default options plus its stored plans).
inline Result<std::unique_ptr<runtime::Session>> binary_session(const runtime::ContextModel& binary) {
  runtime::SessionOptions o;
  NFUSE_ASSIGN_OR_RETURN(auto graph, binary.graph(&o));
  return runtime::Session::create(std::move(graph), o);
}

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
  auto session = binary_session(**binary);
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

// A graph to compile, with its feeds.
struct Case {
  std::string name;
  std::unique_ptr<ir::Graph> graph;
  runtime::NamedTensors feeds;
};

// Compiles `c` for `backend` as `nfuse compile` records it, loads the binary back, and requires
// of the loaded session: nothing packed at load (this CPU compiled it), packed buffers of every
// key prefix in `families`, the compiling session's arena layout, its first inference bit for
// bit, and the same with every canonical weight a packed twin replaces inverted. `sources`:
// whether some canonical weight is left to be checked when read (expect_packed_twins_alone_read).
inline void expect_packed_round_trip(Case c, const std::string& backend, const std::vector<std::string>& families,
                                     bool sources = true) {
  SCOPED_TRACE(c.name + " on " + backend);
  ASSERT_NE(c.graph, nullptr);
  runtime::SessionOptions so;
  so.backend = backend;
  so.packs = std::make_shared<backends::PackStore>(true);  // as `nfuse compile` records them
  auto compiled = runtime::Session::create(std::move(c.graph), so);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  auto expected = (*compiled)->run(c.feeds);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  const ArenaLayout layout = arena_layout(**compiled, c.feeds);
  ASSERT_FALSE(layout.offsets.empty());
  const std::filesystem::path nfc =
      std::filesystem::temp_directory_path() /
      ("nfuse_kernel_packs_" + c.name + "_" + backend + "_" + std::to_string(::getpid()) + ".nfc");
  ASSERT_TRUE(runtime::save_context(**compiled, c.name + ".onnx", std::string(64, '0'), nfc.string()).ok());
  compiled->reset();

  auto binary = runtime::ContextModel::open_file(nfc.string(), {});
  ASSERT_TRUE(binary.ok()) << binary.status().to_string();
  std::string keys;
  for (const context::ContextInfo::Packed& p : (*binary)->info().packs) keys += "\n  " + p.key;
  for (const std::string& family : families) {
    bool found = false;
    for (const context::ContextInfo::Packed& p : (*binary)->info().packs) found = found || p.key.rfind(family, 0) == 0;
    EXPECT_TRUE(found) << "no packed buffer of family " << family << "; the binary holds:" << keys;
  }
  auto loaded = binary_session(**binary);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  auto got = (*loaded)->run(c.feeds);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ((*binary)->packs().packed(), 0u) << "something packed at load; the binary holds:" << keys;
  EXPECT_GT((*binary)->packs().hits(), 0u);
  expect_stored_layout_used(**loaded, c.feeds, layout);
  ASSERT_EQ(got->size(), expected->size());
  for (size_t i = 0; i < got->size(); ++i) {
    ASSERT_EQ((*got)[i].dims(), (*expected)[i].dims());
    EXPECT_EQ(std::memcmp((*got)[i].raw(), (*expected)[i].raw(), (*got)[i].bytes()), 0) << "output " << i;
  }
  expect_packed_twins_alone_read(nfc, c.feeds, *expected, sources);
  std::filesystem::remove(nfc);
}

}  // namespace nfuse::testing
