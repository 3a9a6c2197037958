// SHA-256 of inputs for the manifests (SPEC.md "Contracts every stage keeps": a manifest
// beside every output names each input with its SHA-256), computed while a reader reads the
// file rather than in a second pass over it.
//
// A reader that streams a whole file feeds its blocks to a Sha256Hasher and, at the end,
// calls RememberFileSha256 with the open file: Sha256OfFile (util/output.h) then returns the
// remembered hash without reading the file again, as long as the file is the same one with
// the same size and modification and status-change times (any write changes them); otherwise
// it reads and hashes the file as before.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace wattcal {

// Incremental SHA-256 (OpenSSL EVP).
class Sha256Hasher {
 public:
  Sha256Hasher();
  ~Sha256Hasher();
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;

  void Update(const void* data, size_t size);
  // Finishes the hash and returns it as 64 lower-case hex digits. Call once.
  std::string HexDigest();

 private:
  void* context_;  // EVP_MD_CTX
};

// One state of one file: device, inode, size, modification and status-change times (ns).
struct FileStamp {
  uint64_t device = 0, inode = 0;
  int64_t size = 0, mtime_s = 0, mtime_ns = 0, ctime_s = 0, ctime_ns = 0;
  bool operator<(const FileStamp& o) const;
  bool operator==(const FileStamp& o) const;
  bool operator!=(const FileStamp& o) const { return !(*this == o); }
};

// Hashes a file while a reader streams it from its first byte to its end, and remembers the
// hash for Sha256OfFile when the file did not change while it was read.
class FileReadHasher {
 public:
  // `fd`: the file just opened, nothing read yet (its state is noted now).
  explicit FileReadHasher(int fd);
  // The next bytes read, in order.
  void Update(const void* data, size_t size);
  // At the end of the file: the hex digest. It is remembered (RememberedFileSha256) when `fd`
  // is a regular file whose device, inode, size, modification and status-change times are
  // those noted at the start and whose size is the count of bytes hashed.
  std::string Finish(int fd);

 private:
  Sha256Hasher hasher_;
  bool have_start_ = false;
  FileStamp start_;  // the file's state at the start
  uint64_t bytes_ = 0;
};

// Runs a FileReadHasher's Update on a second thread, so that hashing is off the reader's
// critical path. The reader hands over blocks in file order (Submit) and must leave a block's
// bytes unchanged until it has been hashed (WaitUntilHashed with its submission number + 1);
// a reader with a ring of R reused buffers waits for block n - R + 1 before reading block n
// into the buffer of block n - R. Nothing is allocated per block. The digest is the same as
// hashing the blocks in the calling thread.
class BackgroundHasher {
 public:
  // Starts the thread; `hasher` must outlive this object.
  explicit BackgroundHasher(FileReadHasher* hasher);
  // Stops the thread (blocks not yet hashed are dropped: a reader that stops early remembers
  // no hash) and joins it.
  ~BackgroundHasher();
  BackgroundHasher(const BackgroundHasher&) = delete;
  BackgroundHasher& operator=(const BackgroundHasher&) = delete;

  // Queues the next block of the file; at most kMaxQueued blocks wait at a time (the reader's
  // ring is at least that large, so Submit never waits in practice).
  void Submit(const char* data, size_t size);
  // Waits until the first `count` blocks submitted have been hashed.
  void WaitUntilHashed(uint64_t count);
  // Blocks submitted so far.
  uint64_t submitted() const { return submitted_; }

  static constexpr size_t kMaxQueued = 16;

 private:
  void Run();

  FileReadHasher* hasher_;
  std::mutex mutex_;
  std::condition_variable wake_worker_, wake_reader_;
  struct Block {
    const char* data = nullptr;
    size_t size = 0;
  };
  Block queue_[kMaxQueued];  // block n at queue_[n % kMaxQueued] until hashed
  uint64_t submitted_ = 0;   // written by the reader only (under mutex_)
  uint64_t hashed_ = 0;      // written by the worker only (under mutex_)
  bool stop_ = false;
  std::thread worker_;
};

// The remembered hash of the file at `path` when it is still the file that was hashed (same
// device, inode, size, modification and status-change times); false otherwise.
bool RememberedFileSha256(const std::string& path, std::string* sha256_hex);

// Forgets every remembered hash (tests).
void ForgetFileSha256s();

}  // namespace wattcal
