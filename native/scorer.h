// The scorer owns one model context (through ModelOps) and is the only code that decodes on it.
// Jobs (a shared prefix plus branches) arrive on a queue from any thread; one loop thread packs
// the prefix tokens and every branch's suffix of as many jobs as fit into each decode.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cost_model.h"
#include "llama.h"
#include "model_ops.h"

namespace arbitra {

struct Branch {
  std::vector<llama_token> suffix;
  std::vector<llama_token> candidates;
};

struct PrefixEntry;

struct ScoreJob {
  std::vector<llama_token> prefix;
  std::vector<Branch> branches;
  // Whose request this is (an API key, hashed): batches are shared fairly between tenants first,
  // then between each tenant's jobs.
  uint64_t tenant = 0;
  // Whose prefix cache the prefix is found in and left in (an account, hashed; 0: the global cache,
  // one trusted owner's requests and the engine's own work). A job reuses, joins or waits for
  // another scope's prefix only within the first `shared_head` tokens of both (the prompt frame's
  // head, the same text for everyone): beyond it, whether a text is cached, or being decoded, for
  // someone else must not make this job faster, since its time would tell that text to its caller.
  uint64_t scope = 0;
  size_t shared_head = 0;
  // Work nobody waits for (the self-test after start-up): decodes take it only while no other job
  // is in hand, so a user's first request never waits behind it for more than one decode.
  bool background = false;
  // Set from any thread; the loop drops the job at the next batch boundary.
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);

  // Results, filled on the loop thread.
  std::vector<std::vector<float>> logprobs;  // per branch, per candidate
  int64_t evaluated = 0;                     // tokens this job ran through the model
  int64_t cached = 0;                        // prefix tokens found in the prefix cache
  std::string error;
  const char* error_code = "internal";  // EngineError code reported with `error`

  // Called once on the loop thread when the job is finished (or failed).
  std::function<void(std::unique_ptr<ScoreJob>)> on_done;

  // Scheduling state, owned by the loop thread.
  PrefixEntry* entry = nullptr;
  size_t next_branch = 0;
  size_t branches_done = 0;
  // A branch too long for one step is decoded in chunks and holds its sequence between them: its
  // sequence (-1: none open) and its suffix tokens decoded. It is the last branch opened
  // (next_branch - 1): no other opens before it is done.
  llama_seq_id open_seq = -1;
  size_t open_done = 0;
  // When a piece of it (a prefix chunk or a branch) last went into a batch, on the scorer's serve
  // clock; its arrival counts as one, so a job that just came waits its turn behind those waiting
  // longer instead of ahead of every job already served.
  uint64_t last_served = 0;
};

struct ScorerOptions {
  uint32_t n_batch = 2048;
  // At most this many of a prefix's tokens go into one decode, so that one long prompt cannot fill
  // every decode while shorter ones wait.
  uint32_t prefix_chunk = 512;
  uint32_t n_seq_max = 64;
  // Idle prefix tokens kept for reuse; older ones are evicted to hand their sequences back.
  uint32_t prefix_cache_tokens = 4096;
  // Shared KV layout only: cells that prefixes, in use or cached, may hold in the pool. A prefix
  // is admitted only when its whole length fits, so a decode never finds the pool full. 0 = the
  // copied layout, where each prefix owns a stream and only sequences are counted.
  uint32_t prefix_cells = 0;
  // A decode is filled only while its measured cost (CostModel) stays under this, though its first
  // piece goes whole: a request arriving behind a large one waits for one such decode, not for a
  // batch of the large one's work. Where one branch or chunk alone takes longer (a 1.5B model on
  // two CPU cores), each decode carries one piece; its fixed cost is then small beside it. On a
  // GPU pieces are cheap and the batch's own bounds bind first.
  double step_target_ms = 250.0;
  // While every job in hand is one tenant's, no one else waits behind a decode, and it is filled up
  // to this instead: fewer, fuller decodes each pay the pass over the weights once for more tokens.
  // Someone who arrives meanwhile waits for at most one such decode, and the next is planned to the
  // step target again. At most the step target means one bound for every decode.
  double max_step_ms = 1000.0;
};

