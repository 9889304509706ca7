// pugixml helpers the Word and OpenDocument readers share. Both formats are
// matched by local names ("w:p" and "x:p" alike are "p"): writers may choose
// other namespace prefixes than the usual ones.
#pragma once

#include <pugixml.hpp>

#include <string>
#include <string_view>

#include "ellm/base/status.h"
#include "office/zip_reader.h"

namespace ellm::ingest::office {

// The part of a node's or attribute's name after its prefix.
std::string_view Local(const char* name);
inline std::string_view Local(const pugi::xml_node& n) { return Local(n.name()); }
// The first attribute / child element with this local name (empty if none).
pugi::xml_attribute Attr(const pugi::xml_node& n, std::string_view local);
pugi::xml_node Child(const pugi::xml_node& n, std::string_view local);
// Parses one XML part; a kDamaged error naming `part` and the offset if it
// is not well-formed. No DTDs or external entities are ever loaded
// (pugixml reads none).
Status ParseXml(const std::string& xml, const std::string& name, const std::string& part,
                pugi::xml_document* doc);
// The archive part `part` parsed into `doc` as ParseXml does, read with the
// kMaxPartBytes bound; `doc` stays empty when the archive has no such part.
Status ParseOptionalPart(const ZipReader& zip, const std::string& name, const std::string& part,
                         pugi::xml_document* doc);
// All text beneath `n` (depth-bounded), for metadata values.
std::string NodeText(const pugi::xml_node& n);

}  // namespace ellm::ingest::office
