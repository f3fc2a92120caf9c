// Which weights the interleaved products take (interleaved.h): repack.cpp asks this first, through
// the weak hook native/patches/ggml-cpu-int8-hook.patch declares, and keeps llama.cpp's own choice
// for whatever it returns null for. ARBITRA_INT8_KERNELS=off at load keeps llama.cpp's layouts and
// kernels for every weight (a diagnostic, and the benches' before/after).
#include <cstdlib>
#include <cstring>

#include "interleaved.h"

extern "C" const ggml::cpu::tensor_traits* arbitra_repack_traits(const ggml_tensor* t);

extern "C" const ggml::cpu::tensor_traits* arbitra_repack_traits(const ggml_tensor* t) {
  static const bool on = [] {
    const char* v = std::getenv("ARBITRA_INT8_KERNELS");
    return v == nullptr || std::strcmp(v, "off") != 0;
  }();
  // Two-dimensional weights only: experts' products (mul_mat_id) keep llama.cpp's kernels.
  if (!on || ggml_n_dims(t) != 2 || t->ne[1] % arbitra::cpu::kRows != 0) return nullptr;
  switch (t->type) {
    case GGML_TYPE_Q4_K:
      return arbitra::cpu::q4k_interleaved();
    case GGML_TYPE_Q5_K:
      return arbitra::cpu::q5k_interleaved();
    case GGML_TYPE_Q6_K:
      return arbitra::cpu::q6k_interleaved();
    case GGML_TYPE_Q4_0:
      return arbitra::cpu::q40_interleaved();
    case GGML_TYPE_Q4_1:
      return arbitra::cpu::q41_interleaved();
    case GGML_TYPE_Q5_0:
      return arbitra::cpu::q50_interleaved();
    case GGML_TYPE_Q5_1:
      return arbitra::cpu::q51_interleaved();
    case GGML_TYPE_Q8_0:
      return arbitra::cpu::q80_interleaved();
    default:
      return nullptr;
  }
}
