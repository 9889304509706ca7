// The pre-tokenizers of llama.cpp v0.5.0 as data: the expression lists of
// llm_tokenizer_bpe's constructor (src/llama-vocab.cpp), one per pre-type,
// and the tokenizer.ggml.pre names llama_vocab::impl::load accepts with the
// flags it sets for each. Adding one is an expression list (if new), a
// pre-type line and a name line.
#include "tokenizer/pre_tokenizer.h"

namespace ellm::tokenizer {
namespace {

// The expressions are copied verbatim from llama.cpp (so that they can be
// compared with it, and so that the scanner lookup, which matches whole
// expressions as llama.cpp does, finds them); hence no line breaking here.
// Comments name the LLAMA_VOCAB_PRE_TYPE_* values that use each list.
// clang-format off
// LLAMA3, DBRX, SMAUG, CHATGLM4
constexpr std::string_view kLlama3Exprs[] = {
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
};
// JAIS2
constexpr std::string_view kJais2Exprs[] = {
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}",
};
// DEEPSEEK_LLM
constexpr std::string_view kDeepseekLlmExprs[] = {
    "[\r\n]",
    "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
    "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
    "\\s+$",
    "[一-龥ࠀ-一가-퟿]+",
    "\\p{N}+",
};
// DEEPSEEK3_LLM, HUNYUAN_DENSE, JOYAI_LLM, HY_V4
constexpr std::string_view kDeepseekV3Exprs[] = {
    "\\p{N}{1,3}",
    "[一-龥぀-ゟ゠-ヿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
};
// SPARK2_5
constexpr std::string_view kSpark25Exprs[] = {
    "\\p{N}{1,3}",
    "[一-龥぀-ゟ゠-ヿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+",
    "\\p{N}",
};
// YOUTU
constexpr std::string_view kYoutuExprs[] = {
    "[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+",
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
};
// DEEPSEEK_CODER
constexpr std::string_view kDeepseekCoderExprs[] = {
    "[\r\n]",
    "\\s?\\p{L}+",
    "\\s?\\p{P}+",
    "[一-龥ࠀ-一가-퟿]+",
    "\\p{N}",
};
// FALCON
constexpr std::string_view kFalconExprs[] = {
    "[\\p{P}\\$\\+<=>\\^~\\|`]+",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    "[0-9][0-9][0-9]",
};
// STARCODER, REFACT, COMMAND_R, SMOLLM, CODESHELL, EXAONE, MINERVA, MELLUM2
constexpr std::string_view kStarcoderExprs[] = {
    "\\p{N}",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
};
// GPT2, MPT, OLMO, JAIS, TRILLION, GRANITE_DOCLING
constexpr std::string_view kGpt2Exprs[] = {
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
};
// STABLELM2, QWEN2, HUNYUAN, SOLAR_OPEN, GROK_2
constexpr std::string_view kQwen2Exprs[] = {
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
};
// QWEN35
constexpr std::string_view kQwen35Exprs[] = {
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
};
// PORO, BLOOM, GPT3_FINNISH
constexpr std::string_view kPoroExprs[] = {
    " ?[^(\\s|.,!?…。，、।۔،)]+",
};
// VIKING
constexpr std::string_view kVikingExprs[] = {
    " ?[^(\\s|.,!?…。，、।۔،)]+",
    "\\p{N}",
};
// TEKKEN
constexpr std::string_view kTekkenExprs[] = {
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
};
// CHAMELEON
constexpr std::string_view kChameleonExprs[] = {
    "<sentinel:[0-9]+>",
    "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
    "([\\t\\n]|    |  )",
    "\\p{N}",
    "[\\p{P}!-/:-@\\[-`{-~]",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
};
// GPT4O, MINIMAX_M2
constexpr std::string_view kGpt4oExprs[] = {
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
};
// GRANITE_EMB_MULTI
constexpr std::string_view kGraniteEmbMultiExprs[] = {
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
};
// TINY_AYA
constexpr std::string_view kTinyAyaExprs[] = {
    "\\d{1,3}(?=(?:\\d{3})*\\b)",
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
};
// KIMI_K2
constexpr std::string_view kKimiK2Exprs[] = {
    "\\p{Han}+",
};
// SUPERBPE
constexpr std::string_view kSuperbpeExprs[] = {
    "\\p{N}+",
    "(?=(\\d{3})+(?!\\d))",
};
// BAILINGMOE
constexpr std::string_view kBailingmoeExprs[] = {
    "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
};
// SEED_CODER
constexpr std::string_view kSeedCoderExprs[] = {
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
};
// UFAKZEKA
constexpr std::string_view kUfakzekaExprs[] = {
    "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
};
// AFMOE
constexpr std::string_view kAfmoeExprs[] = {
    "\\p{AFMoE_digits}",
    "[一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
};
// LAGUNA
constexpr std::string_view kLagunaExprs[] = {
    "[^\\n]+|[\\n]+",
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
};
// EXAONE_MOE
constexpr std::string_view kExaoneMoeExprs[] = {
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
};
// GEMMA4, SARVAM_MOE
constexpr std::string_view kNewlineRunsExprs[] = {
    "[^\\n]+|[\\n]+",
};
// MINICPM5
constexpr std::string_view kMinicpm5Exprs[] = {
    "\\p{N}{1,3}",
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
};
// WHITESPACE
constexpr std::string_view kWhitespaceExprs[] = {
    "\\S+",
};
// DEFAULT
constexpr std::string_view kDefaultExprs[] = {
    "[\\p{P}\\$\\+<=>\\^~\\|]+",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    "\\p{N}+",
    "[0-9][0-9][0-9]",
};
// clang-format on

struct PreType {
  std::string_view name;
  std::span<const std::string_view> exprs;
  bool byte_encode = true;
  bool whole_newline_words = false;
};

constexpr PreType kTypes[] = {
    {"DEFAULT", kDefaultExprs},
    {"LLAMA3", kLlama3Exprs},
    {"DEEPSEEK_LLM", kDeepseekLlmExprs},
    {"DEEPSEEK_CODER", kDeepseekCoderExprs},
    {"FALCON", kFalconExprs},
    {"MPT", kGpt2Exprs},
    {"STARCODER", kStarcoderExprs},
    {"GPT2", kGpt2Exprs},
    {"REFACT", kStarcoderExprs},
    {"COMMAND_R", kStarcoderExprs},
    {"STABLELM2", kQwen2Exprs},
    {"QWEN2", kQwen2Exprs},
    {"OLMO", kGpt2Exprs},
    {"DBRX", kLlama3Exprs},
    {"SMAUG", kLlama3Exprs},
    {"PORO", kPoroExprs},
    {"CHATGLM4", kLlama3Exprs},
    {"VIKING", kVikingExprs},
    {"JAIS", kGpt2Exprs},
    {"TEKKEN", kTekkenExprs},
    {"SMOLLM", kStarcoderExprs},
    {"CODESHELL", kStarcoderExprs},
    {"BLOOM", kPoroExprs},
    {"GPT3_FINNISH", kPoroExprs},
    {"EXAONE", kStarcoderExprs},
    {"CHAMELEON", kChameleonExprs},
    {"MINERVA", kStarcoderExprs},
    {"DEEPSEEK3_LLM", kDeepseekV3Exprs},
    {"GPT4O", kGpt4oExprs},
    {"SUPERBPE", kSuperbpeExprs},
    {"TRILLION", kGpt2Exprs},
    {"BAILINGMOE", kBailingmoeExprs},
    {"SEED_CODER", kSeedCoderExprs},
    {"HUNYUAN", kQwen2Exprs},
    {"KIMI_K2", kKimiK2Exprs},
    {"HUNYUAN_DENSE", kDeepseekV3Exprs},
    {"GROK_2", kQwen2Exprs},
    {"GRANITE_DOCLING", kGpt2Exprs},
    {"MINIMAX_M2", kGpt4oExprs},
    {"AFMOE", kAfmoeExprs},
    {"SOLAR_OPEN", kQwen2Exprs},
    {"YOUTU", kYoutuExprs},
    {"EXAONE_MOE", kExaoneMoeExprs},
    {"QWEN35", kQwen35Exprs},
    {"TINY_AYA", kTinyAyaExprs},
    {"JOYAI_LLM", kDeepseekV3Exprs},
    {"JAIS2", kJais2Exprs},
    {"GEMMA4", kNewlineRunsExprs, /*byte_encode=*/false, /*whole_newline_words=*/true},
    {"SARVAM_MOE", kNewlineRunsExprs, /*byte_encode=*/false},
    {"MINICPM5", kMinicpm5Exprs},
    {"WHITESPACE", kWhitespaceExprs, /*byte_encode=*/false},
    {"GRANITE_EMB_MULTI", kGraniteEmbMultiExprs},
    {"MELLUM2", kStarcoderExprs},
    {"LAGUNA", kLagunaExprs},
    {"HY_V4", kDeepseekV3Exprs},
    {"SPARK2_5", kSpark25Exprs},
    {"UFAKZEKA", kUfakzekaExprs},
};

const PreType* Type(std::string_view name) {
  for (const PreType& t : kTypes) {
    if (t.name == name) return &t;
  }
  return nullptr;  // only if a name line below misspells a type (a test checks)
}

// Flags llama_vocab::impl::load sets together with the pre-type.
enum NameFlag : uint8_t {
  kIgnoreMerges = 1,
  kAddBos = 2,
  kEscapeWhitespaces = 4,
  kNoDefaultBos = 8,
  kMergesOptional = 16,
};

struct Name {
  std::string_view name;
  std::string_view type;
  uint8_t flags = 0;
};

// In the order of llama_vocab::impl::load.
constexpr Name kNames[] = {
    {"default", "DEFAULT"},
    {"minicpm5", "MINICPM5", kIgnoreMerges},
    {"llama3", "LLAMA3", kIgnoreMerges | kAddBos},
    {"llama-v3", "LLAMA3", kIgnoreMerges | kAddBos},
    {"llama-bpe", "LLAMA3", kIgnoreMerges | kAddBos},
    {"falcon3", "LLAMA3", kIgnoreMerges | kAddBos},
    {"falcon-h1", "LLAMA3", kIgnoreMerges | kAddBos},
    {"pixtral", "LLAMA3", kIgnoreMerges | kAddBos},
    {"midm-2.0", "LLAMA3", kIgnoreMerges | kAddBos},
    {"lfm2", "LLAMA3", kIgnoreMerges | kAddBos},
    {"jina-v5-nano", "LLAMA3", kIgnoreMerges | kAddBos},
    {"deepseek-llm", "DEEPSEEK_LLM"},
    {"deepseek-coder", "DEEPSEEK_CODER"},
    {"deepseek-v3", "DEEPSEEK3_LLM"},
    {"spark2_5", "SPARK2_5"},
    {"youtu", "YOUTU", kIgnoreMerges},
    {"falcon", "FALCON"},
    {"mpt", "MPT"},
    {"starcoder", "STARCODER"},
    {"gpt-2", "GPT2"},
    {"phi-2", "GPT2"},
    {"jina-es", "GPT2"},
    {"jina-de", "GPT2"},
    {"gigachat", "GPT2"},
    {"jina-v2-es", "GPT2"},
    {"jina-v2-de", "GPT2"},
    {"a.x-4.0", "GPT2"},
    {"mellum", "GPT2"},
    {"modern-bert", "GPT2"},
    {"jais-2", "JAIS2"},
    {"gemma4", "GEMMA4", kEscapeWhitespaces},
    {"granite-embed-multi-311m", "GEMMA4", kEscapeWhitespaces},
    {"sarvam-moe", "SARVAM_MOE", kEscapeWhitespaces},
    // llama.cpp also sets add_sep for these three, which only its server's
    // rerank prompts read.
    {"jina-v1-en", "GPT2"},
    {"jina-v2-code", "GPT2"},
    {"roberta-bpe", "GPT2"},
    {"whitespace", "WHITESPACE"},
    {"refact", "REFACT"},
    {"command-r", "COMMAND_R"},
    {"qwen2", "QWEN2"},
    {"deepseek-r1-qwen", "QWEN2"},
    {"kormo", "QWEN2"},
    {"f2llmv2", "QWEN2"},
    {"qwen35", "QWEN35"},
    {"stablelm2", "STABLELM2"},
    {"olmo", "OLMO"},
    {"dbrx", "DBRX"},
    {"smaug-bpe", "SMAUG"},
    {"poro-chat", "PORO"},
    {"glm4", "CHATGLM4", kNoDefaultBos},
    {"chatglm-bpe", "CHATGLM4", kNoDefaultBos},
    {"viking", "VIKING"},
    {"jais", "JAIS"},
    {"tekken", "TEKKEN", kIgnoreMerges | kAddBos},
    {"smollm", "SMOLLM"},
    {"codeshell", "CODESHELL"},
    {"bloom", "BLOOM"},
    {"gpt3-finnish", "GPT3_FINNISH"},
    {"exaone", "EXAONE"},
    {"exaone4", "GPT2"},
    {"exaone-moe", "EXAONE_MOE"},
    {"chameleon", "CHAMELEON", kAddBos},
    {"minerva-7b", "MINERVA"},
    {"megrez", "QWEN2"},
    {"gpt-4o", "GPT4O"},
    {"llama4", "GPT4O"},
    {"kanana2", "GPT4O"},
    {"talkie", "GPT4O"},
    {"granite-embed-multi-97m", "GRANITE_EMB_MULTI", kIgnoreMerges},
    {"tiny_aya", "TINY_AYA"},
    {"cohere2moe", "TINY_AYA"},
    {"superbpe", "SUPERBPE"},
    {"trillion", "TRILLION"},
    {"granite-docling", "GRANITE_DOCLING"},
    {"bailingmoe", "BAILINGMOE"},
    {"bailingmoe2", "BAILINGMOE"},
    {"llada-moe", "BAILINGMOE"},
    {"seed-coder", "SEED_CODER"},
    {"hunyuan", "HUNYUAN"},
    {"hunyuan-dense", "HUNYUAN_DENSE"},
    {"hy_v4", "HY_V4"},
    {"joyai-llm", "JOYAI_LLM"},
    {"kimi-k2", "KIMI_K2", kMergesOptional},
    {"ufakzeka", "UFAKZEKA"},
    {"grok-2", "GROK_2"},
    {"afmoe", "AFMOE"},
    {"laguna", "LAGUNA"},
    {"minimax-m2", "MINIMAX_M2"},
    {"solar-open", "SOLAR_OPEN"},
    {"mellum2", "MELLUM2"},
};

}  // namespace

