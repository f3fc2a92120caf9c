// The Q6_K kernel of the interleaved products (interleaved.h). llama.cpp has no repacked Q6_K
// product on x86: every output is one dot product, which is batch-invariant but several times
// slower than a product that shares each weight load among activation rows. Q6_K is the other half
// of a Q4_K_M model (ffn_down and attn_v in half the layers, and the output matrix).
//
// A weight is 6 bits unsigned w (llama.cpp's q + 32), so vpmaddubsw takes it as it is and the 32
// comes off once a sub-block of 16: sum s (w - 32) q = sum s w q - 32 sum s bsum, with q8_K's own
// sums of 16. Per sub-block of 32, four scale products a row in integers; one fused multiply-add a
// super-block in floats.
#include <utility>

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
    // ql[j][weight_byte(t, r, i)]: the low 4 bits of row r's weight 32 j + 4 t + i (low nibble)
    // and of 32 j + 16 + 4 t + i (high nibble)
    uint8_t ql[8][128];
    // qh[j]: the top 2 bits of each weight, where top_bits says
    uint8_t qh[8][64];
  };

  // Where the top 2 bits of row r's weight 16 u + 4 t + i of a sub-block lie in its 64 bytes of
  // qh: a byte, and the shift to their place in it. In quads, byte 32 u + 4 r + i, bits 2 t and
  // 2 t + 1: a register of 32 for each u. In pairs, the byte the weight's ql takes in its register
  // of 64 (8 r + 4 (t % 2) + i), bits 2 (2 u + t / 2) and the next.
  static std::pair<int, int> top_bits(int u, int t, int r, int i) {
#ifdef ARBITRA_AVX512
    return {pair_byte(t, r, i) % 64, 2 * (2 * u + t / 2)};
#else
    return {32 * u + 4 * r + i, 2 * t};
#endif
  }

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
            out->ql[j][weight_byte(t, r, i)] = (lo & 0xF) | ((hi & 0xF) << 4);
            const auto [lo_at, lo_shift] = top_bits(0, t, r, i);
            const auto [hi_at, hi_shift] = top_bits(1, t, r, i);
            out->qh[j][lo_at] |= static_cast<uint8_t>((lo >> 4) << lo_shift);
            out->qh[j][hi_at] |= static_cast<uint8_t>((hi >> 4) << hi_shift);
          }
        }
      }
    }
  }

  // Sub-block j's 8 rows of 6-bit weights, in quads (lo, hi as pair_sums takes them).
  static void unpack_quads(const Block& x, int j, __m256i* lo, __m256i* hi) {
    const __m256i m2 = _mm256_set1_epi8(0x03);
    unpack_nibbles(x.ql[j], lo, hi);
    const __m256i h0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qh[j]));
    const __m256i h1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qh[j] + 32));
    for (int t = 0; t < 4; t++) {
      lo[t] = _mm256_or_si256(lo[t], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h0, 2 * t), m2), 4));
      hi[t] = _mm256_or_si256(hi[t], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h1, 2 * t), m2), 4));
    }
  }

#ifdef ARBITRA_AVX512
  // The same in pairs (unpack_nibble_pairs): one register of top bits for all four.
  static void unpack_pairs(const Block& x, int j, __m512i* lo, __m512i* hi) {
    const __m512i m2 = _mm512_set1_epi8(0x03);
    unpack_nibble_pairs(x.ql[j], lo, hi);
    const __m512i h = _mm512_loadu_si512(x.qh[j]);
    for (int p = 0; p < 2; p++) {
      lo[p] = _mm512_or_si512(lo[p], _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(h, 2 * p), m2), 4));
      hi[p] = _mm512_or_si512(hi[p], _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(h, 4 + 2 * p), m2), 4));
    }
  }
#endif

  // out[a][0..7] = the 8 rows of w (nb super-blocks) times activation row y[a], for a < NR. Every
  // row a runs the same instructions on its own registers whatever NR is.
  template <int NR>
  static void product(int nb, float* const* out, const Block* w, const block_q8_K* const* y) {
    __m256 acc[NR];
    for (int a = 0; a < NR; a++) acc[a] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
      const Block& x = w[b];
      __m256i isum[NR], ioffset[NR];
#ifdef ARBITRA_AVX512
      __m512i pair_sum[NR];
      for (int a = 0; a < NR; a++) pair_sum[a] = _mm512_setzero_si512();
#endif
      for (int a = 0; a < NR; a++) {
        isum[a] = _mm256_setzero_si256();
        ioffset[a] = _mm256_setzero_si256();
      }
      for (int j = 0; j < 8; j++) {
        // the rows' scales of sub-blocks 2 j and 2 j + 1 side by side, against q8_K's two sums of 16
        const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales[2 * j]));
        const __m256i scale_pair = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s, _mm_srli_si128(s, 8)));
        for (int a = 0; a < NR; a++) ioffset[a] = _mm256_add_epi32(ioffset[a], _mm256_madd_epi16(sub_block_sums(y[a][b], j), scale_pair));
#ifdef ARBITRA_AVX512
        // each row's scales in both of its lanes
        const __m512i scale_lo = _mm512_cvtepi8_epi32(pair_bytes(x.scales[2 * j]));
        const __m512i scale_hi = _mm512_cvtepi8_epi32(pair_bytes(x.scales[2 * j + 1]));
        __m512i lo[2], hi[2];
        unpack_pairs(x, j, lo, hi);
        for (int a = 0; a < NR; a++) {
          const int8_t* q = y[a][b].qs + 32 * j;
          const __m512i lo_dot = pair_dots(_mm512_setzero_si512(), lo, q);
          const __m512i hi_dot = pair_dots(_mm512_setzero_si512(), hi, q + 16);
          pair_sum[a] = _mm512_add_epi32(pair_sum[a], _mm512_add_epi32(_mm512_mullo_epi32(lo_dot, scale_lo), _mm512_mullo_epi32(hi_dot, scale_hi)));
        }
#else
        // each row's scales: in 32 bits against VNNI's sums, else twice in 16, for the two 16-bit
        // sums a row has in a product below
#ifdef ARBITRA_VNNI
        const __m256i scale_lo = _mm256_cvtepi8_epi32(s);
        const __m256i scale_hi = _mm256_cvtepi8_epi32(_mm_srli_si128(s, 8));
#else
        const __m256i scale_lo = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s, s));
        const __m256i scale_hi = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(s, s));
#endif
        __m256i lo[4], hi[4];
        unpack_quads(x, j, lo, hi);
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
        }
#endif
      }
#ifdef ARBITRA_AVX512
      for (int a = 0; a < NR; a++) isum[a] = fold_pairs(pair_sum[a]);
#endif
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
