// The scorer's scheduler without a model: a fake ModelOps keeps each sequence's tokens, checks
// that every decoded token lands at the next position of its sequence, and gives logits that are a
// function of the sequence's whole history. A branch's log-probs are then right only when it was
// decoded on top of exactly its prefix, whatever was copied, shared, trimmed or fused on the way.
// The tests drive the scorer step by step (no thread) and audit its invariants after every step.
// Run by test/engine/native-scheduler.test.ts; prints one line per test and exits non-zero on a failure.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "model_ops.h"
#include "scorer.h"

using namespace arbitra;

namespace {

using arbitra::testing::check;
using arbitra::testing::current;
using arbitra::testing::failures;

constexpr int32_t kVocab = 48;

uint64_t fnv(const std::vector<llama_token>& tokens) {
  uint64_t h = 1469598103934665603ull;
  for (llama_token t : tokens) {
    h ^= static_cast<uint64_t>(t) + 0x9e3779b97f4a7c15ull;
    h *= 1099511628211ull;
  }
  return h;
}

// Logits that depend on every token of the history, in order.
std::vector<float> logits_of(const std::vector<llama_token>& history) {
  uint64_t x = fnv(history) | 1;
  std::vector<float> out(kVocab);
  for (float& v : out) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v = static_cast<float>(static_cast<double>(x % 8001) / 1000.0 - 4.0);
  }
  return out;
}

// The scorer's readout, step for step, so equal histories give bit-equal log-probs.
std::vector<float> expected(const std::vector<llama_token>& prefix, const Branch& b) {
  std::vector<llama_token> h = prefix;
  h.insert(h.end(), b.suffix.begin(), b.suffix.end());
  const std::vector<float> l = logits_of(h);
  float mx = l[0];
  for (float v : l) mx = std::max(mx, v);
  double sum = 0.0;
  for (float v : l) sum += std::exp(static_cast<double>(v - mx));
  const double log_z = static_cast<double>(mx) + std::log(sum);
  std::vector<float> out;
  for (llama_token c : b.candidates) out.push_back(static_cast<float>(static_cast<double>(l[c]) - log_z));
  return out;
}

class FakeModel final : public ModelOps {
 public:
  explicit FakeModel(int32_t n_batch)
      : token_(n_batch), pos_(n_batch), n_seq_id_(n_batch, 1), seq_(n_batch), seq_ptr_(n_batch), logits_flag_(n_batch), rows_(n_batch) {
    for (int32_t i = 0; i < n_batch; ++i) seq_ptr_[i] = &seq_[i];
    batch_.n_tokens = 0;
    batch_.token = token_.data();
    batch_.embd = nullptr;
    batch_.pos = pos_.data();
    batch_.n_seq_id = n_seq_id_.data();
    batch_.seq_id = seq_ptr_.data();
    batch_.logits = logits_flag_.data();
  }

  llama_batch& batch() override { return batch_; }

  int32_t decode() override {
    decodes++;
    // A cost per token makes the scorer's measured cost what a real model's is: growing with the batch.
    if (token_delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(token_delay_us * batch_.n_tokens));
    tokens_per_decode.push_back(batch_.n_tokens);
    if (fail_next != 0) {
      const int32_t rc = fail_next;
      fail_next = 0;
      return rc;
    }
    for (int32_t i = 0; i < batch_.n_tokens; ++i) {
      std::vector<llama_token>& s = seqs[batch_.seq_id[i][0]];
      if (batch_.pos[i] != static_cast<llama_pos>(s.size())) {
        errors.push_back("sequence " + std::to_string(batch_.seq_id[i][0]) + " got a token at position " + std::to_string(batch_.pos[i]) + " after " +
                         std::to_string(s.size()) + " cells");
      }
      s.push_back(batch_.token[i]);
      if (batch_.logits[i]) rows_[i] = logits_of(s);
    }
    return 0;
  }

  void seq_cp(llama_seq_id src, llama_seq_id dst, llama_pos until) override {
    if (!seqs[dst].empty()) errors.push_back("sequence " + std::to_string(dst) + " copied into while it holds cells");
    seqs[dst] = seqs[src];
    if (until >= 0 && static_cast<size_t>(until) < seqs[dst].size()) seqs[dst].resize(static_cast<size_t>(until));
    copies.push_back({src, dst, seqs[dst].size()});
  }

  void seq_rm(llama_seq_id seq, llama_pos from) override {
    std::vector<llama_token>& s = seqs[seq];
    if (from < 0)
      s.clear();
    else if (static_cast<size_t>(from) < s.size())
      s.resize(static_cast<size_t>(from));
  }

