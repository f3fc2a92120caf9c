#include "cost_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

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
  for (int i = 0; i < kParams; ++i) {
    for (int j = 0; j < kParams; ++j) xx_[i][j] = kForget * xx_[i][j] + x[i] * x[j];
    xy_[i] = kForget * xy_[i] + x[i] * ms;
  }
  yy_ = kForget * yy_ + ms * ms;
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

bool CostModel::fit_parts(const bool use[kParams], double theta[kParams], double* residual) const {
  int idx[kParams];
  int n = 0;
  for (int i = 0; i < kParams; ++i) {
    theta[i] = 0.0;
    if (use[i]) idx[n++] = i;
  }
  // Gaussian elimination with partial pivoting on the n×n system of the parts in use.
  double m[kParams][kParams + 1];
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < n; ++c) m[r][c] = xx_[idx[r]][idx[c]];
    m[r][n] = xy_[idx[r]];
  }
  for (int c = 0; c < n; ++c) {
    int pivot = c;
    for (int r = c + 1; r < n; ++r) {
      if (std::abs(m[r][c]) > std::abs(m[pivot][c])) pivot = r;
    }
    if (std::abs(m[pivot][c]) < 1e-12 * std::max(1.0, std::abs(xx_[idx[c]][idx[c]]))) return false;
    std::swap(m[c], m[pivot]);
    for (int r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = m[r][c] / m[c][c];
      for (int k = c; k <= n; ++k) m[r][k] -= f * m[c][k];
    }
  }
  for (int r = 0; r < n; ++r) theta[idx[r]] = m[r][n] / m[r][r];
  // Σ (ms − θ·x)² = Σ ms² − 2 θ·Σ x ms + θᵀ (Σ x xᵀ) θ
  double r2 = yy_;
  for (int i = 0; i < kParams; ++i) {
    r2 -= 2.0 * theta[i] * xy_[i];
    for (int j = 0; j < kParams; ++j) r2 += theta[i] * xx_[i][j] * theta[j];
  }
  *residual = r2;
  return true;
}

DecodeCost CostModel::cost() const {
  DecodeCost c;
  c.observed = observed_;
  if (observed_ == 0) return c;
  const auto plain = [&] {
    c.per_token_ms = ms_sum_ / token_sum_;
    return c;
  };
  if (observed_ < kWarm) return plain();
  double theta[kParams] = {theta_[0], theta_[1], theta_[2]};
  if (theta[0] < 0.0 || theta[1] <= 0.0 || theta[2] < 0.0) {
    // A part below zero (too few or too alike decodes, or a noisy machine) would make some work
    // look cheaper than none. The best fit over the same decodes with that part left out stands in,
    // not the plain rate per token: decodes of many short rows inflate that rate (their rows' cost
    // counted per token), and a long prompt of one row reckoned with it can look several times its
    // cost and be refused as too costly.
    double best = 0.0;
    bool found = false;
    const bool subsets[][kParams] = {{true, true, false}, {false, true, true}, {false, true, false}};
    for (const auto& use : subsets) {
      double t[kParams];
      double residual = 0.0;
      if (!fit_parts(use, t, &residual) || t[0] < 0.0 || t[1] <= 0.0 || t[2] < 0.0) continue;
      if (!found || residual < best) {
        found = true;
        best = residual;
        std::copy(t, t + kParams, theta);
      }
    }
    if (!found) return plain();
  }
  c.per_decode_ms = theta[0];
  c.per_token_ms = theta[1] * kTokenScale;
  c.per_row_ms = theta[2] * kRowScale;
  return c;
}

}  // namespace arbitra
