// The Q4_K and Q5_K kernels of the interleaved products (interleaved.h). Both have a super-block's
// 8 sub-blocks of 32 weights scaled by 6-bit scales and offset by 6-bit mins; Q5_K adds a fifth bit
// to each weight. A row's scale products (per sub-block) and min products (per super-block, in
// pairs of sub-blocks) are integers; per super-block, a scale product and two fused multiply-adds in
// floats; one subtraction at the end.
#include "interleaved.h"

namespace arbitra::cpu {

#ifdef ARBITRA_INTERLEAVED
namespace {

// The fifth bits of Q5_K, in the interleaved layout; none for Q4_K (an empty base takes no room).
template <bool kFifth>
struct FifthBits {
  // fifth[j]: sub-block j's fifth bits, 32 bytes (set_fifth_bit)
  uint8_t fifth[8][32];
};
template <>
struct FifthBits<false> {};

template <typename S, bool kFifth>
struct Q45K {
  using Source = S;
  using Activation = Q8K;

  struct Block : FifthBits<kFifth> {
    ggml_half d[kRows];
    ggml_half dmin[kRows];
    // The 6-bit scales and mins of the 8 sub-blocks, as 128 bytes sm[j][16] (the 8 rows' scales of
    // sub-block j, then their mins) cut in two: the low 4 bits of sm byte i in nibble i / 64 of
    // low[i % 64], its top 2 bits in bits 2 * (i / 32) of high[i % 32]. Unpacking is a few whole-
    // register operations per super-block (unpack_scales).
    uint8_t low[64];
    uint8_t high[32];
    // qs[j][weight_byte(t, r, i)]: the low 4 bits of row r's weight 32 j + 4 t + i (low nibble)
    // and of 32 j + 16 + 4 t + i (high nibble)
    uint8_t qs[8][128];
  };

  static void scale_min(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
    if (j < 4) {
      *d = q[j] & 63;
      *m = q[j + 4] & 63;
    } else {
      *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
      *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
  }

  // Row x's weights in order (llama.cpp's: each 64 take 32 bytes of qs, low nibbles first, and for
  // Q5_K bits 2 c and 2 c + 1 of qh).
  static void weights(const Source& x, uint8_t* w) {
    for (int c = 0; c < 4; c++) {
      for (int l = 0; l < 32; l++) {
        w[64 * c + l] = x.qs[32 * c + l] & 0xF;
        w[64 * c + 32 + l] = x.qs[32 * c + l] >> 4;
        if constexpr (kFifth) {
          w[64 * c + l] |= ((x.qh[l] >> (2 * c)) & 1) << 4;
          w[64 * c + 32 + l] |= ((x.qh[l] >> (2 * c + 1)) & 1) << 4;
        }
      }
    }
  }

  static void pack(Block* out, const Source* const* rows) {
    uint8_t sm[128];
    std::memset(out, 0, sizeof(*out));
    for (int r = 0; r < kRows; r++) {
      const Source& x = *rows[r];
      out->d[r] = x.d;
      out->dmin[r] = x.dmin;
      for (int j = 0; j < 8; j++) scale_min(j, x.scales, &sm[16 * j + r], &sm[16 * j + 8 + r]);
      uint8_t w[QK_K];
      weights(x, w);
      for (int j = 0; j < 8; j++) {
        for (int t = 0; t < 4; t++) {
          for (int i = 0; i < 4; i++) {
            const uint8_t lo = w[32 * j + 4 * t + i], hi = w[32 * j + 16 + 4 * t + i];
            out->qs[j][weight_byte(t, r, i)] = (lo & 0xF) | ((hi & 0xF) << 4);
            if constexpr (kFifth) {
              if (lo >> 4) set_fifth_bit(out->fifth[j], t, r, i, false);
              if (hi >> 4) set_fifth_bit(out->fifth[j], t, r, i, true);
            }
          }
        }
      }
    }
    for (int i = 0; i < 128; i++) {
      out->low[i % 64] |= (sm[i] & 0xF) << (4 * (i / 64));
      out->high[i % 32] |= (sm[i] >> 4) << (2 * (i / 32));
    }
  }

  // The 128 bytes sm[j][16] of pack, into `sm`.
  static void unpack_scales(const Block& x, uint8_t* sm) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i m2 = _mm256_set1_epi8(0x03);
    const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.low));
    const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.low + 32));
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.high));
    const __m256i lows[4] = {_mm256_and_si256(l0, m4), _mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                             _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4)};
    for (int q = 0; q < 4; q++) {
      const __m256i top = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2 * q), m2), 4);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(sm + 32 * q), _mm256_or_si256(lows[q], top));
    }
  }

  // The mins' products once a super-block, not per sub-block: each row's mins of sub-blocks 2 i
  // and 2 i + 1 side by side in its 32-bit lane, against q8_K's sums of those two sub-blocks (each
  // its two sums of 16 added), side by side too. Into imin[a], for a < NR.
  template <int NR>
  static void min_products(const uint8_t* sm, int b, const block_q8_K* const* y, __m256i* imin) {
    __m256i min_pairs[4];
    for (int i = 0; i < 4; i++) {
      const __m128i m0 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sm + 32 * i + 8));
      const __m128i m1 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sm + 32 * i + 24));
      min_pairs[i] = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m0, m1));
    }
    for (int a = 0; a < NR; a++) {
      imin[a] = _mm256_setzero_si256();
      const int16_t* bs = y[a][b].bsums;
      int16_t sums[8];
      for (int j = 0; j < 8; j++) sums[j] = static_cast<int16_t>(bs[2 * j] + bs[2 * j + 1]);
      for (int i = 0; i < 4; i++) imin[a] = _mm256_add_epi32(imin[a], _mm256_madd_epi16(min_pairs[i], broadcast4(sums + 2 * i)));
    }
  }

