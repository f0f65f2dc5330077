// `subevict regress`: sparse softmax regression (theory.md §7) on a generated instance or on the
// user's own A, b, w, solved by exact Newton, approximate Newton (Algorithm 4) or gradient
// descent, with a convergence table, optional JSON, x* as .npy and a gnuplot plot.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <unistd.h>

#include "cli/commands.hpp"
#include "cli/json_output.hpp"
#include "core/atomic_file.hpp"
#include "core/input_error.hpp"
#include "core/npy.hpp"
#include "core/plot.hpp"
#include "softmax_regression/approximate_newton.hpp"
#include "softmax_regression/gradient_descent.hpp"
#include "softmax_regression/hypotheses.hpp"
#include "softmax_regression/instances.hpp"
#include "softmax_regression/newton.hpp"

namespace subevict::cli {
namespace {

namespace sr = softmax_regression;

struct RegressArgs {
  long long n = 10000;
  long long d = 50;
  std::uint64_t seed = 0;
  std::string violation = "none";
  std::string solver = "newton";
  std::string loss = "full";
  std::string a_path, b_path, w_path, x0_path;
  double R = 10, l = 1;
  int max_iterations = 100;
  double gradient_tolerance = 1e-10;
  double epsilon1 = 0.5, delta = 0.01, sample_constant = 1;
  std::string leverage = "auto";
  bool check_spectral = false;
  bool no_line_search = false;
  std::string json, x_out, plot;
};

std::string text(const std::vector<std::size_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

sr::Vector read_vector(const std::string& path, std::size_t n, const std::string& what) {
  const Tensor<double> t = read_npy<double>(path);
  if (t.shape.size() != 1 || (n > 0 && t.shape[0] != n)) {
    throw InputError(path, "shape", "a 1-D array of " + what, text(t.shape));
  }
  return Eigen::Map<const sr::Vector>(t.data.data(), sr::Index(t.data.size()));
}

sr::Problem read_problem(const RegressArgs& a) {
  if (a.b_path.empty() || a.w_path.empty()) {
    throw InputError("--A", "companions", "--b and --w with --A");
  }
  const Tensor<double> A = read_npy<double>(a.a_path);
  if (A.shape.size() != 2 || A.shape[0] == 0 || A.shape[1] == 0) {
    throw InputError(a.a_path, "shape", "a non-empty 2-D array (n, d)", text(A.shape));
  }
  sr::Problem p;
  p.A = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
      A.data.data(), sr::Index(A.shape[0]), sr::Index(A.shape[1]));
  const std::string rows = std::to_string(A.shape[0]) + " entries (rows of A)";
  p.b = read_vector(a.b_path, A.shape[0], rows);
  p.w = read_vector(a.w_path, A.shape[0], rows);
  sr::validate_problem(p, a.a_path);
  return p;
}

/// The convergence figure of `s` as FILE's stem .dat, .gp, .svg and .png beside FILE (core/plot.hpp).
void write_plot(const std::string& path, const sr::Summary& s, const std::string& title) {
  const std::filesystem::path target(path);
  const std::string ext = target.extension().string();
  if (ext != ".svg" && ext != ".png") {
    throw InputError(path, "--plot", "a file name ending in .svg or .png", ext);
  }
  const bool known_x_star = !s.trace.empty() && !std::isnan(s.trace[0].distance_to_x_star);
  plot::Figure figure{target.stem().string(), title, "iteration t",
                      known_x_star ? "Euclidean norm (log scale)" : "|grad L(x_t)|_2 (log scale)", plot::XAxis::linear,
                      true, {}, "iteration", {}};
  plot::Series gradient{"|grad L(x_t)|_2", {}, {}, plot::Mark::lines, "gradient_norm"};
  plot::Series distance{"|x_t - x*|_2", {}, {}, plot::Mark::lines, "distance_to_x_star"};
  plot::Series loss{"L(x_t)", {}, {}, plot::Mark::hidden, "loss"};
  plot::Series seconds{"seconds", {}, {}, plot::Mark::hidden, "seconds"};
  for (const sr::IterationRecord& r : s.trace) {
    for (auto [series, value] : {std::pair{&gradient, r.gradient_norm}, std::pair{&distance, r.distance_to_x_star},
                                 std::pair{&loss, r.loss}, std::pair{&seconds, r.seconds}}) {
      series->x.push_back(r.iteration);
      series->y.push_back(value);
    }
  }
  figure.series = {gradient, distance, loss, seconds};
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  const std::string note = plot::write_figure(dir, figure, true);
  if (note.empty()) return;
  if (plot::gnuplot_available()) throw InputError(path, "--plot", "gnuplot to render the plot", note);
  std::cerr << "subevict: warning: " << note << "\n";
}

nlohmann::json to_json(const sr::IterationRecord& r) {
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  return {{"iteration", r.iteration},         {"loss", num(r.loss)},
          {"gradient_norm", num(r.gradient_norm)}, {"step_length", num(r.step_length)},
          {"step_size", num(r.step_size)},     {"distance_to_x_star", num(r.distance_to_x_star)},
          {"seconds", r.seconds},              {"sampled_rows", r.sampled_rows},
          {"spectral_min", num(r.spectral_min)}, {"spectral_max", num(r.spectral_max)}};
}

void print_table(const sr::Summary& s) {
  std::printf("%5s %22s %12s %12s %9s %8s %10s\n", "iter", "loss", "|grad|", "step", "t", "rows",
              "seconds");
  for (const sr::IterationRecord& r : s.trace) {
    std::printf("%5d %22.15g %12.4e %12.4e %9.3g %8lld %10.4f\n", r.iteration, r.loss,
                r.gradient_norm, r.step_length, r.step_size, (long long)r.sampled_rows, r.seconds);
  }
}

/// The problem of the request (read, or generated with its planted x0), its starting point and a
/// name for the report.
struct RegressInput {
  sr::Problem problem;
  sr::Vector x0;
  std::string source;
};

RegressInput regress_input(const RegressArgs& a, const sr::TheoremParameters& parameters) {
  RegressInput in;
  if (!a.a_path.empty()) {
    in.problem = read_problem(a);
    in.source = a.a_path;
  } else {
    if (a.d < 1 || a.n < a.d) throw InputError("--n/--d", "sizes", "n >= d >= 1");
    sr::InstanceSpec spec;
    spec.n = a.n;
    spec.d = a.d;
    spec.seed = a.seed;
    spec.parameters = parameters;
    spec.violation = sr::parse_violation(a.violation);
    sr::Instance inst = sr::make_instance(spec);
    in.problem = std::move(inst.problem);
    in.x0 = inst.x0;
    in.source = "generated(n=" + std::to_string(a.n) + ", d=" + std::to_string(a.d) +
                ", seed=" + std::to_string(a.seed) + ", violation=" + a.violation + ")";
  }
  if (!a.x0_path.empty()) {
    in.x0 = read_vector(a.x0_path, std::size_t(in.problem.d()), std::to_string(in.problem.d()) +
                                                                    " entries (columns of A)");
  } else if (in.x0.size() == 0) {
    in.x0 = sr::Vector::Zero(in.problem.d());
  }
  return in;
}

/// Runs the request's solver from x0.
sr::Summary solve(const RegressArgs& a, const sr::Problem& problem, sr::LossKind kind, const sr::Vector& x0) {
  sr::StoppingRule stop;
  stop.max_iterations = a.max_iterations;
  stop.gradient_tolerance = a.gradient_tolerance;
  if (a.solver == "newton") {
    sr::NewtonOptions o;
    o.stop = stop;
    o.line_search = !a.no_line_search;
    return sr::newton(problem, kind, x0, o);
  }
  if (a.solver == "approx-newton") {
    sr::ApproximateNewtonOptions o;
    o.stop = stop;
    o.epsilon1 = a.epsilon1;
    o.delta = a.delta;
    o.sample_constant = a.sample_constant;
    o.check_spectral = a.check_spectral;
    o.seed = a.seed;
    o.sketch.seed = a.seed;
    if (a.leverage == "exact") {
      o.leverage = sr::LeverageMethod::kExact;
    } else if (a.leverage == "sketched") {
      o.leverage = sr::LeverageMethod::kSketched;
    } else if (a.leverage != "auto") {
      throw InputError("--leverage", "name", "one of auto, exact, sketched", a.leverage);
    }
    return sr::approximate_newton(problem, kind, x0, o);
  }
  sr::GradientDescentOptions o;
  o.stop = stop;
  return sr::gradient_descent(problem, kind, x0, o);
}

/// The --json document: the run's summary, the hypotheses as checked and the trace.
nlohmann::json regress_json(const RegressArgs& a, const RegressInput& in, const sr::Summary& s,
                            const std::vector<sr::HypothesisCheck>& hypotheses) {
  nlohmann::json doc = {{"source", in.source},
                        {"n", in.problem.n()},
                        {"d", in.problem.d()},
                        {"loss", a.loss},
                        {"solver", a.solver},
                        {"status", sr::to_string(s.status)},
                        {"message", s.message},
                        {"iterations", s.iterations()},
                        {"final_loss", s.final_loss},
                        {"final_gradient_norm", s.final_gradient_norm},
                        {"seconds", s.seconds},
                        {"x", std::vector<double>(s.x.data(), s.x.data() + s.x.size())},
                        {"hypotheses", nlohmann::json::array()},
                        {"trace", nlohmann::json::array()}};
  for (const sr::HypothesisCheck& h : hypotheses) {
    doc["hypotheses"].push_back({{"id", h.id},
                                 {"statement", h.statement},
                                 {"measured", h.measured},
                                 {"required", h.required},
                                 {"relation", h.relation},
                                 {"holds", h.holds}});
  }
  for (const sr::IterationRecord& r : s.trace) doc["trace"].push_back(to_json(r));
  return doc;
}

void run(const RegressArgs& a) {
  const sr::LossKind kind = sr::parse_loss_kind(a.loss);
  if (a.solver != "newton" && a.solver != "approx-newton" && a.solver != "gd") {
    throw InputError("--solver", "name", "one of newton, approx-newton, gd", a.solver);
  }
  if (a.max_iterations < 1) throw InputError("--max-iterations", "value", "at least 1");
  const sr::TheoremParameters parameters{a.R, a.l};
  const RegressInput in = regress_input(a, parameters);
  const std::vector<sr::HypothesisCheck> hypotheses = sr::check_hypotheses(in.problem, in.x0, parameters);
  for (const sr::HypothesisCheck& h : hypotheses) {
    if (!h.holds) std::cerr << "subevict: warning: " << sr::describe(h) << "\n";
  }
  const sr::Summary s = solve(a, in.problem, kind, in.x0);
  std::cout << "regress: " << in.source << ", n = " << in.problem.n() << ", d = " << in.problem.d()
            << ", loss " << a.loss << ", solver " << a.solver << "\n";
  print_table(s);
  std::cout << "status: " << sr::to_string(s.status) << " (" << s.message << "), "
            << s.iterations() << " iterations, " << s.seconds << " s\n";
  if (!a.x_out.empty()) {
    write_npy(a.x_out, Tensor<double>{{std::size_t(s.x.size())},
                                      std::vector<double>(s.x.data(), s.x.data() + s.x.size())});
  }
  if (!a.plot.empty()) {
    write_plot(a.plot, s, "Convergence of " + a.solver + " on the " + a.loss + " loss (n = " +
                              std::to_string(in.problem.n()) + ", d = " + std::to_string(in.problem.d()) + ")");
  }
  if (!a.json.empty()) write_json(a.json, regress_json(a, in, s, hypotheses));
}

}  // namespace

void add_regress_command(CLI::App& app) {
  auto a = std::make_shared<RegressArgs>();
  CLI::App* cmd = app.add_subcommand(
      "regress", "Sparse softmax regression (H2O Appendix D): exact or approximate Newton, or "
                 "gradient descent, on a generated instance or on --A/--b/--w");
  cmd->add_option("--n", a->n, "Rows of a generated A")->capture_default_str();
  cmd->add_option("--d", a->d, "Columns of a generated A")->capture_default_str();
  cmd->add_option("--seed", a->seed, "Seed of the generator and of the row samples")
      ->capture_default_str();
  cmd->add_option("--violation", a->violation,
                  "Generated instance breaks one hypothesis: none | norm_a | negative_b | mass_b "
                  "| weak_w | far_start")
      ->capture_default_str();
  cmd->add_option("--solver", a->solver, "newton | approx-newton | gd")->capture_default_str();
  cmd->add_option("--loss", a->loss, "full | dls | rescaled | exp | reg | sparse")
      ->capture_default_str();
  cmd->add_option("--A", a->a_path, "Your A: an (n, d) float32/float64 .npy");
  cmd->add_option("--b", a->b_path, "Your b: an (n,) .npy (with --A)");
  cmd->add_option("--w", a->w_path, "Your w: an (n,) .npy (with --A)");
  cmd->add_option("--x0", a->x0_path, "Start point: a (d,) .npy (default: 0)");
  cmd->add_option("--R", a->R, "Radius R of the theorem (bounds |A| and |x*|)")->capture_default_str();
  cmd->add_option("--l", a->l, "Strong-convexity level l of Lemma D.47")->capture_default_str();
  cmd->add_option("--max-iterations", a->max_iterations, "Iteration limit")->capture_default_str();
  cmd->add_option("--gradient-tolerance", a->gradient_tolerance, "Stop when |grad L| <= this")
      ->capture_default_str();
  cmd->add_option("--epsilon1", a->epsilon1, "approx-newton: spectral accuracy eps1")
      ->capture_default_str();
  cmd->add_option("--delta", a->delta, "approx-newton: failure probability")->capture_default_str();
  cmd->add_option("--sample-constant", a->sample_constant,
                  "approx-newton: C in s = C sum(tau) ln(d T / delta) / eps1^2")
      ->capture_default_str();
  cmd->add_option("--leverage", a->leverage, "approx-newton: auto | exact | sketched")
      ->capture_default_str();
  cmd->add_flag("--check-spectral", a->check_spectral,
                "approx-newton: measure the spectral accuracy of every sample (O(n d^2))");
  cmd->add_flag("--no-line-search", a->no_line_search, "newton: always take the full step");
  cmd->add_option("--json", a->json, "Write the summary, hypotheses and trace as JSON");
  cmd->add_option("--x-out", a->x_out, "Write the final x as a (d,) float64 .npy");
  cmd->add_option("--plot", a->plot,
                  "Plot |grad L| (and |x - x*| when known) per iteration: FILE.svg or FILE.png names the "
                  "figure; FILE's stem .svg, .png, .dat (the trace) and .gp (the gnuplot script) are written");
  cmd->callback([a]() { run(*a); });
}

}  // namespace subevict::cli
