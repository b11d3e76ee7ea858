#pragma once
/// \file A CPU allocator that keeps freed tensor buffers of 32 MiB and more for reuse.
///
/// glibc serves a request of 32 MiB or more (its largest mmap threshold: keep_freed_memory() in
/// cpu_runtime.h cannot raise it further) with a fresh mmap and unmaps it on free, so the kernel
/// zeroes every page of it again on first touch. A GPT-2 124M step at 1024 tokens allocates
/// and frees such buffers every layer (12 × 1024 × 1024 attention scores and probabilities, the
/// 1024 × 50,257 logits): before this cache, zeroing pages (`clear_page_erms`) was the largest
/// single entry of its `perf` profile. The cache hands those buffers back instead.
#include <c10/core/Allocator.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <unordered_map>

namespace ctrainer {

/// Counters of one LargeBufferCache, in bytes of whole blocks.
struct LargeBufferCacheStats {
  size_t live_bytes = 0;       ///< blocks handed out and not yet freed
  size_t cached_bytes = 0;     ///< freed blocks kept for reuse
  size_t peak_live_bytes = 0;  ///< the most live_bytes ever reached
  int64_t hits = 0;            ///< requests served from the cache
  int64_t misses = 0;          ///< requests that allocated a new block
  int64_t evictions = 0;       ///< cached blocks given back to the system
};

/// A c10::Allocator for CPU tensors: requests below min_block_bytes go to libtorch's default CPU
/// allocator unchanged; larger ones are rounded up to 2 MiB and served from freed blocks of up to
/// 1/8 more bytes when the cache holds one, else from c10::alloc_cpu (64-byte aligned, as the
/// default allocator's). When a new block would need an eviction (below), the smallest cached
/// block that is large enough serves whatever it wastes: handing it out leaves live + cached
/// as it was, where evicting and allocating would have the kernel zero fresh pages.
///
/// The cache never makes the process's peak larger than it would be without it: before a new
/// block is allocated, cached blocks are freed (oldest first) until live + cached + the new
/// block is at most the larger of the peak of live blocks so far and live + the new block. So
/// the resident memory of these blocks stays at or below the peak of live ones, as with glibc's
/// kept heap (keep_freed_memory), and a training loop that repeats its allocations reuses all
/// of them from its second step on.
///
/// Thread-safe. Instances must outlive every buffer they hand out; the process-wide one
/// (install_large_buffer_cache) is never destroyed.
class LargeBufferCache final : public c10::Allocator {
 public:
  /// Rounding of large requests, as the CUDA caching allocator's kRoundLarge.
  static constexpr size_t kRoundingBytes = size_t{2} << 20;
  /// glibc's largest mmap threshold: smaller buffers come from its (kept) heap.
  static constexpr size_t kDefaultMinBlockBytes = size_t{32} << 20;

  explicit LargeBufferCache(size_t min_block_bytes = kDefaultMinBlockBytes);
  ~LargeBufferCache() override;

  c10::DataPtr allocate(size_t bytes) override;
  /// Frees both kinds of buffer: raw_allocate / raw_deallocate work as with the default.
  c10::DeleterFnPtr raw_deleter() const override;
  void copy_data(void* dest, const void* src, std::size_t count) const override;

  LargeBufferCacheStats stats() const;
  /// Gives every cached block back to the system (live blocks are untouched).
  void release_cached();

 private:
  struct CachedBlock {
    void* data;
    size_t bytes;
  };
  /// Returns a live block to the cache; false if `data` is not one of this cache's live blocks.
  bool give_back(void* data);
  void evict_oldest();
  static void free_any(void* data);

  size_t min_block_bytes_;
  LargeBufferCacheStats stats_;
  std::unordered_map<void*, size_t> live_;  ///< block start -> block bytes
  std::list<CachedBlock> cached_by_age_;    ///< oldest first
  std::multimap<size_t, std::list<CachedBlock>::iterator> cached_by_size_;
};

/// Makes a process-wide LargeBufferCache libtorch's CPU allocator, once (later calls return the
/// first call's answer). Skipped, as glibc's settings are, when CTRAINER_MALLOC_DEFAULTS is set to
/// anything but 0, and when another allocator than libtorch's default was installed. Returns
/// whether the cache serves CPU tensors now.
bool install_large_buffer_cache();

/// The cache install_large_buffer_cache() installed, or nullptr (also before the first call).
LargeBufferCache* installed_large_buffer_cache();

}  // namespace ctrainer
