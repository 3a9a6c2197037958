#include "util/output.h"

#include "util/json_check.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <boost/filesystem.hpp>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "util/errors.h"

namespace fs = boost::filesystem;

namespace wattcal {

const char* WattcalVersion() { return WATTCAL_VERSION; }

std::string Sha256OfFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw InputError(path, 0, "", "cannot open file for reading");
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  std::vector<unsigned char> buffer(1 << 16);
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), f)) > 0) {
    EVP_DigestUpdate(ctx, buffer.data(), n);
  }
  std::fclose(f);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx, digest, &length);
  EVP_MD_CTX_free(ctx);
  static const char* kHex = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

OutputSet::~OutputSet() {
  if (committed_) return;
  for (const auto& [final_path, temp] : staged_) {
    boost::system::error_code ec;
    fs::remove(temp, ec);
  }
}

std::string OutputSet::Stage(const std::string& final_path) {
  for (const auto& entry : staged_) {
    if (entry.first == final_path) return entry.second;
  }
  const fs::path target(final_path);
  if (target.has_parent_path()) {
    boost::system::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec) throw OptionError("cannot create directory " + target.parent_path().string() + ": " +
                              ec.message());
  }
  std::string temp = final_path + ".tmp." + std::to_string(getpid());
  staged_.emplace_back(final_path, temp);
  return temp;
}

void OutputSet::StageText(const std::string& final_path, const std::string& content) {
  const std::string temp = Stage(final_path);
  std::ofstream out(temp, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) throw OptionError("cannot write " + final_path);
}

const std::string& OutputSet::TempPathOf(const std::string& final_path) const {
  for (const auto& entry : staged_) {
    if (entry.first == final_path) return entry.second;
  }
  throw std::logic_error("OutputSet: " + final_path + " was not staged");
}

void OutputSet::StageManifest(const std::string& final_path, const std::string& stage,
                              const std::vector<std::string>& inputs,
                              const nlohmann::json& options) {
  nlohmann::json manifest;
  manifest["wattcal_version"] = WattcalVersion();
  manifest["stage"] = stage;
  manifest["output"] = {{"path", final_path}, {"sha256", Sha256OfFile(TempPathOf(final_path))}};
  nlohmann::json input_list = nlohmann::json::array();
  for (const std::string& input : inputs) {
    input_list.push_back({{"path", input},
                          {"sha256", Sha256OfFile(input)},
                          {"bytes", static_cast<uint64_t>(fs::file_size(input))}});
  }
  manifest["inputs"] = input_list;
  manifest["options"] = options;
  StageText(final_path + ".manifest.json", DumpJson(manifest));
}

void OutputSet::Commit() {
  for (const auto& [final_path, temp] : staged_) {
    boost::system::error_code ec;
    fs::rename(temp, final_path, ec);
    if (ec) throw OptionError("cannot move " + temp + " onto " + final_path + ": " + ec.message());
  }
  committed_ = true;
}

std::string DumpJson(const nlohmann::json& value) {
  CheckJsonNumbersFinite(value);  // never a silent `null` for NaN or infinity
  return value.dump(2) + "\n";
}

}  // namespace wattcal
