#include "engine.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>

#include "cpu_products.h"
#include "cpu_variant.h"
#include "model_facts.h"

namespace arbitra {

namespace {

// At most this many of a prefix's tokens go into one decode (ScorerOptions::prefix_chunk).
uint32_t prefix_chunk(uint32_t n_batch) { return std::min<uint32_t>(512, n_batch); }

// The reference lane's pool and batch: room for a probe, not for requests.
constexpr uint32_t kReferenceCells = 2048;
constexpr uint32_t kReferenceBatch = 512;

void quiet_log(ggml_log_level level, const char* text, void*) {
  static const bool verbose = std::getenv("ARBITRA_LLAMA_LOG") != nullptr;
  if (verbose || level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

void quiet_logs_once() {
  static std::once_flag once;
  std::call_once(once, [] { llama_log_set(quiet_log, nullptr); });
}

void init_backend_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    quiet_logs_once();
    llama_backend_init();
  });
}

Napi::Error coded_error(Napi::Env env, const char* code, const std::string& message) {
  Napi::Error err = Napi::Error::New(env, message);
  err.Set("code", Napi::String::New(env, code));
  return err;
}

uint32_t opt_u32(const Napi::Object& o, const char* key, uint32_t fallback) {
  Napi::Value v = o.Get(key);
  if (!v.IsNumber()) return fallback;
  const int64_t n = v.As<Napi::Number>().Int64Value();
  return n > 0 ? static_cast<uint32_t>(n) : fallback;
}

std::vector<llama_token> to_tokens(const Napi::Value& v) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array) {
    throw std::invalid_argument("token lists must be Int32Array");
  }
  Napi::Int32Array a = v.As<Napi::Int32Array>();
  return std::vector<llama_token>(a.Data(), a.Data() + a.ElementLength());
}

void read_load_options(const Napi::Object& o, EngineConfig* cfg) {
  cfg->n_ctx = opt_u32(o, "contextSize", cfg->n_ctx);
  cfg->n_batch = opt_u32(o, "batchSize", cfg->n_batch);
  cfg->n_ubatch = opt_u32(o, "microBatchSize", cfg->n_ubatch);
  cfg->n_seq_max = std::min<uint32_t>(opt_u32(o, "maxSequences", cfg->n_seq_max), 256);
  cfg->n_threads = static_cast<int32_t>(opt_u32(o, "threads", 0));
  cfg->n_gpu_layers = static_cast<int32_t>(opt_u32(o, "gpuLayers", 0));
  Napi::Value fa = o.Get("flashAttention");
  if (fa.IsString()) {
    const std::string v = fa.As<Napi::String>().Utf8Value();
    cfg->flash_attn = v == "on" ? 1 : v == "off" ? 0 : -1;
  }
  Napi::Value cv = o.Get("cpuVariant");
  if (cv.IsString()) cfg->cpu_variant = cv.As<Napi::String>().Utf8Value();
  Napi::Value kn = o.Get("kernels");
  if (kn.IsString()) cfg->exact_kernels = kn.As<Napi::String>().Utf8Value() != "fast";
  Napi::Value kg = o.Get("kvGather");
  if (kg.IsBoolean()) cfg->kv_gather = kg.As<Napi::Boolean>().Value() ? 1 : 0;
  cfg->n_ctx_long = opt_u32(o, "longContextSize", cfg->n_ctx_long);
  cfg->n_seq_long = std::min<uint32_t>(opt_u32(o, "longSequences", cfg->n_seq_long), 256);
  Napi::Value kl = o.Get("kvLayout");
  if (kl.IsString()) cfg->layout = kl.As<Napi::String>().Utf8Value() == "shared" ? KvLayout::shared : KvLayout::copied;
  cfg->kv_cells = opt_u32(o, "kvCells", cfg->kv_cells);
  Napi::Value st = o.Get("stepTargetMs");
  if (st.IsNumber() && st.As<Napi::Number>().DoubleValue() > 0) cfg->step_target_ms = st.As<Napi::Number>().DoubleValue();
  Napi::Value ms = o.Get("maxStepMs");
  if (ms.IsNumber() && ms.As<Napi::Number>().DoubleValue() > 0) cfg->max_step_ms = ms.As<Napi::Number>().DoubleValue();
  Napi::Value pc = o.Get("prefixCacheTokens");
  if (pc.IsNumber()) cfg->prefix_cache_tokens = static_cast<uint32_t>(std::max<int64_t>(0, pc.As<Napi::Number>().Int64Value()));
}

// Whether the shared pool's attention reads its cells gathered (LaneSpec::kv_gather).
bool shared_pool_gathers(const EngineConfig& cfg) { return cfg.layout == KvLayout::shared && kv_gather_on(cfg.kv_gather, cfg.exact_kernels, cfg.n_gpu_layers); }

