// libpq's client header: most Linux distributions install it in /usr/include, Debian in
// /usr/include/postgresql (the fallback below; the manifest declares no pkg-config lookup on
// Linux), Homebrew in its libpq prefix (found through pkg-config).
#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#else
#include <postgresql/libpq-fe.h>
#endif
