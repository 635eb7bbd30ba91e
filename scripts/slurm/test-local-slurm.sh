#!/usr/bin/env bash
# Runs a small study on a real one-node Slurm started here (munged, slurmctld, slurmd on
# localhost, with their own key, socket, ports, configuration and spool in a temporary
# folder): 3 shards as a job array plus the dependent merge job, through submit.sh. Passes
# when the merged output equals the single-machine run byte for byte.
#   bash scripts/slurm/test-local-slurm.sh
# Needs root; installs slurm-wlm and munge with apt-get when missing. Without root, or
# without them and apt-get, it prints a SKIPPED banner and exits 0. Every daemon it started
# is stopped by pid on exit.
# Env: GPUMODEL (binary; default target/release/gpumodel, built with cargo when cargo is
# there), GPUMODEL_SLURM_STUDY (default reports/ugpu/study-ci.toml),
# GPUMODEL_SLURM_TIMEOUT (seconds for the jobs, default 900), GPUMODEL_SLURM_KEEP=1 keeps
# the temporary folder.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
study=${GPUMODEL_SLURM_STUDY:-$repo/reports/ugpu/study-ci.toml}
timeout_s=${GPUMODEL_SLURM_TIMEOUT:-900}
shards=3
start=$SECONDS
export PATH=$PATH:/usr/sbin:/sbin   # munged, slurmctld, slurmd

banner() { printf '%s\n' "=========================================================================="; }
skip() {
    banner
    echo "SKIPPED: local Slurm test: $*"
    echo "SKIPPED: the sharded Slurm run was NOT checked"
    banner
    exit 0
}
say() { echo "[slurm-test $((SECONDS - start))s] $*"; }
fail() { echo "FAIL: local Slurm test: $*" >&2; exit 1; }

# --- run or skip --------------------------------------------------------------------------
[ "$(id -u)" -eq 0 ] || skip "not root (starting munged, slurmctld and slurmd needs root)"
need=(munged slurmctld slurmd sbatch scontrol sinfo squeue scancel)
missing() {
    local c
    for c in "${need[@]}"; do command -v "$c" >/dev/null || return 0; done
    return 1
}
if missing; then
    command -v apt-get >/dev/null || skip "slurm-wlm/munge not installed and no apt-get to install them"
    say "installing slurm-wlm and munge with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -q slurm-wlm munge; then
        apt-get update -q || fail "apt-get update failed"
        apt-get install -y -q slurm-wlm munge || fail "apt-get install slurm-wlm munge failed"
    fi
    ! missing || fail "still missing after installing slurm-wlm munge: ${need[*]}"
fi

if [ -n "${GPUMODEL:-}" ]; then
    gpumodel=$GPUMODEL
else
    gpumodel=$repo/target/release/gpumodel
    if command -v cargo >/dev/null; then
        (cd "$repo" && cargo build --release --quiet) || fail "cargo build --release failed"
    fi
fi
[ -x "$gpumodel" ] || fail "no gpumodel binary at $gpumodel"
gpumodel=$(cd "$(dirname "$gpumodel")" && pwd)/$(basename "$gpumodel")
[ -f "$study" ] || fail "no study file $study"

# --- temporary folder, daemons, cleanup ---------------------------------------------------
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumodel-slurm-test.XXXXXX")
chmod 755 "$tmp"
pids=()   # daemons started here, in start order
jobs_submitted=()

