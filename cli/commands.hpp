#pragma once
/// \file
/// Registration of the subevict subcommands. Each add_* function adds one subcommand to `app`
/// whose callback does the work; errors propagate as exceptions that main() turns into one line.

#include <CLI/CLI.hpp>

namespace subevict::cli {

/// `subevict workload generate|inspect`.
void add_workload_command(CLI::App& app);

/// `subevict verify`: runs the checks that exist on the built-in default workload.
void add_verify_command(CLI::App& app);

}  // namespace subevict::cli
