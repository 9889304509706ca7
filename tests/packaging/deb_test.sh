#!/usr/bin/env bash
# deb_test.sh — the Debian package, end to end, as an administrator meets it:
#   1. builds it from this source tree the Debian way (dpkg-buildpackage, debian/),
#   2. checks it with lintian (errors and warnings fail; overrides are justified
#      in debian/ellm.lintian-overrides),
#   3. makes a clean Debian bookworm root with debootstrap and, inside it (chroot):
#      installs the package with apt (dependencies from Debian's archive), checks
#      the user, state directory, conffile and enabled unit, runs
#      `systemd-analyze verify` on the units, `ellm --version`,
#      `ellmd --check-config` (refused without a model, with a message naming
#      `ellm model install`; accepted after it), and a one-file `ellm summarize`
#      of a PDF as the service user,
#   4. upgrades over itself (the same package with a higher version) keeping an
#      edited /etc/ellm/ellm.yaml and the stored jobs,
#   5. removes (conffile, state and user stay), then purges, after which the
#      root's file list and user database equal those from before the install.
#
# Needs root (debootstrap, chroot), network access to the Debian archive
# ($ELLM_DEBIAN_MIRROR, default http://deb.debian.org/debian) and the model
# ($ELLM_TEST_MODEL). scripts/bootstrap installs debhelper, lintian and
# debootstrap. Without them it exits 77 (ctest: skipped), or fails with CI=true.
# Takes a few minutes (the package build is most of it). ELLM_KEEP_PKG_WORK=1
# keeps the work directory for inspection; ELLM_PKG_DEB=FILE tests a package
# built before (to iterate on this script; CI always builds).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mirror=${ELLM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security_mirror=${ELLM_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
jobs=${ELLM_JOBS:-$(nproc)}

say() { printf '\n== deb_test: %s\n' "$*"; }
fail() {
  printf 'deb_test: FAIL: %s\n' "$*" >&2
  exit 1
}
unavailable() {
  if [[ "${CI:-}" == true ]]; then fail "$* (CI=true: required)"; fi
  echo "deb_test: SKIP: $*" >&2
  exit 77
}

[[ $(id -u) -eq 0 ]] || unavailable "needs root for debootstrap and chroot"
for tool in dpkg-buildpackage dh lintian debootstrap; do
  command -v "$tool" >/dev/null || unavailable "'$tool' is missing (run scripts/bootstrap)"
done
model=${ELLM_TEST_MODEL:-}
[[ -n "$model" && -r "$model" ]] || unavailable "no model: set ELLM_TEST_MODEL (scripts/fetch-model)"

work=$(mktemp -d /var/tmp/ellm-deb-test.XXXXXX)
root="$work/root"
cleanup() {
  local rc=$?
  for m in "$root/proc" "$root/dev/pts"; do
    if mountpoint -q "$m" 2>/dev/null; then umount -l "$m" || true; fi
  done
  if [[ "${ELLM_KEEP_PKG_WORK:-0}" == 1 ]]; then
    echo "deb_test: work directory kept: $work" >&2
  elif ! mountpoint -q "$root/proc" 2>/dev/null; then
    rm -rf "$work"
  fi
  exit $rc
}
trap cleanup EXIT

# ---------------------------------------------------------------- 1. build
say "build the package"
version=$(cd "$repo" && dpkg-parsechangelog -S Version)
if [[ -n "${ELLM_PKG_DEB:-}" ]]; then
  deb=$ELLM_PKG_DEB
else
  src="$work/src/ellm-$version"
  mkdir -p "$src"
  # The source as a fresh clone sees it (plus uncommitted work when run
  # locally), without build trees, models or local state.
  (cd "$repo" && git ls-files -z --cached --others --exclude-standard) |
    grep -zv -e '^models/' -e '^var/' -e '^build' |
    (cd "$repo" && xargs -0 cp -P --parents -t "$src")
  (cd "$src" && dpkg-buildpackage -b -uc -us -j"$jobs") >"$work/build.log" 2>&1 ||
    {
      tail -50 "$work/build.log"
      fail "dpkg-buildpackage failed (log above)"
    }
  deb="$work/src/ellm_${version}_amd64.deb"
fi
[[ -f "$deb" ]] || fail "no $deb after the build"
dpkg-deb -I "$deb"
dpkg-deb -c "$deb" | awk '{print $6}' >"$work/contents"
for f in ./usr/bin/ellm ./usr/bin/ellmd ./usr/libexec/ellm/ellm-extract \
  ./usr/share/ellm/pipelines/summarize-report.yaml ./etc/ellm/ellm.yaml \
  ./lib/systemd/system/ellmd.service ./lib/systemd/system/ellm-batch.service \
  ./lib/systemd/system/ellm-batch.timer ./usr/lib/sysusers.d/ellm.conf \
  ./usr/lib/tmpfiles.d/ellm.conf ./usr/share/doc/ellm/copyright \
  ./usr/share/man/man1/ellm.1.gz ./usr/share/man/man8/ellmd.8.gz \
  ./usr/share/bash-completion/completions/ellm; do
  grep -qxF "$f" "$work/contents" || fail "the package lacks $f"
