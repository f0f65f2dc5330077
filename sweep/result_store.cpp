#include "sweep/result_store.hpp"

#include <sqlite3.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <regex>
#include <stdexcept>

#include "core/index_set.hpp"
#include "core/input_error.hpp"

namespace subevict::sweep {
namespace {

/// The schema this code writes, recorded in PRAGMA user_version. Version 0 (no version set) is the
/// schema before it: the same columns with `layers INTEGER`, the generated layer count, where a
/// job's layer set was only in `params` (its `layer_set`).
constexpr int kSchemaVersion = 1;

constexpr const char* kCreateTable =
    "CREATE TABLE IF NOT EXISTS results ("
    "id TEXT PRIMARY KEY NOT NULL, params TEXT NOT NULL, preset TEXT NOT NULL, tokens INTEGER NOT NULL, "
    "layers TEXT NOT NULL, seed INTEGER NOT NULL, policy TEXT NOT NULL, budget_kind TEXT NOT NULL, "
    "budget_value REAL NOT NULL, optimum TEXT NOT NULL, groups INTEGER NOT NULL, budget_size INTEGER NOT NULL, "
    "mean_retained_mass REAL NOT NULL, mean_total_variation REAL NOT NULL, mean_output_error REAL NOT NULL, "
    "uncompressed_groups INTEGER NOT NULL, optimum_mean_retained_mass REAL, oracle_mean_retained_mass REAL, "
    "ratio_to_optimum REAL) WITHOUT ROWID";

/// A prepared statement, finalized on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) {
      throw std::runtime_error(std::string("sqlite: ") + sqlite3_errmsg(db) + " in: " + sql);
    }
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  sqlite3_stmt* get() const { return stmt_; }
  /// sqlite3_step; true for a row, false when done; throws on errors.
  bool step() const {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw std::runtime_error(std::string("sqlite: ") + sqlite3_errmsg(db_));
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

void bind_optional(sqlite3_stmt* s, int column, const std::optional<double>& v) {
  if (v && !std::isnan(*v)) {
    sqlite3_bind_double(s, column, *v);
  } else {
    sqlite3_bind_null(s, column);
  }
}

std::optional<double> column_optional(sqlite3_stmt* s, int column) {
  if (sqlite3_column_type(s, column) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_double(s, column);
}

std::string column_text(sqlite3_stmt* s, int column) {
  const unsigned char* t = sqlite3_column_text(s, column);
  return t ? reinterpret_cast<const char*>(t) : "";
}

/// The integer in `column` of the current row of `s` (read as 64 bits: sqlite3_column_int would
/// silently truncate a stored value beyond int). Throws InputError naming the store `path`, the
/// row `id`, the column and the value unless it is an INTEGER in [lowest, highest]; `bound` says
/// where a bound comes from (e.g. " (budget_size <= tokens)"), or is empty.
int column_int(sqlite3_stmt* s, int column, std::int64_t lowest, std::int64_t highest, const std::string& path,
               const std::string& id, const std::string& bound = "") {
  const bool integer = sqlite3_column_type(s, column) == SQLITE_INTEGER;
  const std::int64_t value = sqlite3_column_int64(s, column);
  if (!integer || value < lowest || value > highest) {
    throw InputError(path, "row '" + id + "' column " + ResultRow::columns()[std::size_t(column)],
                     "an integer in [" + std::to_string(lowest) + ", " + std::to_string(highest) + "]" + bound,
                     integer ? std::to_string(value) : "the non-integer '" + column_text(s, column) + "'");
  }
  return int(value);
}

/// True for a layer set as format_index_set writes it: one or more comma-separated items, each N or
/// A-B in decimal digits.
bool layer_set_text(const std::string& text) {
  static const std::regex form("[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*");
  return std::regex_match(text, form);
}

/// The layer set in `column` (TEXT, layer_set_text) of the current row of `s`; throws InputError
/// naming the store `path`, the row `id` and the column otherwise.
std::string column_layer_set(sqlite3_stmt* s, int column, const std::string& path, const std::string& id) {
  const bool is_text = sqlite3_column_type(s, column) == SQLITE_TEXT;  // before column_text converts it
  const std::string text = column_text(s, column);
  if (!is_text || !layer_set_text(text)) {
    throw InputError(path, "row '" + id + "' column " + ResultRow::columns()[std::size_t(column)],
                     "a layer set such as \"0,14,28-31\" (the layers the job ran)",
                     text.empty() ? "nothing" : "'" + text + "'");
  }
  return text;
}

/// The layer set a schema-version-0 row ran, from its generated layer `count` and canonical
/// `params` (Job::canonical): the `layer_set` there, else every generated layer. Throws InputError
/// naming the store `path` and the row `id` for a layer_set that is not one.
std::string version0_layer_set(int count, const std::string& params, const std::string& path, const std::string& id) {
  const std::string key = ";layer_set=";
  const std::size_t at = params.find(key);
  if (at == std::string::npos) {
    return count == 1 ? "0" : "0-" + std::to_string(count - 1);  // format_index_set of 0 .. count - 1
  }
  const std::size_t from = at + key.size();
  const std::string set = params.substr(from, params.find(';', from) - from);
  if (!layer_set_text(set)) {
    throw InputError(path, "row '" + id + "' column params", "a layer_set such as \"0,14,28-31\"", "'" + set + "'");
  }
  return set;
}

/// "id, params, ...": the columns in table order.
std::string column_list() {
  std::string cols;
  for (const auto& c : ResultRow::columns()) {
    if (!cols.empty()) cols += ", ";
    cols += c;
  }
  return cols;
}

}  // namespace

const std::vector<std::string>& ResultRow::columns() {
  static const std::vector<std::string> names = {
      "id", "params", "preset", "tokens", "layers", "seed", "policy", "budget_kind", "budget_value",
      "optimum", "groups", "budget_size", "mean_retained_mass", "mean_total_variation",
      "mean_output_error", "uncompressed_groups", "optimum_mean_retained_mass",
      "oracle_mean_retained_mass", "ratio_to_optimum"};
  return names;
}

ResultRow ResultRow::of(const Job& job, const JobResult& result) {
  ResultRow r;
  r.id = job.id();
  r.params = job.canonical();
  r.preset = job.workload.preset;
  r.tokens = job.workload.shape.tokens;
  r.layers = format_index_set(job.run_layers());
  r.seed = std::int64_t(job.workload.seed);
  r.policy = job.policy;
  r.budget_kind = to_string(job.budget_kind);
  r.budget_value = job.budget_value;
  r.optimum = greedy::to_string(job.optimum);
  r.result = result;
  return r;
}

ResultStore::ResultStore(const std::string& path, bool read_only) : path_(path) {
  const int flags = read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw InputError(path, "results store", "an SQLite database that can be opened", message);
  }
  sqlite3_busy_timeout(db_, 60000);
  try {
    if (!read_only) {
      exec("PRAGMA journal_mode=WAL");
      exec("PRAGMA synchronous=NORMAL");
    }
    open_schema(read_only);
  } catch (const InputError&) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  } catch (const std::exception& e) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw InputError(path, "results store", "a sweep results database (table `results`)", e.what());
  }
}

