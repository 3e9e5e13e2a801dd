#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Bash completion (completion/hutch): every verb, every option of every
# verb's --help, image names and sandbox ids, with and without the
# bash-completion package; `make install` installs it where bash-completion
# looks.
. "$(dirname "$0")/../lib/tap.sh"

file=$HUTCH_SRCDIR/completion/hutch
[ -f "$file" ] || tap_skip_all "completion/hutch is missing"
img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)
H=$HUTCH_BIN
name=$img
id=$("$H" create --rootfs "$img") || tap_skip_all "hutch create failed"
trap '"$H" rm "$id" >/dev/null 2>&1; rm -rf "$tmp"' EXIT

# complete LINE: what TAB offers at the end of LINE (one per line, sorted),
# in a fresh bash that sourced the completion (and bash-completion with $1).
complete_line() { # WITH_BASH_COMPLETION LINE
  bash --norc --noprofile -c '
    [ "$1" = yes ] && . /usr/share/bash-completion/bash_completion
    . "$2"
    hutch() { "$HUTCH_BIN" "$@"; }
    export -f hutch 2>/dev/null
    read -ra COMP_WORDS <<<"$3"
    [[ $3 == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMP_LINE=$3 COMP_POINT=${#3}
    _hutch hutch "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
    printf "%s\n" "${COMPREPLY[@]}" | sort -u' bash "$1" "$file" "$2"
}

offers() { complete_line "$mode" "$2" | grep -qxF -- "$1"; }

# hutch is named by its path here: put it first on PATH as "hutch".
mkdir "$tmp/bin"
ln -s "$H" "$tmp/bin/hutch"
export PATH=$tmp/bin:$PATH

tap_ok "the file sources cleanly" bash --norc --noprofile -c ". '$file'"
tap_like "$(bash --norc --noprofile -c ". '$file'; complete -p hutch")" '^complete -F _hutch hutch$' \
  "complete -p: hutch is completed by _hutch"

modes=(no)
[ -f /usr/share/bash-completion/bash_completion ] && modes+=(yes)
for mode in "${modes[@]}"; do
  tag="(bash-completion: $mode)"
  verbs=$(hutch --help | awk '/^Commands:/ { on = 1; next } /^$/ { on = 0 } on && /^  [a-z]/ { print $1 }' | sort)
  got=$(complete_line "$mode" "hutch " | grep -v '^-')
  tap_is "$got" "$verbs" "every verb is offered $tag"
  tap_like "$verbs" "cp" "cp among them"
  tap_like "$verbs" "mcp" "mcp among them"
  tap_is "$(complete_line "$mode" "hutch ex")" "exec" "a verb's prefix completes $tag"

  # Every option each verb's --help lists is offered after "--".
  missing=
  for v in exec create ps rm pause resume ttl reset snapshot fork cp mcp serve doctor run "rootfs pull" "rootfs build" "rootfs import" "rootfs ls" "rootfs rm" \
    "policy show"; do
    # shellcheck disable=SC2086 # v is one or two words
    want=$(hutch $v --help 2>/dev/null | grep -oE -- '(^|[ ,])--[a-z][a-z0-9-]*\b' | tr -d ' ,' | sort -u)
    got=$(complete_line "$mode" "hutch $v --")
    for o in $want; do
      # A whole line of what was offered; no grep an option (hundreds).
      [[ $'\n'$got$'\n' == *$'\n'"$o"$'\n'* ]] || missing+="$v $o; "
    done
  done
  tap_is "$missing" "" "every option of every verb is offered $tag"

  tap_is "$(complete_line "$mode" "hutch rootfs " | grep -v '^-' | tr '\n' ' ')" "build export import ls pull push rm " \
    "rootfs's subcommands $tag"
  tap_ok "image names after --rootfs $tag" offers "$name" "hutch exec --rootfs "
  tap_ok "and after mcp --image $tag" offers "$name" "hutch mcp --image "
  tap_ok "and after serve --image $tag" offers "$name" "hutch serve --image "
  tap_ok "and for rootfs rm $tag" offers "$name" "hutch rootfs rm "
  tap_ok "sandbox ids after --in $tag" offers "$id" "hutch exec --in "
  tap_ok "and for rm $tag" offers "$id" "hutch rm "
  tap_ok "and for pause and resume $tag" offers "$id" "hutch pause "
  tap_ok "and for ttl $tag" offers "$id" "hutch ttl "
  tap_is "$(complete_line "$mode" "hutch create --on-ttl " | tr '\n' ' ')" "pause remove " "--on-ttl's values $tag"
  tap_ok "and for snapshot $tag" offers "$id" "hutch snapshot "
  tap_ok "and for fork $tag" offers "$id" "hutch fork "
  tap_ok "and after fork's options $tag" offers "$id" "hutch fork -n 2 --label a=b "
  tap_is "$(complete_line "$mode" "hutch fork -n ")" "" "nothing offered for -n's number $tag"
  tap_like "$(complete_line "$mode" "hutch cp ${id:0:4}")" "$id:/" "cp offers ID:/ $tag"
  tap_is "$(complete_line "$mode" "hutch exec --net " | tr '\n' ' ')" "none proxy " "--net's values $tag"
  tap_is "$(complete_line "$mode" "hutch exec --rootfs x -- ls --")" "" "nothing after exec's -- $tag"
done

# make install puts it where bash-completion loads it from.
if [ "$HUTCH_TEST_MODE" = root ] && [ -w "$HUTCH_BUILDDIR" ]; then
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$HUTCH_BUILDDIR" install-dist_bashcompletionDATA \
    DESTDIR="$tmp/dest" >"$tmp/install.log" 2>&1
  tap_check $? "make install-dist_bashcompletionDATA runs (part of make install)"
  tap_ok "installing completion/hutch under share/bash-completion/completions" \
    bash -c "ls '$tmp'/dest/*/share/bash-completion/completions/hutch '$tmp'/dest/*/*/share/bash-completion/completions/hutch 2>/dev/null | grep -q ."
else
  tap_skip "make install installs the completion" "needs the build tree (root run)"
fi

tap_done
