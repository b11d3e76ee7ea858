// ctrainer_parity_text_metrics INPUT.json OUTPUT.json: our text metrics on the cases of
// text_metrics_parity.py, which compares them with rouge_score, nltk and sacrebleu.
//
// INPUT: {"rouge_pairs": [[prediction, reference], ...], "stem_words": [...],
//         "tokenize_13a": [...], "lower": [...],
//         "bleu_cases": [{"hypotheses": [...], "references": [[...], ...], "smooth_method": "exp",
//                         "smooth_value": null, "lowercase": false, "tokenize": "13a",
//                         "use_effective_order": false}, ...],
//         "chrf_cases": [{"hypotheses": [...], "references": [[...], ...], "char_order": 6,
//                         "word_order": 0, "beta": 2, "lowercase": false, "whitespace": false,
//                         "eps_smoothing": false}, ...]}
// OUTPUT: per-pair ROUGE ([precision, recall, fmeasure] per type) and corpus means, with
// ("stemmed") and without ("plain") the stemmer; stems; 13a tokenizations; lower-cased texts;
// one BLEU object and one chrF object per case. Doubles are written to full precision.
#include <ctrainer/examples/seq2seq/metrics/bleu.h>
#include <ctrainer/examples/seq2seq/metrics/chrf.h>
#include <ctrainer/examples/seq2seq/metrics/porter_stemmer.h>
#include <ctrainer/examples/seq2seq/metrics/python_text.h>
#include <ctrainer/examples/seq2seq/metrics/rouge.h>

#include <exception>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace ctrainer {
namespace text_metrics_dump {

using nlohmann::json;
namespace tm = ctrainer::text_metrics;

json rouge_outputs(const std::vector<std::string>& predictions,
                   const std::vector<std::string>& references, bool use_stemmer) {
  json per_pair = json::array();
  for (std::size_t i = 0; i < predictions.size(); ++i) {
    json scores = json::object();
    for (const auto& [rouge_type, score] :
         tm::rouge_scores(predictions[i], references[i], use_stemmer))
      scores[rouge_type] = {score.precision, score.recall, score.fmeasure};
    per_pair.push_back(std::move(scores));
  }
  json corpus = json::object();
  if (!predictions.empty())
    for (const auto& [rouge_type, mean] : tm::rouge_corpus(predictions, references, use_stemmer))
      corpus[rouge_type] = mean;
  return {{"pairs", per_pair}, {"corpus", corpus}};
}

tm::BleuSmoothing smoothing_named(const std::string& name) {
  if (name == "exp") return tm::BleuSmoothing::kExp;
  if (name == "floor") return tm::BleuSmoothing::kFloor;
  if (name == "add-k") return tm::BleuSmoothing::kAddK;
  if (name == "none") return tm::BleuSmoothing::kNone;
  throw std::invalid_argument("unknown smooth_method " + name);
}

json bleu_output(const json& bleu_case) {
  tm::BleuOptions options;
  options.smooth_method = smoothing_named(bleu_case.value("smooth_method", "exp"));
  if (bleu_case.contains("smooth_value") && !bleu_case["smooth_value"].is_null())
    options.smooth_value = bleu_case["smooth_value"].get<double>();
  options.lowercase = bleu_case.value("lowercase", false);
  options.use_effective_order = bleu_case.value("use_effective_order", false);
  const std::string tokenizer = bleu_case.value("tokenize", "13a");
  if (tokenizer != "13a" && tokenizer != "none")
    throw std::invalid_argument("unknown tokenize " + tokenizer);
  options.tokenize = tokenizer == "13a" ? tm::BleuTokenizer::k13a : tm::BleuTokenizer::kNone;
  const tm::BleuScore score = tm::corpus_bleu(
      bleu_case.at("hypotheses").get<std::vector<std::string>>(),
      bleu_case.at("references").get<std::vector<std::vector<std::string>>>(), options);
  return {{"score", score.score},           {"counts", score.counts}, {"totals", score.totals},
          {"precisions", score.precisions}, {"bp", score.bp},         {"sys_len", score.sys_len},
          {"ref_len", score.ref_len}};
}

json chrf_output(const json& chrf_case) {
  tm::ChrfOptions options;
  options.char_order = chrf_case.value("char_order", 6);
  options.word_order = chrf_case.value("word_order", 0);
  options.beta = chrf_case.value("beta", 2.0);
  options.lowercase = chrf_case.value("lowercase", false);
  options.whitespace = chrf_case.value("whitespace", false);
  options.eps_smoothing = chrf_case.value("eps_smoothing", false);
  const tm::ChrfScore score = tm::corpus_chrf(
      chrf_case.at("hypotheses").get<std::vector<std::string>>(),
      chrf_case.at("references").get<std::vector<std::vector<std::string>>>(), options);
  return {{"score", score.score}, {"statistics", score.statistics}};
}

int run(const std::string& input_path, const std::string& output_path) {
  std::ifstream input(input_path);
  if (!input) throw std::runtime_error("cannot read " + input_path);
  const json cases = json::parse(input);

  std::vector<std::string> predictions;
  std::vector<std::string> references;
  for (const auto& pair : cases.value("rouge_pairs", json::array())) {
    predictions.push_back(pair.at(0).get<std::string>());
    references.push_back(pair.at(1).get<std::string>());
  }
  json out;
  out["rouge"] = {{"stemmed", rouge_outputs(predictions, references, true)},
                  {"plain", rouge_outputs(predictions, references, false)}};
  out["stems"] = json::array();
  for (const auto& word : cases.value("stem_words", json::array()))
    out["stems"].push_back(tm::porter_stem(word.get<std::string>()));
  out["tokens_13a"] = json::array();
  for (const auto& line : cases.value("tokenize_13a", json::array()))
    out["tokens_13a"].push_back(tm::tokenize_13a(line.get<std::string>()));
  out["lower"] = json::array();
  for (const auto& text : cases.value("lower", json::array()))
    out["lower"].push_back(tm::python_lower(text.get<std::string>()));
  out["bleu"] = json::array();
  for (const auto& bleu_case : cases.value("bleu_cases", json::array()))
    out["bleu"].push_back(bleu_output(bleu_case));
  out["chrf"] = json::array();
  for (const auto& chrf_case : cases.value("chrf_cases", json::array()))
    out["chrf"].push_back(chrf_output(chrf_case));

  std::ofstream output(output_path);
  output << out.dump() << '\n';
  if (!output) throw std::runtime_error("cannot write " + output_path);
  return 0;
}

}  // namespace text_metrics_dump
}  // namespace ctrainer

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: " << argv[0] << " INPUT.json OUTPUT.json\n";
    return 2;
  }
  try {
    return ctrainer::text_metrics_dump::run(argv[1], argv[2]);
  } catch (const std::exception& error) {
    std::cerr << "ctrainer_parity_text_metrics: " << error.what() << '\n';
    return 1;
  }
}
