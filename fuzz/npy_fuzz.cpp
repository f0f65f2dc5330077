// libFuzzer target: parse_npy on arbitrary bytes, as float and as double, with and without the
// non-finite opt-in and with a max_bytes below the input size. Only InputError is an acceptable
// failure; a parsed tensor must satisfy data.size() == element_count(shape).

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/input_error.hpp"
#include "core/npy.hpp"

namespace {

template <class T>
void parse(std::span<const std::byte> bytes, const subevict::ReadOptions& options) {
  try {
    const subevict::Tensor<T> tensor = subevict::parse_npy<T>(bytes, "fuzz.npy", options);
    if (tensor.data.size() != subevict::element_count(tensor)) __builtin_trap();
  } catch (const subevict::InputError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  for (const subevict::ReadOptions& options :
       {subevict::ReadOptions{},
        subevict::ReadOptions{.allow_nonfinite = true, .max_bytes = size / 2}}) {
    parse<float>(bytes, options);
    parse<double>(bytes, options);
  }
  return 0;
}
