# Project-wide warnings and the numerical contract.
#
# -ffp-contract=off: no fused multiply-add contraction anywhere. The workload generators promise
# tensors that are bit-identical across backends; that only holds when every backend evaluates the
# same IEEE operations in the same order (the CUDA build passes --fmad=false for the same reason).
add_library(subevict_options INTERFACE)
target_compile_options(subevict_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -ffp-contract=off>
  $<$<COMPILE_LANGUAGE:CUDA>:--fmad=false>)
# SUBEVICT_NATIVE: tune for the building machine (-march=native: AVX2/FMA where present). For
# benchmarks and local experiments; binaries then need a CPU like the builder's. Vectorized
# reductions (Eigen's dot products, exp) may round differently from the portable build, so a
# native build's traces can differ in the last bits from the default build's; workload tensors
# do not (the generator uses only element-wise IEEE operations, and -ffp-contract=off still holds).
option(SUBEVICT_NATIVE "Compile for the building machine's CPU (-march=native)" OFF)
if(SUBEVICT_NATIVE)
  target_compile_options(subevict_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-march=native>)
endif()
if(SUBEVICT_SANITIZE)
  target_compile_options(subevict_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer>)
  target_link_options(subevict_options INTERFACE -fsanitize=address,undefined)
endif()
install(TARGETS subevict_options EXPORT subevictTargets)
set_target_properties(subevict_options PROPERTIES EXPORT_NAME options)