stop_pid() {
    local pid=$1 i
    kill "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 50; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

cleanup() {
    local rc=$? i
    trap - EXIT INT TERM
    if [ ${#jobs_submitted[@]} -gt 0 ] && [ -n "${SLURM_CONF:-}" ]; then
        scancel "${jobs_submitted[@]}" 2>/dev/null || true
        for ((i = 0; i < 30; i++)); do
            [ -z "$(squeue -h -j "$(IFS=,; echo "${jobs_submitted[*]}")" 2>/dev/null)" ] && break
            sleep 0.5
        done
    fi
    if [ "$rc" -ne 0 ] && [ -d "$tmp/log" ]; then
        # Daemon logs; a daemon's stderr only where it never opened its log file.
        for f in "$tmp"/log/*; do
            [ -f "$f" ] || continue
            [[ $f == *.out && -f ${f%.out}.log ]] && continue
            echo "----- last lines of $f" >&2
            tail -n 30 "$f" >&2 || true
        done
        for f in "$tmp"/out/slurm-logs/*.out; do
            [ -f "$f" ] || continue
            echo "----- $f" >&2
            tail -n 30 "$f" >&2 || true
        done
    fi
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do stop_pid "${pids[i]}"; done
    if [ "${GPUMODEL_SLURM_KEEP:-0}" = 1 ]; then
        echo "kept $tmp" >&2
    else
        rm -rf "$tmp"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A TCP port nobody listens on, from a range away from Slurm's defaults.
free_port() {
    local p
    for ((p = $1; p < $1 + 100; p++)); do
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return 0
        fi
    done
    fail "no free TCP port in $1..$(($1 + 99))"
}

mkdir -p "$tmp/munge" "$tmp/state" "$tmp/spool" "$tmp/log" "$tmp/single" "$tmp/out"
chmod 711 "$tmp/munge"

# munged with its own key and socket: nothing of a system munge is used or touched.
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1 count=1024 status=none
chmod 400 "$tmp/munge/munge.key"
munged --foreground --force --key-file="$tmp/munge/munge.key" --socket="$tmp/munge/munge.socket" \
    --pid-file="$tmp/munge/munged.pid" --seed-file="$tmp/munge/munge.seed" \
    >>"$tmp/log/munged.out" 2>&1 &
pids+=($!)

host=$(hostname -s)
cpus=$(nproc)
mem_mb=$(awk '/^MemTotal:/ { print int($2 / 1024 / 2) }' /proc/meminfo)
ctld_port=$(free_port 16817)
slurmd_port=$(free_port $((ctld_port + 1)))
# Nothing of an enclosing Slurm job or user defaults reaches this cluster's commands.
for v in $(compgen -e); do
    if [[ $v == SLURM_* || $v == SBATCH_* || $v == SQUEUE_* || $v == SINFO_* ]]; then unset "$v"; fi
done
export SLURM_CONF=$tmp/slurm.conf
: >"$tmp/plugstack.conf"
cat >"$SLURM_CONF" <<CONF
ClusterName=gpumodel-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$tmp/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$tmp/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MailProg=/bin/true
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF

for ((i = 0; i < 50; i++)); do
    [ -S "$tmp/munge/munge.socket" ] && break
    kill -0 "${pids[0]}" 2>/dev/null || fail "munged exited"
    sleep 0.2
done
[ -S "$tmp/munge/munge.socket" ] || fail "munged did not open its socket"

slurmctld -D -f "$SLURM_CONF" >>"$tmp/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$host" >>"$tmp/log/slurmd.out" 2>&1 &
pids+=($!)
say "started munged, slurmctld (port $ctld_port) and slurmd (port $slurmd_port): pids ${pids[*]}"

state=
for ((i = 0; i < 120; i++)); do
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || fail "daemon $p exited"; done
    state=$(sinfo -h -n "$host" -o %t 2>/dev/null || true)
    [ "$state" = idle ] && break
    sleep 0.5
done
[ "$state" = idle ] || fail "node $host not idle after 60 s (state '$state')"
say "node $host idle ($cpus CPUs)"

# --- single machine, then Slurm -----------------------------------------------------------
t0=$SECONDS
"$gpumodel" -q study "$study" --out "$tmp/single" >"$tmp/log/single.out" 2>&1 ||
    fail "single-machine study failed"
say "single-machine run: $((SECONDS - t0)) s"

t0=$SECONDS
sub=$(GPUMODEL=$gpumodel "$here/submit.sh" "$study" "$shards" "$tmp/out" --cpus-per-task=1 \
    --partition=debug) || fail "submit.sh failed"
echo "$sub"
array=$(awk '$1 == "shards:" { print $2 }' <<<"$sub")
merge=$(awk '$1 == "merge:" { print $2 }' <<<"$sub")
[[ $array =~ ^[0-9]+$ && $merge =~ ^[0-9]+$ ]] || fail "no job ids in submit.sh output"
jobs_submitted=("$array" "$merge")

# JobState of every record of a job (an array: one line per task).
job_states() { scontrol -o show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
merge_state=
while :; do
    merge_state=$(job_states "$merge")
    case $merge_state in
        COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE) break ;;
    esac
    [ $((SECONDS - t0)) -lt "$timeout_s" ] || fail "merge job $merge not finished after $timeout_s s (state $merge_state)"
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || fail "daemon $p exited"; done
    sleep 1
done
slurm_s=$((SECONDS - t0))
task_states=$(job_states "$array" | sort | uniq -c | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2 }')
say "Slurm: shards $task_states; merge $merge_state after $slurm_s s"
[ "$(job_states "$array" | grep -c '^COMPLETED$')" -eq "$shards" ] || fail "not every shard completed: $task_states"
[ "$merge_state" = COMPLETED ] || fail "merge job $merge ended $merge_state"
scontrol -o show job "$merge" | grep -q 'ExitCode=0:0' || fail "merge job $merge exit code not 0"
for ((i = 1; i <= shards; i++)); do
    [ -f "$tmp/out/shards/shard-$i-of-$shards.json" ] || fail "no shard-$i-of-$shards.json"
done

# --- byte for byte ------------------------------------------------------------------------
[ -f "$tmp/single/metrics.json" ] || fail "the single-machine run wrote no metrics.json"
n=0
while IFS= read -r -d '' name; do
    name=${name#./}
    [ -f "$tmp/out/$name" ] || fail "the merge wrote no $name (the single-machine run did)"
    cmp "$tmp/single/$name" "$tmp/out/$name" || fail "$name differs between the merged and the single-machine run"
    n=$((n + 1))
done < <(cd "$tmp/single" && find . -type f -print0)
banner
echo "PASS: local Slurm test: $shards shards + merge on a one-node Slurm equal the single-machine run byte for byte ($n files, metrics.json included); jobs $slurm_s s, whole test $((SECONDS - start)) s"
banner
