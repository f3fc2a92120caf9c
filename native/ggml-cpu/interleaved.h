// Matrix products of quantized weights whose rows are interleaved 8 at a time, for ggml's CPU
// backend: what every weight type's kernel shares (native/ggml-cpu/q*_interleaved.cc). The K-quants
// (Q4_K, Q5_K, Q6_K) take activations in q8_K, blocks of 256; the types of 32-weight blocks (Q4_0,
// Q4_1, Q5_0, Q5_1, Q8_0) in q8_0's blocks of 32, with each block's sum beside it. Compiled
// into each CPU backend of the build with its instruction flags (cmake/arbitra-kernels.cmake) and
// found by repack.cpp through a weak hook (native/patches/ggml-cpu-int8-hook.patch, hook.cc).
//
// Why not llama.cpp's kernels: its x86 repacked kernels (Q4_K, Q4_0) cut a batch into 16-row and
// 4-row groups and move every byte of both operands through shuffles before their integer dot
// products, and in the batch-invariant mode the rows past a multiple of 4 are padded to a group of
// 4 that does the work of 4; Q5_K, Q6_K, Q4_1, Q5_0 and Q8_0 have no x86 repacked kernel and take
// one dot product per output (tinyBLAS's tiles for the last three), each unpacking its weights again
// for every activation row.
// Here 8 weight rows are interleaved 4 bytes at a time, so an activation row's 4 bytes, broadcast,
// meet the 8 rows in one vpmaddubsw with no shuffle (where the backend has VNNI, AVX-512's or
// AVX's, one vpdpbusd, which sums to 32 bits at once), and each activation row takes the same
// instructions whether 1, 4 or 8 are done together: a row's result is the same bits in a batch of any
// width, at any place in it and on any thread count, by construction. The integer sums are exact;
// the float steps per output are the same for every row in every grouping. With AVX-512 VNNI the
// K-quants' rows are interleaved 8 bytes at a time instead, for 64-byte registers (pair_byte):
// other instructions, the same integer sums, the same bits.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "ggml-cpu-impl.h"
#include "quants.h"
#include "repack.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define ARBITRA_INTERLEAVED 1
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
// The K-quants' kernels take 64 bytes a register, 4 vpdpbusd a sub-block and activation row
// where AVX2 and 256-bit VNNI take 8 (the weights in pairs, below).
#define ARBITRA_AVX512 1
#endif
#endif

namespace arbitra::cpu {

// The traits of a weight type these kernels take, or null where this backend's instructions lack
// them (they need AVX2, FMA and F16C). Both are held to the plain layout's product and to the same
// bits in every batch by native/tests/op_invariance_test.cc.
const ggml::cpu::tensor_traits* q4k_interleaved();
const ggml::cpu::tensor_traits* q5k_interleaved();
const ggml::cpu::tensor_traits* q6k_interleaved();
const ggml::cpu::tensor_traits* q40_interleaved();
const ggml::cpu::tensor_traits* q41_interleaved();
const ggml::cpu::tensor_traits* q50_interleaved();
const ggml::cpu::tensor_traits* q51_interleaved();
const ggml::cpu::tensor_traits* q80_interleaved();

constexpr int kRows = 8;  // weight rows interleaved in a block
constexpr int kWide = 8;  // activation rows that share each unpacked weight register, where a tile has them

#ifdef ARBITRA_INTERLEAVED

inline __m256i broadcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm256_set1_epi32(v);
}

// An activation row's 32 bytes q of a sub-block against its 8 rows' unpacked weights (lo: the
// sub-block's weights 0-15, hi: 16-31), as four 16-bit pair sums of two vpmaddubsw each: p[0] and
// p[1] from lo, p[2] and p[3] from hi. A weight below 64 keeps each sum from saturating.
inline void pair_sums(const __m256i* lo, const __m256i* hi, const int8_t* q, __m256i* p) {
  p[0] = _mm256_add_epi16(_mm256_maddubs_epi16(lo[0], broadcast4(q)), _mm256_maddubs_epi16(lo[1], broadcast4(q + 4)));
  p[1] = _mm256_add_epi16(_mm256_maddubs_epi16(lo[2], broadcast4(q + 8)), _mm256_maddubs_epi16(lo[3], broadcast4(q + 12)));
  p[2] = _mm256_add_epi16(_mm256_maddubs_epi16(hi[0], broadcast4(q + 16)), _mm256_maddubs_epi16(hi[1], broadcast4(q + 20)));
  p[3] = _mm256_add_epi16(_mm256_maddubs_epi16(hi[2], broadcast4(q + 24)), _mm256_maddubs_epi16(hi[3], broadcast4(q + 28)));
}

