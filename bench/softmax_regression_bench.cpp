// Exact vs approximate Newton (H2O Algorithm 4) on sparse softmax regression, n = 100000, d = 100:
// time to |x - x*| <= 1e-6 and to |grad L| <= 1e-10, plus the cost of one Hessian and one gradient.
// Two instances are generated here (make_instance, seed 1: |A| = 10 = R, b >= 0 with |b|_1 = 0.9,
// the w condition of Lemma D.47, x0 = 0): instance 0 has a Gaussian A (row_spread 0: incoherent,
// L nearly quadratic), instance 1 a coherent A (row_spread 2: lognormal row norms, a few dominant
// rows). x* comes from exact Newton to |grad| <= 1e-12 before timing. The first benchmark
// argument is the instance.
//
// The Scaling* benchmarks (arguments n, d, instance) repeat the comparison at n = 1e6, 4e6 and
// d = 100, 400 on the same generator (one such instance is held at a time: A alone is 8 n d bytes),
// with x* from exact Newton (|g| <= 1e-12 or 4 iterations: its gradient stalls at the rounding
// level, ~1e-5 at n = 1e6, while the steps show quadratic convergence),
// and ScalingComponent times one piece of an iteration (ScalingPart below). Their CPU column is
// the whole process's CPU time (all threads), which a loaded machine inflates less than the wall.
//
//   softmax_regression_bench [benchmark flags]        run the benchmarks
//   softmax_regression_bench --export DIR INSTANCE    write DIR/{A,b,w,x0,x_star}.npy (peers)
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
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

/// The benchmarks' instance: seed 1, R = ||A|| = 10; instance 0 has equal row norms, 1 a row
/// spread of 2 (coherent rows).
sr::InstanceSpec bench_spec(sr::Index n, sr::Index d, int instance) {
  sr::InstanceSpec spec;
  spec.n = n;
  spec.d = d;
  spec.parameters.R = 10;
  spec.norm_A = 10;
  spec.seed = 1;
  spec.row_spread = instance == 0 ? 0.0 : 2.0;
  return spec;
}

