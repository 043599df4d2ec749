// The one translation unit that defines doctest's main for snsim-unit-tests.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