// Where a sub-block's byte for row r and weights 4 t + i and 16 + 4 t + i (t < 4, i < 4) lies in
// its 128 bytes: in quads, [t][r][i], a register of 32 bytes for each t (what vpmaddubsw and the
// 256-bit vpdpbusd take); in pairs, [t / 2][r][t % 2][i], a register of 64 bytes for each two t,
// where row r's 8 bytes meet 8 activation bytes broadcast (the 512-bit vpdpbusd's order).
constexpr int quad_byte(int t, int r, int i) { return 32 * t + 4 * r + i; }
constexpr int pair_byte(int t, int r, int i) { return 64 * (t / 2) + 8 * r + 4 * (t % 2) + i; }
// The kernels' order: pairs where they take 64 bytes a register. (Q8_0's 32 bytes a row and block
// are 8 quads, t < 8, in the same order.)
#ifdef ARBITRA_AVX512
constexpr int weight_byte(int t, int r, int i) { return pair_byte(t, r, i); }
#else
constexpr int weight_byte(int t, int r, int i) { return quad_byte(t, r, i); }
#endif

// Marks the fifth bit of row r's weight 4 t + i of a sub-block of 32 (hi: of 16 + 4 t + i) in its
// 32 bytes f. In quads, byte 4 r + i, bit t (hi: 4 + t), as add_fifth_bits reads them. In pairs,
// as add_fifth_bit_pairs reads them: the byte of 64 that the weight's nibble takes in its
// register, n = 8 r + 4 (t % 2) + i, is nibble n / 32 of byte n % 32, and the weight is its bit
// t / 2 (hi: 2 + t / 2).
inline void set_fifth_bit(uint8_t* f, int t, int r, int i, bool hi) {
#ifdef ARBITRA_AVX512
  const int n = pair_byte(t, r, i) % 64;
  f[n % 32] |= static_cast<uint8_t>(1 << ((hi ? 2 : 0) + t / 2 + 4 * (n / 32)));
#else
  f[4 * r + i] |= static_cast<uint8_t>(1 << ((hi ? 4 : 0) + t));
#endif
}

// The 8 rows' 32 weights of 4 bits in quads: row r's weight 4 t + i in the low nibble and
// 16 + 4 t + i in the high one. Into lo (weights 0-15) and hi (16-31), as pair_sums takes them.
inline void unpack_nibbles(const uint8_t* qs, __m256i* lo, __m256i* hi) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  for (int t = 0; t < 4; t++) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + quad_byte(t, 0, 0)));
    lo[t] = _mm256_and_si256(v, m4);
    hi[t] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
  }
}

// Their fifth bits, fifth[4 r + i]: bit t is that of row r's weight 4 t + i, bit 4 + t that of
// 16 + 4 t + i; each moved to bit 4 of its byte in lo and hi. The mask keeps one bit a byte, so a
// shift of the 16-bit lanes moves no bit across bytes.
inline void add_fifth_bits(const uint8_t* fifth, __m256i* lo, __m256i* hi) {
  const __m256i f = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(fifth));
  for (int t = 0; t < 4; t++) {
    lo[t] = _mm256_or_si256(lo[t], _mm256_slli_epi16(_mm256_and_si256(f, _mm256_set1_epi8(static_cast<char>(1 << t))), 4 - t));
    hi[t] = _mm256_or_si256(hi[t], _mm256_srli_epi16(_mm256_and_si256(f, _mm256_set1_epi8(static_cast<char>(16 << t))), t));
  }
}

