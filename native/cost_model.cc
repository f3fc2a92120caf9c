#include "cost_model.h"

#include <algorithm>
#include <cmath>

namespace arbitra {

namespace {

// Weight of the decode seen k decodes ago: 0.98^k, so about the last 50 decodes count.
constexpr double kForget = 0.98;
// Large: the first decodes set the fit rather than refine a guess.
constexpr double kPrior = 1e6;
// Residuals beyond this many times the fit's own prediction are clipped to it: an outlier shifts
// the fit as a decode three times slower than expected would, no more.
constexpr double kClip = 3.0;
// Before this many decodes the three coefficients cannot be told apart.
constexpr uint64_t kWarm = 3;

}  // namespace

CostModel::CostModel() {
  for (int i = 0; i < kParams; ++i) {
    theta_[i] = 0.0;
    for (int j = 0; j < kParams; ++j) p_[i][j] = i == j ? kPrior : 0.0;
  }
}

void CostModel::observe(int64_t tokens, int64_t rows, double ms) {
  if (tokens <= 0 || !(ms >= 0.0) || !std::isfinite(ms)) return;
  const double x[kParams] = {1.0, static_cast<double>(tokens) * kTokenScale, static_cast<double>(rows) * kRowScale};
  double predicted = 0.0;
  for (int i = 0; i < kParams; ++i) predicted += theta_[i] * x[i];
  double error = ms - predicted;
  if (observed_ >= kWarm && predicted > 0.0) error = std::clamp(error, -kClip * predicted, kClip * predicted);
  double px[kParams];
  for (int i = 0; i < kParams; ++i) {
    px[i] = 0.0;
    for (int j = 0; j < kParams; ++j) px[i] += p_[i][j] * x[j];
  }
  double denom = kForget;
  for (int i = 0; i < kParams; ++i) denom += x[i] * px[i];
  for (int i = 0; i < kParams; ++i) theta_[i] += px[i] * error / denom;
  ms_sum_ = kForget * ms_sum_ + ms;
  token_sum_ = kForget * token_sum_ + static_cast<double>(tokens);
  double largest = 0.0;
  for (int i = 0; i < kParams; ++i) {
    for (int j = 0; j < kParams; ++j) p_[i][j] = (p_[i][j] - px[i] * px[j] / denom) / kForget;
    largest = std::max(largest, p_[i][i]);
  }
  // Forgetting inflates the covariance along directions the decodes never vary in (every decode
  // one branch of the same length), until one odd decode swings the fit; bounded, it cannot.
  if (largest > kPrior) {
    for (auto& row : p_) {
      for (double& v : row) v *= kPrior / largest;
    }
  }
  observed_++;
}

DecodeCost CostModel::cost() const {
  DecodeCost c;
  c.observed = observed_;
  if (observed_ == 0) return c;
  // A part below zero (too few or too alike decodes, or a noisy machine) would make some work look
  // cheaper than none: the plain rate per token stands in until every part is a cost.
  if (observed_ < kWarm || theta_[0] < 0.0 || theta_[1] <= 0.0 || theta_[2] < 0.0) {
    c.per_token_ms = ms_sum_ / token_sum_;
    return c;
  }
  c.per_decode_ms = theta_[0];
  c.per_token_ms = theta_[1] * kTokenScale;
  c.per_row_ms = theta_[2] * kRowScale;
  return c;
}

}  // namespace arbitra