// Why the file at `path` cannot be a model; empty when it may be one. Asked before llama.cpp opens
// it, since its failure would not say which.
std::string gguf_problem(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return "model file not found or unreadable: " + path;
  char magic[4] = {0, 0, 0, 0};
  file.read(magic, 4);
  if (file.gcount() != 4 || std::memcmp(magic, "GGUF", 4) != 0) return "not a GGUF file: " + path;
  return "";
}

// Loads the model and creates the context off the JS thread.
class LoadWorker : public Napi::AsyncWorker {
 public:
  LoadWorker(Napi::Env env, Engine* engine, EngineConfig cfg)
      : Napi::AsyncWorker(env), engine_(engine), cfg_(std::move(cfg)), deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }

  void Execute() override {
    // Before llama_backend_init, which would load whatever CPU backend it finds where none is loaded.
    quiet_logs_once();
    try {
      cfg_.cpu_variant = use_cpu_variant(cfg_.cpu_variant);
    } catch (const std::exception& e) {
      return SetError(e.what());
    }
    init_backend_once();
    const std::string problem = gguf_problem(cfg_.path);
    if (!problem.empty()) return SetError(problem);

    const size_t gpu_before = gpu_memory_used();
    model_ = load_model(cfg_.path, cfg_.n_gpu_layers);
    if (model_ == nullptr) return SetError("failed to load the model: " + cfg_.path);

    if (cfg_.n_threads <= 0) cfg_.n_threads = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
    cfg_.n_ubatch = std::min(cfg_.n_ubatch, cfg_.n_batch);
    if (!AddLanes()) return;
    const size_t gpu_after = gpu_memory_used();
    gpu_bytes_ = gpu_after > gpu_before ? gpu_after - gpu_before : 0;
  }

  // False after SetError.
  bool AddLanes() {
    const uint32_t train = static_cast<uint32_t>(std::max(1, llama_model_n_ctx_train(model_)));
    if (cfg_.layout == KvLayout::shared) {
      // One pool serves every request, the longest included: no long lane. By default it holds the
      // longest prompt the context sizes allow, plus one batch for the decode.
      const uint32_t longest = std::min({train, 32768u, std::max(cfg_.n_ctx, cfg_.n_ctx_long)});
      const uint32_t cells = cfg_.kv_cells > 0 ? cfg_.kv_cells : longest + cfg_.n_batch;
      return AddLane(KvLayout::shared, cells, cfg_.n_seq_max, cfg_.n_batch, cfg_.prefix_cache_tokens);
    }
    cfg_.n_ctx_long = std::min(cfg_.n_ctx_long, train);
    if (!AddLane(KvLayout::copied, cfg_.n_ctx, cfg_.n_seq_max, cfg_.n_batch, cfg_.prefix_cache_tokens)) return false;
    // A long lane's batch takes any suffix its sequences can hold (a long option list), and one
    // long prefix stays cached, so follow-up questions about a long document skip its decode.
    return cfg_.n_ctx_long <= cfg_.n_ctx ||
           AddLane(KvLayout::copied, cfg_.n_ctx_long, std::max<uint32_t>(2, cfg_.n_seq_long), std::max(cfg_.n_batch, cfg_.n_ctx_long), cfg_.n_ctx_long);
  }

  // False after SetError.
  bool AddLane(KvLayout layout, uint32_t cells, uint32_t n_seq, uint32_t n_batch, uint32_t prefix_cache_tokens) {
    LaneSpec spec;
    spec.layout = layout;
    spec.cells = cells;
    spec.n_seq = n_seq;
    spec.n_batch = n_batch;
    spec.n_ubatch = cfg_.n_ubatch;
    spec.n_threads = cfg_.n_threads;
    spec.flash_attn = cfg_.flash_attn;
    spec.exact_kernels = cfg_.exact_kernels;
    spec.kv_gather = shared_pool_gathers(cfg_);
    spec.prefix_cache_tokens = prefix_cache_tokens;
    spec.prefix_chunk = prefix_chunk(cfg_.n_batch);
    spec.step_target_ms = cfg_.step_target_ms;
    spec.max_step_ms = cfg_.max_step_ms;
    Lane lane;
    if (!make_lane(model_, spec, &lane)) {
      lanes_.clear();
      llama_model_free(model_);
      model_ = nullptr;
      SetError("failed to create a context for " + cfg_.path + " (" +
               (layout == KvLayout::shared ? "a shared pool of " + std::to_string(cells) + " cells"
                                           : std::to_string(n_seq) + " sequences of " + std::to_string(cells) + " tokens") +
               ")");
      return false;
    }
    lanes_.push_back(std::move(lane));
    return true;
  }

  void OnOK() override {
    Napi::Env env = Env();
    engine_->Attach(env, model_, std::move(lanes_), cfg_, gpu_bytes_);
    deferred_.Resolve(engine_->Facts(env));
  }

  void OnError(const Napi::Error& e) override { deferred_.Reject(coded_error(Env(), "load_failed", e.Message()).Value()); }

 private:
  Engine* engine_;
  EngineConfig cfg_;
  Napi::Promise::Deferred deferred_;
  llama_model* model_ = nullptr;
  std::vector<Lane> lanes_;
  size_t gpu_bytes_ = 0;
};