#if (defined(__AVX512VNNI__) && defined(__AVX512VL__)) || defined(__AVXVNNI__) || defined(ARBITRA_EMULATE_VNNI)
#define ARBITRA_VNNI 1
// With VNNI a row's sum over a sub-block goes straight to 32 bits, 4 products an instruction, with
// no 16-bit step; its scale then takes one 32-bit multiply. The integer sums are the AVX2 path's,
// exactly, so the products are the same bits on both.
inline __m256i dot4(__m256i acc, __m256i u, __m256i s) {
#if defined(ARBITRA_EMULATE_VNNI)
  // vpdpbusd's exact sums in AVX2, for native/tests/vnni_test.cc on a processor without VNNI: the
  // even and the odd bytes widened to 16 bits (u unsigned, s signed), each pair's products summed
  // by vpmaddwd into 32 bits.
  const __m256i low = _mm256_set1_epi16(0x00FF);
  const __m256i even = _mm256_madd_epi16(_mm256_and_si256(u, low), _mm256_srai_epi16(_mm256_slli_epi16(s, 8), 8));
  const __m256i odd = _mm256_madd_epi16(_mm256_srli_epi16(u, 8), _mm256_srai_epi16(s, 8));
  return _mm256_add_epi32(acc, _mm256_add_epi32(even, odd));
#elif defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpbusd_epi32(acc, u, s);
#else
  return _mm256_dpbusd_avx_epi32(acc, u, s);
#endif
}

// An activation row's 32 bytes q of a sub-block against its 8 rows' unpacked weights (lo, hi as in
// pair_sums): each row's sum over weights 0-15 in sums[0], over 16-31 in sums[1], in 32 bits.
inline void sub_block_dots(const __m256i* lo, const __m256i* hi, const int8_t* q, __m256i* sums) {
  __m256i l = _mm256_setzero_si256(), h = _mm256_setzero_si256();
  for (int t = 0; t < 4; t++) {
    l = dot4(l, lo[t], broadcast4(q + 4 * t));
    h = dot4(h, hi[t], broadcast4(q + 16 + 4 * t));
  }
  sums[0] = l;
  sums[1] = h;
}
#endif

#ifdef ARBITRA_AVX512
// With AVX-512 VNNI a sub-block's 8 rows take 4 vpdpbusd of 64 bytes an activation row, not 8 of
// 32: its weights in pairs (pair_byte), row r's sums in 32-bit lanes 2 r and 2 r + 1 until
// fold_pairs adds them. The integer sums are the other paths', exactly, so the products are the
// same bits.

// An activation row's 8 bytes at p in every 64-bit lane: each row's two lanes get 4 of them.
inline __m512i broadcast8(const void* p) {
  int64_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm512_set1_epi64(v);
}

// The 8 rows' 32 weights of 4 bits in pairs: pairs of t in lo[t / 2] (weights 0-15) and
// hi[t / 2] (16-31).
inline void unpack_nibble_pairs(const uint8_t* qs, __m512i* lo, __m512i* hi) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  for (int h = 0; h < 2; h++) {
    const __m512i v = _mm512_loadu_si512(qs + pair_byte(2 * h, 0, 0));
    lo[h] = _mm512_and_si512(v, m4);
    hi[h] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
  }
}

// Their fifth bits (set_fifth_bit): the 32 bytes of nibbles widened to 64 (nibble n / 32 of byte
// n % 32 to byte n), then bit h of each to bit 4 of lo[h], bit 2 + h to bit 4 of hi[h].
inline void add_fifth_bit_pairs(const uint8_t* fifth, __m512i* lo, __m512i* hi) {
  const __m256i f = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(fifth));
  const __m512i bits = _mm512_inserti64x4(_mm512_castsi256_si512(f), _mm256_srli_epi16(f, 4), 1);
  for (int h = 0; h < 2; h++) {
    lo[h] = _mm512_or_si512(lo[h], _mm512_slli_epi16(_mm512_and_si512(bits, _mm512_set1_epi8(static_cast<char>(1 << h))), 4 - h));
    hi[h] = _mm512_or_si512(hi[h], _mm512_slli_epi16(_mm512_and_si512(bits, _mm512_set1_epi8(static_cast<char>(4 << h))), 2 - h));
  }
}

