#include "core/causal_weight_tiles.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/attention.hpp"
#include "core/attention_avx2.hpp"
#include "core/input_error.hpp"

namespace subevict {
namespace {

constexpr int kPanelRows = 8;  // attention_avx2.hpp score_tile_avx2: rows per panel
constexpr int kTileKeys = 6;   // and keys per tile
static_assert(CausalWeightTiles::kRowBlock % kPanelRows == 0 && CausalWeightTiles::kKeyChunk % kTileKeys == 0);

constexpr int kTileEntries = CausalWeightTiles::kRowBlock * CausalWeightTiles::kKeyChunk;

int chunks(int n, int size) { return (n + size - 1) / size; }

}  // namespace

void CausalWeightTiles::prepare() {
  if (n_ == 0 || d_ == 0 || k_.rows() != q_.rows() || k_.cols() != q_.cols()) {
    throw std::invalid_argument("CausalWeightTiles: q and k must both be n x d with n, d >= 1, got q " +
                                std::to_string(q_.rows()) + "x" + std::to_string(q_.cols()) + ", k " +
                                std::to_string(k_.rows()) + "x" + std::to_string(k_.cols()));
  }
  if (path_ == CpuPath::kAvx2Fma) {
    if (!cpu_supports_avx2_fma()) {
      throw InputError("causal weight tiles", "cpu path avx2", "a CPU with AVX2 and FMA");
    }
    const int padded = chunks(n_, kKeyChunk) * kKeyChunk;
    packed_keys_.assign(std::size_t(padded) * d_, 0.0);
    for (int j = 0; j < n_; ++j) {
      double* dst = packed_keys_.data() + std::size_t(j / kTileKeys) * d_ * kTileKeys + j % kTileKeys;
      for (int p = 0; p < d_; ++p) dst[std::size_t(p) * kTileKeys] = double(k_(j, p));
    }
  }
}

CausalWeightTiles::CausalWeightTiles(const ConstHeadMap& q, const ConstHeadMap& k, double scale,
                                     std::vector<double> log_normalizer, CpuPath path)
    : q_(q), k_(k), scale_(scale), path_(path), n_(int(q.rows())), d_(int(q.cols())),
      log_normalizer_(std::move(log_normalizer)) {
  prepare();
  bool finite = log_normalizer_.size() == std::size_t(n_);
  for (double x : log_normalizer_) finite = finite && std::isfinite(x);
  if (!finite) {
    throw std::invalid_argument("CausalWeightTiles: expected " + std::to_string(n_) +
                                " finite log normalizers, got " + std::to_string(log_normalizer_.size()) +
                                " values or a non-finite one");
  }
}

CausalWeightTiles::CausalWeightTiles(const ConstHeadMap& q, const ConstHeadMap& k, double scale, int threads,
                                     CpuPath path)
    : q_(q), k_(k), scale_(scale), path_(path), n_(int(q.rows())), d_(int(q.cols())) {
  prepare();
  // L_i: a running maximum m and sum s per row over the row's key chunks, s rescaled whenever m
  // grows; every exponent is ≤ 0.
  log_normalizer_.assign(std::size_t(n_), 0.0);
  const int row_blocks = chunks(n_, kRowBlock);
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads())
  {
    std::vector<double> scratch, tile(kTileEntries);
#pragma omp for schedule(dynamic, 1)
    for (int b = 0; b < row_blocks; ++b) {
      const int first_row = b * kRowBlock, rows = std::min(kRowBlock, n_ - first_row);
      std::vector<double> m(kRowBlock, -std::numeric_limits<double>::infinity()), s(kRowBlock, 0.0);
      for (int first_key = 0; first_key < first_row + rows; first_key += kKeyChunk) {
        scores(first_row, first_key, scratch, tile.data());
        for (int r = 0; r < rows; ++r) {
          double top = m[r];
          for (int c = 0; c < kKeyChunk; ++c) top = std::max(top, tile[std::size_t(c) * kRowBlock + r]);
          s[r] *= std::exp(m[r] - top);  // m[r] = −inf only before the first chunk (key 0), where s[r] = 0
          m[r] = top;
          for (int c = 0; c < kKeyChunk; ++c) tile[std::size_t(c) * kRowBlock + r] -= top;
        }
        if (path_ == CpuPath::kAvx2Fma) {
#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
          detail::exp_flushed_avx2(tile.data(), kTileEntries, tile.data());
#endif
        } else {
          Eigen::Map<Eigen::ArrayXd> x(tile.data(), kTileEntries);
          x = underflow_exp(x);
        }
        for (int r = 0; r < rows; ++r) {
          for (int c = 0; c < kKeyChunk; ++c) s[r] += tile[std::size_t(c) * kRowBlock + r];
        }
      }
      for (int r = 0; r < rows; ++r) log_normalizer_[std::size_t(first_row + r)] = m[r] + std::log(s[r]);
    }
  }
}

