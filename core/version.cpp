// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/version.h"

namespace headroom {

namespace data {
std::string_view LICENSE();
std::string_view copyright();
} // namespace data

std::string_view licenceText() {
    return data::LICENSE();
}

std::string_view thirdPartyNotices() {
    return data::copyright();
}

const char* version() {
    return HEADROOM_VERSION;
}

} // namespace headroom
