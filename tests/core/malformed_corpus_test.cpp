// Every file of tests/data/malformed (written by make_corpus.py) must be rejected with an
// InputError naming the file and containing the substring that manifest.tsv lists for it; the
// manifest must list every file of the directory, so a new corpus file cannot be forgotten.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "core/npy.hpp"
#include "core/safetensors.hpp"
#include "io_test_support.hpp"

namespace subevict {
namespace {

const std::string kCorpusDir = SUBEVICT_SOURCE_DIR "/tests/data/malformed";
const std::string kManifestHeader = "file\texpected_error_substring";
/// Files of the corpus directory that are not corpus entries.
const std::set<std::string> kNotCorpus = {"manifest.tsv", "make_corpus.py", "__pycache__"};
/// The brief's minimum per format.
constexpr std::size_t kMinFilesPerFormat = 12;

struct CorpusEntry {
  std::string file;
  std::string expected;
};

/// Shows the file name (not the struct's bytes) when a parameterized test fails.
void PrintTo(const CorpusEntry& entry, std::ostream* out) { *out << entry.file; }

std::vector<CorpusEntry> load_manifest() {
  std::ifstream in(kCorpusDir + "/manifest.tsv");
  std::vector<CorpusEntry> entries;
  std::string line;
  if (!std::getline(in, line) || line != kManifestHeader) return entries;
  while (std::getline(in, line)) {
    const auto tab = line.find('\t');
    if (tab == std::string::npos) {
      entries.push_back({line, "(malformed manifest line)"});
    } else {
      entries.push_back({line.substr(0, tab), line.substr(tab + 1)});
    }
  }
  return entries;
}

std::string test_name(const ::testing::TestParamInfo<CorpusEntry>& info) {
  std::string name = info.param.file;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

class MalformedCorpus : public ::testing::TestWithParam<CorpusEntry> {};

TEST_P(MalformedCorpus, IsRejectedWithTheExpectedMessage) {
  const CorpusEntry& entry = GetParam();
  const std::string path = kCorpusDir + "/" + entry.file;
  ASSERT_TRUE(std::filesystem::is_regular_file(path)) << path;
  const std::vector<std::string> parts = {entry.file, entry.expected};
  if (entry.file.ends_with(".npy")) {
    EXPECT_TRUE(testing::rejects([&] { read_npy<float>(path); }, parts));
    EXPECT_TRUE(testing::rejects([&] { read_npy<double>(path); }, parts));
    const auto bytes = testing::read_bytes(path);
    EXPECT_TRUE(testing::rejects([&] { parse_npy<float>(bytes, entry.file); }, parts));
  } else if (entry.file.ends_with(".safetensors")) {
    EXPECT_TRUE(testing::rejects([&] { read_safetensors(path); }, parts));
    const auto bytes = testing::read_bytes(path);
    EXPECT_TRUE(testing::rejects([&] { parse_safetensors(bytes, entry.file); }, parts));
  } else {
    FAIL() << entry.file << " has neither a .npy nor a .safetensors extension";
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, MalformedCorpus, ::testing::ValuesIn(load_manifest()), test_name);

TEST(MalformedCorpusManifest, ListsEveryFileOfTheDirectoryExactlyOnce) {
  std::multiset<std::string> listed;
  for (const CorpusEntry& entry : load_manifest()) listed.insert(entry.file);
  ASSERT_FALSE(listed.empty()) << "manifest.tsv missing or without its header line";
  std::multiset<std::string> present;
  for (const auto& item : std::filesystem::directory_iterator(kCorpusDir)) {
    const std::string name = item.path().filename().string();
    if (!kNotCorpus.contains(name)) present.insert(name);
  }
  EXPECT_EQ(listed, present) << "regenerate with tests/data/malformed/make_corpus.py";
}

TEST(MalformedCorpusManifest, CoversBothFormats) {
  std::size_t npy = 0, safetensors = 0;
  for (const CorpusEntry& entry : load_manifest()) {
    npy += entry.file.ends_with(".npy");
    safetensors += entry.file.ends_with(".safetensors");
  }
  EXPECT_GE(npy, kMinFilesPerFormat);
  EXPECT_GE(safetensors, kMinFilesPerFormat);
}

}  // namespace
}  // namespace subevict
