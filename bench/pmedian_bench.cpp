// Exact p-median optima of OR-Library instances: branch and bound (with the Lagrangian bound of
// facility location) against CBC on the standard p-median integer program, plus lazy greedy's
// ratio. Not a Google Benchmark: each solve runs once per repetition and the minimum time is kept,
// both wall-clock and process CPU time (CPU time is less sensitive to other load on the machine;
// both solvers are single-threaded here).
//
// Usage: pmedian_bench DATA_DIR [--reps R] [--cbc-time-limit S] [--no-cbc] INSTANCE...
//   e.g. pmedian_bench tests/data/orlib-pmed pmed1 pmed2 pmed6 pmed7 pmed11 pmed16
// Prints one Markdown table row per instance.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "greedy/exact/branch_and_bound.hpp"
#include "greedy/exact/facility_location_bound.hpp"
#include "greedy/exact/integer_program.hpp"
#include "greedy/optimizers/lazy_greedy.hpp"
#include "greedy/functions/pmedian.hpp"

namespace {

using namespace subevict::greedy;

int run(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s DATA_DIR [--reps R] [--cbc-time-limit S] [--no-cbc] INSTANCE...\n",
                 argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  int reps = 1;
  double cbc_limit = 0.0;
  bool cbc = true;
  std::vector<std::string> names;
  for (int a = 2; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--reps" && a + 1 < argc) {
      reps = std::atoi(argv[++a]);
    } else if (arg == "--cbc-time-limit" && a + 1 < argc) {
      cbc_limit = std::atof(argv[++a]);
    } else if (arg == "--no-cbc") {
      cbc = false;
    } else {
      names.push_back(arg);
    }
  }
  const auto optima = read_pmedian_optima(dir + "/pmedopt.txt");
  std::printf("| instance | n | p | published opt | BnB p-median | BnB s (cpu) | BnB nodes | "
              "CBC p-median | CBC s (cpu) | CBC nodes | greedy p-median | greedy f/OPT f | "
              "greedy opt/pmed |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const std::string& name : names) {
    const PMedianInstance instance = read_pmedian(dir + "/" + name + ".txt");
    const FacilityLocation f = to_facility_location(instance);
    const double nD = double(instance.n) * max_distance(instance);
    const Selection greedy = lazy_greedy(f, {instance.p});
    double bnb_seconds = 1e300, cbc_seconds = 1e300, bnb_cpu = 1e300, cbc_cpu = 1e300;
    Selection bnb, ip;
    for (int rep = 0; rep < reps; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      const std::clock_t c0 = std::clock();
      FacilityLocationBound lagrangian(f);
      BranchAndBoundOptions options;
      options.initial_set = lazy_greedy(f, {instance.p}).set;  // greedy is part of the timed solve
      options.node_bound = &lagrangian;
      options.pairwise_bound = false;
      bnb = branch_and_bound(f, instance.p, options);
      bnb_cpu = std::min(bnb_cpu, double(std::clock() - c0) / CLOCKS_PER_SEC);
      bnb_seconds = std::min(bnb_seconds,
                             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (cbc) {
        const std::clock_t c1 = std::clock();
        ip = facility_location_ip(f, instance.p, {cbc_limit, false});
        cbc_cpu = std::min(cbc_cpu, double(std::clock() - c1) / CLOCKS_PER_SEC);
        cbc_seconds = std::min(cbc_seconds, ip.seconds);
      }
    }
    const auto opt = optima.find(name);
    const double published = opt == optima.end() ? -1.0 : opt->second;
    std::printf("| %s | %zu | %zu | %.0f | %.0f%s | %.3f (%.3f) | %llu | ", name.c_str(), instance.n,
                instance.p, published, nD - bnb.value, bnb.optimal ? "" : " (not proven)",
                bnb_seconds, bnb_cpu, static_cast<unsigned long long>(bnb.nodes));
    if (cbc) {
      std::printf("%.0f%s | %.3f (%.3f) | %llu | ", nD - ip.value, ip.optimal ? "" : " (not proven)",
                  cbc_seconds, cbc_cpu, static_cast<unsigned long long>(ip.nodes));
    } else {
      std::printf("- | - | - | ");
    }
    std::printf("%.0f | %.6f | %.4f |\n", nD - greedy.value, greedy.value / bnb.value,
                published / (nD - greedy.value));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pmedian_bench: error: %s\n", e.what());
    return 2;
  }
}
