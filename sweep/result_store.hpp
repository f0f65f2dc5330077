#pragma once
/// \file
/// The results store of a sweep: one SQLite database (WAL journal), one row per finished job in
/// table `results` with the job id as PRIMARY KEY. Each insert is its own transaction, so a
/// process killed at any moment leaves every finished job committed and no partial row; a rerun
/// skips the ids already present. One writer per file: parallel processes each write their own
/// file and merge() gathers them.
///
/// Schema versions (PRAGMA user_version): 1, written by this code, stores in `layers` the layer set
/// the job ran (TEXT, e.g. "0,14,28-31"); 0 (no version set), written before, stored the generated
/// layer count there (INTEGER), the set being only the `layer_set` of `params`. A version-0 file is
/// migrated in place when opened for writing, and read as version 1 when opened read-only.

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
  int tokens = 0;
  /// The layers the job ran, as format_index_set writes them (Job::run_layers(): "0-31" for every
  /// layer of a 32-layer workload, "0,14,28-31" for a set).
  std::string layers;
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
  /// timeout, migrating a schema-version-0 file to the current schema in one transaction.
  /// `read_only` opens an existing file without creating or changing it (a version-0 file's rows
  /// are converted as they are read). Throws InputError naming the file when it cannot be opened,
  /// is not a sweep store, has a schema version above 1 (a newer subevict's), or holds a row that
  /// cannot be migrated (the file is then unchanged).
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
  /// integer column outside its range or not an integer: tokens and groups in [1, INT_MAX],
  /// budget_size in [1, tokens], uncompressed_groups in [0, groups]; and for a `layers` that is not
  /// a layer set's text (one or more comma-separated N or A-B). In a version-0 file `layers` must
  /// be an integer in [1, INT_MAX] and is read as the `layer_set` of `params`, or as every layer
  /// 0 .. layers − 1 without one.
  [[nodiscard]] std::vector<ResultRow> rows() const;
  /// Copies the rows of the store at `other` (opened read-only, any schema version; its rows checked
  /// as rows() checks them) whose ids are not present yet, in one transaction; returns how many
  /// were added.
  int merge(const std::string& other);
  /// The output of PRAGMA integrity_check ("ok" for a sound file).
  [[nodiscard]] std::string integrity_check() const;

 private:
  void exec(const std::string& sql) const;
  /// Creates the table when missing (unless read_only), reads and checks the schema version,
  /// migrates version 0 (unless read_only).
  void open_schema(bool read_only);
  /// Rewrites a version-0 table in the current schema, in one transaction.
  void migrate();
  /// Inserts one row (INSERT OR IGNORE) in the caller's transaction; true when it was added.
  bool insert_row(const ResultRow& row);
  std::string path_;
  sqlite3* db_ = nullptr;
  int version_ = 0;  ///< the open file's schema version
};

}  // namespace subevict::sweep
