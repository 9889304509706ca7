// What Jinja2 and Python give a template beyond its own statements:
// attribute and item access (with the methods of str, dict and list),
// operators, iteration, and the built-in filters and tests. Pure functions
// over values; errors are TemplateErrors without a line (the interpreter adds
// it). As in Hugging Face's immutable sandbox, a method that would change a
// list or dict is refused.
#pragma once

#include <string>
#include <vector>

#include "chat/jinja_value.h"

namespace ellm::jinja {

// `obj.name`: a method of str/dict/list bound to obj, else the dict's key;
// undefined when absent. Throws on an undefined obj.
Value GetAttr(const Value& obj, const std::string& name);
// `obj[key]`: undefined when absent or out of range. Throws on an undefined obj.
Value GetItem(const Value& obj, const Value& key);
// `obj[start:stop:step]` of a list or string; null parts are undefined values.
Value Slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// + - * / // % ** ~ == != < <= > >= in, "not in" (and/or are the interpreter's).
Value BinaryOp(const std::string& op, const Value& a, const Value& b);
bool Contains(const Value& container, const Value& item);
// Python's iteration: a list's items, a dict's keys, a string's characters;
// undefined iterates as empty; anything else throws.
std::vector<Value> Iterate(const Value& v);

// REQUIRES nothing of args; throws TemplateError naming an unknown filter or
// test, or bad arguments.
Value ApplyFilter(const std::string& name, const Value& input, std::vector<Value>& args,
                  Kwargs& kwargs);
bool ApplyTest(const std::string& name, const Value& v, const std::vector<Value>& args);

// markupsafe's escape(): a Markup string unchanged, else & < > " ' escaped.
std::string HtmlEscape(const Value& v);

// Python's str.format with positional {} / {0} and named {name} fields.
std::string PyFormat(const std::string& fmt, const std::vector<Value>& args, const Kwargs& kwargs);

}  // namespace ellm::jinja