CausalWeightTiles::CausalWeightTiles(const ConstHeadMap& q, const ConstHeadMap& k, double scale, CpuPath path)
    : q_(q), k_(k), scale_(scale), path_(path), n_(int(q.rows())), d_(int(q.cols())) {
  prepare();
}

void CausalWeightTiles::for_each_row_block(const ConstHeadMap& q, const ConstHeadMap& k, double scale,
                                           int first_row, const std::function<void(const RowBlock&)>& visit,
                                           CpuPath path) {
  const CausalWeightTiles head(q, k, scale, path);
  const int n = head.n_;
  if (first_row < 0 || first_row > n) {
    throw std::invalid_argument("CausalWeightTiles: first_row " + std::to_string(first_row) + " outside [0, " +
                                std::to_string(n) + "]");
  }
  std::vector<double> scratch, block;
  std::vector<double> top(kRowBlock), total(kRowBlock);
  for (int row0 = first_row / kRowBlock * kRowBlock; row0 < n; row0 += kRowBlock) {
    // Scores come in whole chunks of keys; the keys after the block's last row are never seen.
    const int rows = std::min(kRowBlock, n - row0), seen = row0 + rows,
              keys = chunks(seen, kKeyChunk) * kKeyChunk;
    block.resize(std::size_t(keys) * kRowBlock);  // [key][row], −inf after each row
    for (int first_key = 0; first_key < keys; first_key += kKeyChunk) {
      head.scores(row0, first_key, scratch, block.data() + std::size_t(first_key) * kRowBlock);
    }
    std::fill(top.begin(), top.end(), -std::numeric_limits<double>::infinity());
    for (int j = 0; j < seen; ++j) {
      const double* column = block.data() + std::size_t(j) * kRowBlock;
      for (int r = 0; r < kRowBlock; ++r) top[r] = std::max(top[r], column[r]);
    }
    for (int j = 0; j < seen; ++j) {
      double* column = block.data() + std::size_t(j) * kRowBlock;
      for (int r = 0; r < kRowBlock; ++r) column[r] = r < rows ? column[r] - top[r] : kLogMinNormal - 1.0;
    }
    if (path == CpuPath::kAvx2Fma) {
#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
      detail::exp_flushed_avx2(block.data(), seen * kRowBlock, block.data());
#endif
    } else {
      Eigen::Map<Eigen::ArrayXd> x(block.data(), Eigen::Index(seen) * kRowBlock);
      x = underflow_exp(x);
    }
    std::fill(total.begin(), total.end(), 0.0);
    for (int j = 0; j < seen; ++j) {
      const double* column = block.data() + std::size_t(j) * kRowBlock;
      for (int r = 0; r < kRowBlock; ++r) total[r] += column[r];
    }
    for (int r = 0; r < kRowBlock; ++r) total[r] = r < rows ? 1.0 / total[r] : 0.0;
    visit(RowBlock{row0, rows, seen, block.data(), total.data()});
  }
}

