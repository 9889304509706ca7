// ExtractError names, reasons and status codes (see extract.h).
#include <array>

#include "ellm/ingest/extract.h"

namespace ellm::ingest {
namespace {

struct ErrorInfo {
  ExtractError error;
  std::string_view name;
  StatusCode code;
};

// Indexed by ExtractError. Names are serialized: append-only.
constexpr std::array<ErrorInfo, 13> kErrors = {{
    {ExtractError::kNotFound, "not_found", StatusCode::kNotFound},
    {ExtractError::kUnreadable, "unreadable", StatusCode::kFailedPrecondition},
    {ExtractError::kNotPdf, "not_pdf", StatusCode::kInvalidArgument},
    {ExtractError::kUnsupportedType, "unsupported_type", StatusCode::kUnimplemented},
    {ExtractError::kEncrypted, "encrypted", StatusCode::kFailedPrecondition},
    {ExtractError::kDamaged, "damaged", StatusCode::kDataLoss},
    {ExtractError::kNoTextLayer, "no_text_layer", StatusCode::kFailedPrecondition},
    {ExtractError::kTooManyPages, "too_many_pages", StatusCode::kOutOfRange},
    {ExtractError::kTooLarge, "too_large", StatusCode::kOutOfRange},
    {ExtractError::kTimeout, "timeout", StatusCode::kDeadlineExceeded},
    {ExtractError::kResourceLimit, "resource_limit", StatusCode::kResourceExhausted},
    {ExtractError::kCrashed, "crashed", StatusCode::kInternal},
    {ExtractError::kSandboxViolation, "sandbox_violation", StatusCode::kInternal},
}};

constexpr std::string_view kReasonPrefix = "extract.";

}  // namespace

std::string_view ExtractErrorName(ExtractError error) {
  return kErrors[static_cast<size_t>(error)].name;
}

std::string ExtractErrorReason(ExtractError error) {
  return std::string(kReasonPrefix) + std::string(ExtractErrorName(error));
}

std::optional<ExtractError> ExtractErrorOf(const Status& status) {
  std::string_view reason = status.reason();
  if (reason.substr(0, kReasonPrefix.size()) != kReasonPrefix) return std::nullopt;
  reason.remove_prefix(kReasonPrefix.size());
  for (const ErrorInfo& e : kErrors) {
    if (e.name == reason) return e.error;
  }
  return std::nullopt;
}

Status MakeExtractError(ExtractError error, std::string message) {
  const ErrorInfo& e = kErrors[static_cast<size_t>(error)];
  return Status(e.code, std::move(message)).WithReason(ExtractErrorReason(error));
}

Status ExtractOptions::Validate() const {
  if (max_pages <= 0) return InvalidArgumentError("extract.max_pages must be positive");
  if (max_bytes <= 0) return InvalidArgumentError("extract.max_bytes must be positive");
  if (cpu_seconds <= 0) return InvalidArgumentError("extract: cpu_seconds must be positive");
  if (address_space_bytes <= 0) {
    return InvalidArgumentError("extract: address_space_bytes must be positive");
  }
  if (max_output_bytes <= 0) {
    return InvalidArgumentError("extract: max_output_bytes must be positive");
  }
  if (wall_timeout.count() <= 0)
    return InvalidArgumentError("extract: wall_timeout must be positive");
  if (ocr_dpi < 50 || ocr_dpi > 1200) {
    return InvalidArgumentError("extract.ocr_dpi must be between 50 and 1200");
  }
  if (ocr_page_seconds <= 0) return InvalidArgumentError("extract.ocr_page_s must be positive");
  if (ocr_languages.empty() || ocr_languages.size() > 64 ||
      ocr_languages.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                      "0123456789_+") != std::string::npos) {
    return InvalidArgumentError("extract.ocr_languages '" + ocr_languages +
                                "' is not in Tesseract's form (for example eng or eng+deu)");
  }
  return OkStatus();
}

std::optional<OcrMode> ParseOcrMode(std::string_view s) {
  if (s == "off") return OcrMode::kOff;
  if (s == "auto") return OcrMode::kAuto;
  if (s == "force") return OcrMode::kForce;
  return std::nullopt;
}

std::string_view OcrModeName(OcrMode mode) {
  switch (mode) {
    case OcrMode::kOff:
      return "off";
    case OcrMode::kForce:
      return "force";
    case OcrMode::kAuto:
      break;
  }
  return "auto";
}

}  // namespace ellm::ingest
