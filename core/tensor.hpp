#pragma once
/// \file
/// Dense row-major tensors with an explicit shape: the unit of file I/O (.npy, .safetensors).

#include <cstddef>
#include <span>
#include <vector>

namespace subevict {

/// A dense tensor in C (row-major) order: element (i0, ..., i{r-1}) is
/// data[(...(i0 * shape[1] + i1) * shape[2] + ...) + i{r-1}]. Rank 0 (shape {}) holds exactly one
/// element; any zero dimension makes the tensor empty. Invariant kept by every reader and required
/// by every writer: data.size() == element_count(shape). Host memory, owned.
template <class T>
struct Tensor {
  std::vector<std::size_t> shape;
  std::vector<T> data;

  /// Same shape and values compared with ==, so NaN != NaN and -0 == +0 (tests that need
  /// bit-exactness compare bit patterns).
  friend bool operator==(const Tensor&, const Tensor&) = default;
};

/// A non-owning view with the same layout contract as Tensor; `data` must outlive the view. Lets
/// the writers store large buffers (e.g. a Workload's Q) without copying them into a Tensor.
template <class T>
struct TensorView {
  std::vector<std::size_t> shape;
  std::span<const T> data;
};

/// Product of the dimensions, 1 for rank 0. Does not check for overflow: use it on shapes that a
/// reader has validated or that were built from in-memory sizes.
inline std::size_t element_count(std::span<const std::size_t> shape) {
  std::size_t count = 1;
  for (std::size_t dim : shape) count *= dim;
  return count;
}

/// Number of elements the tensor's shape declares (not data.size(), which should be equal).
template <class T>
std::size_t element_count(const Tensor<T>& tensor) {
  return element_count(tensor.shape);
}

/// A view of the whole tensor (shape copied, data referenced).
template <class T>
TensorView<T> view(const Tensor<T>& tensor) {
  return {tensor.shape, tensor.data};
}

}  // namespace subevict
