/* The one source of libkiln.so itself: the library is the runtime's static
 * archives linked whole (runtime/CMakeLists.txt); CMake wants a source per
 * target. Also checks that the public header is valid C99. */
#include "kiln/kiln.h"
