#include "core/presets.hpp"

#include "core/input_error.hpp"

namespace subevict {

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = {
      {"llama2-7b", 32, 32, 32, 128, 10000.0, 1024, "Llama 2 7B: 32 layers, MHA 32 x 128"},
      {"llama3-8b", 32, 32, 8, 128, 500000.0, 1024, "Llama 3 8B: 32 layers, GQA 32/8 x 128"},
      {"mistral-7b", 32, 32, 8, 128, 10000.0, 1024, "Mistral 7B v0.1: 32 layers, GQA 32/8 x 128"},
      {"opt-6.7b", 32, 32, 32, 128, 10000.0, 1024,
       "OPT 6.7B: 32 layers, MHA 32 x 128 (learned positions; generator recency uses base 1e4)"},
      {"opt-30b", 48, 56, 56, 128, 10000.0, 1024,
       "OPT 30B: 48 layers, MHA 56 x 128 (learned positions; generator recency uses base 1e4)"},
      {"tiny", 2, 2, 2, 8, 10000.0, 32, "test preset: MHA 2 x 8"},
      {"tiny-gqa", 2, 4, 2, 8, 10000.0, 32, "test preset: GQA 4/2 x 8"},
      {"tiny-mqa", 2, 4, 1, 8, 10000.0, 32, "test preset: MQA 4/1 x 8"},
  };
  return all;
}

const Preset& find_preset(const std::string& name) {
  std::string known;
  for (const Preset& p : presets()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw InputError("preset", "name", "one of " + known, "'" + name + "'");
}

}  // namespace subevict
