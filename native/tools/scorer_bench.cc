// Measures the engine's C++ core without Node: the model is loaded and every lane built through
// load_model and make_lane, and jobs go to the lane's Scorer, as the service's engine does. Token
// ids are random, so no tokenizer (and no real model: a synthetic GGUF will do) is needed.
// One JSON object per line on stdout, also appended to --json FILE.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cpu_products.h"
#include "cpu_variant.h"
#include "ggml-backend.h"
#include "lane.h"
#include "llama.h"
#include "model_facts.h"

using namespace arbitra;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct Options {
  std::string model;
  KvLayout layout = KvLayout::shared;
  int32_t gpu_layers = 999;
  int32_t threads = 0;
  uint32_t cells = 0;  // 0: the layout's default
  uint32_t seqs = 0;   // 0: the default
  uint64_t seed = 1;
  int32_t flash_attn = -1;    // as the engine's flashAttention: -1 auto, 0 off, 1 on
  bool exact_kernels = true;  // as the engine's kernels: "exact" unless --kernels fast
  int kv_gather = -1;         // as the engine's kvGather: see kv_gather_on
  uint32_t in_flight = 8;
  double seconds = 10.0;  // per decisions point
  std::set<std::string> only;
  bool quick = false;
  std::string json;
  std::string cpu_variant = "auto";  // a variants build's CPU module, as the engine's --cpu-variant
};

// One output line: keys in the order they were added.
class Line {
 public:
  explicit Line(const std::string& bench) { str("bench", bench); }
  Line& str(const std::string& k, const std::string& v) {
    failed_ = failed_ || k == "error";
    std::string q = "\"";
    for (char c : v) {
      if (c == '"' || c == '\\') q += '\\';
      if (static_cast<unsigned char>(c) >= 0x20) q += c;
    }
    return raw(k, q + "\"");
  }
  Line& num(const std::string& k, double v) {
    if (!std::isfinite(v)) return raw(k, "null");
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.6g", v);
    return raw(k, buf);
  }
  Line& boolean(const std::string& k, bool v) { return raw(k, v ? "true" : "false"); }
  Line& raw(const std::string& k, const std::string& v) {
    body_ += (body_.empty() ? "{\"" : ",\"") + k + "\":" + v;
    return *this;
  }
  std::string text() const { return body_ + "}"; }
  bool failed() const { return failed_; }

 private:
  std::string body_;
  bool failed_ = false;
};

std::string g_json_path;
bool g_failed = false;  // some line reported an error: the exit status says so

void emit(const Line& line) {
  g_failed = g_failed || line.failed();
  const std::string s = line.text();
  std::printf("%s\n", s.c_str());
  std::fflush(stdout);
  if (!g_json_path.empty()) {
    std::ofstream f(g_json_path, std::ios::app);
    f << s << "\n";
  }
}

double rss_mib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  }
  return NAN;
}

double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

struct Result {
  int64_t tag = 0;
  double ms = 0;
  std::string error;
  std::vector<std::vector<float>> logprobs;
  int64_t evaluated = 0;
  int64_t cached = 0;
};

// Submits jobs and collects what their on_done hands back (on the scorer's thread).
class Tracker {
 public:
  void submit(Scorer& scorer, std::unique_ptr<ScoreJob> job, int64_t tag) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      ++in_flight_;
    }
    const auto t0 = Clock::now();
    job->on_done = [this, tag, t0](std::unique_ptr<ScoreJob> j) {
      Result r;
      r.tag = tag;
      r.ms = ms_since(t0);
      r.error = j->error;
      r.logprobs = std::move(j->logprobs);
      r.evaluated = j->evaluated;
      r.cached = j->cached;
      std::lock_guard<std::mutex> lk(mu_);
      results_.push_back(std::move(r));
      --in_flight_;
      cv_.notify_all();
    };
    scorer.submit(std::move(job));
  }
  void wait_below(int n) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return in_flight_ < n; });
  }
  std::vector<Result> drain() {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return in_flight_ == 0; });
    return std::move(results_);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int in_flight_ = 0;
  std::vector<Result> results_;
};

class Bench {
 public:
  Bench(const Options& o, llama_model* model) : o_(o), model_(model), rng_(o.seed) {
    n_vocab_ = llama_vocab_n_tokens(llama_model_get_vocab(model));
    train_ = static_cast<uint32_t>(std::max(1, llama_model_n_ctx_train(model)));
  }

