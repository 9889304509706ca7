# Warnings, sanitizers and the CPU baseline for every ellm target.
#
# The baseline is x86-64-v3 (AVX2, FMA, F16C, BMI2): release binaries run on
# any such CPU. Faster paths (AVX-512, VNNI, BF16) are compiled per source file
# with ellm_kernel_isa() and chosen at run time from CPUID; never -march=native.

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

# ellm_kernel_isa(<file>... ISA avx512|avx512vnni|avx512bf16|amx)
# Compiles the given kernel sources for a higher ISA than the baseline. Only
# files under engine/kernels/ may use this; callers reach them through the
# dispatch table after a CPUID check.
function(ellm_kernel_isa)
  cmake_parse_arguments(ARG "" "ISA" "" ${ARGN})
  if(ARG_ISA STREQUAL "avx512")
    set(flags "-mavx512f -mavx512bw -mavx512dq -mavx512vl")
  elseif(ARG_ISA STREQUAL "avx512vnni")
    set(flags "-mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512vnni")
  elseif(ARG_ISA STREQUAL "avx512bf16")
    set(flags "-mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512vnni -mavx512bf16")
  elseif(ARG_ISA STREQUAL "amx")
    # AMX tiles for the integer sums, AVX-512 VNNI for the rest of the kernel.
    set(flags "-mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512vnni -mamx-tile -mamx-int8 -mamx-bf16")
  else()
    message(FATAL_ERROR "ellm_kernel_isa: unknown ISA '${ARG_ISA}'")
  endif()
  set_source_files_properties(${ARG_UNPARSED_ARGUMENTS} PROPERTIES COMPILE_FLAGS "${flags}")
endfunction()
