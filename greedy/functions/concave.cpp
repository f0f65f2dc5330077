#include "greedy/functions/concave.hpp"

#include <cmath>

#include "core/named_choice.hpp"

namespace subevict::greedy {

double concave_value(Concave h, double z) {
  switch (h) {
    case Concave::kIdentity:
      return z;
    case Concave::kSqrt:
      return std::sqrt(z + 1.0);
    case Concave::kLog:
      return std::log1p(z);
  }
  return z;
}

std::string concave_name(Concave h) {
  switch (h) {
    case Concave::kIdentity:
      return "identity";
    case Concave::kSqrt:
      return "sqrt";
    case Concave::kLog:
      return "log";
  }
  return "identity";
}

Concave parse_concave(std::string_view name) {
  return parse_named_choice(name, {Concave::kIdentity, Concave::kSqrt, Concave::kLog}, concave_name,
                            "concave");
}

}  // namespace subevict::greedy
