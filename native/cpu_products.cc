#include "cpu_products.h"

#include <cstring>

#include "ggml.h"

namespace arbitra {

ggml_backend_buffer_type_t cpu_repacked_buffer_type(ggml_backend_dev_t dev, ggml_tensor* weight) {
  auto extra = reinterpret_cast<ggml_backend_dev_get_extra_bufts_t>(
      ggml_backend_reg_get_proc_address(ggml_backend_dev_backend_reg(dev), "ggml_backend_dev_get_extra_bufts"));
  if (extra == nullptr) return nullptr;
  ggml_context* probe = ggml_init({ggml_tensor_overhead() * 4, nullptr, true});
  ggml_tensor* op = ggml_mul_mat(probe, weight, ggml_new_tensor_2d(probe, GGML_TYPE_F32, weight->ne[0], 8));
  ggml_backend_buffer_type_t chosen = nullptr;
  for (ggml_backend_buffer_type_t* t = extra(dev); t != nullptr && *t != nullptr; ++t) {
    if (std::strcmp(ggml_backend_buft_name(*t), "CPU_REPACK") != 0) continue;
    // The backend reads the weight's buffer type off its buffer, so the weight sits in an empty one.
    ggml_backend_buffer_t empty = ggml_backend_buft_alloc_buffer(*t, 0);
    ggml_backend_buffer_t had = weight->buffer;
    weight->buffer = empty;
    if (ggml_backend_dev_supports_op(dev, op)) chosen = *t;
    weight->buffer = had;
    ggml_backend_buffer_free(empty);
  }
  ggml_free(probe);
  return chosen;
}

const char* cpu_int8_products() {
#if defined(__x86_64__) || defined(_M_X64)
  ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
  if (cpu == nullptr) return "llama.cpp";
  ggml_context* probe = ggml_init({ggml_tensor_overhead(), nullptr, true});
  // One super-block wide and one group of interleaved rows tall: the smallest weight the hook takes.
  ggml_tensor* q6k = ggml_new_tensor_2d(probe, GGML_TYPE_Q6_K, ggml_blck_size(GGML_TYPE_Q6_K), 8);
  const bool ours = cpu_repacked_buffer_type(cpu, q6k) != nullptr;
  ggml_free(probe);
  return ours ? "arbitra" : "llama.cpp";
#else
  // The engine's kernels are x86's alone; on Arm llama.cpp repacks Q6_K itself.
  return "llama.cpp";
#endif
}

}  // namespace arbitra
