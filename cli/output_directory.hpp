#pragma once
/// \file
/// Atomic publication of a command's output files into a directory.

#include <map>
#include <string>

namespace subevict::cli {

/// Writes every file of `files` (name → contents) into a fresh temporary directory beside `dir`,
/// draws there, when `draw`, every figure NAME whose script NAME.gp is among `files`
/// (core/plot.hpp render: NAME.svg and NAME.png; a missing gnuplot or a failing script only warns
/// on stderr, saying which figures are missing), then moves each file into `dir` (created if
/// missing) with an atomic rename: a failure leaves `dir` as it was, and every file in it is
/// either the old or the new version. Throws InputError naming `dir` when the temporary directory
/// cannot be created. Returns what now exists, for the command's "wrote" line: "DIR/{a.csv,b.json,
/// FIG.{dat,gp,svg,png}}", each figure with .svg and .png only when they were drawn.
std::string publish_directory(const std::string& dir, const std::map<std::string, std::string>& files, bool draw);

}  // namespace subevict::cli
