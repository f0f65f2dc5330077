// NumPy conversions shared by the bindings (bindings.hpp).
#include <cmath>

#include "bindings.hpp"
#include "core/input_error.hpp"

namespace subevict::python {

nb::ndarray<nb::numpy, double> owned_array(Eigen::VectorXd&& data) {
  auto* heap = new Eigen::VectorXd(std::move(data));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<Eigen::VectorXd*>(p); });
  const std::size_t shape[1] = {std::size_t(heap->size())};
  return nb::ndarray<nb::numpy, double>(heap->data(), 1, shape, owner);
}

nb::ndarray<nb::numpy, double> matrix_array(const Eigen::MatrixXd& matrix) {
  std::vector<double> data(std::size_t(matrix.size()));
  Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
      data.data(), matrix.rows(), matrix.cols()) = matrix;
  return owned_array<double>(std::move(data), {std::size_t(matrix.rows()), std::size_t(matrix.cols())});
}

std::string dtype_name(const AnyArray& array) {
  const nb::dlpack::dtype d = array.dtype();
  std::string kind;
  switch (nb::dlpack::dtype_code(d.code)) {
    case nb::dlpack::dtype_code::Int: kind = "int"; break;
    case nb::dlpack::dtype_code::UInt: kind = "uint"; break;
    case nb::dlpack::dtype_code::Float: kind = "float"; break;
    case nb::dlpack::dtype_code::Bfloat: kind = "bfloat"; break;
    case nb::dlpack::dtype_code::Complex: kind = "complex"; break;
    case nb::dlpack::dtype_code::Bool: return "bool";
    default: kind = "dtype code " + std::to_string(int(d.code)) + " of "; break;
  }
  return kind + std::to_string(int(d.bits));
}

std::string shape_text(const AnyArray& array) {
  std::string out = "(";
  for (std::size_t i = 0; i < array.ndim(); ++i) {
    out += (i ? ", " : "") + std::to_string(array.shape(i));
  }
  return out + (array.ndim() == 1 ? ",)" : ")");
}

namespace {

template <class T>
const char* dtype_text() {
  if constexpr (std::is_same_v<T, float>) return "float32";
  if constexpr (std::is_same_v<T, double>) return "float64";
  if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
  if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  if constexpr (std::is_same_v<T, std::uint8_t>) return "uint8 (or bool)";
  return "?";
}

bool c_contiguous(const AnyArray& array) {
  if (array.size() == 0) return true;  // an empty array's strides mean nothing (NumPy 2 may set any)
  std::int64_t expected = 1;
  for (std::size_t i = array.ndim(); i-- > 0;) {
    if (array.shape(i) != 1 && array.stride(i) != expected) return false;
    expected *= std::int64_t(array.shape(i));
  }
  return true;
}

}  // namespace

template <class T>
const T* checked_data(const AnyArray& array, int ndim, const std::string& source, const std::string& field) {
  if (array.dtype() != nb::dtype<T>()) {
    throw InputError(source, field, std::string("a ") + dtype_text<T>() + " array", dtype_name(array));
  }
  if (ndim >= 0 && array.ndim() != std::size_t(ndim)) {
    throw InputError(source, field, "a " + std::to_string(ndim) + "-D array",
                     "shape " + shape_text(array));
  }
  if (!c_contiguous(array)) {
    throw InputError(source, field, "a C-contiguous array (numpy.ascontiguousarray)",
                     "strides that are not C order");
  }
  return static_cast<const T*>(array.data());
}

template const float* checked_data<float>(const AnyArray&, int, const std::string&, const std::string&);
template const double* checked_data<double>(const AnyArray&, int, const std::string&, const std::string&);
template const std::int64_t* checked_data<std::int64_t>(const AnyArray&, int, const std::string&, const std::string&);
template const std::uint8_t* checked_data<std::uint8_t>(const AnyArray&, int, const std::string&, const std::string&);

Eigen::MatrixXd to_matrix(const AnyArray& array, const std::string& source, const std::string& field) {
  const double* data = checked_data<double>(array, 2, source, field);
  const Eigen::Index rows = Eigen::Index(array.shape(0)), cols = Eigen::Index(array.shape(1));
  Eigen::MatrixXd out =
      Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(data, rows, cols);
  for (Eigen::Index i = 0; i < rows; ++i) {
    for (Eigen::Index j = 0; j < cols; ++j) {
      if (!std::isfinite(out(i, j))) {
        throw InputError(source, field, "finite entries",
                         std::string(std::isnan(out(i, j)) ? "NaN" : "Inf") + " at (" + std::to_string(i) + ", " +
                             std::to_string(j) + ")");
      }
    }
  }
  return out;
}

}  // namespace subevict::python
