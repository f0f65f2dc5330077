#pragma once
/// \file
/// Shared declarations of the Python extension subevict._subevict: one bind_* function per area
/// (each in its own file) and the NumPy conversions every binding uses.
///
/// Conventions of every binding: arrays come in as NumPy (or any buffer/DLPack) arrays and are
/// checked here, never converted silently: a wrong dtype, rank, shape, non-C-contiguous layout or
/// a NaN raises subevict.InputError (a ValueError) naming the argument and what was expected.
/// Arrays go out as NumPy arrays that own their memory (moved from the C++ result, no copy) or,
/// for a Workload's tensors, read-only views that keep the Workload alive. Long calls release the
/// GIL; a Python policy takes it back for each of its own calls.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace subevict::python {

namespace nb = nanobind;

void bind_errors(nb::module_& m);
void bind_workload(nb::module_& m);
void bind_simulate(nb::module_& m);
void bind_streaming_cache(nb::module_& m);
void bind_statistics(nb::module_& m);
void bind_optimum(nb::module_& m);
void bind_set_functions(nb::module_& m);
void bind_verify(nb::module_& m);
void bind_share(nb::module_& m);
void bind_feature_trace(nb::module_& m);

/// Any array handed in by Python, not converted (dtype and layout are checked by the callers).
using AnyArray = nb::ndarray<nb::ro, nb::device::cpu>;

/// A NumPy array of `shape` that owns `data` (moved in, never copied). Precondition:
/// data.size() is the product of `shape`.
template <class T>
nb::ndarray<nb::numpy, T> owned_array(std::vector<T>&& data, std::vector<std::size_t> shape) {
  auto* heap = new std::vector<T>(std::move(data));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(heap->data(), shape.size(), shape.data(), owner);
}

/// A 1-D NumPy array owning `data`.
template <class T>
nb::ndarray<nb::numpy, T> owned_array(std::vector<T>&& data) {
  const std::size_t n = data.size();
  return owned_array<T>(std::move(data), {n});
}

/// A 1-D float64 NumPy array owning the vector's buffer (moved).
nb::ndarray<nb::numpy, double> owned_array(Eigen::VectorXd&& data);

/// A 2-D float64 NumPy array (row-major) holding `matrix` (one copy: Eigen's default is
/// column-major).
nb::ndarray<nb::numpy, double> matrix_array(const Eigen::MatrixXd& matrix);

/// Throws InputError(source, field, ...) unless `array` has dtype T, `ndim` dimensions (any when
/// ndim < 0) and C-contiguous strides. Returns its data pointer.
template <class T>
const T* checked_data(const AnyArray& array, int ndim, const std::string& source, const std::string& field);

/// The dtype of `array` in NumPy's spelling ("float32", "int64", ...), for error messages.
std::string dtype_name(const AnyArray& array);

/// A float64 matrix from a 2-D float64 C-contiguous array of shape (rows, cols), checked as
/// checked_data does; also requires every entry finite.
Eigen::MatrixXd to_matrix(const AnyArray& array, const std::string& source, const std::string& field);

/// The arguments' shape as "(a, b, c)".
std::string shape_text(const AnyArray& array);

}  // namespace subevict::python
