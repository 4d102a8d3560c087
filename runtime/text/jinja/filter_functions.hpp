#pragma once
// The filter implementations, grouped by what they work on; filters.cpp
// maps names to them. Each takes the filtered value and the call's
// arguments, bound by name the way jinja2's Python signatures bind them.
#include <string>

#include "runtime/text/jinja/value.hpp"

namespace hive::chat_template::filter {

// text (filters_text.cpp)
Value trim(const Value& input, const CallArgs& args);
Value upper(const Value& input, const CallArgs& args);
Value lower(const Value& input, const CallArgs& args);
Value capitalize(const Value& input, const CallArgs& args);
Value title(const Value& input, const CallArgs& args);
Value replace(const Value& input, const CallArgs& args);
Value indent(const Value& input, const CallArgs& args);
Value center(const Value& input, const CallArgs& args);
Value truncate(const Value& input, const CallArgs& args);
Value wordcount(const Value& input, const CallArgs& args);
Value string(const Value& input, const CallArgs& args);
Value safe(const Value& input, const CallArgs& args);
Value escape(const Value& input, const CallArgs& args);

// sequences (filters_sequence.cpp)
Value length(const Value& input, const CallArgs& args);
Value first(const Value& input, const CallArgs& args);
Value last(const Value& input, const CallArgs& args);
Value list(const Value& input, const CallArgs& args);
Value reverse(const Value& input, const CallArgs& args);
Value join(const Value& input, const CallArgs& args);
Value sort(const Value& input, const CallArgs& args);
Value unique(const Value& input, const CallArgs& args);
Value min(const Value& input, const CallArgs& args);
Value max(const Value& input, const CallArgs& args);
Value sum(const Value& input, const CallArgs& args);
Value items(const Value& input, const CallArgs& args);
Value dictsort(const Value& input, const CallArgs& args);

// selection and mapping (filters_select.cpp)
Value map(const Value& input, const CallArgs& args);
Value select(const Value& input, const CallArgs& args);
Value reject(const Value& input, const CallArgs& args);
Value selectattr(const Value& input, const CallArgs& args);
Value rejectattr(const Value& input, const CallArgs& args);

// values (filters.cpp)
Value default_value(const Value& input, const CallArgs& args);
Value tojson(const Value& input, const CallArgs& args);
Value to_int(const Value& input, const CallArgs& args);
Value to_float(const Value& input, const CallArgs& args);
Value abs(const Value& input, const CallArgs& args);
Value round(const Value& input, const CallArgs& args);
Value attr(const Value& input, const CallArgs& args);

// jinja2's make_attrgetter: "a.b.0" looks up a, then b, then item 0.
Value attribute_path(const Value& item, const Value& attribute);
// For case-insensitive comparisons: strings lower-cased, others as they are.
Value ignore_case(const Value& value);

}  // namespace hive::chat_template::filter
