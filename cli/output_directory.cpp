#include "cli/output_directory.hpp"

#include <algorithm>
#include <iostream>
#include <set>
#include <span>
#include <vector>

#include "core/atomic_file.hpp"
#include "core/plot.hpp"
#include "core/staged_directory.hpp"

namespace subevict::cli {

std::string publish_directory(const std::string& dir, const std::map<std::string, std::string>& files, bool draw) {
  StagedDirectory staged(dir);
  std::vector<std::string> figures;
  for (const auto& [name, text] : files) {
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(text.data()), text.size());
    const std::span<const std::byte> chunks[] = {bytes};
    write_file_atomically((staged.path() / name).string(), chunks);
    if (name.size() > 3 && name.ends_with(".gp")) figures.push_back(name.substr(0, name.size() - 3));
  }
  std::set<std::string> drawn;
  if (draw) {
    const plot::Rendering rendering = plot::render(staged.path(), figures);
    if (!rendering.note.empty()) std::cerr << "subevict: warning: " << rendering.note << "\n";
    drawn.insert(rendering.drawn.begin(), rendering.drawn.end());
  }
  staged.publish();
  std::string listing;
  const auto add = [&](const std::string& item) { listing += (listing.empty() ? "" : ",") + item; };
  for (const auto& [name, text] : files) {
    const bool figure_part = name.ends_with(".gp") || name.ends_with(".dat");
    const std::string stem = figure_part ? name.substr(0, name.rfind('.')) : name;
    if (!figure_part || std::find(figures.begin(), figures.end(), stem) == figures.end()) {
      add(name);
    } else if (name.ends_with(".gp")) {
      add(stem + (drawn.count(stem) ? ".{dat,gp,svg,png}" : ".{dat,gp}"));
    }
  }
  return dir + "/{" + listing + "}";
}

}  // namespace subevict::cli
