#pragma once
/// \file
/// Claims about a workload rather than about an algorithm: the sparsity and power-law structure
/// of H2O §3 and the negative correlation between key L2 norm and accumulated attention reported
/// by the L2-norm eviction paper.

#include <memory>
#include <vector>

#include "proofs_checks/check.hpp"

namespace subevict::proofs_checks {

/// The workload-structure checks in report order; stateless, ids unique.
std::vector<std::unique_ptr<Check>> workload_checks();

}  // namespace subevict::proofs_checks