  const char* layout_name() const { return o_.layout == KvLayout::shared ? "shared" : "copied"; }
  uint32_t seqs() const { return o_.seqs > 0 ? o_.seqs : (o_.quick ? 8 : 64); }
  // The engine's defaults (EngineConfig, LoadWorker); --quick shrinks them for a small CPU.
  uint32_t default_cells() const { return default_cells(o_.layout); }
  uint32_t default_cells(KvLayout layout) const {
    if (o_.cells > 0) return o_.cells;
    if (layout == KvLayout::copied) return o_.quick ? 2048 : 4096;
    return std::min<uint32_t>(train_, o_.quick ? 8192 : 32768) + kBatch;
  }

  Line line(const std::string& bench) const {
    Line l(bench);
    l.str("layout", layout_name());
    return l;
  }

  bool gathers() const { return kv_gather_on(o_.kv_gather, o_.exact_kernels, o_.gpu_layers); }

  // As the engine's AddLane builds them.
  bool make(uint32_t cells, Lane* lane) const { return make(cells, lane, o_.layout); }
  bool make(uint32_t cells, Lane* lane, KvLayout layout) const {
    LaneSpec spec;
    spec.layout = layout;
    spec.cells = cells;
    spec.n_seq = seqs();
    spec.n_batch = kBatch;
    spec.n_ubatch = 512;
    spec.n_threads = o_.threads;
    spec.flash_attn = o_.flash_attn;
    spec.exact_kernels = o_.exact_kernels;
    spec.kv_gather = gathers();
    spec.prefix_cache_tokens = 4096;
    spec.prefix_chunk = std::min<uint32_t>(512, kBatch);
    return make_lane(model_, spec, lane);
  }

  std::vector<llama_token> tokens(size_t n) {
    std::uniform_int_distribution<int32_t> d(0, n_vocab_ - 1);
    std::vector<llama_token> t(n);
    for (auto& x : t) x = d(rng_);
    return t;
  }

  std::unique_ptr<ScoreJob> job(size_t prefix, size_t branches, size_t suffix, size_t candidates) {
    auto j = std::make_unique<ScoreJob>();
    j->prefix = tokens(prefix);
    for (size_t b = 0; b < branches; ++b) j->branches.push_back({tokens(suffix), tokens(candidates)});
    return j;
  }

  // One small job first: the first decode of a context pays one-time setup (kernels, graphs).
  void warm(Lane& lane) {
    Tracker t;
    t.submit(*lane.scorer, job(64, 2, 8, 2), 0);
    t.drain();
  }

  static std::string first_error(const std::vector<Result>& rs) {
    for (const auto& r : rs) {
      if (!r.error.empty()) return r.error;
    }
    return "";
  }

  // Cold prefixes only: comparable with llama-bench's pp512 (tokens/s of 512-token prompts).
  void prefill(Lane& lane) {
    const size_t jobs = o_.quick ? 2 : 8;
    const int reps = o_.quick ? 1 : 3;
    const size_t len = 512;
    std::vector<double> rates;
    ScorerStats before = lane.scorer->stats();
    const auto t_all = Clock::now();
    std::string error;
    for (int r = 0; r < reps && error.empty(); ++r) {
      Tracker t;
      const auto t0 = Clock::now();
      for (size_t i = 0; i < jobs; ++i) t.submit(*lane.scorer, job(len, 1, 1, 1), static_cast<int64_t>(i));
      error = first_error(t.drain());
      rates.push_back(static_cast<double>(jobs * len) / (ms_since(t0) / 1000.0));
    }
    const double secs = ms_since(t_all) / 1000.0;
    ScorerStats after = lane.scorer->stats();
    Line l = line("prefill");
    l.num("jobs", static_cast<double>(jobs)).num("prefix_tokens", static_cast<double>(len)).num("reps", reps);
    l.num("prefix_tok_s", percentile(rates, 0.5)).num("prefix_tok_s_best", *std::max_element(rates.begin(), rates.end()));
    l.num("evaluated_tok_s", static_cast<double>(after.tokens_evaluated - before.tokens_evaluated) / secs);
    l.num("decodes", static_cast<double>(after.decodes - before.decodes));
    if (!error.empty()) l.str("error", error);
    emit(l);
  }

