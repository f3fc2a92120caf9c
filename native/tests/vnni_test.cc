// The CPU products' VNNI path against their AVX2 path, bit for bit, on a processor without VNNI:
// every weight type's kernel compiled twice, once as AVX2 builds run it and once with its VNNI code
// (the zen4 variant's, and a native build's on a processor with AVX-VNNI), vpdpbusd emulated
// exactly (interleaved.h, ARBITRA_EMULATE_VNNI). The two pack Q8_0 differently and sum in other
// instructions; their products must be the same bits, which is what lets haswell and zen4 give
// the same answers. Each path is also held to itself with 1, 4 and 8 activation rows a call. What
// this cannot show is vpdpbusd itself on a real processor: scripts/cpu-variants-bench.sh runs the
// op test there. Compiled with AVX2, FMA and F16C; run by test/engine/native-vnni.test.ts.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "kernel_run.h"

std::vector<float> arbitra::testing::avx2_products(const KernelCase& c, int nr) { return products(c, nr); }

namespace {

using arbitra::testing::check;
using arbitra::testing::KernelCase;

constexpr int64_t kK = 1024;     // four super-blocks, 32 blocks of 32
constexpr int64_t kRowsW = 24;   // three groups of 8 weight rows
constexpr int64_t kWidthX = 13;  // one call of 8, one of 4, one row alone

// Random weights quantized by ggml, and for Q8_0 the extremes its quantizer never writes (-128)
// and always writes (127) in a few places; the activation rows with a large value or two each.
void test_type(ggml_type type) {
  std::mt19937 rng(11 + static_cast<uint32_t>(type));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(kRowsW * kK)), x(static_cast<size_t>(kWidthX * kK));
  for (float& v : w) v = nd(rng);
  for (float& v : x) v = nd(rng);
  for (int64_t i = 0; i < kWidthX; i++) x[static_cast<size_t>(i * kK + 37 * i)] = 40.0f;
  std::vector<char> q(ggml_row_size(type, kK) * kRowsW);
  ggml_quantize_chunk(type, w.data(), q.data(), 0, kRowsW, kK, nullptr);
  if (type == GGML_TYPE_Q8_0) {
    auto* blocks = reinterpret_cast<block_q8_0*>(q.data());
    for (int64_t b = 0; b < kRowsW * kK / 32; b += 7) {
      blocks[b].qs[b % 32] = -128;
      blocks[b].qs[(b + 5) % 32] = 127;
    }
  }
  const KernelCase c{type, q.data(), kRowsW, kK, x.data(), kWidthX};
  const std::vector<float> avx2 = arbitra::testing::avx2_products(c, 1);
  check(avx2.size() == static_cast<size_t>(kRowsW * kWidthX), "the kernels do not take this type");
  if (avx2.size() != static_cast<size_t>(kRowsW * kWidthX)) return;
  // widths of 4 and 8 compute the rows that fill whole calls; compare those
  const auto same = [&](const std::vector<float>& a, int64_t rows_done, const std::string& what) {
    check(std::memcmp(a.data(), avx2.data(), static_cast<size_t>(rows_done * kRowsW) * sizeof(float)) == 0, what + " differs from AVX2's, one row a call");
  };
  same(arbitra::testing::vnni_products(c, 1), kWidthX, "VNNI's, one row a call,");
  same(arbitra::testing::vnni_products(c, 4), kWidthX / 4 * 4, "VNNI's, 4 rows a call,");
  same(arbitra::testing::vnni_products(c, 8), kWidthX / 8 * 8, "VNNI's, 8 rows a call,");
  same(arbitra::testing::avx2_products(c, 4), kWidthX / 4 * 4, "AVX2's, 4 rows a call,");
  same(arbitra::testing::avx2_products(c, 8), kWidthX / 8 * 8, "AVX2's, 8 rows a call,");
}

}  // namespace

int main() {
  using arbitra::testing::run_all;
  return run_all({
      {"Q4_K: VNNI's products are AVX2's bit for bit", [] { test_type(GGML_TYPE_Q4_K); }},
      {"Q5_K: VNNI's products are AVX2's bit for bit", [] { test_type(GGML_TYPE_Q5_K); }},
      {"Q6_K: VNNI's products are AVX2's bit for bit", [] { test_type(GGML_TYPE_Q6_K); }},
      {"Q4_0: VNNI's products are AVX2's bit for bit", [] { test_type(GGML_TYPE_Q4_0); }},
      {"Q4_1: VNNI's products are AVX2's bit for bit", [] { test_type(GGML_TYPE_Q4_1); }},
      {"Q5_0: VNNI's products are AVX2's bit for bit", [] { test_type(GGML_TYPE_Q5_0); }},
      {"Q5_1: VNNI's products are AVX2's bit for bit", [] { test_type(GGML_TYPE_Q5_1); }},
      {"Q8_0: VNNI's products are AVX2's bit for bit, -128 weights included", [] { test_type(GGML_TYPE_Q8_0); }},
  });
}
