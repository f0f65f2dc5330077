// Generates a tiny workload through the installed package and checks one attention identity,
// exiting non-zero if the package is unusable.
#include <core/attention.hpp>
#include <core/generator.hpp>
#include <cmath>
#include <cstdio>

int main() {
  using namespace subevict;
  const Workload w = generate_workload(spec_from_preset("tiny", 16, 1, 3));
  const Eigen::VectorXd a = attention_row(w.q(0, 0), w.k(0, 0), 15, w.score_scale());
  const double deviation = std::abs(a.sum() - 1.0);
  std::printf("consumer: %s, row 15 sums to 1 within %.1e\n", to_string(w.shape()).c_str(), deviation);
  return deviation < 1e-12 ? 0 : 1;
}
