#!/usr/bin/env bash
# tests/simt/planted/check.sh FILE.cu: runs FILE through tools/simt_run under seeds 1 to 5.
# A control (*_ok.cu) must exit 0 with no report every time; a planted bug must end non-zero with
# the report its `// expect:` line names, every time. Run by ctest (label simt_planted).
set -uo pipefail
file=$1
root=$(cd "$(dirname "$0")/../../.." && pwd)
name=$(basename "$file")
expect=$(sed -n 's|^// expect: ||p' "$file" | head -1)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for seed in 1 2 3 4 5; do
  # The subshell keeps the shell's own "Aborted" notice out of the log.
  ("$root/tools/simt_run" --seed "$seed" "$file" >/dev/null 2>"$log") 2>/dev/null
  rc=$?
  if [[ $name == *_ok.cu ]]; then
    if [ $rc -ne 0 ] || grep -q "^simt: [^s]" "$log"; then
      echo "$name (seed $seed): the control failed (exit $rc):"; cat "$log"; exit 1
    fi
  elif [ $rc -eq 0 ] || ! grep -qF "$expect" "$log"; then
    echo "$name (seed $seed): expected a report containing '$expect', got exit $rc:"; cat "$log"; exit 1
  fi
done
echo "$name: as expected under seeds 1-5"
