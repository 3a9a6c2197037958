#include "util/sha256.h"

#include <openssl/evp.h>
#include <sys/stat.h>

#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>

namespace wattcal {

Sha256Hasher::Sha256Hasher() : context_(EVP_MD_CTX_new()) {
  if (context_ == nullptr ||
      EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(context_), EVP_sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(context_));
    throw std::runtime_error("cannot initialise OpenSSL's SHA-256");
  }
}

Sha256Hasher::~Sha256Hasher() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(context_)); }

void Sha256Hasher::Update(const void* data, size_t size) {
  if (size > 0) EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(context_), data, size);
}

std::string Sha256Hasher::HexDigest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(context_), digest, &length);
  static const char* kHex = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

namespace {

FileStamp StampOf(const struct stat& st) {
  FileStamp s;
  s.device = static_cast<uint64_t>(st.st_dev);
  s.inode = static_cast<uint64_t>(st.st_ino);
  s.size = static_cast<int64_t>(st.st_size);
  s.mtime_s = static_cast<int64_t>(st.st_mtim.tv_sec);
  s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_nsec);
  s.ctime_s = static_cast<int64_t>(st.st_ctim.tv_sec);
  s.ctime_ns = static_cast<int64_t>(st.st_ctim.tv_nsec);
  return s;
}

auto Tie(const FileStamp& s) {
  return std::tie(s.device, s.inode, s.size, s.mtime_s, s.mtime_ns, s.ctime_s, s.ctime_ns);
}

std::mutex g_stamps_mutex;
std::map<FileStamp, std::string>& Remembered() {
  static std::map<FileStamp, std::string> remembered;
  return remembered;
}

}  // namespace

bool FileStamp::operator<(const FileStamp& o) const { return Tie(*this) < Tie(o); }
bool FileStamp::operator==(const FileStamp& o) const { return Tie(*this) == Tie(o); }

FileReadHasher::FileReadHasher(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    start_ = StampOf(st);
    have_start_ = true;
  }
}

void FileReadHasher::Update(const void* data, size_t size) {
  hasher_.Update(data, size);
  bytes_ += size;
}

std::string FileReadHasher::Finish(int fd) {
  std::string hex = hasher_.HexDigest();
  struct stat st {};
  if (!have_start_ || ::fstat(fd, &st) != 0) return hex;
  const FileStamp now = StampOf(st);
  if (now != start_ || static_cast<uint64_t>(st.st_size) != bytes_) {
    return hex;  // the file changed while it was read: Sha256OfFile reads it again
  }
  std::lock_guard<std::mutex> lock(g_stamps_mutex);
  Remembered()[now] = hex;
  return hex;
}

BackgroundHasher::BackgroundHasher(FileReadHasher* hasher) : hasher_(hasher) {
  worker_ = std::thread([this] { Run(); });
}

BackgroundHasher::~BackgroundHasher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_worker_.notify_one();
  worker_.join();
}

void BackgroundHasher::Submit(const char* data, size_t size) {
  std::unique_lock<std::mutex> lock(mutex_);
  wake_reader_.wait(lock, [&] { return submitted_ - hashed_ < kMaxQueued; });
  queue_[submitted_ % kMaxQueued] = {data, size};
  ++submitted_;
  lock.unlock();
  wake_worker_.notify_one();
}

void BackgroundHasher::WaitUntilHashed(uint64_t count) {
  std::unique_lock<std::mutex> lock(mutex_);
  wake_reader_.wait(lock, [&] { return hashed_ >= count; });
}

void BackgroundHasher::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_worker_.wait(lock, [&] { return stop_ || hashed_ < submitted_; });
    if (stop_) return;
    const Block block = queue_[hashed_ % kMaxQueued];
    lock.unlock();
    hasher_->Update(block.data, block.size);  // the reader leaves these bytes alone meanwhile
    lock.lock();
    ++hashed_;
    wake_reader_.notify_one();
  }
}

bool RememberedFileSha256(const std::string& path, std::string* sha256_hex) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  std::lock_guard<std::mutex> lock(g_stamps_mutex);
  const auto it = Remembered().find(StampOf(st));
  if (it == Remembered().end()) return false;
  *sha256_hex = it->second;
  return true;
}

void ForgetFileSha256s() {
  std::lock_guard<std::mutex> lock(g_stamps_mutex);
  Remembered().clear();
}

}  // namespace wattcal
