#include <ctrainer/distributed/slurm_hostlist.h>

#include <cctype>

#include <ctrainer/core/errors.h>

namespace ctrainer {
namespace {

ArgumentError malformed(const std::string& what, const std::string& text) {
  const bool node_list = what.find("node list") != std::string::npos;
  return ArgumentError("cannot parse " + what + " '" + text + "'; expected SLURM's syntax, e.g. " +
                       (node_list ? "'node[01-04,07]'" : "'2(x3),1'"));
}

int64_t parse_count(const std::string& digits, const std::string& what, const std::string& text) {
  if (digits.empty() || digits.size() > 9) throw malformed(what, text);
  for (char c : digits)
    if (!std::isdigit(static_cast<unsigned char>(c))) throw malformed(what, text);
  return std::stoll(digits);
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  // The first host is the first top-level comma-separated entry with every bracket group
  // replaced by the first number of its first range ("[01-04,07]" -> "01").
  std::string host;
  size_t i = 0;
  while (i < nodelist.size() && nodelist[i] != ',') {
    if (nodelist[i] == ']') throw malformed("SLURM node list", nodelist);
    if (nodelist[i] != '[') {
      host += nodelist[i++];
      continue;
    }
    const size_t close = nodelist.find(']', i);
    if (close == std::string::npos) throw malformed("SLURM node list", nodelist);
    const std::string ranges = nodelist.substr(i + 1, close - i - 1);
    const std::string first = ranges.substr(0, ranges.find_first_of(",-"));
    if (first.empty()) throw malformed("SLURM node list", nodelist);
    host += first;
    i = close + 1;
  }
  if (host.empty()) throw malformed("SLURM node list", nodelist);
  return host;
}

std::vector<int64_t> expand_slurm_tasks_per_node(const std::string& text) {
  std::vector<int64_t> counts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    // "N" or "N(xM)": N tasks on each of M nodes.
    const size_t paren = item.find('(');
    int64_t repeat = 1;
    if (paren != std::string::npos) {
      if (item.size() < paren + 4 || item.compare(paren, 2, "(x") != 0 || item.back() != ')')
        throw malformed("SLURM tasks per node", text);
      repeat = parse_count(item.substr(paren + 2, item.size() - paren - 3), "SLURM tasks per node",
                           text);
    }
    const int64_t tasks = parse_count(item.substr(0, paren), "SLURM tasks per node", text);
    counts.insert(counts.end(), repeat, tasks);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return counts;
}

}  // namespace ctrainer
