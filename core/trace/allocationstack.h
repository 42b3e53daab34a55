// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/trace/traceindex.h"

#include <cstdint>
#include <vector>

namespace headroom {

// "Every allocation in its place", the drawing PyTorch's memory viewer made familiar (memory_viz's active
// memory timeline): the allocations stacked in the order they were made, each a band that moves down as those
// below it are freed. A view shows the largest allocations live in it as their own bands (the rest as one
// band at the bottom), so that zooming into one iteration shows that iteration's tensors, not the run's.
class AllocationStack {
public:
    AllocationStack() = default;
    // Sorts the allocations by size once (O(n log n); built off the GUI thread with the categories).
    explicit AllocationStack(const TraceIndex& index);

    struct Piece {
        std::uint32_t shown = 0; // index into Layout::shown
        std::int64_t bottom = 0, top = 0;
    };
    struct Layout {
        std::vector<std::uint32_t> shown; // allocation ids (into index.allocations()), by start
        // Column c's pieces are pieces[columnStart[c] .. columnStart[c + 1]); each column shows the state
        // after events[c] (its allocated peak), the unshown live bytes as 0..rest[c] below the pieces.
        std::vector<std::uint32_t> columnStart;
        std::vector<Piece> pieces;
        std::vector<std::int64_t> rest;
        std::vector<std::size_t> events;
    };
    // The layout of the columns whose events are given (kBeforeFirstEvent for a column outside the run),
    // showing at most `maxShown` allocations: the largest live at any of those moments' span [from, to].
    Layout layout(const std::vector<std::size_t>& events, std::size_t from, std::size_t to,
                  std::size_t maxShown) const;

    static constexpr std::size_t kDefaultShown = 400;

private:
    const TraceIndex* m_index = nullptr;
    std::vector<std::uint32_t> m_bySize; // allocation ids, largest first (ties: earlier first)
};

} // namespace headroom
