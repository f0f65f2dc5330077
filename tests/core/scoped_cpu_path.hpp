#pragma once
/// \file
/// Test support: run a block of a test on one CPU path (core/cpu_path.hpp).

#include <cstdlib>
#include <string>
#include <vector>

#include "core/cpu_path.hpp"

namespace subevict::testing_support {

/// Sets SUBEVICT_CPU_PATH for its lifetime and unsets it afterwards.
struct ScopedCpuPath {
  explicit ScopedCpuPath(const std::string& name) { setenv("SUBEVICT_CPU_PATH", name.c_str(), 1); }
  ~ScopedCpuPath() { unsetenv("SUBEVICT_CPU_PATH"); }
  ScopedCpuPath(const ScopedCpuPath&) = delete;
  ScopedCpuPath& operator=(const ScopedCpuPath&) = delete;
};

/// The paths this binary can run here: "portable", and "avx2" where cpu_supports_avx2_fma().
inline std::vector<std::string> runnable_cpu_paths() {
  std::vector<std::string> paths{"portable"};
  if (cpu_supports_avx2_fma()) paths.push_back("avx2");
  return paths;
}

}  // namespace subevict::testing_support
