#include "runtime/text/grammar/schema_check.hpp"

#include <set>
#include <string>

#include "base/json_reader.hpp"
#include "runtime/text/grammar/constraint.hpp"
#include "runtime/text/grammar/limits.hpp"

namespace hive {
namespace {

using Json = nlohmann::json;
using Keywords = std::set<std::string, std::less<>>;

// Keywords that describe and never constrain.
const Keywords kAnnotations = {"title",      "description",   "default", "examples",   "$schema",
                               "$comment",   "$id",           "$anchor", "readOnly",   "writeOnly",
                               "deprecated", "discriminator", "$defs",   "definitions"};
// Per JSON type, the validation keywords xgrammar's converter enforces.
const Keywords kString = {"minLength", "maxLength", "pattern", "format"};
const Keywords kInteger = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                           "multipleOf"};
const Keywords kNumber = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
const Keywords kArray = {"items", "prefixItems", "minItems", "maxItems", "unevaluatedItems"};
const Keywords kObject = {
    "properties",    "required",      "additionalProperties", "patternProperties",
    "propertyNames", "minProperties", "maxProperties",        "unevaluatedProperties"};
// The formats xgrammar turns into a grammar (JSONSchemaConverter::IsBuiltinFormat).
const Keywords kFormats = {"email", "date",     "time", "date-time", "duration",     "ipv4",
                           "ipv6",  "hostname", "uuid", "uri",       "uri-reference"};
// xgrammar reads the first of these a schema has and ignores the others.
const char* const kBranches[] = {"$ref", "const", "enum", "anyOf", "oneOf", "allOf"};

[[noreturn]] void refuse(const std::string& path, const std::string& detail) {
  throw ConstraintError(ConstraintKind::json_schema, path.empty() ? "/" : path, detail);
}

std::string child(const std::string& path, std::string_view key) {
  return path + "/" + json_detail::pointer_segment(key);
}

class SchemaChecker {
 public:
  void check(const Json& schema, const std::string& path) {
    if (schema.is_boolean()) return;
    if (!schema.is_object()) refuse(path, "a schema must be an object or a boolean");
    for (const char* defs : {"$defs", "definitions"}) {
      if (!schema.contains(defs)) continue;
      const Json& table = schema.at(defs);
      if (!table.is_object()) refuse(child(path, defs), "expected an object of schemas");
      for (const auto& [name, sub] : table.items()) check(sub, child(child(path, defs), name));
    }
    for (const char* branch : kBranches) {
      if (schema.contains(branch)) return check_branch(schema, path, branch);
    }
    check_typed(schema, path);
  }

 private:
  void check_branch(const Json& schema, const std::string& path, const std::string& branch) {
    for (const auto& [key, value] : schema.items()) {
      if (key == branch || kAnnotations.contains(key)) continue;
      // An enum or const beside its type is stricter than the type alone.
      if (key == "type" && (branch == "enum" || branch == "const")) continue;
      refuse(child(path, key), "keyword \"" + key + "\" beside \"" + branch +
                                   "\" is not enforced; move it into the branches");
    }
    const Json& value = schema.at(branch);
    const std::string where = child(path, branch);
    if (branch == "$ref") {
      if (!value.is_string() || !value.get<std::string>().starts_with('#'))
        refuse(where, "only local references (\"#/$defs/...\") are supported");
    } else if (branch == "enum") {
      if (!value.is_array() || value.empty()) refuse(where, "expected a non-empty array");
    } else if (branch == "anyOf" || branch == "oneOf" || branch == "allOf") {
      if (!value.is_array() || value.empty())
        refuse(where, "expected a non-empty array of schemas");
      for (std::size_t i = 0; i < value.size(); ++i)
        check(value[i], child(where, std::to_string(i)));
    }
  }

  void check_typed(const Json& schema, const std::string& path) {
    std::set<std::string> types;
    if (schema.contains("type")) {
      const Json& type = schema.at("type");
      if (type.is_string())
        types.insert(type.get<std::string>());
      else if (type.is_array())
        for (const Json& t : type) {
          if (!t.is_string()) refuse(child(path, "type"), "expected a type name");
          types.insert(t.get<std::string>());
        }
      else
        refuse(child(path, "type"), "expected a type name or an array of them");
    } else if (schema.contains("properties") || schema.contains("additionalProperties") ||
               schema.contains("unevaluatedProperties")) {
      types.insert("object");
    } else if (schema.contains("items") || schema.contains("prefixItems") ||
               schema.contains("unevaluatedItems")) {
      types.insert("array");
    }
    Keywords allowed;
    for (const std::string& type : types) {
      const Keywords* keywords = type == "string"    ? &kString
                                 : type == "integer" ? &kInteger
                                 : type == "number"  ? &kNumber
                                 : type == "array"   ? &kArray
                                 : type == "object"  ? &kObject
                                                     : nullptr;
      if (keywords)
        allowed.insert(keywords->begin(), keywords->end());
      else if (type != "boolean" && type != "null")
        refuse(child(path, "type"), "unknown type \"" + type + "\"");
    }
    for (const auto& [key, value] : schema.items()) {
      if (key == "type" || kAnnotations.contains(key)) continue;
      if (!allowed.contains(key))
        refuse(child(path, key),
               "keyword \"" + key + "\" is not supported" +
                   (types.empty() ? " without a \"type\"" : " for type " + *types.begin()));
      check_keyword(key, value, child(path, key));
    }
    if ((schema.contains("pattern") || schema.contains("format")) &&
        (schema.contains("minLength") || schema.contains("maxLength")))
      refuse(path, "minLength/maxLength together with pattern or format are not enforced");
    if (schema.contains("pattern") && schema.contains("format"))
      refuse(path, "pattern together with format is not enforced");
  }

  void check_keyword(const std::string& key, const Json& value, const std::string& where) {
    if (key == "properties" || key == "patternProperties") {
      if (!value.is_object()) refuse(where, "expected an object of schemas");
      for (const auto& [name, sub] : value.items()) check(sub, child(where, name));
    } else if (key == "prefixItems") {
      if (!value.is_array()) refuse(where, "expected an array of schemas");
      for (std::size_t i = 0; i < value.size(); ++i)
        check(value[i], child(where, std::to_string(i)));
    } else if (key == "items" || key == "additionalProperties" || key == "propertyNames" ||
               key == "unevaluatedItems" || key == "unevaluatedProperties") {
      check(value, where);
    } else if (key == "format") {
      if (!value.is_string() || !kFormats.contains(value.get<std::string>()))
        refuse(where, "format " + value.dump() +
                          " is not enforced (supported: email, date, time, date-time, duration, "
                          "ipv4, ipv6, hostname, uuid, uri, uri-reference)");
    } else if (key.starts_with("min") || key.starts_with("max")) {
      if (key.ends_with("Length") || key.ends_with("Items") || key.ends_with("Properties")) {
        if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
            value.get<int64_t>() > grammar_limits::kMaxRepetition)
          refuse(where, "expected a count from 0 to " +
                            std::to_string(grammar_limits::kMaxRepetition) + " (got " +
                            value.dump() + ")");
      } else if (!value.is_number()) {
        refuse(where, "expected a number (got " + value.dump() + ")");
      }
    } else if (key.starts_with("exclusive") && !value.is_number()) {
      refuse(where, "expected a number (got " + value.dump() + ")");
    }
  }
};

}  // namespace

void check_json_schema(const Json& schema) {
  SchemaChecker().check(schema, "");
}

}  // namespace hive
