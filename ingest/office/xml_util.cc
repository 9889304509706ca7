// See xml_util.h.
#include "office/xml_util.h"

#include <cstring>

#include "ellm/ingest/extract.h"
#include "office/office_text.h"

namespace ellm::ingest::office {
namespace {

void AppendText(const pugi::xml_node& n, int depth, std::string* out) {
  if (depth > kMaxXmlDepth) return;
  for (pugi::xml_node c = n.first_child(); c; c = c.next_sibling()) {
    if (c.type() == pugi::node_pcdata || c.type() == pugi::node_cdata) {
      *out += c.value();
    } else if (c.type() == pugi::node_element) {
      AppendText(c, depth + 1, out);
    }
  }
}

}  // namespace

std::string_view Local(const char* name) {
  const char* colon = std::strchr(name, ':');
  return colon ? std::string_view(colon + 1) : std::string_view(name);
}

pugi::xml_attribute Attr(const pugi::xml_node& n, std::string_view local) {
  for (pugi::xml_attribute a = n.first_attribute(); a; a = a.next_attribute()) {
    if (Local(a.name()) == local) return a;
  }
  return {};
}

pugi::xml_node Child(const pugi::xml_node& n, std::string_view local) {
  for (pugi::xml_node c = n.first_child(); c; c = c.next_sibling()) {
    if (c.type() == pugi::node_element && Local(c) == local) return c;
  }
  return {};
}

Status ParseXml(const std::string& xml, const std::string& name, const std::string& part,
                pugi::xml_document* doc) {
  // parse_ws_pcdata keeps whitespace-only text: a run that is one space
  // (<w:t xml:space="preserve"> </w:t>) or the space between two spans.
  const pugi::xml_parse_result r = doc->load_buffer(
      xml.data(), xml.size(), pugi::parse_default | pugi::parse_ws_pcdata, pugi::encoding_auto);
  if (!r) {
    return MakeExtractError(ExtractError::kDamaged,
                            name + ": its part " + part + " is not well-formed XML (" +
                                r.description() + " at byte " + std::to_string(r.offset) + ")");
  }
  return OkStatus();
}

Status ParseOptionalPart(const ZipReader& zip, const std::string& name, const std::string& part,
                         pugi::xml_document* doc) {
  if (!zip.Has(part)) return OkStatus();
  ELLM_ASSIGN_OR_RETURN(std::string xml, zip.Read(part, kMaxPartBytes));
  return ParseXml(xml, name, part, doc);
}

std::string NodeText(const pugi::xml_node& n) {
  std::string out;
  AppendText(n, 0, &out);
  return out;
}

}  // namespace ellm::ingest::office
