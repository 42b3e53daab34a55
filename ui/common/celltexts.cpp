// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/common/celltexts.h"

namespace headroom {

CellTexts::CellTexts(const QAbstractItemModel& model, int rows)
    : m_rows(rows), m_columns(model.columnCount()) {
    m_texts.reserve(static_cast<std::size_t>(rows * m_columns));
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < m_columns; ++c)
            m_texts.push_back(model.data(model.index(r, c)).toString());
}

void CellTexts::forEachChange(const QAbstractItemModel& model,
                              const std::function<void(int, int, int)>& changed) const {
    for (int r = 0; r < m_rows; ++r) {
        int first = -1, last = -1;
        for (int c = 0; c < m_columns; ++c)
            if (model.data(model.index(r, c)).toString() != m_texts[std::size_t(r * m_columns + c)]) {
                first = first < 0 ? c : first;
                last = c;
            }
        if (first >= 0)
            changed(r, first, last);
    }
}

} // namespace headroom