  const float* logits(int32_t i) override { return rows_[i].data(); }
  int32_t n_vocab() const override { return kVocab; }

  std::map<llama_seq_id, std::vector<llama_token>> seqs;
  // Every seq_cp: from which sequence, into which, and how many cells the copy gave it.
  struct Copy {
    llama_seq_id src;
    llama_seq_id dst;
    size_t cells;
  };
  std::vector<Copy> copies;
  std::vector<std::string> errors;
  int32_t fail_next = 0;
  int token_delay_us = 0;
  int decodes = 0;
  std::vector<int32_t> tokens_per_decode;

 private:
  llama_batch batch_{};
  std::vector<llama_token> token_;
  std::vector<llama_pos> pos_;
  std::vector<int32_t> n_seq_id_;
  std::vector<llama_seq_id> seq_;
  std::vector<llama_seq_id*> seq_ptr_;
  std::vector<int8_t> logits_flag_;
  std::vector<std::vector<float>> rows_;
};

// A scorer on a fake model, stepped by the test, and what each job's on_done handed back.
struct Rig {
  FakeModel* model;
  std::unique_ptr<Scorer> scorer;
  std::map<int, std::unique_ptr<ScoreJob>> done;  // by tag
  std::map<int, int> finished_at;                 // tag -> step count when it finished
  std::map<int, std::vector<llama_token>> prefixes;
  int steps = 0;

  explicit Rig(ScorerOptions opts = {}) {
    auto m = std::make_unique<FakeModel>(static_cast<int32_t>(opts.n_batch));
    if (opts.step_target_ms < 1.0) m->token_delay_us = 20;
    model = m.get();
    scorer = std::make_unique<Scorer>(std::move(m), opts, false);
  }

  // Submits a job; `then` runs on the stepping thread once it is done.
  std::shared_ptr<std::atomic<bool>> submit(int tag, std::vector<llama_token> prefix, std::vector<Branch> branches, uint64_t tenant,
                                            std::function<void()> then = {}, bool background = false) {
    auto job = std::make_unique<ScoreJob>();
    job->tenant = tenant;
    job->background = background;
    return submit_job(tag, std::move(job), std::move(prefix), std::move(branches), std::move(then));
  }

  // A job in cache scope `scope`, whose first `shared_head` tokens (the frame head) every scope shares.
  std::shared_ptr<std::atomic<bool>> submit_scoped(int tag, std::vector<llama_token> prefix, std::vector<Branch> branches, uint64_t tenant, uint64_t scope,
                                                   size_t shared_head) {
    auto job = std::make_unique<ScoreJob>();
    job->tenant = tenant;
    job->scope = scope;
    job->shared_head = shared_head;
    return submit_job(tag, std::move(job), std::move(prefix), std::move(branches), {});
  }

  std::shared_ptr<std::atomic<bool>> submit_job(int tag, std::unique_ptr<ScoreJob> job, std::vector<llama_token> prefix, std::vector<Branch> branches,
                                                std::function<void()> then) {
    job->prefix = prefix;
    job->branches = std::move(branches);
    prefixes[tag] = std::move(prefix);
    auto cancelled = job->cancelled;
    job->on_done = [this, tag, then](std::unique_ptr<ScoreJob> j) {
      done[tag] = std::move(j);
      finished_at[tag] = steps;
      if (then) then();
    };
    scorer->submit(std::move(job));
    return cancelled;
  }

  // One step, audited; false when there was no work.
  bool step() {
    const bool worked = scorer->run_once();
    if (worked) steps++;
    for (const std::string& b : scorer->audit()) check(false, "after step " + std::to_string(steps) + ": " + b);
    return worked;
  }

  // Steps until nothing is left or `limit` steps ran; the steps taken.
  int drain(int limit = 100000) {
    int n = 0;
    while (n < limit && step()) n++;
    return n;
  }

  // Every finished job without error has each branch's log-probs as decoded alone.
  void check_results() {
    for (auto& [tag, job] : done) {
      if (!job->error.empty()) continue;
      for (size_t b = 0; b < job->branches.size(); ++b) {
        check(job->logprobs[b] == expected(prefixes[tag], job->branches[b]),
              "job " + std::to_string(tag) + " branch " + std::to_string(b) + " scored on the wrong history");
      }
    }
    for (const std::string& e : model->errors) check(false, e);
  }
};

std::vector<llama_token> tokens(std::initializer_list<int> head, int n, int seed) {
  std::vector<llama_token> out(head.begin(), head.end());
  std::mt19937 rng(static_cast<uint32_t>(seed));
  for (int i = 0; i < n; ++i) out.push_back(static_cast<llama_token>(rng() % kVocab));
  return out;
}