std::vector<double> CausalWeightTiles::column_sums(const ConstHeadMap& q, const ConstHeadMap& k, double scale,
                                                   int first_row, CpuPath path) {
  std::vector<double> sums(std::size_t(q.rows()), 0.0), weight(kRowBlock);
  for_each_row_block(
      q, k, scale, first_row,
      [&](const RowBlock& b) {
        // Rows before first_row (in the first block) weigh 0.
        for (int r = 0; r < kRowBlock; ++r) weight[r] = b.first_row + r >= first_row ? b.inverse_total[r] : 0.0;
        for (int j = 0; j < b.keys; ++j) {
          const double* column = b.exps + std::size_t(j) * kRowBlock;
          double sum = sums[std::size_t(j)];
          for (int r = 0; r < kRowBlock; ++r) sum += column[r] * weight[r];
          sums[std::size_t(j)] = sum;
        }
      },
      path);
  return sums;
}

void CausalWeightTiles::scores(int first_row, int first_key, std::vector<double>& scratch, double* out) const {
  if (path_ == CpuPath::kAvx2Fma) {
#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
    scratch.assign(std::size_t(kRowBlock) * d_, 0.0);  // [panel][p][8 rows], rows past n zero
    for (int r = 0; r < kRowBlock && first_row + r < n_; ++r) {
      double* dst = scratch.data() + std::size_t(r / kPanelRows) * d_ * kPanelRows + r % kPanelRows;
      for (int p = 0; p < d_; ++p) dst[std::size_t(p) * kPanelRows] = double(q_(first_row + r, p));
    }
    detail::score_tile_avx2(scratch.data(), kRowBlock / kPanelRows, packed_keys_.data() + std::size_t(first_key) * d_,
                            kKeyChunk / kTileKeys, d_, out, kRowBlock);
#endif
  } else {
    const int rows = std::min(kRowBlock, n_ - first_row), keys = std::min(kKeyChunk, n_ - first_key);
    Eigen::Map<Eigen::MatrixXd> tile(out, kRowBlock, kKeyChunk);  // column c = key, row r = query
    tile.setZero();
    tile.topLeftCorner(rows, keys).noalias() =
        q_.middleRows(first_row, rows).cast<double>() * k_.middleRows(first_key, keys).cast<double>().transpose();
  }
  const double minus_inf = -std::numeric_limits<double>::infinity();
  for (int c = 0; c < kKeyChunk; ++c) {
    const int key = first_key + c;
    double* column = out + std::size_t(c) * kRowBlock;
    for (int r = 0; r < kRowBlock; ++r) {
      const int row = first_row + r;
      column[r] = key > row || row >= n_ ? minus_inf : scale_ * column[r];
    }
  }
}

void CausalWeightTiles::tile(int first_row, int first_key, std::vector<double>& scratch, double* out) const {
  scores(first_row, first_key, scratch, out);
  for (int c = 0; c < kKeyChunk; ++c) {
    double* column = out + std::size_t(c) * kRowBlock;
    for (int r = 0; r < kRowBlock && first_row + r < n_; ++r) {
      column[r] = std::min(0.0, column[r] - log_normalizer_[std::size_t(first_row + r)]);
    }
  }
  if (path_ == CpuPath::kAvx2Fma) {
#if defined(SUBEVICT_HAVE_AVX2_KERNELS)
    detail::exp_flushed_avx2(out, kTileEntries, out);
#endif
  } else {
    Eigen::Map<Eigen::ArrayXd> x(out, kTileEntries);
    x = underflow_exp(x);
  }
}

double CausalWeightTiles::weight(int i, int j) const {
  if (j > i) return 0.0;
  const double s = scale_ * q_.row(i).cast<double>().dot(k_.row(j).cast<double>());
  const double x = std::min(0.0, s - log_normalizer_[std::size_t(i)]);
  return x < kLogMinNormal ? 0.0 : std::exp(x);
}

}  // namespace subevict
