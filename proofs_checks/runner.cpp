#include "proofs_checks/runner.hpp"

#include <chrono>
#include <exception>

namespace subevict::proofs_checks {

std::vector<CheckRun> run_checks(const std::vector<const Check*>& checks, const CheckContext& context,
                                 const std::function<void(const CheckRun&)>& on_done) {
  std::vector<CheckRun> runs;
  for (const Check* check : checks) {
    CheckRun run;
    run.info = check->info();
    const auto start = std::chrono::steady_clock::now();
    try {
      run.result = check->run(context);
      require_consistent(run.info, run.result);
    } catch (const std::exception& e) {
      run.result = CheckResult{};
      run.error = e.what();
      run.result.key_number = "error";
      run.result.notes = "the check stopped with an error: " + run.error;
    }
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (on_done) on_done(run);
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace subevict::proofs_checks
