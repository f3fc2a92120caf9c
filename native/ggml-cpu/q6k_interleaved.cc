// The Q6_K kernel of the interleaved products (interleaved.h). llama.cpp has no repacked Q6_K
// product on x86: every output is one dot product, which is batch-invariant but several times
// slower than a product that shares each weight load among activation rows. Q6_K is the other half
// of a Q4_K_M model (ffn_down and attn_v in half the layers, and the output matrix).
//
// A weight is 6 bits unsigned w (llama.cpp's q + 32), so vpmaddubsw takes it as it is and the 32
// comes off once a sub-block of 16: sum s (w - 32) q = sum s w q - 32 sum s bsum, with q8_K's own
// sums of 16. Per sub-block of 32, four scale products a row in integers; one fused multiply-add a
// super-block in floats.
#include "interleaved.h"

namespace arbitra::cpu {

#ifdef ARBITRA_INTERLEAVED
namespace {

struct Q6K {
  using Source = block_q6_K;
  using Activation = Q8K;

  struct Block {
    ggml_half d[kRows];
    int8_t scales[QK_K / 16][kRows];  // [sub-block of 16][row]
    // ql[j][t][r][i]: the low 4 bits of row r's weight 32 j + 4 t + i (low nibble) and of
    // 32 j + 16 + 4 t + i (high nibble)
    uint8_t ql[8][4][kRows][4];
    // qh[j][u][r][i]: bits 2 t and 2 t + 1 hold the top 2 bits of row r's weight 32 j + 16 u + 4 t + i
    uint8_t qh[8][2][kRows][4];
  };

  static void pack(Block* out, const Source* const* rows) {
    std::memset(out->qh, 0, sizeof(out->qh));
    for (int r = 0; r < kRows; r++) {
      const Source& x = *rows[r];
      out->d[r] = x.d;
      for (int s = 0; s < QK_K / 16; s++) out->scales[s][r] = x.scales[s];
      // llama.cpp's order: each half of 128 weights takes 64 bytes of ql and 32 of qh
      uint8_t w[QK_K];
      for (int n = 0; n < 2; n++) {
        const uint8_t* ql = x.ql + 64 * n;
        const uint8_t* qh = x.qh + 32 * n;
        for (int l = 0; l < 32; l++) {
          w[128 * n + l] = (ql[l] & 0xF) | ((qh[l] & 3) << 4);
          w[128 * n + l + 32] = (ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4);
          w[128 * n + l + 64] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
          w[128 * n + l + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
        }
      }
      for (int j = 0; j < 8; j++) {
        for (int t = 0; t < 4; t++) {
          for (int i = 0; i < 4; i++) {
            const uint8_t lo = w[32 * j + 4 * t + i], hi = w[32 * j + 16 + 4 * t + i];
            out->ql[j][t][r][i] = (lo & 0xF) | ((hi & 0xF) << 4);
            out->qh[j][0][r][i] |= (lo >> 4) << (2 * t);
            out->qh[j][1][r][i] |= (hi >> 4) << (2 * t);
          }
        }
      }
    }
  }

  // out[a][0..7] = the 8 rows of w (nb super-blocks) times activation row y[a], for a < NR. Every
  // row a runs the same instructions on its own registers whatever NR is.
  template <int NR>
  static void product(int nb, float* const* out, const Block* w, const block_q8_K* const* y) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i m2 = _mm256_set1_epi8(0x03);
    __m256 acc[NR];
    for (int a = 0; a < NR; a++) acc[a] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
      const Block& x = w[b];
      __m256i isum[NR], ioffset[NR];
      for (int a = 0; a < NR; a++) {
        isum[a] = _mm256_setzero_si256();
        ioffset[a] = _mm256_setzero_si256();
      }
      for (int j = 0; j < 8; j++) {
        // the rows' scales of sub-blocks 2 j and 2 j + 1: each twice (the two 16-bit sums a row has
        // in a product below), and side by side (against q8_K's two sums of 16)
        const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales[2 * j]));
#ifdef ARBITRA_VNNI
        const __m256i scale_lo = _mm256_cvtepi8_epi32(s);
        const __m256i scale_hi = _mm256_cvtepi8_epi32(_mm_srli_si128(s, 8));
#else
        const __m256i scale_lo = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s, s));
        const __m256i scale_hi = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(s, s));
#endif
        const __m256i scale_pair = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s, _mm_srli_si128(s, 8)));
        const __m256i h0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qh[j][0]));
        const __m256i h1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qh[j][1]));
        __m256i lo[4], hi[4];
        for (int t = 0; t < 4; t++) {
          const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.ql[j][t]));
          lo[t] = _mm256_or_si256(_mm256_and_si256(v, m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h0, 2 * t), m2), 4));
          hi[t] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h1, 2 * t), m2), 4));
        }
        for (int a = 0; a < NR; a++) {
#ifdef ARBITRA_VNNI
          __m256i sums[2];
          sub_block_dots(lo, hi, y[a][b].qs + 32 * j, sums);
          const __m256i lo_sum = _mm256_mullo_epi32(sums[0], scale_lo);
          const __m256i hi_sum = _mm256_mullo_epi32(sums[1], scale_hi);
#else
          // two products of at most 2 * 63 * 128 a 16-bit sum: it cannot saturate
          __m256i p[4];
          pair_sums(lo, hi, y[a][b].qs + 32 * j, p);
          const __m256i lo_sum = _mm256_add_epi32(_mm256_madd_epi16(p[0], scale_lo), _mm256_madd_epi16(p[1], scale_lo));
          const __m256i hi_sum = _mm256_add_epi32(_mm256_madd_epi16(p[2], scale_hi), _mm256_madd_epi16(p[3], scale_hi));
#endif
          isum[a] = _mm256_add_epi32(isum[a], _mm256_add_epi32(lo_sum, hi_sum));
          ioffset[a] = _mm256_add_epi32(ioffset[a], _mm256_madd_epi16(sub_block_sums(y[a][b], j), scale_pair));
        }
      }
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.d)));
      for (int a = 0; a < NR; a++) {
        const __m256i total = _mm256_sub_epi32(isum[a], _mm256_slli_epi32(ioffset[a], 5));
        acc[a] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total), _mm256_mul_ps(d, _mm256_set1_ps(y[a][b].d)), acc[a]);
      }
    }
    for (int a = 0; a < NR; a++) _mm256_storeu_ps(out[a], acc[a]);
  }
};

}  // namespace
#endif  // ARBITRA_INTERLEAVED

// native/tests/vnni_test.cc compiles the kernels alone, without the traits ggml's backend asks for.
#ifndef ARBITRA_KERNELS_ONLY
#ifdef ARBITRA_INTERLEAVED
const ggml::cpu::tensor_traits* q6k_interleaved() {
  static const InterleavedTraits<Q6K> traits;
  return &traits;
}
#else
const ggml::cpu::tensor_traits* q6k_interleaved() { return nullptr; }
#endif
#endif  // ARBITRA_KERNELS_ONLY

}  // namespace arbitra::cpu
