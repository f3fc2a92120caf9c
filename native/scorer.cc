#include "scorer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace arbitra {

struct PrefixEntry {
  llama_seq_id seq = -1;
  std::vector<llama_token> tokens;
  size_t decoded = 0;  // leading tokens already in the KV cache
  int refs = 0;        // active jobs using it
  uint64_t last_used = 0;
  // Set while this entry's next tokens sit in the batch being built.
  int32_t step_begin = -1;
  int32_t step_count = 0;
  // The cache scope and shared head of the job that made it (ScoreJob::scope, shared_head).
  uint64_t scope = 0;
  size_t shared_head = 0;
};

namespace {

// How many of the entry's leading tokens the job may reuse: every one within its scope; across
// scopes no more than the head both share with everyone.
size_t reusable(const PrefixEntry& e, const ScoreJob& job) { return e.scope == job.scope ? e.tokens.size() : std::min(e.shared_head, job.shared_head); }

// Chunks shorter than this are not put beside other work (a prefix's last few tokens still are).
constexpr size_t kMinChunk = 32;

size_t common_prefix(const std::vector<llama_token>& a, const std::vector<llama_token>& b, size_t limit) {
  size_t n = std::min({a.size(), b.size(), limit});
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

// Shifted by the largest logit, so that no exp overflows.
double log_sum_exp(const float* logits, int32_t n_vocab) {
  float max_logit = logits[0];
  for (int32_t t = 1; t < n_vocab; ++t) max_logit = std::max(max_logit, logits[t]);
  double sum = 0.0;
  for (int32_t t = 0; t < n_vocab; ++t) sum += std::exp(static_cast<double>(logits[t] - max_logit));
  return static_cast<double>(max_logit) + std::log(sum);
}

void batch_add(llama_batch& batch, llama_token token, llama_pos pos, llama_seq_id seq, bool logits) {
  const int32_t i = batch.n_tokens++;
  batch.token[i] = token;
  batch.pos[i] = pos;
  batch.n_seq_id[i] = 1;
  batch.seq_id[i][0] = seq;
  batch.logits[i] = logits ? 1 : 0;
}

}  // namespace

Scorer::Scorer(std::unique_ptr<ModelOps> model, const ScorerOptions& opts, bool own_thread)
    : model_(std::move(model)), n_vocab_(model_->n_vocab()), opts_(opts), batch_(model_->batch()) {
  // Falling order, so that pop_back hands out the lowest free id (see free_seq).
  for (int s = static_cast<int>(opts_.n_seq_max) - 1; s >= 0; --s) free_seqs_.push_back(s);
  if (own_thread) thread_ = std::thread([this] { loop(); });
}

Scorer::~Scorer() { stop(); }

void Scorer::submit(std::unique_ptr<ScoreJob> job) {
  job->logprobs.resize(job->branches.size());
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!stopping_) {
      // Work arriving at an idle scorer starts the liveness clock: it is now owed a decode.
      if (stats_.queue_depth == 0) progress_at_ = std::chrono::steady_clock::now();
      incoming_.push_back(std::move(job));
      stats_.queue_depth++;  // active_ belongs to the loop thread; finish() recounts exactly
      cv_.notify_one();
      return;
    }
  }
  job->error = "the engine is closed";
  job->error_code = "closed";
  auto done = std::move(job->on_done);
  done(std::move(job));
}

std::vector<std::unique_ptr<ScoreJob>> Scorer::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  std::vector<std::unique_ptr<ScoreJob>> left;
  std::lock_guard<std::mutex> lk(mu_);
  for (auto& j : active_) left.push_back(std::move(j));
  for (auto& j : incoming_) left.push_back(std::move(j));
  active_.clear();
  incoming_.clear();
  prefixes_.clear();
  return left;
}

ScorerStats Scorer::stats() {
  std::lock_guard<std::mutex> lk(mu_);
  ScorerStats s = stats_;
  s.stalled_ms = s.queue_depth == 0 ? 0.0 : std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - progress_at_).count();
  return s;
}

void Scorer::loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [this] { return stopping_ || !incoming_.empty() || !active_.empty(); });
      if (stopping_) return;
      if (stall_at_ > 0 && stats_.decodes >= stall_at_) {
        // The injected wedge: hold the work, decode nothing, until stopped.
        cv_.wait(lk, [this] { return stopping_; });
        return;
      }
    }
    run_once();
  }
}

