#include "chat/jinja_limits.h"

namespace ellm::jinja {

thread_local StepMeter* StepMeter::current_ = nullptr;

TemplateError LimitError(const std::string& what) { return TemplateError(what, /*limit=*/true); }

void CheckStringSize(size_t bytes, const std::string& where) {
  if (bytes > kMaxStringBytes) {
    throw LimitError("string longer than the limit of " + std::to_string(kMaxStringBytes) +
                     " bytes in " + where);
  }
}

void CheckListSize(size_t items, const std::string& where) {
  if (items > kMaxListItems) {
    throw LimitError("list longer than the limit of " + std::to_string(kMaxListItems) +
                     " items in " + where);
  }
}

void StepMeter::Exceeded() const {
  throw LimitError("step budget of " + std::to_string(max_steps_) + " exceeded");
}

}  // namespace ellm::jinja
