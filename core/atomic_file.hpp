#pragma once
/// \file
/// Atomic file replacement (write a temporary file, flush it, rename it over the target), so a
/// crash or an error never leaves a partial file that looks complete. Used by every writer.

#include <cstddef>
#include <span>
#include <string>

namespace subevict {

/// Writes the concatenation of `chunks` to `path` atomically. The bytes go to the temporary file
/// `PATH.tmp.<pid>` in the same directory (so the rename cannot cross file systems), which is
/// flushed to disk (fsync), closed and renamed over `path`; the directory is then fsynced (best
/// effort). Readers see either the old file or the complete new one. On any failure the temporary
/// file is removed, an existing file at `path` is left untouched, and InputError(path, "output
/// file", ...) is thrown with the system's reason. A stale temporary file with the same name is
/// overwritten; two threads of one process must not write the same path at once.
void write_file_atomically(const std::string& path,
                           std::span<const std::span<const std::byte>> chunks);

}  // namespace subevict
