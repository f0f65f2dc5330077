// Exact vs approximate Newton (H2O Algorithm 4) on sparse softmax regression, n = 100000, d = 100:
// time to |x - x*| <= 1e-6 and to |grad L| <= 1e-10, plus the cost of one Hessian and one gradient.
// Two instances are generated here (make_instance, seed 1: |A| = 10 = R, b >= 0 with |b|_1 = 0.9,
// the w condition of Lemma D.47, x0 = 0): instance 0 has a Gaussian A (row_spread 0: incoherent,
// L nearly quadratic), instance 1 a coherent A (row_spread 2: lognormal row norms, a few dominant
// rows). x* comes from exact Newton to |grad| <= 1e-12 before timing. The first benchmark
// argument is the instance.
//
//   softmax_regression_bench [benchmark flags]        run the benchmarks
//   softmax_regression_bench --export DIR INSTANCE    write DIR/{A,b,w,x0,x_star}.npy (peers)
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "core/npy.hpp"
#include "softmax_regression/approximate_newton.hpp"
#include "softmax_regression/instances.hpp"
#include "softmax_regression/newton.hpp"

namespace sr = subevict::softmax_regression;

namespace {

constexpr sr::Index kRows = 100000;
constexpr sr::Index kCols = 100;
constexpr double kTarget = 1e-6;

struct Setup {
  sr::Instance instance;
  sr::Vector x_star;
};

Setup make_setup(int instance) {
  {
    sr::InstanceSpec spec;
    spec.n = kRows;
    spec.d = kCols;
    spec.parameters.R = 10;
    spec.norm_A = 10;
    spec.seed = 1;
    spec.row_spread = instance == 0 ? 0.0 : 2.0;
    Setup out{sr::make_instance(spec), {}};
    sr::NewtonOptions o;
    o.stop.gradient_tolerance = 1e-12;
    o.stop.max_iterations = 50;
    const sr::Summary solved = sr::newton(out.instance.problem, sr::LossKind::kFull,
                                          out.instance.x0, o);
    out.x_star = solved.x;
    return out;
  }
}

const Setup& setup(std::int64_t instance) {
  static const Setup s0 = make_setup(0);
  static const Setup s1 = make_setup(1);
  return instance == 0 ? s0 : s1;
}

void report(benchmark::State& state, const sr::Summary& s) {
  state.counters["iterations"] = s.iterations();
  state.counters["final_distance"] = s.trace.back().distance_to_x_star;
  state.counters["final_gradient"] = s.final_gradient_norm;
  // Geometric mean of the per-step contraction |x_{t+1} - x*| / |x_t - x*|.
  double log_sum = 0;
  int steps = 0;
  for (std::size_t t = 0; t + 1 < s.trace.size(); ++t) {
    log_sum += std::log(s.trace[t + 1].distance_to_x_star / s.trace[t].distance_to_x_star);
    ++steps;
  }
  state.counters["mean_contraction"] = steps ? std::exp(log_sum / steps) : 0.0;
  if (s.trace.front().sampled_rows > 0) state.counters["sampled_rows"] = double(s.trace.front().sampled_rows);
}

sr::StoppingRule stop_at(const Setup& s, double distance, double gradient) {
  sr::StoppingRule stop;
  stop.max_iterations = 200;
  stop.gradient_tolerance = gradient;
  stop.x_star = s.x_star;
  stop.x_star_tolerance = distance;
  return stop;
}

void BM_ExactNewtonToDistance(benchmark::State& state) {
  const Setup& s = setup(state.range(0));
  sr::NewtonOptions o;
  o.stop = stop_at(s, kTarget, 0);
  sr::Summary last;
  for (auto _ : state) last = sr::newton(s.instance.problem, sr::LossKind::kFull, s.instance.x0, o);
  report(state, last);
}

void BM_ApproximateNewtonToDistance(benchmark::State& state) {
  const Setup& s = setup(state.range(0));
  sr::ApproximateNewtonOptions o;
  o.stop = stop_at(s, kTarget, 0);
  o.epsilon1 = double(state.range(1)) / 100;
  o.leverage = sr::LeverageMethod::kSketched;
  sr::Summary last;
  for (auto _ : state) {
    last = sr::approximate_newton(s.instance.problem, sr::LossKind::kFull, s.instance.x0, o);
  }
  report(state, last);
}

void BM_ExactNewtonToGradient(benchmark::State& state) {
  const Setup& s = setup(state.range(0));
  sr::NewtonOptions o;
  o.stop = stop_at(s, 0, 1e-10);
  sr::Summary last;
  for (auto _ : state) last = sr::newton(s.instance.problem, sr::LossKind::kFull, s.instance.x0, o);
  report(state, last);
}

void BM_Hessian(benchmark::State& state) {
  const Setup& s = setup(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(sr::hessian(s.instance.problem, sr::LossKind::kFull, s.instance.x0));
  }
  state.counters["FLOPs"] = benchmark::Counter(double(kRows) * kCols * (kCols + 1),
                                               benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Gradient(benchmark::State& state) {
  const Setup& s = setup(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(sr::gradient(s.instance.problem, sr::LossKind::kFull, s.instance.x0));
  }
}

}  // namespace

BENCHMARK(BM_Hessian)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Gradient)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ExactNewtonToDistance)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ApproximateNewtonToDistance)
    ->Args({0, 50})->Args({1, 50})->Args({1, 30})
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ExactNewtonToGradient)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--export") == 0) {
    const Setup& s = setup(std::atoi(argv[3]));
    const std::string dir = argv[2];
    const sr::Problem& p = s.instance.problem;
    const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> A = p.A;
    auto vec = [](const sr::Vector& v) {
      return subevict::Tensor<double>{{std::size_t(v.size())},
                                      std::vector<double>(v.data(), v.data() + v.size())};
    };
    subevict::write_npy(dir + "/A.npy",
                        subevict::Tensor<double>{{std::size_t(p.n()), std::size_t(p.d())},
                                                 std::vector<double>(A.data(), A.data() + A.size())});
    subevict::write_npy(dir + "/b.npy", vec(p.b));
    subevict::write_npy(dir + "/w.npy", vec(p.w));
    subevict::write_npy(dir + "/x0.npy", vec(s.instance.x0));
    subevict::write_npy(dir + "/x_star.npy", vec(s.x_star));
    std::cout << "wrote " << dir << "/{A,b,w,x0,x_star}.npy\n";
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
