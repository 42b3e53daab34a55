// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <sys/mman.h>
#include <vector>

namespace headroom {

// An allocator for the columns of a trace (tens of millions of values): blocks of 4 MiB and more are mapped
// straight from the kernel, aligned to 2 MiB and marked for transparent huge pages, so that filling them
// takes one page fault per 2 MiB instead of per 4 KiB. Reading a 10M-entry snapshot took 204,000 page
// faults, a quarter of its time on a virtual machine; with huge pages, 5,000 (perf record -e page-faults).
// Smaller blocks come from the usual heap. Where the kernel has THP off, madvise fails harmlessly.
// Under AddressSanitizer (the asan preset, the fuzzers) every block comes from the heap, which ASan guards:
// mapped blocks would be invisible to it.
#if defined(__SANITIZE_ADDRESS__)
#define HEADROOM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HEADROOM_ASAN 1
#endif
#endif

template <typename T> class HugePageAllocator {
public:
    using value_type = T;
#ifdef HEADROOM_ASAN
    static constexpr std::size_t kThreshold = static_cast<std::size_t>(-1);
#else
    static constexpr std::size_t kThreshold = std::size_t(4) << 20;
#endif
    static constexpr std::size_t kHugePage = std::size_t(2) << 20;

    HugePageAllocator() = default;
    template <typename U> HugePageAllocator(const HugePageAllocator<U>&) noexcept {}

    T* allocate(std::size_t n) {
        if (n > static_cast<std::size_t>(-1) / sizeof(T) / 2)
            throw std::bad_alloc();
        const std::size_t bytes = n * sizeof(T);
        if (bytes < kThreshold)
            return std::allocator<T>().allocate(n);
        const std::size_t length = mapped(bytes);
        // Map 2 MiB more than needed and trim both ends, so that the block starts on a 2 MiB boundary.
        void* raw =
            ::mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED)
            throw std::bad_alloc();
        const auto start = reinterpret_cast<std::uintptr_t>(raw);
        const std::uintptr_t aligned = (start + kHugePage - 1) & ~(kHugePage - 1);
        if (aligned > start)
            ::munmap(raw, aligned - start);
        const std::size_t tail = (start + length + kHugePage) - (aligned + length);
        if (tail > 0)
            ::munmap(reinterpret_cast<void*>(aligned + length), tail);
        ::madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);
        return reinterpret_cast<T*>(aligned);
    }
    void deallocate(T* p, std::size_t n) noexcept {
        const std::size_t bytes = n * sizeof(T);
        if (bytes < kThreshold)
            std::allocator<T>().deallocate(p, n);
        else
            ::munmap(p, mapped(bytes));
    }

private:
    static std::size_t mapped(std::size_t bytes) { return (bytes + kHugePage - 1) & ~(kHugePage - 1); }
};

template <typename T, typename U> bool operator==(const HugePageAllocator<T>&, const HugePageAllocator<U>&) {
    return true;
}

// A vector whose storage is a HugePageAllocator's: for the columns of traces and of what is built from them.
template <typename T> using BigVector = std::vector<T, HugePageAllocator<T>>;

} // namespace headroom
