// Exceptions: the library's InputError arrives as subevict.InputError (a ValueError subclass)
// with the library's message; a policy that breaks the eviction contract as
// subevict.PolicyContractError (a RuntimeError subclass) naming the policy and the step.
#include "bindings.hpp"
#include "core/input_error.hpp"
#include "python_policy.hpp"

namespace subevict::python {

void bind_errors(nb::module_& m) {
  nb::exception<InputError>(m, "InputError", PyExc_ValueError);
  nb::exception<PolicyContractError>(m, "PolicyContractError", PyExc_RuntimeError);
  m.attr("InputError").attr("__doc__") =
      "Bad input (a value, an array, a file): the message reads 'SOURCE: FIELD: expected ..., got ...'.";
  m.attr("PolicyContractError").attr("__doc__") =
      "An eviction policy broke the simulator's contract (it returned a token not in the cache, "
      "evicted while the cache was not full, ...); the message names the policy and the step.";
}

}  // namespace subevict::python
