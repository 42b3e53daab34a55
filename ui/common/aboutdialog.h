// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <QString>

class QWidget;

namespace headroom {

// Help > About: the version, Qt built with and running, the licence, the dependencies and their licences.
QString aboutText();
// packaging/copyright (the third-party notices) followed by the GPL's text, as "Licences..." shows them.
QString licenceNoticesText();
// The About box, and its "Licences..." dialog.
void showAboutDialog(QWidget* parent);

} // namespace headroom
