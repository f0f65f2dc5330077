#include "core/index_set.hpp"

#include <limits>

#include "core/input_error.hpp"

namespace subevict {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

/// A non-negative decimal integer made of digits only; values beyond int are clamped to INT_MAX
/// (they are out of range for any bound). False for anything else.
bool parse_index(std::string_view s, long long& out) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  out = 0;
  for (char c : s) {
    out = out * 10 + (c - '0');
    if (out > std::numeric_limits<int>::max()) out = std::numeric_limits<int>::max();
  }
  return true;
}

}  // namespace

std::vector<int> parse_index_set(std::string_view text, int bound, const IndexSetNames& names) {
  const std::string range = bound > 0 ? names.noun + " 0-" + std::to_string(bound - 1) + " (there are " +
                                            std::to_string(bound) + ")"
                                      : "no " + names.noun + " (there are none)";
  const std::string grammar = "a comma list of " + names.noun + " N and ranges A-B, or all (" + range + ")";
  const std::string_view whole = trim(text);
  if (whole.empty()) throw InputError(names.source, names.flag, grammar, "an empty value");
  if (whole == "all") {
    std::vector<int> every(std::size_t(bound > 0 ? bound : 0));
    for (int i = 0; i < bound; ++i) every[std::size_t(i)] = i;
    return every;
  }
  std::vector<char> seen(std::size_t(bound > 0 ? bound : 0), 0);
  std::size_t start = 0;
  while (start <= whole.size()) {
    const std::size_t comma = whole.find(',', start);
    const std::size_t end = comma == std::string_view::npos ? whole.size() : comma;
    const std::string_view item = trim(whole.substr(start, end - start));
    const std::string typed(item);
    if (item.empty()) throw InputError(names.source, names.flag, grammar, "an empty item in \"" + std::string(whole) + "\"");
    long long first = 0, last = 0;
    const std::size_t dash = item.find('-');
    bool ok = dash == std::string_view::npos ? parse_index(item, first) && ((last = first), true)
                                             : parse_index(trim(item.substr(0, dash)), first) &&
                                                   parse_index(trim(item.substr(dash + 1)), last);
    if (!ok) throw InputError(names.source, names.flag, grammar, typed);
    if (first > last) {
      throw InputError(names.source, names.flag, "a range A-B with A <= B", typed + " (reversed)");
    }
    if (last >= bound) {
      const std::string culprit = first >= bound ? std::to_string(first) : std::to_string(last);
      throw InputError(names.source, names.flag, range,
                       culprit + (culprit == typed ? " (out of range)" : " (in " + typed + ", out of range)"));
    }
    for (long long i = first; i <= last; ++i) {
      if (seen[std::size_t(i)]) {
        throw InputError(names.source, names.flag, "each of the " + names.noun + " once",
                         std::to_string(i) + (std::to_string(i) == typed ? " (" : " (in " + typed + ", ") +
                             "listed twice in \"" + std::string(whole) + "\")");
      }
      seen[std::size_t(i)] = 1;
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  std::vector<int> out;
  for (int i = 0; i < bound; ++i)
    if (seen[std::size_t(i)]) out.push_back(i);
  return out;
}

std::string format_index_set(const std::vector<int>& indices) {
  std::string out;
  for (std::size_t i = 0; i < indices.size();) {
    std::size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(indices[i]);
    if (j > i) out += '-' + std::to_string(indices[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace subevict