done
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for lib in librdkafka libpoppler-cpp libyaml-cpp libspdlog libsqlite3 libzstd libnuma libsystemd \
  'systemd |' libtesseract tesseract-ocr-eng; do
  grep -q "$lib" <<<"$depends" || fail "Depends lacks $lib (shlibs): $depends"
done
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles | grep -qx /etc/ellm/ellm.yaml ||
  fail "/etc/ellm/ellm.yaml is not a conffile"
# It may hold credentials: never world-readable, not even between unpack and
# postinst (which gives it to group ellm).
shipped=$(dpkg-deb -c "$deb" | awk '$6 == "./etc/ellm/ellm.yaml" {print $1, $2}')
[[ "$shipped" == "-rw-r----- root/root" ]] ||
  fail "the package ships /etc/ellm/ellm.yaml as '$shipped', expected -rw-r----- root/root"

# ---------------------------------------------------------------- 2. lintian
say "lintian"
lintian --fail-on error,warning --info "$deb" || fail "lintian reported errors or warnings"

# ---------------------------------------------------------------- 3. clean root
say "debootstrap bookworm (minbase) from $mirror"
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
  {
    tail -30 "$work/debootstrap.log"
    fail "debootstrap failed"
  }
cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security_mirror bookworm-security main
EOF
cp /etc/resolv.conf "$root/etc/resolv.conf"
# Nothing may start services inside the root (there is no init running).
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod +x "$root/usr/sbin/policy-rc.d"
mount -t proc proc "$root/proc"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 "$@"; }
as_ellm() { chroot --userspec=ellm:ellm "$root" env -i PATH=/usr/bin:/bin HOME=/var/lib/ellm \
  LANG=C.UTF-8 "$@"; }
apt_get() { in_root apt-get -y -q -o Dpkg::Use-Pty=0 "$@" </dev/null; }

mkdir -p "$root/tmp/pkg"
cp "$deb" "$root/tmp/pkg/ellm_${version}_amd64.deb"
apt_get update >/dev/null
# The dependencies first, so that the snapshot below is the root "with
# everything but ellm" and purge can be compared with it exactly.
apt_get satisfy "$depends" >"$work/deps.log" 2>&1 || {
  tail -30 "$work/deps.log"
  fail "apt-get satisfy '$depends' failed"
}
in_root apt-get clean
snapshot() {
  (cd "$root" && find . -xdev \
    \( -path ./proc -o -path ./sys -o -path ./dev -o -path ./tmp -o -path ./run \
    -o -path ./var/cache -o -path ./var/lib/apt -o -path ./var/lib/dpkg -o -path ./var/log \) -prune \
    -o -print | grep -v -e '-$' | LC_ALL=C sort)
  for f in etc/passwd etc/group etc/shadow etc/gshadow; do
    echo "$f $(sha256sum <"$root/$f")"
  done
}
snapshot >"$work/before"

say "install with apt"
apt_get install "/tmp/pkg/ellm_${version}_amd64.deb" || fail "apt-get install failed"
got=$(in_root ellm --version)
[[ "$got" == "ellm $version" ]] || fail "ellm --version says '$got', expected 'ellm $version'"
got=$(in_root ellmd --version)
[[ "$got" == "ellmd $version" ]] || fail "ellmd --version says '$got'"
in_root getent passwd ellm | grep -q ':/var/lib/ellm:/usr/sbin/nologin$' ||
  fail "no system user ellm with home /var/lib/ellm and nologin"
# Owners are looked up inside the root (the host may give those ids other names).
state=$(in_root stat -c '%U:%G %a' /var/lib/ellm)
[[ "$state" == "ellm:ellm 750" ]] || fail "/var/lib/ellm is $state, expected ellm:ellm 750"
state=$(in_root stat -c '%U:%G %a' /var/lib/ellm/prefix-cache)
[[ "$state" == "ellm:ellm 700" ]] ||
  fail "/var/lib/ellm/prefix-cache is $state, expected ellm:ellm 700 (saved states encode documents)"
conf_mode() { in_root stat -c '%U:%G %a' /etc/ellm/ellm.yaml; }
[[ $(conf_mode) == "root:ellm 640" ]] ||
  fail "/etc/ellm/ellm.yaml is $(conf_mode), expected root:ellm 640"
[[ -L "$root/etc/systemd/system/multi-user.target.wants/ellmd.service" ]] ||
  fail "ellmd.service is not enabled"
[[ ! -e "$root/etc/systemd/system/timers.target.wants/ellm-batch.timer" ]] ||
  fail "ellm-batch.timer must not be enabled by the package"

say "systemd-analyze verify"
in_root systemd-analyze verify /lib/systemd/system/ellmd.service \
  /lib/systemd/system/ellm-batch.service /lib/systemd/system/ellm-batch.timer ||
  fail "systemd-analyze verify reported problems"

say "ellmd --check-config without a model is refused"
set +e
out=$(as_ellm ellmd --check-config 2>&1)
rc=$?
set -e
echo "$out" | tail -3
[[ $rc -eq 78 ]] || fail "ellmd --check-config without a model exited $rc, expected 78"
grep -q 'ellm model install' <<<"$out" || fail "the missing-model message does not name 'ellm model install'"

