#!/bin/sh
# valgrind_check.sh VALGRIND EXPECTED_EXIT PROGRAM ARGS...
# Runs PROGRAM under memcheck. Fails when valgrind reports an error or a
# definite/indirect leak (its own exit code 99), or when the program's exit
# status is not EXPECTED_EXIT (a decline is exit 1, a bad input exit 2).
set -u
vg=$1
want=$2
shift 2
"$vg" --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
  --show-leak-kinds=definite,indirect "$@"
rc=$?
if [ "$rc" = 99 ]; then
  echo "valgrind_check: memcheck found errors or leaks in: $*" >&2
  exit 1
fi
if [ "$rc" != "$want" ]; then
  echo "valgrind_check: exit status $rc, expected $want: $*" >&2
  exit 1
fi
echo "valgrind_check: clean (exit $rc as expected): $*"
