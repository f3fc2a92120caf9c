// The CPU products' VNNI path against their AVX2 path, bit for bit: every weight type's kernel
// compiled three times, once as AVX2 builds run it and twice with its VNNI code (the zen4
// variant's, and a native build's on a processor with AVX-VNNI): with vpdpbusd emulated exactly
// (interleaved.h, ARBITRA_EMULATE_VNNI), which runs on any processor, and with AVX-512 VNNI's own
// vpdpbusd, which runs where the processor has it (and says so where it has not). The paths pack
// Q8_0 differently and sum in other instructions; their products must be the same bits, which is
// what lets haswell and zen4 give the same answers. Each path is also held to itself with 1, 4 and
// 8 activation rows a call. Run by test/engine/native-vnni.test.ts.
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

using Products = std::vector<float> (*)(const KernelCase&, int);

// Random weights quantized by ggml, and for Q8_0 the extremes its quantizer never writes (-128)
// and always writes (127) in a few places; the activation rows with a large value or two each.
// `vnni`'s products against AVX2's, and AVX2's own at every width.
void test_type(ggml_type type, Products vnni) {
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
  check(avx2.size() == static_cast<size_t>(kRowsW * kWidthX), std::string(ggml_type_name(type)) + ": the kernels do not take this type");
  if (avx2.size() != static_cast<size_t>(kRowsW * kWidthX)) return;
  // widths of 4 and 8 compute the rows that fill whole calls; compare those
  const auto same = [&](const std::vector<float>& a, int64_t rows_done, const std::string& what) {
    check(std::memcmp(a.data(), avx2.data(), static_cast<size_t>(rows_done * kRowsW) * sizeof(float)) == 0,
          std::string(ggml_type_name(type)) + ": " + what + " differs from AVX2's, one row a call");
  };
  same(vnni(c, 1), kWidthX, "VNNI's, one row a call,");
  same(vnni(c, 4), kWidthX / 4 * 4, "VNNI's, 4 rows a call,");
  same(vnni(c, 8), kWidthX / 8 * 8, "VNNI's, 8 rows a call,");
  same(arbitra::testing::avx2_products(c, 4), kWidthX / 4 * 4, "AVX2's, 4 rows a call,");
  same(arbitra::testing::avx2_products(c, 8), kWidthX / 8 * 8, "AVX2's, 8 rows a call,");
}

constexpr ggml_type kTypes[] = {GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0};

// Every type on this processor's own vpdpbusd, where it has AVX-512 VNNI (the zen4 variant's
// instructions); elsewhere a line that says it was not compared.
void test_hardware() {
  if (!arbitra::testing::has_avx512_vnni()) {
    std::printf("# %s: this processor has no AVX-512 VNNI, so only the emulated vpdpbusd was compared\n", arbitra::testing::current.c_str());
    return;
  }
  for (const ggml_type type : kTypes) test_type(type, arbitra::testing::hardware_vnni_products);
}

}  // namespace

int main() {
  using arbitra::testing::run_all;
  using arbitra::testing::vnni_products;
  return run_all({
      {"Q4_K: VNNI's products are AVX2's bit for bit", [] { test_type(GGML_TYPE_Q4_K, vnni_products); }},
      {"Q5_K: VNNI's products are AVX2's bit for bit", [] { test_type(GGML_TYPE_Q5_K, vnni_products); }},
      {"Q6_K: VNNI's products are AVX2's bit for bit", [] { test_type(GGML_TYPE_Q6_K, vnni_products); }},
      {"Q4_0: VNNI's products are AVX2's bit for bit", [] { test_type(GGML_TYPE_Q4_0, vnni_products); }},
      {"Q4_1: VNNI's products are AVX2's bit for bit", [] { test_type(GGML_TYPE_Q4_1, vnni_products); }},
      {"Q5_0: VNNI's products are AVX2's bit for bit", [] { test_type(GGML_TYPE_Q5_0, vnni_products); }},
      {"Q5_1: VNNI's products are AVX2's bit for bit", [] { test_type(GGML_TYPE_Q5_1, vnni_products); }},
      {"Q8_0: VNNI's products are AVX2's bit for bit, -128 weights included", [] { test_type(GGML_TYPE_Q8_0, vnni_products); }},
      {"every type on this processor's own vpdpbusd: AVX2's bits", test_hardware},
  });
}
