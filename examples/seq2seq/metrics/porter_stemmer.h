#pragma once
/// \file The Porter stemmer as rouge_score uses it: nltk's `PorterStemmer()` in its default
/// NLTK_EXTENSIONS mode (Porter's 1980 algorithm with Martin Porter's later changes and NLTK's
/// own: a table of irregular forms, no stemming of words of one or two letters, "ies"/"ied" of
/// four-letter words to "ie", "y" to "i" only after a consonant, "alli" and "logi" rules).
#include <string>
#include <string_view>

namespace ctrainer::text_metrics {

/// nltk's `PorterStemmer().stem(word)` (nltk 3.10, mode NLTK_EXTENSIONS, to_lowercase=True) for a
/// word of ASCII letters and digits, the tokens rouge_score's tokenizer produces: "running" ->
/// "run", "happiness" -> "happi", "skies" -> "sky". Upper-case ASCII letters are lowered first as
/// nltk does; any other byte is kept and counts as a consonant, so a word with non-ASCII letters
/// is not guaranteed to stem as nltk stems it (nltk would count code points, not bytes).
std::string porter_stem(std::string_view word);

}  // namespace ctrainer::text_metrics
