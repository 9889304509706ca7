# Warnings, sanitizers and the CPU baseline for every ellm target.
#
# The baseline is x86-64-v3 (AVX2, FMA, F16C, BMI2): release binaries run on
# any such CPU. Faster paths (AVX-512, VNNI, BF16, AMX) are compiled inside
# target regions of the kernel files (engine/kernels/isa_target.h), never with
# wider -m flags, and chosen at run time from CPUID; never -march=native.

add_library(ellm_compile_options INTERFACE)
target_compile_options(ellm_compile_options INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
  -Wformat=2 -Wimplicit-fallthrough -Wno-missing-field-initializers)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  # GCC 12 reports -Wrestrict false positives inside libstdc++'s std::string
  # operator+ at -O2 and above (GCC bug 105329).
  target_compile_options(ellm_compile_options INTERFACE -Wno-restrict)
endif()
if(ELLM_WERROR)
  target_compile_options(ellm_compile_options INTERFACE -Werror)
endif()
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  target_compile_options(ellm_compile_options INTERFACE -march=x86-64-v3 -mtune=generic)
endif()

if(ELLM_SANITIZE)
  set(_ellm_san -fsanitize=address,undefined -fno-sanitize-recover=undefined
                -fno-omit-frame-pointer)
  target_compile_options(ellm_compile_options INTERFACE ${_ellm_san})
  target_link_options(ellm_compile_options INTERFACE ${_ellm_san})
endif()

# ellm_sanitized_at_o1(TARGET...): in sanitizer builds (scripts/test configures
# them as Debug, which has no -O), compile these targets at -O1, the level
# AddressSanitizer's documentation advises for usable speed. For the engine:
# its arithmetic (attention, KV cache, whole models, emulated AVX-512) took
# most of the sanitized test run at -O0. Everything else stays at -O0.
function(ellm_sanitized_at_o1)
  if(ELLM_SANITIZE)
    foreach(target IN LISTS ARGN)
      target_compile_options(${target} PRIVATE $<$<CONFIG:Debug>:-O1>)
    endforeach()
  endif()
endfunction()