bool Scorer::run_once() {
  bool forget = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& j : incoming_) {
      j->last_served = ++serve_clock_;
      active_.push_back(std::move(j));
    }
    incoming_.clear();
    std::swap(forget, forget_);
  }
  if (forget) {
    while (evict_one_idle(nullptr)) {
    }
  }
  if (active_.empty()) return false;
  if (!step()) {
    // Nothing could be scheduled although work is waiting: only possible when a job can never fit.
    fail_all_active("the engine could not schedule the request (sequence or batch limits too small)", "internal");
  }
  return true;
}

bool Scorer::alloc_seq(llama_seq_id* out) {
  if (free_seqs_.empty() && !evict_one_idle(nullptr)) return false;
  *out = free_seqs_.back();
  free_seqs_.pop_back();
  return true;
}

void Scorer::free_seq(llama_seq_id seq) {
  model_->seq_rm(seq, -1);
  // Kept in falling order, so the lowest free id is always handed out next: a LIFO list handed
  // them out in falling order every other decode, and the copied layout's decodes took 190 or
  // 250 ms for the same shape by which streams they touched.
  free_seqs_.insert(std::upper_bound(free_seqs_.begin(), free_seqs_.end(), seq, std::greater<llama_seq_id>()), seq);
}

bool Scorer::evict_one_idle(const PrefixEntry* keep) {
  auto victim = prefixes_.end();
  for (auto it = prefixes_.begin(); it != prefixes_.end(); ++it) {
    if (it->refs > 0 || &*it == keep || it->step_begin >= 0) continue;
    if (victim == prefixes_.end() || it->last_used < victim->last_used) victim = it;
  }
  if (victim == prefixes_.end()) return false;
  free_seq(victim->seq);
  prefixes_.erase(victim);
  return true;
}

void Scorer::trim_cache() {
  for (;;) {
    size_t idle_tokens = 0;
    for (const auto& e : prefixes_) {
      if (e.refs == 0) idle_tokens += e.decoded;
    }
    if (idle_tokens <= opts_.prefix_cache_tokens || !evict_one_idle(nullptr)) return;
  }
}

PrefixEntry* Scorer::acquire_prefix(ScoreJob* job) {
  const std::vector<llama_token>& tokens = job->prefix;
  for (auto& e : prefixes_) {
    if (e.scope != job->scope || e.tokens != tokens) continue;
    e.refs++;
    e.last_used = ++clock_;
    job->cached = static_cast<int64_t>(e.decoded);
    return &e;
  }
  // Prefixes in use may hold at most half of the sequences, so branches always find free ones.
  const auto in_use = static_cast<size_t>(std::count_if(prefixes_.begin(), prefixes_.end(), [](const PrefixEntry& e) { return e.refs > 0; }));
  if (in_use >= prefix_slots()) return nullptr;
  size_t best = 0;
  PrefixEntry* donor = longest_head(*job, &best);
  if (!make_room(tokens.size(), donor)) return nullptr;
  if (donor == nullptr) best = 0;
  llama_seq_id seq;
  if (free_seqs_.empty() && !evict_one_idle(donor)) return nullptr;
  if (!alloc_seq(&seq)) return nullptr;
  // Shared pool: the new sequence joins the donor's cells up to the common head. Copied layout: a
  // copy of the donor's stream, cut back to it.
  if (donor != nullptr) model_->seq_cp(donor->seq, seq, best < donor->decoded ? static_cast<llama_pos>(best) : -1);
  PrefixEntry entry;
  entry.seq = seq;
  entry.tokens = tokens;
  entry.decoded = best;
  entry.refs = 1;
  entry.last_used = ++clock_;
  entry.scope = job->scope;
  entry.shared_head = job->shared_head;
  prefixes_.push_back(std::move(entry));
  job->cached = static_cast<int64_t>(best);
  return &prefixes_.back();
}

PrefixEntry* Scorer::longest_head(const ScoreJob& job, size_t* length) {
  PrefixEntry* donor = nullptr;
  size_t best = 0;
  for (auto& e : prefixes_) {
    // Any common head is reused, at any token: the batch-invariant kernels give a token the same KV
    // however its prompt was cut into decodes, and a copy trimmed to the head continues at the next
    // cell, where a cold decode would have put it.
    const size_t common = common_prefix(e.tokens, job.prefix, std::min(e.decoded, reusable(e, job)));
    if (common > best) {
      best = common;
      donor = &e;
    }
  }
  *length = best;
  return donor;
}