struct ScorerStats {
  uint64_t decodes = 0;
  uint64_t tokens_evaluated = 0;
  uint64_t branches_scored = 0;
  uint64_t jobs_done = 0;
  uint64_t jobs_cancelled = 0;
  uint64_t last_batch_tokens = 0;
  uint64_t last_batch_branches = 0;
  uint64_t queue_depth = 0;
  uint64_t cached_prefixes = 0;
  // KV cells the prefixes hold between decodes, and the most any decode used (those plus its
  // tokens); a head shared by cell reference is counted once per prefix that holds it, so these are
  // upper bounds. Memory in use follows these, not the pool's size.
  uint64_t kv_cells_held = 0;
  uint64_t kv_cells_peak = 0;
  // Time in llama_decode, and reading branches' log-probs out of its logits: where a request's
  // engine time goes, next to what the rest of the service adds.
  double decode_seconds = 0;
  double readout_seconds = 0;
  // What a decode costs, as fitted so far.
  DecodeCost cost;
  // Liveness: milliseconds since the scorer last finished a decode (or, idle before, since work
  // arrived) while work waits; 0 when it holds none. With the tokens and logits rows of the decode
  // running now (0 between decodes), a watcher can tell a slow decode from a loop that stopped.
  double stalled_ms = 0;
  uint64_t step_tokens = 0;
  uint64_t step_rows = 0;
  // Decodes planned to the max step (one tenant's work alone), of `decodes`.
  uint64_t lone_decodes = 0;

  // Totals over the engine's lanes; a last-batch figure is the largest of theirs.
  ScorerStats& operator+=(const ScorerStats& o) {
    decodes += o.decodes;
    tokens_evaluated += o.tokens_evaluated;
    branches_scored += o.branches_scored;
    jobs_done += o.jobs_done;
    jobs_cancelled += o.jobs_cancelled;
    last_batch_tokens = std::max(last_batch_tokens, o.last_batch_tokens);
    last_batch_branches = std::max(last_batch_branches, o.last_batch_branches);
    queue_depth += o.queue_depth;
    cached_prefixes += o.cached_prefixes;
    kv_cells_held += o.kv_cells_held;
    kv_cells_peak += o.kv_cells_peak;
    decode_seconds += o.decode_seconds;
    readout_seconds += o.readout_seconds;
    // The lane that has decoded most speaks for the engine's cost.
    if (o.cost.observed > cost.observed) cost = o.cost;
    // The lane furthest behind speaks for the engine's liveness.
    stalled_ms = std::max(stalled_ms, o.stalled_ms);
    step_tokens = std::max(step_tokens, o.step_tokens);
    step_rows = std::max(step_rows, o.step_rows);
    lone_decodes += o.lone_decodes;
    return *this;
  }
};

class Scorer {
 public:
  // With `own_thread` false nothing decodes until the caller runs run_once() (the scheduler tests).
  Scorer(std::unique_ptr<ModelOps> model, const ScorerOptions& opts, bool own_thread = true);
  ~Scorer();
  Scorer(const Scorer&) = delete;
  Scorer& operator=(const Scorer&) = delete;

  // Thread-safe. After stop() the job is failed immediately.
  void submit(std::unique_ptr<ScoreJob> job);
  // Stops the loop and returns the jobs that never finished (the caller fails them).
  std::vector<std::unique_ptr<ScoreJob>> stop();
  ScorerStats stats();
  // Takes in what was submitted and runs one step (one decode); false when no work was waiting. The
  // loop thread's body; without it, the caller's, on one thread only.
  bool run_once();
  // The scheduler's invariants, each broken one named: every prefix reference held by exactly the
  // jobs that use it (so released exactly once), every sequence either free or a prefix's, prefixes
  // in use within their slots, no prefix left marked as being in a batch. Between steps only, on
  // the thread that runs them.
  std::vector<std::string> audit() const;
  // Fault injection for the liveness tests, never used in service: after `more` further decodes the
  // loop stops taking work, as a wedged scheduler would, until the scorer is stopped.
  void stall_after(uint64_t more);
  // Thread-safe: the idle cached prefixes are dropped before the next step, so the next job finds
  // none of them (the load-time determinism check decodes its probe cold on purpose).
  void forget_cached();

