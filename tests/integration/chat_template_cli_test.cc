// --chat-template on the command line (issue #10): an unknown name is
// refused before anything is loaded or created, with the name and the known
// ones; naming the model's own template changes nothing; naming another
// changes the prompt the model sees, in `ellm generate --chat` and in the
// pipelines `ellm summarize` runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "run_cli.h"
#include "test_env.h"

namespace ellm::testing {
namespace {

namespace fs = std::filesystem;

// What `ellm generate` printed: the generated text (stdout) and the prompt's
// token count from the speed line on stderr.
struct Generated {
  int exit_code = -1;
  std::string text;
  int prompt_tokens = -1;
  std::string output;  // everything, for failure messages
};

Generated Generate(const std::string& model, const std::string& flags) {
  Generated g;
  g.exit_code = RunCli("generate --model '" + model +
                           "' --prompt 'Name one colour.' --max-tokens 4 --threads 2 " + flags,
                       &g.output);
  std::smatch m;
  if (std::regex_search(g.output, m, std::regex("prefill: (\\d+) tokens"))) {
    g.prompt_tokens = std::stoi(m[1]);
    g.text = m.prefix();  // stdout ends with "\n" before the stderr line
  }
  return g;
}

void ExpectRefused(const std::string& args) {
  std::string out;
  EXPECT_EQ(RunCli(args, &out), 2) << args << "\n" << out;
  EXPECT_NE(out.find("--chat-template"), std::string::npos) << out;
  EXPECT_NE(out.find("unknown chat template 'vicuna'"), std::string::npos) << out;
  EXPECT_NE(out.find("gemma, llama3, chatml"), std::string::npos) << out;
}

// Needs no model: the name is checked first.
TEST(ChatTemplateCli, UnknownNameIsRefusedBeforeAnythingIsOpened) {
  const std::string dir = MakeTempDir("ellm-chat-template");
  const std::string db = dir + "/store/ellm.db";
  std::ofstream(dir + "/note.txt") << "A short note.\n";
  std::ofstream(dir + "/m.yaml") << "id: m\npipeline: summarize-report\nitems:\n"
                                    "  - {id: a, documents: [note.txt]}\n";
  const std::string missing_model = dir + "/no-model.gguf";
  ExpectRefused("generate --model '" + missing_model + "' --prompt hi --chat-template vicuna");
  ExpectRefused("summarize '" + dir + "/note.txt' --model '" + missing_model + "' --db '" + db +
                "' --chat-template vicuna");
  ExpectRefused("compare '" + dir + "/note.txt' '" + dir + "/note.txt' --model '" + missing_model +
                "' --db '" + db + "' --chat-template vicuna");
  ExpectRefused("batch '" + dir + "/m.yaml' --model '" + missing_model + "' --db '" + db +
                "' --chat-template vicuna");
  EXPECT_FALSE(fs::exists(dir + "/store")) << "the store was created before the check";
  // The usage names the flag.
  std::string out;
  EXPECT_EQ(RunCli("generate --chat-template", &out), 2) << out;
  EXPECT_NE(out.find("--chat-template NAME"), std::string::npos) << out;
  fs::remove_all(dir);
}

TEST(ChatTemplateCli, GenerateWithTheModelsOwnTemplateIsUnchanged) {
  ELLM_REQUIRE_MODEL(model);
  const Generated detected = Generate(model, "--chat");
  const Generated named = Generate(model, "--chat --chat-template gemma");
  const Generated implied = Generate(model, "--chat-template gemma");  // implies --chat
  ASSERT_EQ(detected.exit_code, 0) << detected.output;
  ASSERT_EQ(named.exit_code, 0) << named.output;
  ASSERT_EQ(implied.exit_code, 0) << implied.output;
  ASSERT_GT(detected.prompt_tokens, 0) << detected.output;
  EXPECT_FALSE(detected.text.empty()) << detected.output;
  EXPECT_EQ(named.prompt_tokens, detected.prompt_tokens);
  EXPECT_EQ(named.text, detected.text);
  EXPECT_EQ(implied.prompt_tokens, detected.prompt_tokens);
  EXPECT_EQ(implied.text, detected.text);
}

// Gemma's vocabulary has <start_of_turn> as one token but not ChatML's
// <|im_start|>, which it spells out in pieces: more prompt tokens. Llama 3's
// header markers likewise.
TEST(ChatTemplateCli, GenerateWithAnotherTemplateChangesThePrompt) {
  ELLM_REQUIRE_MODEL(model);
  const Generated gemma = Generate(model, "--chat-template gemma");
  const Generated chatml = Generate(model, "--chat-template chatml");
  const Generated llama3 = Generate(model, "--chat-template llama3");
  const Generated plain = Generate(model, "");
  for (const Generated* g : {&gemma, &chatml, &llama3, &plain}) {
    ASSERT_EQ(g->exit_code, 0) << g->output;
    ASSERT_GT(g->prompt_tokens, 0) << g->output;
  }
  EXPECT_GT(chatml.prompt_tokens, gemma.prompt_tokens);
  EXPECT_GT(llama3.prompt_tokens, gemma.prompt_tokens);
  EXPECT_NE(chatml.prompt_tokens, llama3.prompt_tokens);
  EXPECT_GT(gemma.prompt_tokens, plain.prompt_tokens);  // the template was applied at all
}

// A .jinja file given to --chat-template is rendered by the interpreter: a
// Jinja template that writes Gemma's format gives the same prompt and the
// same greedy reply as the built-in gemma format; one that does not parse
// is refused before the model is loaded, naming the file and the line.
TEST(ChatTemplateCli, GenerateWithAJinjaFileRendersIt) {
  ELLM_REQUIRE_MODEL(model);
  const std::string dir = MakeTempDir("ellm-chat-jinja");
  std::ofstream(dir + "/gemma.jinja") << R"({{ bos_token }}
{%- for message in messages -%}
{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}
{{ '<start_of_turn>' + role + '\n' + message['content'] + '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}
)";
  std::ofstream(dir + "/broken.jinja") << "{% for m in messages %}\n{% if %}\n{% endfor %}\n";
  const Generated builtin = Generate(model, "--chat-template gemma");
  const Generated file = Generate(model, "--chat-template '" + dir + "/gemma.jinja'");
  ASSERT_EQ(builtin.exit_code, 0) << builtin.output;
  ASSERT_EQ(file.exit_code, 0) << file.output;
  EXPECT_EQ(file.prompt_tokens, builtin.prompt_tokens) << file.output;
  EXPECT_EQ(file.text, builtin.text);
  std::string out;
  EXPECT_EQ(RunCli("generate --model '" + model + "' --prompt hi --chat-template '" + dir +
                       "/broken.jinja'",
                   &out),
            2)
      << out;
  EXPECT_NE(out.find("broken.jinja"), std::string::npos) << out;
  EXPECT_NE(out.find("line 2"), std::string::npos) << out;
  EXPECT_EQ(RunCli("generate --model '" + model + "' --prompt hi --chat-template '" + dir +
                       "/missing.jinja'",
                   &out),
            2)
      << out;
  EXPECT_NE(out.find("cannot be read"), std::string::npos) << out;
  fs::remove_all(dir);
}

// --messages gives a whole conversation (implies --chat); a --prompt is
// its last user turn; --file reads the prompt from a file. Each gives
// exactly what the equivalent --prompt gives.
TEST(ChatTemplateCli, GenerateTakesAConversationOrAPromptFile) {
  ELLM_REQUIRE_MODEL(model);
  const std::string dir = MakeTempDir("ellm-chat-messages");
  std::ofstream(dir + "/one.json") << R"([{"role": "user", "content": "Name one colour."}])";
  std::ofstream(dir + "/two.json") << R"([{"role": "user", "content": "Name one colour."},
    {"role": "assistant", "content": "Red."}, {"role": "user", "content": "Name one colour."}])";
  std::ofstream(dir + "/first.json") << R"([{"role": "user", "content": "Name one colour."},
    {"role": "assistant", "content": "Red."}])";
  std::ofstream(dir + "/prompt.txt") << "Name one colour.";
  std::ofstream(dir + "/bad.json") << R"([{"role": "user", "content": "a"}, {"role": 3}])";
  const Generated chat = Generate(model, "--chat");
  const auto run = [&](const std::string& flags) {
    Generated g;
    g.exit_code =
        RunCli("generate --model '" + model + "' --max-tokens 4 --threads 2 " + flags, &g.output);
    std::smatch m;
    if (std::regex_search(g.output, m, std::regex("prefill: (\\d+) tokens"))) {
      g.prompt_tokens = std::stoi(m[1]);
      g.text = m.prefix();
    }
    return g;
  };
  const Generated one = run("--messages '" + dir + "/one.json'");
  const Generated two = run("--messages '" + dir + "/two.json'");
  const Generated first_plus_prompt =
      run("--messages '" + dir + "/first.json' --prompt 'Name one colour.'");
  const Generated file = run("--chat --file '" + dir + "/prompt.txt'");
  for (const Generated* g : {&chat, &one, &two, &first_plus_prompt, &file}) {
    ASSERT_EQ(g->exit_code, 0) << g->output;
    ASSERT_GT(g->prompt_tokens, 0) << g->output;
  }
  EXPECT_EQ(one.prompt_tokens, chat.prompt_tokens);
  EXPECT_EQ(one.text, chat.text);
  EXPECT_EQ(file.prompt_tokens, chat.prompt_tokens);
  EXPECT_EQ(file.text, chat.text);
  EXPECT_GT(two.prompt_tokens, one.prompt_tokens + 5);
  EXPECT_EQ(first_plus_prompt.prompt_tokens, two.prompt_tokens);
  EXPECT_EQ(first_plus_prompt.text, two.text);
  std::string out;
  EXPECT_EQ(RunCli("generate --model '" + model + "' --messages '" + dir + "/bad.json'", &out), 2);
  EXPECT_NE(out.find("message 1 has no string \"role\""), std::string::npos) << out;
  fs::remove_all(dir);
}