bool Scorer::awaits_shared_head(const ScoreJob& job) const {
  for (const auto& e : prefixes_) {
    if (e.refs == 0 || e.decoded >= e.tokens.size() || (e.scope == job.scope && e.tokens == job.prefix)) continue;
    if (common_prefix(e.tokens, job.prefix, reusable(e, job)) > e.decoded) return true;
  }
  return false;
}

bool Scorer::make_room(size_t need, PrefixEntry*& donor) {
  if (opts_.prefix_cells == 0) return true;
  for (;;) {
    // Counted whole even where a prefix shares its donor's cells: the bound errs on the safe side.
    size_t held = 0;
    for (const auto& e : prefixes_) held += e.refs > 0 ? e.tokens.size() : e.decoded;
    if (held + need <= opts_.prefix_cells) return true;
    if (evict_one_idle(donor)) continue;
    if (donor == nullptr) return false;
    donor = nullptr;
  }
}

void Scorer::release_prefix(PrefixEntry* entry) {
  entry->refs--;
  entry->last_used = ++clock_;
}

std::vector<std::unique_ptr<ScoreJob>> Scorer::take_active(const std::function<bool(const ScoreJob&)>& which) {
  std::vector<std::unique_ptr<ScoreJob>> still;
  std::vector<std::unique_ptr<ScoreJob>> taken;
  for (auto& owned : active_) (which(*owned) ? taken : still).push_back(std::move(owned));
  active_ = std::move(still);
  return taken;
}

void Scorer::drop_cancelled() {
  std::vector<std::unique_ptr<ScoreJob>> gone = take_active([](const ScoreJob& j) { return j.cancelled->load(); });
  if (gone.empty()) return;
  for (auto& job : gone) {
    job->error = "the request was cancelled";
    job->error_code = "cancelled";
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    stats_.jobs_cancelled += gone.size();
  }
  // A half-decoded prefix stays cached: its chunks are whole, so a later request can go on from it.
  finish(std::move(gone));
}

PrefixEntry* Scorer::prefix_in_use(const ScoreJob& job) {
  for (auto& e : prefixes_) {
    if (e.refs > 0 && e.scope == job.scope && e.tokens == job.prefix) return &e;
  }
  return nullptr;
}

void Scorer::admit_prefixes() {
  // A job whose very prefix is in use joins it at once: it takes no slot and decodes nothing twice.
  std::vector<ScoreJob*> waiting;
  for (auto& owned : active_) {
    if (owned->entry != nullptr) continue;
    if (prefix_in_use(*owned) != nullptr) {
      owned->entry = acquire_prefix(owned.get());
    } else {
      waiting.push_back(owned.get());
    }
  }
  if (waiting.empty()) return;
  // The prefix slots each tenant holds: the distinct prefixes its jobs use.
  std::vector<std::pair<uint64_t, size_t>> holding;
  std::vector<std::pair<uint64_t, const PrefixEntry*>> counted;
  for (auto& owned : active_) {
    auto t = std::find_if(holding.begin(), holding.end(), [&owned](const auto& h) { return h.first == owned->tenant; });
    if (t == holding.end()) t = holding.insert(holding.end(), {owned->tenant, 0});
    const std::pair<uint64_t, const PrefixEntry*> use{owned->tenant, owned->entry};
    if (owned->entry != nullptr && std::find(counted.begin(), counted.end(), use) == counted.end()) {
      counted.push_back(use);
      t->second++;
    }
  }
  auto held = [&holding](uint64_t tenant) -> size_t& {
    return std::find_if(holding.begin(), holding.end(), [tenant](const auto& h) { return h.first == tenant; })->second;
  };
  // A tenant holding no prefix may take any free slot, so a newcomer starts at once. One already
  // holding some takes no more than its share of the slots, and never the last few: those are kept
  // for the next newcomer. A tenant over its share keeps what it holds and is given more as its
  // jobs finish.
  const size_t slots = prefix_slots();
  const size_t reserve = std::max<size_t>(1, slots / 8);
  const size_t share = (slots + holding.size() - 1) / std::max<size_t>(1, holding.size());
  const auto in_use = static_cast<size_t>(std::count_if(prefixes_.begin(), prefixes_.end(), [](const PrefixEntry& e) { return e.refs > 0; }));
  size_t admitted = 0;
  auto over_cap = [&](ScoreJob* job) {
    const size_t h = held(job->tenant);
    return h > 0 && (h >= share || in_use + admitted + reserve >= slots);
  };
  for (;;) {
    // A job whose prefix shares more with a prefix still being decoded than is decoded yet, within
    // what it may reuse of it, waits for that decode: admitted now, it would decode the shared tokens
    // a second time beside it. Across scopes that is the frame head at most, so a job never waits on
    // another scope's text, which its time would give away. Asked
    // after every admission, since the prefix just admitted may be the one to wait for; a job whose
    // very prefix was just admitted joins it instead.
    for (auto it = waiting.begin(); it != waiting.end();) {
      if (prefix_in_use(**it) != nullptr) {
        (*it)->entry = acquire_prefix(*it);
        it = waiting.erase(it);
      } else {
        ++it;
      }
    }
    waiting.erase(std::remove_if(waiting.begin(), waiting.end(), [this](ScoreJob* job) { return awaits_shared_head(*job); }), waiting.end());
    waiting.erase(std::remove_if(waiting.begin(), waiting.end(), over_cap), waiting.end());
    if (waiting.empty()) return;
    // The oldest job of the tenant holding the fewest prefixes: one client's queue cannot keep
    // every prefix slot while another client waits.
    auto next = std::min_element(waiting.begin(), waiting.end(), [&held](ScoreJob* a, ScoreJob* b) { return held(a->tenant) < held(b->tenant); });
    ScoreJob* job = *next;
    job->entry = acquire_prefix(job);
    if (job->entry == nullptr) return;  // wait for running jobs to hand sequences back
    held(job->tenant)++;
    admitted++;
    waiting.erase(next);
  }
}

