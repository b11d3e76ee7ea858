#!/bin/sh
# expect_exit.sh STATUS COMMAND [ARG...]: runs COMMAND and passes its output through; when it
# exits with another status than STATUS, prints one last line
#   expect_exit: COMMAND exited with status N, expected STATUS
# ctest ignores the exit code of a test that has PASS_REGULAR_EXPRESSION, so such tests run
# through this script with FAIL_REGULAR_EXPRESSION "expect_exit: " (ctrainer_add_output_test in
# tests/CMakeLists.txt): a program that prints the expected line and then fails still fails.
expected="$1"
shift
"$@"
status=$?
if [ "$status" -ne "$expected" ]; then
  echo "expect_exit: $1 exited with status $status, expected $expected"
fi
exit 0