say "ellm model install, then ellmd --check-config"
cp "$model" "$root/tmp/pkg/model.gguf"
in_root ellm model install /tmp/pkg/model.gguf || fail "ellm model install failed"
placed=$(in_root ellm model path)
[[ $(in_root stat -c '%U' "$placed") == ellm ]] || fail "$placed is not owned by ellm"
cmp -s "$model" "$root$placed" || fail "$placed differs from the model"
as_ellm ellmd --check-config || fail "ellmd --check-config failed with the model in place"

say "ellm summarize (one PDF, as the service user)"
mkdir -p "$root/srv/ellm/inbox"
cp "$repo/configs/samples/northwind-annual-report-2025.pdf" "$root/srv/ellm/inbox/report.pdf"
chmod 0644 "$root/srv/ellm/inbox/report.pdf"
as_ellm ellm summarize /srv/ellm/inbox/report.pdf --json >"$work/summary.json" ||
  fail "ellm summarize failed: $(cat "$work/summary.json")"
python3 - "$work/summary.json" <<'EOF' || fail "the summary is not what a user expects"
import json, sys
r = json.load(open(sys.argv[1]))
print({k: (v[:160] if isinstance(v, str) else v) for k, v in r.items()})
assert r["store"] == "/var/lib/ellm/ellm.db", r["store"]
assert r["prompt_tokens"] > 100 and r["generated_tokens"] > 0, r
assert len(r["text"].strip()) > 40, r["text"]
EOF
jobs_before=$(as_ellm ellm jobs list --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
[[ "$jobs_before" -ge 1 ]] || fail "the store holds no job after summarize"

# ---------------------------------------------------------------- 4. upgrade
say "upgrade over itself, keeping an edited conffile"
sed -i 's/^  level: info .*/  level: debug   # edited by the administrator/' "$root/etc/ellm/ellm.yaml"
grep -q 'edited by the administrator' "$root/etc/ellm/ellm.yaml" || fail "could not edit the conffile"
next="${version}+1"
rm -rf "$work/repack" && dpkg-deb -R "$deb" "$work/repack"
sed -i "s/^Version: .*/Version: $next/" "$work/repack/DEBIAN/control"
dpkg-deb -Zxz -b "$work/repack" "$root/tmp/pkg/ellm_${next}_amd64.deb" >/dev/null
apt_get install "/tmp/pkg/ellm_${next}_amd64.deb" || fail "the upgrade failed"
[[ $(in_root dpkg-query -W -f='${Version}' ellm) == "$next" ]] || fail "version after upgrade is not $next"
grep -q 'edited by the administrator' "$root/etc/ellm/ellm.yaml" || fail "the upgrade lost the edited conffile"
[[ ! -e "$root/etc/ellm/ellm.yaml.dpkg-new" && ! -e "$root/etc/ellm/ellm.yaml.dpkg-old" ]] ||
  fail "the upgrade left .dpkg-new/.dpkg-old files"
jobs_after=$(as_ellm ellm jobs list --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
[[ "$jobs_after" == "$jobs_before" ]] || fail "jobs in the store: $jobs_before before the upgrade, $jobs_after after"
as_ellm ellmd --check-config >/dev/null 2>&1 || fail "ellmd --check-config fails after the upgrade"
[[ $(conf_mode) == "root:ellm 640" ]] ||
  fail "after the upgrade /etc/ellm/ellm.yaml is $(conf_mode), expected root:ellm 640"

say "an administrator's dpkg-statoverride of the configuration wins"
in_root dpkg-statoverride --update --add root ellm 0440 /etc/ellm/ellm.yaml
apt_get install --reinstall "/tmp/pkg/ellm_${next}_amd64.deb" || fail "the reinstall failed"
[[ $(conf_mode) == "root:ellm 440" ]] ||
  fail "with a statoverride root ellm 0440 the configuration is $(conf_mode) after a reinstall"
in_root dpkg-statoverride --remove /etc/ellm/ellm.yaml

# ---------------------------------------------------------------- 5. remove, purge
say "remove keeps configuration, state and user"
apt_get remove ellm || fail "apt-get remove failed"
[[ ! -e "$root/usr/bin/ellm" && ! -e "$root/usr/bin/ellmd" ]] || fail "binaries left after remove"
[[ -f "$root/etc/ellm/ellm.yaml" ]] || fail "remove deleted the conffile"
[[ -f "$root$placed" && -f "$root/var/lib/ellm/ellm.db" ]] || fail "remove deleted the state"
in_root getent passwd ellm >/dev/null || fail "remove deleted the user"

say "purge leaves nothing behind"
apt_get purge ellm || fail "apt-get purge failed"
in_root apt-get clean
rm -rf "$root/srv/ellm" "$root/tmp/pkg"  # this test's own inputs
snapshot >"$work/after"
if ! diff -u "$work/before" "$work/after"; then
  fail "the root differs after purge from before the install (diff above)"
fi
say "passed"
