// Naive, lazy (CELF) and stochastic greedy on dense facility location over n in {250, 500, 1000,
// 2000} candidates (= clients), k = n / 20, similarity exp(−‖x_i − x_j‖²) of uniform random points
// in the unit square (seeded). Items processed = n · k candidate-steps per run (the work unit of
// naive greedy), so items/s compares the three directly; the counter oracle_calls says how many
// gains each needed. Also concave-over-modular (sqrt), whose gains are O(1), at n = 10^5.
#include <benchmark/benchmark.h>

#include <cmath>
#include <map>
#include <random>

#include "greedy/functions/concave_over_modular.hpp"
#include "greedy/functions/facility_location.hpp"
#include "greedy/optimizers/lazy_greedy.hpp"
#include "greedy/optimizers/naive_greedy.hpp"
#include "greedy/optimizers/stochastic_greedy.hpp"

namespace subevict::greedy {
namespace {

/// Gaussian similarity of n uniform points in [0, 1]^2 (seed 42), n x n.
const FacilityLocation& dense_instance(std::size_t n) {
  static std::map<std::size_t, FacilityLocation> cache;
  auto it = cache.find(n);
  if (it == cache.end()) {
    std::mt19937_64 engine(42);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    const auto size = Eigen::Index(n);
    Eigen::MatrixXd points(size, 2);
    for (Eigen::Index i = 0; i < points.size(); ++i) points.data()[i] = unit(engine);
    Eigen::MatrixXd sim(size, size);
    for (Eigen::Index i = 0; i < sim.rows(); ++i) {
      for (Eigen::Index j = 0; j < sim.cols(); ++j) {
        sim(i, j) = std::exp(-(points.row(i) - points.row(j)).squaredNorm());
      }
    }
    it = cache.emplace(n, FacilityLocation(std::move(sim))).first;
  }
  return it->second;
}

template <class Run>
void run_greedy(benchmark::State& state, const SetFunction& f, std::size_t k, Run run) {
  Selection s;
  for (auto _ : state) {
    s = run(f, k);
    benchmark::DoNotOptimize(s.value);
  }
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(f.ground_size() * k));
  state.counters["oracle_calls"] = double(s.oracle_calls);
  state.counters["value"] = s.value;
}

Selection naive(const SetFunction& f, std::size_t k) { return naive_greedy(f, {k}); }
Selection lazy(const SetFunction& f, std::size_t k) { return lazy_greedy(f, {k}); }
Selection stochastic(const SetFunction& f, std::size_t k) {
  return stochastic_greedy(f, {k, 0.01, 7});
}

/// n in {250, 500, 1000, 2000}, reported in milliseconds.
void size_grid(benchmark::internal::Benchmark* b) {
  b->Arg(250)->Arg(500)->Arg(1000)->Arg(2000)->Unit(benchmark::kMillisecond);
}

void BM_FacilityLocationNaive(benchmark::State& state) {
  const auto n = std::size_t(state.range(0));
  run_greedy(state, dense_instance(n), n / 20, naive);
}
void BM_FacilityLocationLazy(benchmark::State& state) {
  const auto n = std::size_t(state.range(0));
  run_greedy(state, dense_instance(n), n / 20, lazy);
}
void BM_FacilityLocationStochastic(benchmark::State& state) {
  const auto n = std::size_t(state.range(0));
  run_greedy(state, dense_instance(n), n / 20, stochastic);
}
BENCHMARK(BM_FacilityLocationNaive)->Apply(size_grid);
BENCHMARK(BM_FacilityLocationLazy)->Apply(size_grid);
BENCHMARK(BM_FacilityLocationStochastic)->Apply(size_grid);

void BM_ConcaveOverModularLazy(benchmark::State& state) {
  const auto n = std::size_t(state.range(0));
  std::mt19937_64 engine(42);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> weights(n);
  for (double& w : weights) w = unit(engine);
  const ConcaveOverModular f(std::move(weights), Concave::kSqrt);
  run_greedy(state, f, 100, lazy);
}
BENCHMARK(BM_ConcaveOverModularLazy)->Arg(100'000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace subevict::greedy
BENCHMARK_MAIN();