bool Scorer::one_tenant_in_hand() const {
  const ScoreJob* first = nullptr;
  for (const auto& j : active_) {
    if (!serves(*j)) continue;
    if (first != nullptr && j->tenant != first->tenant) return false;
    first = j.get();
  }
  return true;
}

int32_t Scorer::tokens_in_time(size_t planned_rows, size_t more_rows) const {
  // The first piece of a decode goes whole however long it is, and until the decodes' cost is
  // known only the batch bounds them. Background work has nobody waiting for it and anyone may
  // arrive behind it: even its first piece keeps to the step target (at least kMinChunk tokens).
  if (!cost_.known() || (batch_.n_tokens == 0 && !background_turn_)) return std::numeric_limits<int32_t>::max();
  const double left = step_ms_ - cost_.of(batch_.n_tokens, static_cast<double>(planned_rows + more_rows));
  const int32_t fits = left <= 0.0 ? 0 : static_cast<int32_t>(std::min(left / cost_.per_token_ms, static_cast<double>(std::numeric_limits<int32_t>::max())));
  return batch_.n_tokens == 0 ? std::max(fits, static_cast<int32_t>(kMinChunk)) : fits;
}

bool Scorer::place_prefix_chunk(ScoreJob* job, int32_t& budget, Stepped& stepped, std::vector<Planned>& planned) {
  PrefixEntry* e = job->entry;
  const size_t left = e->tokens.size() - e->decoded;
  const auto in_time = static_cast<size_t>(tokens_in_time(rows(planned), 0));
  // A sliver of a prefix beside other work costs a decode's overhead for little progress.
  if (in_time < std::min(left, kMinChunk)) return false;
  // The batch-invariant kernels make any cut safe: a chunk takes what is left of the batch.
  const size_t chunk_end = e->decoded + std::min({left, static_cast<size_t>(opts_.prefix_chunk), static_cast<size_t>(budget), in_time});
  if (chunk_end == e->decoded) return false;
  const int32_t take = static_cast<int32_t>(chunk_end - e->decoded);
  e->step_begin = batch_.n_tokens;
  e->step_count = take;
  for (int32_t i = 0; i < take; ++i) {
    const size_t p = e->decoded + static_cast<size_t>(i);
    batch_add(batch_, e->tokens[p], static_cast<llama_pos>(p), e->seq, false);
  }
  budget -= take;
  job->evaluated += take;
  stepped.emplace_back(e, job);
  if (chunk_end < e->tokens.size() || job->next_branch != 0) return true;
  // The suffix goes into the prefix's sequence after its last chunk: the same cells in the same
  // order as a decode of its own, and with exact kernels the same arithmetic for every token. It is
  // the same request's work, so the step target does not hold it back: a one-question request
  // stays one decode.
  const int32_t n = static_cast<int32_t>(job->branches[0].suffix.size());
  if (n <= budget && branch_piece(static_cast<size_t>(n)) == static_cast<size_t>(n)) {
    place_branch(job, 0, 0, n, e->seq, true, budget, planned);
    job->next_branch = 1;
  }
  return true;
}