std::optional<PreTokenizerSpec> FindPreTokenizer(std::string_view name) {
  for (const Name& n : kNames) {
    if (n.name != name) continue;
    const PreType* type = Type(n.type);
    if (type == nullptr) return std::nullopt;
    PreTokenizerSpec spec;
    spec.pre_type = type->name;
    spec.exprs = type->exprs;
    spec.byte_encode = type->byte_encode;
    spec.whole_newline_words = type->whole_newline_words;
    spec.ignore_merges = (n.flags & kIgnoreMerges) != 0;
    spec.add_bos_default = (n.flags & kAddBos) != 0;
    spec.escape_whitespaces = (n.flags & kEscapeWhitespaces) != 0;
    spec.no_default_bos = (n.flags & kNoDefaultBos) != 0;
    spec.merges_optional = (n.flags & kMergesOptional) != 0;
    return spec;
  }
  return std::nullopt;
}

std::vector<std::string_view> PreTokenizerNames() {
  std::vector<std::string_view> out;
  for (const Name& n : kNames) out.push_back(n.name);
  return out;
}

std::string SupportedPreTokenizers() {
  std::string out;
  for (const Name& n : kNames) {
    if (!out.empty()) out += ", ";
    out += n.name;
  }
  return out;
}

}  // namespace ellm::tokenizer
