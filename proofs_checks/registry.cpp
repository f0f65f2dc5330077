#include "proofs_checks/registry.hpp"

#include "proofs_checks/attention_identities_checks.hpp"
#include "proofs_checks/dynamic_checks.hpp"
#include "proofs_checks/softmax_regression_checks.hpp"
#include "proofs_checks/static_greedy_checks.hpp"
#include "proofs_checks/workload_checks.hpp"

namespace subevict::proofs_checks {

std::vector<std::unique_ptr<Check>> all_checks() {
  std::vector<std::unique_ptr<Check>> checks;
  for (auto family : {attention_identity_checks, static_greedy_checks, softmax_regression_checks, dynamic_checks,
                      workload_checks}) {
    for (std::unique_ptr<Check>& check : family()) checks.push_back(std::move(check));
  }
  return checks;
}

std::unique_ptr<Check> find_check(const std::string& id) {
  for (std::unique_ptr<Check>& check : all_checks()) {
    if (check->info().id == id) return std::move(check);
  }
  return nullptr;
}

}  // namespace subevict::proofs_checks
