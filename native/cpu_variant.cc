#include "cpu_variant.h"

#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>

#include "ggml-backend.h"

namespace arbitra {
namespace {

std::mutex loaded_mutex;
std::string loaded;  // the variant this process loaded; empty until then

#ifdef GGML_BACKEND_DL
constexpr const char* kPrefix = "libggml-cpu-";
constexpr const char* kSuffix = ".so";

// The folder of the file this code was loaded from, the addon or a test program: the modules are
// built beside both (cmake/llama-settings.cmake). A program may be named without its folder.
std::string own_folder() {
  Dl_info info{};
  std::string file = dladdr(reinterpret_cast<void*>(&own_folder), &info) != 0 && info.dli_fname != nullptr ? info.dli_fname : "";
  if (file.find('/') == std::string::npos) {
    char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    file = n > 0 ? std::string(exe, static_cast<size_t>(n)) : "";
  }
  const size_t slash = file.rfind('/');
  return slash == std::string::npos ? "." : file.substr(0, slash);
}

// ggml's score for the module: its feature check is compiled without the variant's instructions,
// so asking costs nothing on a processor that lacks them (ggml-cpu/CMakeLists.txt).
int module_score(const std::string& file) {
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return 0;
  using score_fn = int (*)();
  const auto score = reinterpret_cast<score_fn>(dlsym(handle, "ggml_backend_score"));
  const int result = score != nullptr ? score() : 0;
  dlclose(handle);
  return result;
}

std::string names(const std::vector<CpuVariant>& variants) {
  std::string out;
  for (const CpuVariant& v : variants) out += (out.empty() ? "" : ", ") + v.name + (v.score > 0 ? "" : " (not on this processor)");
  return out;
}
#endif

// Scans the folder and dlopens each module to score it. The modules are part of the build the
// process runs, so one scan serves the process (cpu_variants() caches it).
std::vector<CpuVariant> scan_variants() {
  std::vector<CpuVariant> found;
#ifdef GGML_BACKEND_DL
  const std::string folder = own_folder();
  DIR* dir = opendir(folder.c_str());
  if (dir == nullptr) return found;
  const std::string prefix(kPrefix), suffix(kSuffix);
  while (const dirent* entry = readdir(dir)) {
    const std::string name(entry->d_name);
    if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string file = folder + "/" + name;
    found.push_back({name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()), file, module_score(file)});
  }
  closedir(dir);
  std::sort(found.begin(), found.end(), [](const CpuVariant& a, const CpuVariant& b) { return a.score != b.score ? a.score > b.score : a.name < b.name; });
#endif
  return found;
}

}  // namespace

std::vector<CpuVariant> cpu_variants() {
  static const std::vector<CpuVariant> variants = scan_variants();
  return variants;
}

std::string use_cpu_variant(const std::string& pin) {
  const bool any = pin.empty() || pin == "auto";
  std::lock_guard<std::mutex> lock(loaded_mutex);
  if (!loaded.empty()) {
    if (!any && pin != loaded)
      throw std::runtime_error("this process already serves the CPU variant " + loaded + "; --cpu-variant " + pin + " needs a new process");
    return loaded;
  }
#ifdef GGML_BACKEND_DL
  const std::vector<CpuVariant> variants = cpu_variants();
  const auto chosen = any ? variants.begin() : std::find_if(variants.begin(), variants.end(), [&](const CpuVariant& v) { return v.name == pin; });
  if (chosen == variants.end())
    throw std::runtime_error(variants.empty() ? "no CPU backend (libggml-cpu-*.so) beside the addon in " + own_folder() + "; run `npm install` to build it"
                                              : "no CPU variant '" + pin + "' in this build; it has " + names(variants));
  if (chosen->score <= 0) throw std::runtime_error("this processor cannot run the CPU variant '" + chosen->name + "' (" + names(variants) + ")");
  if (ggml_backend_load(chosen->file.c_str()) == nullptr) throw std::runtime_error("could not load the CPU backend " + chosen->file);
  loaded = chosen->name;
#else
  if (!any)
    throw std::runtime_error("this build has its one CPU backend built in; --cpu-variant " + pin + " needs a variants build (cmake/llama-settings.cmake)");
  loaded = kBuiltInCpu;
#endif
  return loaded;
}

}  // namespace arbitra