std::vector<Branch> branches(int n, int seed, int len = 4) {
  std::vector<Branch> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    out[static_cast<size_t>(i)].suffix = tokens({}, len, seed * 1000 + i);
    out[static_cast<size_t>(i)].candidates = {1, 2, 3};
  }
  return out;
}

// Decodes carry one piece each once the cost is measured, as a 1.5B model's on two CPU cores do
// (the rig's model then takes time per token, so the cost is measured), one tenant alone or not.
ScorerOptions one_piece_per_decode() {
  ScorerOptions o;
  o.n_seq_max = 16;
  o.step_target_ms = 1e-9;
  o.max_step_ms = 1e-9;
  return o;
}

// Decodes of one piece each while tenants share the engine, and bounded by the batch alone while
// one tenant's work is all there is.
ScorerOptions one_piece_unless_alone() {
  ScorerOptions o;
  o.n_seq_max = 32;
  o.step_target_ms = 1e-9;
  o.max_step_ms = 1e9;
  return o;
}

// Runs jobs until the rig's decodes have a measured cost, so that the step bounds apply.
void measure_cost(Rig& rig) {
  for (int i = 0; i < 12; ++i) rig.submit(500 + i, tokens({8}, 10 + 7 * i, 500 + i), branches(1 + i % 3, 500 + i, 2 + i % 5), 1);
  rig.drain();
  check(rig.scorer->stats().cost.known(), "the cost is measured");
}

void test_one_question_is_one_decode() {
  Rig rig;
  rig.submit(1, tokens({7}, 30, 1), branches(1, 1), 1);
  rig.drain();
  check(rig.model->decodes == 1, "a one-question job took " + std::to_string(rig.model->decodes) + " decodes");
  check(rig.done[1] && rig.done[1]->error.empty(), "the job finished without error");
  rig.check_results();
}

void test_shared_heads_score_as_alone() {
  // Prefixes that share heads of every length, arriving while others decode: copies, trimmed
  // donor heads, fused first branches and joins of a prefix in use all meet here.
  ScorerOptions o;
  o.n_seq_max = 12;
  o.prefix_chunk = 8;
  o.n_batch = 64;
  Rig rig(o);
  const std::vector<llama_token> base = tokens({5}, 40, 2);
  int tag = 0;
  for (int round = 0; round < 6; ++round) {
    for (int k = 0; k < 5; ++k) {
      std::vector<llama_token> p(base.begin(), base.begin() + 10 + (k * 7 + round * 3) % 30);
      if (k % 2) p.push_back(static_cast<llama_token>(round));
      ++tag;
      rig.submit(tag, p, branches(1 + (k + round) % 4, tag), static_cast<uint64_t>(k % 3));
    }
    rig.step();
    rig.step();
  }
  rig.drain();
  check(static_cast<int>(rig.done.size()) == tag, std::to_string(rig.done.size()) + " of " + std::to_string(tag) + " jobs finished");
  rig.check_results();
}

// The reported starvation: one tenant keeps three one-question requests about a cached state in
// flight (each resent as soon as it is answered), and sends one request of two questions about a
// new state. Before, a new job sorted behind none of the tenant's jobs (served "never"), so the
// cached stream took every decode and the new request's second question never ran.
void new_state_beside_cached_stream(uint64_t new_tenant) {
  Rig rig(one_piece_per_decode());
  const std::vector<llama_token> cached = tokens({9}, 24, 3);
  rig.submit(100, cached, branches(1, 100), 1);
  rig.drain();  // the state is now cached
  int next = 1000;
  std::function<void()> resend = [&]() {
    ++next;
    rig.submit(next, cached, branches(1, next), 1, resend);
  };
  for (int c = 0; c < 3; ++c) resend();
  rig.step();
  rig.step();
  const int before = rig.steps;
  rig.submit(1, tokens({9}, 40, 4), branches(2, 1), new_tenant);
  while (rig.steps - before < 200 && rig.done.count(1) == 0) rig.step();
  const int took = rig.done.count(1) ? rig.finished_at[1] - before : -1;
  // Alone it takes two decodes (prefix with its first question, then the second); beside three
  // other jobs each of its pieces waits for at most one piece of each.
  check(took > 0 && took <= 2 * (1 + 3), "the new state's request took " + std::to_string(took) + " steps (-1: never)");
  rig.check_results();
}

void test_no_starvation_same_tenant() { new_state_beside_cached_stream(1); }
void test_no_starvation_other_tenant() { new_state_beside_cached_stream(2); }