// Stops the scorer thread and frees the model off the JS thread.
class CloseWorker : public Napi::AsyncWorker {
 public:
  CloseWorker(Napi::Env env, Engine* engine) : Napi::AsyncWorker(env), engine_(engine), deferred_(Napi::Promise::Deferred::New(env)) {
    engine_->Detach(&model_, &lanes_);
  }
  Napi::Promise Promise() { return deferred_.Promise(); }

  void Execute() override {
    for (Lane& lane : lanes_) {
      for (auto& job : lane.scorer->stop()) left_.push_back(std::move(job));
    }
    lanes_.clear();
    if (model_ != nullptr) llama_model_free(model_);
  }

  void OnOK() override {
    for (auto& job : left_) {
      job->error = "the engine was closed before the request finished";
      job->error_code = "closed";
      auto done = std::move(job->on_done);
      done(std::move(job));
    }
    deferred_.Resolve(Env().Undefined());
  }

 private:
  Engine* engine_;
  Napi::Promise::Deferred deferred_;
  llama_model* model_ = nullptr;
  std::vector<Lane> lanes_;
  std::vector<std::unique_ptr<ScoreJob>> left_;
};

struct Settlement {
  Engine* engine;
  Napi::Promise::Deferred deferred;
  uint32_t ticket;
  std::unique_ptr<ScoreJob> job;
};

// A cache scope's 64-bit name: 0 is the global cache's, so a named scope never hashes to it.
uint64_t scope_of(const std::string& name) {
  if (name.empty()) return 0;
  const uint64_t h = std::hash<std::string>{}(name);
  return h == 0 ? 1 : h;
}

// Fills the job's tokens, tenant and cache scope from score()'s arguments; returns the caller's ticket.
uint32_t read_score_args(const Napi::CallbackInfo& info, ScoreJob* job, bool* reference) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[1].IsArray()) {
    throw Napi::TypeError::New(env,
                               "score(prefix: Int32Array, branches: {suffix, candidates}[], options?: {tenant?, ticket?, reference?, background?, scope?, "
                               "sharedHead?})");
  }
  uint32_t ticket = 0;
  if (info.Length() > 2 && info[2].IsObject()) {
    Napi::Object o = info[2].As<Napi::Object>();
    if (o.Get("tenant").IsString()) job->tenant = std::hash<std::string>{}(o.Get("tenant").As<Napi::String>().Utf8Value());
    if (o.Get("ticket").IsNumber()) ticket = o.Get("ticket").As<Napi::Number>().Uint32Value();
    *reference = o.Get("reference").ToBoolean().Value();
    job->background = o.Get("background").ToBoolean().Value();
    if (o.Get("scope").IsString()) job->scope = scope_of(o.Get("scope").As<Napi::String>().Utf8Value());
    if (o.Get("sharedHead").IsNumber()) job->shared_head = static_cast<size_t>(std::max<int64_t>(0, o.Get("sharedHead").As<Napi::Number>().Int64Value()));
  }
  try {
    job->prefix = to_tokens(info[0]);
    Napi::Array branches = info[1].As<Napi::Array>();
    job->branches.resize(branches.Length());
    for (uint32_t i = 0; i < branches.Length(); ++i) {
      Napi::Value bv = branches.Get(i);
      if (!bv.IsObject()) throw std::invalid_argument("every branch must be an object {suffix, candidates}");
      Napi::Object b = bv.As<Napi::Object>();
      job->branches[i].suffix = to_tokens(b.Get("suffix"));
      job->branches[i].candidates = to_tokens(b.Get("candidates"));
    }
  } catch (const std::invalid_argument& e) {
    throw Napi::TypeError::New(env, e.what());
  }
  return ticket;
}

void check_ids(Napi::Env env, const std::vector<llama_token>& ids, int32_t n_vocab, const char* what) {
  for (llama_token t : ids) {
    if (t < 0 || t >= n_vocab) {
      throw coded_error(env, "invalid_request",
                        std::string(what) + " token id " + std::to_string(t) + " is outside the vocabulary (0.." + std::to_string(n_vocab - 1) + ")");
    }
  }
}

