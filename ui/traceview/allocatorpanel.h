// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/allocator/replay.h"
#include "core/trace/traceloadjob.h"
#include "ui/common/chartstyle.h"

#include <QWidget>
#include <memory>
#include <vector>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSpinBox;
class QTimer;

namespace headroom {

// Draws a replay's reserved bytes over the recording's (event index on x), the device capacity and the
// predicted OOMs. Envelopes are computed once per result, so a paint is a few hundred line segments.
class ReservedPlot : public QWidget {
    Q_OBJECT
public:
    explicit ReservedPlot(QWidget* parent = nullptr);
    void setSeries(const std::vector<std::uint64_t>& recorded, const std::vector<std::uint64_t>& predicted,
                   const std::vector<std::size_t>& ooms, std::uint64_t capacity);
    void setStyle(const ChartStyle& style);
    QSize sizeHint() const override { return {360, 160}; }

protected:
    void paintEvent(QPaintEvent*) override;

private:
    struct Envelope {
        std::vector<float> low, high; // per column
    };
    static Envelope envelope(const std::vector<std::uint64_t>& v, std::size_t columns);
    Envelope m_recorded, m_predicted;
    std::vector<double> m_ooms; // as fractions of the event range
    std::size_t m_events = 0;
    double m_top = 1;
    double m_capacity = 0;
    ChartStyle m_style;
};

// "Allocator settings": replays the selected lane's snapshot through the caching-allocator model under
// the recorded settings (checked against the recording) and under the settings chosen here, then shows
// the predicted reserved timeline over the recorded one, peak and fragmentation before and after, and
// OOMs predicted or avoided. Replays run off the GUI thread.
class JobRunner;

class AllocatorPanel : public QWidget {
    Q_OBJECT
public:
    explicit AllocatorPanel(QWidget* parent = nullptr);
    ~AllocatorPanel() override;
    // The lane to replay: a loaded trace and one of its devices.
    void setDevice(std::shared_ptr<const LoadedTrace> trace, std::size_t device);
    void setStyle(const ChartStyle& style);
    AllocatorSettings settings() const;
    // Runs the event loop until the replay in flight (if any) has been shown: for tests and screenshots.
    void waitForResult();
    // Whether a replay is running (a new setting cancels it and starts another).
    bool busy() const;
    const DeviceWhatIf* result() const { return m_result ? &*m_result : nullptr; }
    QLabel* resultText() const { return m_text; }

signals:
    void resultShown();

private:
    void schedule();
    void start();
    void show(DeviceWhatIf w);

    std::shared_ptr<const LoadedTrace> m_trace;
    std::size_t m_device = 0;
    JobRunner* m_runner = nullptr;
    std::optional<DeviceWhatIf> m_result;
    ChartStyle m_style;
    QCheckBox* m_expandable = nullptr;
    QSpinBox* m_maxSplit = nullptr;
    QComboBox* m_divisions = nullptr;
    QDoubleSpinBox* m_gc = nullptr;
    QDoubleSpinBox* m_fraction = nullptr;
    QDoubleSpinBox* m_capacity = nullptr;
    QLabel* m_text = nullptr;
    ReservedPlot* m_plot = nullptr;
    QTimer* m_debounce = nullptr;
};

} // namespace headroom
