// ELLM_ASAN is 1 in AddressSanitizer builds, with either compiler: GCC
// defines __SANITIZE_ADDRESS__, Clang answers __has_feature(address_sanitizer).
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define ELLM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ELLM_ASAN 1
#endif
#endif
#ifndef ELLM_ASAN
#define ELLM_ASAN 0
#endif
