#include "tests/e2e/golden_suite.h"

#include <fstream>

namespace kiln::e2e {

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::vector<std::string> GoldenInputShapes(const std::string& dir) {
  std::vector<std::string> shapes;
  std::ifstream in(dir + "/inputs.txt");
  std::string line;
  while (std::getline(in, line)) {
    size_t open = line.rfind('['), close = line.rfind(']');
    if (open == std::string::npos || close == std::string::npos || open == 0) continue;
    std::string name = line.substr(0, open - 1);
    std::string dims = line.substr(open + 1, close - open - 1);
    for (char& c : dims) if (c == ',') c = 'x';
    if (dims.empty()) continue;  // scalars are static already
    shapes.push_back(name + "=" + dims);
  }
  return shapes;
}

}  // namespace kiln::e2e
