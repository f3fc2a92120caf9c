// Q4_K matrix products for ggml's CPU backend, compiled into each CPU backend of the build with its
// instruction flags (cmake/arbitra-kernels.cmake) and found by repack.cpp through a weak hook
// (native/patches/ggml-cpu-int8-hook.patch).
//
// Why not llama.cpp's own repacked Q4_K product: its x86 kernel cuts a batch into 16-row and 4-row
// groups and moves every byte of both operands through shuffles before its integer dot products,
// and in the batch-invariant mode the rows past a multiple of 4 are padded to a group of 4 that
// does the work of 4. Here 8 weight rows are interleaved 4 bytes at a time, so one activation row's
// 4 bytes, broadcast, meet the 8 rows in one vpmaddubsw with no shuffle, and each activation row
// takes the same instructions whether 1 or 4 are done together: a row's result is the same bits in
// a batch of any width, at any place in it and on any thread count, by construction. The integer
// sums are exact; the float steps per output (one scale product and two fused multiply-adds a
// super-block, one subtraction at the end) are the same for every row in every grouping.
//
// ARBITRA_INT8_KERNELS=off at load keeps llama.cpp's layout and kernel (the benches' baselines).

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "ggml-cpu-impl.h"
#include "quants.h"
#include "repack.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define ARBITRA_Q4K_INTERLEAVED 1
#endif

#ifdef ARBITRA_Q4K_INTERLEAVED
namespace {

constexpr int kRows = 8;  // weight rows interleaved in a block

// 8 rows' Q4_K super-blocks, in the size of the 8 blocks they replace, so the repacked tensor fits
// the allocation llama.cpp sized for the original.
struct InterleavedQ4K {
  ggml_half d[kRows];
  ggml_half dmin[kRows];
  // The 6-bit scales and mins of the 8 sub-blocks, as 128 bytes sm[j][16] (the 8 rows' scales of
  // sub-block j, then their mins) cut in two: the low 4 bits of sm byte i in nibble i / 64 of
  // low[i % 64], its top 2 bits in bits 2 * (i / 32) of high[i % 32]. Unpacking is a few whole-
  // register operations per super-block (unpack_scales).
  uint8_t low[64];
  uint8_t high[32];
  // qs[j][t][r][i]: row r's weight 32 j + 4 t + i in the low nibble, 32 j + 16 + 4 t + i in the high
  uint8_t qs[8][4][kRows][4];
};
static_assert(sizeof(InterleavedQ4K) == kRows * sizeof(block_q4_K), "the repacked layout must fit the original's allocation");

void scale_min(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

void pack_rows(InterleavedQ4K* out, const block_q4_K* const* rows) {
  uint8_t sm[128];
  for (int r = 0; r < kRows; r++) {
    const block_q4_K& x = *rows[r];
    out->d[r] = x.d;
    out->dmin[r] = x.dmin;
    for (int j = 0; j < 8; j++) {
      scale_min(j, x.scales, &sm[16 * j + r], &sm[16 * j + 8 + r]);
    }
    uint8_t w[QK_K];
    for (int c = 0; c < 4; c++) {
      for (int l = 0; l < 32; l++) {
        w[64 * c + l] = x.qs[32 * c + l] & 0xF;
        w[64 * c + 32 + l] = x.qs[32 * c + l] >> 4;
      }
    }
    for (int j = 0; j < 8; j++) {
      for (int t = 0; t < 4; t++) {
        for (int i = 0; i < 4; i++) {
          out->qs[j][t][r][i] = w[32 * j + 4 * t + i] | (w[32 * j + 16 + 4 * t + i] << 4);
        }
      }
    }
  }
  std::memset(out->low, 0, sizeof(out->low));
  std::memset(out->high, 0, sizeof(out->high));
  for (int i = 0; i < 128; i++) {
    out->low[i % 64] |= (sm[i] & 0xF) << (4 * (i / 64));
    out->high[i % 32] |= (sm[i] >> 4) << (2 * (i / 32));
  }
}

// The 128 bytes sm[j][16] of pack_rows, into `sm`.
inline void unpack_scales(const InterleavedQ4K& x, uint8_t* sm) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i m2 = _mm256_set1_epi8(0x03);
  const __m256i l0 = _mm256_loadu_si256((const __m256i*)x.low);
  const __m256i l1 = _mm256_loadu_si256((const __m256i*)(x.low + 32));
  const __m256i h = _mm256_loadu_si256((const __m256i*)x.high);
  const __m256i lows[4] = {_mm256_and_si256(l0, m4), _mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                           _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4)};
  for (int q = 0; q < 4; q++) {
    const __m256i top = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2 * q), m2), 4);
    _mm256_storeu_si256((__m256i*)(sm + 32 * q), _mm256_or_si256(lows[q], top));
  }
}

inline __m256i broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm256_set1_epi32(v);
}