// Returns the longest suffix, which decides the lane.
size_t validate_job(Napi::Env env, const ScoreJob& job, int32_t n_vocab) {
  if (job.prefix.empty()) throw coded_error(env, "invalid_request", "the prefix is empty");
  if (job.branches.empty()) throw coded_error(env, "invalid_request", "at least one branch is needed");
  check_ids(env, job.prefix, n_vocab, "prefix");
  size_t longest = 0;
  for (const Branch& b : job.branches) {
    if (b.suffix.empty()) throw coded_error(env, "invalid_request", "a branch suffix is empty");
    if (b.candidates.empty()) throw coded_error(env, "invalid_request", "a branch has no candidate tokens");
    check_ids(env, b.suffix, n_vocab, "suffix");
    check_ids(env, b.candidates, n_vocab, "candidate");
    longest = std::max(longest, b.suffix.size());
  }
  return longest;
}

Napi::Object score_result(Napi::Env env, const ScoreJob& j) {
  Napi::Array logprobs = Napi::Array::New(env, j.logprobs.size());
  for (size_t i = 0; i < j.logprobs.size(); ++i) {
    Napi::Float32Array a = Napi::Float32Array::New(env, j.logprobs[i].size());
    std::memcpy(a.Data(), j.logprobs[i].data(), j.logprobs[i].size() * sizeof(float));
    logprobs.Set(static_cast<uint32_t>(i), a);
  }
  Napi::Object r = Napi::Object::New(env);
  r.Set("logprobs", logprobs);
  r.Set("evaluated", static_cast<double>(j.evaluated));
  r.Set("cached", static_cast<double>(j.cached));
  return r;
}

void settle(Napi::Env env, Napi::Function, Settlement* s) {
  std::unique_ptr<Settlement> owned(s);
  ScoreJob& j = *owned->job;
  if (!j.error.empty()) {
    owned->deferred.Reject(coded_error(env, j.error_code, j.error).Value());
  } else {
    owned->deferred.Resolve(score_result(env, j));
  }
  owned->engine->JobSettled(env, owned->ticket);
}

// A job ends on the scorer's thread (or on the JS thread when the engine is closing), and Napi
// values may only be touched on the JS thread: the promise is settled there, through the
// thread-safe function.
std::function<void(std::unique_ptr<ScoreJob>)> settle_on_js_thread(Napi::ThreadSafeFunction tsfn, Settlement* settlement) {
  return [tsfn, settlement](std::unique_ptr<ScoreJob> done) mutable {
    settlement->job = std::move(done);
    tsfn.BlockingCall(settlement, settle);
  };
}

// The variants this processor runs, best first: what another node may be pinned to for the same bits.
Napi::Array cpu_variant_names(Napi::Env env) {
  Napi::Array names = Napi::Array::New(env);
  for (const CpuVariant& v : cpu_variants())
    if (v.score > 0) names.Set(names.Length(), v.name);
  return names;
}

}  // namespace

Napi::Object Engine::Init(Napi::Env env, Napi::Object exports) {
  Napi::Function ctor = DefineClass(env, "Engine",
                                    {
                                        InstanceMethod("load", &Engine::Load),
                                        InstanceMethod("tokenize", &Engine::Tokenize),
                                        InstanceMethod("detokenize", &Engine::Detokenize),
                                        InstanceMethod("applyChatTemplate", &Engine::ApplyChatTemplate),
                                        InstanceMethod("score", &Engine::Score),
                                        InstanceMethod("cancel", &Engine::Cancel),
                                        InstanceMethod("faultStall", &Engine::FaultStall),
                                        InstanceMethod("forgetCache", &Engine::ForgetCache),
                                        InstanceMethod("openReference", &Engine::OpenReference),
                                        InstanceMethod("closeReference", &Engine::CloseReference),
                                        InstanceMethod("stats", &Engine::Stats),
                                        InstanceMethod("close", &Engine::Close),
                                    });
  exports.Set("Engine", ctor);
  exports.Set("llamaBuild", Napi::String::New(env, ARBITRA_LLAMA_BUILD));
  exports.Set("backend", Napi::String::New(env, ARBITRA_BACKEND));
  // The GPUs this build's backend finds here, by name: none on a CPU build, and none on a CUDA build
  // run without a GPU, which src/engine/native.ts then trades for the CPU addon beside it.
  exports.Set("gpuDevices", Napi::Function::New(env, [](const Napi::CallbackInfo& info) {
                init_backend_once();
                const std::vector<ggml_backend_dev_t> gpus = gpu_devices();
                Napi::Array names = Napi::Array::New(info.Env(), gpus.size());
                for (size_t i = 0; i < gpus.size(); ++i) names.Set(static_cast<uint32_t>(i), ggml_backend_dev_description(gpus[i]));
                return names;
              }));
  // Every CPU variant of this build, runnable here or not (none where the backend is built in).
  exports.Set("cpuVariants", Napi::Function::New(env, [](const Napi::CallbackInfo& info) {
                const std::vector<CpuVariant> variants = cpu_variants();
                Napi::Array out = Napi::Array::New(info.Env(), variants.size());
                for (size_t i = 0; i < variants.size(); ++i) {
                  Napi::Object v = Napi::Object::New(info.Env());
                  v.Set("name", variants[i].name);
                  v.Set("runnable", variants[i].score > 0);
                  out.Set(static_cast<uint32_t>(i), v);
                }
                return out;
              }));
  return exports;
}