 private:
  struct Planned {
    ScoreJob* job;
    size_t branch;
    llama_seq_id seq;
    // The suffix tokens [from, from + count) of the branch; the last chunk asks for logits at its
    // last token (logits_index), an earlier one for none (-1).
    size_t from = 0;
    int32_t count = 0;
    int32_t logits_index = -1;
    // Decoded in the prefix's own sequence right behind its last chunk: its cells are trimmed off
    // the prefix afterwards instead of freeing a sequence.
    bool fused = false;
    bool last() const { return logits_index >= 0; }
  };
  // Entries whose next tokens are in the batch being built, and the job charged for them.
  using Stepped = std::vector<std::pair<PrefixEntry*, ScoreJob*>>;

  void loop();
  // One llama_decode over as much queued work as fits; false when there was nothing to do.
  bool step();
  // Empties the batch and fills it piece by piece (a prefix chunk or a branch), each for the
  // tenant served least recently, until the step target, the batch or the work runs out.
  void plan_batch(Stepped& stepped, std::vector<Planned>& planned);
  // Places pieces of the jobs this decode serves (serves()) until the step bound, the batch or their
  // work runs out.
  void fill_batch(int32_t& budget, Stepped& stepped, std::vector<Planned>& planned);
  // Counts a decoded chunk into its prefix, or, when the decode failed, back out of its job.
  void end_prefix_chunks(const Stepped& stepped, bool decoded);
  // Hands the failed step's branches back to their jobs for a later step, then evicts idle prefixes
  // to make room (the KV cache was full) or fails every active job.
  void undo_failed_decode(int32_t rc, const std::vector<Planned>& planned, double decode_s);
  // Each planned branch's candidate log-probs, out of the decode's logits; then frees its cells.
  void read_out(const std::vector<Planned>& planned);
  void count_step(double decode_s, double readout_s, size_t branches);
  // Moves the active jobs `which` picks out of active_, keeping the others in order.
  std::vector<std::unique_ptr<ScoreJob>> take_active(const std::function<bool(const ScoreJob&)>& which);
  // Fails the cancelled jobs; their sequences are already free between batches.
  void drop_cancelled();
  // Gives waiting jobs a prefix: a job whose prefix is in use joins it at once; others take a slot,
  // tenants holding the fewest first.
  void admit_prefixes();
  // Prefix sequences that jobs in progress may hold.
  size_t prefix_slots() const { return std::max<size_t>(1, opts_.n_seq_max / 2); }
  // True when every job served in this decode is one tenant's: no one else waits behind it.
  bool one_tenant_in_hand() const;
  // Whether the decode being planned serves this job: background jobs only while no other is in hand.
  bool serves(const ScoreJob& job) const { return job.background == background_turn_; }
  // More tokens this decode can take, with `more_rows` more logits rows, before its measured cost
  // passes the step bound; unbounded for the decode's first piece or while the cost is unknown.
  int32_t tokens_in_time(size_t planned_rows, size_t more_rows) const;
  // The next piece of the tenant's job served least recently that has one that fits: a chunk of
  // its prefix while that is decoding, else its next branch. false when none fits what is left of
  // the decode.
  bool place_piece(uint64_t tenant, int32_t& budget, Stepped& stepped, std::vector<Planned>& planned);
  // The next chunk of the job's prefix, and behind a last chunk its first branch, so that a
  // one-question request takes one decode.
  bool place_prefix_chunk(ScoreJob* job, int32_t& budget, Stepped& stepped, std::vector<Planned>& planned);
  bool place_next_branch(ScoreJob* job, int32_t& budget, std::vector<Planned>& planned);
  // The next chunk of the job's open branch.
  bool place_open_branch(ScoreJob* job, int32_t& budget, std::vector<Planned>& planned);
  // How many of a branch's `left` suffix tokens go into this decode: its next piece, or 0 where
  // that does not fit beside what is planned or in what is left of the batch.
  int32_t branch_take(size_t left, int32_t budget, size_t planned_rows) const;
  // The next piece of a branch's `left` suffix tokens. A branch longer than the batch, or one that
  // alone would take more than twice the step target (the max step while one tenant is alone), is
  // cut into the fewest equal chunks that each fit, so a request arriving behind it waits for a
  // short decode; below that a cut would cost a decode's fixed part for little.
  size_t branch_piece(size_t left) const;
  void forget_idle_tenants();
  // The tenant served least recently among those with work and not closed for this decode.
  bool next_tenant(const std::vector<uint64_t>& closed, uint64_t* tenant);
  // Appends `count` suffix tokens of the branch from `from` on to the batch in sequence `seq`,
  // positions following its prefix, with logits at the suffix's last token if they reach it, and
  // charges them to the job.
  void place_branch(ScoreJob* job, size_t branch, size_t from, int32_t count, llama_seq_id seq, bool fused, int32_t& budget, std::vector<Planned>& planned);
  // Logits rows of the planned pieces (a branch's last chunk has one, an earlier chunk none).
  static size_t rows(const std::vector<Planned>& planned);
  PrefixEntry* acquire_prefix(ScoreJob* job);
  // The prefix of the job's scope with exactly its tokens that jobs are using now; nullptr when none is.
  PrefixEntry* prefix_in_use(const ScoreJob& job);
  // The prefix whose decoded tokens share the longest head with the job's that it may reuse (nullptr:
  // none), and that head's length.
  PrefixEntry* longest_head(const ScoreJob& job, size_t* length);
  // True while a prefix in use is still decoding tokens the job's prefix begins with and may reuse.
  bool awaits_shared_head(const ScoreJob& job) const;
  // Shared layout: evicts idle prefixes until `need` more cells fit, sacrificing the donor last
  // (then cleared); false when the prefixes in use leave no room.
  bool make_room(size_t need, PrefixEntry*& donor);
  void release_prefix(PrefixEntry* entry);
  // KV cells the prefixes hold (see ScorerStats::kv_cells_held).
  uint64_t cells_held() const;
  bool alloc_seq(llama_seq_id* out);
  void free_seq(llama_seq_id seq);
  bool evict_one_idle(const PrefixEntry* keep);
  void trim_cache();
  // Releases the jobs' prefixes, updates the counters, then hands each job to its on_done.
  void finish(std::vector<std::unique_ptr<ScoreJob>> jobs);
  void fail_all_active(const std::string& why, const char* code);

