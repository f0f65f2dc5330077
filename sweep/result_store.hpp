#pragma once
/// \file
/// The results store of a sweep: one SQLite database (WAL journal), one row per finished job in
/// table `results` with the job id as PRIMARY KEY. Each insert is its own transaction, so a
/// process killed at any moment leaves every finished job committed and no partial row; a rerun
/// skips the ids already present. One writer per file: parallel processes each write their own
/// file and merge() gathers them.

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sweep/job.hpp"

struct sqlite3;

namespace subevict::sweep {

/// One stored row: the job's parameters (as columns and as the canonical string) and its result.
struct ResultRow {
  std::string id;
  std::string params;  ///< Job::canonical()
  std::string preset;
  int tokens = 0, layers = 0;
  std::int64_t seed = 0;
  std::string policy;
  std::string budget_kind;  ///< "ratio" / "size"
  double budget_value = 0.0;
  std::string optimum;      ///< "none" / "oracle" / "flow"
  JobResult result;

  /// The row of a finished job.
  static ResultRow of(const Job& job, const JobResult& result);
  /// Column names, in table order.
  static const std::vector<std::string>& columns();
};

class ResultStore {
 public:
  /// Opens (creating if missing, with its table) the database at `path` in WAL mode with a busy
  /// timeout. `read_only` opens an existing file without creating or changing it. Throws
  /// InputError naming the file when it cannot be opened or is not a sweep store.
  explicit ResultStore(const std::string& path, bool read_only = false);
  ~ResultStore();
  ResultStore(const ResultStore&) = delete;
  ResultStore& operator=(const ResultStore&) = delete;

  /// The ids of the stored rows.
  [[nodiscard]] std::set<std::string> ids() const;
  /// Inserts one row in its own transaction (INSERT; a row with the same id already present is
  /// kept and the call returns false). Throws std::runtime_error on a database error.
  bool insert(const ResultRow& row);
  /// Every row, sorted by id. Throws InputError naming the file, the row and the column for an
  /// integer column outside its range or not an integer: tokens, layers and groups in
  /// [1, INT_MAX], budget_size in [1, tokens], uncompressed_groups in [0, groups].
  [[nodiscard]] std::vector<ResultRow> rows() const;
  /// Copies the rows of the store at `other` whose ids are not present yet, in one transaction;
  /// returns how many were added.
  int merge(const std::string& other);
  /// The output of PRAGMA integrity_check ("ok" for a sound file).
  [[nodiscard]] std::string integrity_check() const;

 private:
  void exec(const std::string& sql) const;
  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace subevict::sweep
