# SUBEVICT_WITH_CUDA: AUTO enables CUDA when a compiler is found, ON requires it, OFF skips it.
set(SUBEVICT_HAVE_CUDA OFF)
if(NOT SUBEVICT_WITH_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Before enable_language, which otherwise fills in the compiler's own default (sm_75 for CUDA 13).
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    set(SUBEVICT_HAVE_CUDA ON)
    set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 has no C++20 dialect flags for nvcc
    find_package(CUDAToolkit REQUIRED)
  elseif(SUBEVICT_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SUBEVICT_WITH_CUDA=ON but no CUDA compiler was found (is nvcc on PATH?)")
  endif()
endif()
message(STATUS "subevict: CUDA backend ${SUBEVICT_HAVE_CUDA}")
