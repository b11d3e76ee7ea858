#include <ctrainer/trainer/runtime/large_buffer_cache.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

namespace ctrainer {

namespace {

// One lock and one owner table for every instance: a DataPtr's deleter receives only the data
// pointer (its context is the pointer itself, as the default allocator's, so raw_allocate and
// is_simple_data_ptr keep working), and finds its cache here. Both are never destroyed, so
// tensors freed during static destruction still find them.
std::mutex& cache_mutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}

/// Live large block -> the cache that owns it (nullptr: its cache was destroyed first).
std::unordered_map<void*, LargeBufferCache*>& block_owners() {
  static auto* owners = new std::unordered_map<void*, LargeBufferCache*>;
  return *owners;
}

std::atomic<LargeBufferCache*> g_installed{nullptr};

size_t round_up(size_t bytes, size_t multiple) {
  return (bytes + multiple - 1) / multiple * multiple;
}

}  // namespace

LargeBufferCache::LargeBufferCache(size_t min_block_bytes)
    : min_block_bytes_(std::max<size_t>(min_block_bytes, 1)) {}

LargeBufferCache::~LargeBufferCache() {
  std::lock_guard<std::mutex> lock(cache_mutex());
  while (!cached_by_age_.empty()) evict_oldest();
  for (const auto& [data, bytes] : live_) block_owners()[data] = nullptr;
}

c10::DataPtr LargeBufferCache::allocate(size_t bytes) {
  if (bytes < min_block_bytes_) return c10::GetDefaultCPUAllocator()->allocate(bytes);
  const size_t wanted = round_up(bytes, kRoundingBytes);
  std::lock_guard<std::mutex> lock(cache_mutex());
  void* data = nullptr;
  size_t block_bytes = 0;
  // The smallest cached block that fits, if it wastes at most an eighth of the request, or
  // whatever it wastes when a new block would first need an eviction: a block handed out from
  // the cache moves from cached to live, so live + cached, and with it the bound, is unchanged
  // (and live + block <= live + cached <= the peak of live), where evicting and allocating
  // would have the kernel zero the new block's pages. Without this, GPT-2's 196 MiB logits and
  // 147 MiB embedding gradient evicted each other every step.
  const auto fit = cached_by_size_.lower_bound(wanted);
  const size_t allowed = std::max(stats_.peak_live_bytes, stats_.live_bytes + wanted);
  const bool needs_eviction = stats_.live_bytes + stats_.cached_bytes + wanted > allowed;
  if (fit != cached_by_size_.end() && (fit->first <= wanted + wanted / 8 || needs_eviction)) {
    data = fit->second->data;
    block_bytes = fit->first;
    cached_by_age_.erase(fit->second);
    cached_by_size_.erase(fit);
    stats_.cached_bytes -= block_bytes;
    ++stats_.hits;
  } else {
    // Keep live + cached + new within the peak a cache-less process would reach.
    while (!cached_by_age_.empty() && stats_.live_bytes + stats_.cached_bytes + wanted > allowed)
      evict_oldest();
    data = c10::alloc_cpu(wanted);  // throws c10::Error when the system has no memory left
    block_bytes = wanted;
    ++stats_.misses;
  }
  live_.emplace(data, block_bytes);
  block_owners()[data] = this;
  stats_.live_bytes += block_bytes;
  stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, stats_.live_bytes);
  return {data, data, &LargeBufferCache::free_any, c10::Device(c10::DeviceType::CPU)};
}

bool LargeBufferCache::give_back(void* data) {
  const auto live = live_.find(data);
  if (live == live_.end()) return false;
  const size_t bytes = live->second;
  live_.erase(live);
  stats_.live_bytes -= bytes;
  cached_by_age_.push_back({data, bytes});
  cached_by_size_.emplace(bytes, std::prev(cached_by_age_.end()));
  stats_.cached_bytes += bytes;
  return true;
}

void LargeBufferCache::evict_oldest() {
  const CachedBlock oldest = cached_by_age_.front();
  auto [first, last] = cached_by_size_.equal_range(oldest.bytes);
  for (auto it = first; it != last; ++it) {
    if (it->second == cached_by_age_.begin()) {
      cached_by_size_.erase(it);
      break;
    }
  }
  cached_by_age_.pop_front();
  block_owners().erase(oldest.data);
  stats_.cached_bytes -= oldest.bytes;
  ++stats_.evictions;
  c10::free_cpu(oldest.data);
}

void LargeBufferCache::free_any(void* data) {
  if (data == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(cache_mutex());
    const auto owner = block_owners().find(data);
    if (owner != block_owners().end()) {
      if (owner->second != nullptr && owner->second->give_back(data)) return;
      block_owners().erase(owner);  // its cache is gone: free it as it was allocated
      c10::free_cpu(data);
      return;
    }
  }
  // A small buffer: the default allocator's (raw_deallocate of a small raw_allocate).
  c10::GetDefaultCPUAllocator()->raw_deleter()(data);
}

c10::DeleterFnPtr LargeBufferCache::raw_deleter() const {
  return &LargeBufferCache::free_any;
}

void LargeBufferCache::copy_data(void* dest, const void* src, std::size_t count) const {
  default_copy_data(dest, src, count);
}

LargeBufferCacheStats LargeBufferCache::stats() const {
  std::lock_guard<std::mutex> lock(cache_mutex());
  return stats_;
}

void LargeBufferCache::release_cached() {
  std::lock_guard<std::mutex> lock(cache_mutex());
  while (!cached_by_age_.empty()) evict_oldest();
}

bool install_large_buffer_cache() {
  static const bool installed = [] {
    const char* defaults = std::getenv("CTRAINER_MALLOC_DEFAULTS");
    if (defaults != nullptr && std::string(defaults) != "0") return false;
    // Someone else's allocator (a profiler's, a user's) stays; so does a second install.
    if (c10::GetCPUAllocator() != c10::GetDefaultCPUAllocator()) return false;
    auto* cache = new LargeBufferCache();  // never destroyed: tensors outlive main()
    // Priority 0, the default allocator's: any allocator registered above it keeps serving.
    c10::SetCPUAllocator(cache, /*priority=*/0);
    if (c10::GetCPUAllocator() != cache) return false;
    g_installed = cache;
    return true;
  }();
  return installed;
}

LargeBufferCache* installed_large_buffer_cache() {
  return g_installed.load();
}

}  // namespace ctrainer
