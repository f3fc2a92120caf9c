// Whose matrix products the CPU backend runs for a weight: the repacked layouts (llama.cpp's, and the
// engine's own for the K-quants and the types of 32-weight blocks, native/ggml-cpu) or the plain one, asked of the backend as
// llama.cpp's loader asks it when it places the weights.
#pragma once

#include "ggml-backend.h"

namespace arbitra {

// The CPU device's repacked buffer type where it takes `weight`'s product (weight × rows of F32),
// else null: the weight stays in the plain layout.
ggml_backend_buffer_type_t cpu_repacked_buffer_type(ggml_backend_dev_t dev, ggml_tensor* weight);

// "arbitra" where the loaded CPU backend gives quantized weights (Q4_K, Q5_K, Q6_K, Q4_0, Q4_1,
// Q5_0, Q5_1, Q8_0) to the engine's own products, else "llama.cpp" (a processor without AVX2, FMA and F16C, ARBITRA_INT8_KERNELS=off, or
// a build without them, any processor but x86-64's). llama.cpp repacks no Q6_K on x86, so a Q6_K
// weight shows whose run.
const char* cpu_int8_products();

}  // namespace arbitra