void ResultStore::open_schema(bool read_only) {
  const auto integer_of = [&](const std::string& sql) {
    Statement s(db_, sql);
    return s.step() ? sqlite3_column_int64(s.get(), 0) : std::int64_t{0};
  };
  const bool table = integer_of("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'results'") > 0;
  std::int64_t version = integer_of("PRAGMA user_version");
  if (!read_only && !table) {
    exec("BEGIN IMMEDIATE");
    try {
      exec(kCreateTable);
      exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
      exec("COMMIT");
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
    version = kSchemaVersion;
  }
  if (version < 0 || version > kSchemaVersion) {
    throw InputError(path_, "results store", "schema version 0 or 1 (PRAGMA user_version)",
                     std::to_string(version) +
                         (version > kSchemaVersion ? " (written by a newer subevict: read it with that version)" : ""));
  }
  version_ = int(version);
  // The declared type of `layers` tells the schemas apart; a file whose type disagrees with its
  // version was not written by subevict. (Statements are finalized before migrate() drops the table.)
  {
    Statement columns(db_, "SELECT type FROM pragma_table_info('results') WHERE name = 'layers'");
    const std::string layers_type = columns.step() ? column_text(columns.get(), 0) : "";
    const char* expected = version_ == 0 ? "INTEGER" : "TEXT";
    if (table && layers_type != expected) {
      throw InputError(path_, "results store",
                       std::string("column layers of type ") + expected + " in schema version " +
                           std::to_string(version_),
                       layers_type.empty() ? "no column layers" : layers_type);
    }
    Statement check(db_, "SELECT " + column_list() + " FROM results LIMIT 0");
  }
  if (!read_only && version_ == 0) migrate();
}

void ResultStore::migrate() {
  // One transaction: every row is read and checked as rows() reads a version-0 store (a row that
  // cannot be converted names the file, the row and the column, and leaves the file unchanged),
  // then the table is written again in the current schema.
  exec("BEGIN IMMEDIATE");
  try {
    const std::vector<ResultRow> old = rows();
    exec("DROP TABLE results");
    exec(kCreateTable);
    for (const ResultRow& row : old) (void)insert_row(row);
    exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
    exec("COMMIT");
  } catch (const InputError& e) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    std::string what = e.what();  // "PATH: row ...": the path is named once, first
    if (what.rfind(path_ + ": ", 0) == 0) what.erase(0, path_.size() + 2);
    throw InputError(path_, "results store", "rows that migrate to schema version " + std::to_string(kSchemaVersion) +
                                                 " (the file is unchanged; fix or remove the row, or rerun the sweep "
                                                 "into a new directory)",
                     what);
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  version_ = kSchemaVersion;
}

ResultStore::~ResultStore() { sqlite3_close(db_); }

void ResultStore::exec(const std::string& sql) const {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    const std::string message = error ? error : "unknown error";
    sqlite3_free(error);
    throw std::runtime_error("sqlite: " + path_ + ": " + message);
  }
}

