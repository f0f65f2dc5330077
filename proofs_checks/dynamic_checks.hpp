#pragma once
/// \file
/// The dynamic-eviction family of the registry: H2O's Definition 4.1 submodularity, the universal
/// conditions D.23–D.28, Lemmas D.19, D.29, D.30, Theorem D.32, Claim D.34, greedy eviction
/// against the exact offline optimum, and the errata of theory.md §9 that concern them.

#include <memory>
#include <vector>

#include "proofs_checks/check.hpp"

namespace subevict::proofs_checks {

/// The dynamic-eviction checks in report order (ids "h2o.*"); stateless, ids unique.
std::vector<std::unique_ptr<Check>> dynamic_checks();

}  // namespace subevict::proofs_checks