// summarize (and compare and batch, through the same LocalRuntime): the
// flag reaches the pipelines' generator. A chat-format pipeline of one
// short document and two generated tokens keeps it fast.
TEST(ChatTemplateCli, SummarizeUsesTheNamedTemplate) {
  ELLM_REQUIRE_MODEL(model);
  const std::string dir = MakeTempDir("ellm-chat-template");
  fs::create_directories(dir + "/pipelines");
  std::ofstream(dir + "/pipelines/tiny-chat.yaml") << R"(name: tiny-chat
version: "1"
format: chat
documents: {min: 1, max: 1}
prompt: |
  {{document}}
  Name one colour from the note above.
generation: {max_tokens: 2, temperature: 0}
)";
  std::ofstream(dir + "/note.txt") << "The door is red and the wall is white.\n";
  auto prompt_tokens = [&](const std::string& flags) {
    std::string out;
    const int rc = RunCli("summarize '" + dir + "/note.txt' --pipeline tiny-chat --pipelines '" +
                              dir + "/pipelines' --model '" + model + "' --db '" + dir +
                              "/ellm.db' --threads 2 --json " + flags,
                          &out);
    std::smatch m;
    EXPECT_EQ(rc, 0) << out;
    if (rc != 0 || !std::regex_search(out, m, std::regex("\"prompt_tokens\": (\\d+)"))) {
      ADD_FAILURE() << out;
      return -1;
    }
    return std::stoi(m[1]);
  };
  const int detected = prompt_tokens("");
  const int gemma = prompt_tokens("--chat-template gemma");
  const int chatml = prompt_tokens("--chat-template chatml");
  EXPECT_GT(detected, 0);
  EXPECT_EQ(gemma, detected);
  EXPECT_GT(chatml, gemma);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ellm::testing
