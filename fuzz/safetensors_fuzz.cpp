// libFuzzer target: parse_safetensors on arbitrary bytes, with and without the non-finite opt-in
// and with a max_bytes below the input size. Only InputError is an acceptable failure; every
// parsed tensor must satisfy data.size() == element_count(shape).

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/input_error.hpp"
#include "core/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  for (const subevict::ReadOptions& options :
       {subevict::ReadOptions{},
        subevict::ReadOptions{.allow_nonfinite = true, .max_bytes = size / 2}}) {
    try {
      const subevict::SafetensorsFile file =
          subevict::parse_safetensors(bytes, "fuzz.safetensors", options);
      for (const auto& [name, tensor] : file.tensors) {
        if (tensor.data.size() != subevict::element_count(tensor)) __builtin_trap();
      }
    } catch (const subevict::InputError&) {
    }
  }
  return 0;
}
