// The CPU products' kernels as the translation units of vnni_test.cc compile them: AVX2's path
// (vnni_test.cc), and VNNI's with vpdpbusd emulated exactly in AVX2 (vnni_test_emulated.cc) and
// with AVX-512 VNNI's own (vnni_test_hardware.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "ggml.h"

namespace arbitra::testing {

// Weights of `type` (ggml's blocks, `rows` rows of `k`, rows a multiple of 8) and `width` float
// activation rows of `k`.
struct KernelCase {
  ggml_type type;
  const void* weights;
  int64_t rows;
  int64_t k;
  const float* x;
  int64_t width;
};

// width × rows products, `nr` activation rows (1, 4 or 8) a kernel call; empty for a type the
// kernels do not take.
std::vector<float> avx2_products(const KernelCase& c, int nr);
std::vector<float> vnni_products(const KernelCase& c, int nr);
// Compiled with AVX-512 VNNI: call only where has_avx512_vnni().
std::vector<float> hardware_vnni_products(const KernelCase& c, int nr);
bool has_avx512_vnni();

}  // namespace arbitra::testing