size_t Scorer::branch_piece(size_t left) const {
  // A 255-option list can be longer than the batch.
  size_t longest = opts_.n_batch;
  if (cost_.known() && cost_.per_token_ms > 0) {
    const double alone = std::max(2.0 * opts_.step_target_ms, step_ms_) - cost_.of(0, 1.0);
    longest = std::min(longest, std::max(kMinChunk, alone <= 0 ? size_t{0} : static_cast<size_t>(alone / cost_.per_token_ms)));
  }
  if (left <= longest) return left;
  const size_t chunks = (left + longest - 1) / longest;
  return (left + chunks - 1) / chunks;
}

int32_t Scorer::branch_take(size_t left, int32_t budget, size_t planned_rows) const {
  if (left == 0 || budget <= 0) return 0;
  const size_t take = branch_piece(left);
  // Beside other pieces, the step target bounds what it may add.
  if (batch_.n_tokens > 0 && cost_.known() && static_cast<size_t>(std::max(0, tokens_in_time(planned_rows, take == left ? 1 : 0))) < take) return 0;
  // A piece that does not fit what is left of the batch waits for the next decode.
  return take <= static_cast<size_t>(budget) ? static_cast<int32_t>(take) : 0;
}

size_t Scorer::rows(const std::vector<Planned>& planned) {
  return static_cast<size_t>(std::count_if(planned.begin(), planned.end(), [](const Planned& p) { return p.last(); }));
}

bool Scorer::place_next_branch(ScoreJob* job, int32_t& budget, std::vector<Planned>& planned) {
  const size_t branch = job->next_branch;
  const size_t n = job->branches[branch].suffix.size();
  const int32_t take = branch_take(n, budget, rows(planned));
  if (take == 0) return false;
  llama_seq_id seq;
  if (!alloc_seq(&seq)) return false;
  // Copied layout: the prefix's stream is copied into the branch's before the next decode.
  // Shared: the branch's sequence joins the prefix's cells.
  model_->seq_cp(job->entry->seq, seq, -1);
  place_branch(job, branch, 0, take, seq, false, budget, planned);
  job->next_branch++;
  if (static_cast<size_t>(take) < n) {
    job->open_seq = seq;
    job->open_done = static_cast<size_t>(take);
  }
  return true;
}

bool Scorer::place_open_branch(ScoreJob* job, int32_t& budget, std::vector<Planned>& planned) {
  const size_t branch = job->next_branch - 1;
  const size_t left = job->branches[branch].suffix.size() - job->open_done;
  const int32_t take = branch_take(left, budget, rows(planned));
  if (take == 0) return false;
  place_branch(job, branch, job->open_done, take, job->open_seq, false, budget, planned);
  // Counted as planned, so that a later piece of this decode goes on after it; a failed decode
  // takes it back.
  job->open_done += static_cast<size_t>(take);
  return true;
}

bool Scorer::place_piece(uint64_t tenant, int32_t& budget, Stepped& stepped, std::vector<Planned>& planned) {
  // The tenant's jobs take turns, one piece each, the one served least recently first, and a job's
  // arrival counts as a turn: between two pieces of a job each of its tenant's other jobs gets at
  // most one. Neither a stream of new jobs (one cached question each, say) nor one job's many
  // branches can then hold another job of the same tenant back.
  std::vector<ScoreJob*> mine;
  for (const auto& owned : active_) {
    if (owned->tenant == tenant && owned->entry != nullptr && serves(*owned)) mine.push_back(owned.get());
  }
  std::stable_sort(mine.begin(), mine.end(), [](const ScoreJob* a, const ScoreJob* b) { return a->last_served < b->last_served; });
  for (ScoreJob* job : mine) {
    const PrefixEntry* e = job->entry;
    bool placed = false;
    if (e->decoded < e->tokens.size()) {
      // Another job sharing this prefix may have put its next chunk in this decode already.
      placed = e->step_begin < 0 && place_prefix_chunk(job, budget, stepped, planned);
    } else if (job->open_seq >= 0) {
      // A branch cut into chunks goes on before the job opens another.
      placed = place_open_branch(job, budget, planned);
    } else if (job->next_branch < job->branches.size()) {
      // Branches start once the whole prefix is in the KV cache: they copy it rather than give the
      // prefix tokens several sequence ids, which llama.cpp's batch splitting handles poorly.
      placed = place_next_branch(job, budget, planned);
    }
    if (placed) {
      job->last_served = ++serve_clock_;
      return true;
    }
  }
  return false;
}

