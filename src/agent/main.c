/* SPDX-License-Identifier: Apache-2.0 */
/* hutch-agent: the program behind `hutch run` (it is execv()ed by hutch so
 * that libcurl and libyaml never load into the hutch binary itself). */
#include "config.h"

#include "agent.h"

int main(int argc, char **argv) {
  return agent_main(argc, argv);
}
