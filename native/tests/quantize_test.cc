// The CPU products' activation quantizer (quantize_q8_K, native/ggml-cpu/interleaved.h) against
// ggml's reference, byte for byte: the products and the plain layout's dot products must read the
// same q8_K rows, or "the plain layout's product to rounding" would hide a quantizer's error.
// Compiled with the products' instructions (AVX2, FMA, F16C); run by test/engine/native-quantize.test.ts.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "check.h"
#include "ggml-cpu/interleaved.h"
#include "ggml-quants.h"

namespace {

using arbitra::testing::check;

constexpr int64_t kBlocks = 6;  // a row of the default model's width, 1,536
constexpr int64_t kWidth = kBlocks * QK_K;

// Both quantizers on the same row, into buffers that start equal (the reference leaves a zero block's
// sums as they were); true when every byte agrees.
bool same_bytes(const std::vector<float>& x) {
  std::vector<block_q8_K> ours(kBlocks), reference(kBlocks);
  std::memset(ours.data(), 0, ours.size() * sizeof(block_q8_K));
  std::memset(reference.data(), 0, reference.size() * sizeof(block_q8_K));
  arbitra::cpu::quantize_q8_K(x.data(), ours.data(), kWidth);
  quantize_row_q8_K_ref(x.data(), reference.data(), kWidth);
  return std::memcmp(ours.data(), reference.data(), ours.size() * sizeof(block_q8_K)) == 0;
}

// Rows of `draw`, each quantized both ways; the count that differ.
template <typename Draw>
int differing(int rows, Draw draw) {
  std::mt19937 rng(7);
  std::vector<float> x(kWidth);
  int n = 0;
  for (int r = 0; r < rows; r++) {
    draw(rng, x, r);
    n += same_bytes(x) ? 0 : 1;
  }
  return n;
}

void test_random_rows() {
  const int n = differing(5000, [](std::mt19937& rng, std::vector<float>& x, int r) {
    std::normal_distribution<float> nd(0, r % 7 == 0 ? 1e-3f : 3.0f);
    for (float& v : x) v = nd(rng);
  });
  check(n == 0, std::to_string(n) + " of 5000 rows differ");
}

// The largest magnitude 127 makes the scale -1, so every half-integer is a tie rounded to even.
void test_ties() {
  const int n = differing(2000, [](std::mt19937& rng, std::vector<float>& x, int) {
    std::uniform_int_distribution<int> d(-120, 120);
    for (float& v : x) v = static_cast<float>(d(rng)) + 0.5f;
    for (int64_t i = 0; i < kWidth; i += QK_K) x[i] = 127.f;
  });
  check(n == 0, std::to_string(n) + " of 2000 rows differ");
}

// The first of two values of largest magnitude sets the sign of the scale.
void test_equal_magnitudes() {
  const int n = differing(2000, [](std::mt19937& rng, std::vector<float>& x, int r) {
    std::normal_distribution<float> nd(0, 1.0f);
    for (float& v : x) v = nd(rng);
    for (int64_t b = 0; b < kBlocks; b++) {
      x[b * QK_K + 3] = r % 2 ? 9.f : -9.f;
      x[b * QK_K + 200] = -x[b * QK_K + 3];
    }
  });
  check(n == 0, std::to_string(n) + " of 2000 rows differ");
}

void test_zero_blocks() {
  const int n = differing(100, [](std::mt19937& rng, std::vector<float>& x, int r) {
    std::normal_distribution<float> nd(0, 1.0f);
    for (float& v : x) v = nd(rng);
    std::fill(x.begin() + (r % kBlocks) * QK_K, x.begin() + (r % kBlocks + 1) * QK_K, r % 2 ? 0.f : -0.f);
  });
  check(n == 0, std::to_string(n) + " of 100 rows differ");
}

}  // namespace

int main() {
  return arbitra::testing::run_all({
      {"random rows quantize to the reference's bytes", test_random_rows},
      {"ties round half to even, as the reference rounds them", test_ties},
      {"the first of equal magnitudes sets the scale's sign", test_equal_magnitudes},
      {"a block of zeros quantizes to zeros", test_zero_blocks},
  });
}
