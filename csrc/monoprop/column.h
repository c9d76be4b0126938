// A growable array of trivially copyable values whose large allocations are
// mapped pages that grow in place.
//
// A store grows to millions of terms one layer at a time. std::vector grows by
// allocating a larger block and copying, so for a moment it holds both: the
// peak resident memory of a long build is set by those moments. A Column
// above kMapped bytes is an anonymous mapping that mremap extends (moving page
// tables, not data), so growing never holds two copies, and pages reserved
// beyond the size are never touched, so they cost no resident memory.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace monoprop {

template <typename T>
class Column {
  static_assert(std::is_trivially_copyable_v<T>, "a Column holds plain values");

 public:
  Column() = default;
  explicit Column(std::size_t n, T fill = T{}) { resize(n, fill); }
  Column(const Column& other) { append(other.data(), other.size()); }
  Column(Column&& other) noexcept { swap(other); }
  Column& operator=(const Column& other) {
    if (this != &other) {
      size_ = 0;
      append(other.data(), other.size());
    }
    return *this;
  }
  Column& operator=(Column&& other) noexcept {
    Column(std::move(other)).swap(*this);
    return *this;
  }
  ~Column() { release(); }

  void swap(Column& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
  }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }

  // Bytes reserved; of a mapping, only the touched pages are resident.
  std::size_t bytes() const { return capacity_ * sizeof(T); }

  void reserve(std::size_t n) {
    if (n > capacity_) reallocate(std::max(n, capacity_ + capacity_ / 2 + 16));
  }
  // reserve(n), asking for 2 MB pages where the block is a large mapping: an
  // array written at random places (a replay's coefficients) then costs far
  // fewer TLB misses. Pages already touched keep their size.
  void reserve_huge(std::size_t n) {
    reserve(n);
    if (capacity_ * sizeof(T) >= kHuge) madvise(data_, page_round(capacity_ * sizeof(T)), MADV_HUGEPAGE);
  }
  void push_back(const T& value) {
    if (size_ == capacity_) reserve(size_ + 1);
    data_[size_++] = value;
  }
  // push_back where reserve() made room already: no check, and no call that
  // would make a hot loop reload what it holds in registers.
  void push_reserved(const T& value) { data_[size_++] = value; }
  void append(const T* values, std::size_t n) {
    reserve(size_ + n);
    if (n) std::memcpy(static_cast<void*>(data_ + size_), values, n * sizeof(T));
    size_ += n;
  }
  void resize(std::size_t n, T fill = T{}) {
    reserve(n);
    std::fill(data_ + std::min(size_, n), data_ + n, fill);
    size_ = n;
  }
  // Grows to n elements without writing the new ones: for a caller that
  // writes each of them before anything reads it.
  void extend(std::size_t n) {
    reserve(n);
    size_ = std::max(size_, n);
  }
  void assign(std::size_t n, T fill) {
    size_ = 0;
    resize(n, fill);
  }
  void clear() { size_ = 0; }
  // Gives the memory back (the size becomes 0).
  void release() {
    free_block(data_, capacity_ * sizeof(T));
    data_ = nullptr;
    size_ = capacity_ = 0;
  }
  void shrink_to_fit() {
    if (size_ == 0) return release();
    if (size_ < capacity_) reallocate(size_);
  }

 private:
  // Below this many bytes a block comes from malloc (no page rounding).
  static constexpr std::size_t kMapped = std::size_t{1} << 16;
  static constexpr std::size_t kHuge = std::size_t{1} << 22;  // two huge pages

  static std::size_t page_round(std::size_t bytes) {
    constexpr std::size_t page = 4096;
    return (bytes + page - 1) & ~(page - 1);
  }
  static void free_block(T* p, std::size_t bytes) {
    if (p == nullptr) return;
    if (bytes >= kMapped)
      munmap(p, page_round(bytes));
    else
      std::free(p);
  }
  void reallocate(std::size_t capacity) {
    const std::size_t old_bytes = capacity_ * sizeof(T), new_bytes = capacity * sizeof(T);
    void* p = nullptr;
    if (new_bytes >= kMapped && old_bytes >= kMapped) {
      p = mremap(data_, page_round(old_bytes), page_round(new_bytes), MREMAP_MAYMOVE);
      if (p == MAP_FAILED) throw std::bad_alloc();
    } else if (new_bytes >= kMapped) {
      p = mmap(nullptr, page_round(new_bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      if (size_) std::memcpy(p, data_, size_ * sizeof(T));
      free_block(data_, old_bytes);
    } else {
      if (old_bytes >= kMapped) {  // shrinking out of a mapping
        p = std::malloc(new_bytes);
        if (p == nullptr) throw std::bad_alloc();
        std::memcpy(p, data_, std::min(size_, capacity) * sizeof(T));
        free_block(data_, old_bytes);
      } else {
        p = std::realloc(data_, new_bytes);
        if (p == nullptr) throw std::bad_alloc();
      }
    }
    data_ = static_cast<T*>(p);
    // A mapping is whole pages: use all of them.
    capacity_ = new_bytes >= kMapped ? page_round(new_bytes) / sizeof(T) : capacity;
    size_ = std::min(size_, capacity_);
  }

  T* data_ = nullptr;
  std::size_t size_ = 0, capacity_ = 0;
};

}  // namespace monoprop
