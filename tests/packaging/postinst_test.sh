#!/usr/bin/env bash
# postinst_test.sh — debian/ellm.postinst in seconds, without a package build
# or root: run under a fake root ($DPKG_ROOT) with stand-ins for chown,
# dpkg-statoverride, install and deb-systemd-invoke that record their
# arguments. Checks (issue 37 item 5) that configure leaves
# /etc/ellm/ellm.yaml 0640 root:ellm when no statoverride names it, on a
# first install and on an upgrade that brought the file back 0644; that an
# administrator's statoverride wins (the file is left alone); and that a
# deleted conffile is not an error. deb_test.sh (nightly) checks the same on
# a real install.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ellm-postinst-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() {
  printf 'postinst_test: FAIL: %s\n' "$*" >&2
  exit 1
}

# The maintainer script as dh_installdeb writes it, minus the debhelper snippets.
sed 's/^#DEBHELPER#$//' "$repo/debian/ellm.postinst" >"$work/postinst"
sh -n "$work/postinst" || fail "debian/ellm.postinst does not parse"
if command -v shellcheck >/dev/null; then
  shellcheck -s sh "$work/postinst" || fail "shellcheck reports problems in debian/ellm.postinst"
fi

mkdir -p "$work/bin"
for tool in chown install deb-systemd-invoke; do
  printf '#!/bin/sh\necho "%s $*" >>"$CALLS"\n' "$tool" >"$work/bin/$tool"
done
# dpkg-statoverride --list PATH: the override in $OVERRIDE (exit 0), else
# nothing (exit 1), as dpkg-statoverride does.
cat >"$work/bin/dpkg-statoverride" <<'SH'
#!/bin/sh
echo "dpkg-statoverride $*" >>"$CALLS"
[ "$1" = --list ] || exit 2
[ -n "$OVERRIDE" ] || exit 1
echo "$OVERRIDE"
SH
chmod +x "$work/bin/"*

# run ARGS...: postinst ARGS under a fresh root holding ellm.yaml 0644;
# afterwards $mode is the file's mode and $calls what the stand-ins saw.
run() {
  local root="$work/root"
  rm -rf "$root" && mkdir -p "$root/etc/ellm" "$root/var/lib/ellm"
  if [[ "${DELETED:-0}" != 1 ]]; then
    echo "kafka: {}" >"$root/etc/ellm/ellm.yaml"
    chmod 0644 "$root/etc/ellm/ellm.yaml"
  fi
  : >"$work/calls"
  (umask 022 && PATH="$work/bin:$PATH" DPKG_ROOT="$root" CALLS="$work/calls" \
    OVERRIDE="${OVERRIDE:-}" sh "$work/postinst" "$@") || fail "postinst $* exited $?"
  mode=$(stat -c '%a' "$root/etc/ellm/ellm.yaml" 2>/dev/null || echo none)
  calls=$(cat "$work/calls")
  conf="$root/etc/ellm/ellm.yaml"
}

# First install, then an upgrade (the conffile came back 0644 root:root).
for previous in "" 0.1.0; do
  run configure $previous
  [[ "$mode" == 640 ]] || fail "configure '$previous': ellm.yaml is $mode, expected 640"
  grep -qxF "chown root:ellm $conf" <<<"$calls" ||
    fail "configure '$previous': no 'chown root:ellm' of ellm.yaml; calls: $calls"
  grep -qxF "dpkg-statoverride --list /etc/ellm/ellm.yaml" <<<"$calls" ||
    fail "configure '$previous': the statoverride was not looked up; calls: $calls"
done

# An administrator's override wins: dpkg applied it on unpack; postinst keeps out.
OVERRIDE="root adm 0600 /etc/ellm/ellm.yaml" run configure 0.1.0
[[ "$mode" == 644 ]] || fail "with a statoverride postinst changed the mode to $mode"
! grep -q '^chown' <<<"$calls" || fail "with a statoverride postinst ran chown: $calls"

# A conffile the administrator deleted stays deleted, without an error.
DELETED=1 run configure 0.1.0
[[ "$mode" == none ]] || fail "postinst recreated a deleted ellm.yaml"
! grep -q '^chown' <<<"$calls" || fail "chown of a deleted ellm.yaml: $calls"

# Other actions do not touch the file.
run abort-upgrade 0.1.0
[[ "$mode" == 644 && -z "$calls" ]] || fail "abort-upgrade changed something: mode $mode, calls $calls"

# The package ships the file 0640 (debian/rules) with a justified lintian override.
grep -q 'chmod 0640 debian/ellm/etc/ellm/ellm.yaml' "$repo/debian/rules" ||
  fail "debian/rules does not ship ellm.yaml 0640"
grep -q '^ellm: non-standard-file-perm 0640 != 0644 \[etc/ellm/ellm.yaml\]$' \
  "$repo/debian/ellm.lintian-overrides" || fail "no lintian override for ellm.yaml's mode"
echo "postinst_test: passed"
