# Every dependency is a Debian package; scripts/setup installs them.
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(Boost 1.74 REQUIRED)  # Boost.Math is header-only
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_path(RANDOM123_INCLUDE_DIR Random123/philox.h REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
if(SUBEVICT_BUILD_CLI)
  find_package(CLI11 2.1 REQUIRED)
endif()
if(SUBEVICT_BUILD_TESTS)
  find_package(GTest REQUIRED)
  find_package(rapidcheck REQUIRED)
endif()
if(SUBEVICT_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()
# COIN-OR CBC (integer programs: independent cross-checks of the exact optima) and LEMON (network
# simplex for the offline eviction optimum), both found through pkg-config as Debian ships them.
find_package(PkgConfig REQUIRED)
pkg_check_modules(CBC REQUIRED IMPORTED_TARGET cbc)
pkg_check_modules(LEMON REQUIRED IMPORTED_TARGET lemon)
# Sweeps (sweep/): TOML grids (toml++) and the SQLite results store; MPI is optional
# and only enables sharding a sweep over `mpirun` ranks (without it, `--shard i/N` still works).
find_package(tomlplusplus 3 REQUIRED)
find_package(SQLite3 REQUIRED)
option(SUBEVICT_WITH_MPI "Shard sweeps over mpirun ranks when MPI is found" ON)
if(SUBEVICT_WITH_MPI)
  find_package(MPI COMPONENTS CXX QUIET)
endif()
if(SUBEVICT_WITH_MPI AND MPI_CXX_FOUND)
  message(STATUS "subevict: MPI found: sweeps shard over mpirun ranks")
else()
  message(STATUS "subevict: MPI not found: sweeps run as one process (--shard i/N still available)")
endif()