Engine::Engine(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Engine>(info) {}

Engine::~Engine() {
  // Reached only when JS dropped a loaded engine without close(): free what we can.
  reference_.clear();
  lanes_.clear();
  if (model_ != nullptr) llama_model_free(model_);
}

void Engine::RequireLoaded(Napi::Env env) const {
  if (busy_) throw coded_error(env, "unavailable", "the engine is loading or closing");
  if (model_ == nullptr) throw coded_error(env, "closed", "the engine has no model loaded");
}

Napi::Value Engine::Load(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (busy_ || model_ != nullptr) throw coded_error(env, "invalid_request", "load() may be called once per engine");
  if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(env, "load(path, options?) needs a model path");
  EngineConfig cfg;
  cfg.path = info[0].As<Napi::String>().Utf8Value();
  if (info.Length() > 1 && info[1].IsObject()) read_load_options(info[1].As<Napi::Object>(), &cfg);
  busy_ = true;
  auto* worker = new LoadWorker(env, this, cfg);
  Napi::Promise p = worker->Promise();
  worker->Queue();
  return p;
}

void Engine::Attach(Napi::Env env, llama_model* model, std::vector<Lane> lanes, const EngineConfig& cfg, size_t gpu_bytes) {
  model_ = model;
  vocab_ = llama_model_get_vocab(model);
  lanes_ = std::move(lanes);
  cfg_ = cfg;
  gpu_bytes_ = gpu_bytes;
  busy_ = false;
  tsfn_ = Napi::ThreadSafeFunction::New(env, Napi::Function::New(env, [](const Napi::CallbackInfo&) {}), "arbitra-score", 0, 1);
  tsfn_.Unref(env);
}

void Engine::Detach(llama_model** model, std::vector<Lane>* lanes) {
  *model = model_;
  *lanes = std::move(lanes_);
  lanes_.clear();
  for (Lane& lane : reference_) lanes->push_back(std::move(lane));
  reference_.clear();
  model_ = nullptr;
  vocab_ = nullptr;
}

Napi::Object Engine::Facts(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
  char desc[256] = {0};
  llama_model_desc(model_, desc, sizeof(desc));
  const QuantInfo q = quant_info(llama_model_ftype(model_));
  o.Set("architecture", model_meta(model_, "general.architecture"));
  o.Set("name", model_meta(model_, "general.name"));
  o.Set("description", std::string(desc));
  o.Set("parameters", static_cast<double>(llama_model_n_params(model_)));
  o.Set("modelBytes", static_cast<double>(llama_model_size(model_)));
  o.Set("trainingContext", llama_model_n_ctx_train(model_));
  o.Set("slidingWindow", llama_model_n_swa(model_));
  o.Set("quantMethod", q.method);
  o.Set("quantBits", q.bits > 0 ? Napi::Number::New(env, q.bits) : env.Null());
  o.Set("vocabSize", llama_vocab_n_tokens(vocab_));
  o.Set("backend", ARBITRA_BACKEND);
  o.Set("gpuMemoryMb", std::strcmp(ARBITRA_BACKEND, "cpu") == 0 ? env.Null() : Napi::Number::New(env, static_cast<double>(gpu_bytes_ / (1024 * 1024))));
  o.Set("llamaBuild", ARBITRA_LLAMA_BUILD);
  o.Set("cpuVariant", cfg_.cpu_variant);
  o.Set("cpuVariants", cpu_variant_names(env));
  o.Set("cpuProducts", cpu_int8_products());
  o.Set("threads", cfg_.n_threads);
  o.Set("contextSize", lanes_.front().max_tokens);
  o.Set("longContextSize", lanes_.back().max_tokens);
  o.Set("longSequences", lanes_.size() > 1 ? llama_n_seq_max(lanes_.back().ctx.get()) : 0);
  o.Set("batchSize", cfg_.n_batch);
  // How the scorer cuts work into decodes, for the service's estimate of what a request will take.
  o.Set("prefixChunk", prefix_chunk(cfg_.n_batch));
  o.Set("stepTargetMs", cfg_.step_target_ms);
  o.Set("maxStepMs", std::max(cfg_.max_step_ms, cfg_.step_target_ms));
  o.Set("maxSequences", llama_n_seq_max(lanes_.front().ctx.get()));
  o.Set("kvLayout", cfg_.layout == KvLayout::shared ? "shared" : "copied");
  o.Set("kernels", cfg_.exact_kernels ? "exact" : "fast");
  // What the contexts resolved, not what was asked: the promise of exact kernels covers only some
  // paths (src/engine/exact-path.ts judges these facts).
  bool flash_attn = true, on_layer_device = true, gather = true;
  for (const Lane& lane : lanes_) {
    const llama_attention_path path = llama_get_attention_path(lane.ctx.get());
    flash_attn = flash_attn && path.flash_attn;
    on_layer_device = on_layer_device && path.flash_attn_on_layer_device;
    gather = gather && path.kv_gather;
  }
  const int32_t asked = flash_attn_asked(cfg_.flash_attn, cfg_.exact_kernels);
  o.Set("flashAttentionAsked", asked < 0 ? "auto" : asked ? "on" : "off");
  o.Set("flashAttention", flash_attn);
  o.Set("flashAttentionOnLayerDevice", on_layer_device);
  o.Set("kvGather", gather);
  const int32_t offloadable = llama_model_n_layer(model_) + 1;
  o.Set("offloadableLayers", offloadable);
  o.Set("offloadedLayers", gpu_devices().empty() ? 0 : std::min(std::max(cfg_.n_gpu_layers, 0), offloadable));
  const AttentionShape shape = attention_shape(model_);
  o.Set("headSizeK", static_cast<double>(shape.head_k));
  o.Set("headSizeV", static_cast<double>(shape.head_v));
  o.Set("experts", static_cast<double>(shape.experts));
  size_t cells = 0;
  for (const Lane& lane : lanes_) cells += llama_n_ctx(lane.ctx.get());
  o.Set("kvCells", static_cast<double>(cells));
  o.Set("kvBytes", static_cast<double>(cells * kv_bytes_per_cell(model_)));
  o.Set("hasChatTemplate", llama_model_chat_template(model_, nullptr) != nullptr);
  return o;
}

Napi::Value Engine::Tokenize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RequireLoaded(env);
  if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(env, "tokenize(text, addSpecial?, parseSpecial?) needs a string");
  const std::string text = info[0].As<Napi::String>().Utf8Value();
  const bool add_special = info.Length() > 1 ? info[1].ToBoolean().Value() : true;
  const bool parse_special = info.Length() > 2 ? info[2].ToBoolean().Value() : true;
  std::vector<llama_token> out(text.size() + 8);
  int32_t n = llama_tokenize(vocab_, text.data(), static_cast<int32_t>(text.size()), out.data(), static_cast<int32_t>(out.size()), add_special, parse_special);
  if (n < 0) {
    out.resize(static_cast<size_t>(-n));
    n = llama_tokenize(vocab_, text.data(), static_cast<int32_t>(text.size()), out.data(), static_cast<int32_t>(out.size()), add_special, parse_special);
  }
  if (n < 0) throw coded_error(env, "invalid_request", "the text could not be tokenized");
  Napi::Int32Array arr = Napi::Int32Array::New(env, static_cast<size_t>(n));
  std::memcpy(arr.Data(), out.data(), static_cast<size_t>(n) * sizeof(llama_token));
  return arr;
}

