/* SPDX-License-Identifier: Apache-2.0 */
/* Command-line value parsers. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "tap.h"

int main(void) {
  double d;
  tap_ok(parse_duration("30", &d) && d == 30, "plain seconds");
  tap_ok(parse_duration("1.5", &d) && d == 1.5, "fractional seconds");
  tap_ok(parse_duration("250ms", &d) && d == 0.25, "milliseconds");
  tap_ok(parse_duration("2m", &d) && d == 120, "minutes");
  tap_ok(parse_duration("1h", &d) && d == 3600, "hours");
  tap_ok(!parse_duration("0", &d), "zero refused");
  tap_ok(!parse_duration("-1", &d), "negative refused");
  tap_ok(!parse_duration("10x", &d), "unknown unit refused");
  tap_ok(!parse_duration("", &d), "empty refused");
  tap_ok(!parse_duration("inf", &d), "infinity refused");

  tap_ok(parse_duration("90s", &d) && d == 90, "seconds with their unit");
  tap_ok(parse_duration("10m", &d) && d == 600, "ten minutes");
  tap_ok(parse_duration("2h", &d) && d == 7200, "two hours");
  tap_ok(!parse_duration("none", &d), "a word refused");
  tap_ok(!parse_duration("5 m", &d), "a space refused");

  char buf[32];
  format_duration(4.54, buf, sizeof(buf));
  tap_is_str(buf, "4.5s", "under 10 s: a tenth");
  format_duration(45, buf, sizeof(buf));
  tap_is_str(buf, "45s", "seconds");
  format_duration(570, buf, sizeof(buf));
  tap_is_str(buf, "9m30s", "minutes and seconds");
  format_duration(3900, buf, sizeof(buf));
  tap_is_str(buf, "1h05m", "hours and minutes");
  format_duration(2 * 86400 + 3 * 3600 + 59, buf, sizeof(buf));
  tap_is_str(buf, "2d03h", "days and hours");
  format_duration(-3, buf, sizeof(buf));
  tap_is_str(buf, "0.0s", "nothing left");
  format_duration(59.6, buf, sizeof(buf));
  tap_is_str(buf, "1m00s", "rounded to the second");

  uint64_t n;
  tap_ok(hutch_parse_size("1024", &n) && n == 1024, "bytes");
  tap_ok(hutch_parse_size("512M", &n) && n == 512ull << 20, "megabytes");
  tap_ok(hutch_parse_size("2G", &n) && n == 2ull << 30, "gigabytes");
  tap_ok(hutch_parse_size("1.5GiB", &n) && n == 3ull << 29, "fractional GiB");
  tap_ok(hutch_parse_size("64k", &n) && n == 64ull << 10, "lower-case unit");
  tap_ok(!hutch_parse_size("M", &n), "unit without number refused");
  tap_ok(!hutch_parse_size("-5M", &n), "negative refused");
  tap_ok(!hutch_parse_size("5X", &n), "unknown unit refused");
  tap_ok(!hutch_parse_size("99999999999T", &n), "overflow refused");

  struct hutch_bind b;
  char *storage = NULL;
  tap_ok(parse_bind("/src:/dst", &b, &storage), "SRC:DST");
  tap_is_str(b.source, "/src", "source");
  tap_is_str(b.dest, "/dst", "dest");
  tap_ok(!b.readonly, "read-write by default");
  free(storage);
  tap_ok(parse_bind("/a:/b:ro", &b, &storage) && b.readonly, ":ro");
  free(storage);
  tap_ok(parse_bind("/a:/b:rw", &b, &storage) && !b.readonly, ":rw");
  free(storage);
  tap_ok(!parse_bind("/a", &b, &storage), "no destination refused");
  tap_ok(!parse_bind("a:/b", &b, &storage), "relative source refused");
  tap_ok(!parse_bind("/a:b", &b, &storage), "relative destination refused");
  tap_ok(!parse_bind("/a:/b:rx", &b, &storage), "unknown mode refused");

  tap_ok(valid_env_assignment("A=1"), "simple assignment");
  tap_ok(valid_env_assignment("A_B2="), "empty value allowed");
  tap_ok(!valid_env_assignment("=1"), "empty key refused");
  tap_ok(!valid_env_assignment("1A=1"), "key starting with a digit refused");
  tap_ok(!valid_env_assignment("A-B=1"), "dash in key refused");
  tap_ok(!valid_env_assignment("NOEQ"), "no '=' refused");

  struct hutch_port p;
  char addr[64];
  tap_ok(parse_publish("8080:80", &p, addr, sizeof(addr)) && p.host_addr == NULL && p.host_port == 8080 && p.port == 80,
         "-p HOSTPORT:PORT");
  tap_ok(parse_publish("0:8888", &p, addr, sizeof(addr)) && p.host_port == 0 && p.port == 8888, "-p 0:PORT: any port");
  tap_ok(parse_publish("127.0.0.2:1:65535", &p, addr, sizeof(addr)) && p.host_addr == addr &&
             strcmp(addr, "127.0.0.2") == 0 && p.host_port == 1 && p.port == 65535,
         "-p ADDR:HOSTPORT:PORT");
  tap_ok(parse_publish("[::1]:80:81", &p, addr, sizeof(addr)) && strcmp(addr, "::1") == 0 && p.host_port == 80 &&
             p.port == 81,
         "-p [V6]:HOSTPORT:PORT");
  tap_ok(!parse_publish("80", &p, addr, sizeof(addr)), "a lone port refused");
  tap_ok(!parse_publish("80:0", &p, addr, sizeof(addr)), "port 0 inside refused");
  tap_ok(!parse_publish("80:65536", &p, addr, sizeof(addr)), "port past 65535 refused");
  tap_ok(!parse_publish("80:+1", &p, addr, sizeof(addr)), "a sign refused");
  tap_ok(!parse_publish(":80", &p, addr, sizeof(addr)), "an empty host port refused");
  tap_ok(!parse_publish("::1:80:80", &p, addr, sizeof(addr)), "IPv6 without brackets refused");
  tap_ok(!parse_publish("[::1]80:80", &p, addr, sizeof(addr)), "no ':' after the brackets refused");
  tap_ok(!parse_publish("[]:80:80", &p, addr, sizeof(addr)), "empty brackets refused");
  tap_ok(!parse_publish("a:b:80:80", &p, addr, sizeof(addr)), "two colons in the host part refused");
  tap_ok(!parse_publish(":1:80", &p, addr, sizeof(addr)), "an empty address refused");
  char small[4];
  tap_ok(!parse_publish("127.0.0.1:1:80", &p, small, sizeof(small)), "an address longer than its buffer refused");
  return tap_done();
}
