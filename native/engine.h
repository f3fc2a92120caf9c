// N-API face of the scorer: one Engine object owns one model and its lanes, each a context with
// its own Scorer.
// Blocking work (load, close) runs in AsyncWorkers; score() resolves from the scorer thread
// through a thread-safe function.
#pragma once

#include <napi.h>

#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "lane.h"
#include "llama.h"

namespace arbitra {

struct EngineConfig {
  std::string path;
  uint32_t n_ctx = 4096;  // per sequence
  uint32_t n_batch = 2048;
  uint32_t n_ubatch = 512;
  uint32_t n_seq_max = 64;
  int32_t n_threads = 0;
  int32_t n_gpu_layers = 0;
  uint32_t prefix_cache_tokens = 4096;
  int32_t flash_attn = -1;    // llama_flash_attn_type: -1 auto, 0 off, 1 on
  bool exact_kernels = true;  // see LaneSpec
  int kv_gather = -1;         // LaneSpec::kv_gather for the shared pool, see kv_gather_on
  // The CPU variant asked for ("auto": the best this processor runs), and once loaded, the one served.
  std::string cpu_variant = "auto";
  KvLayout layout = KvLayout::shared;
  // Shared layout: cells in the pool; 0 = the longer of n_ctx and n_ctx_long (at most the model's
  // training context and 32768) plus one batch.
  uint32_t kv_cells = 0;
  // Copied layout: the long lane, a second context whose few sequences each hold up to this many tokens, for the
  // prompts the main lane cannot hold; 0 (or not above n_ctx) = no long lane. Shared layout: sizes the pool.
  uint32_t n_ctx_long = 0;
  uint32_t n_seq_long = 2;
  // ScorerOptions::step_target_ms and max_step_ms.
  double step_target_ms = ScorerOptions{}.step_target_ms;
  double max_step_ms = ScorerOptions{}.max_step_ms;
};

class Engine : public Napi::ObjectWrap<Engine> {
 public:
  static Napi::Object Init(Napi::Env env, Napi::Object exports);
  explicit Engine(const Napi::CallbackInfo& info);
  ~Engine() override;

  // Called by the load worker on success (JS thread).
  void Attach(Napi::Env env, llama_model* model, std::vector<Lane> lanes, const EngineConfig& cfg, size_t gpu_bytes);
  Napi::Object Facts(Napi::Env env);
  // Called by the close worker: hands the native objects over for freeing off the JS thread.
  void Detach(llama_model** model, std::vector<Lane>* lanes);
  void JobSettled(Napi::Env env, uint32_t ticket);

 private:
  Napi::Value Load(const Napi::CallbackInfo& info);
  Napi::Value Tokenize(const Napi::CallbackInfo& info);
  Napi::Value Detokenize(const Napi::CallbackInfo& info);
  Napi::Value ApplyChatTemplate(const Napi::CallbackInfo& info);
  Napi::Value Score(const Napi::CallbackInfo& info);
  Napi::Value Cancel(const Napi::CallbackInfo& info);
  Napi::Value Stats(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  Napi::Value FaultStall(const Napi::CallbackInfo& info);
  Napi::Value ForgetCache(const Napi::CallbackInfo& info);
  Napi::Value OpenReference(const Napi::CallbackInfo& info);
  Napi::Value CloseReference(const Napi::CallbackInfo& info);

  void RequireLoaded(Napi::Env env) const;
  // The first lane that holds the prompt; throws context_exceeded where none does.
  Lane* LaneFor(Napi::Env env, size_t prefix_tokens, size_t longest);
  void JobStarted(Napi::Env env, uint32_t ticket, const std::shared_ptr<std::atomic<bool>>& cancelled);

  llama_model* model_ = nullptr;
  const llama_vocab* vocab_ = nullptr;
  // By growing max_tokens; lanes_[0] is the main lane. A request goes to the first lane that can hold
  // it, so the same request always meets the same KV geometry, whatever the load.
  std::vector<Lane> lanes_;
  // A small lane on llama.cpp's stock kernels while the load-time check compares the exact
  // kernels' scores with theirs (score(..., {reference: true})); empty otherwise.
  std::vector<Lane> reference_;
  EngineConfig cfg_;
  size_t gpu_bytes_ = 0;
  bool busy_ = false;  // a load or close is in progress
  Napi::ThreadSafeFunction tsfn_;
  int64_t pending_ = 0;  // score() promises not yet settled; keeps the event loop alive only while > 0
  // Cancellation flags of unsettled jobs by the caller's ticket (JS thread only).
  std::unordered_map<uint32_t, std::shared_ptr<std::atomic<bool>>> tickets_;
};

}  // namespace arbitra
