// OfficeToDocument: which kind of office file the bytes are (see
// office_to_document.h).
#include "office/office_to_document.h"

#include "ellm/ingest/extract.h"
#include "office/zip_reader.h"

namespace ellm::ingest::office {
namespace {

constexpr std::string_view kZipMagic = "PK\x03\x04";
constexpr std::string_view kOleMagic = "\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1";

// An encrypted OOXML file is an OLE compound file holding a stream named
// "EncryptedPackage" (MS-OFFCRYPTO 2.3.4); its directory stores names in
// UTF-16LE.
bool HasOleStream(const std::string& bytes, std::string_view ascii_name) {
  std::string utf16;
  for (char c : ascii_name) {
    utf16 += c;
    utf16 += '\0';
  }
  return bytes.find(utf16) != std::string::npos;
}

}  // namespace

StatusOr<Document> OfficeToDocument(const std::string& bytes, const std::string& name,
                                    const ImageTextFn& image_text) {
  if (bytes.rfind(kOleMagic, 0) == 0) {
    if (HasOleStream(bytes, "EncryptedPackage")) {
      return MakeExtractError(ExtractError::kEncrypted,
                              name +
                                  ": the Word (or other Office) file is password-protected; "
                                  "save it without a password to extract it");
    }
    return MakeExtractError(ExtractError::kUnsupportedType,
                            name +
                                ": an old Microsoft Office file (Word 97-2003 .doc?); save it "
                                "as .docx, .odt or PDF");
  }
  if (bytes.rfind(kZipMagic, 0) != 0) {
    return MakeExtractError(ExtractError::kUnsupportedType,
                            name + ": neither a ZIP-based office file nor an OLE compound file");
  }
  ELLM_ASSIGN_OR_RETURN(ZipReader zip, ZipReader::Open(bytes, name));
  if (zip.Has("word/document.xml")) return DocxToDocument(bytes, name, image_text);
  if (zip.Has("mimetype")) {
    ELLM_ASSIGN_OR_RETURN(std::string mime, zip.Read("mimetype", 256));
    if (mime == kMediaTypeOdt || mime == "application/vnd.oasis.opendocument.text-template") {
      return OdtToDocument(bytes, name, image_text);
    }
    return MakeExtractError(
        ExtractError::kUnsupportedType,
        name + ": an OpenDocument file of type " + mime + ", not a text document (.odt)");
  }
  if (zip.Has("content.xml") && zip.Has("META-INF/manifest.xml")) {
    return OdtToDocument(bytes, name, image_text);  // an ODT whose mimetype entry went missing
  }
  const char* kind = zip.Has("xl/workbook.xml")        ? "an Excel workbook"
                     : zip.Has("ppt/presentation.xml") ? "a PowerPoint presentation"
                                                       : "a ZIP archive";
  return MakeExtractError(
      ExtractError::kUnsupportedType,
      name + ": " + kind + ", not a Word (.docx) or OpenDocument text (.odt) document");
}

}  // namespace ellm::ingest::office