// An activation row's 16 bytes q against two registers of weights in pairs (16 of each row's
// weights), added to acc: each row's sum in its two lanes (fold_pairs adds them).
inline __m512i pair_dots(__m512i acc, const __m512i* w, const int8_t* q) {
  return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(acc, w[0], broadcast8(q)), w[1], broadcast8(q + 8));
}

// An activation row's 32 bytes q of a sub-block against its 8 rows' weights in pairs: each row's
// sum over the sub-block, in its two lanes.
inline __m512i sub_block_pair_dots(const __m512i* lo, const __m512i* hi, const int8_t* q) {
  return pair_dots(pair_dots(_mm512_setzero_si512(), lo, q), hi, q + 16);
}

// Each row's two lanes added, the 8 rows' sums in order.
inline __m256i fold_pairs(__m512i v) { return _mm512_cvtepi64_epi32(_mm512_add_epi32(v, _mm512_shuffle_epi32(v, _MM_PERM_CDAB))); }

// 8 bytes at p, one a row, each twice: for both of its row's lanes, once widened to 32 bits.
inline __m128i pair_bytes(const void* p) {
  const __m128i b = _mm_loadl_epi64(static_cast<const __m128i*>(p));
  return _mm_unpacklo_epi8(b, b);
}
#endif

// The largest of v's 8 lanes.
inline float largest_lane(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// An activation row of k floats to q8_K, the same bytes as ggml's quantize_row_q8_K_ref, which the
// x86 CPU backend runs scalar. The scale is the value of largest magnitude, the first of equals;
// each value is rounded half to even as the reference's float trick rounds it (vcvtps2dq), and a
// product is rounded before that, never fused into the rounding.
inline void quantize_q8_K(const float* x, block_q8_K* y, int64_t k) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < k / QK_K; b++, x += QK_K) {
    __m256 amax = _mm256_setzero_ps();
    for (int i = 0; i < QK_K; i += 8) amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
    const float top = largest_lane(amax);
    block_q8_K& out = y[b];
    if (top == 0.0f) {
      out.d = 0;
      std::memset(out.qs, 0, sizeof(out.qs));
      std::memset(out.bsums, 0, sizeof(out.bsums));
      continue;
    }
    float max = 0;
    for (int i = 0; i < QK_K; i++) {
      if (std::fabs(x[i]) == top) {
        max = x[i];
        break;
      }
    }
    const float iscale = -127.f / max;
    const __m256 vs = _mm256_set1_ps(iscale);
    // q8_K's order from 32-bit lanes packed within 128-bit halves
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int i = 0; i < QK_K; i += 32) {
      __m256i q[4];
      for (int u = 0; u < 4; u++) q[u] = _mm256_cvtps_epi32(_mm256_mul_ps(vs, _mm256_loadu_ps(x + i + 8 * u)));
      const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.qs + i), _mm256_permutevar8x32_epi32(bytes, order));
    }
    for (int j = 0; j < QK_K / 16; j++) {
      const __m256i v = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(out.qs + 16 * j)));
      __m128i h = _mm_add_epi16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
      h = _mm_hadd_epi16(h, h);
      h = _mm_hadd_epi16(h, h);
      h = _mm_hadd_epi16(h, h);
      out.bsums[j] = static_cast<int16_t>(_mm_extract_epi16(h, 0));
    }
    out.d = 1 / iscale;
  }
}

// q8_K's two sums of 16 of sub-block j (32 weights), side by side in every 32-bit lane.
inline __m256i sub_block_sums(const block_q8_K& y, int j) { return broadcast4(y.bsums + 2 * j); }

// An activation block of 32 for the 32-weight types: q8_0's values and scale, and the values' sum,
// which a weight's offset takes once a block, and that sum times the scale, which a min takes. The
// scale and the scaled sum are rounded to half, as llama.cpp's q8_0 and q8_1 hold them, so that the
// products stay near its own.
struct block_q8_32 {
  float d;
  float s;
  int32_t sum;
  int8_t qs[32];
};

