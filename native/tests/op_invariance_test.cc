// Batch invariance of single ops on a ggml backend, with no model: a matrix product of each weight
// type the catalogue serves, and flash attention over a KV cache, must give a row the same bits
// whatever else the op computes beside it. A product's rows in batches of every width, cut from one
// pool of rows at its start, middle and end, each held to the same row in the pool's own batch
// (which spans several tiles in M, N and K: several row groups, column blocks and K blocks), the
// narrowest batch being a row alone; an attention row alone and beside other sequences' rows, with
// its cells contiguous, in the gathered layout's chunks, or interleaved among other sequences' cells
// in another order, and with the cache cut at different lengths; each on 1 and 3 threads, and on
// more threads than the machine has cores, where threads waiting in ggml's barrier sleep and must
// be woken (native/patches/ggml-cpu-barrier-sleep.patch): a lost wake-up hangs the test, an early
// one changes the bits. These are the properties the engine's determinism promise rests on, held
// where they are made, below llama.cpp's graph. Attention's rows are also held to a
// double-precision reference, which a kernel wrong the same way in every layout would fail, and a
// product on a repacked layout (the CPU's, whose kernels for these types are the engine's own, native/ggml-cpu)
// to the plain layout's product, to rounding.
//
// Each test is tagged with the backends it is required of: [every backend] for what the promise
// needs of any backend's exact kernels (quantized products; attention over cells in position order,
// the layouts the engine gives a GPU), [CPU only] for what only the CPU's exact kernels hold (an F16
// product, which CUDA leaves to its stock kernels by design; attention over cells in any order,
// interleaved or in a ring, which the CPU kernel gathers by position and CUDA's reduces in cell
// order). On the CPU backend every test is required; on a GPU backend the [CPU only] ones are
// reported, not required. Each backend's section starts "# backend <name> (<type> device)".
//
// Run by test/engine/native-ops.test.ts on the CPU backend with its batch-invariant kernels, at a
// multi-tile size that fits the suite; `--backend all` adds every other backend the build has
// (CUDA), and `--large` runs their products at K 4,096, N 2,048 and batches of 1 to 512 rows (the
// device call, scripts/gpu-bench.sh, passes both; the CPU keeps the suite's size, where that takes
// minutes); `--required` leaves out a GPU's [CPU only] tests (the device call passes it: on an
// H200 CUDA's F16 product, under CUDA graphs, stopped the program with an illegal instruction,
// stock kernels too); `--stock` runs every backend's stock kernels, reported only.
// Prints one line per test, and "<n> failure(s)" last: the failed checks of required tests, which
// make the exit status non-zero.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "cpu_products.h"
#include "cpu_variant.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"

namespace {

using arbitra::testing::check;
using arbitra::testing::current;
using arbitra::testing::failures;

std::vector<float> randoms(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> out(n);
  for (float& x : out) x = d(rng);
  return out;
}

// The backends a test is required of (the tag on its result line); the header says why.
enum class Scope { kEveryBackend, kCpuOnly };

const char* tag(Scope s) { return s == Scope::kEveryBackend ? "[every backend]" : "[CPU only]"; }

// The backend under test, with the thread count its CPU variant runs at.
struct Backend {
  ggml_backend_t backend = nullptr;
  ggml_backend_dev_t dev = nullptr;
  bool cpu = false;
  void threads(int n) const {
    if (cpu) proc<ggml_backend_set_n_threads_t>("ggml_backend_set_n_threads")(backend, n);
  }
  // The CPU backend's own functions, looked up: in a variants build it is a module loaded at run time.
  template <typename Fn>
  Fn proc(const char* name) const {
    auto fn = reinterpret_cast<Fn>(ggml_backend_reg_get_proc_address(ggml_backend_dev_backend_reg(dev), name));
    if (fn == nullptr) {
      std::fprintf(stderr, "the CPU backend has no %s\n", name);
      std::exit(2);
    }
    return fn;
  }
};

// The thread counts each case runs on: on the CPU one, a few, and twice the cores and one more; a
// GPU backend has no such setting, and runs each case once.
std::vector<int> thread_counts(const Backend& b) {
  if (!b.cpu) return {1};
  return {1, 3, 2 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency())) + 1};
}

// One graph's inputs, output and buffer: inputs are copied in after allocation, the output read back.
class Graph {
 public:
  Graph() : ctx_(ggml_init({ggml_tensor_overhead() * 64 + ggml_graph_overhead(), nullptr, true})) {}
  ~Graph() { ggml_free(ctx_); }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ggml_context* ctx() { return ctx_; }

  ggml_tensor* input(ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2, const void* data, size_t bytes) {
    ggml_tensor* t = ggml_new_tensor_3d(ctx_, type, ne0, ne1, ne2);
    ggml_set_input(t);
    inputs_.emplace_back(t, std::vector<uint8_t>(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + bytes));
    return t;
  }

