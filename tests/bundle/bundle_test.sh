#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The engine bundle on a bare host (issue 9, docs/design/data-plane.md#backends): makes the bundle
# from the freshly built binaries (scripts/bundle-engine), copies it into a
# Debian bookworm minbase root filesystem with nothing else installed, and
# there, under the bundle's own launchers and with a clean environment:
#   - a 2-rank `allreduce --check` for Open MPI and for MPICH reports
#     wrong = 0 on every size (--format jsonl) and ends "ok";
#   - `--backend nccl` fails with exactly one error line (exit 2), alone
#     and under the launcher.
#
# The root filesystem is made once with mmdebstrap (or debootstrap) from
# the mirror apt uses here and cached in $COLLBENCH_ROOTFS_CACHE (default
# /var/cache/collbench/rootfs-bookworm-minbase); it is remade when its stamp
# is missing or it no longer runs /bin/true. Runs never write to it: each
# run gets an overlay on tmpfs. Every mount (overlay, /proc, /sys,
# /dev/shm, /tmp) is made inside a private mount namespace (unshare) and unmounted by
# a trap, also on failure; the namespace itself makes them vanish when its
# last process ends. Needs root: exits 77 with a message otherwise.
#
# Usage: bundle_test.sh --source-dir DIR --build-dir DIR --bin-dir DIR [--mpich]
set -euo pipefail

source_dir= build_dir= bin_dir= mpich=0
while (($#)); do
  case $1 in
    --source-dir) source_dir=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --bin-dir) bin_dir=$2; shift 2 ;;
    --mpich) mpich=1; shift ;;
    *) echo "bundle_test: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -n $source_dir && -n $build_dir && -n $bin_dir ]] || {
  echo "usage: bundle_test.sh --source-dir DIR --build-dir DIR --bin-dir DIR [--mpich]" >&2
  exit 2
}

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { printf '==> [%3ds] %s\n' "$SECONDS" "$*"; }

[[ $(id -u) -eq 0 ]] || skip "needs root (chroot, mounts in a private namespace)"
for tool in unshare chroot mount python3; do
  command -v "$tool" >/dev/null || skip "needs $tool"
done
builder=$(command -v mmdebstrap || command -v debootstrap || true)
[[ -n $builder ]] || skip "needs mmdebstrap or debootstrap to make the root filesystem (scripts/setup installs mmdebstrap)"

rootfs=${COLLBENCH_ROOTFS_CACHE:-/var/cache/collbench/rootfs-bookworm-minbase}
stamp=$rootfs/.collbench-rootfs
work=$(mktemp -d "${TMPDIR:-/tmp}/collbench-bundle-test.XXXXXX")
cleanup() {
  # The mounts live in the namespace of the run, which has ended; make sure.
  if grep -q " ${work}/" /proc/self/mountinfo; then
    echo "bundle_test: mounts left under $work after the run:" >&2
    grep " ${work}/" /proc/self/mountinfo >&2
  fi
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

# --- the bundle --------------------------------------------------------------
step "bundle from $bin_dir"
"$source_dir/scripts/bundle-engine" --build-dir "$build_dir" --bin-dir "$bin_dir" \
  --out "$work/collbench" --no-tarball
if ((mpich)) && [[ ! -x $work/collbench/libexec/collbench-rank-mpich ]]; then
  fail "the bundle has no collbench-rank-mpich"
fi

# --- the root filesystem -----------------------------------------------------
# The Debian mirror apt uses on this machine (deb822 or one-line sources).
debian_mirror() {
  local uri
  uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
        awk '/^URIs:/ {print $2}' | grep -v -- '-security' | head -1 || true)
  if [[ -z $uri ]]; then
    uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
          awk '$1 == "deb" && $0 !~ /-security/ {for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) {print $i; exit}}' || true)
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}

rootfs_usable() { [[ -f $stamp ]] && chroot "$rootfs" /bin/true 2>/dev/null; }

