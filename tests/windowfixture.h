// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The window the UI tests drive: no session restore, settings and autosave in a scratch folder, and
// unsaved changes discarded instead of asking.
#include "ui/mainwindow.h"

#include <QTemporaryDir>
#include <memory>

namespace headroom::test {

inline std::unique_ptr<MainWindow> testWindow(const QTemporaryDir& dir, bool restore = false) {
    MainWindow::Options o;
    o.restoreSession = restore;
    o.askBeforeRestore = false;
    o.settingsFile = dir.filePath("settings.ini");
    o.autosaveFile = dir.filePath("autosave.headroom.json");
    auto w = std::make_unique<MainWindow>(o);
    w->askToSave = [] { return QMessageBox::Discard; };
    return w;
}

} // namespace headroom::test
