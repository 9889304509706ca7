// One function per `ellm` subcommand; each takes the arguments after the
// subcommand's name and returns the process exit code (0 ok, 1 failure,
// 2 usage). Results go to stdout, logs and errors to stderr.
#pragma once

#include <string>
#include <vector>

namespace ellm::cli {

using Args = std::vector<std::string>;

int Info(const Args& args);        // info_command.cc
int Tokenize(const Args& args);    // tokenize_command.cc
int Generate(const Args& args);    // generate_command.cc
int Perplexity(const Args& args);  // perplexity_command.cc
int Bench(const Args& args);       // bench_command.cc
int Extract(const Args& args);     // extract_command.cc
int Jobs(const Args& args);        // jobs_command.cc
int Store(const Args& args);       // jobs_command.cc
int Summarize(const Args& args);   // summarize_command.cc
int Compare(const Args& args);     // summarize_command.cc
int Submit(const Args& args);      // submit_command.cc
int Batch(const Args& args);       // batch_command.cc
int Model(const Args& args);       // model_command.cc
int Serve(const Args& args);       // serve_command.cc

}  // namespace ellm::cli
