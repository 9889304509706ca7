# Every third-party library comes from Debian's -dev packages (scripts/bootstrap)
# and is found here, once. No vendored copies, no downloads at build time.

find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)

# engine
pkg_check_modules(NUMA REQUIRED IMPORTED_TARGET numa)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)

# store
find_package(SQLite3 REQUIRED)

# ingest
pkg_check_modules(RDKAFKA REQUIRED IMPORTED_TARGET rdkafka++)
pkg_check_modules(RDKAFKA_C REQUIRED IMPORTED_TARGET rdkafka)
pkg_check_modules(POPPLER_CPP REQUIRED IMPORTED_TARGET poppler-cpp)
# poppler's core API, for the PDF outline's pages (ingest/pdf/pdf_outline.h).
pkg_check_modules(POPPLER REQUIRED IMPORTED_TARGET poppler)
# OCR of scanned pages in the extractor child (ingest/pdf/ocr.h).
pkg_check_modules(TESSERACT REQUIRED IMPORTED_TARGET tesseract)
# Image files (PNG, JPEG, TIFF scans) are decoded by Leptonica for OCR.
pkg_check_modules(LEPTONICA REQUIRED IMPORTED_TARGET lept)
# Its font cache is loaded before the sandbox (pdf/sandbox.h PreloadFonts).
pkg_check_modules(FONTCONFIG REQUIRED IMPORTED_TARGET fontconfig)
pkg_check_modules(LIBZIP REQUIRED IMPORTED_TARGET libzip)
pkg_check_modules(PUGIXML REQUIRED IMPORTED_TARGET pugixml)
# Web pages (ingest/office/html.h): libxml2's forgiving HTML parser.
pkg_check_modules(LIBXML2 REQUIRED IMPORTED_TARGET libxml-2.0)
# The PDF extractor's seccomp sandbox (ingest/pdf/sandbox.h).
pkg_check_modules(SECCOMP REQUIRED IMPORTED_TARGET libseccomp)
pkg_check_modules(ICU_UC REQUIRED IMPORTED_TARGET icu-uc)
pkg_check_modules(LIBCRYPTO REQUIRED IMPORTED_TARGET libcrypto)
# The HTTP API (server/): cpp-httplib, built by Debian with OpenSSL.
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
# SSL_get_fd: the socket of a TLS request, watched for the client leaving.
pkg_check_modules(LIBSSL REQUIRED IMPORTED_TARGET libssl)
find_package(nlohmann_json 3.10 REQUIRED)

# daemon, cli
find_package(yaml-cpp REQUIRED)
find_package(spdlog REQUIRED)
pkg_check_modules(SYSTEMD REQUIRED IMPORTED_TARGET libsystemd)

# tests, benchmarks
if(ELLM_BUILD_TESTS)
  find_package(GTest REQUIRED)
  find_package(ZLIB REQUIRED)  # the PDF robustness test reads gzipped docs
  # SIMDe (header-only): the AVX-512 kernels built against it, so that their
  # tests run on CPUs without AVX-512 (tests/CMakeLists.txt).
  find_path(SIMDE_INCLUDE_DIR simde/x86/avx512.h REQUIRED)
endif()
if(ELLM_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

# daemon metrics: /metrics, /healthz, /readyz
find_package(prometheus-cpp CONFIG REQUIRED)
