#include "softmax_regression/instances.hpp"

#include <cmath>
#include <stdexcept>

#include "core/counter_rng.hpp"
#include "core/input_error.hpp"

namespace subevict::softmax_regression {
namespace {

constexpr std::uint64_t kAStream = 0x5352000300000001ull;
constexpr std::uint64_t kBStream = 0x5352000300000002ull;
constexpr std::uint64_t kWStream = 0x5352000300000003ull;
constexpr std::uint64_t kRowStream = 0x5352000300000004ull;
constexpr Violation kAllViolations[] = {Violation::kNone,   Violation::kNormA,
                                        Violation::kNegativeB, Violation::kMassB,
                                        Violation::kWeakW,  Violation::kFarStart};

}  // namespace

std::string to_string(Violation v) {
  switch (v) {
    case Violation::kNone: return "none";
    case Violation::kNormA: return "norm_a";
    case Violation::kNegativeB: return "negative_b";
    case Violation::kMassB: return "mass_b";
    case Violation::kWeakW: return "weak_w";
    case Violation::kFarStart: return "far_start";
  }
  return "?";
}

Violation parse_violation(const std::string& name) {
  for (Violation v : kAllViolations) {
    if (to_string(v) == name) return v;
  }
  throw InputError("violation", "name",
                   "one of none, norm_a, negative_b, mass_b, weak_w, far_start", name);
}

Instance make_instance(const InstanceSpec& spec) {
  if (spec.d < 1 || spec.n < spec.d) {
    throw std::invalid_argument("make_instance: need n >= d >= 1");
  }
  const Index n = spec.n, d = spec.d;
  const TheoremParameters& t = spec.parameters;
  Instance out;
  out.parameters = t;
  Problem& p = out.problem;
  p.A.resize(n, d);
  for (Index i = 0; i < n; ++i) {
    for (Index j = 0; j < d; ++j) p.A(i, j) = normal(spec.seed, kAStream, std::uint64_t(i * d + j));
  }
  if (spec.row_spread != 0) {
    for (Index i = 0; i < n; ++i) {
      p.A.row(i) *= std::exp(spec.row_spread * normal(spec.seed, kRowStream, std::uint64_t(i)));
    }
  }
  SingularValueRange sv = singular_value_range(p.A);
  const double target = spec.violation == Violation::kNormA ? 2 * t.R : spec.norm_A;
  p.A *= target / sv.max;
  const double sigma_min = sv.min * target / sv.max;
  p.b.resize(n);
  for (Index i = 0; i < n; ++i) p.b[i] = uniform(spec.seed, kBStream, std::uint64_t(i));
  const double mass = spec.violation == Violation::kMassB ? 2.0 : spec.b_mass;
  p.b *= mass / p.b.sum();
  if (spec.violation == Violation::kNegativeB) p.b[0] = -0.05;
  double threshold = 20 + t.l / (sigma_min * sigma_min);
  if (spec.violation == Violation::kWeakW) threshold *= 0.01;
  p.w.resize(n);
  for (Index i = 0; i < n; ++i) {
    p.w[i] = std::sqrt(threshold *
                       (1 + spec.w_margin * uniform(spec.seed, kWStream, std::uint64_t(i))));
  }
  out.x0 = Vector::Zero(d);
  if (spec.violation == Violation::kFarStart) out.x0[0] = t.R;
  return out;
}

}  // namespace subevict::softmax_regression
