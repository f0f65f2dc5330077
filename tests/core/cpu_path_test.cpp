// Tests core/cpu_path.hpp: the choice of the CPU path from SUBEVICT_CPU_PATH and the CPU.
#include "core/cpu_path.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

#include "core/input_error.hpp"

namespace subevict {
namespace {

TEST(CpuPath, AutoTakesAvx2ExactlyWhenAvailable) {
  EXPECT_EQ(choose_cpu_path("", true), CpuPath::kAvx2Fma);
  EXPECT_EQ(choose_cpu_path("auto", true), CpuPath::kAvx2Fma);
  EXPECT_EQ(choose_cpu_path("", false), CpuPath::kPortable);
  EXPECT_EQ(choose_cpu_path("auto", false), CpuPath::kPortable);
}

TEST(CpuPath, PortableCanAlwaysBeForced) {
  EXPECT_EQ(choose_cpu_path("portable", true), CpuPath::kPortable);
  EXPECT_EQ(choose_cpu_path("portable", false), CpuPath::kPortable);
  EXPECT_EQ(choose_cpu_path("avx2", true), CpuPath::kAvx2Fma);
}

TEST(CpuPath, RejectsUnknownNamesAndUnavailableAvx2) {
  EXPECT_THROW((void)choose_cpu_path("avx2", false), InputError);
  EXPECT_THROW((void)choose_cpu_path("AVX2", true), InputError);
  EXPECT_THROW((void)choose_cpu_path("fast", true), InputError);
}

TEST(CpuPath, NamesRoundTrip) {
  for (CpuPath path : {CpuPath::kPortable, CpuPath::kAvx2Fma})
    EXPECT_EQ(choose_cpu_path(to_string(path), true), path);
}

TEST(CpuPath, ActivePathFollowsTheEnvironment) {
  ASSERT_EQ(setenv("SUBEVICT_CPU_PATH", "portable", 1), 0);
  EXPECT_EQ(active_cpu_path(), CpuPath::kPortable);
  ASSERT_EQ(setenv("SUBEVICT_CPU_PATH", "nonsense", 1), 0);
  EXPECT_THROW((void)active_cpu_path(), InputError);
  ASSERT_EQ(unsetenv("SUBEVICT_CPU_PATH"), 0);
  EXPECT_EQ(active_cpu_path(), cpu_supports_avx2_fma() ? CpuPath::kAvx2Fma : CpuPath::kPortable);
}

}  // namespace
}  // namespace subevict
