// The exact p-median search (greedy/exact/pmedian_branch_and_bound.hpp) on the OR-Library
// instances, with a per-instance time limit: per instance n, p, the published optimum, the value
// found, the certified lower bound, the status (optimal / bound reached), wall and CPU seconds;
// then the totals. Optionally, side by side: the generic branch and bound with the
// facility-location Lagrangian plug-in (greedy/exact/branch_and_bound.hpp, --old) and CBC (--cbc),
// each with its own time limit, on the instances named. Progress (done/total, rate, ETA) goes to
// stderr.
//
// Usage: pmedian_exact_bench DATA_DIR [--time-limit S] [--old NAMES --old-time-limit S]
//                            [--cbc NAMES --cbc-time-limit S] [INSTANCE...]
//   NAMES: comma-separated instance names; INSTANCE... defaults to pmed1..pmed40.
//   e.g. pmedian_exact_bench tests/data/orlib-pmed --time-limit 60 --cbc pmed1,pmed2
//   --cbc-time-limit 120
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "greedy/exact/branch_and_bound.hpp"
#include "greedy/exact/facility_location_bound.hpp"
#include "greedy/exact/integer_program.hpp"
#include "greedy/exact/pmedian_branch_and_bound.hpp"
#include "greedy/functions/pmedian.hpp"
#include "greedy/optimizers/lazy_greedy.hpp"

namespace {

using namespace subevict::greedy;

std::set<std::string> split(const std::string& names) {
  std::set<std::string> out;
  std::stringstream in(names);
  for (std::string name; std::getline(in, name, ',');) {
    if (!name.empty()) out.insert(name);
  }
  return out;
}

double cpu_seconds(std::clock_t since) { return double(std::clock() - since) / CLOCKS_PER_SEC; }

int run(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s DATA_DIR [--time-limit S] [--old NAMES --old-time-limit S] "
                 "[--cbc NAMES --cbc-time-limit S] [INSTANCE...]\n",
                 argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  double limit = 60.0;
  double old_limit = 60.0;
  double cbc_limit = 120.0;
  std::set<std::string> old_names;
  std::set<std::string> cbc_names;
  std::vector<std::string> names;
  for (int a = 2; a < argc; ++a) {
    const std::string arg = argv[a];
    const bool has_value = a + 1 < argc;
    if (arg == "--time-limit" && has_value) {
      limit = std::atof(argv[++a]);
    } else if (arg == "--old-time-limit" && has_value) {
      old_limit = std::atof(argv[++a]);
    } else if (arg == "--cbc-time-limit" && has_value) {
      cbc_limit = std::atof(argv[++a]);
    } else if (arg == "--old" && has_value) {
      old_names = split(argv[++a]);
    } else if (arg == "--cbc" && has_value) {
      cbc_names = split(argv[++a]);
    } else {
      names.push_back(arg);
    }
  }
  if (names.empty()) {
    for (int i = 1; i <= 40; ++i) names.push_back("pmed" + std::to_string(i));
  }
  const auto optima = read_pmedian_optima(dir + "/pmedopt.txt");
  std::printf("per-instance time limit %.0f s (old BnB %.0f s, CBC %.0f s)\n\n", limit, old_limit,
              cbc_limit);
  std::printf(
      "| instance | n | p | published opt | value | certified lower bound | status | "
      "wall s | cpu s | nodes | root L | root fixed out/in | start value | old BnB | CBC |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  std::size_t done = 0, certified = 0, matches = 0;
  for (const std::string& name : names) {
    const PMedianInstance instance = read_pmedian(dir + "/" + name + ".txt");
    PMedianSearchOptions options;
    options.time_limit_seconds = limit;
    const std::clock_t c0 = std::clock();
    const PMedianSearchResult r = pmedian_branch_and_bound(instance, options);
    const double cpu = cpu_seconds(c0);
    const auto opt = optima.find(name);
    const double published = opt == optima.end() ? -1.0 : opt->second;
    certified += r.optimal ? 1 : 0;
    matches += r.value == published ? 1 : 0;
    std::printf(
        "| %s | %zu | %zu | %.0f | %.0f | %.0f | %s | %.2f | %.2f | %llu | %.2f | %zu/%zu | %.0f "
        "| ",
        name.c_str(), instance.n, instance.p, published, r.value, r.lower_bound,
        r.optimal ? "optimal" : "bound reached", r.seconds, cpu,
        static_cast<unsigned long long>(r.nodes), r.root_bound, r.root_fixed_out, r.root_fixed_in,
        r.initial_value);
    std::fflush(stdout);
    const FacilityLocation f = to_facility_location(instance);
    const double nD = double(instance.n) * max_distance(instance);
    if (old_names.count(name) != 0) {
      const std::clock_t c1 = std::clock();
      FacilityLocationBound lagrangian(f);
      BranchAndBoundOptions old;
      old.initial_set = lazy_greedy(f, {instance.p}).set;
      old.node_bound = &lagrangian;
      old.pairwise_bound = false;
      old.time_limit_seconds = old_limit;
      const Selection s = branch_and_bound(f, instance.p, old);
      std::printf("%.0f %s %.2f s (cpu %.2f) | ", nD - s.value,
                  s.optimal ? "optimal" : "not proven", s.seconds, cpu_seconds(c1));
    } else {
      std::printf("- | ");
    }
    if (cbc_names.count(name) != 0) {
      const std::clock_t c2 = std::clock();
      const Selection s = facility_location_ip(f, instance.p, {cbc_limit, false});
      std::printf("%.0f %s %.2f s (cpu %.2f) |\n", nD - s.value,
                  s.optimal ? "optimal" : "not proven", s.seconds, cpu_seconds(c2));
    } else {
      std::printf("- |\n");
    }
    std::fflush(stdout);
    ++done;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double rate = double(done) / elapsed;
    std::fprintf(stderr, "[%zu/%zu] %s %s in %.1f s; %.2f instances/min, ETA %.0f s\n", done,
                 names.size(), name.c_str(), r.optimal ? "optimal" : "bound reached", r.seconds,
                 60.0 * rate, double(names.size() - done) / rate);
  }
  std::printf(
      "\ntotal: %zu instances, %zu certified optimal, %zu equal to the published optimum, "
      "%.1f s wall, %.1f s cpu\n",
      done, certified, matches,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
      cpu_seconds(cpu_start));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pmedian_exact_bench: error: %s\n", e.what());
    return 2;
  }
}