void test_stream_of_new_jobs_cannot_starve_an_old_one() {
  Rig rig(one_piece_per_decode());
  rig.submit(1, tokens({3}, 20, 5), branches(12, 5), 7);
  int next = 10;
  std::function<void()> resend = [&]() {
    if (rig.done.count(1) == 0) {
      ++next;
      rig.submit(next, tokens({3}, 20, next), branches(1, next), 7, resend);
    }
  };
  for (int c = 0; c < 3; ++c) resend();
  rig.drain(400);
  check(rig.done.count(1) == 1, "the old job of 12 branches finished while one-question jobs kept coming");
  rig.check_results();
}

// One tenant alone: nobody waits behind a decode, so once its prefix is in, one decode takes every
// branch the batch holds, where the step target would have made each branch a decode of its own.
void test_lone_tenant_work_taken_whole() {
  Rig rig(one_piece_unless_alone());
  measure_cost(rig);
  const int before = rig.model->decodes;
  rig.submit(1, tokens({4}, 40, 60), branches(12, 60, 6), 7);
  rig.drain();
  check(rig.model->decodes - before == 2,
        "a lone job of 12 branches took " + std::to_string(rig.model->decodes - before) + " decodes (its prefix with its first branch, then the rest)");
  check(rig.model->tokens_per_decode.back() == 11 * 6, "the second decode carried every other branch");
  check(rig.scorer->stats().lone_decodes >= 2, "the decodes are counted as filled to the max step");
  rig.check_results();
}

// Another tenant's request that arrives while one tenant's large decode runs waits for that decode
// only: the next decode is cut back to the step target and carries the newcomer's piece, and once
// it is done the lone tenant's decodes fill up again.
void test_newcomer_waits_for_one_large_step() {
  ScorerOptions o = one_piece_unless_alone();
  o.n_batch = 64;  // so that the lone tenant's work outlasts two decodes
  Rig rig(o);
  measure_cost(rig);
  for (int j = 0; j < 4; ++j) rig.submit(10 + j, tokens({5}, 30, 70 + j), branches(10, 70 + j, 5), 1);
  rig.step();  // tenant 1 alone: a large decode (its prefixes)
  rig.step();  // and another (branches)
  const int32_t large = rig.model->tokens_per_decode.back();
  check(large > 5 + 1, "the lone tenant's decode carried " + std::to_string(large) + " tokens, more than one piece");
  rig.submit(2, tokens({6}, 20, 80), branches(1, 80, 5), 2);
  rig.step();
  check(rig.done.count(2) == 1, "the newcomer was answered by the first decode after it came");
  check(rig.model->tokens_per_decode.back() == 21 + 5,
        "that decode was cut to the step target: the newcomer's piece alone, " + std::to_string(rig.model->tokens_per_decode.back()) + " tokens");
  rig.step();
  check(rig.model->tokens_per_decode.back() > 5, "alone again, the next decode carried " + std::to_string(rig.model->tokens_per_decode.back()) + " tokens");
  rig.drain();
  rig.check_results();
}

// The self-test after start-up runs in the background: a user's request that arrives while it runs
// waits for the decode in progress only, and takes every decode until it is answered, even from the
// same tenant; the background job then finishes.
void test_background_work_yields() {
  ScorerOptions o = one_piece_unless_alone();
  o.n_batch = 64;
  Rig rig(o);
  measure_cost(rig);
  rig.submit(1, tokens({5}, 30, 90), branches(20, 90, 5), 0, {}, true);
  rig.step();
  rig.step();
  check(rig.done.count(1) == 0, "the background job is still running");
  rig.submit(2, tokens({6}, 60, 91), branches(3, 91, 5), 0);
  const int before = rig.model->decodes;
  while (rig.done.count(2) == 0 && rig.step()) {
  }
  check(rig.done.count(1) == 0, "the background job waited");
  // Its prefix of 61 tokens (its first branch does not fit behind it in a batch of 64), then its
  // three branches: two decodes, with nothing of the background job in them.
  check(rig.model->decodes - before == 2, "the user's request took " + std::to_string(rig.model->decodes - before) + " decodes");
  const auto& sizes = rig.model->tokens_per_decode;
  check(sizes.size() >= 2 && sizes[sizes.size() - 2] == 61 && sizes.back() == 15, "its decodes carried its own tokens alone");
  rig.drain();
  check(rig.done.count(1) == 1 && rig.done[1]->error.empty(), "the background job finished after it");
  // Alone, background work still keeps to the step target, even in a decode's first piece: a
  // 200-token prefix goes in chunks of the shortest length, so whoever comes waits for a short decode.
  const size_t from = rig.model->tokens_per_decode.size();
  rig.submit(3, tokens({7}, 200, 92), branches(2, 92, 5), 0, {}, true);
  rig.drain();
  int32_t widest = 0;
  for (size_t i = from; i < rig.model->tokens_per_decode.size(); ++i) widest = std::max(widest, rig.model->tokens_per_decode[i]);
  check(widest <= 32 + 5, "a background decode carried " + std::to_string(widest) + " tokens");
  rig.check_results();
}

