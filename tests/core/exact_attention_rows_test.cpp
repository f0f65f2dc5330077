// Tests core/exact_attention_rows.hpp and its AVX2 kernel (core/attention_avx2.hpp):
// both CPU paths against an independent long-double evaluation of the definitions, and against
// each other, within exact_rows_tolerance, on random and adversarial heads (ties, all-equal
// scores, scores so spread that most weights underflow, shapes that fill no tile or panel).
#include "core/exact_attention_rows.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

#include "core/attention.hpp"
#include "core/attention_avx2.hpp"
#include "core/generator.hpp"
#include "core/input_error.hpp"

namespace subevict {
namespace {

struct Head {
  int n, d;
  std::vector<float> q, k, v;
  ConstHeadMap Q() const { return {q.data(), n, d}; }
  ConstHeadMap K() const { return {k.data(), n, d}; }
  ConstHeadMap V() const { return {v.data(), n, d}; }
};

/// A random head with entries in [-magnitude, magnitude], magnitude from 1e-3 to 1e3 (at 1e3 the
/// scores spread over ~1e6 and nearly every weight underflows), with repeated keys (ties) and
/// all-zero queries (all-equal scores) mixed in.
Head gen_head() {
  Head h;
  h.n = *rc::gen::inRange(1, 80);
  h.d = *rc::gen::inRange(1, 20);
  const float magnitude = *rc::gen::element(1e-3f, 0.3f, 1.0f, 8.0f, 1e3f);
  const auto entry = rc::gen::map(rc::gen::inRange(-1000, 1001),
                                  [magnitude](int x) { return magnitude * float(x) / 1000.f; });
  const std::size_t size = std::size_t(h.n) * h.d;
  h.q = *rc::gen::container<std::vector<float>>(size, entry);
  h.k = *rc::gen::container<std::vector<float>>(size, entry);
  h.v = *rc::gen::container<std::vector<float>>(size, entry);
  if (*rc::gen::arbitrary<bool>()) {  // ties: every key a copy of one of the first three
    for (int j = 3; j < h.n; ++j) {
      for (int p = 0; p < h.d; ++p)
        h.k[std::size_t(j) * h.d + p] = h.k[std::size_t(j % 3) * h.d + p];
    }
  }
  if (*rc::gen::arbitrary<bool>()) {  // all-equal scores on some rows
    for (int i = 0; i < h.n; i += 2) {
      for (int p = 0; p < h.d; ++p) h.q[std::size_t(i) * h.d + p] = 0.0f;
    }
  }
  return h;
}

/// L_i and o_i straight from the definitions in long double (an independent evaluation), over
/// keys max(0, i - window + 1)..i with a sliding window (window > 0).
ExactRows naive_rows(const Head& h, double scale, int window = 0) {
  ExactRows out{std::vector<double>(std::size_t(h.n)), RowMatrixd(h.n, h.d)};
  for (int i = 0; i < h.n; ++i) {
    const int from = window > 0 ? std::max(0, i - window + 1) : 0;
    std::vector<long double> s(std::size_t(i + 1), -std::numeric_limits<long double>::infinity());
    long double top = -std::numeric_limits<long double>::infinity();
    for (int j = from; j <= i; ++j) {
      long double dot = 0;
      for (int p = 0; p < h.d; ++p)
        dot += (long double)h.q[std::size_t(i) * h.d + p] * h.k[std::size_t(j) * h.d + p];
      s[std::size_t(j)] = scale * dot;
      top = std::max(top, s[std::size_t(j)]);
    }
    long double sum = 0;
    for (int j = from; j <= i; ++j) sum += std::exp(s[std::size_t(j)] - top);
    const long double log_normalizer = top + std::log(sum);
    out.log_normalizer[std::size_t(i)] = double(log_normalizer);
    for (int c = 0; c < h.d; ++c) {
      long double o = 0;
      for (int j = from; j <= i; ++j)
        o += std::exp(s[std::size_t(j)] - log_normalizer) * h.v[std::size_t(j) * h.d + c];
      out.output(i, c) = double(o);
    }
  }
  return out;
}

double max_abs(const std::vector<float>& x) {
  double m = 0;
  for (float e : x) m = std::max(m, double(std::fabs(e)));
  return m;
}

/// Every L_i and o_ic of `a` within the tolerance of `b`; the first offender in the message.
void expect_close(const ExactRows& a, const ExactRows& b, const Head& h, double scale,
                  const char* what) {
  const ExactRowsTolerance tol =
      exact_rows_tolerance(h.n, h.d, score_magnitude(h.Q(), h.K(), scale));
  const double v_max = max_abs(h.v);
  for (int i = 0; i < h.n; ++i) {
    RC_ASSERT(std::isfinite(a.log_normalizer[std::size_t(i)]));
    if (std::fabs(a.log_normalizer[std::size_t(i)] - b.log_normalizer[std::size_t(i)]) >
        tol.log_normalizer) {
      RC_FAIL(std::string(what) + ": L_" + std::to_string(i) + " " +
              std::to_string(a.log_normalizer[std::size_t(i)]) + " vs " +
              std::to_string(b.log_normalizer[std::size_t(i)]));
    }
    for (int c = 0; c < h.d; ++c) {
      if (!(std::fabs(a.output(i, c) - b.output(i, c)) <= tol.output * v_max)) {
        RC_FAIL(std::string(what) + ": o_" + std::to_string(i) + "," + std::to_string(c) + " " +
                std::to_string(a.output(i, c)) + " vs " + std::to_string(b.output(i, c)));
      }
    }
  }
}

RC_GTEST_PROP(ExactAttentionRows, PortableMatchesTheDefinitions, ()) {
  const Head h = gen_head();
  const double scale = *rc::gen::element(1.0, 0.125, -0.5);
  expect_close(exact_attention_rows(h.Q(), h.K(), h.V(), scale, CpuPath::kPortable),
               naive_rows(h, scale), h, scale, "portable vs definition");
}

RC_GTEST_PROP(ExactAttentionRows, Avx2MatchesTheDefinitionsAndThePortablePath, ()) {
  if (!cpu_supports_avx2_fma()) RC_DISCARD("no AVX2 + FMA on this CPU");
  const Head h = gen_head();
  const double scale = *rc::gen::element(1.0, 0.125, -0.5);
  const ExactRows fast = exact_attention_rows(h.Q(), h.K(), h.V(), scale, CpuPath::kAvx2Fma);
  expect_close(fast, naive_rows(h, scale), h, scale, "avx2 vs definition");
  expect_close(fast, exact_attention_rows(h.Q(), h.K(), h.V(), scale, CpuPath::kPortable), h, scale,
               "avx2 vs portable");
}

RC_GTEST_PROP(ExactAttentionRows, SlidingWindowRowsMatchTheWindowedDefinitionsOnEveryPath, ()) {
  const Head h = gen_head();
  const double scale = *rc::gen::element(1.0, 0.125, -0.5);
  const int window = *rc::gen::inRange(1, h.n + 1);
  const ExactRows portable = exact_attention_rows(h.Q(), h.K(), h.V(), scale, CpuPath::kPortable, window);
  expect_close(portable, naive_rows(h, scale, window), h, scale, "windowed portable vs definition");
  if (cpu_supports_avx2_fma()) {  // the AVX2 request runs the portable arithmetic on a window
    const ExactRows asked = exact_attention_rows(h.Q(), h.K(), h.V(), scale, CpuPath::kAvx2Fma, window);
    RC_ASSERT(asked.log_normalizer == portable.log_normalizer);
    RC_ASSERT(asked.output == portable.output);
  }
  // Rows beyond the window see fewer keys than the global ones: with moderate scores (no weight
  // below e^-10 of the row's largest) the dropped keys change L.
  if (window < h.n && score_magnitude(h.Q(), h.K(), scale) <= 5.0) {
    const ExactRows global = naive_rows(h, scale);
    bool differs = false;
    for (int i = window; i < h.n; ++i) differs = differs || portable.log_normalizer[std::size_t(i)] != global.log_normalizer[std::size_t(i)];
    RC_ASSERT(differs);
  }
  RC_ASSERT_THROWS_AS(exact_attention_rows(h.Q(), h.K(), h.V(), scale, CpuPath::kPortable, -1), std::invalid_argument);
}

/// The AVX2 rows (on `threads`) of one generated head against the portable ones, within
/// exact_rows_tolerance.
void expect_paths_agree(const Workload& w, int head, int threads) {
  const ConstHeadMap q = w.q(0, head), k = w.k(0, head), v = w.v(0, head);
  const ExactRows fast = exact_attention_rows(q, k, v, w.score_scale(), CpuPath::kAvx2Fma, 0, threads);
  const ExactRows portable = exact_attention_rows(q, k, v, w.score_scale(), CpuPath::kPortable);
  const ExactRowsTolerance tol =
      exact_rows_tolerance(int(q.rows()), int(q.cols()), score_magnitude(q, k, w.score_scale()));
  for (int i = 0; i < int(q.rows()); ++i) {
    ASSERT_NEAR(fast.log_normalizer[std::size_t(i)], portable.log_normalizer[std::size_t(i)], tol.log_normalizer)
        << "head " << head << " row " << i;
  }
  EXPECT_LE((fast.output - portable.output).cwiseAbs().maxCoeff(), tol.output * v.cwiseAbs().maxCoeff()) << head;
}

TEST(ExactAttentionRows, Avx2MatchesThePortablePathOnAnLlmLikeHead) {
  if (!cpu_supports_avx2_fma()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  // 301 rows: five 64-row blocks, the last with a ragged panel; d = 128 fills 21 value tiles and
  // part of one.
  const Workload w = generate_workload(spec_from_preset("llama2-7b", 301, 1, 3));
  for (int head : {0, 5}) expect_paths_agree(w, head, 1);
}

TEST(ExactAttentionRows, Avx2RowsLongerThanAChunkMatchThePortablePath) {
  if (!cpu_supports_avx2_fma()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  // 3500 rows: rows past 1536 and 3072 keys are normalized online over two and three chunks; the
  // test needs a row whose maximum score lies past its first chunk, so that the sums and outputs
  // of the first are rescaled.
  const Workload w = generate_workload(spec_from_preset("llama2-7b", 3500, 1, 7));
  const ConstHeadMap q = w.q(0, 1), k = w.k(0, 1);
  int rescaled = 0;
  for (int i = 1536; i < 3500; i += 97) {
    const Eigen::VectorXd s = k.topRows(i + 1).cast<double>() * q.row(i).transpose().cast<double>();
    rescaled += s.tail(i + 1 - 1536).maxCoeff() > s.head(1536).maxCoeff();
  }
  ASSERT_GT(rescaled, 0);
  expect_paths_agree(w, 1, 2);
}

TEST(ExactAttentionRows, Avx2GivesTheSameBitsOnAnyThreadCount) {
  if (!cpu_supports_avx2_fma()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  // 301 rows: five 64-row blocks dealt to 1, 2 and 3 threads.
  WorkloadSpec spec = spec_from_preset("llama2-7b", 301, 1, 5);
  const Workload w = generate_workload(spec);
  const ConstHeadMap q = w.q(0, 2), k = w.k(0, 2), v = w.v(0, 2);
  const ExactRows one = exact_attention_rows(q, k, v, w.score_scale(), CpuPath::kAvx2Fma, 0, 1);
  for (int threads : {2, 3}) {
    const ExactRows many = exact_attention_rows(q, k, v, w.score_scale(), CpuPath::kAvx2Fma, 0, threads);
    EXPECT_EQ(many.log_normalizer, one.log_normalizer) << threads;
    EXPECT_TRUE(many.output == one.output) << threads;
  }
  EXPECT_THROW((void)exact_attention_rows(q, k, v, w.score_scale(), CpuPath::kAvx2Fma, 0, 0),
               std::invalid_argument);
}

TEST(ExactAttentionRows, EqualScoresGiveTheMeanOfTheValues) {
  // q = 0: every score is 0, so L_i = log(i + 1) and o_i is the mean of v_0..v_i.
  Head h{37, 7, std::vector<float>(37 * 7, 0.0f), {}, {}};
  for (int e = 0; e < 37 * 7; ++e) {
    h.k.push_back(float((e * 7919) % 97) / 13.0f);
    h.v.push_back(float((e * 104729) % 89) / 11.0f - 4.0f);
  }
  for (CpuPath path : {CpuPath::kPortable, CpuPath::kAvx2Fma}) {
    if (path == CpuPath::kAvx2Fma && !cpu_supports_avx2_fma()) continue;
    const ExactRows rows = exact_attention_rows(h.Q(), h.K(), h.V(), 0.7, path);
    std::vector<double> running(7, 0.0);
    for (int i = 0; i < h.n; ++i) {
      EXPECT_NEAR(rows.log_normalizer[std::size_t(i)], std::log(double(i + 1)), 1e-14)
          << to_string(path) << " " << i;
      for (int c = 0; c < h.d; ++c) {
        running[std::size_t(c)] += h.v[std::size_t(i) * h.d + c];
        EXPECT_NEAR(rows.output(i, c), running[std::size_t(c)] / (i + 1), 1e-13)
            << to_string(path) << " " << i;
      }
    }
  }
}

TEST(ExactAttentionRows, RejectsMismatchedShapes) {
  const std::vector<float> a(12, 1.0f);
  const ConstHeadMap q3(a.data(), 3, 4), k4(a.data(), 4, 3), none(a.data(), 0, 4);
  EXPECT_THROW((void)exact_attention_rows(q3, k4, q3, 1.0, CpuPath::kPortable),
               std::invalid_argument);
  EXPECT_THROW((void)exact_attention_rows(none, none, none, 1.0, CpuPath::kPortable),
               std::invalid_argument);
}

TEST(ExactAttentionRows, ToleranceGrowsWithTheScoresAndTheLength) {
  const ExactRowsTolerance small = exact_rows_tolerance(16, 8, 1.0),
                           large = exact_rows_tolerance(4096, 128, 100.0);
  EXPECT_GT(small.log_normalizer, 0.0);
  EXPECT_GT(large.log_normalizer, small.log_normalizer);
  EXPECT_GT(large.output, 2.0 * large.log_normalizer);
  EXPECT_LT(large.log_normalizer, 1e-9);  // FP64 throughout: far below float's 6e-8
}

#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
/// |got - want| within 2 ulp of want, with an absolute floor of 2 ulp of the smallest subnormal.
bool within_two_ulp(double got, double want) {
  return std::fabs(got - want) <=
         2.0 * DBL_EPSILON * std::fabs(want) + 2.0 * std::numeric_limits<double>::denorm_min();
}

RC_GTEST_PROP(ExpFlushedAvx2, WithinTwoUlpAndZeroBelowTheFlushPoint, ()) {
  if (!cpu_supports_avx2_fma()) RC_DISCARD("no AVX2 + FMA on this CPU");
  const int count = *rc::gen::inRange(1, 19);
  std::vector<double> x;
  for (int e = 0; e < count; ++e) {
    const int kind = *rc::gen::inRange(0, 4);
    const double u = double(*rc::gen::inRange(0, 1 << 30)) / double(1 << 30);
    x.push_back(kind == 0   ? -760.0 * u  // the whole range and beyond
                : kind == 1 ? -std::ldexp(u, -*rc::gen::inRange(0, 60))  // near 0
                : kind == 2 ? kLogMinNormal + 2.0 * (u - 0.5)            // around the flush point
                            : -std::numeric_limits<double>::infinity());
  }
  std::vector<double> out(x.size());
  detail::exp_flushed_avx2(x.data(), count, out.data());
  for (int e = 0; e < count; ++e) {
    const double want = x[std::size_t(e)] < kLogMinNormal ? 0.0 : std::exp(x[std::size_t(e)]);
    RC_ASSERT(within_two_ulp(out[std::size_t(e)], want));
    if (x[std::size_t(e)] < kLogMinNormal) RC_ASSERT(out[std::size_t(e)] == 0.0);
  }
}

TEST(ExpFlushedAvx2, ExactAtZero) {
  if (!cpu_supports_avx2_fma()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  const double x[5] = {0.0, -0.0, -std::log(2.0), kLogMinNormal,
                       std::nextafter(kLogMinNormal, -1000.0)};
  double out[5];
  detail::exp_flushed_avx2(x, 5, out);
  EXPECT_EQ(out[0], 1.0);
  EXPECT_EQ(out[1], 1.0);
  EXPECT_TRUE(within_two_ulp(out[2], 0.5));
  EXPECT_GT(out[3], 0.0);
  EXPECT_EQ(out[4], 0.0);
}
#endif

}  // namespace
}  // namespace subevict
