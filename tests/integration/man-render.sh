#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The man pages as readers see them, rendered by mandoc and by groff (man's
# two formatters): every SYNOPSIS line of a command's page names hutch and
# one of that page's verbs, quotes are balanced and never nested, hutch(1)
# lists the verbs `hutch --help` lists and every command of hutch rootfs,
# whatis can read each page's NAME, and mandoc's linter is content.
. "$HUTCH_SRCDIR/tests/lib/tap.sh"

mandir=$HUTCH_SRCDIR/man
command -v mandoc >/dev/null || tap_skip_all "mandoc is needed (apt-get install mandoc)"
command -v python3 >/dev/null || tap_skip_all "python3 is needed to check the quotes"
renderers=(mandoc)
command -v groff >/dev/null && renderers+=(groff)

# render RENDERER PAGE: the page as text, wide enough that no line wraps,
# overstrikes removed.
render() {
  case $1 in
  mandoc) mandoc -T utf8 -O width=1000 "$2" ;;
  groff) groff -mandoc -Tutf8 -rLL=1000n -P-cbou "$2" 2>/dev/null ;;
  esac | sed 's/.\x08//g'
}
# The lines of a section (its heading's name), blank lines left out.
section() { sed -n "/^$1\$/,/^[A-Z]/p" | sed '1d;$d' | grep -v '^ *$'; }

# verbs: `hutch --help`'s list.  rootfs_cmds: `hutch rootfs --help`'s.
tap_ok "hutch --help" "$HUTCH_BIN" --help
mapfile -t verbs < <(sed -n '/^Commands:/,/^$/p' <<<"$tap_stdout" | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p')
tap_check $((${#verbs[@]} < 10)) "hutch --help lists the verbs (${verbs[*]})"
tap_ok "hutch rootfs --help" "$HUTCH_BIN" rootfs --help
mapfile -t rootfs_cmds < <(sed -n '/^Commands:/,/^$/p' <<<"$tap_stdout" | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p')
tap_check $((${#rootfs_cmds[@]} < 5)) "hutch rootfs --help lists its commands (${rootfs_cmds[*]})"

# page -> the verbs its SYNOPSIS may name
declare -A page_verbs=(
  [hutch-exec.1]="exec create ps rm pause resume ttl reset snapshot fork"
  [hutch-rootfs.1]="rootfs build"
  [hutch-run.1]="run"
  [hutch-benchmark.1]="benchmark report"
  [hutch-cp.1]="cp"
  [hutch-audit.1]="audit"
  [hutch-doctor.1]="doctor"
  [hutch-mcp.1]="mcp"
  [hutch-serve.1]="serve"
)

for r in "${renderers[@]}"; do
  for page in "${!page_verbs[@]}"; do
    syn=$(render "$r" "$mandir/$page" | section SYNOPSIS)
    if [ -z "$syn" ]; then
      tap_check 1 "$r: $page has a SYNOPSIS"
      continue
    fi
    bad=
    while IFS= read -r line; do
      read -r prog verb _ <<<"$line"
      if [ "$prog" != hutch ] || [[ " ${page_verbs[$page]} " != *" $verb "* ]] ||
        [[ " ${verbs[*]} " != *" $verb "* ]]; then
        bad+="$line"$'\n'
      fi
    done <<<"$syn"
    tap_is "$bad" "" "$r: every SYNOPSIS line of $page is hutch and one of its verbs (${page_verbs[$page]})"
  done
  rootfs_syn=$(render "$r" "$mandir/hutch-rootfs.1" | section SYNOPSIS)
  for c in "${rootfs_cmds[@]}"; do
    tap_like "$rootfs_syn" "(^|[[:space:]])hutch rootfs $c " "$r: hutch-rootfs(1)'s SYNOPSIS has hutch rootfs $c"
  done

  for page in "$mandir"/*.[1-8]; do
    out=$(render "$r" "$page" | python3 -c '
import sys
text = sys.stdin.read()
for o, c in (("\u201c", "\u201d"), ("\u2018", "\u2019")):
    depth = 0
    for k, ch in enumerate(text):
        if ch in (o, c):
            if (ch == o) == bool(depth):
                print(("nested " if depth else "unbalanced ") + repr(text[max(0, k - 50):k + 30]))
                break
            depth = 1 - depth
    else:
        if depth:
            print("unclosed " + o)
')
    tap_is "$out" "" "$r: ${page##*/}: every quote closed, none within another"
  done
done

# hutch(1): its VERBS are hutch --help's, and its rootfs entry names every
# command of hutch rootfs.
page=$(render mandoc "$mandir/hutch.1")
listed=$(section VERBS <<<"$page" | sed -n 's/^       \([a-z][a-z]*\)\( .*\)\{0,1\}$/\1/p' | sort | tr '\n' ' ')
tap_is "$listed" "$(printf '%s\n' "${verbs[@]}" | sort | tr '\n' ' ')" "hutch(1)'s VERBS are those hutch --help lists"
rootfs_entry=$(section VERBS <<<"$page" | grep -E '^       rootfs ')
for c in "${rootfs_cmds[@]}"; do
  tap_like "$rootfs_entry" "\\($c\\)" "hutch(1)'s rootfs entry names hutch rootfs $c"
done
tap_like "$(section SYNOPSIS <<<"$page")" "hutch verb" "hutch(1)'s SYNOPSIS: hutch verb ..."

# whatis (apropos, man -k) reads a page's NAME with lexgrog.
if command -v lexgrog >/dev/null; then
  for p in "$mandir"/*.[1-8]; do
    tap_ok "lexgrog reads ${p##*/}'s NAME (whatis finds it)" lexgrog "$p"
  done
else
  tap_skip "whatis entries" "lexgrog (man-db) is not installed"
fi
for p in "$mandir"/*.[1-8]; do
  tap_ok "mandoc -T lint -W warning ${p##*/} is clean" mandoc -T lint -W warning "$p"
done
tap_done