#ifdef ARBITRA_AVX512
  // Sub-block j's weights in pairs into lo and hi, Q5_K's fifth bits added.
  static void unpack_weights(const Block& x, int j, __m512i* lo, __m512i* hi) {
    unpack_nibble_pairs(x.qs[j], lo, hi);
    if constexpr (kFifth) add_fifth_bit_pairs(x.fifth[j], lo, hi);
  }
#endif

  // out[a][0..7] = the 8 rows of w (nb super-blocks) times activation row y[a], for a < NR. Every
  // row a runs the same instructions on its own registers whatever NR is.
  template <int NR>
  static void product(int nb, float* const* out, const Block* w, const block_q8_K* const* y) {
    __m256 acc[NR], acc_min[NR];
    for (int a = 0; a < NR; a++) {
      acc[a] = _mm256_setzero_ps();
      acc_min[a] = _mm256_setzero_ps();
    }
    alignas(32) uint8_t sm[128];
    for (int b = 0; b < nb; b++) {
      const Block& x = w[b];
      unpack_scales(x, sm);
      __m256i isum[NR], imin[NR];
      min_products<NR>(sm, b, y, imin);
#ifdef ARBITRA_AVX512
      __m512i pair_sum[NR];
      for (int a = 0; a < NR; a++) pair_sum[a] = _mm512_setzero_si512();
      for (int j = 0; j < 8; j++) {
        const __m512i scale = _mm512_cvtepu8_epi32(pair_bytes(sm + 16 * j));
        __m512i lo[2], hi[2];
        unpack_weights(x, j, lo, hi);
        for (int a = 0; a < NR; a++) {
          pair_sum[a] = _mm512_add_epi32(pair_sum[a], _mm512_mullo_epi32(sub_block_pair_dots(lo, hi, y[a][b].qs + 32 * j), scale));
        }
      }
      for (int a = 0; a < NR; a++) isum[a] = fold_pairs(pair_sum[a]);
#else
      for (int a = 0; a < NR; a++) isum[a] = _mm256_setzero_si256();
      for (int j = 0; j < 8; j++) {
        const __m128i s = _mm_load_si128(reinterpret_cast<const __m128i*>(sm + 16 * j));
        // each row's scale: in 32 bits against VNNI's sums, else twice in 16, for the two 16-bit sums
        // a row has in a product below
#ifdef ARBITRA_VNNI
        const __m256i scale = _mm256_cvtepu8_epi32(s);
#else
        const __m256i scale = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(s, s));
#endif
        __m256i lo[4], hi[4];
        unpack_nibbles(x.qs[j], lo, hi);
        if constexpr (kFifth) add_fifth_bits(x.fifth[j], lo, hi);
        for (int a = 0; a < NR; a++) {
#ifdef ARBITRA_VNNI
          __m256i sums[2];
          sub_block_dots(lo, hi, y[a][b].qs + 32 * j, sums);
          isum[a] = _mm256_add_epi32(isum[a], _mm256_mullo_epi32(_mm256_add_epi32(sums[0], sums[1]), scale));
#else
          __m256i p[4];
          pair_sums(lo, hi, y[a][b].qs + 32 * j, p);
          if constexpr (kFifth) {
            // 4 products of at most 2 * 31 * 128 a 16-bit sum: it cannot saturate
            const __m256i lo_sum = _mm256_madd_epi16(_mm256_add_epi16(p[0], p[1]), scale);
            isum[a] = _mm256_add_epi32(isum[a], _mm256_add_epi32(lo_sum, _mm256_madd_epi16(_mm256_add_epi16(p[2], p[3]), scale)));
          } else {
            // 8 products of at most 2 * 15 * 128 a 16-bit sum: it cannot saturate
            const __m256i sum = _mm256_add_epi16(_mm256_add_epi16(p[0], p[1]), _mm256_add_epi16(p[2], p[3]));
            isum[a] = _mm256_add_epi32(isum[a], _mm256_madd_epi16(sum, scale));
          }
#endif
        }
      }
#endif
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.d)));
      const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.dmin)));
      for (int a = 0; a < NR; a++) {
        const __m256 dy = _mm256_set1_ps(y[a][b].d);
        acc[a] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[a]), _mm256_mul_ps(d, dy), acc[a]);
        acc_min[a] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(imin[a]), _mm256_mul_ps(dmin, dy), acc_min[a]);
      }
    }
    for (int a = 0; a < NR; a++) _mm256_storeu_ps(out[a], _mm256_sub_ps(acc[a], acc_min[a]));
  }
};

}  // namespace
#endif  // ARBITRA_INTERLEAVED

// native/tests/vnni_test.cc compiles the kernels alone, without the traits ggml's backend asks for.
#ifndef ARBITRA_KERNELS_ONLY
#ifdef ARBITRA_INTERLEAVED
const ggml::cpu::tensor_traits* q4k_interleaved() {
  static const InterleavedTraits<Q45K<block_q4_K, false>> traits;
  return &traits;
}

const ggml::cpu::tensor_traits* q5k_interleaved() {
  static const InterleavedTraits<Q45K<block_q5_K, true>> traits;
  return &traits;
}
#else
const ggml::cpu::tensor_traits* q4k_interleaved() { return nullptr; }
const ggml::cpu::tensor_traits* q5k_interleaved() { return nullptr; }
#endif
#endif  // ARBITRA_KERNELS_ONLY

}  // namespace arbitra::cpu
