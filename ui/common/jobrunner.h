// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/cancellation.h"

#include <QCoreApplication>
#include <QObject>
#include <QPointer>
#include <QThreadPool>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace headroom {

// What a job gives back: its value, or why there is none (the exception's message, or "cancelled").
template <typename T> struct JobOutcome {
    std::optional<T> value;
    std::string error;
    bool ok() const { return value.has_value(); }
};

// What the work sees: whether to stop, and a way to hand partial results (a summary before the details,
// progress) to the GUI thread; they are dropped when a newer job has started or the runner is gone.
class JobContext {
public:
    JobContext(Cancellation cancel, std::function<void(std::function<void()>)> post)
        : m_cancel(std::move(cancel)), m_post(std::move(post)) {}
    const Cancellation& cancellation() const { return m_cancel; }
    bool cancelled() const { return m_cancel.cancelled(); }
    void post(std::function<void()> onGuiThread) const { m_post(std::move(onGuiThread)); }

private:
    Cancellation m_cancel;
    std::function<void(std::function<void()>)> m_post;
};

// The one way the window runs work off the GUI thread (reading traces, allocator replays, sweeps and
// what-ifs), after KDAB hotspot's job tracker: work runs on Qt's global thread pool; each start() begins a
// new generation, cancels the previous job and drops its result when it arrives; a result or an error (as
// a value: an exception never reaches the event loop) is delivered on the GUI thread to `done`. Destroying
// the runner cancels its job and never waits for it: the work owns what it reads (shared pointers), and
// its result is dropped.
class JobRunner : public QObject {
    Q_OBJECT
public:
    explicit JobRunner(QObject* parent = nullptr) : QObject(parent) {}
    ~JobRunner() override { m_cancel.cancel(); }

    // work(const JobContext&) -> T runs on a worker thread; done(JobOutcome<T>) on the GUI thread.
    template <typename Work, typename Done> void start(Work work, Done done) {
        using T = std::decay_t<decltype(work(std::declval<const JobContext&>()))>;
        m_cancel.cancel();
        m_cancel = Cancellation();
        const quint64 generation = ++m_generation;
        if (m_running++ == 0)
            emit busyChanged(true);
        QPointer<JobRunner> self(this);
        auto post = [self, generation](std::function<void()> f) {
            QMetaObject::invokeMethod(
                QCoreApplication::instance(),
                [self, generation, f = std::move(f)] {
                    if (self && self->m_generation == generation)
                        f();
                },
                Qt::QueuedConnection);
        };
        JobContext context(m_cancel, post);
        QThreadPool::globalInstance()->start(
            [self, generation, context, work = std::move(work), done = std::move(done)]() mutable {
                auto outcome = std::make_shared<JobOutcome<T>>();
                try {
                    context.cancellation().check();
                    outcome->value.emplace(work(context));
                } catch (const std::exception& e) {
                    outcome->error = e.what();
                } catch (...) {
                    outcome->error = "unknown error";
                }
                QMetaObject::invokeMethod(
                    QCoreApplication::instance(),
                    [self, generation, outcome, done = std::move(done)]() mutable {
                        if (!self)
                            return;
                        self->finished(generation);
                        if (self->m_generation == generation)
                            done(std::move(*outcome));
                    },
                    Qt::QueuedConnection);
            });
    }

    // Asks the running job to stop: `done` then gets its outcome, "cancelled" unless it had finished.
    void cancel() { m_cancel.cancel(); }
    // Cancels the running job and drops whatever it gives back.
    void discard() {
        m_cancel.cancel();
        ++m_generation;
    }
    bool busy() const { return m_running > 0; }
    quint64 generation() const { return m_generation; }
    // For tests and headless screenshots: runs the event loop until no job of this runner is running.
    bool waitForIdle(int timeoutMs = 120000);

signals:
    void busyChanged(bool busy);

private:
    void finished(quint64) {
        if (--m_running == 0)
            emit busyChanged(false);
    }

    Cancellation m_cancel;
    quint64 m_generation = 0;
    int m_running = 0;
};

} // namespace headroom
