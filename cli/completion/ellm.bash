# bash completion for ellm: subcommands, then each subcommand's long flags.
# Installed as /usr/share/bash-completion/completions/ellm (cli/CMakeLists.txt).
# The lists below are checked against what the commands accept
# (`ellm CMD --list-flags`) by Cli.CompletionMatchesTheCommands in
# tests/integration/info_cli_test.cc: change them with the commands.

_ellm_commands="info tokenize generate perplexity bench extract summarize compare batch submit jobs store model serve cpu version help"

_ellm_kv_flags="--kv-type --attn-weights --attn-scores --kv-budget --spill-dir --spill-level --spill-read --sparse-attn --sparse-sink --sparse-local"

# The long flags of subcommand $1.
_ellm_flags() {
  case "$1" in
    info) echo "--json --tensors" ;;
    tokenize) echo "--model --file --no-bos --special" ;;
    generate)
      echo "--model --prompt --file --messages --system --chat --chat-template --max-tokens" \
        "--temperature --top-k --top-p --min-p --repeat-penalty --seed --threads --ctx" \
        "--json-schema --json" ;;
    perplexity) echo "--model --file --ctx --threads --batch --chunks $_ellm_kv_flags" ;;
    bench) echo "--model --depth --gen --threads --batch --streams --json $_ellm_kv_flags" ;;
    extract) echo "--json --outline --max-pages --max-bytes --timeout --memory-mib --config --extractor --headings --ocr --ocr-languages --ocr-dpi" ;;
    summarize | compare)
      echo "--pipeline --model --db --config --pipelines --ctx --threads --params" \
        "--chat-template --log-prompts --json --html --no-model $_ellm_kv_flags" ;;
    batch)
      echo "--pipeline --model --db --config --pipelines --ctx --threads --chat-template" \
        "$_ellm_kv_flags" ;;
    submit) echo "--pipeline --id --params --inline --reply-to --config --brokers --topic" ;;
    jobs) echo "--status --limit --json --db --config --older-than" ;;
    store) echo "--db --config" ;;
    model) echo "--config --to" ;;
    serve)
      echo "--model --listen --api-keys-file --threads --ctx --db --config --pipelines" \
        "--sessions --max-queue --max-sessions-per-key --tls-cert --tls-key --cors-origin --max-body --chat-template" ;;
    *) echo "" ;;
  esac
}

_ellm() {
  local cur="${COMP_WORDS[COMP_CWORD]}"
  local prev="${COMP_WORDS[COMP_CWORD-1]}"
  COMPREPLY=()
  if [[ $COMP_CWORD -eq 1 ]]; then
    COMPREPLY=($(compgen -W "$_ellm_commands --help --version" -- "$cur"))
    return
  fi
  local cmd="${COMP_WORDS[1]}"
  if [[ $COMP_CWORD -eq 2 ]]; then
    case "$cmd" in
      help) COMPREPLY=($(compgen -W "$_ellm_commands" -- "$cur")); return ;;
      jobs) COMPREPLY=($(compgen -W "list show prune" -- "$cur")); return ;;
      store) COMPREPLY=($(compgen -W "backup" -- "$cur")); return ;;
      model) COMPREPLY=($(compgen -W "path install" -- "$cur")); return ;;
    esac
  fi
  case "$prev" in
    --kv-type) COMPREPLY=($(compgen -W "bf16 f16 f32 q8_0" -- "$cur")); return ;;
    --attn-weights) COMPREPLY=($(compgen -W "f32 bf16" -- "$cur")); return ;;
    --attn-scores) COMPREPLY=($(compgen -W "auto pairs f32 tiles" -- "$cur")); return ;;
    --status) COMPREPLY=($(compgen -W "queued running succeeded failed" -- "$cur")); return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(_ellm_flags "$cmd") --help" -- "$cur"))
  fi
  # Otherwise nothing here: -o default completes file names.
}

complete -o default -F _ellm ellm
