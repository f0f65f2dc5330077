// PythonPolicy: a Python object as an EvictionPolicy (python_policy.hpp).
#include "python_policy.hpp"

#include <algorithm>
#include <cmath>

#include "core/input_error.hpp"

namespace subevict::python {

using namespace nb::literals;

namespace {

/// The attribute `name` of `policy` when present (None otherwise); InputError when present but not
/// callable.
nb::object method(const nb::handle& policy, const char* name, const std::string& label) {
  if (!nb::hasattr(policy, name)) return nb::none();
  nb::object m = policy.attr(name);
  if (m.is_none()) return m;
  if (!PyCallable_Check(m.ptr())) {
    throw InputError("simulate", "policy " + label, std::string("a callable ") + name + " method",
                     std::string("a non-callable attribute ") + name);
  }
  return m;
}

std::string python_type_name(const nb::handle& value) { return nb::str(nb::handle(value.type()).attr("__name__")).c_str(); }

}  // namespace

std::string python_policy_label(const nb::handle& policy) {
  if (nb::hasattr(policy, "name")) {
    nb::object name = policy.attr("name");
    if (nb::isinstance<nb::str>(name)) return std::string(nb::str(name).c_str());
  }
  return std::string(nb::str(nb::handle(policy.type()).attr("__name__")).c_str());
}

void check_python_policy(const nb::handle& policy, const std::string& label) {
  (void)method(policy, "reset", label);
  (void)method(policy, "observe", label);
  const bool evict = !method(policy, "evict", label).is_none();
  const bool score = !method(policy, "score", label).is_none();
  if (evict == score) {
    throw InputError("simulate", "policy " + label,
                     "an object with exactly one of evict(step, cache) and score(step, cache, q, K, V) "
                     "(a built-in policy is given by its name as a string)",
                     evict ? "both" : "a " + python_type_name(policy) + " with neither");
  }
}

PythonPolicy::PythonPolicy(nb::object policy, std::string label)
    : policy_(std::move(policy)), label_(std::move(label)) {
  reset_ = method(policy_, "reset", label_);
  observe_ = method(policy_, "observe", label_);
  evict_ = method(policy_, "evict", label_);
  score_ = method(policy_, "score", label_);
}

PythonPolicy::~PythonPolicy() = default;

void PythonPolicy::contract_error(int step, const std::string& what) const {
  throw PolicyContractError("eviction policy " + label_ + " at step " + std::to_string(step) + ": " + what);
}

void PythonPolicy::reset(const greedy::PolicyContext& context) {
  context_ = context;
  nb::gil_scoped_acquire gil;
  if (!reset_.is_none()) reset_(context.tokens, context.budget);
}

std::vector<greedy::Token> PythonPolicy::prefill() {
  throw InputError("simulate", "policy " + label_, "prefill 0 (a Python policy has no prefill rule)");
}

greedy::Token PythonPolicy::step(const greedy::StepView& view) {
  nb::gil_scoped_acquire gil;
  if (!observe_.is_none()) {
    std::vector<double> row(std::size_t(context_.tokens), 0.0);
    for (std::size_t e = 0; e < view.tokens.size(); ++e) row[std::size_t(view.tokens[e])] = view.attention[e];
    observe_(view.step, owned_array<double>(std::move(row)));
  }
  if (!view.full) return greedy::kNoEviction;
  std::vector<greedy::Token> sorted(view.tokens.begin(), view.tokens.end());
  std::sort(sorted.begin(), sorted.end());
  if (!score_.is_none()) return evict_by_score(view, sorted);

  std::vector<std::int64_t> cache(sorted.begin(), sorted.end());
  nb::object answer = evict_(view.step, owned_array<std::int64_t>(std::move(cache)));
  const auto not_a_token = [&]() {
    std::string text = nb::repr(answer).c_str();
    if (text.size() > 80) text = text.substr(0, 77) + "...";
    contract_error(view.step, "evict returned " + python_type_name(answer) + " " + text +
                                  ", expected a token (an int) of the cache");
  };
  if (!PyIndex_Check(answer.ptr()) || PyBool_Check(answer.ptr())) not_a_token();
  const Py_ssize_t token = PyNumber_AsSsize_t(answer.ptr(), nullptr);  // clamps instead of overflowing
  if (token == -1 && PyErr_Occurred()) {  // an __index__ that fails (an array of several tokens)
    PyErr_Clear();
    not_a_token();
  }
  if (!std::binary_search(sorted.begin(), sorted.end(), token)) {
    contract_error(view.step, "evict returned token " + std::to_string(token) +
                                  ", which is not in the cache G_i = S_{i-1} + {i} (" + std::to_string(sorted.size()) +
                                  " members, the ones passed as `cache`)");
  }
  return greedy::Token(token);
}

greedy::Token PythonPolicy::evict_by_score(const greedy::StepView& view, const std::vector<greedy::Token>& cache) {
  const greedy::HeadGroup& input = *context_.input;
  const std::size_t m = cache.size(), d = std::size_t(input.head_dim()), g = std::size_t(input.group_size());
  std::vector<float> q(g * d), keys(m * d), values(m * d);
  for (std::size_t h = 0; h < g; ++h) {
    std::copy_n(input.q[h].row(view.step).data(), d, q.data() + h * d);
  }
  for (std::size_t e = 0; e < m; ++e) {
    std::copy_n(input.k.row(cache[e]).data(), d, keys.data() + e * d);
    std::copy_n(input.v.row(cache[e]).data(), d, values.data() + e * d);
  }
  std::vector<std::int64_t> tokens(cache.begin(), cache.end());
  nb::object answer = score_(view.step, owned_array<std::int64_t>(std::move(tokens)),
                             owned_array<float>(std::move(q), {g, d}), owned_array<float>(std::move(keys), {m, d}),
                             owned_array<float>(std::move(values), {m, d}));
  // Any array-like of m numbers: read as float64 through NumPy (the policy may return a list).
  nb::object numpy = nb::module_::import_("numpy");
  nb::object scores_obj;
  try {
    scores_obj = numpy.attr("ascontiguousarray")(answer, "dtype"_a = numpy.attr("float64"));
  } catch (const nb::python_error& e) {
    contract_error(view.step, "score returned " + python_type_name(answer) + ", not convertible to float64 scores (" +
                                  std::string(e.what()) + ")");
  }
  const auto scores = nb::cast<nb::ndarray<const double, nb::c_contig, nb::device::cpu>>(scores_obj);
  if (scores.ndim() != 1 || scores.shape(0) != m) {
    std::string shape = "(";
    for (std::size_t i = 0; i < scores.ndim(); ++i) shape += (i ? ", " : "") + std::to_string(scores.shape(i));
    contract_error(view.step, "score returned shape " + shape + (scores.ndim() == 1 ? ",)" : ")") +
                                  ", expected (" + std::to_string(m) + ",): one score per member of the cache");
  }
  const double* s = scores.data();
  std::size_t best = 0;
  for (std::size_t e = 0; e < m; ++e) {
    if (!std::isfinite(s[e])) {
      contract_error(view.step, "score returned " + std::string(std::isnan(s[e]) ? "NaN" : "an infinite score") +
                                    " for token " + std::to_string(cache[e]) + ", expected finite scores");
    }
    if (s[e] < s[best]) best = e;  // strict: ties keep the lowest token (cache is ascending)
  }
  return cache[best];
}

}  // namespace subevict::python
