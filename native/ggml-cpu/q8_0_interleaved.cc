// The Q8_0 kernel of the interleaved products (interleaved.h): blocks of 32 signed 8-bit weights,
// each block with its scale. A Q8_0 model, and in a Q4_K_M model of short rows (Gemma 3 270M's) the
// output matrix and the tensors llama.cpp would have given Q6_K.
//
// vpmaddubsw wants one operand unsigned. On AVX2 the weight's magnitude is that one and its sign
// goes to the activation (vpsignb), a pair's sum at most 2 * 128 * 127, which cannot saturate. With
// VNNI the repacked weights are stored 128 higher, unsigned, and vpdpbusd sums them against the
// activation into 32 bits; 128 times the activation block's sum comes off once a block. Both sums are
// the same integers, so both paths give the same bits.
#include "interleaved.h"

namespace arbitra::cpu {

#ifdef ARBITRA_INTERLEAVED
namespace {

struct Q80 {
  using Source = block_q8_0;
  using Activation = Q8Block32;

  struct Block {
    ggml_half d[kRows];
    // qs[weight_byte(t, r, i)], t < 8: row r's weight 4 t + i (with VNNI, plus 128, as an unsigned
    // byte)
    int8_t qs[256];
  };

  static void pack(Block* out, const Source* const* rows) {
    for (int r = 0; r < kRows; r++) {
      const Source& x = *rows[r];
      out->d[r] = x.d;
      for (int t = 0; t < 8; t++) {
        for (int i = 0; i < 4; i++) {
#ifdef ARBITRA_VNNI
          out->qs[weight_byte(t, r, i)] = static_cast<int8_t>(static_cast<uint8_t>(x.qs[4 * t + i]) ^ 0x80);
#else
          out->qs[weight_byte(t, r, i)] = x.qs[4 * t + i];
#endif
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
      __m256i isum[NR];
      for (int a = 0; a < NR; a++) isum[a] = _mm256_setzero_si256();
#ifdef ARBITRA_AVX512
      // in pairs: 4 registers of 64 bytes, a block of 32 weights as a sub-block's lo and hi
      __m512i v[4];
      for (int h = 0; h < 4; h++) v[h] = _mm512_loadu_si512(x.qs + pair_byte(2 * h, 0, 0));
      for (int a = 0; a < NR; a++) isum[a] = fold_pairs(sub_block_pair_dots(v, v + 2, y[a][b].qs));
#else
      for (int t = 0; t < 8; t++) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + quad_byte(t, 0, 0)));
#ifdef ARBITRA_VNNI
        for (int a = 0; a < NR; a++) isum[a] = dot4(isum[a], v, broadcast4(y[a][b].qs + 4 * t));
#else
        const __m256i magnitude = _mm256_abs_epi8(v);
        for (int a = 0; a < NR; a++) {
          const __m256i signed_x = _mm256_sign_epi8(broadcast4(y[a][b].qs + 4 * t), v);
          isum[a] = _mm256_add_epi32(isum[a], _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude, signed_x), ones));
        }
#endif
      }
#endif
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.d)));
      for (int a = 0; a < NR; a++) {
        const block_q8_32& ya = y[a][b];
#ifdef ARBITRA_VNNI
        isum[a] = _mm256_sub_epi32(isum[a], _mm256_set1_epi32(128 * ya.sum));
#endif
        acc[a] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[a]), _mm256_mul_ps(d, _mm256_set1_ps(ya.d)), acc[a]);
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
const ggml::cpu::tensor_traits* q80_interleaved() {
  static const InterleavedTraits<Q80> traits;
  return &traits;
}
#else
const ggml::cpu::tensor_traits* q80_interleaved() { return nullptr; }
#endif
#endif  // ARBITRA_KERNELS_ONLY

}  // namespace arbitra::cpu
