// The portable backend on CPU threads: kernels/portable.inl with Thrust's OpenMP device system
// (THRUST_DEVICE_SYSTEM is set for this file by kernels/CMakeLists.txt).
#define SUBEVICT_PORTABLE_NS portable
#include "kernels/portable.inl"
