// The CUDA backend's kernel choices that decide a row's reduction order, compiled for the host: the
// patched headers (native/patches/ggml-cuda-batch-invariant.patch) keep these choices in plain C++
// so that a machine without a GPU holds them to their promise. Batch-invariant, the flash-attention
// kernel's GQA packing (how many query heads of one KV head share a tile) follows the model alone,
// never the KV length in use; the stock choice switches with it.
// Run by test/engine/native-cuda-choice.test.ts; prints one line per test and exits non-zero on a failure.
#include <string>
#include <vector>

#include "check.h"
#include "fattn-gqa.h"

namespace {

using arbitra::testing::check;
using arbitra::testing::current;
using arbitra::testing::failures;

// KV lengths a cache meets as cells come into use: padded and not, below, at and beyond one tile.
const std::vector<int64_t> kLengths = {1, 17, 255, 256, 257, 300, 512, 1000, 4096, 4097, 32768};

void test_batch_invariant_packing_follows_the_model_alone() {
  for (int ratio = 1; ratio <= 16; ++ratio) {
    for (bool packable : {false, true}) {
      const int first = ggml_cuda_fattn_gqa_ncols2(ratio, packable, kLengths.front(), true);
      for (int64_t n_kv : kLengths) {
        check(ggml_cuda_fattn_gqa_ncols2(ratio, packable, n_kv, true) == first,
              "ratio " + std::to_string(ratio) + (packable ? ", packable" : "") + ": n_kv " + std::to_string(n_kv) + " changes the packing");
      }
    }
  }
}

void test_packing_by_ratio() {
  const std::vector<std::pair<int, int>> expected = {{1, 1}, {2, 2}, {3, 4}, {4, 4}, {5, 8}, {6, 8}, {7, 8}, {8, 8}, {16, 8}};
  for (const auto& [ratio, ncols2] : expected) {
    check(ggml_cuda_fattn_gqa_ncols2(ratio, true, 4096, true) == ncols2, "ratio " + std::to_string(ratio) + " packs " + std::to_string(ncols2));
    check(ggml_cuda_fattn_gqa_ncols2(ratio, false, 4096, true) == 1, "ratio " + std::to_string(ratio) + " unpackable: one head a tile");
  }
}

void test_stock_packing_switches_with_the_length() {
  // The default model's 6 query heads per KV head: packed by 8 on a padded length, not otherwise.
  check(ggml_cuda_fattn_gqa_ncols2(6, true, 4096, false) == 8, "stock, padded: packed");
  check(ggml_cuda_fattn_gqa_ncols2(6, true, 4097, false) == 1, "stock, unpadded: one head a tile");
}

void test_an_unpadded_length_is_refused_only_where_packed() {
  check(!ggml_cuda_fattn_gqa_needs_padding(8, 4096), "padded");
  check(ggml_cuda_fattn_gqa_needs_padding(8, 4097), "packed, unpadded");
  check(!ggml_cuda_fattn_gqa_needs_padding(1, 4097), "one head a tile takes any length");
}

}  // namespace

int main() {
  const arbitra::testing::Tests tests = {
      {"batch-invariant GQA packing follows the model alone", test_batch_invariant_packing_follows_the_model_alone},
      {"GQA packing by the ratio", test_packing_by_ratio},
      {"the stock GQA packing switches with the KV length", test_stock_packing_switches_with_the_length},
      {"an unpadded KV length is refused only where packed", test_an_unpadded_length_is_refused_only_where_packed},
  };
  return arbitra::testing::run_all(tests);
}