  std::vector<float> run(const Backend& b, ggml_tensor* out) {
    ggml_cgraph* gf = ggml_new_graph(ctx_);
    ggml_build_forward_expand(gf, out);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx_, b.backend);
    for (auto& [t, data] : inputs_) ggml_backend_tensor_set(t, data.data(), 0, data.size());
    check(ggml_backend_graph_compute(b.backend, gf) == GGML_STATUS_SUCCESS, "the graph computes");
    std::vector<float> r(static_cast<size_t>(ggml_nelements(out)));
    ggml_backend_tensor_get(out, r.data(), 0, r.size() * sizeof(float));
    ggml_backend_buffer_free(buf);
    return r;
  }

 private:
  ggml_context* ctx_;
  std::vector<std::pair<ggml_tensor*, std::vector<uint8_t>>> inputs_;
};

bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

float largest_difference(const float* a, const float* b, size_t n) {
  float worst = 0.0f;
  for (size_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

// ---- matrix products ----

// A product's size: K and N of the weight, and the batch widths tried, the widest being the pool of
// rows every batch is cut from.
struct Shape {
  int64_t k;
  int64_t n;
  std::vector<int64_t> widths;
};

// The suite's size (test/engine/native-ops.test.ts, 2 cores): eight K-quant super-blocks per row,
// so the reduction has an order to keep across K blocks; N a multiple of every repacked layout's
// rows, in several column blocks per thread; batches past the CPU's 4-row groups and llamafile's
// tiles, up to 130 rows.
const Shape kSuite = {2048, 512, {1, 2, 3, 4, 5, 7, 8, 9, 16, 31, 64, 65, 127, 130}};
// --large (the device call): several of CUDA's tiles in every dimension (MMQ's 128-row weight tiles
// in N, its K iterations of 256, and its batch tiles of up to 128 columns in M), the seams of each
// crossed by batches one wider and one narrower than a tile.
const Shape kLarge = {4096, 2048, {1, 2, 3, 4, 7, 8, 9, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 383, 511, 512}};

// The buffer type llama.cpp would put this weight in on this backend: the CPU's repacked layout
// where it takes the type (the engine's weights are repacked), else the backend's own.
ggml_backend_buffer_type_t weight_buffer_type(const Backend& b, ggml_tensor* w) {
  ggml_backend_buffer_type_t repacked = b.cpu ? arbitra::cpu_repacked_buffer_type(b.dev, w) : nullptr;
  return repacked != nullptr ? repacked : ggml_backend_get_default_buffer_type(b.backend);
}

struct Weight {
  ggml_context* ctx = nullptr;
  ggml_backend_buffer_t buf = nullptr;
  ggml_tensor* t = nullptr;
  std::string where;
  ~Weight() {
    if (buf) ggml_backend_buffer_free(buf);
    if (ctx) ggml_free(ctx);
  }
};

// `plain`: in the backend's own buffer type, never repacked.
void make_weight(const Backend& b, ggml_type type, const Shape& s, Weight* w, bool plain = false) {
  w->ctx = ggml_init({ggml_tensor_overhead() * 2, nullptr, true});
  w->t = ggml_new_tensor_2d(w->ctx, type, s.k, s.n);
  ggml_backend_buffer_type_t buft = plain ? ggml_backend_get_default_buffer_type(b.backend) : weight_buffer_type(b, w->t);
  w->where = ggml_backend_buft_name(buft);
  w->buf = ggml_backend_alloc_ctx_tensors_from_buft(w->ctx, buft);
  const std::vector<float> f = randoms(static_cast<size_t>(s.k * s.n), 7 + static_cast<uint32_t>(type));
  std::vector<uint8_t> data(ggml_row_size(type, s.k) * static_cast<size_t>(s.n));
  ggml_quantize_init(type);
  ggml_quantize_chunk(type, f.data(), data.data(), 0, s.n, s.k, nullptr);
  ggml_backend_tensor_set(w->t, data.data(), 0, data.size());
}

// The product of the weight with rows [from, from + width) of the pool: width output rows of N.
std::vector<float> product(const Backend& b, const Weight& w, const std::vector<float>& pool, int64_t from, int64_t width) {
  const int64_t k = w.t->ne[0];
  Graph g;
  ggml_tensor* in = g.input(GGML_TYPE_F32, k, width, 1, pool.data() + from * k, static_cast<size_t>(k * width) * sizeof(float));
  return g.run(b, ggml_mul_mat(g.ctx(), w.t, in));
}

// The products of the CUDA backend's exact kernels (native/patches/ggml-cuda-batch-invariant.patch)
// are batch-invariant for the quantized types MMQ takes; F16 weights keep its stock kernels, chosen by
// batch width.
Scope product_scope(ggml_type type) { return ggml_is_quantized(type) ? Scope::kEveryBackend : Scope::kCpuOnly; }

std::string product_name(ggml_type type, const Shape& s, const std::string& where) {
  return std::string("a ") + ggml_type_name(type) + " product's row is the same in every batch (K " + std::to_string(s.k) + ", N " + std::to_string(s.n) +
         ", 1 to " + std::to_string(s.widths.back()) + " rows; " + where + ")";
}

void test_product(const Backend& b, ggml_type type, const Shape& s) {
  Weight w;
  make_weight(b, type, s, &w);
  current = product_name(type, s, w.where);
  const int64_t most = s.widths.back();
  const std::vector<float> pool = randoms(static_cast<size_t>(s.k * most), 99 + static_cast<uint32_t>(type));
  b.threads(2);
  const std::vector<float> whole = product(b, w, pool, 0, most);
  const size_t row = static_cast<size_t>(s.n);
  float worst = 0.0f;
  int64_t compared = 0;
  for (int threads : thread_counts(b)) {
    b.threads(threads);
    for (int64_t width : s.widths) {
      // The batch at the pool's start, middle and end: every row of it at another place in its tiles
      // than in the pool's batch.
      std::vector<int64_t> starts = {0, (most - width) / 2, most - width};
      starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
      for (int64_t from : starts) {
        const std::vector<float> y = product(b, w, pool, from, width);
        const float* want = whole.data() + static_cast<size_t>(from) * row;
        compared += width;
        if (same_bits(want, y.data(), y.size())) continue;
        worst = std::max(worst, largest_difference(want, y.data(), y.size()));
        for (int64_t r = 0; r < width; ++r) {
          if (same_bits(want + r * s.n, y.data() + r * s.n, row)) continue;
          check(false, "row " + std::to_string(r) + " of " + std::to_string(width) + " (pool row " + std::to_string(from + r) + ") on " +
                           std::to_string(threads) + " threads differs from the same row in a batch of " + std::to_string(most));
          break;
        }
      }
    }
  }
  std::printf("# %s: %lld rows compared, largest difference %g\n", current.c_str(), static_cast<long long>(compared), static_cast<double>(worst));
}

bool repacked(const Backend& b, ggml_type type, const Shape& s) {
  if (!b.cpu) return false;
  ggml_context* probe = ggml_init({ggml_tensor_overhead(), nullptr, true});
  const bool is = weight_buffer_type(b, ggml_new_tensor_2d(probe, type, s.k, s.n)) != ggml_backend_get_default_buffer_type(b.backend);
  ggml_free(probe);
  return is;
}

// A repacked layout's product is the plain layout's (llama.cpp's dot products on the original
// blocks) to rounding: a kernel that gives a row the same bits in every batch may still compute the
// wrong function, and on the CPU the repacked kernels are the engine's own code (native/ggml-cpu).
// Integer sums are exact in both; what differs is the order of a few float steps a super-block.
void test_repacked_agrees(const Backend& b, ggml_type type, const Shape& s) {
  Weight packed, plain;
  make_weight(b, type, s, &packed);
  make_weight(b, type, s, &plain, true);
  current = std::string("a ") + ggml_type_name(type) + " product on " + packed.where + " is the plain layout's to rounding (K " + std::to_string(s.k) + ", N " +
            std::to_string(s.n) + ")";
  const std::vector<float> pool = randoms(static_cast<size_t>(s.k * 9), 5 + static_cast<uint32_t>(type));
  float worst = 0.0f, largest = 0.0f;
  for (int64_t width : {int64_t{1}, int64_t{9}}) {
    const std::vector<float> want = product(b, plain, pool, 0, width);
    const std::vector<float> got = product(b, packed, pool, 0, width);
    for (float v : want) largest = std::max(largest, std::fabs(v));
    worst = std::max(worst, largest_difference(want.data(), got.data(), want.size()));
  }
  // float rounding moves a sum of K products by about 1e-6 of its scale; a wrong weight, by its whole
  check(worst <= 1e-4f * largest, "largest difference " + std::to_string(worst) + " against values up to " + std::to_string(largest));
  std::printf("# %s: largest difference %g against values up to %g\n", current.c_str(), static_cast<double>(worst), static_cast<double>(largest));
}

// The engine's own products (native/ggml-cpu) take the K-quants and the types of 32-weight blocks
// wherever the CPU backend was built with the instructions they need: a build that left their hook
// out (a static archive answers only strong references, and repack.cpp's is weak) would run
// llama.cpp's kernels without a word. llama.cpp repacks only Q4_K and Q4_0 of these on x86, so the
// others show whose kernels run.
const ggml_type kOwnTypes[] = {GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0};

void test_own_products(const Backend& b, const Shape& s) {
  current = "the engine's own Q4_K, Q5_K, Q6_K, Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 products take those weights where the backend has AVX2, FMA and F16C";
  const auto features = b.proc<ggml_backend_get_features_t>("ggml_backend_get_features")(ggml_backend_dev_backend_reg(b.dev));
  int needed = 0;
  for (const ggml_backend_feature* f = features; f->name != nullptr; ++f) {
    for (const char* want : {"AVX2", "FMA", "F16C"}) needed += std::strcmp(f->name, want) == 0 && std::strcmp(f->value, "1") == 0;
  }
  const char* setting = std::getenv("ARBITRA_INT8_KERNELS");
  if (needed < 3 || (setting != nullptr && std::strcmp(setting, "off") == 0)) {
    std::printf("# %s: not expected here (%s)\n", current.c_str(), needed < 3 ? "the backend lacks one of them" : "ARBITRA_INT8_KERNELS=off");
    return;
  }
  for (ggml_type t : kOwnTypes) {
    check(repacked(b, t, s), std::string(ggml_type_name(t)) + " weights stay in the backend's own layout, on llama.cpp's kernels");
  }
}

// ---- attention ----

constexpr int64_t kD = 64;  // head size
// Five query heads per KV head: the CPU's exact kernel takes a KV head's query heads together, in
// blocks that shrink when the rows are too few for the threads, and five heads split unevenly.
constexpr int64_t kHeads = 10;   // query heads
constexpr int64_t kKvHeads = 2;  // KV heads (grouped-query attention)
constexpr int kProbeLen = 150;   // the probe sequence's tokens; its last rows are the queries
constexpr int kProbeRows = 5;
// llama.cpp pads every KV length to this, and CUDA's batch-invariant attention, which packs a KV
// head's query heads by the model alone, takes only padded lengths (ggml-cuda/fattn-gqa.h).
constexpr size_t kKvPadding = 256;

// A token's key, value and query, a function of its sequence and position alone, so that every
// layout of the cache holds the same values for the same token.
std::vector<float> vec_of(int seq, int pos, int what, int64_t n) {
  return randoms(static_cast<size_t>(n), static_cast<uint32_t>(seq * 1000003 + pos * 7 + what));
}

struct Cell {
  int seq = -1;  // -1: empty
  int pos = 0;
};

struct Query {
  int seq;
  int pos;
};

// Whether `query` sees `cell`: causal within its sequence and, with a `window`, limited to its last
// `window` positions.
bool sees(const Query& query, const Cell& cell, int window) {
  return cell.seq == query.seq && cell.pos <= query.pos && (window == 0 || query.pos - cell.pos < window);
}

// The indices of sequence 0's queries (the probe's) in position order, wherever they sit in the batch.
std::vector<size_t> probe_indices(const std::vector<Query>& queries) {
  std::vector<size_t> rows;
  for (size_t i = 0; i < queries.size(); ++i) {
    if (queries[i].seq == 0) rows.push_back(i);
  }
  std::sort(rows.begin(), rows.end(), [&queries](size_t a, size_t b) { return queries[a].pos < queries[b].pos; });
  return rows;
}

// Attention of `queries` over `cells` (positions from each cell), each query seeing the cells that
// `sees` says; the output rows of the queries of sequence 0.
std::vector<float> attend(const Backend& b, const std::vector<Cell>& used, const std::vector<Query>& queries, int window = 0) {
  std::vector<Cell> cells = used;
  cells.resize((cells.size() + kKvPadding - 1) / kKvPadding * kKvPadding);  // empty cells, which no row sees
  const int64_t n_kv = static_cast<int64_t>(cells.size());
  const int64_t n_q = static_cast<int64_t>(queries.size());
  std::vector<ggml_fp16_t> k(static_cast<size_t>(kD * n_kv * kKvHeads)), v(k.size());
  std::vector<int32_t> pos(static_cast<size_t>(n_kv));
  for (int64_t c = 0; c < n_kv; ++c) {
    pos[static_cast<size_t>(c)] = cells[static_cast<size_t>(c)].seq < 0 ? -1 : cells[static_cast<size_t>(c)].pos;
    for (int64_t h = 0; h < kKvHeads; ++h) {
      const Cell& cell = cells[static_cast<size_t>(c)];
      const std::vector<float> kv = cell.seq < 0 ? std::vector<float>(2 * kD, 0.0f) : vec_of(cell.seq, cell.pos, static_cast<int>(h), 2 * kD);
      ggml_fp32_to_fp16_row(kv.data(), &k[static_cast<size_t>((h * n_kv + c) * kD)], kD);
      ggml_fp32_to_fp16_row(kv.data() + kD, &v[static_cast<size_t>((h * n_kv + c) * kD)], kD);
    }
  }
  std::vector<float> q(static_cast<size_t>(kD * n_q * kHeads));
  std::vector<ggml_fp16_t> mask(static_cast<size_t>(n_kv * n_q));
  for (int64_t i = 0; i < n_q; ++i) {
    const Query& qi = queries[static_cast<size_t>(i)];
    for (int64_t h = 0; h < kHeads; ++h) {
      const std::vector<float> qv = vec_of(qi.seq, qi.pos, 100 + static_cast<int>(h), kD);
      std::copy(qv.begin(), qv.end(), q.begin() + (h * n_q + i) * kD);
    }
    for (int64_t c = 0; c < n_kv; ++c) {
      const Cell& cell = cells[static_cast<size_t>(c)];
      mask[static_cast<size_t>(i * n_kv + c)] = ggml_fp32_to_fp16(sees(qi, cell, window) ? 0.0f : -INFINITY);
    }
  }
  Graph g;
  ggml_tensor* tq = g.input(GGML_TYPE_F32, kD, n_q, kHeads, q.data(), q.size() * sizeof(float));
  ggml_tensor* tk = g.input(GGML_TYPE_F16, kD, n_kv, kKvHeads, k.data(), k.size() * sizeof(ggml_fp16_t));
  ggml_tensor* tv = g.input(GGML_TYPE_F16, kD, n_kv, kKvHeads, v.data(), v.size() * sizeof(ggml_fp16_t));
  ggml_tensor* tm = g.input(GGML_TYPE_F16, n_kv, n_q, 1, mask.data(), mask.size() * sizeof(ggml_fp16_t));
  ggml_tensor* tp = g.input(GGML_TYPE_I32, n_kv, 1, 1, pos.data(), pos.size() * sizeof(int32_t));
  ggml_tensor* out = ggml_flash_attn_ext(g.ctx(), tq, tk, tv, tm, 1.0f / std::sqrt(static_cast<float>(kD)), 0.0f, 0.0f);
  ggml_flash_attn_ext_set_kv_pos(out, tp);
  const std::vector<float> r = g.run(b, out);  // [kD, kHeads, n_q]
  std::vector<float> mine;
  const auto row = static_cast<std::ptrdiff_t>(kD * kHeads);
  for (size_t i : probe_indices(queries))
    mine.insert(mine.end(), r.begin() + static_cast<std::ptrdiff_t>(i) * row, r.begin() + static_cast<std::ptrdiff_t>(i + 1) * row);
  return mine;
}

// What attend() computes, in double precision from the same F16-rounded keys and values: each
// query head's softmax over the cells its row sees, of the KV head it reads (ggml's broadcast).
std::vector<float> attention_reference(const std::vector<Cell>& cells, const std::vector<Query>& queries, int window = 0) {
  const auto f16 = [](float x) { return ggml_fp16_to_fp32(ggml_fp32_to_fp16(x)); };
  std::vector<float> out;
  for (size_t i : probe_indices(queries)) {
    const Query& qi = queries[i];
    for (int64_t h = 0; h < kHeads; ++h) {
      const int64_t kv_head = h / (kHeads / kKvHeads);
      const std::vector<float> qv = vec_of(qi.seq, qi.pos, 100 + static_cast<int>(h), kD);
      std::vector<double> scores;
      std::vector<std::vector<float>> values;
      for (const Cell& cell : cells) {
        if (!sees(qi, cell, window)) continue;
        const std::vector<float> kv = vec_of(cell.seq, cell.pos, static_cast<int>(kv_head), 2 * kD);
        double dot = 0.0;
        for (int64_t d = 0; d < kD; ++d) dot += static_cast<double>(qv[static_cast<size_t>(d)]) * f16(kv[static_cast<size_t>(d)]);
        scores.push_back(dot / std::sqrt(static_cast<double>(kD)));
        values.emplace_back(kv.begin() + kD, kv.end());
      }
      const double top = *std::max_element(scores.begin(), scores.end());
      double sum = 0.0;
      std::vector<double> acc(static_cast<size_t>(kD), 0.0);
      for (size_t c = 0; c < scores.size(); ++c) {
        const double w = std::exp(scores[c] - top);
        sum += w;
        for (int64_t d = 0; d < kD; ++d) acc[static_cast<size_t>(d)] += w * f16(values[c][static_cast<size_t>(d)]);
      }
      for (double a : acc) out.push_back(static_cast<float>(a / sum));
    }
  }
  return out;
}

std::vector<Query> probe_rows() {
  std::vector<Query> q;
  for (int p = kProbeLen - kProbeRows; p < kProbeLen; ++p) q.push_back({0, p});
  return q;
}

// The probe's cells in position order at the start of the cache, then `pad` empty cells.
std::vector<Cell> contiguous(int pad) {
  std::vector<Cell> cells;
  for (int p = 0; p < kProbeLen; ++p) cells.push_back({0, p});
  cells.resize(cells.size() + static_cast<size_t>(pad));
  return cells;
}

// The probe's cells among `others` other sequences' cells, shuffled: in no order, anywhere.
std::vector<Cell> interleaved(int others, uint32_t seed) {
  std::vector<Cell> cells = contiguous(0);
  for (int s = 1; s <= others; ++s) {
    for (int p = 0; p < 40 + 17 * s; ++p) cells.push_back({s, p});
  }
  cells.resize(cells.size() + 9);
  std::mt19937 rng(seed);
  std::shuffle(cells.begin(), cells.end(), rng);
  return cells;
}

// The layout of native/patches/llama-kv-tile-gather.patch: each sequence's cells in position order
// in chunks of 256 (a multiple of every KV tile of CUDA's kernels) that start on a chunk boundary;
// the probe's one chunk after `before` and before `after` whole chunks of other sequences. A kernel
// that reduces a row tile by tile in cell order must give the same bits here: the other chunks are
// whole tiles the mask drops.
constexpr int kChunk = 256;
static_assert(kProbeLen <= kChunk, "the probe fills one chunk");

std::vector<Cell> chunked(int before, int after) {
  std::vector<Cell> cells;
  const auto chunk_of = [&cells](int seq) {
    for (int p = 0; p < kChunk; ++p) cells.push_back({seq, p});
  };
  for (int s = 1; s <= before; ++s) chunk_of(s);
  for (int p = 0; p < kChunk; ++p) cells.push_back(p < kProbeLen ? Cell{0, p} : Cell{});
  for (int s = before + 1; s <= before + after; ++s) chunk_of(s);
  return cells;
}

// The probe's last `ring` positions as a sliding-window cache keeps them: position p in cell p % ring,
// so that the cells in cell order are two runs of positions.
std::vector<Cell> ring_of(int ring) {
  std::vector<Cell> cells(static_cast<size_t>(ring));
  for (int p = kProbeLen - ring; p < kProbeLen; ++p) cells[static_cast<size_t>(p % ring)] = {0, p};
  return cells;
}

// A sliding window that starts mid-block, so that no row's cells extend another's.
constexpr int kWindow = 40;

// The cases of test_attention, each with the backends it is required of: the cells in position
// order (contiguous, cut anywhere, or in the gathered layout's chunks) on every backend; the cells
// in any other order (interleaved, a ring) on the CPU's kernel alone, which gathers them by
// position where CUDA's reduces them in cell order.
struct AttentionCase {
  std::string name;
  Scope scope;
  std::vector<Cell> cells;
  std::vector<Query> queries;
  const std::vector<float>* reference = nullptr;  // the rows alone unless set
  int window = 0;
};

// The rows each case is held to, computed on the backend under test.
struct AttentionReferences {
  std::vector<float> alone;         // the probe's rows, alone in a cache of its own cells
  std::vector<float> chunk_alone;   // the same in its chunk of the gathered layout
  std::vector<float> window_alone;  // each row alone, in a sliding window
};

std::vector<AttentionCase> attention_cases(const AttentionReferences& refs) {
  const std::vector<Query> mine = probe_rows();
  std::vector<AttentionCase> cases;
  for (int pad : {1, 63, 64, 200}) cases.push_back({"the cache cut " + std::to_string(pad) + " cells later", Scope::kEveryBackend, contiguous(pad), mine});
  for (int n = 1; n < kProbeRows; ++n) {
    // One query row alone: the kernels that split a single row over the cache.
    cases.push_back({"row " + std::to_string(n) + " alone", Scope::kEveryBackend, contiguous(0), {mine[static_cast<size_t>(n)]}});
  }
  for (int others : {1, 3}) {
    for (uint32_t seed : {1u, 2u}) {
      std::vector<Query> beside = mine;
      for (int s = 1; s <= others; ++s) {
        for (int r = 0; r < 30 * s; ++r) beside.push_back({s, 40 + 17 * s - 1 - (r % (40 + 17 * s))});
      }
      std::shuffle(beside.begin(), beside.end(), std::mt19937(seed));
      cases.push_back({"interleaved among " + std::to_string(others) + " sequences' cells, rows shuffled among theirs (" + std::to_string(seed) + ")",
                       Scope::kCpuOnly, interleaved(others, seed), beside});
      cases.push_back(
          {"interleaved among " + std::to_string(others) + " sequences' cells, alone in the batch", Scope::kCpuOnly, interleaved(others, seed + 10), mine});
    }
  }
  // The gathered cases are held to the probe's chunk alone, so that they test the chunks' order
  // and neighbours, not the cut of the cache (the cases above).
  for (const auto& [before, after] : std::vector<std::pair<int, int>>{{1, 0}, {0, 2}, {2, 1}}) {
    cases.push_back({"gathered: " + std::to_string(before) + " other chunks before the probe's, " + std::to_string(after) + " after", Scope::kEveryBackend,
                     chunked(before, after), mine, &refs.chunk_alone});
  }
  std::vector<Query> among = mine;
  for (int s = 1; s <= 3; ++s) {
    for (int p = kChunk - 40; p < kChunk; ++p) among.push_back({s, p});
  }
  std::shuffle(among.begin(), among.end(), std::mt19937(7));
  cases.push_back({"gathered: among 3 other chunks, rows shuffled among theirs", Scope::kEveryBackend, chunked(2, 1), among, &refs.chunk_alone});
  // Beyond the 64-row tile: the probe's rows inside a batch of more than 64 rows of another sequence.
  std::vector<Query> wide = mine;
  for (int r = 0; r < 90; ++r) wide.push_back({1, 56});
  cases.push_back({"beside 90 rows of another sequence, interleaved", Scope::kCpuOnly, interleaved(1, 5), wide});
  std::vector<Query> wide_chunk = mine;
  for (int p = kChunk - 90; p < kChunk; ++p) wide_chunk.push_back({1, p});
  std::shuffle(wide_chunk.begin(), wide_chunk.end(), std::mt19937(13));
  cases.push_back({"gathered: beside 90 rows of another sequence", Scope::kEveryBackend, chunked(1, 0), wide_chunk, &refs.chunk_alone});
  // In a sliding window each row's cells start one position later than the previous row's: held to
  // each row computed alone.
  std::vector<Query> window_beside = mine;
  for (int r = 0; r < 70; ++r) window_beside.push_back({1 + r % 2, 40 + (r * 13) % 40});
  std::shuffle(window_beside.begin(), window_beside.end(), std::mt19937(11));
  const std::string w = "a window of " + std::to_string(kWindow) + ": ";
  cases.push_back({w + "the rows together", Scope::kEveryBackend, contiguous(0), mine, &refs.window_alone, kWindow});
  cases.push_back({w + "the rows together, in a ring of 64 cells", Scope::kCpuOnly, ring_of(64), mine, &refs.window_alone, kWindow});
  cases.push_back(
      {w + "interleaved among 2 sequences' cells, rows shuffled among theirs", Scope::kCpuOnly, interleaved(2, 3), window_beside, &refs.window_alone, kWindow});
  return cases;
}

std::string attention_name(Scope scope) {
  return scope == Scope::kEveryBackend ? "an attention row is the same whatever shares its cache and its batch, its cells in position order"
                                       : "an attention row is the same whatever shares its cache and its batch, its cells in any order";
}

// The attention cases of one scope, each held bit for bit to its reference.
void test_attention(const Backend& b, Scope scope) {
  current = attention_name(scope);
  b.threads(2);
  const std::vector<Query> mine = probe_rows();
  AttentionReferences refs;
  refs.alone = attend(b, contiguous(0), mine);
  refs.chunk_alone = attend(b, chunked(0, 0), mine);
  for (const Query& row : mine) {
    const std::vector<float> r = attend(b, contiguous(0), {row}, kWindow);
    refs.window_alone.insert(refs.window_alone.end(), r.begin(), r.end());
  }
  std::vector<AttentionCase> cases = attention_cases(refs);
  cases.erase(std::remove_if(cases.begin(), cases.end(), [scope](const AttentionCase& c) { return c.scope != scope; }), cases.end());
  float worst = 0.0f;
  for (int threads : thread_counts(b)) {
    b.threads(threads);
    for (const AttentionCase& c : cases) {
      std::vector<float> got = attend(b, c.cells, c.queries, c.window);
      const std::vector<float>& want = c.reference != nullptr ? *c.reference : refs.alone;
      // A case with one row gives that row only: compare it with the same row alone.
      const size_t row = static_cast<size_t>(kD * kHeads);
      size_t offset = 0;
      if (c.queries.size() == 1) offset = static_cast<size_t>(c.queries[0].pos - (kProbeLen - kProbeRows)) * row;
      const size_t n = got.size();
      if (n == 0 || offset + n > want.size()) {
        check(false, c.name + ": the probe's rows are missing from the output");
        continue;
      }
      if (!same_bits(want.data() + offset, got.data(), n)) {
        worst = std::max(worst, largest_difference(want.data() + offset, got.data(), n));
        check(false, c.name + " on " + std::to_string(threads) + " threads differs from the rows alone");
      }
    }
  }
  std::printf("# %s: %zu cases compared, largest difference %g\n", current.c_str(), thread_counts(b).size() * cases.size(), static_cast<double>(worst));
}

// Invariance alone would pass a kernel that is wrong the same way everywhere (a query head reading
// another head's keys, say): the rows are also held to attention_reference.
void test_attention_values(const Backend& b) {
  current = "an attention row is attention over the cells it sees";
  const std::vector<Query> mine = probe_rows();
  std::vector<Query> beside = mine;
  for (int r = 0; r < 40; ++r) beside.push_back({1 + r % 2, 40 + (r * 13) % 40});
  struct Case {
    std::string name;
    std::vector<Cell> cells;
    std::vector<Query> queries;
    int window = 0;
  };
  const std::vector<Case> cases = {
      {"the probe's rows", contiguous(0), mine},
      {"one row", contiguous(0), {mine.back()}},
      {"interleaved among 2 sequences, beside their rows", interleaved(2, 4), beside},
      {"a window of " + std::to_string(kWindow) + ", in a ring of 64 cells", ring_of(64), mine, kWindow},
  };
  // The CPU's exact kernel lands within 1e-7, kernels that take Q·K in F16 (stock, CUDA's MMA)
  // within 1e-3; a query head that read another head's query was off by 0.16.
  constexpr float kTolerance = 1e-2f;
  float worst = 0.0f;
  for (int threads : thread_counts(b)) {
    b.threads(threads);
    for (const Case& c : cases) {
      const std::vector<float> got = attend(b, c.cells, c.queries, c.window);
      const std::vector<float> want = attention_reference(c.cells, c.queries, c.window);
      if (got.size() != want.size()) {
        check(false, c.name + ": " + std::to_string(got.size()) + " values, the reference has " + std::to_string(want.size()));
        continue;
      }
      const float d = largest_difference(want.data(), got.data(), got.size());
      worst = std::max(worst, d);
      check(d <= kTolerance, c.name + " on " + std::to_string(threads) + " threads is " + std::to_string(d) + " from the reference");
    }
  }
  std::printf("# %s: %zu cases compared, largest difference %g\n", current.c_str(), thread_counts(b).size() * cases.size(), static_cast<double>(worst));
}

// The catalogue's weight types (Q5_0 is in Gemma 3 270M's Q4_K_M), the types docs/models.md
// recommends, and Q5_1, which the engine's own products take too.
const ggml_type kTypes[] = {GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_Q8_0, GGML_TYPE_F16,
                            GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1};

// Runs one test (which names itself in `current`) and prints its result line with its tag; returns
// its failed checks.
int run_test(Scope scope, const std::function<void()>& test) {
  const int before = failures;
  test();
  const int failed = failures - before;
  std::printf("%s %s %s\n", failed == 0 ? "ok" : "not ok", current.c_str(), tag(scope));
  return failed;
}

// Every test on one backend; returns the failed checks of the tests required of it: all of them on
// the CPU, the [every backend] ones elsewhere, none when `reported` (the stock kernels).
// `required_only`: leave out what this backend is not required to hold (a GPU's [CPU only] tests,
// whose stock kernels may fail at length or, for CUDA's F16 product, stop the program).
int run_backend(const Backend& b, const Shape& shape, bool reported, bool required_only) {
  std::printf("# backend %s (%s device%s)\n", ggml_backend_name(b.backend), b.cpu ? "CPU" : "GPU", reported ? ", stock kernels: reported, not required" : "");
  int required_failed = 0;
  const auto run = [&](Scope scope, const std::function<void()>& test) {
    if (required_only && !b.cpu && scope == Scope::kCpuOnly) return;
    const int failed = run_test(scope, test);
    if (!reported && (b.cpu || scope == Scope::kEveryBackend)) required_failed += failed;
  };
  for (ggml_type t : kTypes) run(product_scope(t), [&] { test_product(b, t, shape); });
  if (b.cpu) run(Scope::kCpuOnly, [&] { test_own_products(b, shape); });
  for (ggml_type t : kTypes) {
    if (repacked(b, t, shape)) run(Scope::kCpuOnly, [&] { test_repacked_agrees(b, t, shape); });
  }
  for (Scope scope : {Scope::kEveryBackend, Scope::kCpuOnly}) run(scope, [&] { test_attention(b, scope); });
  run(Scope::kEveryBackend, [&] { test_attention_values(b); });
  return required_failed;
}

bool has_flag(int argc, char** argv, const std::string& flag) {
  return std::find_if(argv + 1, argv + argc, [&flag](const char* a) { return flag == a; }) != argv + argc;
}

// The value after `flag`, or `fallback`.
std::string flag_value(int argc, char** argv, const std::string& flag, const std::string& fallback) {
  char** at = std::find_if(argv + 1, argv + argc, [&flag](const char* a) { return flag == a; });
  return at + 1 < argv + argc ? std::string(at[1]) : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const bool all = argc > 2 && std::string(argv[1]) == "--backend" && std::string(argv[2]) == "all";
  const bool stock = has_flag(argc, argv, "--stock");
  // The CPU keeps the suite's size: at --large its single-thread pass alone takes minutes.
  const Shape& gpu_shape = has_flag(argc, argv, "--large") ? kLarge : kSuite;
  // Line by line, so that op-test.txt keeps every result before a crash.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // In a variants build the CPU backend is the variant --cpu-variant names (default: the best this
  // processor runs), loaded as the engine loads it (native/cpu_variant.cc).
  std::string variant;
  try {
    variant = arbitra::use_cpu_variant(flag_value(argc, argv, "--cpu-variant", "auto"));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  std::printf("# cpu variant %s\n", variant.c_str());
  // A GPU backend reads its switch when the backend is created (native/patches/ggml-cuda-*).
  setenv("GGML_CUDA_BATCH_INVARIANT", stock ? "0" : "1", 1);
  // The CPU first: its section is the reference, and complete even if a GPU's ends the program.
  std::vector<ggml_backend_dev_t> devices;
  for (size_t i = 0; i < ggml_backend_dev_count(); ++i) devices.push_back(ggml_backend_dev_get(i));
  std::stable_partition(devices.begin(), devices.end(), [](ggml_backend_dev_t d) { return ggml_backend_dev_type(d) == GGML_BACKEND_DEVICE_TYPE_CPU; });
  int required_failures = 0;
  for (ggml_backend_dev_t dev : devices) {
    Backend b;
    b.dev = dev;
    const auto type = ggml_backend_dev_type(b.dev);
    b.cpu = type == GGML_BACKEND_DEVICE_TYPE_CPU;
    if (!b.cpu && !(all && type == GGML_BACKEND_DEVICE_TYPE_GPU)) continue;
    b.backend = ggml_backend_dev_init(b.dev, nullptr);
    // The engine's exact kernels; --stock shows what llama.cpp's own kernels do (reported only).
    if (b.cpu) b.proc<void (*)(ggml_backend_t, bool)>("ggml_backend_cpu_set_batch_invariant")(b.backend, !stock);
    required_failures += run_backend(b, b.cpu ? kSuite : gpu_shape, stock, has_flag(argc, argv, "--required"));
    ggml_backend_free(b.backend);
  }
  std::printf("%d failure(s)\n", required_failures);
  return required_failures == 0 ? 0 : 1;
}