make_rootfs() {
  local mirror partial=$rootfs.partial
  mirror=$(debian_mirror)
  step "making the bookworm minbase root filesystem with $(basename "$builder") from $mirror (once; cached in $rootfs)"
  rm -rf --one-file-system "$partial" "$rootfs"
  mkdir -p "$(dirname "$rootfs")"
  if [[ $(basename "$builder") == mmdebstrap ]]; then
    mmdebstrap --quiet --variant=minbase bookworm "$partial" "$mirror"
  else
    debootstrap --variant=minbase bookworm "$partial" "$mirror" > "$work/debootstrap.log" ||
      { tail -20 "$work/debootstrap.log" >&2; fail "debootstrap failed"; }
  fi
  echo "bookworm minbase from $mirror, $(date -u +%FT%TZ)" > "$partial/.collbench-rootfs"
  mv "$partial" "$rootfs"
}

# One maker at a time (other build trees run this test too).
mkdir -p "$(dirname "$rootfs")"
exec 9> "$(dirname "$rootfs")/.rootfs.lock"
flock 9
if rootfs_usable; then
  step "root filesystem: $rootfs ($(cat "$stamp"))"
else
  [[ -e $rootfs ]] && step "root filesystem at $rootfs is incomplete or broken: remaking it"
  make_rootfs
  rootfs_usable || fail "the new root filesystem at $rootfs does not run /bin/true"
fi
# "Nothing else installed": no MPI, CUDA or NCCL of its own.
if chroot "$rootfs" /bin/sh -c 'command -v mpirun || command -v mpiexec || ls /usr/lib/x86_64-linux-gnu | grep -E "^lib(mpi|mpich|nccl|cudart)\.so"'; then
  fail "the root filesystem at $rootfs has MPI, CUDA or NCCL installed; remove it to have it remade"
fi

# --- the run, inside a private mount namespace -------------------------------
# Output goes to $work/out on the host; inside, the bundle is at
# /opt/collbench and the commands run from /root with a clean environment.
mkdir -p "$work/out"
cat > "$work/inside.sh" <<'INSIDE'
set -euo pipefail
rootfs=$1 bundle=$2 out=$3 mpich=$4
root=$(dirname "$out")/root
mounted=()
unmount_all() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" || true; done
}
trap unmount_all EXIT
mnt() { mount "$@"; mounted+=("${@: -1}"); }

mkdir -p "$root.layer" "$root"
mnt -t tmpfs -o size=1g tmpfs "$root.layer"
mkdir -p "$root.layer/upper" "$root.layer/work"
mnt -t overlay overlay -o "lowerdir=$rootfs,upperdir=$root.layer/upper,workdir=$root.layer/work" "$root"
mnt -t proc proc "$root/proc"
mnt -t sysfs -o ro sysfs "$root/sys"  # hwloc and UCX read the topology there
mnt -t tmpfs -o size=512m,mode=1777 tmpfs "$root/dev/shm"
mnt -t tmpfs -o mode=1777 tmpfs "$root/tmp"
cp -a "$bundle" "$root/opt/collbench"
# Hydra resolves this host's name; a bare system has no /etc/hosts.
printf '127.0.0.1 localhost\n127.0.1.1 %s\n' "$(hostname)" > "$root/etc/hosts"

in_root() {  # NAME: runs the rest in the chroot, keeping stdout, stderr, exit code
  local name=$1 rc=0
  shift
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    /bin/sh -c 'cd /root && exec "$@"' sh "$@" > "$out/$name.out" 2> "$out/$name.err" || rc=$?
  echo "$rc" > "$out/$name.rc"
}
B=/opt/collbench/bin
ompi=(--allow-run-as-root --mca mpi_yield_when_idle 1 -np 2)
in_root openmpi.allreduce $B/mpirun "${ompi[@]}" $B/collbench-rank allreduce --check --format jsonl -b 8 -e 1M -f 64 -n 50
in_root openmpi.nccl_alone $B/collbench-rank allreduce --backend nccl
in_root openmpi.nccl_np2 $B/mpirun "${ompi[@]}" $B/collbench-rank allreduce --backend nccl --format jsonl
if ((mpich)); then
  in_root mpich.allreduce $B/mpiexec.mpich -n 2 $B/collbench-rank-mpich allreduce --check --format jsonl -b 8 -e 1M -f 64 -n 50
  in_root mpich.nccl_alone $B/collbench-rank-mpich allreduce --backend nccl
  in_root mpich.nccl_np2 $B/mpiexec.mpich -n 2 $B/collbench-rank-mpich allreduce --backend nccl --format jsonl
