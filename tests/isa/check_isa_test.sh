#!/usr/bin/env bash
# check_isa_test.sh FIXTURE_DIR — scripts/check-isa must refuse the
# deliberately broken fixture (FIXTURE_DIR/wide: tests/isa/leak_fixture.cc
# compiled with -mavx512* flags), naming each wide function that generic
# code could reach and why (a weak std::vector helper, a weak inline
# function, a function outside the kernels) but not the kernel entry point,
# and pass its baseline twin (FIXTURE_DIR/baseline, the same source for
# x86-64-v3).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fixture=${1:?usage: check_isa_test.sh FIXTURE_DIR}
fail() {
  printf 'check_isa_test: FAIL: %s\n' "$*" >&2
  exit 1
}

rc=0
out=$("$repo/scripts/check-isa" "$fixture/wide" 2>&1) || rc=$?
printf '%s\n' "$out"
((rc == 1)) || fail "check-isa exited $rc on the wide fixture (expected 1: a finding)"
grep -qE 'std::.*(vector|__relocate).*weak symbol' <<<"$out" ||
  fail "check-isa did not name the weak std::vector helper of the wide fixture"
grep -qE 'IsaLeakFixtureAdd.*weak symbol' <<<"$out" ||
  fail "check-isa did not name the weak inline function of the wide fixture"
grep -qE 'IsaLeakFixtureDouble.*outside ellm::kernels::internal' <<<"$out" ||
  fail "check-isa did not name the wide function outside the kernels"
if grep -q 'IsaLeakFixtureKernel' <<<"$out"; then
  fail "check-isa named a dispatched kernel (ellm::kernels::internal), which may be wide"
fi

rc=0
out=$("$repo/scripts/check-isa" "$fixture/baseline" 2>&1) || rc=$?
printf '%s\n' "$out"
((rc == 0)) || fail "check-isa exited $rc on the baseline twin (expected 0)"
grep -q 'clean' <<<"$out" || fail "check-isa did not report the baseline twin clean"
echo "check_isa_test: passed"
