#include "greedy/functions/facility_location.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "core/attention.hpp"
#include "core/input_error.hpp"
#include "core/npy.hpp"

namespace subevict::greedy {
namespace {

/// "" when every entry is finite and ≥ 0, else a description of the first offending entry.
std::string first_bad_entry(const Eigen::MatrixXd& sim) {
  for (Eigen::Index j = 0; j < sim.cols(); ++j) {
    for (Eigen::Index i = 0; i < sim.rows(); ++i) {
      const double x = sim(i, j);
      if (!std::isfinite(x) || x < 0.0) {
        std::ostringstream out;
        out.precision(17);
        out << "entry (" << i << ", " << j << ") = " << x;
        return out.str();
      }
    }
  }
  return "";
}

class FacilityLocationState final : public SetState {
 public:
  explicit FacilityLocationState(const FacilityLocation& f)
      : SetState(f.ground_size()),
        sim_(&f.similarity()),
        best_(Eigen::VectorXd::Zero(f.similarity().rows())),
        owner_(f.similarity().rows(), kNone) {}

  double value() const override { return value_; }
  std::unique_ptr<SetState> clone() const override {
    return std::unique_ptr<SetState>(new FacilityLocationState(*this));
  }

 protected:
  FacilityLocationState(const FacilityLocationState&) = default;

  double on_gain(Element e) const override {
    return (sim_->col(Eigen::Index(e)) - best_).cwiseMax(0.0).sum();
  }
  void on_add(Element e) override {
    const auto column = sim_->col(Eigen::Index(e));
    for (Eigen::Index i = 0; i < best_.size(); ++i) {
      // A strictly larger value takes over; on a tie the lower index owns the client.
      if (column(i) > best_(i) || (column(i) == best_(i) && e < owner_[std::size_t(i)])) {
        best_(i) = column(i);
        owner_[std::size_t(i)] = e;
      }
    }
    value_ = best_.sum();
  }
  void on_remove(Element e) override {
    for (Eigen::Index i = 0; i < best_.size(); ++i) {
      if (owner_[std::size_t(i)] != e) continue;
      double best = 0.0;
      Element owner = kNone;
      for (Element j : members()) {
        const double x = (*sim_)(i, Eigen::Index(j));
        if (x > best || (x == best && j < owner)) {
          best = x;
          owner = j;
        }
      }
      best_(i) = best;
      owner_[std::size_t(i)] = owner;
    }
    value_ = best_.sum();
  }

 private:
  static constexpr Element kNone = ~Element(0);
  const Eigen::MatrixXd* sim_;
  Eigen::VectorXd best_;        // max_{j∈S} sim_ij, 0 for S = ∅
  std::vector<Element> owner_;  // the member attaining best_(i) (lowest index), kNone if none
  double value_ = 0.0;          // recomputed as best_.sum(): no drift over adds and removes
};

}  // namespace

FacilityLocation::FacilityLocation(Eigen::MatrixXd similarity) : similarity_(std::move(similarity)) {
  if (similarity_.rows() == 0 || similarity_.cols() == 0) {
    throw std::invalid_argument("FacilityLocation: the similarity matrix must have at least one row "
                                "and one column");
  }
  const std::string bad = first_bad_entry(similarity_);
  if (!bad.empty()) {
    throw std::invalid_argument("FacilityLocation: similarity entries must be finite and "
                                "nonnegative, got " + bad);
  }
}

FacilityLocation FacilityLocation::from_npy(const std::string& path) {
  const Tensor<double> t = read_npy<double>(path);
  if (t.shape.size() != 2) {
    throw InputError(path, "shape", "a 2-D similarity matrix (clients x candidates)",
                     std::to_string(t.shape.size()) + "-D");
  }
  if (t.shape[0] == 0 || t.shape[1] == 0) {
    throw InputError(path, "shape", "at least one row and one column",
                     std::to_string(t.shape[0]) + " x " + std::to_string(t.shape[1]));
  }
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::MatrixXd sim = Eigen::Map<const RowMajor>(t.data.data(), Eigen::Index(t.shape[0]),
                                                   Eigen::Index(t.shape[1]));
  const std::string bad = first_bad_entry(sim);
  if (!bad.empty()) {
    throw InputError(path, "similarity", "finite nonnegative entries", bad);
  }
  return FacilityLocation(std::move(sim));
}

FacilityLocation FacilityLocation::from_attention(const ConstHeadMap& q, const ConstHeadMap& k,
                                                  double scale) {
  return FacilityLocation(causal_attention(q, k, scale));
}

double FacilityLocation::evaluate(std::span<const Element> set) const {
  if (set.empty()) return 0.0;
  Eigen::VectorXd best = Eigen::VectorXd::Zero(similarity_.rows());
  for (Element j : set) best = best.cwiseMax(similarity_.col(Eigen::Index(j)));
  return best.sum();
}

std::unique_ptr<SetState> FacilityLocation::empty_state() const {
  return std::make_unique<FacilityLocationState>(*this);
}

}  // namespace subevict::greedy
