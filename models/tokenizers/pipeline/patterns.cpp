#include <ctrainer/models/tokenizers/pipeline/patterns.h>

#include <dlfcn.h>
#include <oniguruma.h>

#include <algorithm>

#include <ctrainer/core/errors.h>

namespace ctrainer::tokenizers {

namespace {

const OnigUChar* bytes(std::string_view s) { return reinterpret_cast<const OnigUChar*>(s.data()); }

/// Oniguruma, opened with RTLD_LOCAL: Debian's libonig also exports the POSIX names regcomp and
/// regexec, which would otherwise replace glibc's for the whole program (GoogleTest's death-test
/// matchers broke that way); opened locally, only the onig_* calls below reach it.
struct Oniguruma {
  decltype(&onig_initialize) initialize;
  decltype(&onig_new) compile;
  decltype(&onig_free) free;
  decltype(&onig_search) search;
  decltype(&onig_region_new) region_new;
  decltype(&onig_region_clear) region_clear;
  decltype(&onig_region_free) region_free;
  decltype(&onig_error_code_to_str) error_text;
  OnigEncoding utf8;
  OnigSyntaxType* syntax;
};

const Oniguruma& oniguruma() {
  static const Oniguruma api = [] {
    void* library = nullptr;
    for (const char* name : {"libonig.so.5", "libonig.so"})
      if ((library = ::dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    if (library == nullptr)
      throw ArgumentError(std::string("tokenizer regexes need Oniguruma (libonig.so.5, Debian's "
                                      "libonig5 package), which cannot be loaded: ") +
                          ::dlerror());
    const auto symbol = [&](const char* name) {
      void* address = ::dlsym(library, name);
      if (address == nullptr)
        throw ArgumentError(std::string("libonig.so.5 lacks ") + name + ": install libonig5 6.9");
      return address;
    };
    Oniguruma o;
    o.initialize = reinterpret_cast<decltype(o.initialize)>(symbol("onig_initialize"));
    o.compile = reinterpret_cast<decltype(o.compile)>(symbol("onig_new"));
    o.free = reinterpret_cast<decltype(o.free)>(symbol("onig_free"));
    o.search = reinterpret_cast<decltype(o.search)>(symbol("onig_search"));
    o.region_new = reinterpret_cast<decltype(o.region_new)>(symbol("onig_region_new"));
    o.region_clear = reinterpret_cast<decltype(o.region_clear)>(symbol("onig_region_clear"));
    o.region_free = reinterpret_cast<decltype(o.region_free)>(symbol("onig_region_free"));
    o.error_text = reinterpret_cast<decltype(o.error_text)>(symbol("onig_error_code_to_str"));
    o.utf8 = static_cast<OnigEncoding>(symbol("OnigEncodingUTF8"));
    o.syntax = *static_cast<OnigSyntaxType**>(symbol("OnigDefaultSyntax"));
    OnigEncoding encodings[] = {o.utf8};
    o.initialize(encodings, 1);
    return o;
  }();
  return api;
}

}  // namespace

Regex::Regex(const std::string& pattern) : pattern_(pattern) {
  const Oniguruma& onig = oniguruma();
  OnigRegex regex = nullptr;
  OnigErrorInfo info;
  const int rc = onig.compile(&regex, bytes(pattern), bytes(pattern) + pattern.size(),
                              ONIG_OPTION_NONE, onig.utf8, onig.syntax, &info);
  if (rc != ONIG_NORMAL) {
    OnigUChar message[ONIG_MAX_ERROR_MESSAGE_LEN];
    onig.error_text(message, rc, &info);
    throw ArgumentError("invalid regular expression \"" + pattern +
                        "\": " + reinterpret_cast<const char*>(message));
  }
  regex_ = regex;
}

Regex::~Regex() {
  if (regex_ != nullptr) oniguruma().free(static_cast<OnigRegex>(regex_));
}

std::vector<Offsets> Regex::find_all(std::string_view text) const {
  std::vector<Offsets> found;
  const Oniguruma& onig = oniguruma();
  OnigRegion* region = onig.region_new();
  const OnigUChar* begin = bytes(text);
  const OnigUChar* end = begin + text.size();
  size_t search_from = 0;
  bool have_last_end = false;
  size_t last_end = 0;
  while (search_from <= text.size()) {
    onig.region_clear(region);
    const int at = onig.search(static_cast<OnigRegex>(regex_), begin, end, begin + search_from, end,
                               region, ONIG_OPTION_NONE);
    if (at < 0) break;
    const auto start = static_cast<size_t>(region->beg[0]);
    const auto stop = static_cast<size_t>(region->end[0]);
    // An empty match right after the previous match is skipped (no endless loop).
    if (start == stop && have_last_end && last_end == stop) {
      search_from += search_from < text.size()
                         ? utf8_length(static_cast<unsigned char>(text[search_from]))
                         : 1;
      continue;
    }
    found.emplace_back(start, stop);
    search_from = stop;
    last_end = stop;
    have_last_end = true;
  }
  onig.region_free(region, 1);
  return found;
}

Pattern Pattern::literal(std::string s) {
  Pattern p;
  p.kind = Kind::kString;
  p.text = std::move(s);
  return p;
}

Pattern Pattern::expression(std::string s) {
  Pattern p;
  p.kind = Kind::kRegex;
  p.regex = std::make_shared<const Regex>(s);
  p.text = std::move(s);
  return p;
}

std::vector<Offsets> Pattern::find_all(std::string_view haystack) const {
  if (kind == Kind::kRegex) return regex->find_all(haystack);
  std::vector<Offsets> found;
  if (text.empty()) return found;
  for (size_t at = haystack.find(text); at != std::string_view::npos;
       at = haystack.find(text, at + text.size()))
    found.emplace_back(at, at + text.size());
  return found;
}

MatchList find_matches(const Pattern& pattern, std::string_view text) {
  if (text.empty()) return {{{0, 0}, false}};
  MatchList pieces;
  size_t previous = 0;
  for (const auto& [start, end] : pattern.find_all(text)) {
    if (previous != start) pieces.push_back({{previous, start}, false});
    pieces.push_back({{start, end}, true});
    previous = end;
  }
  if (previous != text.size()) pieces.push_back({{previous, text.size()}, false});
  return pieces;
}

MatchList find_matches(const std::function<bool(char32_t)>& is_match, std::string_view text) {
  if (text.empty()) return {{{0, 0}, false}};
  MatchList pieces;
  size_t last_offset = 0;
  const std::u32string chars = to_u32(text);
  size_t at = 0;
  for (char32_t c : chars) {
    const size_t length = utf8_length(c);
    if (is_match(c)) {
      if (last_offset < at) pieces.push_back({{last_offset, at}, false});
      pieces.push_back({{at, at + length}, true});
      last_offset = at + length;
    }
    at += length;
  }
  if (at > last_offset) pieces.push_back({{last_offset, at}, false});
  return pieces;
}

std::vector<Offsets> split_ranges(MatchList matches, SplitBehavior behavior, bool invert) {
  if (invert)
    for (auto& piece : matches) piece.second = !piece.second;
  // (range, remove) after regrouping, as HF's NormalizedString::split.
  MatchList grouped;
  switch (behavior) {
    case SplitBehavior::kRemoved:
      grouped = std::move(matches);
      break;
    case SplitBehavior::kIsolated:
      for (const auto& [range, is_match] : matches) grouped.push_back({range, false});
      break;
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const auto& [range, is_match] : matches) {
        if (is_match && !previous_match && !grouped.empty())
          grouped.back().first.second = range.second;
        else
          grouped.push_back({range, false});
        previous_match = is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous_match = false;
      for (auto it = matches.rbegin(); it != matches.rend(); ++it) {
        if (it->second && !previous_match && !grouped.empty())
          grouped.back().first.first = it->first.first;
        else
          grouped.push_back({it->first, false});
        previous_match = it->second;
      }
      std::reverse(grouped.begin(), grouped.end());
      break;
    }
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const auto& [range, is_match] : matches) {
        if (is_match == previous_match && !grouped.empty())
          grouped.back().first.second = range.second;
        else
          grouped.push_back({range, false});
        previous_match = is_match;
      }
      break;
    }
  }
  std::vector<Offsets> kept;
  for (const auto& [range, remove] : grouped)
    if (!remove) kept.push_back(range);
  return kept;
}

}  // namespace ctrainer::tokenizers
