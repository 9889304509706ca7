// ZipReader over libzip's in-memory source (see zip_reader.h).
#include "office/zip_reader.h"

#include <zip.h>

#include "ellm/ingest/extract.h"

namespace ellm::ingest::office {

void ZipReader::Closer::operator()(zip* z) const { zip_discard(z); }

StatusOr<ZipReader> ZipReader::Open(std::string_view bytes, const std::string& name) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* source = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  zip_t* archive = source ? zip_open_from_source(source, ZIP_RDONLY, &error) : nullptr;
  if (archive == nullptr) {
    const std::string why = zip_error_strerror(&error);
    zip_error_fini(&error);
    if (source) zip_source_free(source);
    return MakeExtractError(ExtractError::kDamaged,
                            name + ": not a readable ZIP archive (" + why + ")");
  }
  zip_error_fini(&error);
  return ZipReader(std::unique_ptr<zip, Closer>(archive), name);
}

bool ZipReader::Has(const std::string& entry) const {
  return zip_name_locate(archive_.get(), entry.c_str(), 0) >= 0;
}

StatusOr<std::string> ZipReader::Read(const std::string& entry, int64_t max_bytes) const {
  zip_file_t* file = zip_fopen(archive_.get(), entry.c_str(), 0);
  if (file == nullptr) {
    const int code = zip_error_code_zip(zip_get_error(archive_.get()));
    if (code == ZIP_ER_NOPASSWD || code == ZIP_ER_WRONGPASSWD) {
      return MakeExtractError(ExtractError::kEncrypted,
                              name_ + ": its part " + entry + " is encrypted (password-protected)");
    }
    return MakeExtractError(ExtractError::kDamaged, name_ + ": cannot read its part " + entry +
                                                        ": " + zip_strerror(archive_.get()));
  }
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const zip_int64_t n = zip_fread(file, buf, sizeof(buf));
    if (n < 0) {
      const std::string why = zip_file_strerror(file);
      zip_fclose(file);
      return MakeExtractError(ExtractError::kDamaged,
                              name_ + ": its part " + entry + " is damaged (" + why + ")");
    }
    if (n == 0) break;
    if (static_cast<int64_t>(out.size()) + n > max_bytes) {
      zip_fclose(file);
      return MakeExtractError(ExtractError::kResourceLimit,
                              name_ + ": its part " + entry + " expands beyond " +
                                  std::to_string(max_bytes >> 20) +
                                  " MiB (a ZIP bomb?); not extracted");
    }
    out.append(buf, static_cast<size_t>(n));
  }
  zip_fclose(file);
  return out;
}

}  // namespace ellm::ingest::office
