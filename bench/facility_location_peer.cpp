// Our side of the lazy-greedy peer comparison (bench/peers/lazy_greedy_peers.py): reads a dense
// similarity matrix (.npy, rows = clients, columns = candidates), runs lazy greedy for k picks
// `repeats` times and prints one JSON object: the selection (in pick order), its value, the
// fastest run's seconds (selection only, the file read excluded, as for the peers), the load
// seconds and the oracle calls. Usage: facility_location_peer S.npy K [REPEATS]
#include <chrono>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>

#include "greedy/functions/facility_location.hpp"
#include "greedy/optimizers/lazy_greedy.hpp"

int main(int argc, char** argv) {
  using namespace subevict::greedy;
  if (argc < 3) {
    std::cerr << "usage: facility_location_peer S.npy K [REPEATS]\n";
    return 2;
  }
  try {
    const auto t0 = std::chrono::steady_clock::now();
    const FacilityLocation f = FacilityLocation::from_npy(argv[1]);
    const double load =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto k = std::size_t(std::stoul(argv[2]));
    const int repeats = argc > 3 ? std::atoi(argv[3]) : 1;
    Selection best;
    double seconds = std::numeric_limits<double>::infinity();
    for (int r = 0; r < repeats; ++r) {
      Selection s = lazy_greedy(f, {k});
      if (s.seconds < seconds) {
        seconds = s.seconds;
        best = std::move(s);
      }
    }
    nlohmann::json out{{"method", "subevict lazy_greedy"},
                       {"n", f.ground_size()},
                       {"k", k},
                       {"set", best.set},
                       {"value", best.value},
                       {"seconds", seconds},
                       {"load_seconds", load},
                       {"oracle_calls", best.oracle_calls},
                       {"upper_bound", best.upper_bound}};
    std::cout << out.dump() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "facility_location_peer: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