Napi::Value Engine::Detokenize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RequireLoaded(env);
  std::vector<llama_token> tokens;
  try {
    tokens = to_tokens(info[0]);
  } catch (const std::invalid_argument& e) {
    throw Napi::TypeError::New(env, e.what());
  }
  const int32_t n_vocab = llama_vocab_n_tokens(vocab_);
  for (llama_token t : tokens) {
    if (t < 0 || t >= n_vocab) throw coded_error(env, "invalid_request", "token id " + std::to_string(t) + " is outside the vocabulary");
  }
  std::string text(tokens.size() * 8 + 16, '\0');
  int32_t n = llama_detokenize(vocab_, tokens.data(), static_cast<int32_t>(tokens.size()), text.data(), static_cast<int32_t>(text.size()), false, true);
  if (n < 0) {
    text.resize(static_cast<size_t>(-n));
    n = llama_detokenize(vocab_, tokens.data(), static_cast<int32_t>(tokens.size()), text.data(), static_cast<int32_t>(text.size()), false, true);
  }
  text.resize(static_cast<size_t>(std::max(0, n)));
  return Napi::String::New(env, text);
}

Napi::Value Engine::ApplyChatTemplate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RequireLoaded(env);
  if (info.Length() < 1 || !info[0].IsArray()) throw Napi::TypeError::New(env, "applyChatTemplate(messages) needs an array of {role, content}");
  const char* tmpl = llama_model_chat_template(model_, nullptr);
  if (tmpl == nullptr) return env.Null();
  // The strings must outlive the llama_chat_message pointers into them.
  Napi::Array list = info[0].As<Napi::Array>();
  std::vector<std::string> roles, contents;
  size_t total = 0;
  for (uint32_t i = 0; i < list.Length(); ++i) {
    Napi::Value item = list.Get(i);
    if (!item.IsObject()) throw Napi::TypeError::New(env, "each message must be {role, content}");
    Napi::Object m = item.As<Napi::Object>();
    if (!m.Get("role").IsString() || !m.Get("content").IsString()) throw Napi::TypeError::New(env, "each message must be {role, content} strings");
    roles.push_back(m.Get("role").As<Napi::String>().Utf8Value());
    contents.push_back(m.Get("content").As<Napi::String>().Utf8Value());
    // llama.cpp takes C strings: an embedded NUL would silently cut the message short.
    if (contents.back().find('\0') != std::string::npos) throw Napi::TypeError::New(env, "message content must not contain NUL characters");
    total += contents.back().size();
  }
  std::vector<llama_chat_message> msgs;
  for (size_t i = 0; i < roles.size(); ++i) msgs.push_back({roles[i].c_str(), contents[i].c_str()});
  std::vector<char> buf(total * 2 + 256);
  int32_t n = llama_chat_apply_template(tmpl, msgs.data(), msgs.size(), true, buf.data(), static_cast<int32_t>(buf.size()));
  if (n > static_cast<int32_t>(buf.size())) {
    buf.resize(static_cast<size_t>(n));
    n = llama_chat_apply_template(tmpl, msgs.data(), msgs.size(), true, buf.data(), static_cast<int32_t>(buf.size()));
  }
  if (n < 0) return env.Null();  // a template llama.cpp cannot render: the caller uses its plain layout
  return Napi::String::New(env, buf.data(), static_cast<size_t>(n));
}