// out[a][0..7] = the 8 rows of w (nb super-blocks) times activation row y[a], for a < NR. Every row
// a runs the same instructions on its own registers whatever NR is.
template <int NR>
void product_rows(int nb, float* const* out, const InterleavedQ4K* w, const block_q8_K* const* y) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  __m256 acc[NR], acc_min[NR];
  for (int a = 0; a < NR; a++) {
    acc[a] = _mm256_setzero_ps();
    acc_min[a] = _mm256_setzero_ps();
  }
  alignas(32) uint8_t sm[128];
  for (int b = 0; b < nb; b++) {
    const InterleavedQ4K& x = w[b];
    unpack_scales(x, sm);
    __m256i isum[NR], imin[NR];
    for (int a = 0; a < NR; a++) {
      isum[a] = _mm256_setzero_si256();
      imin[a] = _mm256_setzero_si256();
    }
    for (int j = 0; j < 8; j++) {
      const __m128i s = _mm_load_si128((const __m128i*)(sm + 16 * j));
      // each row's scale (and min) twice, for the two 16-bit sums a row has in a product below
      const __m256i scale = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(s, s));
      const __m256i min = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(s, s));
      __m256i lo[4], hi[4];
      for (int t = 0; t < 4; t++) {
        const __m256i v = _mm256_loadu_si256((const __m256i*)x.qs[j][t]);
        lo[t] = _mm256_and_si256(v, m4);
        hi[t] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
      }
      for (int a = 0; a < NR; a++) {
        const int8_t* q = y[a][b].qs + 32 * j;
        // 8 products of at most 2 * 15 * 128 each: the 16-bit sums cannot saturate
        const __m256i p0 = _mm256_add_epi16(_mm256_maddubs_epi16(lo[0], broadcast4(q)), _mm256_maddubs_epi16(lo[1], broadcast4(q + 4)));
        const __m256i p1 = _mm256_add_epi16(_mm256_maddubs_epi16(lo[2], broadcast4(q + 8)), _mm256_maddubs_epi16(lo[3], broadcast4(q + 12)));
        const __m256i p2 = _mm256_add_epi16(_mm256_maddubs_epi16(hi[0], broadcast4(q + 16)), _mm256_maddubs_epi16(hi[1], broadcast4(q + 20)));
        const __m256i p3 = _mm256_add_epi16(_mm256_maddubs_epi16(hi[2], broadcast4(q + 24)), _mm256_maddubs_epi16(hi[3], broadcast4(q + 28)));
        const __m256i p = _mm256_add_epi16(_mm256_add_epi16(p0, p1), _mm256_add_epi16(p2, p3));
        isum[a] = _mm256_add_epi32(isum[a], _mm256_madd_epi16(p, scale));
        // the sub-block's activation sum, from q8_K's two sums of 16
        int32_t bsums;
        std::memcpy(&bsums, y[a][b].bsums + 2 * j, sizeof(bsums));
        imin[a] = _mm256_add_epi32(imin[a], _mm256_madd_epi16(_mm256_set1_epi32(bsums), min));
      }
    }
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)x.d));
    const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)x.dmin));
    for (int a = 0; a < NR; a++) {
      const __m256 dy = _mm256_set1_ps(y[a][b].d);
      acc[a] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[a]), _mm256_mul_ps(d, dy), acc[a]);
      acc_min[a] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(imin[a]), _mm256_mul_ps(dmin, dy), acc_min[a]);
    }
  }
  for (int a = 0; a < NR; a++) {
    _mm256_storeu_ps(out[a], _mm256_sub_ps(acc[a], acc_min[a]));
  }
}

class InterleavedQ4KTraits : public ggml::cpu::repack::tensor_traits_base {
 public:
  bool work_size(int, const ggml_tensor* op, size_t& size) override {
    if (op->op != GGML_OP_MUL_MAT) {
      return false;
    }
    size = ggml_row_size(GGML_TYPE_Q8_K, op->src[1]->ne[0]) * ggml_nrows(op->src[1]);
    return true;
  }

  bool compute_forward(ggml_compute_params* params, ggml_tensor* op) override {
    if (op->op != GGML_OP_MUL_MAT) {
      return false;
    }
    mul_mat(params, op);
    return true;
  }

  int repack(ggml_tensor* t, const void* data, size_t data_size) override {
    GGML_ASSERT(data_size == ggml_nbytes(t));
    const int64_t nb = t->ne[0] / QK_K;
    const block_q4_K* src = (const block_q4_K*)data;
    InterleavedQ4K* dst = (InterleavedQ4K*)t->data;
    for (int64_t g = 0; g < t->ne[1] / kRows; g++) {
      for (int64_t b = 0; b < nb; b++) {
        const block_q4_K* rows[kRows];
        for (int r = 0; r < kRows; r++) {
          rows[r] = src + (g * kRows + r) * nb + b;
        }
        pack_rows(dst + g * nb + b, rows);
      }
    }
    return 0;
  }