std::set<std::string> ResultStore::ids() const {
  Statement s(db_, "SELECT id FROM results");
  std::set<std::string> out;
  while (s.step()) out.insert(column_text(s.get(), 0));
  return out;
}

bool ResultStore::insert_row(const ResultRow& row) {
  std::string sql = "INSERT OR IGNORE INTO results VALUES (";
  for (std::size_t c = 0; c < ResultRow::columns().size(); ++c) sql += c ? ", ?" : "?";
  Statement s(db_, sql + ")");
  sqlite3_stmt* st = s.get();
  const JobResult& r = row.result;
  sqlite3_bind_text(st, 1, row.id.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, row.params.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 3, row.preset.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 4, row.tokens);
  sqlite3_bind_text(st, 5, row.layers.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 6, row.seed);
  sqlite3_bind_text(st, 7, row.policy.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 8, row.budget_kind.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(st, 9, row.budget_value);
  sqlite3_bind_text(st, 10, row.optimum.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 11, r.groups);
  sqlite3_bind_int(st, 12, r.budget_size);
  sqlite3_bind_double(st, 13, r.mean_retained_mass);
  sqlite3_bind_double(st, 14, r.mean_total_variation);
  sqlite3_bind_double(st, 15, r.mean_output_error);
  sqlite3_bind_int(st, 16, r.uncompressed_groups);
  bind_optional(st, 17, r.optimum_mean_retained_mass);
  bind_optional(st, 18, r.oracle_mean_retained_mass);
  bind_optional(st, 19, r.ratio_to_optimum);
  s.step();
  return sqlite3_changes(db_) == 1;
}

bool ResultStore::insert(const ResultRow& row) {
  exec("BEGIN IMMEDIATE");
  try {
    const bool added = insert_row(row);
    exec("COMMIT");
    return added;
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

std::vector<ResultRow> ResultStore::rows() const {
  Statement s(db_, "SELECT " + column_list() + " FROM results ORDER BY id");
  std::vector<ResultRow> out;
  while (s.step()) {
    sqlite3_stmt* st = s.get();
    ResultRow row;
    row.id = column_text(st, 0);
    row.params = column_text(st, 1);
    row.preset = column_text(st, 2);
    constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
    row.tokens = column_int(st, 3, 1, kIntMax, path_, row.id);
    row.layers = version_ == 0
                     ? version0_layer_set(column_int(st, 4, 1, kIntMax, path_, row.id), row.params, path_, row.id)
                     : column_layer_set(st, 4, path_, row.id);
    row.seed = sqlite3_column_int64(st, 5);
    row.policy = column_text(st, 6);
    row.budget_kind = column_text(st, 7);
    row.budget_value = sqlite3_column_double(st, 8);
    row.optimum = column_text(st, 9);
    JobResult& r = row.result;
    r.groups = column_int(st, 10, 1, kIntMax, path_, row.id);
    r.budget_size = column_int(st, 11, 1, row.tokens, path_, row.id, " (budget_size <= tokens)");
    r.mean_retained_mass = sqlite3_column_double(st, 12);
    r.mean_total_variation = sqlite3_column_double(st, 13);
    r.mean_output_error = sqlite3_column_double(st, 14);
    r.uncompressed_groups = column_int(st, 15, 0, r.groups, path_, row.id, " (uncompressed_groups <= groups)");
    r.optimum_mean_retained_mass = column_optional(st, 16);
    r.oracle_mean_retained_mass = column_optional(st, 17);
    r.ratio_to_optimum = column_optional(st, 18);
    out.push_back(std::move(row));
  }
  return out;
}

int ResultStore::merge(const std::string& other) {
  // Read through a store of its own: it throws, naming the file, unless it is a sweep store, and
  // reads a version-0 file's rows in the current schema without changing the file.
  const std::vector<ResultRow> rows = ResultStore(other, true).rows();
  int added = 0;
  exec("BEGIN IMMEDIATE");
  try {
    for (const ResultRow& row : rows) added += insert_row(row) ? 1 : 0;
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return added;
}

std::string ResultStore::integrity_check() const {
  Statement s(db_, "PRAGMA integrity_check");
  std::string out;
  while (s.step()) {
    if (!out.empty()) out += '\n';
    out += column_text(s.get(), 0);
  }
  return out;
}

}  // namespace subevict::sweep
