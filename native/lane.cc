#include "lane.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "model_facts.h"

namespace arbitra {

namespace {

int64_t meta_int(const llama_model* model, const std::string& key, int64_t fallback) {
  char buf[64] = {0};
  if (llama_model_meta_val_str(model, key.c_str(), buf, sizeof(buf)) < 0) return fallback;
  return std::strtoll(buf, nullptr, 10);
}

}  // namespace

llama_model* load_model(const std::string& path, int32_t n_gpu_layers) {
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = n_gpu_layers;
  // Without a GPU the weights are repacked into buffers of their own; a mapped file would stay
  // resident beside them (about the model's size again), so the file is read instead.
  if (gpu_devices().empty() || n_gpu_layers == 0) mp.load_mode = LLAMA_LOAD_MODE_NONE;
  return llama_model_load_from_file(path.c_str(), mp);
}

bool make_lane(llama_model* model, const LaneSpec& spec, Lane* out) {
  const bool shared = spec.layout == KvLayout::shared;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = shared ? spec.cells : spec.cells * spec.n_seq;
  cp.n_batch = spec.n_batch;
  cp.n_ubatch = std::min(spec.n_ubatch, spec.n_batch);
  cp.n_seq_max = spec.n_seq;
  cp.n_threads = spec.n_threads;
  cp.n_threads_batch = spec.n_threads;
  // Copied: one KV stream per sequence. In a unified cache the attention result of a branch depends
  // on where its cells sit among other sequences' cells, and small models amplify that into visible
  // log-prob differences; separate streams make batched scores equal to scores computed alone.
  cp.kv_unified = shared;
  // A full-size SWA cache, which keeps a sequence's cells that slid out of its window
  // (llama-kv-window-kept.patch): a prompt sharing an early head of a cached prefix needs them.
  cp.swa_full = true;
  cp.no_perf = true;
  cp.flash_attn_type = static_cast<llama_flash_attn_type>(flash_attn_asked(spec.flash_attn, spec.exact_kernels));
  llama_context* ctx = nullptr;
  {
    // The CPU and CUDA backends, and llama.cpp's context, read their variable once, when the context is created.
    static std::mutex env_mu;
    std::lock_guard<std::mutex> lk(env_mu);
    setenv("GGML_CPU_BATCH_INVARIANT", spec.exact_kernels ? "1" : "0", 1);
    setenv("GGML_CUDA_BATCH_INVARIANT", spec.exact_kernels ? "1" : "0", 1);
    setenv("LLAMA_KV_GATHER", shared && spec.kv_gather ? "1" : "0", 1);
    ctx = llama_init_from_model(model, cp);
  }
  if (ctx == nullptr) return false;

  ScorerOptions so;
  so.n_batch = spec.n_batch;
  so.prefix_chunk = spec.prefix_chunk;
  so.n_seq_max = llama_n_seq_max(ctx);
  so.prefix_cache_tokens = spec.prefix_cache_tokens;
  const uint32_t train = static_cast<uint32_t>(std::max(1, llama_model_n_ctx_train(model)));
  if (shared) {
    // A decode adds at most n_batch cells on top of the prefixes held, so prefixes may fill the
    // pool up to that margin and a decode never finds it full.
    so.prefix_cells = llama_n_ctx(ctx) > spec.n_batch ? llama_n_ctx(ctx) - spec.n_batch : 0;
    out->max_tokens = std::min(train, so.prefix_cells);
  } else {
    out->max_tokens = llama_n_ctx_seq(ctx);
  }
  out->ctx.reset(ctx);
  so.step_target_ms = spec.step_target_ms;
  so.max_step_ms = spec.max_step_ms;
  out->scorer = std::make_unique<Scorer>(llama_model_ops(ctx, static_cast<int32_t>(spec.n_batch), shared), so);
  return true;
}

int32_t flash_attn_asked(int32_t choice, bool exact_kernels) {
  // `auto` lets llama.cpp turn flash attention off where a device declines the op, and with it the
  // exact attention kernel and the gather (both built on it), while the caller still asked for them.
  return choice < 0 && exact_kernels ? LLAMA_FLASH_ATTN_TYPE_ENABLED : choice;
}

bool kv_gather_on(int choice, bool exact_kernels, int32_t n_gpu_layers) {
  return choice == 1 || (choice == -1 && exact_kernels && n_gpu_layers > 0 && !gpu_devices().empty());
}

AttentionShape attention_shape(const llama_model* model) {
  char arch[64] = {0};
  llama_model_meta_val_str(model, "general.architecture", arch, sizeof(arch));
  const std::string a(arch);
  const int64_t n_head = std::max(1, llama_model_n_head(model));
  const int64_t head_dim = llama_model_n_embd(model) / n_head;
  AttentionShape shape;
  shape.head_k = meta_int(model, a + ".attention.key_length", head_dim);
  shape.head_v = meta_int(model, a + ".attention.value_length", head_dim);
  shape.experts = meta_int(model, a + ".expert_count", 0);
  return shape;
}

size_t kv_bytes_per_cell(const llama_model* model) {
  const AttentionShape shape = attention_shape(model);
  // F16 cells, the context's default cache type.
  return static_cast<size_t>(llama_model_n_layer(model)) * static_cast<size_t>(llama_model_n_head_kv(model)) *
         static_cast<size_t>(shape.head_k + shape.head_v) * 2;
}

}  // namespace arbitra
