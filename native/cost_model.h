// What a decode costs on this machine and model, learnt from the decodes themselves: the scorer
// sizes its decodes with it, and the service admits only work it can finish before its deadline.
#pragma once

#include <cstdint>

namespace arbitra {

struct DecodeCost {
  // Milliseconds a decode takes whatever it holds (weights read, graph built), per token in it,
  // and per logits row read out of it (the output projection over the vocabulary, then the
  // log-softmax). All 0 before the first counted decode; until the three can be told apart, the
  // plain cost per token stands alone.
  double per_decode_ms = 0.0;
  double per_token_ms = 0.0;
  double per_row_ms = 0.0;
  uint64_t observed = 0;

  bool known() const { return per_token_ms > 0.0; }
  double of(double tokens, double rows) const { return per_decode_ms + per_token_ms * tokens + per_row_ms * rows; }
};

// Recursive least squares over (tokens, rows) → milliseconds, one observation per decode. Older
// decodes fade (the machine's load changes, a GPU warms up), so the fit follows what the engine
// does now; a decode far off the fit (a page fault storm, a paused VM) moves it only a little.
class CostModel {
 public:
  CostModel();
  void observe(int64_t tokens, int64_t rows, double ms);
  DecodeCost cost() const;

 private:
  static constexpr int kParams = 3;
  // Features scaled so that the three columns are of like size for the covariance's conditioning.
  static constexpr double kTokenScale = 1.0 / 256.0;
  static constexpr double kRowScale = 1.0 / 8.0;
  double theta_[kParams];
  double p_[kParams][kParams];
  uint64_t observed_ = 0;
  // The same faded decodes as normal equations (Σ x xᵀ, Σ x·ms, Σ ms²): when the fit has a part
  // below zero, the best fit whose parts are all costs is found from them.
  double xx_[kParams][kParams] = {};
  double xy_[kParams] = {};
  double yy_ = 0.0;
  // Faded sums of milliseconds and tokens: the plain rate that stands in until the parts can be
  // told apart, so the cost is known from the first counted decode.
  double ms_sum_ = 0.0;
  double token_sum_ = 0.0;

  // Least squares over the parts in `use` alone (the others 0); false when they cannot be told apart.
  bool fit_parts(const bool use[kParams], double theta[kParams], double* residual) const;
};

}  // namespace arbitra
