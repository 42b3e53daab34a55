// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/common/jobrunner.h"

#include <QDeadlineTimer>
#include <QEventLoop>

namespace headroom {

bool JobRunner::waitForIdle(int timeoutMs) {
    QDeadlineTimer deadline(timeoutMs);
    while (busy() && !deadline.hasExpired())
        QCoreApplication::processEvents(QEventLoop::AllEvents | QEventLoop::WaitForMoreEvents, 50);
    return !busy();
}

} // namespace headroom