  // Closed loop: `in_flight` decisions outstanding at all times, each a cold 1,000-token state
  // (250 with --quick) and one branch per question, as a request without debiasing passes sends them.
  void decisions(Lane& lane) {
    const size_t state = o_.quick ? 250 : 1000, suffix = 24;
    const std::vector<size_t> questions = o_.quick ? std::vector<size_t>{1, 4} : std::vector<size_t>{1, 4, 16};
    const int in_flight = static_cast<int>(o_.quick ? std::min<uint32_t>(o_.in_flight, 2) : o_.in_flight);
    const double seconds = o_.quick ? 0.0 : o_.seconds;
    for (size_t q : questions) {
      Tracker t;
      const ScorerStats before = lane.scorer->stats();
      const auto t0 = Clock::now();
      int64_t submitted = 0;
      // At least two rounds of in-flight jobs (one with --quick), then until the time is up.
      const int64_t at_least = (o_.quick ? 1 : 2) * in_flight;
      while (submitted < at_least || ms_since(t0) < seconds * 1000.0) {
        auto j = job(state, q, suffix, 2);
        t.wait_below(in_flight);
        t.submit(*lane.scorer, std::move(j), submitted++);
      }
      const std::vector<Result> rs = t.drain();
      const double secs = ms_since(t0) / 1000.0;
      const ScorerStats after = lane.scorer->stats();
      std::vector<double> ms;
      for (const auto& r : rs) ms.push_back(r.ms);
      Line l = line("decisions");
      l.num("questions", static_cast<double>(q)).num("state_tokens", state).num("suffix_tokens", suffix).num("in_flight", in_flight);
      l.num("decisions", static_cast<double>(rs.size())).num("seconds", secs);
      l.num("decisions_s", static_cast<double>(rs.size()) / secs).num("branches_s", static_cast<double>(rs.size() * q) / secs);
      l.num("evaluated_tok_s", static_cast<double>(after.tokens_evaluated - before.tokens_evaluated) / secs);
      l.num("p50_ms", percentile(ms, 0.5)).num("p99_ms", percentile(ms, 0.99));
      l.num("decodes", static_cast<double>(after.decodes - before.decodes));
      const std::string error = first_error(rs);
      if (!error.empty()) l.str("error", error);
      emit(l);
    }
  }

  // A lane sized for exactly one request of each length: what that request costs in each layout.
  void memory() {
    const size_t branches = 4, suffix = 24;
    for (uint32_t len : {200u, 2000u, 30000u}) {
      if (len + 64 > train_) {
        emit(line("memory").num("state_tokens", len).str("skipped", "longer than the model's training context of " + std::to_string(train_)));
        continue;
      }
      if (o_.quick && len > 200) {
        emit(line("memory").num("state_tokens", len).str("skipped", "--quick"));
        continue;
      }
      const uint32_t cells = o_.layout == KvLayout::copied ? (len + 64 + 255) / 256 * 256 : len + 64 + kBatch;
      const double rss0 = rss_mib();
      const size_t gpu0 = gpu_memory_used();
      Line l = line("memory");
      l.num("state_tokens", len).num("branches", branches).num("suffix_tokens", suffix);
      l.num("tokens_in_flight", static_cast<double>(len + suffix * branches));
      {
        Lane lane;
        if (!make(cells, &lane)) {
          emit(l.num("cells_asked", cells).str("error", "llama.cpp could not create the context"));
          continue;
        }
        const double rss1 = rss_mib();
        const size_t gpu1 = gpu_memory_used();
        const uint32_t n_ctx = llama_n_ctx(lane.ctx.get());
        Tracker t;
        const auto t0 = Clock::now();
        t.submit(*lane.scorer, job(len, branches, suffix, 2), 0);
        const std::vector<Result> rs = t.drain();
        const double ms = ms_since(t0);
        const double rss2 = rss_mib();
        const size_t gpu2 = gpu_memory_used();
        l.num("seqs", seqs()).num("cells", n_ctx);
        l.num("kv_mib", mib(static_cast<double>(n_ctx) * static_cast<double>(kv_bytes_per_cell(model_))));
        l.num("rss_mib", rss2).num("rss_lane_mib", rss1 - rss0).num("rss_scored_mib", rss2 - rss0);
        l.num("gpu_lane_mib", mib(static_cast<double>(gpu1) - static_cast<double>(gpu0)));
        l.num("gpu_scored_mib", mib(static_cast<double>(gpu2) - static_cast<double>(gpu0)));
        l.num("gpu_used_mib", mib(static_cast<double>(gpu2)));
        l.num("score_ms", ms);
        const std::string error = first_error(rs);
        if (!error.empty()) l.str("error", error);
      }
      emit(l);
    }
  }

