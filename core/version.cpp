#include "core/version.h"

namespace headroom {

const char* version() {
    return HEADROOM_VERSION;
}

} // namespace headroom
