#pragma once
/// \file
/// A Check made of its static description and a function of the context, the form every family
/// file uses to register the free functions it tests.

#include <functional>
#include <memory>
#include <utility>

#include "proofs_checks/check.hpp"

namespace subevict::proofs_checks {

/// A stateless Check: `info` as given, `run` calls `body` (which must not keep state between
/// calls).
class FunctionCheck final : public Check {
 public:
  using Body = std::function<CheckResult(const CheckContext&)>;
  FunctionCheck(CheckInfo info, Body body) : info_(std::move(info)), body_(std::move(body)) {}
  CheckInfo info() const override { return info_; }
  CheckResult run(const CheckContext& context) const override { return body_(context); }

 private:
  CheckInfo info_;
  Body body_;
};

/// std::make_unique<FunctionCheck> as a std::unique_ptr<Check>.
inline std::unique_ptr<Check> make_check(CheckInfo info, FunctionCheck::Body body) {
  return std::make_unique<FunctionCheck>(std::move(info), std::move(body));
}

/// max(1, round(base · effort)): an instance count scaled by CheckContext::effort.
inline int scaled_count(int base, double effort) {
  const double n = double(base) * effort + 0.5;
  return n < 1 ? 1 : int(n);
}

}  // namespace subevict::proofs_checks
