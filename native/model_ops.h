// What the scorer asks of a model: a batch to fill, a decode of it, the KV cache's sequences and the
// logits it produced. Everything else in the scorer is scheduling, which native/tests drives with a
// fake model that needs no weights, so the scheduler's invariants are tested without a GGUF.
#pragma once

#include <cstdint>
#include <memory>

#include "llama.h"

namespace arbitra {

class ModelOps {
 public:
  virtual ~ModelOps() = default;
  // The batch the next decode() runs; the scorer fills it (one sequence id per token).
  virtual llama_batch& batch() = 0;
  // llama_decode's contract: 0 done; 1 no KV slot for the batch, the cache as it was before; other
  // values failures.
  virtual int32_t decode() = 0;
  // Gives `dst` the cells of `src` before position `until` (-1: all of them): in a shared pool `dst`
  // joins those cells, in the copied layout it gets a copy of the stream, cut back to `until`.
  virtual void seq_cp(llama_seq_id src, llama_seq_id dst, llama_pos until) = 0;
  // Removes the sequence's cells from position `from` on; -1 removes them all.
  virtual void seq_rm(llama_seq_id seq, llama_pos from) = 0;
  // The logits of the batch's i-th token, which asked for them.
  virtual const float* logits(int32_t i) = 0;
  virtual int32_t n_vocab() const = 0;
};

// The model behind a llama_context; the context must outlive it. `shared_pool`: the context's KV
// cache is one pool for every sequence (LaneSpec's shared layout).
std::unique_ptr<ModelOps> llama_model_ops(llama_context* ctx, int32_t n_batch, bool shared_pool);

}  // namespace arbitra