Setup make_setup(int instance) {
  {
    Setup out{sr::make_instance(bench_spec(kRows, kCols, instance)), {}};
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

// ---- Scaling: n in {1e6, 4e6}, d in {100, 400} ----

struct ScalingSetup {
  sr::Index n = 0, d = 0;
  std::int64_t instance = -1;
  Setup setup;
  double x_star_gradient = 0;  // |grad L(x*)|
  int x_star_iterations = 0;
  double x_star_last_step = 0;
};

// The one large instance alive (replaced, never two at once).
const ScalingSetup& scaling_setup(sr::Index n, sr::Index d, std::int64_t instance) {
  static std::unique_ptr<ScalingSetup> held;
  if (held && held->n == n && held->d == d && held->instance == instance) return *held;
  held.reset();
  auto out = std::make_unique<ScalingSetup>();
  out->n = n;
  out->d = d;
  out->instance = instance;
  out->setup.instance = sr::make_instance(bench_spec(n, d, instance));
  sr::NewtonOptions o;
  o.stop.gradient_tolerance = 1e-12;
  o.stop.max_iterations = 4;
  const sr::Summary solved = sr::newton(out->setup.instance.problem, sr::LossKind::kFull,
                                        out->setup.instance.x0, o);
  out->setup.x_star = solved.x;
  out->x_star_gradient = solved.final_gradient_norm;
  out->x_star_iterations = solved.iterations();
  // The last Newton step (quadratic convergence: about the error of the iterate before x*).
  out->x_star_last_step =
      solved.trace.size() >= 2 ? solved.trace[solved.trace.size() - 2].step_length : 0;
  held = std::move(out);
  return *held;
}

void report_scaling(benchmark::State& state, const ScalingSetup& s, const sr::Summary& run) {
  report(state, run);
  state.counters["x0_distance"] = (s.setup.instance.x0 - s.setup.x_star).norm();
  state.counters["x_star_gradient"] = s.x_star_gradient;
  state.counters["x_star_newton_its"] = s.x_star_iterations;
  state.counters["x_star_last_step"] = s.x_star_last_step;
  state.counters["seconds_per_iteration"] = run.seconds / std::max(1, run.iterations());
}

void BM_ScalingExactNewton(benchmark::State& state) {
  const ScalingSetup& s = scaling_setup(state.range(0), state.range(1), state.range(2));
  sr::NewtonOptions o;
  o.stop = stop_at(s.setup, kTarget, 0);
  sr::Summary last;
  for (auto _ : state) {
    last = sr::newton(s.setup.instance.problem, sr::LossKind::kFull, s.setup.instance.x0, o);
  }
  report_scaling(state, s, last);
}

void BM_ScalingApproximateNewton(benchmark::State& state) {
  const ScalingSetup& s = scaling_setup(state.range(0), state.range(1), state.range(2));
  sr::ApproximateNewtonOptions o;
  o.stop = stop_at(s.setup, kTarget, 0);
  o.epsilon1 = 0.5;
  o.leverage = sr::LeverageMethod::kSketched;
  sr::Summary last;
  for (auto _ : state) {
    last = sr::approximate_newton(s.setup.instance.problem, sr::LossKind::kFull,
                                  s.setup.instance.x0, o);
  }
  report_scaling(state, s, last);
}

/// The pieces of an iteration, at x0 (range(3) of ScalingComponent).
enum ScalingPart : std::int64_t {
  kPassAx,          ///< evaluate_point: z = A x and the n-vectors (one pass over A)
  kGradientGemv,    ///< A^T v alone (the unfused gradient)
  kSixColumnTerms,  ///< A^T [p1 q1 p2 q2 p3 q3]: the rank-two terms as formed before fusing
  kFusedPass,       ///< gradient_and_outer_terms: A^T [v f g] in one GEMM
  kSketchedScores,  ///< sketched leverage scores of D^{1/2} A
  kSampledHessian,  ///< H~ from s = 0.5-accuracy leverage sample rows, plus the d x d solve
  kExactHessian,    ///< weighted_gram(A, D) (exact Newton's Hessian) plus the d x d solve
};

void BM_ScalingComponent(benchmark::State& state) {
  const ScalingSetup& s = scaling_setup(state.range(0), state.range(1), state.range(2));
  const sr::Problem& p = s.setup.instance.problem;
  const sr::Point pt = sr::evaluate_point(p, s.setup.instance.x0);
  const sr::Vector v = sr::gradient_weights(p, sr::LossKind::kFull, pt);
  const sr::InnerHessian inner = sr::inner_hessian(p, sr::LossKind::kFull, pt);
  const sr::Vector weights = inner.diagonal.cwiseMax(0.0);
  sr::Vector scores;
  if (state.range(3) == kSampledHessian) {
    scores = sr::sketched_leverage_scores(p.A, weights.cwiseSqrt(), {});
  }
  for (auto _ : state) {
    switch (state.range(3)) {
      case kPassAx: benchmark::DoNotOptimize(sr::evaluate_point(p, s.setup.instance.x0)); break;
      case kGradientGemv: benchmark::DoNotOptimize(sr::Vector(p.A.transpose() * v)); break;
      case kSixColumnTerms: {
        sr::Matrix PQ(p.n(), 6);
        for (int t = 0; t < 3; ++t) {
          PQ.col(2 * t) = inner.terms[std::size_t(t)].p;
          PQ.col(2 * t + 1) = inner.terms[std::size_t(t)].q;
        }
        benchmark::DoNotOptimize(sr::Matrix(p.A.transpose() * PQ));
        break;
      }
      case kFusedPass:
        benchmark::DoNotOptimize(sr::gradient_and_outer_terms(p.A, v, inner.terms));
        break;
      case kSketchedScores:
        benchmark::DoNotOptimize(sr::sketched_leverage_scores(p.A, weights.cwiseSqrt(), {}));
        break;
      case kSampledHessian: {
        const sr::Index draws = sr::approximate_newton_sample_size(0.5, 0.01, 200, p.d(),
                                                                   scores.sum(), 1.0);
        const sr::RowSample sample = sr::sample_rows(scores / scores.sum(), draws, 0, 1);
        const sr::Index k = sr::Index(sample.rows.size());
        sr::Matrix rows(k, p.d());
        sr::Vector sampled(k);
        for (sr::Index j = 0; j < k; ++j) {
          rows.row(j) = p.A.row(sample.rows[std::size_t(j)]);
          sampled[j] = inner.diagonal[sample.rows[std::size_t(j)]] * sample.weights[j];
        }
        benchmark::DoNotOptimize(
            sr::newton_direction(sr::weighted_gram(rows, sampled), v.head(p.d())));
        state.counters["sampled_rows"] = double(k);
        break;
      }
      case kExactHessian:
        benchmark::DoNotOptimize(
            sr::newton_direction(sr::weighted_gram(p.A, inner.diagonal), v.head(p.d())));
        break;
    }
  }
}

// Registered size by size (exact, approximate, then the parts): each instance is built once.
void register_scaling() {
  const auto once = [](benchmark::internal::Benchmark* b) {
    b->Unit(benchmark::kMillisecond)->UseRealTime()->MeasureProcessCPUTime()->Iterations(1);
  };
  for (std::int64_t n : {1000000, 4000000}) {
    for (std::int64_t d : {100, 400}) {
      once(benchmark::RegisterBenchmark("BM_ScalingExactNewton", BM_ScalingExactNewton)
               ->Args({n, d, 0}));
      once(benchmark::RegisterBenchmark("BM_ScalingApproximateNewton", BM_ScalingApproximateNewton)
               ->Args({n, d, 0}));
      for (std::int64_t part = kPassAx; part <= kExactHessian; ++part) {
        once(benchmark::RegisterBenchmark("BM_ScalingComponent", BM_ScalingComponent)
                 ->Args({n, d, 0, part}));
      }
    }
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
  register_scaling();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
