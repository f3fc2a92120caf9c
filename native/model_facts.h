// Facts about a loaded model that the API reports (meta, /v1/models), read from llama.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "llama.h"

namespace arbitra {

struct QuantInfo {
  std::string method;  // e.g. "Q4_K_M"
  int bits;            // e.g. 4; 0 when the file type has no single width
};

QuantInfo quant_info(llama_ftype ftype);
std::string model_meta(const llama_model* model, const char* key);
// The GPU devices ggml found (none on a CPU build).
std::vector<ggml_backend_dev_t> gpu_devices();
// Sum of used memory over GPU devices, in bytes (free-memory difference is unreliable under
// other tenants, so this is the device's total minus free, sampled by the caller before and after).
size_t gpu_memory_used();

}  // namespace arbitra
