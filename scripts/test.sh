#!/usr/bin/env bash
# npm test: build, lint, type-check, then the whole vitest suite (README.md, "The two commands").
#
# The lab's images (test/lab/README.md: base, Ceph-ready, VM; minutes on a fresh machine,
# cached after) are built meanwhile, beside the compiler and the linter, instead of inside the
# first test that needs them. Where they cannot be built (not root, packages missing), the
# suite still runs and the lab's tests say why.
set -euo pipefail
cd "$(dirname "$0")/.."

mkdir -p test-output
images_log=test-output/lab-images.log
images_pid=''
if [ "$(id -u)" = 0 ] && [ "${CARAPACE_TEST_PREBUILD_IMAGES:-1}" != 0 ]; then
  npm run --silent lab -- image --image vm >"$images_log" 2>&1 &
  images_pid=$!
fi

npm run build
npm run docs:build
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
[ "$status" = 0 ] || exit "$status"

exec npx vitest run
