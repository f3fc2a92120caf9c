// The CPU backend of a variants build (cmake/llama-settings.cmake): one module per instruction set
// beside the addon, of which a process loads one, before its first model, for good.
#pragma once

#include <string>
#include <vector>

namespace arbitra {

struct CpuVariant {
  std::string name;  // ggml's tag: "haswell", "zen4"
  std::string file;
  int score;  // ggml's own: 0 where this processor cannot run it, higher the more it uses
};

// The name a build without variants reports: its one CPU backend is linked into the addon.
inline constexpr const char* kBuiltInCpu = "built-in";

// Every variant beside the addon, best for this processor first; empty where the backend is built in.
std::vector<CpuVariant> cpu_variants();

// Loads the variant `pin` names ("" or "auto": the best this processor runs) unless one is loaded,
// and returns the loaded one's name. Throws std::runtime_error for a pin that is not there, that this
// processor cannot run, or that is not the one this process already loaded.
std::string use_cpu_variant(const std::string& pin);

}  // namespace arbitra
