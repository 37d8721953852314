#!/usr/bin/env bash
# A single-node Slurm on loopback for tests (Debian slurm-wlm + munge, no systemd, run as root).
# Usage: slurm-local.sh up|down
#   up:   install the packages if missing, (re)write /etc/slurm/slurm.conf, start munged (if no
#         munge is working yet), slurmctld and slurmd; wait until partition "debug" is idle.
#         Stops a previous instance started by this script first.
#   down: cancel all jobs, then stop the daemons this script started (by pidfile).
# Env: SLURM_LOCAL_DIR (state, logs, pidfiles; default /var/tmp/slurm-local),
#      SLURM_LOCAL_CPUS (CPUs advertised, may exceed the hardware; default 2 x nproc).
# Recipe and gotchas: shared/notes/slurm-local.md.
set -euo pipefail
D=${SLURM_LOCAL_DIR:-/var/tmp/slurm-local}
CPUS=${SLURM_LOCAL_CPUS:-$(( $(nproc) * 2 ))}
MEM=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 * 8 / 10 ))   # MB advertised: 80% of RAM

alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop_pid() {   # stop_pid PIDFILE: SIGTERM the process and wait (at most 30 s) until it is gone
  alive "$1" || return 0
  local pid; pid=$(cat "$1"); kill "$pid" 2>/dev/null || true
  for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  echo "slurm-local: process $pid ($1) did not stop" >&2; return 1
}

install_packages() {
  command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null \
    && command -v munged >/dev/null && return 0
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    slurmctld slurmd slurm-client munge >/dev/null
}

start_munge() {   # only when no munged answers yet (a host's init system may run one)
  munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return 0
  [ -s /etc/munge/munge.key ] || mungekey --create
  chown -R munge:munge /etc/munge; chmod 700 /etc/munge; chmod 600 /etc/munge/munge.key
  install -d -o munge -g munge -m 755 /run/munge               # /run is a tmpfs: recreate it
  runuser -u munge -- /usr/sbin/munged
  cp /run/munge/munged.pid "$D/munged.pid"                       # marks munged as ours for `down`
  munge -n | unmunge >/dev/null
}

write_conf() {
  mkdir -p /etc/slurm
  cat > /etc/slurm/slurm.conf <<CONF
ClusterName=local
SlurmctldHost=localhost
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$D/ctld
SlurmdSpoolDir=$D/d
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=512
SlurmdParameters=config_overrides
SchedulerParameters=batch_sched_delay=0
ReturnToService=2
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
}

down() {
  if alive "$D/slurmctld.pid"; then                # jobs first: slurmstepd outlives slurmd
    squeue -h -o %i 2>/dev/null | xargs -r scancel --full 2>/dev/null || true
    for _ in $(seq 100); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.2; done
  fi
  stop_pid "$D/slurmd.pid"; stop_pid "$D/slurmctld.pid"; stop_pid "$D/munged.pid"
}

up() {
  install_packages
  down                                             # a second slurmd would kill the first (notes, gotcha 2)
  for daemon in slurmctld slurmd; do
    if pgrep -x "$daemon" >/dev/null; then
      echo "slurm-local: a $daemon not started by this script is running; stop it first" >&2; return 1
    fi
  done
  rm -rf "$D"; mkdir -p "$D/ctld" "$D/d"
  start_munge
  write_conf
  /usr/sbin/slurmctld
  /usr/sbin/slurmd -N localhost                    # NodeName differs from the hostname
  for _ in $(seq 150); do [ "$(sinfo -h -o %T 2>/dev/null)" = idle ] && break; sleep 0.2; done
  sinfo
  [ "$(sinfo -h -o %T)" = idle ] || { echo "slurm-local: node not idle; see $D/*.log" >&2; return 1; }
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