// An activation row of k floats to blocks of 32: the scale is the largest magnitude over 127, each
// value rounded half to even. Not llama.cpp's bytes (its reference rounds half away from zero), and
// it need not be: no kernel of llama.cpp's reads these.
inline void quantize_q8_32(const float* x, block_q8_32* y, int64_t k) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t b = 0; b < k / 32; b++, x += 32) {
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int u = 0; u < 4; u++) {
      v[u] = _mm256_loadu_ps(x + 8 * u);
      amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[u]));
    }
    const float d = largest_lane(amax) / 127.0f;
    const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    __m256i q[4];
    for (int u = 0; u < 4; u++) q[u] = _mm256_cvtps_epi32(_mm256_mul_ps(v[u], id));
    // every value is within ±127, so the packing saturates nothing and the sum is the bytes' sum
    const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs), _mm256_permutevar8x32_epi32(bytes, order));
    const __m256i s = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(1, 0, 3, 2)));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(2, 3, 0, 1)));
    y[b].sum = _mm_cvtsi128_si32(h);
    y[b].d = _cvtsh_ss(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT));
    y[b].s = _cvtsh_ss(_cvtss_sh(static_cast<float>(y[b].sum) * d, _MM_FROUND_TO_NEAREST_INT));
  }
}

// The activation formats: a block type, the weights a block covers (the weights' block too) and
// the quantizer.
struct Q8K {
  using Block = block_q8_K;
  static constexpr int64_t kWeights = QK_K;
  static void quantize(const float* x, Block* y, int64_t k) { quantize_q8_K(x, y, k); }
};
struct Q8Block32 {
  using Block = block_q8_32;
  static constexpr int64_t kWeights = 32;
  static void quantize(const float* x, Block* y, int64_t k) { quantize_q8_32(x, y, k); }
};

// `groups` groups of 8 rows of `nb` ggml blocks each, from `src`, into the interleaved layout at
// `dst`: the repack at load (and native/tests/vnni_test.cc's, on rows of its own).
template <typename Kernel>
void pack_rows(typename Kernel::Block* dst, const typename Kernel::Source* src, int64_t groups, int64_t nb) {
  for (int64_t g = 0; g < groups; g++) {
    for (int64_t b = 0; b < nb; b++) {
      const typename Kernel::Source* rows[kRows];
      for (int r = 0; r < kRows; r++) rows[r] = src + (g * kRows + r) * nb + b;
      Kernel::pack(dst + g * nb + b, rows);
    }
  }
}

// A weight type's kernel: `Source` the ggml block, `Block` the 8 rows' interleaved block (the size
// of the 8 it replaces, so the repacked tensor fits the allocation llama.cpp sized for the
// original), `Activation` the format of the activation rows (Q8K or Q8Block32), `pack` the layout,
// `product<NR>` the 8 rows times NR activation rows.
template <typename Kernel>
class InterleavedTraits : public ggml::cpu::repack::tensor_traits_base {
  static_assert(sizeof(typename Kernel::Block) == kRows * sizeof(typename Kernel::Source), "the interleaved layout must fit the original's allocation");
  using Activation = typename Kernel::Activation;
  using ActivationBlock = typename Activation::Block;
  static constexpr int64_t kWeights = Activation::kWeights;

 public:
  bool work_size(int, const ggml_tensor* op, size_t& size) override {
    if (op->op != GGML_OP_MUL_MAT) return false;
    size = sizeof(ActivationBlock) * static_cast<size_t>(op->src[1]->ne[0] / kWeights * ggml_nrows(op->src[1]));
    return true;
  }

  bool compute_forward(ggml_compute_params* params, ggml_tensor* op) override {
    if (op->op != GGML_OP_MUL_MAT) return false;
    mul_mat(params, op);
    return true;
  }

  int repack(ggml_tensor* t, const void* data, size_t data_size) override {
    GGML_ASSERT(data_size == ggml_nbytes(t));
    pack_rows<Kernel>(static_cast<typename Kernel::Block*>(t->data), static_cast<const typename Kernel::Source*>(data), t->ne[1] / kRows, t->ne[0] / kWeights);
    return 0;
  }