Napi::Value Engine::Score(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
  auto job = std::make_unique<ScoreJob>();
  Lane* lane = nullptr;
  uint32_t ticket = 0;  // 0: the caller cannot cancel this job
  try {
    RequireLoaded(env);
    bool reference = false;
    ticket = read_score_args(info, job.get(), &reference);
    const size_t longest = validate_job(env, *job, llama_vocab_n_tokens(vocab_));
    if (reference && reference_.empty()) throw coded_error(env, "invalid_request", "no reference lane is open (openReference())");
    if (reference && job->prefix.size() + longest > reference_.front().max_tokens)
      throw coded_error(env, "context_exceeded", "the prompt is longer than the reference lane holds");
    lane = reference ? &reference_.front() : LaneFor(env, job->prefix.size(), longest);
  } catch (const Napi::Error& e) {
    deferred.Reject(e.Value());
    return deferred.Promise();
  }
  JobStarted(env, ticket, job->cancelled);
  job->on_done = settle_on_js_thread(tsfn_, new Settlement{this, deferred, ticket, nullptr});
  lane->scorer->submit(std::move(job));
  return deferred.Promise();
}

Lane* Engine::LaneFor(Napi::Env env, size_t prefix_tokens, size_t longest) {
  const size_t needed = prefix_tokens + longest;
  for (Lane& l : lanes_) {
    // The shared pool's scorer cuts a suffix longer than its batch into chunks; in the copied
    // layout a suffix is decoded in one call, so it must also fit the lane's batch.
    if (needed <= l.max_tokens && (cfg_.layout == KvLayout::shared || longest <= llama_n_batch(l.ctx.get()))) return &l;
  }
  const Lane& widest = lanes_.back();
  throw coded_error(
      env, "context_exceeded",
      longest > llama_n_batch(widest.ctx.get())
          ? "a branch suffix has " + std::to_string(longest) + " tokens, more than the batch size " + std::to_string(llama_n_batch(widest.ctx.get()))
          : "prefix and suffix need " + std::to_string(needed) + " tokens, more than the engine's context of " + std::to_string(widest.max_tokens));
}

Napi::Value Engine::Cancel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) throw Napi::TypeError::New(env, "cancel(ticket: number)");
  auto it = tickets_.find(info[0].As<Napi::Number>().Uint32Value());
  if (it == tickets_.end()) return Napi::Boolean::New(env, false);
  it->second->store(true);
  return Napi::Boolean::New(env, true);
}

