// How the library tells the user what went wrong: errno values for the program, and one
// line on stderr ("mroce-verbs: ...") where the program's own message would not say why.
#pragma once

#include "core/types.h"

namespace mroce::verbs {

// The errno value Verbs programs expect for an engine error code.
int errno_of(Errc e);

// Prints "mroce-verbs: <function>: <why> (EOPNOTSUPP)" the first time a function is
// refused for that reason, sets errno and returns EOPNOTSUPP.
int unsupported(const char* function, const char* why);

// One line on stderr, printf-style, prefixed "mroce-verbs: ".
void report(const char* format, ...) __attribute__((format(printf, 1, 2)));

// As report(), only when MROCE_DEBUG is set.
void debug(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace mroce::verbs
