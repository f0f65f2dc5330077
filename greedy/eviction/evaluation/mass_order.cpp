#include "greedy/eviction/evaluation/mass_order.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/tolerance.hpp"

namespace subevict::greedy {

double mass_order_slack(bool float_gains) { return float_gains ? double(Tol<float>::kValue) : 1e-9; }

std::vector<std::string> mass_order_violations(const HeadMasses& m, double slack) {
  if (!(slack >= 0.0)) throw std::invalid_argument("mass_order_violations: slack must be >= 0");
  const auto above = [&](double a, double b) { return a > b + slack * std::max(1.0, b); };
  const bool interval = m.optimum_upper.has_value();
  const std::optional<double> upper = interval ? m.optimum_upper : m.optimum;
  std::vector<std::string> broken;
  if (m.policy && m.policy_is_optimum && m.optimum &&
      std::abs(*m.policy - *m.optimum) > slack * std::max(1.0, *m.optimum)) {
    broken.push_back(m.policy_name + " != OPT");
  } else if (m.policy && upper && above(*m.policy, *upper)) {
    broken.push_back(m.policy_name + (interval ? " > OPT's certified upper bound" : " > OPT"));
  }
  if (m.optimum && m.oracle && above(*m.optimum, *m.oracle)) {
    broken.push_back(interval ? "OPT's lower bound > sum U" : "OPT > sum U");
  }
  if (m.oracle && m.tokens && above(*m.oracle, *m.tokens)) broken.push_back("sum U > n");
  return broken;
}

}  // namespace subevict::greedy
