#!/usr/bin/env bash
# ctest wrapper of openai_client_test.py: openai_client_test.sh ELLM [ELLMD].
# The python with the `openai` package comes from $ELLM_API_PYTHON
# (scripts/test sets it from scripts/api-clients), the model from
# $ELLM_TEST_MODEL; with ELLMD (the API inside the daemon, sharing the model
# with Kafka jobs) the broker from $ELLM_TEST_KAFKA. Without one of them the
# test is skipped (exit 77), unless CI=true, where that is a failure.
set -euo pipefail
ellm=$1
ellmd=${2:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
missing() {
  if [[ "${CI:-}" == true ]]; then
    echo "FAIL: $1 (CI=true: nothing may be skipped)" >&2
    exit 1
  fi
  echo "SKIP: $1" >&2
  exit 77
}
[[ -n "${ELLM_TEST_MODEL:-}" && -r "${ELLM_TEST_MODEL}" ]] || missing "ELLM_TEST_MODEL is not a readable model (scripts/fetch-model)"
python=${ELLM_API_PYTHON:-}
[[ -n "$python" && -x "$python" ]] || missing "ELLM_API_PYTHON is not set (scripts/api-clients prints it)"
"$python" -c 'import openai' 2>/dev/null || missing "$python has no openai package (scripts/api-clients)"
command -v curl >/dev/null || missing "curl is not installed (scripts/bootstrap)"
command -v openssl >/dev/null || missing "openssl is not installed (scripts/bootstrap)"
if [[ -n "$ellmd" ]]; then
  [[ -n "${ELLM_TEST_KAFKA:-}" ]] || missing "ELLM_TEST_KAFKA is not set (scripts/kafka start prints it)"
  exec "$python" "$here/openai_client_test.py" "$ellm" "$ELLM_TEST_MODEL" "$ellmd"
fi
exec "$python" "$here/openai_client_test.py" "$ellm" "$ELLM_TEST_MODEL"
