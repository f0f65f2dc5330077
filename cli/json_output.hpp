#pragma once
/// \file
/// JSON forms of core types, and atomic JSON file output for the CLI.

#include <nlohmann/json.hpp>
#include <string>

#include "core/shape.hpp"
#include "core/workload_stats.hpp"

namespace subevict::cli {

/// {"layers", "q_heads", "kv_heads", "tokens", "head_dim", "attention"}.
nlohmann::json to_json(const Shape& shape);

/// Every field of HeadStatistics under its C++ name.
nlohmann::json to_json(const HeadStatistics& stats);

/// Writes `doc` (pretty-printed) to `path` atomically: a failure leaves no file behind.
void write_json(const std::string& path, const nlohmann::json& doc);

/// Throws InputError naming `path` and `option` unless the directory `path` would be written in
/// exists (an empty `path` means no output and passes): long commands call it before the work, so
/// a mistyped output path fails at once rather than after the run.
void require_output_directory(const std::string& path, const std::string& option);

}  // namespace subevict::cli
