// libpq's client header: Debian installs it in /usr/include/postgresql (found through
// pkg-config's libpq.pc, or the fallback below), Homebrew in its libpq prefix (pkg-config).
#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#else
#include <postgresql/libpq-fe.h>
#endif