 private:
  // The rows of src1 (all planes) are quantized to q8_K in wdata, then the product is cut into
  // tiles of activation rows and weight-row groups that the threads take in turn. Tiles decide
  // only which rows are computed together, never how.
  static void mul_mat(ggml_compute_params* params, ggml_tensor* op) {
    const ggml_tensor* w = op->src[0];
    const ggml_tensor* x = op->src[1];
    GGML_ASSERT(x->type == GGML_TYPE_F32 && op->nb[0] == sizeof(float));
    GGML_ASSERT(op->ne[0] == w->ne[1] && x->ne[0] == w->ne[0]);
    const int64_t k = w->ne[0];
    const int64_t nb = k / QK_K;
    const int64_t rows = ggml_nrows(x);
    const size_t row_q8 = ggml_row_size(GGML_TYPE_Q8_K, k);
    char* wdata = (char*)params->wdata;
    const int64_t ne1 = x->ne[1];
    const int64_t ne2 = x->ne[2];
    auto x_row = [&](int64_t i) {
      return (const float*)((const char*)x->data + (i % ne1) * x->nb[1] + (i / ne1 % ne2) * x->nb[2] + (i / (ne1 * ne2)) * x->nb[3]);
    };
    auto out_row = [&](int64_t i) { return (float*)((char*)op->data + (i % ne1) * op->nb[1] + (i / ne1 % ne2) * op->nb[2] + (i / (ne1 * ne2)) * op->nb[3]); };

    for (int64_t i = params->ith; i < rows; i += params->nth) {
      quantize_row_q8_K(x_row(i), wdata + i * row_q8, k);
    }
    if (params->ith == 0) {
      ggml_threadpool_chunk_set(params->threadpool, params->nth);
    }
    ggml_barrier(params->threadpool);

    // Activation rows a tile: as many as keep their q8_K rows within half of a 512 KiB L2 while
    // a group's weights stream past them, a multiple of 4 from 4 to 64.
    const int64_t tile_rows = std::clamp<int64_t>((256 * 1024 / (int64_t)row_q8) & ~int64_t(3), 4, 64);
    const int64_t row_tiles = (rows + tile_rows - 1) / tile_rows;
    const int64_t groups = w->ne[1] / kRows;
    // at least four tiles a thread, so that threads that finish early take the rest
    const int64_t group_tiles = std::min(groups, std::max<int64_t>(1, (4 * params->nth + row_tiles - 1) / row_tiles));
    const int64_t tile_groups = (groups + group_tiles - 1) / group_tiles;
    const InterleavedQ4K* weights = (const InterleavedQ4K*)w->data;

    for (int64_t tile = params->ith; tile < row_tiles * group_tiles; tile = ggml_threadpool_chunk_add(params->threadpool, 1)) {
      const int64_t r0 = tile / group_tiles * tile_rows, r1 = std::min(rows, r0 + tile_rows);
      const int64_t g0 = tile % group_tiles * tile_groups, g1 = std::min(groups, g0 + tile_groups);
      for (int64_t g = g0; g < g1; g++) {
        const InterleavedQ4K* wg = weights + g * nb;
        int64_t r = r0;
        for (; r + 4 <= r1; r += 4) {
          const block_q8_K* y[4];
          float* out[4];
          for (int a = 0; a < 4; a++) {
            y[a] = (const block_q8_K*)(wdata + (r + a) * row_q8);
            out[a] = out_row(r + a) + g * kRows;
          }
          product_rows<4>((int)nb, out, wg, y);
        }
        for (; r < r1; r++) {
          const block_q8_K* y[1] = {(const block_q8_K*)(wdata + r * row_q8)};
          float* out[1] = {out_row(r) + g * kRows};
          product_rows<1>((int)nb, out, wg, y);
        }
      }
    }
  }
};

bool enabled() {
  const char* v = std::getenv("ARBITRA_INT8_KERNELS");
  return v == nullptr || std::strcmp(v, "off") != 0;
}

}  // namespace
#endif

// The hook repack.cpp declares weak: the traits for a weight these kernels take, else null.
extern "C" const ggml::cpu::tensor_traits* arbitra_repack_traits(const ggml_tensor* t);

extern "C" const ggml::cpu::tensor_traits* arbitra_repack_traits(const ggml_tensor* t) {
#ifdef ARBITRA_Q4K_INTERLEAVED
  // Two-dimensional weights only: experts' products (mul_mat_id) keep llama.cpp's kernel.
  static const InterleavedQ4KTraits q4_K;
  static const bool on = enabled();
  if (on && t->type == GGML_TYPE_Q4_K && ggml_n_dims(t) == 2 && t->ne[1] % kRows == 0) {
    return &q4_K;
  }
#endif
  GGML_UNUSED(t);
  return nullptr;
}