void test_cancelled_job_releases_everything() {
  Rig rig(one_piece_per_decode());
  auto flag = rig.submit(1, tokens({4}, 30, 6), branches(20, 6), 1);
  rig.submit(2, tokens({4}, 30, 6), branches(3, 7), 2);  // the same prefix, another tenant
  for (int i = 0; i < 4; ++i) rig.step();
  flag->store(true);
  rig.drain();
  check(rig.done[1] && rig.done[1]->error_code == std::string("cancelled"), "the cancelled job reports cancelled");
  check(rig.done[2] && rig.done[2]->error.empty(), "the job sharing its prefix finished");
  check(rig.scorer->stats().jobs_cancelled == 1, "one job counted as cancelled");
  // Its prefix stays cached: the same state again decodes only its branch.
  rig.submit(3, tokens({4}, 30, 6), branches(1, 8), 1);
  rig.drain();
  check(rig.done[3] && rig.done[3]->cached == 31,
        "the cancelled job's prefix was found cached (" + std::to_string(rig.done[3] ? rig.done[3]->cached : -1) + " tokens)");
  rig.check_results();
}

// A branch whose decode alone would take more than twice the step target is cut into chunks, as
// prefixes are: the decodes that carry it stay short, it scores as if decoded whole, and a job
// cancelled between its chunks hands the sequence back.
void test_long_branch_is_cut_into_chunks() {
  ScorerOptions o;
  o.n_seq_max = 8;
  o.step_target_ms = 0.4;  // the rig's model then takes 20 us a token: about 40 tokens a chunk
  o.max_step_ms = 0.4;     // the same bound while one tenant is alone
  Rig rig(o);
  for (int i = 0; i < 12; ++i) rig.submit(i, tokens({3}, 10 + 7 * i, 20 + i), branches(1 + i % 3, i, 2 + i % 5), 1);
  rig.drain();
  check(rig.scorer->stats().cost.known(), "the cost is measured before the long branch comes");
  const size_t longest_before = rig.model->tokens_per_decode.size();
  rig.submit(100, tokens({3}, 20, 40), branches(2, 41, 300), 2);
  rig.drain();
  int32_t widest = 0;
  for (size_t i = longest_before; i < rig.model->tokens_per_decode.size(); ++i) widest = std::max(widest, rig.model->tokens_per_decode[i]);
  check(widest < 300, "a decode carried " + std::to_string(widest) + " tokens of a 300-token branch");
  check(rig.done[100] && rig.done[100]->error.empty(), "the job with long branches finished");
  check(rig.done[100] && rig.done[100]->evaluated + rig.done[100]->cached == 21 + 2 * 300, "every token was charged once");

  auto flag = rig.submit(101, tokens({3}, 20, 42), branches(1, 43, 300), 3);
  rig.step();  // its prefix with nothing behind it: the branch is too long to ride along
  rig.step();  // the branch's first chunk
  flag->store(true);
  rig.drain();  // the audit after every step counts the open branch's sequence back as free
  check(rig.done[101] && rig.done[101]->error_code == std::string("cancelled"), "the job cancelled between chunks reports cancelled");
  rig.check_results();
}

// A branch longer than the batch (a long option list) is decoded in chunks that fit it, each going
// on where the last stopped, before any cost is measured.
void test_branch_longer_than_the_batch() {
  ScorerOptions o;
  o.n_batch = 16;
  o.prefix_chunk = 16;
  Rig rig(o);
  rig.submit(1, tokens({2}, 10, 50), branches(2, 51, 40), 1);
  rig.drain();
  check(rig.done[1] && rig.done[1]->error.empty(), "the job with branches longer than the batch finished");
  for (int32_t n : rig.model->tokens_per_decode) check(n <= 16, "a decode carried " + std::to_string(n) + " tokens, more than the batch");
  rig.check_results();
}

