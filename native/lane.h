// A lane is one llama_context and the scorer that owns it. This is where a lane's KV layout is
// chosen; the N-API engine and the C++ scorer bench both build their lanes here, so what the bench
// measures is what the service runs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "llama.h"
#include "scorer.h"

namespace arbitra {

enum class KvLayout {
  // One KV stream per sequence; a branch copies its prefix's whole stream. Memory is n_ctx × n_seq
  // cells whatever the requests, every branch pays a copy of its prefix stream, and llama.cpp splits
  // a step into one micro-batch per group of equal-length sequences. Kept for comparison.
  copied,
  // One pool of cells shared by every sequence; a branch adds its sequence id to its prefix's cells
  // and adds only its suffix, and a step is one micro-batch. Memory and work follow the tokens in
  // use, and one request may use the whole pool. Where a request's cells land depends on what else
  // is in the pool; with exact kernels attention takes each row's cells in position order, so the
  // scores do not (the same bits as a stream of its own).
  shared,
};

struct LaneSpec {
  KvLayout layout = KvLayout::shared;
  // llama.cpp's CPU backend picks its kernels by batch shape (flash attention tiled from 64 query
  // rows and split over the cache for one; repacked weights through a 4-row GEMM or a GEMV by where
  // a row falls), and they round differently: a branch's score then moves with what shares its
  // batch (0.37 nats seen on the default model). Exact kernels are the batch-invariant ones of
  // native/patches: one code path for every shape, each row's reductions in a fixed order.
  bool exact_kernels = true;
  // Shared layout: attention reads each sequence's cells gathered in position order, in chunks that
  // start on a tile boundary (native/patches/llama-kv-tile-gather.patch). CUDA's attention reduces a row
  // tile by tile in slot order, so without it a row's bits follow where its cells sit in the pool;
  // the CPU's exact kernel gathers by position on its own and needs no copy.
  bool kv_gather = false;
  uint32_t cells = 4096;  // copied: cells per sequence; shared: cells in the pool
  uint32_t n_seq = 64;
  uint32_t n_batch = 2048;
  uint32_t n_ubatch = 512;
  int32_t n_threads = 1;
  int32_t flash_attn = -1;  // llama_flash_attn_type: -1 auto, 0 off, 1 on
  uint32_t prefix_cache_tokens = 4096;
  uint32_t prefix_chunk = 512;
  double step_target_ms = ScorerOptions{}.step_target_ms;
  double max_step_ms = ScorerOptions{}.max_step_ms;
};

struct ContextFree {
  void operator()(llama_context* ctx) const { llama_free(ctx); }
};

// Destroying a lane stops its scorer (declared last, so destroyed first), then frees the context.
struct Lane {
  std::unique_ptr<llama_context, ContextFree> ctx;
  // The longest prompt (prefix + one suffix) a request may bring to this lane.
  uint32_t max_tokens = 0;
  std::unique_ptr<Scorer> scorer;
};

// Loads a GGUF; nullptr when llama.cpp refuses it. CPU weights are repacked where llama.cpp can
// (the batch-invariant kernels keep the repacked GEMM for every row), and read rather than mapped.
llama_model* load_model(const std::string& path, int32_t n_gpu_layers);

// Creates the context and starts its scorer; false (and `out` untouched) when llama.cpp cannot
// allocate it.
bool make_lane(llama_model* model, const LaneSpec& spec, Lane* out);

// The flash attention a lane asks llama.cpp for: exact kernels turn `auto` into on, since their
// promise rests on it; what the context resolved is llama_get_attention_path's to say.
int32_t flash_attn_asked(int32_t choice, bool exact_kernels);

// LaneSpec::kv_gather from a choice of -1 (where exact results need it: exact kernels with the
// layers on a GPU), 0 (never) or 1 (always, on the CPU too, to check it against the CPU's own gather).
bool kv_gather_on(int choice, bool exact_kernels, int32_t n_gpu_layers);

// What of a model's shape decides which attention and product kernels a backend may pick.
struct AttentionShape {
  int64_t head_k = 0;   // key head size
  int64_t head_v = 0;   // value head size
  int64_t experts = 0;  // experts of a mixture-of-experts model; 0 for a dense one
};
AttentionShape attention_shape(const llama_model* model);

// Bytes of KV cache one cell costs for this model (K and V over every layer, F16).
size_t kv_bytes_per_cell(const llama_model* model);

}  // namespace arbitra
