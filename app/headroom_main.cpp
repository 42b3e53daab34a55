// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/trace/formats/tracereader.h"
#include "core/version.h"
#include "ui/compare/fleetpage.h"
#include "ui/mainwindow.h"
#include "ui/traceview/tracepage.h"

#include <QComboBox>

#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QScreen>
#include <QTabWidget>
#include <QTimer>
#include <cstdio>

// headroom [FILE...] | headroom --screenshot OUT.png [--size WxH] [--drawing D] [FILE...]: scenarios and
// traces
int main(int argc, char** argv) {
    // A screenshot, --help and --version need no display: fall back to the offscreen platform when none is
    // set. Without one, Qt would abort on a headless server; say what to run instead.
    if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") &&
        qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
        bool headless = false;
        for (int i = 1; i < argc; ++i) {
            const QByteArray arg(argv[i]);
            headless = headless || arg == "--screenshot" || arg == "--help" || arg == "-h" ||
                       arg == "--help-all" || arg == "--version" || arg == "-v";
        }
        if (!headless) {
            std::fprintf(stderr, "error: no display to open the window on (DISPLAY and WAYLAND_DISPLAY are "
                                 "unset); use headroom-cli for the command line, or headroom --screenshot "
                                 "OUT.png [FILE] to render the window without one\n");
            return 2;
        }
        qputenv("QT_QPA_PLATFORM", "offscreen");
    }

    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("Headroom"));
    QApplication::setOrganizationName(QStringLiteral("Headroom"));
    QApplication::setApplicationVersion(QString::fromUtf8(headroom::version()));

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("GPU memory planner for training and serving large models"));
    parser.addHelpOption();
    parser.addVersionOption();
    QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                  QStringLiteral("Render the window to OUT.png and exit."),
                                  QStringLiteral("OUT.png"));
    QCommandLineOption size(QStringLiteral("size"), QStringLiteral("Window size for --screenshot."),
                            QStringLiteral("WxH"), QStringLiteral("1280x800"));
    QCommandLineOption theme(QStringLiteral("theme"), QStringLiteral("light or dark."),
                             QStringLiteral("THEME"), QStringLiteral("light"));
    QCommandLineOption units(QStringLiteral("units"), QStringLiteral("GiB or GB."), QStringLiteral("UNITS"));
    parser.addOption(screenshot);
    parser.addOption(size);
    parser.addOption(theme);
    parser.addOption(units);
    QCommandLineOption presentation(QStringLiteral("presentation"),
                                    QStringLiteral("Start in presentation mode (full screen, larger type)."));
    parser.addOption(presentation);
    QCommandLineOption layout(
        QStringLiteral("layout"),
        QStringLiteral("A folder's rank files as one job laid out so (tp=8,pp=4,cp=1,ep=1)."),
        QStringLiteral("LAYOUT"));
    parser.addOption(layout);
    QCommandLineOption drawing(QStringLiteral("drawing"),
                               QStringLiteral("How trace tabs draw their timeline: categories (the default), "
                                              "allocations (every allocation in its place) or bands."),
                               QStringLiteral("DRAWING"));
    parser.addOption(drawing);
    parser.addPositionalArgument(QStringLiteral("FILE"), QStringLiteral("Scenario or trace to open."),
                                 QStringLiteral("[FILE...]"));
    parser.process(app);

    headroom::MainWindow::Options options;
    // A screenshot shows exactly what was asked for: no session restore, no recovery prompt.
    options.restoreSession = !parser.isSet(screenshot) && parser.positionalArguments().isEmpty();
    headroom::MainWindow window(options);
    headroom::ChartStyle style = window.style();
    style.dark = parser.value(theme) == QLatin1String("dark");
    if (parser.isSet(units))
        style.unit =
            parser.value(units) == QLatin1String("GB") ? headroom::ByteUnit::GB : headroom::ByteUnit::GiB;
    window.setStyle(style);
    if (parser.isSet(presentation))
        window.setPresentationMode(true);
    const QStringList files = parser.positionalArguments();
    bool scenarioGiven = false;
    for (const QString& f : files) {
        if (!headroom::isTraceFile(f.toStdString()))
            scenarioGiven = true;
        QString error;
        if (!window.openFile(f, &error)) {
            std::fprintf(stderr, "error: %s\n", qPrintable(error));
            if (parser.isSet(screenshot))
                return 1;
        }
    }

    if (parser.isSet(layout)) // the Fleet tabs of the folders given
        for (int i = 0; i < window.tabs()->count(); ++i)
            if (auto* fleet = qobject_cast<headroom::FleetPage*>(window.tabs()->widget(i));
                fleet && !fleet->setLayout(parser.value(layout))) {
                std::fprintf(stderr, "error: --layout: %s\n", qPrintable(parser.value(layout)));
                return 2;
            }
    if (parser.isSet(drawing)) {
        const int index =
            QStringList{QStringLiteral("categories"), QStringLiteral("bands"), QStringLiteral("allocations")}
                .indexOf(parser.value(drawing));
        if (index < 0) {
            std::fprintf(stderr, "error: --drawing wants categories, allocations or bands, got %s\n",
                         qPrintable(parser.value(drawing)));
            return 2;
        }
        for (headroom::TracePage* view : window.traceViews())
            view->drawingBox()->setCurrentIndex(index);
    }
    if (parser.isSet(screenshot)) {
        const QStringList wh = parser.value(size).split(QLatin1Char('x'));
        bool okW = false, okH = false;
        const int w = wh.size() == 2 ? wh[0].toInt(&okW) : 0;
        const int h = wh.size() == 2 ? wh[1].toInt(&okH) : 0;
        if (!okW || !okH || w < 200 || h < 200 || w > 10000 || h > 10000) {
            std::fprintf(stderr, "error: --size wants WxH between 200 and 10000, got %s\n",
                         qPrintable(parser.value(size)));
            return 2;
        }
        window.resize(w, h);
        window.show();
        // A trace is read in the background: wait for it, as a user would, and fail if it cannot be read.
        window.waitForTraces();
        if (scenarioGiven) // `headroom PLAN.headroom.json RUN.pickle`: the trace beside its plan
            for (headroom::TracePage* view : window.traceViews())
                if (!view->hasFailed())
                    window.compareWithPlanner(view);
        window
            .waitForTraces(); // the categories and the plan over the run, worked out again with the scenario
        for (headroom::TracePage* view : window.traceViews())
            if (view->hasFailed()) {
                std::fprintf(stderr, "error: %s\n", qPrintable(view->errorText()));
                return 1;
            }
        // The planner's details (sweeps, ranked changes) arrive from their job; then let layouts and the
        // charts settle before grabbing, exactly as a user would see the window.
        window.waitForPlanner();
        for (int i = 0; i < 5; ++i)
            QApplication::processEvents();
        const QImage image = window.grab().toImage();
        const QString out = parser.value(screenshot);
        if (!image.save(out, "PNG")) {
            std::fprintf(stderr, "error: %s: cannot write the screenshot\n", qPrintable(out));
            return 1;
        }
        return 0;
    }
    if (scenarioGiven)
        for (headroom::TracePage* view : window.traceViews())
            QObject::connect(view, &headroom::TracePage::loaded, &window,
                             [&window, view] { window.compareWithPlanner(view); });
    window.show();
    return app.exec();
}