void Scorer::forget_idle_tenants() {
  // Only tenants with work keep their turn; a tenant coming back starts at the front.
  for (auto it = tenant_served_.begin(); it != tenant_served_.end();) {
    const bool present = std::any_of(active_.begin(), active_.end(), [&it](const auto& j) { return j->tenant == it->first; });
    it = present ? std::next(it) : tenant_served_.erase(it);
  }
}

bool Scorer::next_tenant(const std::vector<uint64_t>& closed, uint64_t* tenant) {
  bool found = false;
  uint64_t best_served = 0;
  // Least recently served first; ties go to the tenant of the older job.
  for (const auto& owned : active_) {
    const uint64_t t = owned->tenant;
    if (!serves(*owned) || std::find(closed.begin(), closed.end(), t) != closed.end()) continue;
    const uint64_t served = tenant_served_[t];
    if (!found || served < best_served) {
      found = true;
      best_served = served;
      *tenant = t;
    }
  }
  return found;
}

void Scorer::place_branch(ScoreJob* job, size_t branch, size_t from, int32_t count, llama_seq_id seq, bool fused, int32_t& budget,
                          std::vector<Planned>& planned) {
  const Branch& b = job->branches[branch];
  const bool last = from + static_cast<size_t>(count) == b.suffix.size();
  const size_t start = job->entry->tokens.size() + from;
  for (int32_t i = 0; i < count; ++i) {
    batch_add(batch_, b.suffix[from + static_cast<size_t>(i)], static_cast<llama_pos>(start + static_cast<size_t>(i)), seq, last && i == count - 1);
  }
  Planned p{job, branch, seq};
  p.from = from;
  p.count = count;
  p.logits_index = last ? batch_.n_tokens - 1 : -1;
  p.fused = fused;
  planned.push_back(p);
  budget -= count;
  job->evaluated += count;
}

bool Scorer::step() {
  drop_cancelled();
  if (active_.empty()) return true;
  std::vector<Planned> planned;
  Stepped stepped;
  const auto planning = std::chrono::steady_clock::now();
  plan_batch(stepped, planned);
  if (batch_.n_tokens == 0) return false;

  {
    std::lock_guard<std::mutex> lk(mu_);
    stats_.step_tokens = static_cast<uint64_t>(batch_.n_tokens);
    stats_.step_rows = rows(planned);
  }
  const auto started = std::chrono::steady_clock::now();
  const int32_t rc = model_->decode();
  const auto decoded = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lk(mu_);
    stats_.step_tokens = 0;
    stats_.step_rows = 0;
    progress_at_ = decoded;
  }
  const double decode_s = std::chrono::duration<double>(decoded - started).count();
  end_prefix_chunks(stepped, rc == 0);
  if (rc != 0) {
    undo_failed_decode(rc, planned, decode_s);
    return true;
  }
  read_out(planned);
  const auto read = std::chrono::steady_clock::now();
  // Timed from planning to the logits read, as a request waits for it: a row costs its prefix's KV
  // copy (the copied layout copies a whole stream per branch), its output projection and its
  // log-softmax. A lane's first decode also pages the weights in (or warms the GPU): it says
  // nothing of the next ones.
  if (decodes_seen_++ > 0)
    cost_model_.observe(batch_.n_tokens, static_cast<int64_t>(rows(planned)), std::chrono::duration<double, std::milli>(read - planning).count());
  cost_ = cost_model_.cost();
  count_step(decode_s, std::chrono::duration<double>(read - decoded).count(), rows(planned));
  finish(take_active([](const ScoreJob& j) { return j.branches_done == j.branches.size(); }));
  return true;
}

