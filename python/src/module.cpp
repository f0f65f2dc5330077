// subevict._subevict: the compiled part of the Python package (python/subevict/__init__.py is the
// public face). Each area is bound in its own file (bindings.hpp).
#include "bindings.hpp"

NB_MODULE(_subevict, m) {
  m.doc() = "subevict's C++ library: workloads, eviction simulation, offline optima, set functions, verify.";
  using namespace subevict::python;
  bind_errors(m);
  bind_workload(m);
  bind_simulate(m);
  bind_streaming_cache(m);
  bind_statistics(m);
  bind_optimum(m);
  bind_set_functions(m);
  bind_verify(m);
  bind_share(m);
  bind_feature_trace(m);
}
