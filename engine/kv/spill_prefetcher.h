// SpillPrefetcher: one background I/O thread that reads spilled KV blocks
// back from the spill file and decodes them into a staging buffer ahead of
// use, while the compute threads work on the chunk before (double
// buffering; kv_cache.h decides what to prefetch and where to).
//
// A job is a list of items (one encoded block each, with the raw bytes'
// destination). The thread claims items one at a time; Finish() lets the
// caller claim and decode the items the thread has not reached yet, so a
// caller that would otherwise wait decodes alongside it.
//
// Thread safety: Start, Finish, Cancel and busy are called by one owner
// thread (the KV cache's). The I/O thread touches only the spill file
// (SpillFile::Read, a pread(2) at offsets the owner no longer writes), the
// items' destinations and its own decoder; it publishes every result under
// the mutex, so after Finish or Cancel returns the destinations hold what
// was decoded and nothing of the job is in flight. REQUIRES: the spill file
// is not cleared or closed while busy() (Cancel first).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "ellm/base/status.h"
#include "kv/block_codec.h"
#include "kv/spill_file.h"

namespace ellm::kv {

class SpillPrefetcher {
 public:
  struct Item {
    uint64_t offset = 0;  // the encoded block in the spill file
    size_t bytes = 0;
    uint8_t* dst = nullptr;  // raw_bytes, untouched until the job runs
    int layer = 0;           // for error messages
    int64_t block = 0;
  };
  // Starts the thread. `raw_bytes`: every item's decoded size.
  SpillPrefetcher(const SpillFile* file, size_t raw_bytes);
  // Cancels any job (waiting for the item in flight) and joins the thread.
  ~SpillPrefetcher();
  SpillPrefetcher(const SpillPrefetcher&) = delete;
  SpillPrefetcher& operator=(const SpillPrefetcher&) = delete;

  // Queues a job. REQUIRES: !busy(), items non-empty.
  void Start(std::vector<Item> items);
  // True from Start until Finish or Cancel.
  bool busy() const { return busy_; }
  const std::vector<Item>& items() const { return items_; }

  struct Outcome {
    std::vector<Status> status;   // per item, in Start's order
    std::vector<bool> by_thread;  // per item: the I/O thread decoded it (else Finish did)
  };
  // Completes the job: decodes the items nobody has claimed on the calling
  // thread with `decoder`, waits for the thread's, and returns each item's
  // status (DATA_LOSS for a corrupt block, the read error for I/O).
  // REQUIRES: busy(). Afterwards !busy().
  Outcome Finish(BlockDecoder& decoder);
  // Abandons the job: items not yet claimed are skipped; waits for the one
  // in flight. No-op when !busy().
  void Cancel();
  // Waits until the thread has finished every item (tests only).
  void WaitForThreadForTest();

 private:
  void ThreadMain();
  // Reads and decodes item i into its dst.
  Status Decode(size_t i, BlockDecoder& decoder, std::vector<uint8_t>& enc) const;
  // Waits (holding `lock`) until every claimed item is done.
  void WaitClaimed(std::unique_lock<std::mutex>& lock);

  const SpillFile* file_;
  const size_t raw_bytes_;
  bool busy_ = false;                // owner-only
  std::vector<uint8_t> caller_enc_;  // owner-only: Finish's read buffer

  std::mutex mu_;
  std::condition_variable work_cv_;  // the thread waits for a job or stop
  std::condition_variable done_cv_;  // the owner waits for claimed items
  // Guarded by mu_:
  std::vector<Item> items_;  // written by the owner only while no item is claimed
  std::vector<Status> status_;
  std::vector<bool> by_thread_;
  size_t next_ = 0;   // next unclaimed item
  size_t limit_ = 0;  // items that may be claimed (Cancel lowers it)
  size_t done_ = 0;   // claimed items finished
  bool stop_ = false;

  std::thread thread_;  // last: starts after the fields above exist
};

}  // namespace ellm::kv
