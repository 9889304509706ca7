// `ellm info MODEL` ends with the verdict: `runs: yes`, or `runs: no — ` and
// the first reason (the key or tensor, and why); `--json` carries the same
// as "runs" and "runs_error". Checked on the real model and on files this
// build must refuse.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "gguf_builder.h"
#include "run_cli.h"
#include "test_env.h"

namespace ellm::testing {
namespace {

std::string LastLine(const std::string& out) {
  std::string s = out;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s.substr(s.rfind('\n') + 1);
}

// Every command answers --help and -h on stdout with exit code 0.
TEST(Cli, EveryCommandAnswersHelp) {
  for (const std::string cmd :
       {"info", "tokenize", "generate", "perplexity", "bench", "extract", "summarize", "compare",
        "batch", "submit", "jobs", "model", "cpu"}) {
    for (const char* flag : {"--help", "-h"}) {
      std::string out;
      EXPECT_EQ(RunCli(cmd + " " + flag + " 2>/dev/null", &out), 0) << cmd << " " << flag;
      EXPECT_NE(out.find("ellm " + cmd), std::string::npos) << cmd << " " << flag << ": " << out;
    }
  }
  std::string out;
  RunCli("generate --help", &out);
  EXPECT_NE(out.find("--messages"), std::string::npos) << out;
  EXPECT_NE(RunCli("nonsense --help 2>/dev/null", &out), 0);
}

// `ellm help CMD` prints what `ellm CMD --help` prints; `ellm help` the
// top-level usage.
TEST(Cli, HelpCommandPrintsACommandsUsage) {
  for (const std::string cmd : {"generate", "tokenize", "extract", "jobs"}) {
    std::string help, flag;
    EXPECT_EQ(RunCli("help " + cmd, &help), 0) << help;
    EXPECT_EQ(RunCli(cmd + " --help", &flag), 0) << flag;
    EXPECT_EQ(help, flag) << cmd;
  }
  std::string usage;
  EXPECT_EQ(RunCli("help", &usage), 0);
  EXPECT_NE(usage.find("usage: ellm <command>"), std::string::npos) << usage;
  EXPECT_EQ(RunCli("help nonsense", &usage), 2);
}

// Short flags other than the aliases (and -h) are unknown flags: exit 2.
TEST(Cli, UnknownShortFlagIsAnError) {
  for (const std::string args : {"generate -q", "generate -m m.gguf -p hi -q", "info -q m.gguf",
                                 "jobs list -q", "extract -m x.pdf"}) {
    std::string out;
    EXPECT_EQ(RunCli(args, &out), 2) << args << ": " << out;
    EXPECT_NE(out.find("unknown flag -"), std::string::npos) << args << ": " << out;
  }
}

// The short flags llama.cpp users type give the same run as the long ones.
TEST(Cli, ShortFlagsEqualLongFlags) {
  ELLM_REQUIRE_MODEL(model);
  const std::string prompt = " \"The capital of France is\"";
  // Only stdout (the text): RunCli adds 2>&1 at the end, so the speed lines
  // on stderr are dropped before it, in a command of their own.
  const std::string text_only = " 2>/dev/null; exit $?";
  std::string shrt, lng;
  ASSERT_EQ(RunCli("generate -m '" + model + "' -p" + prompt + " -n 4 -s 1 -t 2 -c 512" + text_only,
                   &shrt),
            0)
      << shrt;
  ASSERT_EQ(RunCli("generate --model '" + model + "' --prompt" + prompt +
                       " --max-tokens 4 --seed 1 --threads 2 --ctx 512" + text_only,
                   &lng),
            0)
      << lng;
  EXPECT_FALSE(shrt.empty());
  EXPECT_EQ(shrt, lng);
}

std::set<std::string> Words(const std::string& text) {
  std::istringstream in(text);
  std::set<std::string> out;
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

std::string Join(const std::set<std::string>& s) {
  std::string out;
  for (const std::string& w : s) out += w + " ";
  return out;
}

// Regression: `ellm CMD --help` left out flags the command takes
// (generate's --top-k, batch's --config, ...). Every flag --list-flags gives
// is named in --help.
TEST(Cli, HelpNamesEveryFlagTheCommandTakes) {
  for (const std::string cmd : {"info", "tokenize", "generate", "perplexity", "bench", "extract",
                                "summarize", "compare", "batch", "submit", "jobs list", "jobs show",
                                "jobs prune", "model", "serve", "store backup"}) {
    std::string flags, help;
    ASSERT_EQ(RunCli(cmd + " --list-flags", &flags), 0) << cmd << ": " << flags;
    ASSERT_EQ(RunCli(cmd + " --help", &help), 0) << cmd << ": " << help;
    for (const std::string& flag : Words(flags)) {
      // The whole flag: "--ctx" is not named by "--ctx-size".
      bool named = false;
      for (size_t at = help.find(flag); at != std::string::npos && !named;
           at = help.find(flag, at + 1)) {
        const size_t end = at + flag.size();
        named = end == help.size() || !(std::isalnum(static_cast<unsigned char>(help[end])) ||
                                        help[end] == '-' || help[end] == '_');
      }
      EXPECT_TRUE(named) << "ellm " << cmd << " --help does not name " << flag << ":\n" << help;
    }
  }
}

// summarize and compare take the KV flags of bench and perplexity, checked
// before anything is opened or created (the store, the model).
TEST(Cli, SummarizeAndCompareRefuseBadKvFlagsFirst) {
  const std::string dir = MakeTempDir("ellm-cli-kv");
  { std::ofstream(dir + "/a.txt") << "One two three four.\n"; }
  const std::string doc = "'" + dir + "/a.txt' ";
  const std::string rest = "--model '" + dir + "/none.gguf' --db '" + dir + "/w.db'";
  std::string out;
  EXPECT_EQ(RunCli("summarize " + doc + rest + " --attn-scores fast", &out), 2) << out;
  EXPECT_NE(out.find("--attn-scores"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(RunCli("compare " + doc + doc + rest + " --kv-type f16 --attn-weights bf16", &out), 2)
      << out;
  EXPECT_NE(out.find("bf16 attention weights"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/w.db"));
  // Good ones pass on to the run (here: to the missing model).
  out.clear();
  EXPECT_EQ(RunCli("summarize " + doc + rest + " --attn-scores f32 --kv-type bf16", &out), 1)
      << out;
  EXPECT_NE(out.find("no model at"), std::string::npos) << out;
  std::filesystem::remove_all(dir);
}

// Regression: `ellm summarize F --pipeline document-stats` failed with "no
// model at ..." although document-stats runs none.
TEST(Cli, APipelineWithoutAModelNeedsNone) {
  const std::string dir = MakeTempDir("ellm-cli-stats");
  { std::ofstream(dir + "/a.txt") << "One two three four.\n"; }
  const std::string args = "summarize '" + dir + "/a.txt' --model '" + dir + "/none.gguf' --db '" +
                           dir + "/w.db' --json";
  std::string out;
  EXPECT_EQ(RunCli(args + " --pipeline document-stats", &out), 0) << out;
  EXPECT_NE(out.find("\"pipeline\": \"document-stats\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"words\": 4"), std::string::npos) << out;
  // A pipeline that runs the model still needs it.
  EXPECT_EQ(RunCli(args + " --pipeline summarize-report", &out), 1) << out;
  EXPECT_NE(out.find("no model at"), std::string::npos) << out;
  std::filesystem::remove_all(dir);
}

// cli/completion/ellm.bash offers every subcommand of the top-level usage,
// and for each exactly the long flags the command accepts (--list-flags).
TEST(Cli, CompletionMatchesTheCommands) {
  const std::string script = SourceDir() + "/cli/completion/ellm.bash";
  ASSERT_TRUE(std::filesystem::exists(script)) << script;
  auto bash = [&](const std::string& expr) {
    std::string out;
    const std::string cmd = "bash -c 'source \"" + script + "\" && " + expr + "'";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return out;
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
    EXPECT_EQ(pclose(p), 0) << cmd;
    return out;
  };
  const std::set<std::string> completed = Words(bash("echo $_ellm_commands"));
  std::string usage;
  ASSERT_EQ(RunCli("--help", &usage), 0);
  std::set<std::string> listed;
  std::istringstream lines(usage);
  for (std::string line; std::getline(lines, line);) {
    // Command lines: two spaces, then the command ("version, --version").
    if (line.size() < 3 || line.rfind("  ", 0) != 0 || line[2] == ' ') continue;
    std::string word = line.substr(2, line.find_first_of(" ,", 2) - 2);
    listed.insert(word);
  }
  ASSERT_GE(listed.size(), 10u) << usage;
  for (const std::string& cmd : listed) {
    EXPECT_TRUE(completed.count(cmd)) << cmd << " is not completed";
  }
  for (const std::string& cmd : completed) {
    // jobs and store parse their flags after their own subcommand.
    std::string args = cmd == "jobs" ? "jobs list" : cmd == "store" ? "store backup" : cmd;
    std::string real;
    if (cmd != "cpu" && cmd != "version" && cmd != "help") {
      EXPECT_EQ(RunCli(args + " --list-flags", &real), 0) << cmd << ": " << real;
    }
    EXPECT_EQ(Join(Words(bash("_ellm_flags " + cmd))), Join(Words(real))) << cmd;
  }
}

TEST(InfoCli, TheRealModelRuns) {
  ELLM_REQUIRE_MODEL(model);
  std::string out;
  ASSERT_EQ(RunCli("info '" + model + "'", &out), 0) << out;
  EXPECT_EQ(LastLine(out), "runs: yes") << out;
  std::string json;
  ASSERT_EQ(RunCli("info --json '" + model + "' 2>/dev/null", &json), 0) << json;
  const auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["runs"], true);
  EXPECT_FALSE(j.contains("runs_error"));
}

TEST(InfoCli, FilesThisBuildCannotRunSayWhy) {
  ELLM_REQUIRE_VOCABS(shared);
  const std::string dir = MakeTempDir("ellm-info");
  struct Case {
    std::string name;
    std::string file;
    std::string reason;  // in the verdict
  };
  // A vocabulary-only file: the tokenizer is fine, the weights are missing.
  const std::string vocab = shared + "/ggml-vocab-llama-spm.gguf";
  GgufBuilder unknown_pre;
  unknown_pre.Str("general.architecture", "llama")
      .Str("tokenizer.ggml.model", "gpt2")
      .Str("tokenizer.ggml.pre", "no-such-pre")
      .StrArray("tokenizer.ggml.tokens", {"a", "b", "ab"})
      .StrArray("tokenizer.ggml.merges", {"a b"});
  ASSERT_TRUE(unknown_pre.WriteTo(dir + "/pre.gguf"));
  GgufBuilder template_error;
  template_error.Str("general.architecture", "llama")
      .Str("tokenizer.ggml.model", "gpt2")
      .Str("tokenizer.ggml.pre", "gpt-2")
      .StrArray("tokenizer.ggml.tokens", {"a", "b", "ab"})
      .StrArray("tokenizer.ggml.merges", {"a b"})
      .Str("tokenizer.chat_template", "{% for m in messages %}\n{{ m.content }\n{% endfor %}");
  ASSERT_TRUE(template_error.WriteTo(dir + "/tmpl.gguf"));
  const Case cases[] = {
      {"weights missing", vocab, "tensor 'token_embd.weight'"},
      {"unknown pre-tokenizer", dir + "/pre.gguf", "no-such-pre"},
      {"chat template", dir + "/tmpl.gguf", "tokenizer.chat_template"},
  };
  for (const Case& c : cases) {
    std::string out;
    ASSERT_EQ(RunCli("info '" + c.file + "'", &out), 0) << c.name << "\n" << out;
    const std::string verdict = LastLine(out);
    EXPECT_EQ(verdict.rfind("runs: no \u2014 ", 0), 0u) << c.name << ": " << verdict;
    EXPECT_NE(verdict.find(c.reason), std::string::npos) << c.name << ": " << verdict;
    std::string json;
    ASSERT_EQ(RunCli("info --json '" + c.file + "' 2>/dev/null", &json), 0) << json;
    const auto j = nlohmann::json::parse(json);
    EXPECT_EQ(j["runs"], false) << c.name;
    EXPECT_NE(j["runs_error"].get<std::string>().find(c.reason), std::string::npos) << c.name;
  }
  std::filesystem::remove_all(dir);
}

// Issue 53: a GGUF whose chat template is hostile (it overflows, recurses or
// runs away) does not take `ellm info` down; the verdict says `runs: no` and
// names the bound the load-time dry run hit, in well under the time such a
// template ran before it was bounded (until killed).
TEST(InfoCli, HostileChatTemplateRunsNoWithItsReason) {
  const std::string dir = MakeTempDir("ellm-info-hostile");
  struct Case {
    std::string name;
    std::string source;
    std::string reason;
  };
  const Case cases[] = {
      {"overflow", "{{ (-9223372036854775807-1) // -1 }}", "integer overflow in '//'"},
      {"cycle", "{% set ns=namespace(a=0) %}{% set ns.a=ns %}{{ ns }}", "cyclic"},
      {"parens", "{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}",
       "parser nesting deeper than 128"},
      {"power", "{{ 2 ** 9223372036854775807 }}", "integer overflow in '**'"},
      {"macros",
       "{% macro f(n) %}{% if n > 0 %}{{ f(n-1) }}{{ f(n-1) }}{% endif %}{% endmacro %}"
       "{{ f(40) }}",
       "more than 100000 macro calls"},
      {"repeat", "{{ \"x\" * 10**11 }}", "string longer than the limit of 16777216 bytes"},
      {"steps", "{% for i in range(100000) %}{% for j in range(100) %}{% endfor %}{% endfor %}",
       "step budget of 2000000 exceeded"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    GgufBuilder b;
    b.Str("general.architecture", "llama")
        .Str("tokenizer.ggml.model", "gpt2")
        .Str("tokenizer.ggml.pre", "gpt-2")
        .StrArray("tokenizer.ggml.tokens", {"a", "b", "ab"})
        .StrArray("tokenizer.ggml.merges", {"a b"})
        .Str("tokenizer.chat_template", c.source);
    const std::string file = dir + "/" + c.name + ".gguf";
    ASSERT_TRUE(b.WriteTo(file));
    std::string out;
    ASSERT_EQ(RunCli("info '" + file + "'", &out), 0) << out.substr(0, 2000);
    const std::string verdict = LastLine(out);
    EXPECT_EQ(verdict.rfind("runs: no \u2014 ", 0), 0u) << verdict;
    // Parsing refuses the parentheses; the dry run the others.
    EXPECT_NE(verdict.find("tokenizer.chat_template of '" + file + "': chat template line 1: "),
              std::string::npos)
        << verdict;
    EXPECT_NE(verdict.find(c.reason), std::string::npos) << verdict;
    std::string json;
    ASSERT_EQ(RunCli("info --json '" + file + "' 2>/dev/null", &json), 0) << json.substr(0, 2000);
    const auto j = nlohmann::json::parse(json);
    EXPECT_EQ(j["runs"], false);
    EXPECT_NE(j["runs_error"].get<std::string>().find(c.reason), std::string::npos)
        << j["runs_error"];
  }
  // A harmless template passes the dry run: the verdict moves on to what
  // this file lacks (its hyperparameters and weights).
  GgufBuilder good;
  good.Str("general.architecture", "llama")
      .Str("tokenizer.ggml.model", "gpt2")
      .Str("tokenizer.ggml.pre", "gpt-2")
      .StrArray("tokenizer.ggml.tokens", {"a", "b", "ab"})
      .StrArray("tokenizer.ggml.merges", {"a b"})
      .Str("tokenizer.chat_template",
           "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}");
  ASSERT_TRUE(good.WriteTo(dir + "/good.gguf"));
  std::string out;
  ASSERT_EQ(RunCli("info '" + dir + "/good.gguf'", &out), 0) << out;
  EXPECT_EQ(LastLine(out).find("chat template"), std::string::npos) << LastLine(out);
  EXPECT_NE(LastLine(out).find("llama.block_count"), std::string::npos) << LastLine(out);
  std::filesystem::remove_all(dir);
}

// The real model (Gemma 3, whose own template passes the dry run) with a
// hostile --chat-template: generate --chat refuses at load with the reason,
// exit 1, no crash.
TEST(InfoCli, GenerateRefusesAHostileChatTemplateFile) {
  ELLM_REQUIRE_MODEL(model);
  const std::string dir = MakeTempDir("ellm-generate-hostile");
  { std::ofstream(dir + "/h.jinja") << "{{ (-9223372036854775807-1) // -1 }}"; }
  std::string out;
  EXPECT_EQ(RunCli("generate -m '" + model + "' --chat --chat-template '" + dir +
                       "/h.jinja' -p hi -n 2 -t 2 -c 256",
                   &out),
            1)
      << out;
  EXPECT_NE(out.find("integer overflow in '//'"), std::string::npos) << out;
  EXPECT_NE(out.find("refused by a dry run at load"), std::string::npos) << out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ellm::testing
