# SPDX-License-Identifier: Apache-2.0
# The Debian mirror this host's apt uses, for tests that reach it through
# hutch's proxy: read from the apt sources when the test runs, never
# written into the repository.
#
#   host_debian_mirror          print the mirror's URI (no trailing /), or nothing
#   mirror_host URI             print the URI's host name
#   mirror_allow_lines HOST     print [network] lines allowing HOST: an allow
#                               line, and allow_address lines for each address
#                               it resolves to that the policy refuses by class
#                               (a mirror that is a local cache)

host_debian_mirror() {
  local m
  m=$(grep -rhoE '^(deb|URIs:)[[:space:]]+https?://[^ ]+' /etc/apt/sources.list /etc/apt/sources.list.d 2>/dev/null |
    awk '{print $2}' | grep -m1 '/debian/\?$')
  printf '%s\n' "${m%/}"
}

mirror_host() { sed -E 's#^https?://([^/:]+).*#\1#' <<<"$1"; }

mirror_allow_lines() {
  echo "allow = $1"
  getent ahostsv4 "$1" | awk '{print $1}' | sort -u | python3 -c "
import ipaddress, sys
for a in sys.stdin.read().split():
    if not ipaddress.ip_address(a).is_global:
        print('allow_address = ' + a)"
}