void Engine::JobStarted(Napi::Env env, uint32_t ticket, const std::shared_ptr<std::atomic<bool>>& cancelled) {
  if (pending_++ == 0) {
    tsfn_.Ref(env);
    Ref();
  }
  if (ticket != 0) tickets_[ticket] = cancelled;
}

void Engine::JobSettled(Napi::Env env, uint32_t ticket) {
  if (ticket != 0) tickets_.erase(ticket);
  if (--pending_ == 0) {
    tsfn_.Unref(env);
    Unref();
  }
}

Napi::Value Engine::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  ScorerStats s;
  for (Lane& lane : lanes_) s += lane.scorer->stats();
  o.Set("decodes", static_cast<double>(s.decodes));
  o.Set("tokensEvaluated", static_cast<double>(s.tokens_evaluated));
  o.Set("branchesScored", static_cast<double>(s.branches_scored));
  o.Set("jobsDone", static_cast<double>(s.jobs_done));
  o.Set("jobsCancelled", static_cast<double>(s.jobs_cancelled));
  o.Set("lastBatchTokens", static_cast<double>(s.last_batch_tokens));
  o.Set("lastBatchBranches", static_cast<double>(s.last_batch_branches));
  o.Set("queueDepth", static_cast<double>(s.queue_depth));
  o.Set("cachedPrefixes", static_cast<double>(s.cached_prefixes));
  o.Set("kvCellsHeld", static_cast<double>(s.kv_cells_held));
  o.Set("kvCellsPeak", static_cast<double>(s.kv_cells_peak));
  o.Set("decodeSeconds", s.decode_seconds);
  o.Set("readoutSeconds", s.readout_seconds);
  Napi::Object cost = Napi::Object::New(env);
  cost.Set("perDecodeMs", s.cost.per_decode_ms);
  cost.Set("perTokenMs", s.cost.per_token_ms);
  cost.Set("perRowMs", s.cost.per_row_ms);
  cost.Set("decodesObserved", static_cast<double>(s.cost.observed));
  o.Set("cost", cost);
  o.Set("stalledMs", s.stalled_ms);
  o.Set("stepTokens", static_cast<double>(s.step_tokens));
  o.Set("stepRows", static_cast<double>(s.step_rows));
  o.Set("loneDecodes", static_cast<double>(s.lone_decodes));
  o.Set("pending", static_cast<double>(pending_));
  return o;
}

Napi::Value Engine::ForgetCache(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RequireLoaded(env);
  for (Lane& lane : lanes_) lane.scorer->forget_cached();
  return env.Undefined();
}

Napi::Value Engine::OpenReference(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RequireLoaded(env);
  if (!reference_.empty()) return env.Undefined();
  // Small: it scores one probe at a time. Built on the JS thread, while the engine serves nothing yet.
  LaneSpec spec;
  spec.layout = KvLayout::shared;
  spec.cells = kReferenceCells;
  spec.n_seq = 8;
  spec.n_batch = kReferenceBatch;
  spec.n_ubatch = kReferenceBatch;
  spec.n_threads = cfg_.n_threads;
  // The stock kernels on the attention path the main lane resolved, so that only the kernels differ.
  spec.flash_attn = llama_get_attention_path(lanes_.front().ctx.get()).flash_attn ? 1 : 0;
  spec.exact_kernels = false;
  spec.prefix_cache_tokens = 0;
  spec.prefix_chunk = prefix_chunk(kReferenceBatch);
  Lane lane;
  if (!make_lane(model_, spec, &lane)) throw coded_error(env, "unavailable", "could not create a context on the stock kernels");
  reference_.push_back(std::move(lane));
  return env.Undefined();
}

Napi::Value Engine::CloseReference(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  for (Lane& lane : reference_) {
    for (auto& job : lane.scorer->stop()) {
      job->error = "the reference lane was closed before the job finished";
      job->error_code = "closed";
      auto done = std::move(job->on_done);
      done(std::move(job));
    }
  }
  reference_.clear();
  return env.Undefined();
}

Napi::Value Engine::FaultStall(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) throw Napi::TypeError::New(env, "faultStall(decodes: number)");
  RequireLoaded(env);
  const int64_t more = info[0].As<Napi::Number>().Int64Value();
  for (Lane& lane : lanes_) lane.scorer->stall_after(static_cast<uint64_t>(std::max<int64_t>(1, more)));
  return env.Undefined();
}

Napi::Value Engine::Close(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (busy_) throw coded_error(env, "unavailable", "the engine is loading or closing");
  if (model_ == nullptr) {
    Napi::Promise::Deferred d = Napi::Promise::Deferred::New(env);
    d.Resolve(env.Undefined());
    return d.Promise();
  }
  auto* worker = new CloseWorker(env, this);
  Napi::Promise p = worker->Promise();
  worker->Queue();
  return p;
}

}  // namespace arbitra