 private:
  // The rows of src1 (all planes) are quantized in wdata, then the product is cut into
  // tiles of activation rows and weight-row groups that the threads take in turn. Tiles decide
  // only which rows are computed together, never how.
  static void mul_mat(ggml_compute_params* params, ggml_tensor* op) {
    const ggml_tensor* w = op->src[0];
    const ggml_tensor* x = op->src[1];
    GGML_ASSERT(x->type == GGML_TYPE_F32 && op->nb[0] == sizeof(float));
    GGML_ASSERT(op->ne[0] == w->ne[1] && x->ne[0] == w->ne[0]);
    const int64_t k = w->ne[0];
    const int64_t nb = k / kWeights;
    const int64_t rows = ggml_nrows(x);
    const size_t row_q8 = sizeof(ActivationBlock) * static_cast<size_t>(nb);
    char* wdata = static_cast<char*>(params->wdata);
    const int64_t ne1 = x->ne[1];
    const int64_t ne2 = x->ne[2];
    const auto offset = [&](const ggml_tensor* t, int64_t i) { return (i % ne1) * t->nb[1] + (i / ne1 % ne2) * t->nb[2] + (i / (ne1 * ne2)) * t->nb[3]; };

    for (int64_t i = params->ith; i < rows; i += params->nth) {
      Activation::quantize(reinterpret_cast<const float*>(static_cast<const char*>(x->data) + offset(x, i)),
                           reinterpret_cast<ActivationBlock*>(wdata + i * row_q8), k);
    }
    if (params->ith == 0) ggml_threadpool_chunk_set(params->threadpool, params->nth);
    ggml_barrier(params->threadpool);

    // Activation rows a tile: as many as keep their quantized rows within half of a 512 KiB L2 while a
    // group's weights stream past them, a multiple of 4 from 4 to 64.
    const int64_t tile_rows = std::clamp<int64_t>((256 * 1024 / static_cast<int64_t>(row_q8)) & ~int64_t{3}, 4, 64);
    const int64_t row_tiles = (rows + tile_rows - 1) / tile_rows;
    const int64_t groups = w->ne[1] / kRows;
    // at least four tiles a thread, so that threads that finish early take the rest
    const int64_t group_tiles = std::min(groups, std::max<int64_t>(1, (4 * params->nth + row_tiles - 1) / row_tiles));
    const int64_t tile_groups = (groups + group_tiles - 1) / group_tiles;
    const auto* weights = static_cast<const typename Kernel::Block*>(w->data);
    const auto out_row = [&](int64_t i, int64_t g) { return reinterpret_cast<float*>(static_cast<char*>(op->data) + offset(op, i)) + g * kRows; };
    const auto q8_row = [&](int64_t i) { return reinterpret_cast<const ActivationBlock*>(wdata + i * row_q8); };

    for (int64_t tile = params->ith; tile < row_tiles * group_tiles; tile = ggml_threadpool_chunk_add(params->threadpool, 1)) {
      const int64_t r0 = tile / group_tiles * tile_rows, r1 = std::min(rows, r0 + tile_rows);
      const int64_t g0 = tile % group_tiles * tile_groups, g1 = std::min(groups, g0 + tile_groups);
      for (int64_t g = g0; g < g1; g++) {
        // NR activation rows from r against group g: every row runs the same instructions whatever NR is
        const auto rows_product = [&](auto width, int64_t r) {
          constexpr int NR = decltype(width)::value;
          const ActivationBlock* y[NR];
          float* out[NR];
          for (int a = 0; a < NR; a++) {
            y[a] = q8_row(r + a);
            out[a] = out_row(r + a, g);
          }
          Kernel::template product<NR>(static_cast<int>(nb), out, weights + g * nb, y);
        };
        int64_t r = r0;
        for (; r + kWide <= r1; r += kWide) rows_product(std::integral_constant<int, kWide>{}, r);
        for (; r + 4 <= r1; r += 4) rows_product(std::integral_constant<int, 4>{}, r);
        for (; r < r1; r++) rows_product(std::integral_constant<int, 1>{}, r);
      }
    }
  }
};

#endif  // ARBITRA_INTERLEAVED

}  // namespace arbitra::cpu