  // Scores may not depend on what else is in the batch, nor on whether the prefix, or any head of
  // it, was cached.
  void determinism() {
    const size_t prefix = o_.quick ? 300 : 700;  // two prefix chunks unless --quick
    auto probe = job(prefix, 4, 1, 4);
    const size_t suffixes[] = {3, 8, 17, 24};
    std::string suffix_list;
    for (size_t b = 0; b < 4; ++b) {
      probe->branches[b].suffix = tokens(suffixes[b]);
      suffix_list += (b == 0 ? "[" : ",") + std::to_string(suffixes[b]);
    }
    suffix_list += "]";
    const size_t others = o_.quick ? 3 : 8;

    auto copy = [&probe] {
      auto j = std::make_unique<ScoreJob>();
      j->prefix = probe->prefix;
      j->branches = probe->branches;
      return j;
    };
    // Probe submitted in the middle of jobs of other lengths, so it shares their decodes.
    auto crowded = [&](Lane& lane) {
      Tracker t;
      std::uniform_int_distribution<size_t> plen(50, 1500), nb(1, 8), slen(2, 40);
      for (size_t i = 0; i < others; ++i) {
        if (i == others / 2) t.submit(*lane.scorer, copy(), -1);
        t.submit(*lane.scorer, job(plen(rng_), nb(rng_), slen(rng_), 2), static_cast<int64_t>(i));
      }
      for (auto& r : t.drain()) {
        if (r.tag == -1) return r;
      }
      return Result{};
    };
    auto alone = [&](Lane& lane) {
      Tracker t;
      t.submit(*lane.scorer, copy(), -1);
      return std::move(t.drain().front());
    };

    // The probe after another prompt that shares its first `head` tokens, a cut at no chunk or tile
    // boundary: the cached head is trimmed off the other prompt's copy and the rest decoded.
    const size_t head = prefix / 2 + 7;
    auto head_cached = [&](Lane& lane) {
      auto other = job(prefix, 1, 5, 2);
      std::copy(probe->prefix.begin(), probe->prefix.begin() + static_cast<std::ptrdiff_t>(head), other->prefix.begin());
      Tracker t;
      t.submit(*lane.scorer, std::move(other), 0);
      t.drain();
      return alone(lane);
    };

    Result cold_alone, cached_alone, cold_crowded, cached_crowded, cached_head, other_layout;
    {
      Lane lane;
      if (!make(default_cells(), &lane)) return emit(line("determinism").str("error", "llama.cpp could not create the context"));
      cold_alone = alone(lane);
      cached_alone = alone(lane);
    }
    {
      // A fresh lane: the probe's prefix must be cold again.
      Lane lane;
      if (!make(default_cells(), &lane)) return emit(line("determinism").str("error", "llama.cpp could not create the context"));
      cold_crowded = crowded(lane);
      cached_crowded = crowded(lane);
    }
    {
      Lane lane;
      if (!make(default_cells(), &lane)) return emit(line("determinism").str("error", "llama.cpp could not create the context"));
      cached_head = head_cached(lane);
    }
    {
      // The same probe in the other layout: a shared pool must give what a stream of its own gives.
      const KvLayout other = o_.layout == KvLayout::shared ? KvLayout::copied : KvLayout::shared;
      Lane lane;
      if (!make(default_cells(other), &lane, other)) return emit(line("determinism").str("error", "llama.cpp could not create the context"));
      other_layout = alone(lane);
    }
    const double tolerance = 1e-3;
    const std::pair<const char*, const Result*> cases[] = {{"cold_vs_cached", &cached_alone},
                                                           {"alone_vs_batched", &cold_crowded},
                                                           {"alone_vs_batched_cached", &cached_crowded},
                                                           {"cold_vs_head_cached", &cached_head},
                                                           {"copied_vs_shared", &other_layout}};
    for (const auto& [name, other] : cases) {
      Line l = line("determinism");
      const std::string which(name);
      l.str("compare", name).num("prefix_tokens", static_cast<double>(prefix)).raw("suffix_tokens", suffix_list);
      l.num("other_jobs", which == "alone_vs_batched" || which == "alone_vs_batched_cached" ? static_cast<double>(others) : 0);
      if (which == "cold_vs_head_cached") l.num("head_tokens", static_cast<double>(head)).num("cached_tokens", static_cast<double>(other->cached));
      const std::string error = !cold_alone.error.empty() ? cold_alone.error : other->error;
      if (!error.empty() || cold_alone.logprobs.size() != other->logprobs.size()) {
        emit(l.str("error", error.empty() ? "the probe was not scored" : error));
        continue;
      }
      double diff = 0;
      std::string by_branch;
      for (size_t b = 0; b < cold_alone.logprobs.size(); ++b) {
        double d = 0;
        for (size_t c = 0; c < cold_alone.logprobs[b].size(); ++c) {
          const double e = std::fabs(static_cast<double>(cold_alone.logprobs[b][c]) - static_cast<double>(other->logprobs[b][c]));
          d = std::isnan(e) ? INFINITY : std::max(d, e);  // a NaN must fail the check, not vanish in max()
        }
        char buf[32];
        std::snprintf(buf, sizeof(buf), "%s%.3g", b == 0 ? "" : ",", d);
        by_branch += buf;
        diff = std::max(diff, d);
      }
      l.num("max_abs_diff", diff).boolean("within_1e-3", diff <= tolerance).raw("by_branch", "[" + by_branch + "]");
      emit(l);
    }
  }

