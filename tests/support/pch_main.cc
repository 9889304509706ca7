// The owner of the tests' precompiled header (tests/CMakeLists.txt): an
// executable that runs no tests.
#include <gtest/gtest.h>