void test_waiting_on_a_head_whose_decoder_is_cancelled() {
  // B's prefix extends A's, which is still decoding: B waits for it rather than decode the head
  // twice. A is cancelled mid-way; B must still run, from what A left cached.
  ScorerOptions o = one_piece_per_decode();
  o.prefix_chunk = 8;
  Rig rig(o);
  const std::vector<llama_token> a = tokens({6}, 60, 9);
  std::vector<llama_token> b = a;
  b.push_back(11);
  auto flag = rig.submit(1, a, branches(2, 1), 1);
  rig.step();
  rig.submit(2, b, branches(2, 2), 1);
  rig.step();
  flag->store(true);
  const int n = rig.drain(200);
  check(rig.done[2] && rig.done[2]->error.empty(), "the waiting job finished after the job it waited on was cancelled");
  check(n < 200, "the scorer went idle");
  check(rig.done[2] && rig.done[2]->cached >= 16, "it reused the head decoded before the cancel");
  rig.check_results();
}

// The frame head of every prompt in these tests, the same for every cache scope.
constexpr size_t kHead = 6;

std::vector<llama_token> framed(int n, int seed) { return tokens({40, 41, 42, 43, 44, 45}, n, seed); }

size_t suffix_tokens(const std::vector<Branch>& bs) {
  size_t n = 0;
  for (const Branch& b : bs) n += b.suffix.size();
  return n;
}

// Two accounts send the same prefix: the second reuses the frame head alone, no copy gives it more
// of the first's cells than that, and it decodes the rest itself; another job of the first account
// reuses the whole prefix. Every score is the one decoded alone.
void test_scopes_share_only_the_head() {
  Rig rig;
  const std::vector<llama_token> p = framed(40, 200);
  const std::vector<Branch> q = branches(2, 200);
  rig.submit_scoped(1, p, q, 1, 11, kHead);
  rig.drain();
  check(rig.done[1] && rig.done[1]->cached == 0, "the first prefix is cold");
  llama_seq_id first = -1;
  for (const auto& [seq, cells] : rig.model->seqs) {
    if (cells == p) first = seq;
  }
  check(first >= 0, "the first prefix stays cached in a sequence of its own");
  const size_t copies_before = rig.model->copies.size();
  rig.submit_scoped(2, p, q, 2, 22, kHead);
  rig.drain();
  const ScoreJob* other = rig.done[2].get();
  check(other && other->cached == static_cast<int64_t>(kHead),
        "another scope's identical prefix reused " + std::to_string(other ? other->cached : -1) + " tokens, the head alone");
  check(other && other->evaluated == static_cast<int64_t>(p.size() - kHead + suffix_tokens(q)), "it decoded everything past the head");
  bool head_copied = false;
  for (size_t i = copies_before; i < rig.model->copies.size(); ++i) {
    const FakeModel::Copy& c = rig.model->copies[i];
    if (c.src != first) continue;
    check(c.cells <= kHead, "a copy gave another scope " + std::to_string(c.cells) + " of the first prefix's cells");
    head_copied = head_copied || c.cells == kHead;
  }
  check(head_copied, "the head's cells were copied from the first prefix");
  rig.submit_scoped(3, p, q, 3, 11, kHead);
  rig.drain();
  const ScoreJob* same = rig.done[3].get();
  check(same && same->cached == static_cast<int64_t>(p.size()), "the same scope reused the whole prefix");
  check(same && same->evaluated == static_cast<int64_t>(suffix_tokens(q)), "and decoded its branches alone");
  rig.check_results();
}

// While one account's prefix is decoding, another account's job with the same prefix does not join
// it and one whose prefix extends it does not wait for it: each takes the head, already decoded, and
// decodes the rest itself. The first account's own jobs join the prefix or wait for it.
void test_no_join_or_wait_across_scopes() {
  ScorerOptions o;
  o.prefix_chunk = 8;
  Rig rig(o);
  const std::vector<llama_token> p = framed(60, 300);
  std::vector<llama_token> longer = p;
  longer.push_back(3);
  rig.submit_scoped(1, p, branches(1, 1), 1, 11, kHead);
  rig.step();  // its first chunk, past the head
  rig.submit_scoped(2, p, branches(1, 2), 2, 22, kHead);
  rig.submit_scoped(3, longer, branches(1, 3), 3, 33, kHead);
  rig.submit_scoped(4, p, branches(1, 4), 4, 11, kHead);
  rig.submit_scoped(5, longer, branches(1, 5), 5, 11, kHead);
  rig.drain();
  const auto cached = [&rig](int tag) { return rig.done[tag] ? rig.done[tag]->cached : -1; };
  check(cached(2) == static_cast<int64_t>(kHead),
        "another scope's same prefix took the head only (" + std::to_string(cached(2)) + " tokens), not the prefix in use");
  check(cached(3) == static_cast<int64_t>(kHead),
        "another scope's longer prefix took the head only (" + std::to_string(cached(3)) + " tokens), without waiting");
  check(cached(4) == 8, "the same scope's same prefix joined it as it was (" + std::to_string(cached(4)) + " tokens)");
  check(cached(5) == static_cast<int64_t>(p.size()), "the same scope's longer prefix waited for all of it (" + std::to_string(cached(5)) + " tokens)");
  // Waiting on the first prefix's decode would have put their own decodes after its last.
  for (int tag : {2, 3}) {
    check(rig.finished_at[tag] <= rig.finished_at[1] + 1, "another scope's job " + std::to_string(tag) + " finished at step " +
                                                              std::to_string(rig.finished_at[tag]) + ", the first prefix's at " +
                                                              std::to_string(rig.finished_at[1]));
  }
  rig.check_results();
}

