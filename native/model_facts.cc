#include "model_facts.h"

#include <vector>

#include "ggml-backend.h"

namespace arbitra {

QuantInfo quant_info(llama_ftype ftype) {
  switch (ftype & ~LLAMA_FTYPE_GUESSED) {
    case LLAMA_FTYPE_ALL_F32:
      return {"F32", 32};
    case LLAMA_FTYPE_MOSTLY_F16:
      return {"F16", 16};
    case LLAMA_FTYPE_MOSTLY_BF16:
      return {"BF16", 16};
    case LLAMA_FTYPE_MOSTLY_Q8_0:
      return {"Q8_0", 8};
    case LLAMA_FTYPE_MOSTLY_Q6_K:
      return {"Q6_K", 6};
    case LLAMA_FTYPE_MOSTLY_Q5_0:
      return {"Q5_0", 5};
    case LLAMA_FTYPE_MOSTLY_Q5_1:
      return {"Q5_1", 5};
    case LLAMA_FTYPE_MOSTLY_Q5_K_S:
      return {"Q5_K_S", 5};
    case LLAMA_FTYPE_MOSTLY_Q5_K_M:
      return {"Q5_K_M", 5};
    case LLAMA_FTYPE_MOSTLY_Q4_0:
      return {"Q4_0", 4};
    case LLAMA_FTYPE_MOSTLY_Q4_1:
      return {"Q4_1", 4};
    case LLAMA_FTYPE_MOSTLY_Q4_K_S:
      return {"Q4_K_S", 4};
    case LLAMA_FTYPE_MOSTLY_Q4_K_M:
      return {"Q4_K_M", 4};
    case LLAMA_FTYPE_MOSTLY_IQ4_NL:
      return {"IQ4_NL", 4};
    case LLAMA_FTYPE_MOSTLY_IQ4_XS:
      return {"IQ4_XS", 4};
    case LLAMA_FTYPE_MOSTLY_MXFP4_MOE:
      return {"MXFP4_MOE", 4};
    case LLAMA_FTYPE_MOSTLY_NVFP4:
      return {"NVFP4", 4};
    case LLAMA_FTYPE_MOSTLY_Q3_K_S:
      return {"Q3_K_S", 3};
    case LLAMA_FTYPE_MOSTLY_Q3_K_M:
      return {"Q3_K_M", 3};
    case LLAMA_FTYPE_MOSTLY_Q3_K_L:
      return {"Q3_K_L", 3};
    case LLAMA_FTYPE_MOSTLY_IQ3_XS:
      return {"IQ3_XS", 3};
    case LLAMA_FTYPE_MOSTLY_IQ3_XXS:
      return {"IQ3_XXS", 3};
    case LLAMA_FTYPE_MOSTLY_IQ3_S:
      return {"IQ3_S", 3};
    case LLAMA_FTYPE_MOSTLY_IQ3_M:
      return {"IQ3_M", 3};
    case LLAMA_FTYPE_MOSTLY_Q2_K:
      return {"Q2_K", 2};
    case LLAMA_FTYPE_MOSTLY_Q2_K_S:
      return {"Q2_K_S", 2};
    case LLAMA_FTYPE_MOSTLY_Q2_0:
      return {"Q2_0", 2};
    case LLAMA_FTYPE_MOSTLY_IQ2_XXS:
      return {"IQ2_XXS", 2};
    case LLAMA_FTYPE_MOSTLY_IQ2_XS:
      return {"IQ2_XS", 2};
    case LLAMA_FTYPE_MOSTLY_IQ2_S:
      return {"IQ2_S", 2};
    case LLAMA_FTYPE_MOSTLY_IQ2_M:
      return {"IQ2_M", 2};
    case LLAMA_FTYPE_MOSTLY_TQ2_0:
      return {"TQ2_0", 2};
    case LLAMA_FTYPE_MOSTLY_IQ1_S:
      return {"IQ1_S", 1};
    case LLAMA_FTYPE_MOSTLY_IQ1_M:
      return {"IQ1_M", 1};
    case LLAMA_FTYPE_MOSTLY_TQ1_0:
      return {"TQ1_0", 1};
    case LLAMA_FTYPE_MOSTLY_Q1_0:
      return {"Q1_0", 1};
    default:
      return {"unknown", 0};
  }
}

std::string model_meta(const llama_model* model, const char* key) {
  std::vector<char> buf(256);
  int32_t n = llama_model_meta_val_str(model, key, buf.data(), buf.size());
  if (n < 0) return "";
  if (static_cast<size_t>(n) >= buf.size()) {
    buf.resize(static_cast<size_t>(n) + 1);
    n = llama_model_meta_val_str(model, key, buf.data(), buf.size());
  }
  return std::string(buf.data(), static_cast<size_t>(n));
}

std::vector<ggml_backend_dev_t> gpu_devices() {
  std::vector<ggml_backend_dev_t> gpus;
  for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    ggml_backend_dev_t dev = ggml_backend_dev_get(i);
    if (ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_GPU) gpus.push_back(dev);
  }
  return gpus;
}

size_t gpu_memory_used() {
  size_t used = 0;
  for (ggml_backend_dev_t dev : gpu_devices()) {
    size_t free = 0, total = 0;
    ggml_backend_dev_memory(dev, &free, &total);
    used += total - free;
  }
  return used;
}

}  // namespace arbitra
