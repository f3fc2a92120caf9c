// The Q4_0, Q4_1, Q5_0 and Q5_1 kernels of the interleaved products (interleaved.h): blocks of 32
// weights of 4 bits (5 with the fifth bits of Q5_0 and Q5_1), each block with its scale, and either
// an offset (8 or 16: the weight is w - 8 or w - 16) or a min of its own (w d + m). Q5_0 and Q8_0
// are what llama.cpp quantizes a tensor to where its rows are too short for K-quants' blocks of
// 256 (a 640-wide model: Gemma 3 270M's attention and feed-forward inputs).
//
// The weights are unsigned, so vpmaddubsw takes them as they are; the offset comes off once a block
// with the activation block's own sum, and a min goes on once a block in floats.
#include "interleaved.h"

namespace arbitra::cpu {

#ifdef ARBITRA_INTERLEAVED
namespace {

// The fifth bits of Q5_0 and Q5_1, in the interleaved layout; none for Q4_0 and Q4_1 (an empty
// base takes no room).
template <bool kFifth>
struct FifthBits32 {
  // the block's fifth bits (set_fifth_bit)
  uint8_t fifth[32];
};
template <>
struct FifthBits32<false> {};

// The mins of Q4_1 and Q5_1; none for Q4_0 and Q5_0.
template <bool kMin>
struct Mins {
  ggml_half m[kRows];
};
template <>
struct Mins<false> {};

template <typename S, bool kFifth, bool kMin>
struct Q45 {
  using Source = S;
  using Activation = Q8Block32;
  // Without a min the weight is w - kOffset.
  static constexpr int kOffset = kFifth ? 16 : 8;

  struct Block : FifthBits32<kFifth>, Mins<kMin> {
    ggml_half d[kRows];
    // qs[weight_byte(t, r, i)]: row r's weight 4 t + i (low nibble) and 16 + 4 t + i (high
    // nibble), llama.cpp's own pairing
    uint8_t qs[128];
  };

  static void pack(Block* out, const Source* const* rows) {
    std::memset(out, 0, sizeof(*out));
    for (int r = 0; r < kRows; r++) {
      const Source& x = *rows[r];
      out->d[r] = x.d;
      if constexpr (kMin) out->m[r] = x.m;
      for (int t = 0; t < 4; t++) {
        for (int i = 0; i < 4; i++) out->qs[weight_byte(t, r, i)] = x.qs[4 * t + i];
      }
      if constexpr (kFifth) {
        uint32_t qh;
        std::memcpy(&qh, x.qh, sizeof(qh));
        for (int t = 0; t < 4; t++) {
          for (int i = 0; i < 4; i++) {
            const int lo = 4 * t + i;
            if ((qh >> lo) & 1) set_fifth_bit(out->fifth, t, r, i, false);
            if ((qh >> (lo + 16)) & 1) set_fifth_bit(out->fifth, t, r, i, true);
          }
        }
      }
    }
  }

  // out[a][0..7] = the 8 rows of w (nb blocks) times activation row y[a], for a < NR. Every row a
  // runs the same instructions on its own registers whatever NR is.
  template <int NR>
  static void product(int nb, float* const* out, const Block* w, const block_q8_32* const* y) {
#ifndef ARBITRA_VNNI
    const __m256i ones = _mm256_set1_epi16(1);
#endif
    __m256 acc[NR];
    for (int a = 0; a < NR; a++) acc[a] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
      const Block& x = w[b];
#ifdef ARBITRA_AVX512
      __m512i lo[2], hi[2];
      unpack_nibble_pairs(x.qs, lo, hi);
      if constexpr (kFifth) add_fifth_bit_pairs(x.fifth, lo, hi);
#else
      __m256i lo[4], hi[4];
      unpack_nibbles(x.qs, lo, hi);
      if constexpr (kFifth) add_fifth_bits(x.fifth, lo, hi);
#endif
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.d)));
      __m256 m = _mm256_setzero_ps();
      if constexpr (kMin) m = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.m)));
      for (int a = 0; a < NR; a++) {
        const block_q8_32& ya = y[a][b];
#if defined(ARBITRA_AVX512)
        __m256i isum = fold_pairs(sub_block_pair_dots(lo, hi, ya.qs));
#elif defined(ARBITRA_VNNI)
        __m256i sums[2];
        sub_block_dots(lo, hi, ya.qs, sums);
        __m256i isum = _mm256_add_epi32(sums[0], sums[1]);
#else
        __m256i p[4];
        pair_sums(lo, hi, ya.qs, p);
        __m256i isum;
        if constexpr (kFifth) {
          // 4 products of at most 31 * 127 a 16-bit sum: it cannot saturate
          isum = _mm256_add_epi32(_mm256_madd_epi16(_mm256_add_epi16(p[0], p[1]), ones), _mm256_madd_epi16(_mm256_add_epi16(p[2], p[3]), ones));
        } else {
          // 8 products of at most 15 * 127 a 16-bit sum: it cannot saturate
          isum = _mm256_madd_epi16(_mm256_add_epi16(_mm256_add_epi16(p[0], p[1]), _mm256_add_epi16(p[2], p[3])), ones);
        }
#endif
        if constexpr (!kMin) isum = _mm256_sub_epi32(isum, _mm256_set1_epi32(kOffset * ya.sum));
        const __m256 dy = _mm256_set1_ps(ya.d);
        acc[a] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(d, dy), acc[a]);
        if constexpr (kMin) acc[a] = _mm256_fmadd_ps(m, _mm256_set1_ps(ya.s), acc[a]);
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
const ggml::cpu::tensor_traits* q40_interleaved() {
  static const InterleavedTraits<Q45<block_q4_0, false, false>> traits;
  return &traits;
}

const ggml::cpu::tensor_traits* q41_interleaved() {
  static const InterleavedTraits<Q45<block_q4_1, false, true>> traits;
  return &traits;
}

const ggml::cpu::tensor_traits* q50_interleaved() {
  static const InterleavedTraits<Q45<block_q5_0, true, false>> traits;
  return &traits;
}

const ggml::cpu::tensor_traits* q51_interleaved() {
  static const InterleavedTraits<Q45<block_q5_1, true, true>> traits;
  return &traits;
}
#else
const ggml::cpu::tensor_traits* q40_interleaved() { return nullptr; }
const ggml::cpu::tensor_traits* q41_interleaved() { return nullptr; }
const ggml::cpu::tensor_traits* q50_interleaved() { return nullptr; }
const ggml::cpu::tensor_traits* q51_interleaved() { return nullptr; }
#endif
#endif  // ARBITRA_KERNELS_ONLY

}  // namespace arbitra::cpu