fi
INSIDE
step "running in the root filesystem (private mount namespace)"
# In its own process group, so that an interrupted test stops every process
# of the run (and its trap unmounts) before the work directory goes.
inner_pid=
stop_inner() {
  if [[ -n $inner_pid ]]; then
    kill -TERM -- "-$inner_pid" 2>/dev/null || true
    wait "$inner_pid" 2>/dev/null || true
  fi
  exit 143
}
trap stop_inner INT TERM
setsid unshare --mount --propagation private -- \
  bash "$work/inside.sh" "$rootfs" "$work/collbench" "$work/out" "$mpich" &
inner_pid=$!
inner_rc=0
wait "$inner_pid" || inner_rc=$?
inner_pid=
((inner_rc == 0)) || fail "the run in the root filesystem failed (exit $inner_rc)"
if grep -q " ${work}/" /proc/self/mountinfo; then fail "mounts under $work are visible outside the run"; fi

# --- the assertions ----------------------------------------------------------
step "checking the results"
flavors=(openmpi)
((mpich)) && flavors+=(mpich)
python3 - "$work/out" "${flavors[@]}" <<'CHECK'
import json, pathlib, sys

out = pathlib.Path(sys.argv[1])
failures = []

def read(name):
    return ((out / f"{name}.out").read_text(), (out / f"{name}.err").read_text(),
            int((out / f"{name}.rc").read_text()))

def show(name, stdout, stderr):
    return f"\n--- {name} stdout:\n{stdout}--- {name} stderr:\n{stderr}"

for flavor in sys.argv[2:]:
    name = f"{flavor}.allreduce"
    stdout, stderr, rc = read(name)
    records = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    sizes = [r for r in records if r.get("kind") == "size"]
    ends = [r for r in records if r.get("kind") == "end"]
    wrong = [r["wrong"] for r in sizes]
    if rc != 0 or not sizes or any(w != 0 for w in wrong) or [e.get("status") for e in ends] != ["ok"]:
        failures.append(f"{name}: exit {rc}, wrong per size {wrong}, end {ends}" + show(name, stdout, stderr))
    else:
        print(f"{name}: exit 0, {len(sizes)} sizes {[r['bytes'] for r in sizes]}, wrong = 0 on each")
        if stderr.strip():
            print(f"  {name} stderr (not judged):\n" + stderr)

    # Alone (singleton): the process's whole stderr is one line.
    name = f"{flavor}.nccl_alone"
    stdout, stderr, rc = read(name)
    lines = stderr.splitlines()
    if rc != 2 or len(lines) != 1 or not lines[0].startswith("collbench-rank: "):
        failures.append(f"{name}: exit {rc}, {len(lines)} stderr lines, want exit 2 and one line" + show(name, stdout, stderr))
    else:
        print(f"{name}: exit 2, one line: {lines[0]}")

    # Under the launcher: one engine error line and one error record (the
    # launcher adds its own note that a rank exited non-zero).
    name = f"{flavor}.nccl_np2"
    stdout, stderr, rc = read(name)
    engine_lines = [l for l in stderr.splitlines() if l.startswith("collbench-rank")]
    errors = [json.loads(l) for l in stdout.splitlines() if l.startswith("{") and '"error"' in l]
    errors = [r for r in errors if r.get("kind") == "error"]
    if rc == 0 or len(engine_lines) != 1 or len(errors) != 1 or engine_lines[0] != f"collbench-rank: {errors[0].get('message')}":
        failures.append(f"{name}: exit {rc}, engine lines {engine_lines}, error records {errors}" + show(name, stdout, stderr))
    else:
        print(f"{name}: exit {rc}, one line: {engine_lines[0]}")

if failures:
    print("\n\n".join(failures), file=sys.stderr)
    sys.exit(1)
CHECK
step "passed"
