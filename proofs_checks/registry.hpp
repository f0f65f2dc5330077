#pragma once
/// \file
/// The registry: every check `subevict verify` runs, in report order. Each family of lemmas
/// lives in its own file and contributes its checks through one function declared in its header.

#include <memory>
#include <string>
#include <vector>

#include "proofs_checks/check.hpp"

namespace subevict::proofs_checks {

/// Every registered check, grouped by family in this order: attention identities, static
/// greedy, softmax regression, dynamic eviction, workload structure (each family's errata with
/// it); ids unique.
std::vector<std::unique_ptr<Check>> all_checks();

/// The check with this id, or nullptr.
std::unique_ptr<Check> find_check(const std::string& id);

}  // namespace subevict::proofs_checks