  static constexpr uint32_t kBatch = 2048;
  // A context just large enough to read what a layout resolves (flash attention, the gather).
  static constexpr uint32_t kResolveCells = 256;

 private:
  const Options& o_;
  llama_model* model_;
  std::mt19937_64 rng_;
  int32_t n_vocab_ = 0;
  uint32_t train_ = 0;
};

void quiet_log(ggml_log_level level, const char* text, void*) {
  static const bool verbose = std::getenv("ARBITRA_LLAMA_LOG") != nullptr;
  if (verbose || level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "arbitra-scorer-bench: %s\n"
               "usage: arbitra-scorer-bench --model PATH [--layout copied|shared] [--gpu-layers N] [--threads N]\n"
               "         [--cells N] [--seqs N] [--seed N] [--flash-attn auto|on|off] [--kernels exact|fast]\n"
               "         [--kv-gather auto|on|off] [--in-flight N] [--seconds S] [--cpu-variant auto|NAME]\n"
               "         [--only prefill,decisions,memory,determinism] [--quick] [--json FILE]\n",
               why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      o.quick = true;
      continue;
    }
    if (i + 1 >= argc) usage(("missing value after " + a).c_str());
    const std::string v = argv[++i];
    if (a == "--model")
      o.model = v;
    else if (a == "--layout" && (v == "copied" || v == "shared"))
      o.layout = v == "shared" ? KvLayout::shared : KvLayout::copied;
    else if (a == "--gpu-layers")
      o.gpu_layers = std::atoi(v.c_str());
    else if (a == "--threads")
      o.threads = std::atoi(v.c_str());
    else if (a == "--cells")
      o.cells = static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 10));
    else if (a == "--seqs")
      o.seqs = static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 10));
    else if (a == "--seed")
      o.seed = std::strtoull(v.c_str(), nullptr, 10);
    else if (a == "--flash-attn" && (v == "auto" || v == "on" || v == "off"))
      o.flash_attn = v == "on" ? 1 : v == "off" ? 0 : -1;
    else if (a == "--kernels" && (v == "exact" || v == "fast"))
      o.exact_kernels = v == "exact";
    else if (a == "--kv-gather" && (v == "auto" || v == "on" || v == "off"))
      o.kv_gather = v == "on" ? 1 : v == "off" ? 0 : -1;
    else if (a == "--in-flight")
      o.in_flight = std::max(1u, static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 10)));
    else if (a == "--seconds")
      o.seconds = std::strtod(v.c_str(), nullptr);
    else if (a == "--json")
      o.json = v;
    else if (a == "--cpu-variant")
      o.cpu_variant = v;
    else if (a == "--only") {
      std::stringstream ss(v);
      for (std::string m; std::getline(ss, m, ',');) {
        if (m != "prefill" && m != "decisions" && m != "memory" && m != "determinism") usage(("unknown measurement " + m).c_str());
        o.only.insert(m);
      }
    } else
      usage(("bad option " + a + " " + v).c_str());
  }
  if (o.model.empty()) usage("--model is required");
  if (o.threads <= 0) o.threads = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  if (o.only.empty()) o.only = {"prefill", "decisions", "memory", "determinism"};
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  g_json_path = o.json;
  llama_log_set(quiet_log, nullptr);
  // Before the first model, as the engine does: in a variants build no CPU backend is loaded until then.
  std::string cpu_variant;
  try {
    cpu_variant = arbitra::use_cpu_variant(o.cpu_variant);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "arbitra-scorer-bench: %s\n", e.what());
    return 2;
  }
  llama_backend_init();

  std::string devices;
  for (ggml_backend_dev_t dev : gpu_devices()) {
    devices += std::string(devices.empty() ? "" : "; ") + ggml_backend_dev_name(dev) + " " + ggml_backend_dev_description(dev);
  }
  const size_t gpu0 = gpu_memory_used();
  const auto t0 = Clock::now();
  llama_model* model = load_model(o.model, o.gpu_layers);
  if (model == nullptr) {
    std::fprintf(stderr, "arbitra-scorer-bench: failed to load the model: %s\n", o.model.c_str());
    return 1;
  }
  const double load_ms = ms_since(t0);
  Bench bench(o, model);

  Line setup = bench.line("setup");
  setup.str("model", o.model.substr(o.model.find_last_of('/') + 1)).str("arch", model_meta(model, "general.architecture"));
  setup.str("quant", quant_info(static_cast<llama_ftype>(std::atoi(model_meta(model, "general.file_type").c_str()))).method);
  setup.num("params", static_cast<double>(llama_model_n_params(model))).num("model_mib", mib(static_cast<double>(llama_model_size(model))));
  setup.num("n_layer", llama_model_n_layer(model)).num("n_embd", llama_model_n_embd(model));
  setup.num("n_vocab", llama_vocab_n_tokens(llama_model_get_vocab(model))).num("n_ctx_train", llama_model_n_ctx_train(model));
  setup.num("kv_bytes_per_cell", static_cast<double>(kv_bytes_per_cell(model)));
  setup.str("cpu_variant", cpu_variant).str("cpu_products", arbitra::cpu_int8_products());
  setup.num("cells", bench.default_cells()).num("seqs", bench.seqs()).num("gpu_layers", o.gpu_layers).num("threads", o.threads);
  // What was asked, then what a context of this layout resolved (flash attention, where it runs, the gather).
  const int32_t fa_asked = flash_attn_asked(o.flash_attn, o.exact_kernels);
  setup.str("flash_attn", fa_asked < 0 ? "auto" : fa_asked ? "on" : "off").str("kernels", o.exact_kernels ? "exact" : "fast");
  {
    Lane resolved;
    if (bench.make(Bench::kResolveCells, &resolved)) {
      const llama_attention_path path = llama_get_attention_path(resolved.ctx.get());
      setup.boolean("flash_attn_resolved", path.flash_attn).boolean("flash_attn_on_layer_device", path.flash_attn_on_layer_device);
      setup.boolean("kv_gather", path.kv_gather);
    }
  }
  setup.str("gpus", devices).num("gpu_model_mib", mib(static_cast<double>(gpu_memory_used()) - static_cast<double>(gpu0)));
  setup.num("load_ms", load_ms).boolean("quick", o.quick);
  emit(setup);

  int rc = 0;
  if (o.only.count("prefill") || o.only.count("decisions")) {
    Lane lane;
    if (!bench.make(bench.default_cells(), &lane)) {
      emit(bench.line("lane").num("cells", bench.default_cells()).str("error", "llama.cpp could not create the context"));
      rc = 1;
    } else {
      bench.warm(lane);
      if (o.only.count("prefill")) bench.prefill(lane);
      if (o.only.count("decisions")) bench.decisions(lane);
    }
  }
  if (o.only.count("memory")) bench.memory();
  if (o.only.count("determinism")) bench.determinism();
  llama_model_free(model);
  llama_backend_free();
  return rc != 0 || g_failed ? 1 : 0;
}