// A job of another scope still waits while the head itself is being decoded: the head is everyone's,
// and decoding it twice would only cost.
void test_head_decode_is_awaited_across_scopes() {
  ScorerOptions o;
  o.prefix_chunk = 4;
  Rig rig(o);
  const std::vector<llama_token> p = framed(30, 400);
  rig.submit_scoped(1, p, branches(1, 1), 1, 11, kHead);
  rig.step();  // 4 of the head's 6 tokens
  rig.submit_scoped(2, framed(30, 401), branches(1, 2), 2, 22, kHead);
  rig.drain();
  check(rig.done[2] && rig.done[2]->cached == static_cast<int64_t>(kHead), "the other scope waited for the head and reused it");
  rig.check_results();
}

void test_random_load_keeps_every_invariant() {
  // Many tenants in two cache scopes, prefixes sharing heads, cancellations and decode failures at random; the audit
  // runs after every step. Every job ends, those not cancelled or failed with the scores they get
  // alone, and at the end no prefix is referenced and every sequence is free or cached.
  std::mt19937 rng(42);
  for (int round = 0; round < 3; ++round) {
    ScorerOptions o;
    o.n_seq_max = 8 + 8 * static_cast<uint32_t>(round);
    o.prefix_chunk = 16;
    o.n_batch = 96;
    o.prefix_cache_tokens = 64;
    if (round == 2) o.prefix_cells = 400;  // the shared layout's bound on cells held
    Rig rig(o);
    const std::vector<llama_token> base = tokens({1}, 80, 77 + round);
    std::vector<std::shared_ptr<std::atomic<bool>>> flags;
    int tag = 0;
    for (int i = 0; i < 300; ++i) {
      if (rng() % 3 == 0) {
        std::vector<llama_token> p(base.begin(), base.begin() + 5 + static_cast<int>(rng() % 70));
        if (rng() % 2) p.push_back(static_cast<llama_token>(rng() % kVocab));
        ++tag;
        const int n_branches = 1 + static_cast<int>(rng() % 6);
        const int suffix = 1 + static_cast<int>(rng() % 8);
        const uint64_t tenant = rng() % 4;
        // Two cache scopes of two tenants each, sharing a head of 8 tokens.
        flags.push_back(rig.submit_scoped(tag, p, branches(n_branches, tag, suffix), tenant, tenant % 2, 8));
      }
      if (!flags.empty() && rng() % 11 == 0) flags[rng() % flags.size()]->store(true);
      if (rng() % 37 == 0) rig.model->fail_next = 1;  // no KV slot: idle prefixes are evicted and the step retried
      rig.step();
    }
    rig.drain();
    check(static_cast<int>(rig.done.size()) == tag, "every job ended (" + std::to_string(rig.done.size()) + " of " + std::to_string(tag) + ")");
    rig.check_results();
    const ScorerStats s = rig.scorer->stats();
    check(s.queue_depth == 0, "nothing is left queued");
  }
}

void test_decode_failure_fails_jobs_and_leaves_scorer_whole() {
  Rig rig;
  rig.submit(1, tokens({2}, 20, 10), branches(3, 10), 1);
  rig.model->fail_next = -3;
  rig.drain();
  check(rig.done[1] && rig.done[1]->error_code == std::string("internal"), "a failed decode fails the job with internal");
  rig.submit(2, tokens({2}, 20, 10), branches(3, 11), 1);
  rig.drain();
  check(rig.done[2] && rig.done[2]->error.empty(), "the next job is served");
  rig.check_results();
}

