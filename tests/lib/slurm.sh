#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A single-node Slurm for the tests that submit jobs (benchmark-slurm.sh,
# serve-deploy.sh): its own munged, slurmctld and slurmd, all run as the
# test's user from a slurm.conf in a temporary directory.  Source it after
# tap.sh, then `slurm_start DIR` (the test is skipped, saying why, where
# Slurm cannot start; SLURM_CONF is exported, s is DIR/slurm) and
# `stop_cluster` at the end (an EXIT trap).  free_port prints a free TCP
# port on loopback.
slurm_have() {
  local b
  for b in munged slurmctld slurmd sbatch squeue scontrol sinfo; do
    command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] ||
      tap_skip_all "$b is not installed (Debian's slurm-wlm and munge: tests/setup-host.sh)"
  done
  PATH=$PATH:/usr/sbin
}
pids=()
stop_cluster() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  pids=()
}
free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
slurm_start() {
  local tmp=$1
  s=$tmp/slurm
  mkdir -p "$s/state" "$s/spool" "$s/munge"
  chmod 0700 "$s/munge"
  dd if=/dev/urandom of="$s/munge/munge.key" bs=1024 count=1 status=none
  chmod 0600 "$s/munge/munge.key"
  # --force: the socket's directory lies under a world-writable /tmp.
  munged --foreground --force --key-file="$s/munge/munge.key" --socket="$s/munge/munge.sock" \
    --pid-file="$s/munge/munged.pid" --log-file="$s/munge/munged.log" --seed-file="$s/munge/seed" \
    2>"$s/munged.err" &
  pids+=($!)
  for _ in $(seq 100); do [ -S "$s/munge/munge.sock" ] && break; sleep 0.05; done
  [ -S "$s/munge/munge.sock" ] || tap_skip_all "munged does not start: $(tail -n 2 "$s/munged.err" "$s/munge/munged.log" 2>/dev/null | tr '\n' ' ')"

  node=$(hostname -s)
  user=$(id -un)
  cat >"$s/slurm.conf" <<EOF
ClusterName=hutchtest
SlurmctldHost=$node(127.0.0.1)
SlurmUser=$user
SlurmdUser=$user
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
AuthInfo=socket=$s/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$s/state
SlurmdSpoolDir=$s/spool
SlurmctldPidFile=$s/slurmctld.pid
SlurmdPidFile=$s/slurmd.pid
SlurmctldLogFile=$s/slurmctld.log
SlurmdLogFile=$s/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
MinJobAge=600
SlurmdParameters=config_overrides
NodeName=$node NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=hutch Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF=$s/slurm.conf
  slurmctld -D -f "$SLURM_CONF" 2>"$s/slurmctld.err" &
  pids+=($!)
  slurmd -D -f "$SLURM_CONF" -N "$node" 2>"$s/slurmd.err" &
  pids+=($!)
  state=
  for _ in $(seq 300); do
    state=$(sinfo -h -N -o %t 2>/dev/null)
    [ "$state" = idle ] && break
    sleep 0.1
  done
  if [ "$state" != idle ]; then
    why=$(tail -n 3 "$s/slurmctld.err" "$s/slurmd.err" "$s/slurmctld.log" "$s/slurmd.log" 2>/dev/null | tr '\n' ' ')
    tap_skip_all "Slurm cannot start here (node state '${state:-none}'): $why"
  fi
}
