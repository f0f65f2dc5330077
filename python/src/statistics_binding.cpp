// subevict._subevict.clopper_pearson: the exact binomial interval of core/statistics.hpp, the one
// the reports' accuracy intervals come from.
#include <nanobind/stl/pair.h>

#include <cmath>
#include <string>
#include <utility>

#include "bindings.hpp"
#include "core/input_error.hpp"
#include "core/statistics.hpp"

namespace subevict::python {

void bind_statistics(nb::module_& m) {
  using namespace nb::literals;
  m.def(
      "clopper_pearson",
      [](long long successes, long long trials, double confidence) {
        if (trials < 1) throw InputError("clopper_pearson", "trials", "an integer >= 1", std::to_string(trials));
        if (successes < 0 || successes > trials) {
          throw InputError("clopper_pearson", "successes", "an integer in [0, " + std::to_string(trials) + "]",
                           std::to_string(successes));
        }
        if (!(std::isfinite(confidence) && confidence > 0.0 && confidence < 1.0)) {
          throw InputError("clopper_pearson", "confidence", "a level in (0, 1)", std::to_string(confidence));
        }
        const Interval interval = clopper_pearson(successes, trials, confidence);
        return std::make_pair(interval.lower, interval.upper);
      },
      "successes"_a, "trials"_a, "confidence"_a = 0.95,
      "(lower, upper): the Clopper-Pearson (exact) interval of a binomial proportion, successes out of trials, at "
      "`confidence` (core/statistics.hpp, Beta quantiles from Boost.Math).");
}

}  // namespace subevict::python