void Scorer::plan_batch(Stepped& stepped, std::vector<Planned>& planned) {
  batch_.n_tokens = 0;
  int32_t budget = static_cast<int32_t>(opts_.n_batch);
  admit_prefixes();
  forget_idle_tenants();
  // Background work waits while any other job is in hand, unless none of those can go on (they wait
  // for a prefix slot or a shared head that background work holds).
  background_turn_ = std::all_of(active_.begin(), active_.end(), [](const auto& j) { return j->background; });
  fill_batch(budget, stepped, planned);
  if (batch_.n_tokens == 0 && !background_turn_) {
    background_turn_ = true;
    fill_batch(budget, stepped, planned);
  }
}

void Scorer::fill_batch(int32_t& budget, Stepped& stepped, std::vector<Planned>& planned) {
  // Someone arriving while this decode runs waits for all of it. While the work in hand is one
  // tenant's, that wait is bounded by the max step, and the decode carries as much of that work as
  // fits it; once another tenant's work is in hand, decodes are planned to the step target again.
  // Background work keeps to the step target: whoever comes waits for one short decode.
  step_ms_ = one_tenant_in_hand() && !background_turn_ ? std::max(opts_.max_step_ms, opts_.step_target_ms) : opts_.step_target_ms;
  // One piece at a time, each to the tenant served least recently: a newcomer's prefix goes into
  // the next decode whatever another tenant has queued, and no decode runs past the step bound.
  std::vector<uint64_t> closed;  // tenants with nothing more that fits this decode
  uint64_t tenant = 0;
  while (budget > 0 && tokens_in_time(rows(planned), 0) > 0 && next_tenant(closed, &tenant)) {
    if (place_piece(tenant, budget, stepped, planned)) {
      tenant_served_[tenant] = ++serve_clock_;
    } else {
      closed.push_back(tenant);
    }
  }
}

void Scorer::end_prefix_chunks(const Stepped& stepped, bool decoded) {
  for (auto& [e, charged] : stepped) {
    if (decoded) {
      e->decoded += static_cast<size_t>(e->step_count);
    } else {
      charged->evaluated -= e->step_count;
    }
    e->step_begin = -1;
    e->step_count = 0;
  }
}

void Scorer::undo_failed_decode(int32_t rc, const std::vector<Planned>& planned, double decode_s) {
  // The KV cache is back to its state before the call: undo this step's bookkeeping.
  for (const Planned& p : planned) {
    p.job->evaluated -= p.count;
    // A later chunk of an open branch: its earlier chunks stay in the cache, and it is tried again.
    if (p.from > 0) {
      p.job->open_done = std::min(p.job->open_done, p.from);
      continue;
    }
    if (!p.fused) free_seq(p.seq);
    if (p.job->open_seq == p.seq) p.job->open_seq = -1;
    p.job->next_branch = std::min(p.job->next_branch, p.branch);
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    stats_.decode_seconds += decode_s;
  }
  bool evicted = false;
  while (rc == 1 && evict_one_idle(nullptr)) evicted = true;
  if (!evicted) {
    if (rc == 1) {
      fail_all_active("the engine's KV cache is full; retry shortly", "unavailable");
    } else {
      fail_all_active("llama_decode failed with code " + std::to_string(rc), "internal");
    }
  }
}

void Scorer::read_out(const std::vector<Planned>& planned) {
  for (const Planned& p : planned) {
    if (!p.last()) continue;
    if (p.job->open_seq == p.seq) p.job->open_seq = -1;
    const float* logits = model_->logits(p.logits_index);
    const double log_z = log_sum_exp(logits, n_vocab_);
    const Branch& b = p.job->branches[p.branch];
    auto& out = p.job->logprobs[p.branch];
    out.resize(b.candidates.size());
    for (size_t k = 0; k < b.candidates.size(); ++k) {
      out[k] = static_cast<float>(static_cast<double>(logits[b.candidates[k]]) - log_z);
    }
    if (p.fused) {
      model_->seq_rm(p.seq, static_cast<llama_pos>(p.job->entry->tokens.size()));
    } else {
      free_seq(p.seq);
    }
    p.job->branches_done++;
  }
}

void Scorer::count_step(double decode_s, double readout_s, size_t branches) {
  std::lock_guard<std::mutex> lk(mu_);
  stats_.decode_seconds += decode_s;
  stats_.readout_seconds += readout_s;
  stats_.decodes++;
  stats_.tokens_evaluated += static_cast<uint64_t>(batch_.n_tokens);
  stats_.branches_scored += branches;
  stats_.last_batch_tokens = static_cast<uint64_t>(batch_.n_tokens);
  stats_.last_batch_branches = branches;
  if (step_ms_ > opts_.step_target_ms) stats_.lone_decodes++;
  stats_.cost = cost_;
  stats_.kv_cells_peak = std::max(stats_.kv_cells_peak, cells_held() + static_cast<uint64_t>(batch_.n_tokens));
}

