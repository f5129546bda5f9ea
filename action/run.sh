#!/usr/bin/env bash
# The one step of action.yml, kept in a file so that it can be linted and run
# locally (tests/test_action.py runs it with the GITHUB_* variables set).
#
# Inputs arrive in the environment, never spliced into the script, so a hostile
# value (a branch name, a test id) cannot become shell code:
#   FLAKECORE_VERB     the verb, words split on spaces ("lease check"); empty: install only
#   FLAKECORE_ARGS     one argument per line, passed as they are
#   FLAKECORE_PYTHON   the interpreter (default python3)
#   FLAKECORE_INSTALL  "true": pip install this action's checkout with all extras
set -euo pipefail

python=${FLAKECORE_PYTHON:-python3}
action_path=${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set (run from action.yml)}

case ${FLAKECORE_INSTALL:-true} in
  true) "$python" -m pip install --quiet --disable-pip-version-check "$action_path[all]" ;;
  false) ;;
  *) echo "::error title=flakecore action::install must be 'true' or 'false'"; exit 64 ;;
esac

read -r -a verb <<<"${FLAKECORE_VERB:-}"
if [[ ${#verb[@]} -eq 0 ]]; then
  # Install only: later steps (the test run's plugin, a verb of their own) use it.
  [[ -n ${GITHUB_OUTPUT:-} ]] && echo "exit-code=0" >>"$GITHUB_OUTPUT"
  exit 0
fi
args=()
while IFS= read -r line; do
  [[ -n $line ]] && args+=("$line")
done <<<"${FLAKECORE_ARGS:-}"

status=0
# --format before the arguments: after a `--` it would belong to the command under test.
"$python" -m flakecore "${verb[@]}" --format github "${args[@]}" || status=$?
if [[ -n ${GITHUB_OUTPUT:-} ]]; then
  echo "exit-code=$status" >>"$GITHUB_OUTPUT"
fi
exit "$status"
