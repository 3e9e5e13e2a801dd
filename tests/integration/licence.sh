#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The project is under the Apache License 2.0: LICENSE holds its text,
# NOTICE names what of other projects the tree holds, the Python package's
# metadata says Apache-2.0, and every source file of the tree (code,
# scripts, build files, man pages, templates, policies, recipes) carries an
# SPDX line.  The files exempt are data: the golden outputs of other
# projects' code (tests/golden/**/*.txt, *.json), fuzz corpora and
# crashes, JSON files (which hold no comment), markers, the ABI
# records abidw generates (abi/) and the two files of debian/ whose
# formats have no comment.
. "$HUTCH_SRCDIR/tests/lib/tap.sh"

cd "$HUTCH_SRCDIR" || tap_skip_all "no source tree"
[ -d .git ] && command -v git >/dev/null || tap_skip_all "not a git checkout: the tracked files cannot be listed"

tap_like "$(head -n 4 LICENSE)" "Apache License.*Version 2\.0, January 2004" "LICENSE is the Apache License 2.0"
tap_like "$(grep -c . LICENSE)" "^1[5-9][0-9]$" "its whole text"
tap_like "$(cat NOTICE)" "rich 13\.3\.1.*MIT License" "NOTICE names the data of rich's in src/bench/rich_tables.c, with its licence"
tap_like "$(cat python/pyproject.toml)" 'license = \{text = "Apache-2\.0"\}' "the Python package's metadata says Apache-2.0"
tap_like "$(cat NEWS)" "Version [0-9]+\.[0-9]+\.[0-9]+" "NEWS says what each version brings"

exempt() {
  case $1 in
  tests/golden/*.txt | tests/golden/*/obs/* | tests/golden/lis-prompts/* | tests/golden/lis-bench/out/*) return 0 ;;
  tests/fuzz/corpus/* | tests/fuzz/crashes/*) return 0 ;;
  *.json | *.tar | *.png | */py.typed | */.gitkeep | LICENSE | NOTICE | abi/*.abi) return 0 ;;
  # Formats without comments; debian/copyright says the licence.
  debian/changelog | debian/source/format) return 0 ;;
  esac
  return 1
}
files=()
missing=()
while IFS= read -r f; do
  exempt "$f" && continue
  [ -f "$f" ] || continue
  # awk never sees an empty file's first line.
  [ -s "$f" ] || missing+=("$f")
  files+=("$f")
done < <(git ls-files)
n=${#files[@]}
# In the first three lines, as the tag's convention has it; one awk for the
# whole tree (a head and a grep a file took thousands of processes).
mapfile -t -O "${#missing[@]}" missing < <(awk '
  FNR == 1 {
    if (cur != "" && !found) print cur # the file before had under three lines
    cur = FILENAME; found = 0
  }
  /SPDX-License-Identifier: Apache-2\.0/ { found = 1 }
  FNR == 3 || found { if (!found) print cur; cur = ""; nextfile }
  END { if (cur != "" && !found) print cur }' "${files[@]}")
tap_ok "the tree has source files to check ($n)" test "$n" -gt 500
tap_is "${missing[*]}" "" "every source file carries an SPDX line in its first three lines"
tap_done
