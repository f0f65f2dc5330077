#pragma once
/// \file
/// Sets of layer or head indices as users write them on the command line and in grid files:
/// a comma list of items, each an index N or an inclusive range A-B, e.g. "0,14,20-29"; or the
/// word "all". One parser for every --layers and --heads that selects (not counts).

#include <string>
#include <string_view>
#include <vector>

namespace subevict {

/// What an index set error names: the command or file, the flag or key, and the plural noun of
/// the indices ("layers", "KV heads").
struct IndexSetNames {
  std::string source;  ///< e.g. "simulate" or a grid file's path
  std::string flag;    ///< e.g. "--layers" or "[workload] layers"
  std::string noun;    ///< e.g. "layers"
};

/// The indices of `text` in [0, bound), sorted ascending, each once. `text` is "all" (every index
/// of [0, bound)) or a comma list of items "N" or "A-B" (decimal digits only, inclusive, A <= B);
/// spaces around an item are ignored. Throws InputError(names.source, names.flag, ...), quoting
/// the item the user typed and stating the valid range, for: an empty text or item, an item that
/// is not an index or range (a sign, a fraction, letters), a reversed range, an index >= bound,
/// and an index given twice (directly, or by overlapping items). O(|text| + bound).
[[nodiscard]] std::vector<int> parse_index_set(std::string_view text, int bound, const IndexSetNames& names);

/// The shortest text of `indices` in the grammar above: runs of two or more consecutive indices
/// as "A-B", others as "N", comma-separated ("" for none). Precondition: sorted ascending, each
/// once, non-negative. parse_index_set(format_index_set(s), bound, ...) == s for every such s
/// below bound.
[[nodiscard]] std::string format_index_set(const std::vector<int>& indices);

}  // namespace subevict
