// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/compare/compareactions.h"

#include "core/compare/calibration.h"
#include "core/io/attributionrulesjson.h"
#include "core/io/codeprofile.h"
#include "core/io/comparejson.h"
#include "core/io/scenariojson.h"
#include "core/plan/settingnames.h"
#include "ui/common/jobrunner.h"
#include "ui/compare/diffpage.h"
#include "ui/compare/fleetpage.h"
#include "ui/compare/scenariocomparepage.h"
#include "ui/planner/scenariodocument.h"
#include "ui/traceview/timelinewidget.h"
#include "ui/traceview/tracepage.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QPointer>
#include <QTabWidget>
#include <memory>

namespace headroom {

CompareActions::CompareActions(ScenarioDocument* doc, QTabWidget* tabs, std::function<ChartStyle()> style,
                               QObject* parent)
    : QObject(parent), m_doc(doc), m_tabs(tabs), m_style(std::move(style)),
      m_calibration(new JobRunner(this)) {
    connect(m_calibration, &JobRunner::busyChanged, this, &CompareActions::calibratingChanged);
}

void CompareActions::watch(TracePage* view) {
    // The trace view's own "Compare with Scenario...": the file is read and estimated here, not in the view.
    connect(view, &TracePage::scenarioFileChosen, this, [this, view](const QString& path) {
        try {
            const Scenario sc = loadScenarioFile(path.toStdString());
            view->setScenario(sc, estimate(sc), QFileInfo(path).fileName());
        } catch (const std::exception& e) {
            QMessageBox::warning(view, tr("Cannot open scenario"), QString::fromUtf8(e.what()));
        }
    });
}

ScenarioComparePage* CompareActions::compareScenarioFiles(const QStringList& paths, QString* error) {
    // The current plan first, then each file: the differences are from the plan on screen.
    std::vector<ScenarioComparePage::Entry> entries;
    const QString current =
        m_doc->filePath().isEmpty() ? tr("Current plan") : QFileInfo(m_doc->filePath()).fileName();
    entries.push_back({current, m_doc->scenario().settingsCopy(), m_doc->estimate()});
    for (const QString& path : paths) {
        try {
            Scenario sc = loadScenarioFile(path.toStdString());
            const Estimate est = estimate(sc);
            QString name = QFileInfo(path).fileName();
            name.remove(QStringLiteral(".headroom.json"));
            entries.push_back({name, std::move(sc), est});
        } catch (const std::exception& e) {
            if (error)
                *error = QString::fromUtf8(e.what());
            return nullptr;
        }
    }
    auto* view = new ScenarioComparePage(std::move(entries));
    view->setStyle(m_style());
    m_tabs->setCurrentIndex(m_tabs->addTab(view, view->title()));
    return view;
}

void CompareActions::compareWithPlanner(TracePage* view) {
    const QString name = m_doc->filePath().isEmpty() ? QString::fromStdString(m_doc->scenario().name)
                                                     : QFileInfo(m_doc->filePath()).fileName();
    view->setScenario(m_doc->scenario(), m_doc->estimate(), name);
}

void CompareActions::startCalibration(TracePage* view, FitAgainst against,
                                      std::function<void(const QString&, bool)> done) {
    if (!view || view->traces().empty()) {
        done(tr("Open the trace of a run of the planner's scenario first."), false);
        return;
    }
    const std::shared_ptr<const LoadedTrace> loaded = view->traces().front();
    if (loaded->indexes.empty()) {
        done(tr("This trace has no devices: nothing to calibrate from."), false);
        return;
    }
    const std::size_t device = busiestDevice(loaded->summary);
    // The fit reads its own copy of the scenario; the trace is shared and read-only.
    auto scenario = std::make_shared<const Scenario>(m_doc->scenario());
    const nlohmann::json document = m_doc->json();
    const QString file = QFileInfo(QString::fromStdString(loaded->path)).fileName();
    QPointer<TracePage> page(view);
    m_calibration->start(
        [loaded, device, scenario, against](const JobContext&) {
            return calibrate(
                {{scenario.get(), &loaded->trace, loaded->indexes.at(device).get(), loaded->path}},
                AttributionRules::pytorchDefaults(), {}, against);
        },
        [this, scenario, document, file, page, against, done](JobOutcome<CalibrationResult> outcome) {
            if (!outcome.ok()) {
                // A fit no scenario can hold (core/compare/calibration.cpp): the scenario stays as it was.
                done(tr("Not calibrated: %1").arg(QString::fromStdString(outcome.error)), false);
                return;
            }
            // Factors fitted to the plan as it was are not applied to another: the user edited it meanwhile.
            if (m_doc->json() != document) {
                done(tr("Not calibrated: the planner's scenario changed while %1 was being fitted; calibrate "
                        "again to fit the scenario as it is now.")
                         .arg(file),
                     false);
                return;
            }
            const CalibrationResult& r = *outcome.value;
            const nlohmann::json fitted = calibrationToJson(r);
            // One undoable step; every what-if starts from the calibrated estimate.
            m_doc->applyPatch({{"calibration", {{"factors", fitted["factors"]}, {"runs", fitted["runs"]}}}},
                              tr("Calibrate from %1").arg(file));
            if (page) // the trace tab may have been closed while it ran
                compareWithPlanner(page);
            done(calibrationMessage(r, *scenario, against), true);
        });
}

QString CompareActions::calibrateFrom(TracePage* view, bool* calibrated, FitAgainst against) {
    // Held by the callback too: a fit still running when the wait gives up is dropped, never written here.
    struct Said {
        QString text;
        bool fitted = false;
    };
    auto said = std::make_shared<Said>();
    startCalibration(view, against, [said](const QString& text, bool fitted) {
        said->text = text;
        said->fitted = fitted;
    });
    if (!m_calibration->waitForIdle(600000)) {
        m_calibration->discard();
        said->text = tr("Not calibrated: the fit did not finish in ten minutes.");
        said->fitted = false;
    }
    if (calibrated)
        *calibrated = said->fitted;
    return said->text;
}

bool CompareActions::calibrating() const {
    return m_calibration->busy();
}

QString CompareActions::calibrationMessage(const CalibrationResult& r, const Scenario& scenario,
                                           FitAgainst against) const {
    const CalibrationRun& run = r.runs.front();
    auto pct = [&](std::int64_t e) {
        return QString::number(100.0 * static_cast<double>(e - run.measured) /
                                   static_cast<double>(std::max<std::int64_t>(run.measured, 1)),
                               'f', 1);
    };
    auto reservedPct = [&](std::int64_t e) {
        return QString::number(100.0 * (static_cast<double>(e) / static_cast<double>(std::max<std::int64_t>(
                                                                     run.reservedMeasured, 1)) -
                                        1),
                               'f', 1);
    };
    const QString firstStep =
        run.firstStep ? tr("This trace records a first step, whose optimizer states appear only in its step: "
                           "the peak compared is what a later step would reach, %1. ")
                            .arg(m_style().format(static_cast<double>(run.measured)))
                      : QString();
    const QString gradients =
        r.factors.gradientsHeld
            ? tr("The run held every gradient through its forward (an earlier step's, not freed by "
                 "zero_grad), so the calibrated plan holds them too. ")
            : QString();
    const QString step =
        r.factors.stepScratchLargestTensors >= 0
            ? tr("Its optimizer step went one parameter at a time and held %1 tensors the size of its "
                 "largest parameter besides the states; a model of another size is planned with its own. ")
                  .arg(r.factors.stepScratchLargestTensors, 0, 'f', 1)
            : QString();
    // Eager attention's backward, the step's peak at long sequences: measured only where the run's score
    // tensors have no other tensor's size (Calibration::backwardScratchScores).
    const bool eager = plannedBackwardScoreScratch(scenario) > 0;
    // One run whose scores have other tensors' sizes: what grows with tokens squared is not told from what
    // grows with tokens either (CalibrationResult::scoresUntold).
    const QString backward =
        r.backwardFromForward
            ? tr("What its attention backward holds could not be read (its scores have the size of other "
                 "tensors, or no backward was recorded): it is planned as %1 times the plan's, as many as "
                 "the "
                 "score copies its forward keeps. ")
                  .arg(r.factors.backwardScratchScores, 0, 'f', 2)
        : r.factors.backwardScratchScores >= 0
            ? tr("Its last layer's attention backward held %1 times the score-sized gradients planned there, "
                 "the step's peak at long sequences. ")
                  .arg(r.factors.backwardScratchScores, 0, 'f', 1)
        : eager && r.scoresUntold
            ? tr("At this length its attention scores have the size of other tensors, so the run cannot tell "
                 "them apart: one factor scales what grows with the tokens and with their square (other "
                 "lengths extrapolate with it), and what its attention backward holds was not measured (the "
                 "plan's stands). Calibrating on runs of two lengths tells them apart. ")
        : eager
            ? tr("At this length its attention scores have the size of other tensors, so what its attention "
                 "backward holds was not measured and the plan's stands; a run at another length tells. ")
        : r.scoresUntold
            ? tr("This run cannot tell its attention scores from what grows with the tokens (at this length "
                 "their tensors have other tensors' sizes, or none was alive where measured), so one factor "
                 "scales both; at other lengths the plan extrapolates with it. Calibrating on runs of two "
                 "lengths tells them apart. ")
            : QString();
    // The loss's vocabulary-sized tensors, measured apart from the layers' (Calibration::logits).
    const QString logits =
        r.factors.logits >= 0
            ? tr("Its loss held %1 times the vocabulary-sized tensors the plan has there (micro-batch x "
                 "tokens "
                 "x vocabulary), measured apart from its layers': another vocabulary or layer count is "
                 "planned with them. ")
                      .arg(r.factors.logits, 0, 'f', 2) +
                  // Another width's, read by operator (Calibration::logitsByDtype).
                  (r.factors.logitsByDtype.size() > 1 ? tr("Each of them was made by an operator whose width "
                                                           "autocast decides, so under 16-bit "
                                                           "autocast the plan takes %1 times them. ")
                                                            .arg(r.factors.logitsFor(2), 0, 'f', 2)
                                                      : QString())
            : QString();
    // A forward measured at its two kinds of moment (Calibration::prefillAttentionLinear).
    const QString moments =
        r.factors.prefillAttentionLinear >= 0
            ? tr("Its forward was measured inside a layer's attention (%1 times the score copies planned, "
                 "beside "
                 "%2 times the layer's activations) and elsewhere (its FFN or head); the plan peaks at the "
                 "larger of the two at any length. ")
                  .arg(r.factors.quadratic, 0, 'f', 1)
                  .arg(r.factors.prefillAttentionLinear, 0, 'f', 2)
            : QString();
    // Autocast's widths of an fp32 run's score tensors, read by the operator that made each
    // (CalibrationResult::scoresByOperator).
    const QString byOperator =
        r.scoresByOperator
            ? tr("Its trace names the operator that made each attention score tensor: under 16-bit autocast "
                 "those autocast runs in fp32 (exp, softmax) stay at 4 bytes and the others take 2, so a "
                 "plan under autocast takes %1 times its scores. ")
                  .arg(r.factors.quadraticFor(2).value_or(1), 0, 'f', 2)
            : QString();
    // What the run's allocator kept cached beside its tensors (Calibration::allocatorOverhead), or, where
    // the plan replays the code through the allocator, beside the replay's (Calibration::replayedOverhead).
    const QString cache =
        r.factors.replayedOverheadMeasured()
            ? tr("Its allocator reserved %1% beyond its tensors at their most; beside the allocator's replay "
                 "of %5, a difference of %2% of them, which the calibrated plan adds to the replay of "
                 "its own shape (reserved %3% off the run's, was %4%). ")
                  .arg(100 * r.factors.allocatorOverhead, 0, 'f', 1)
                  .arg(QString::asprintf("%+.1f", 100 * r.factors.replayedOverhead))
                  .arg(reservedPct(run.reservedAfter), reservedPct(run.reservedBefore))
                  .arg(!r.factors.code
                           ? tr("the plan")
                           // The run's optimizer allocations came from the code's own optimizer
                           // (codeOptimizer).
                           : (r.factors.codeOptimizer
                                  ? tr("the code of %1, which its stacks name, stepping the optimizer "
                                       "of that code as the run did")
                                  : tr("the code of %1, which its stacks name"))
                                 .arg(QString::fromUtf8(nameOf(frameworkNames(), *r.factors.code))))
        : r.factors.allocatorOverhead >= 0
            ? tr("Its allocator reserved %1% beyond its tensors at their most, where the plan assumed %2%: "
                 "the calibrated plan reserves the same share (reserved %3% off the run's, was %4%). ")
                  .arg(100 * r.factors.allocatorOverhead, 0, 'f', 1)
                  .arg(100 * scenario.overheads.allocatorOverheadFraction, 0, 'f', 1)
                  .arg(reservedPct(run.reservedAfter), reservedPct(run.reservedBefore))
            : QString();
    // Fitted against the tables of the code the run's stacks name (Calibration::codeTables).
    const QString tables =
        r.factors.codeTables && r.factors.code
            ? tr("Its stacks name %1, whose tables Headroom has: the factors are fitted against them, and "
                 "the calibrated plan is made with them wherever that code can run (which copies its ops "
                 "keep in 16 bits or fp32, how many score-sized tensors its softmax holds); where it cannot, "
                 "with the factors fitted against the scenario's own profile, kept beside them. ")
                  .arg(QString::fromUtf8(nameOf(frameworkNames(), *r.factors.code)))
        : against == FitAgainst::ScenarioProfile && r.factors.code &&
                plannedFramework(scenario) != *r.factors.code
            ? tr("Its stacks name %1, whose tables Headroom has, but the factors are fitted against the "
                 "scenario's own profile (%2), as asked: they say how much more the code keeps than that "
                 "profile plans, at the run's dtype. ")
                  .arg(QString::fromUtf8(nameOf(frameworkNames(), *r.factors.code)),
                       QString::fromUtf8(nameOf(frameworkNames(), plannedFramework(scenario))))
            : QString();
    const QString noBackward =
        run.noBackward
            ? tr("This trace records no backward (no gradient, no step) while the plan is a training "
                 "step: if it is a forward with autograd on, plan it as inference with Grad mode "
                 "\"autograd on\" and calibrate that; its factors serve training plans too. ")
            : QString();
    // A scenario that does not describe the trace (CalibrationRun::mismatch) is said first: its factors are
    // applied all the same (Edit > Undo takes them back), scaled to whatever the run held.
    const QString mismatch =
        run.mismatch.empty()
            ? QString()
            : tr("Warning: %1. ")
                  .arg(QString::fromStdString(run.mismatch).replace(0, 1, QStringLiteral("T")));
    return mismatch + noBackward + firstStep + tables + gradients + step + logits + backward + moments +
           byOperator + cache +
           tr("The planner's estimate of this run was %1% off the measured peak; calibrated, it is "
              "%2% off. Edit > Undo removes the calibration.")
               .arg(pct(run.before), pct(run.after));
}

DiffPage* CompareActions::diffTraces(TracePage* a, TracePage* b) {
    if (!a || !b || a->traces().empty() || b->traces().empty())
        return nullptr;
    if (a->traces().front()->indexes.empty() || b->traces().front()->indexes.empty()) {
        emit message(tr("A trace without devices has no peak to compare"));
        return nullptr;
    }
    // The planner's scenario tells model state from scratch when it describes these runs.
    auto* view = new DiffPage(a->traces().front(), b->traces().front(),
                              m_doc->filePath().isEmpty() ? nullptr : &m_doc->scenario());
    view->setStyle(m_style());
    m_tabs->setCurrentIndex(m_tabs->addTab(view, view->title()));
    return view;
}

void CompareActions::populateTraceMenu(QMenu* menu, QWidget* window, std::function<TracePage*()> current,
                                       std::function<std::vector<TracePage*>()> all,
                                       std::function<TracePage*(const QString&)> open) {
    menu->addAction(tr("&Compare with the Planner's Scenario"), QKeySequence(Qt::CTRL | Qt::Key_K), this,
                    [this, current, all] {
                        TracePage* view = current();
                        if (!view) {
                            const auto views = all();
                            view = views.empty() ? nullptr : views.back();
                        }
                        if (view)
                            compareWithPlanner(view);
                        else
                            emit message(tr("Open a trace first: File › Open"));
                    });
    // Calibrate, fitting the factors against the tables of the code the trace's stacks name (the default)
    // or against the scenario's own profile's.
    const auto calibrateCurrent = [this, window, current](FitAgainst against) {
        TracePage* view = current();
        if (!view || view->traces().empty()) {
            emit message(tr("Open the trace of a run of the planner's scenario first"));
            return;
        }
        // A scenario that may not describe the trace is calibrated all the same (Edit > Undo takes it
        // back), and said with a warning's icon and title: calibrate wrote why beside the run
        // (CalibrationRun::mismatch).
        QPointer<QWidget> parent(window);
        emit message(tr("Calibrating the planner's scenario from %1…")
                         .arg(QFileInfo(QString::fromStdString(view->traces().front()->path)).fileName()));
        startCalibration(view, against, [this, parent](const QString& said, bool calibrated) {
            if (!parent)
                return;
            if (!calibrated) {
                QMessageBox::warning(parent, tr("Cannot calibrate"), said);
                return;
            }
            const nlohmann::json& doc = m_doc->json();
            const auto calibration = doc.find("calibration");
            bool mismatch = false;
            if (calibration != doc.end() && calibration->contains("runs"))
                for (const nlohmann::json& run : calibration->at("runs"))
                    mismatch = mismatch || (run.is_object() && run.contains("mismatch"));
            if (mismatch)
                QMessageBox::warning(parent, tr("Calibrated, but the scenario may not be this run"), said);
            else
                QMessageBox::information(parent, tr("Calibrated"), said);
        });
    };
    menu->addAction(tr("C&alibrate the Planner's Scenario from This Trace"), this,
                    [calibrateCurrent] { calibrateCurrent(FitAgainst::CodeWhereKnown); });
    menu->addAction(tr("Calibrate from This Trace Against the Scenario's &Own Profile"), this,
                    [calibrateCurrent] { calibrateCurrent(FitAgainst::ScenarioProfile); });
    menu->addAction(tr("Attribution &Rules..."), this, [this, window, all] {
        const QString path = QFileDialog::getOpenFileName(
            window, tr("Attribution rules (write the defaults with: headroom-cli rules > my.rules.json)"),
            QString(), tr("Attribution rules (*.json);;All files (*)"));
        if (path.isEmpty())
            return;
        try {
            const AttributionRules rules = loadAttributionRulesFile(path.toStdString());
            for (TracePage* v : all())
                v->setRules(rules);
            emit message(tr("%n rule(s) from %1", nullptr, static_cast<int>(rules.rules.size()))
                             .arg(QFileInfo(path).fileName()));
        } catch (const std::exception& e) {
            QMessageBox::warning(window, tr("Cannot read the rules"), QString::fromUtf8(e.what()));
        }
    });
    menu->addAction(tr("&Diff with Another Trace..."), QKeySequence(Qt::CTRL | Qt::Key_D), this,
                    [this, window, current, open] {
                        TracePage* first = current();
                        if (!first || first->traces().empty()) {
                            emit message(tr("Open a trace first, then diff it with another (File › Open)"));
                            return;
                        }
                        const QString path = QFileDialog::getOpenFileName(
                            window, tr("The other run"), QString(),
                            tr("Traces (*.pickle *.pkl *.json *.gz *.csv);;All files (*)"));
                        if (path.isEmpty())
                            return;
                        TracePage* other = open(path);
                        QPointer<TracePage> guarded(first); // the user may close it while the other one loads
                        connect(other, &TracePage::loaded, this, [this, guarded, other] {
                            if (guarded)
                                diffTraces(guarded, other);
                        });
                    });
}

void CompareActions::populateFileMenu(QMenu* menu, QWidget* window,
                                      std::function<TracePage*(const QString&)> open) {
    QAction* compare = menu->addAction(tr("Compare &Scenarios..."));
    compare->setObjectName("compareScenarios");
    connect(compare, &QAction::triggered, this, [this, window] {
        const QStringList paths =
            QFileDialog::getOpenFileNames(window, tr("Scenarios to compare with the current plan"), QString(),
                                          tr("Headroom scenarios (*.headroom.json);;JSON (*.json)"));
        QString error;
        if (!paths.isEmpty() && !compareScenarioFiles(paths, &error))
            QMessageBox::warning(window, tr("Cannot compare"), error);
    });
    QAction* fleet = menu->addAction(tr("Open Folder as &Fleet..."));
    fleet->setObjectName("openFleet");
    connect(fleet, &QAction::triggered, this, [this, window, open] {
        const QString dir = QFileDialog::getExistingDirectory(
            window, tr("A job's rank files (snapshots, or trace-summary --json documents)"));
        if (!dir.isEmpty())
            openFleet({dir}, open);
    });
}

FleetPage* CompareActions::openFleet(const QStringList& inputs,
                                     std::function<TracePage*(const QString&)> open) {
    std::optional<Scenario> scenario;
    if (!m_doc->filePath().isEmpty())
        scenario = m_doc->scenario();
    auto* page = new FleetPage(inputs, scenario);
    page->setStyle(m_style());
    m_tabs->setCurrentIndex(m_tabs->addTab(page, page->title()));
    connect(page, &FleetPage::openRankRequested, this, [open](const QString& file) { open(file); });
    connect(page, &FleetPage::diffRequested, this, [this, open](const QString& file, const QString& median) {
        QPointer<TracePage> a(open(file)), b(open(median));
        auto waiting = std::make_shared<int>(2);
        auto ready = [this, a, b, waiting] {
            if (--*waiting == 0 && a && b)
                diffTraces(a, b);
        };
        connect(a, &TracePage::loaded, this, ready);
        connect(b, &TracePage::loaded, this, ready);
    });
    return page;
}

std::optional<Comparison> CompareActions::measuredForReport(const std::vector<TracePage*>& views) const {
    // With a trace tab that has this workload's scenario, the report adds the measured peak beside the
    // estimate; otherwise it is the plan alone.
    std::optional<Comparison> measured;
    for (TracePage* view : views)
        if (view->hasScenario() && !view->traces().empty() && view->attribution().total > 0) {
            const auto& t = view->traces().front();
            const std::size_t device = busiestDevice(t->summary);
            measured = compareAtPeak(m_doc->scenario(), m_doc->estimate(), t->trace, *t->indexes[device],
                                     AttributionRules::pytorchDefaults());
            planWithCodeProfile(*measured, m_doc->scenario());
            break;
        }
    return measured;
}

std::optional<ReportRunChart> CompareActions::runForReport(const std::vector<TracePage*>& views) const {
    for (TracePage* view : views)
        if (view->hasScenario() && !view->traces().empty() && view->attribution().total > 0) {
            const std::size_t device = busiestDevice(view->traces().front()->summary);
            std::vector<TimelineLane> lanes;
            for (TimelineLane lane : view->timeline()->lanes())
                if (lane.trace == view->traces().front() && lane.device == device) {
                    lane.label = QStringLiteral("device %1")
                                     .arg(QString::fromStdString(lane.trace->trace.devices[device].key));
                    lanes.push_back(std::move(lane));
                }
            if (lanes.empty())
                return std::nullopt;
            return ReportRunChart{
                tr("The run over time by category, the plan dashed over it (device %1)")
                    .arg(QString::fromStdString(view->traces().front()->trace.devices[device].key)),
                [lanes](QPainter& p, const QRectF& r) {
                    TimelineRenderer::paint(p, r.toRect(), lanes, wholeRunView(lanes, true), ChartStyle{});
                }};
        }
    return std::nullopt;
}

} // namespace headroom
