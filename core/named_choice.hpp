#pragma once
/// \file
/// Parsing a name into one of a fixed set of enumerators, with the one error message every
/// command-line choice gives: InputError(source, "name", "a, b or c", name).

#include <initializer_list>
#include <string>
#include <string_view>

#include "core/input_error.hpp"

namespace subevict {

/// The value v among `values` whose name_of(v) equals `name`; otherwise throws InputError naming
/// `source` and listing the accepted names as "a, b or c" in the order of `values`.
/// Precondition: `values` is not empty. O(|values|) calls of name_of.
template <class T, class NameOf>
T parse_named_choice(std::string_view name, std::initializer_list<T> values, NameOf name_of,
                     const std::string& source) {
  std::string accepted;
  std::size_t index = 0;
  for (T value : values) {
    const std::string value_name(name_of(value));
    if (name == value_name) return value;
    accepted += (index == 0 ? "" : index + 1 == values.size() ? " or " : ", ") + value_name;
    ++index;
  }
  throw InputError(source, "name", accepted, std::string(name));
}

}  // namespace subevict
