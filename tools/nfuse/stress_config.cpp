#include "stress_config.h"

#include <nlohmann/json.hpp>

#include <set>

#include "cli_flags.h"

namespace nfuse::cli {

namespace {

const std::set<std::string> kPriorities = {"low", "normal", "high", "realtime"};
const std::set<std::string> kModes = {"burst", "sustained_high_performance", "balanced", "power_saver"};

template <typename T>
std::string read(const nlohmann::json& j, const char* key, const std::string& where, T* out) {
  if (!j.contains(key)) return "";
  try {
    *out = j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    return where + "." + key + " has the wrong type";
  }
  return "";
}

}  // namespace

std::string parse_stress_config(const std::string& text, StressConfig* out) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return std::string("not JSON: ") + e.what();
  }
  if (!j.is_object()) return "the config must be a JSON object";
  std::string e;
  if (!(e = read(j, "duration_s", "config", &out->duration_s)).empty()) return e;
  if (!(e = read(j, "solo_s", "config", &out->solo_s)).empty()) return e;
  if (!(e = read(j, "threads", "config", &out->threads)).empty()) return e;
  if (!(e = read(j, "mode", "config", &out->mode)).empty()) return e;
  if (!(e = read(j, "baseline", "config", &out->baseline)).empty()) return e;
  if (!j.contains("contexts") || !j["contexts"].is_array()) return "config.contexts must be a list";
  for (size_t i = 0; i < j["contexts"].size(); ++i) {
    const nlohmann::json& c = j["contexts"][i];
    const std::string where = "contexts[" + std::to_string(i) + "]";
    if (!c.is_object()) return where + " must be an object";
    StressContext ctx;
    if (!(e = read(c, "name", where, &ctx.name)).empty()) return e;
    if (!(e = read(c, "model", where, &ctx.model)).empty()) return e;
    if (!(e = read(c, "priority", where, &ctx.priority)).empty()) return e;
    if (!(e = read(c, "hz", where, &ctx.hz)).empty()) return e;
    if (!(e = read(c, "deadline_ms", where, &ctx.deadline_ms)).empty()) return e;
    if (!(e = read(c, "waits_on", where, &ctx.waits_on)).empty()) return e;
    if (!(e = read(c, "backend", where, &ctx.backend)).empty()) return e;
    if (!(e = read(c, "shape", where, &ctx.shapes)).empty()) return e;
    out->contexts.push_back(std::move(ctx));
  }
  if (j.contains("render") && !j["render"].is_null()) {
    StressRender r;
    if (!(e = read(j["render"], "fps", "render", &r.fps)).empty()) return e;
    if (!(e = read(j["render"], "cpu_ms", "render", &r.cpu_ms)).empty()) return e;
    if (!(e = read(j["render"], "waits_on", "render", &r.waits_on)).empty()) return e;
    out->render = r;
  }
  return "";
}

std::string parse_stress_context_flag(const std::string& flag, StressContext* out) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= flag.size(); ++i)
    if (i == flag.size() || flag[i] == ':') {
      parts.push_back(flag.substr(start, i - start));
      start = i + 1;
    }
  if (parts.size() < 4 || parts.size() > 5)
    return "--context '" + flag + "': expected NAME:MODEL:PRIORITY:HZ[:INPUT=DIMS]";
  out->name = parts[0];
  out->model = parts[1];
  out->priority = parts[2];
  try {
    out->hz = std::stod(parts[3]);
  } catch (const std::exception&) {
    return "--context '" + flag + "': HZ '" + parts[3] + "' is not a number";
  }
  if (parts.size() == 5) {
    std::map<std::string, std::vector<int64_t>> shapes;
    const std::string error = parse_shape_flags({parts[4]}, &shapes);
    if (!error.empty()) return "--context '" + flag + "': " + error;
    out->shapes = shapes;
  }
  return "";
}

std::string check_stress_config(const StressConfig& c) {
  if (c.contexts.empty()) return "no contexts: give a config file or --context";
  if (!(c.duration_s > 0)) return "duration_s must be > 0";
  if (c.solo_s < 0) return "solo_s must be >= 0";
  if (c.threads < 1) return "threads must be >= 1";
  if (!kModes.count(c.mode))
    return "unknown mode '" + c.mode + "' (burst, sustained_high_performance, balanced, power_saver)";
  std::set<std::string> names;
  for (const StressContext& ctx : c.contexts) {
    if (ctx.name.empty()) return "a context has no name";
    if (!names.insert(ctx.name).second) return "two contexts are called '" + ctx.name + "'";
    if (ctx.model.empty()) return "context '" + ctx.name + "' has no model";
    if (!kPriorities.count(ctx.priority))
      return "context '" + ctx.name + "': unknown priority '" + ctx.priority + "' (low, normal, high, realtime)";
    if (!(ctx.hz >= 0)) return "context '" + ctx.name + "': hz must be >= 0 (0: flat out)";
    if (!(ctx.deadline_ms >= 0)) return "context '" + ctx.name + "': deadline_ms must be >= 0";
  }
  for (const StressContext& ctx : c.contexts)
    if (!ctx.waits_on.empty() && (!names.count(ctx.waits_on) || ctx.waits_on == ctx.name))
      return "context '" + ctx.name + "' waits on '" + ctx.waits_on + "', which is not another context";
  if (c.render) {
    if (!(c.render->fps > 0)) return "render.fps must be > 0";
    if (!(c.render->cpu_ms >= 0)) return "render.cpu_ms must be >= 0";
    if (!c.render->waits_on.empty() && !names.count(c.render->waits_on))
      return "render waits on '" + c.render->waits_on + "', which is not a context";
  }
  return "";
}

}  // namespace nfuse::cli
