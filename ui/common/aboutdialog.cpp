// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/common/aboutdialog.h"

#include "core/version.h"

#include <QDialog>
#include <QDialogButtonBox>
#include <QFontDatabase>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace headroom {

QString aboutText() {
    QString deps;
    for (const Dependency& d : kDependencies)
        deps += QStringLiteral("<li>%1 — %2 (%3)</li>")
                    .arg(QString::fromUtf8(d.name), QString::fromUtf8(d.licence), QString::fromUtf8(d.why));
    return QObject::
        tr("<h3>Headroom %1</h3><p>GPU memory planner and allocator-trace reader for training and serving "
           "large models.</p><p>Free software under the GNU General Public License, version 3 or any "
           "later version (%5), without any warranty. <i>Licences…</i> shows the licence and the "
           "third-party notices.</p><p>Built with Qt %2, running on Qt %3.</p><p>Uses:</p><ul>%4</ul>")
            .arg(QString::fromUtf8(version()), QStringLiteral(QT_VERSION_STR), QString::fromUtf8(qVersion()),
                 deps, QString::fromUtf8(kLicence));
}

QString licenceNoticesText() {
    return QString::fromUtf8(thirdPartyNotices().data(), qsizetype(thirdPartyNotices().size())) +
           QStringLiteral("\n\n") + QString::fromUtf8(licenceText().data(), qsizetype(licenceText().size()));
}

void showAboutDialog(QWidget* parent) {
    QMessageBox box(QMessageBox::NoIcon, QObject::tr("About Headroom"), aboutText(), QMessageBox::Close,
                    parent);
    box.setTextFormat(Qt::RichText);
    QPushButton* licences = box.addButton(QObject::tr("Licences…"), QMessageBox::ActionRole);
    box.exec();
    if (box.clickedButton() != licences)
        return;
    QDialog dialog(parent);
    dialog.setWindowTitle(QObject::tr("Licences and third-party notices"));
    auto* layout = new QVBoxLayout(&dialog);
    auto* text = new QPlainTextEdit(licenceNoticesText(), &dialog);
    text->setReadOnly(true);
    text->setLineWrapMode(QPlainTextEdit::NoWrap);
    text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    layout->addWidget(text);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, &dialog);
    QObject::connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    layout->addWidget(buttons);
    dialog.resize(760, 600);
    dialog.exec();
}

} // namespace headroom