void test_liveness_clock() {
  Rig rig;
  check(rig.scorer->stats().stalled_ms == 0.0, "an idle scorer owes nothing");
  rig.submit(1, tokens({2}, 10, 12), branches(1, 12), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  check(rig.scorer->stats().stalled_ms >= 30.0, "work waiting 30 ms without a decode shows as stalled");
  rig.drain();
  check(rig.scorer->stats().stalled_ms == 0.0, "once done, nothing is owed");
}

void test_injected_stall_holds_work_until_stopped() {
  ScorerOptions o;
  auto m = std::make_unique<FakeModel>(static_cast<int32_t>(o.n_batch));
  Scorer scorer(std::move(m), o, true);
  scorer.stall_after(1);
  std::atomic<int> finished{0};
  for (int i = 0; i < 3; ++i) {
    auto job = std::make_unique<ScoreJob>();
    job->prefix = tokens({3}, 10, 20 + i);
    job->branches = branches(2, 20 + i);
    job->on_done = [&finished](std::unique_ptr<ScoreJob>) { finished++; };
    scorer.submit(std::move(job));
    if (i == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  const ScorerStats s = scorer.stats();
  check(s.decodes >= 1, "it decoded before the stall");
  check(s.queue_depth > 0 && s.stalled_ms >= 100.0, "the stalled scorer shows work owed for " + std::to_string(s.stalled_ms) + " ms");
  const auto left = scorer.stop();
  check(!left.empty() && finished.load() + static_cast<int>(left.size()) == 3, "stop() hands back every job the stall held");
}

}  // namespace

// Decodes whose exact fit has a fixed part below zero: the cost must come from the best fit whose
// parts are all costs, not from the plain rate per token, which the many-row decodes inflate.
void test_cost_with_a_part_below_zero_keeps_the_token_rate() {
  const auto truth = [](double tokens, double rows) { return 1.0 * tokens + 13.0 * rows - 5.0; };
  arbitra::CostModel model;
  const int64_t shapes[][2] = {{48, 12}, {16, 1}, {200, 1}, {96, 24}, {4, 1}, {64, 16}, {120, 2}};
  for (int round = 0; round < 20; ++round) {
    for (const auto& s : shapes) model.observe(s[0], s[1], truth(static_cast<double>(s[0]), static_cast<double>(s[1])));
  }
  const arbitra::DecodeCost c = model.cost();
  check(c.known(), "the cost is known");
  check(c.per_decode_ms >= 0.0 && c.per_row_ms >= 0.0, "every part is a cost");
  check(c.per_token_ms > 0.8 && c.per_token_ms < 1.3, "a token costs about 1 ms, fitted " + std::to_string(c.per_token_ms));
  const double long_prompt = c.of(30000, 1);
  check(long_prompt < 1.3 * truth(30000, 1),
        "a 30,000-token prompt of one row is reckoned at " + std::to_string(long_prompt) + " ms, not several times its cost");
}

int main() {
  const arbitra::testing::Tests tests = {
      {"a one-question job is one decode", test_one_question_is_one_decode},
      {"prefixes sharing heads score as they do alone", test_shared_heads_score_as_alone},
      {"a new state is not starved by its own tenant's cached stream", test_no_starvation_same_tenant},
      {"a new state is not starved by another tenant's cached stream", test_no_starvation_other_tenant},
      {"a stream of new jobs cannot starve an old one", test_stream_of_new_jobs_cannot_starve_an_old_one},
      {"a lone tenant's work is taken whole", test_lone_tenant_work_taken_whole},
      {"a newcomer waits for one large step, then steps shrink to the target", test_newcomer_waits_for_one_large_step},
      {"background work yields to every other job", test_background_work_yields},
      {"a cancelled job releases its prefix and sequences", test_cancelled_job_releases_everything},
      {"a long branch is cut into chunks", test_long_branch_is_cut_into_chunks},
      {"a branch longer than the batch is decoded in chunks", test_branch_longer_than_the_batch},
      {"a job waiting on a head whose decoder is cancelled still runs", test_waiting_on_a_head_whose_decoder_is_cancelled},
      {"another cache scope reuses only the frame head", test_scopes_share_only_the_head},
      {"no job joins or waits for another cache scope's prefix past the head", test_no_join_or_wait_across_scopes},
      {"the frame head being decoded is awaited across cache scopes", test_head_decode_is_awaited_across_scopes},
      {"random load keeps every invariant", test_random_load_keeps_every_invariant},
      {"a failed decode fails its jobs and leaves the scorer whole", test_decode_failure_fails_jobs_and_leaves_scorer_whole},
      {"the liveness clock runs only while work waits", test_liveness_clock},
      {"an injected stall holds the work until stopped", test_injected_stall_holds_work_until_stopped},
      {"a cost fit with a part below zero keeps the token rate", test_cost_with_a_part_below_zero_keeps_the_token_rate},
  };
  return arbitra::testing::run_all(tests);
}
