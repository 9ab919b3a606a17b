#!/usr/bin/env bash
# npm test: build, lint, type-check, then the whole vitest suite (README.md, "The two commands").
#
# The lab's images (test/lab/README.md: base, Ceph-ready, VM; minutes on a fresh machine,
# cached after) and the OCI images (scripts/package-images.js) are built meanwhile, beside the
# compiler and the linter, instead of inside the first test that needs them. Where they cannot be built (not root, packages missing), the
# suite still runs and the lab's tests say why.
set -euo pipefail
cd "$(dirname "$0")/.."

mkdir -p test-output
images_log=test-output/lab-images.log
oci_log=test-output/oci-images.log
images_pid=''
oci_pid=''
if [ "$(id -u)" = 0 ] && [ "${CARAPACE_TEST_PREBUILD_IMAGES:-1}" != 0 ]; then
  npm run --silent lab -- image --image vm >"$images_log" 2>&1 &
  images_pid=$!
fi

npm run build
# The docs site before the OCI images: the control plane's .deb in them carries it (and
# package-debs.js would build it itself, beside this build, if it were not up to date).
npm run docs:build
# The OCI images of test/e2e/package-images.e2e.test.ts (npm run package:images: the web UI
# just built goes into the control plane's; cached by their inputs, so the test finds them
# built), where podman is installed.
if [ -n "$images_pid" ] && command -v podman >/dev/null; then
  npm run --silent package:images >"$oci_log" 2>&1 &
  oci_pid=$!
fi
npm run lint &
lint_pid=$!
status=0
npm run typecheck || status=$?
wait "$lint_pid" || status=$?
if [ -n "$images_pid" ]; then
  if wait "$images_pid"; then
    tail -n 3 "$images_log"
  else
    echo "lab images: the build failed (the lab's tests will say why); the end of $images_log:" >&2
    tail -n 20 "$images_log" >&2
  fi
fi
if [ -n "$oci_pid" ]; then
  if wait "$oci_pid"; then
    grep '^localhost/' "$oci_log" || true
  else
    echo "OCI images: the build failed (package-images.e2e.test.ts will say why); the end of $oci_log:" >&2
    tail -n 20 "$oci_log" >&2
  fi
fi
[ "$status" = 0 ] || exit "$status"

exec npx vitest run
