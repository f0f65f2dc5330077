// Tests core/generator.hpp, core/llm_like_model.hpp and core/presets.hpp.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstring>

#include "core/generator.hpp"
#include "core/input_error.hpp"
#include "core/presets.hpp"
#include "core/statistics.hpp"

namespace subevict {
namespace {

bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

bool bit_identical(const Workload& a, const Workload& b) {
  return a.shape() == b.shape() && bit_identical(a.q_data(), b.q_data()) &&
         bit_identical(a.k_data(), b.k_data()) && bit_identical(a.v_data(), b.v_data());
}

WorkloadSpec gen_spec() {
  const std::vector<std::string> names = {"tiny", "tiny-gqa", "tiny-mqa"};
  WorkloadSpec spec = spec_from_preset(*rc::gen::elementOf(names), *rc::gen::inRange(1, 40),
                                       *rc::gen::inRange(1, 3), *rc::gen::arbitrary<std::uint64_t>());
  spec.kind = *rc::gen::element(GeneratorKind::kGaussian, GeneratorKind::kLlmLike);
  return spec;
}

RC_GTEST_PROP(Generator, IsBitIdenticalAcrossRerunsAndThreadCounts, ()) {
  const WorkloadSpec spec = gen_spec();
  const Workload one = generate_workload(spec, 1);
  RC_ASSERT(bit_identical(one, generate_workload(spec, 1)));
  RC_ASSERT(bit_identical(one, generate_workload(spec, 2)));
}

RC_GTEST_PROP(Generator, ATokenDoesNotDependOnTheSequenceLength, ()) {
  // Every element is a pure function of (seed, tensor, element): a longer workload extends a
  // shorter one (same layer/head layout, RoPE tables indexed by position).
  WorkloadSpec spec = gen_spec();
  spec.shape.layers = 1;
  const Workload short_w = generate_workload(spec, 1);
  spec.shape.tokens += *rc::gen::inRange(1, 10);
  const Workload long_w = generate_workload(spec, 1);
  for (int h = 0; h < spec.shape.kv_heads; ++h) {
    RC_ASSERT(long_w.k(0, h).topRows(short_w.shape().tokens) == short_w.k(0, h));
    RC_ASSERT(long_w.v(0, h).topRows(short_w.shape().tokens) == short_w.v(0, h));
  }
  RC_ASSERT(long_w.q(0, 0).topRows(short_w.shape().tokens) == short_w.q(0, 0));
}

TEST(Generator, DifferentSeedsGiveDifferentWorkloads) {
  const Workload a = generate_workload(spec_from_preset("tiny", 16, 1, 1));
  const Workload b = generate_workload(spec_from_preset("tiny", 16, 1, 2));
  EXPECT_FALSE(bit_identical(a, b));
}

TEST(Generator, GaussianEntriesAreStandardNormal) {
  WorkloadSpec spec = spec_from_preset("tiny", 1024, 2, 5);
  spec.kind = GeneratorKind::kGaussian;
  const Workload w = generate_workload(spec);
  for (const auto* data : {&w.q_data(), &w.k_data(), &w.v_data()}) {
    const std::vector<double> x(data->begin(), data->end());
    const Summary s = summarize(x);
    const double se = 1.0 / std::sqrt(double(x.size()));
    EXPECT_LT(std::abs(s.mean), 5 * se);
    EXPECT_LT(std::abs(s.stddev - 1.0), 5 * se);
  }
}

TEST(Generator, RejectsInvalidSpecsNamingTheField) {
  WorkloadSpec spec = spec_from_preset("tiny", 16, 1, 0);
  spec.llm.temperature = 0;
  try {
    generate_workload(spec);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("temperature"), std::string::npos) << e.what();
  }
  spec = spec_from_preset("tiny", 16, 1, 0);
  spec.shape.head_dim = 6;
  EXPECT_THROW(generate_workload(spec), InputError);
  spec.shape.head_dim = 8;
  spec.shape.kv_heads = 3;
  EXPECT_THROW(generate_workload(spec), std::invalid_argument);
  EXPECT_THROW(find_preset("llama-9000"), InputError);
  EXPECT_THROW(generate_workload(spec_from_preset("tiny", 16, 1, 0), -1), InputError);
}

TEST(Presets, HaveTheRealModelShapes) {
  EXPECT_EQ(find_preset("llama2-7b").q_heads, 32);
  EXPECT_EQ(find_preset("llama2-7b").kv_heads, 32);
  EXPECT_EQ(find_preset("llama3-8b").kv_heads, 8);
  EXPECT_EQ(find_preset("mistral-7b").kv_heads, 8);
  EXPECT_EQ(find_preset("opt-30b").q_heads, 56);
  for (const Preset& p : presets()) {
    EXPECT_EQ(p.q_heads % p.kv_heads, 0) << p.name;
    if (p.name.rfind("tiny", 0) != 0) {
      EXPECT_EQ(p.head_dim, 128) << p.name;
    }
  }
}

}  // namespace
}  // namespace subevict
