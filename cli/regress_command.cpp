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

void write_plot(const std::string& path, const sr::Summary& s, const std::string& title) {
  const std::filesystem::path target(path);
  const std::string ext = target.extension().string();
  if (ext != ".svg" && ext != ".png") {
    throw InputError(path, "--plot", "a file name ending in .svg or .png", ext);
  }
  std::filesystem::path data_path = target;
  data_path.replace_extension(".dat");
  std::ostringstream data;
  data << "# iteration loss gradient_norm distance_to_x_star seconds\n";
  data.precision(17);
  for (const sr::IterationRecord& r : s.trace) {
    data << r.iteration << ' ' << r.loss << ' ' << r.gradient_norm << ' '
         << (std::isnan(r.distance_to_x_star) ? std::string("NaN")
                                              : std::to_string(r.distance_to_x_star))
         << ' ' << r.seconds << '\n';
  }
  const std::string bytes = data.str();
  const std::span<const std::byte> chunk = std::as_bytes(std::span(bytes));
  write_file_atomically(data_path.string(), std::span(&chunk, 1));
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    std::cerr << "subevict: warning: gnuplot not found on PATH; wrote the data to "
              << data_path.string() << " but no plot\n";
    return;
  }
  // Render to a temporary name in the same directory, then rename: no partial image is left.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + ext;
  const std::string script_path = path + ".tmp." + std::to_string(::getpid()) + ".gp";
  std::ostringstream script;
  script << (ext == ".svg" ? "set terminal svg size 800,500 dynamic\n"
                           : "set terminal pngcairo size 800,500\n")
         << "set output '" << tmp << "'\n"
         << "set title '" << title << "' noenhanced\nset logscale y\nset format y '%.0e'\n"
         << "set xlabel 'iteration'\nset grid\nset key top right\n"
         << "plot '" << data_path.string() << "' using 1:3 with linespoints title '|grad L|'"
         << (s.trace.empty() || std::isnan(s.trace[0].distance_to_x_star)
                 ? std::string()
                 : ", '' using 1:4 with linespoints title '|x - x*|'")
         << "\n";
  {
    const std::string sc = script.str();
    const std::span<const std::byte> c = std::as_bytes(std::span(sc));
    write_file_atomically(script_path, std::span(&c, 1));
  }
  const int rc = std::system(("gnuplot '" + script_path + "' 2>/dev/null").c_str());
  std::filesystem::remove(script_path);
  std::error_code ec;
  if (rc != 0 || !std::filesystem::exists(tmp)) {
    std::filesystem::remove(tmp, ec);
    throw InputError(path, "--plot", "gnuplot to render the plot", "exit status " + std::to_string(rc));
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw InputError(path, "--plot", "a writable path", ec.message());
  }
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

void run(const RegressArgs& a) {
  const sr::LossKind kind = sr::parse_loss_kind(a.loss);
  if (a.solver != "newton" && a.solver != "approx-newton" && a.solver != "gd") {
    throw InputError("--solver", "name", "one of newton, approx-newton, gd", a.solver);
  }
  if (a.max_iterations < 1) throw InputError("--max-iterations", "value", "at least 1");
  sr::Problem problem;
  sr::Vector x0;
  sr::TheoremParameters parameters{a.R, a.l};
  std::string source;
  if (!a.a_path.empty()) {
    problem = read_problem(a);
    source = a.a_path;
  } else {
    if (a.d < 1 || a.n < a.d) throw InputError("--n/--d", "sizes", "n >= d >= 1");
    sr::InstanceSpec spec;
    spec.n = a.n;
    spec.d = a.d;
    spec.seed = a.seed;
    spec.parameters = parameters;
    spec.violation = sr::parse_violation(a.violation);
    sr::Instance inst = sr::make_instance(spec);
    problem = std::move(inst.problem);
    x0 = inst.x0;
    source = "generated(n=" + std::to_string(a.n) + ", d=" + std::to_string(a.d) +
             ", seed=" + std::to_string(a.seed) + ", violation=" + a.violation + ")";
  }
  if (!a.x0_path.empty()) {
    x0 = read_vector(a.x0_path, std::size_t(problem.d()), std::to_string(problem.d()) +
                                                              " entries (columns of A)");
  } else if (x0.size() == 0) {
    x0 = sr::Vector::Zero(problem.d());
  }
  const std::vector<sr::HypothesisCheck> hypotheses = sr::check_hypotheses(problem, x0, parameters);
  for (const sr::HypothesisCheck& h : hypotheses) {
    if (!h.holds) std::cerr << "subevict: warning: " << sr::describe(h) << "\n";
  }
  sr::StoppingRule stop;
  stop.max_iterations = a.max_iterations;
  stop.gradient_tolerance = a.gradient_tolerance;
  sr::Summary s;
  if (a.solver == "newton") {
    sr::NewtonOptions o;
    o.stop = stop;
    o.line_search = !a.no_line_search;
    s = sr::newton(problem, kind, x0, o);
  } else if (a.solver == "approx-newton") {
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
    s = sr::approximate_newton(problem, kind, x0, o);
  } else {
    sr::GradientDescentOptions o;
    o.stop = stop;
    s = sr::gradient_descent(problem, kind, x0, o);
  }
  std::cout << "regress: " << source << ", n = " << problem.n() << ", d = " << problem.d()
            << ", loss " << a.loss << ", solver " << a.solver << "\n";
  print_table(s);
  std::cout << "status: " << sr::to_string(s.status) << " (" << s.message << "), "
            << s.iterations() << " iterations, " << s.seconds << " s\n";
  if (!a.x_out.empty()) {
    write_npy(a.x_out, Tensor<double>{{std::size_t(s.x.size())},
                                      std::vector<double>(s.x.data(), s.x.data() + s.x.size())});
  }
  if (!a.plot.empty()) {
    write_plot(a.plot, s, a.solver + " on " + a.loss + " (n=" + std::to_string(problem.n()) +
                              ", d=" + std::to_string(problem.d()) + ")");
  }
  if (!a.json.empty()) {
    nlohmann::json doc = {{"source", source},
                          {"n", problem.n()},
                          {"d", problem.d()},
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
    write_json(a.json, doc);
  }
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
                  "Plot |grad L| per iteration with gnuplot to FILE.svg or FILE.png (the data go "
                  "to FILE.dat)");
  cmd->callback([a]() { run(*a); });
}

}  // namespace subevict::cli
