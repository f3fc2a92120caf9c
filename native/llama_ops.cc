#include "model_ops.h"

namespace arbitra {

namespace {

class LlamaOps final : public ModelOps {
 public:
  LlamaOps(llama_context* ctx, int32_t n_batch, bool shared_pool)
      : ctx_(ctx),
        mem_(llama_get_memory(ctx)),
        n_vocab_(llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(ctx)))),
        shared_pool_(shared_pool),
        batch_(llama_batch_init(n_batch, 0, 1)) {}
  ~LlamaOps() override { llama_batch_free(batch_); }
  LlamaOps(const LlamaOps&) = delete;
  LlamaOps& operator=(const LlamaOps&) = delete;

  llama_batch& batch() override { return batch_; }
  int32_t decode() override { return llama_decode(ctx_, batch_); }
  void seq_cp(llama_seq_id src, llama_seq_id dst, llama_pos until) override {
    if (shared_pool_) return llama_memory_seq_cp(mem_, src, dst, 0, until);
    // Streams are copied whole (llama.cpp copies no partial range between streams), then cut back.
    llama_memory_seq_cp(mem_, src, dst, -1, -1);
    if (until >= 0) llama_memory_seq_rm(mem_, dst, until, -1);
  }
  void seq_rm(llama_seq_id seq, llama_pos from) override { llama_memory_seq_rm(mem_, seq, from, -1); }
  const float* logits(int32_t i) override { return llama_get_logits_ith(ctx_, i); }
  int32_t n_vocab() const override { return n_vocab_; }

 private:
  llama_context* ctx_;
  llama_memory_t mem_;
  int32_t n_vocab_;
  bool shared_pool_;
  llama_batch batch_;
};

}  // namespace

std::unique_ptr<ModelOps> llama_model_ops(llama_context* ctx, int32_t n_batch, bool shared_pool) {
  return std::make_unique<LlamaOps>(ctx, n_batch, shared_pool);
}

}  // namespace arbitra
