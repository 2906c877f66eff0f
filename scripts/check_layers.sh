#!/usr/bin/env bash
# Checks the one-way layering: pyshim -> frontend -> typespec -> ir -> backends -> runtime.
set -u
cd "$(dirname "$0")/.."
layers=(pyshim frontend typespec ir backends runtime)
bad=0
for i in "${!layers[@]}"; do
  l=${layers[$i]}
  for f in $(find "$l" -name '*.[ch]' 2>/dev/null); do
    for j in $(seq 0 $((i - 1))); do
      left=${layers[$j]}
      # the one exception: backends read the typed IR they lower (ir/ir.h), and call nothing else of ir/
      if [ "$l" = backends ] && [ "$left" = ir ]; then
        grep -E "#include \"(\.\./)+ir/" "$f" | grep -vq 'ir/ir.h"' && { echo "layering: $f includes more of ir/ than ir.h"; bad=1; }
        continue
      fi
      if grep -Eq "#include \"(\.\./)+$left/" "$f"; then echo "layering: $f includes a header of $left/"; bad=1; fi
    done
    case $l in pyshim|frontend) ;; *)
      if grep -Eq '^#include (<Python.h>|"Python.h"|<numpy/)' "$f"; then echo "layering: $f uses Python.h"; bad=1; fi;;
    esac
  done
done
[ $bad = 0 ] && echo "layers: ok"
exit $bad
