// One translation unit's run of the CPU products' kernels (native/ggml-cpu), for vnni_test.cc: the
// kernels are included whole (ARBITRA_KERNELS_ONLY leaves out the traits ggml's backend asks for),
// so each unit compiles its own copy with its own path, AVX2's or VNNI's, in its anonymous
// namespace. Include once per unit, after defining ARBITRA_EMULATE_VNNI or not.
#pragma once

#include <cstdint>
#include <vector>

#define ARBITRA_KERNELS_ONLY
#include "ggml-cpu/q4_q5_interleaved.cc"
#include "ggml-cpu/q4k_q5k_interleaved.cc"
#include "ggml-cpu/q6k_interleaved.cc"
#include "ggml-cpu/q8_0_interleaved.cc"
#include "kernel_products.h"

namespace {

using namespace arbitra::cpu;

// `rows` weight rows of `k` (ggml's blocks of Kernel::Source) packed by the repack's own pack_rows, times
// each of `width` activation rows of `x`, NR rows a call: width × rows products, row-major.
template <typename Kernel, int NR>
std::vector<float> run(const void* weights, int64_t rows, int64_t k, const float* x, int64_t width) {
  using Activation = typename Kernel::Activation;
  const int64_t nb = k / Activation::kWeights;
  std::vector<typename Kernel::Block> packed(static_cast<size_t>(rows / kRows * nb));
  pack_rows<Kernel>(packed.data(), static_cast<const typename Kernel::Source*>(weights), rows / kRows, nb);
  std::vector<typename Activation::Block> q(static_cast<size_t>(width * nb));
  for (int64_t i = 0; i < width; i++) Activation::quantize(x + i * k, &q[static_cast<size_t>(i * nb)], k);
  std::vector<float> out(static_cast<size_t>(width * rows));
  for (int64_t i = 0; i + NR <= width; i += NR) {
    for (int64_t g = 0; g < rows / kRows; g++) {
      const typename Activation::Block* y[NR];
      float* o[NR];
      for (int a = 0; a < NR; a++) {
        y[a] = &q[static_cast<size_t>((i + a) * nb)];
        o[a] = &out[static_cast<size_t>((i + a) * rows + g * kRows)];
      }
      Kernel::template product<NR>(static_cast<int>(nb), o, &packed[static_cast<size_t>(g * nb)], y);
    }
  }
  return out;
}

template <typename Kernel>
std::vector<float> run_nr(const arbitra::testing::KernelCase& c, int nr) {
  switch (nr) {
    case 1:
      return run<Kernel, 1>(c.weights, c.rows, c.k, c.x, c.width);
    case 4:
      return run<Kernel, 4>(c.weights, c.rows, c.k, c.x, c.width);
    default:
      return run<Kernel, kWide>(c.weights, c.rows, c.k, c.x, c.width);
  }
}

std::vector<float> products(const arbitra::testing::KernelCase& c, int nr) {
  switch (c.type) {
    case GGML_TYPE_Q4_K:
      return run_nr<Q45K<block_q4_K, false>>(c, nr);
    case GGML_TYPE_Q5_K:
      return run_nr<Q45K<block_q5_K, true>>(c, nr);
    case GGML_TYPE_Q6_K:
      return run_nr<Q6K>(c, nr);
    case GGML_TYPE_Q4_0:
      return run_nr<Q45<block_q4_0, false, false>>(c, nr);
    case GGML_TYPE_Q4_1:
      return run_nr<Q45<block_q4_1, false, true>>(c, nr);
    case GGML_TYPE_Q5_0:
      return run_nr<Q45<block_q5_0, true, false>>(c, nr);
    case GGML_TYPE_Q5_1:
      return run_nr<Q45<block_q5_1, true, true>>(c, nr);
    case GGML_TYPE_Q8_0:
      return run_nr<Q80>(c, nr);
    default:
      return {};
  }
}

}  // namespace