uint64_t Scorer::cells_held() const {
  uint64_t held = 0;
  for (const auto& e : prefixes_) held += e.decoded;
  return held;
}

void Scorer::finish(std::vector<std::unique_ptr<ScoreJob>> jobs) {
  for (auto& job : jobs) {
    if (job->entry != nullptr) release_prefix(job->entry);
    job->entry = nullptr;
    // A cancelled or failed job may hold a branch cut into chunks.
    if (job->open_seq >= 0) free_seq(job->open_seq);
    job->open_seq = -1;
  }
  trim_cache();
  // Counters first, callbacks second: a caller reading stats() after its promise resolved sees
  // its own job accounted for.
  {
    std::lock_guard<std::mutex> lk(mu_);
    stats_.jobs_done += jobs.size();
    stats_.queue_depth = incoming_.size() + active_.size();
    stats_.cached_prefixes = prefixes_.size();
    stats_.kv_cells_held = cells_held();
  }
  for (auto& job : jobs) {
    auto done = std::move(job->on_done);
    done(std::move(job));
  }
}

void Scorer::forget_cached() {
  std::lock_guard<std::mutex> lk(mu_);
  forget_ = true;
}

void Scorer::stall_after(uint64_t more) {
  std::lock_guard<std::mutex> lk(mu_);
  stall_at_ = stats_.decodes + std::max<uint64_t>(1, more);
}

std::vector<std::string> Scorer::audit() const {
  std::vector<std::string> broken;
  std::vector<llama_seq_id> seqs(free_seqs_.begin(), free_seqs_.end());
  size_t in_use = 0;
  for (const PrefixEntry& e : prefixes_) {
    const auto users = std::count_if(active_.begin(), active_.end(), [&e](const auto& j) { return j->entry == &e; });
    if (e.refs != users) {
      broken.push_back("a prefix of " + std::to_string(e.tokens.size()) + " tokens holds " + std::to_string(e.refs) + " references while " +
                       std::to_string(users) + " jobs use it");
    }
    if (e.step_begin >= 0 || e.step_count != 0) broken.push_back("a prefix is still marked as being in a batch between steps");
    if (e.decoded > e.tokens.size()) broken.push_back("a prefix counts more tokens decoded than it has");
    if (e.refs > 0) in_use++;
    seqs.push_back(e.seq);
  }
  for (const auto& job : active_) {
    const bool known = job->entry == nullptr || std::any_of(prefixes_.begin(), prefixes_.end(), [&job](const PrefixEntry& e) { return &e == job->entry; });
    if (!known) broken.push_back("a job uses a prefix that is no longer held");
    if (known && job->entry != nullptr && job->entry->scope != job->scope) broken.push_back("a job uses another cache scope's prefix");
    if (job->branches_done > job->next_branch || job->next_branch > job->branches.size()) broken.push_back("a job's branch counts are out of order");
    if (job->open_seq >= 0) {
      seqs.push_back(job->open_seq);
      if (job->next_branch == 0 || job->open_done == 0 || job->open_done >= job->branches[job->next_branch - 1].suffix.size())
        broken.push_back("a job's open branch is out of order");
    }
  }
  if (in_use > prefix_slots()) broken.push_back(std::to_string(in_use) + " prefixes in use, more than the " + std::to_string(prefix_slots()) + " slots");
  std::sort(seqs.begin(), seqs.end());
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (i > 0 && seqs[i] == seqs[i - 1]) broken.push_back("sequence " + std::to_string(seqs[i]) + " is held twice");
  }
  if (seqs.size() != opts_.n_seq_max)
    broken.push_back(std::to_string(seqs.size()) + " sequences are free, a prefix's or an open branch's, of " + std::to_string(opts_.n_seq_max));
  return broken;
}

void Scorer::fail_all_active(const std::string& why, const char* code) {
  std::vector<std::unique_ptr<ScoreJob>> failed = std::move(active_);
  active_.clear();
  for (auto& job : failed) {
    job->error = why;
    job->error_code = code;
  }
  finish(std::move(failed));
}

}  // namespace arbitra