  std::unique_ptr<ModelOps> model_;
  int32_t n_vocab_;
  ScorerOptions opts_;
  llama_batch& batch_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<ScoreJob>> incoming_;
  bool stopping_ = false;
  ScorerStats stats_;
  // Liveness (under mu_): when a decode last finished, or work arrived while there was none; and
  // the decode in progress, if any.
  std::chrono::steady_clock::time_point progress_at_ = std::chrono::steady_clock::now();
  uint64_t stall_at_ = 0;  // stall_after(): the decode count at which the loop stops; 0 = never
  bool forget_ = false;    // forget_cached() asked for it

  // Loop-thread state.
  std::vector<std::unique_ptr<ScoreJob>> active_;
  std::vector<llama_seq_id> free_seqs_;
  std::list<PrefixEntry> prefixes_;
  uint64_t clock_ = 0;
  uint64_t serve_clock_ = 0;                              // ticks once per branch placed
  std::unordered_map<uint64_t, uint64_t> tenant_served_;  // tenant -> when it last had a branch placed
  CostModel cost_model_;
  DecodeCost cost_;  // cost_model_'s fit after the last decode
  // What the decode being planned is filled to: the step target, or the max step while one tenant
  // is alone (plan_batch).
  double step_ms_ = 0;
  // The decode being planned serves background jobs: no other job is in hand (plan_batch).
  bool background_turn_ = false;
  uint64_t decodes_seen_ = 0;

  std::thread thread_;
};

}  // namespace arbitra
