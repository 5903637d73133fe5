#!/bin/sh
# Capture what `irqlab host` and `plan affinity --host` read of this host (/proc and /sys) into
# a fresh directory, as a `sysfs_tree` corpus file: ./capture-tree.sh NAME writes
# corpus/sysfs_tree/NAME.tree (run as root so PCI configuration space is read whole; say in
# README.md where it came from). Copies, never changes, the host. The host crate's
# tests/fixtures/capture-host.sh captures the inventory's part; this adds the CPUs' topology
# and caches, the network interfaces and the IRQ masks, with symlinks made relative inside the
# tree as sysfs has them.
set -eu
name=${1:?usage: capture-tree.sh NAME}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out="$tmp/tree"
mkdir -p "$out/proc/sys/kernel"
cp /proc/interrupts "$out/proc/interrupts"
cp /proc/sys/kernel/osrelease "$out/proc/sys/kernel/osrelease"
copy() { # copy FILE...: each readable file at the same path under $out
  for f in "$@"; do
    [ -f "$f" ] && [ -r "$f" ] || continue
    mkdir -p "$out$(dirname "$f")"
    cat "$f" > "$out$f" 2>/dev/null || rm -f "$out$f"
  done
}
for d in /proc/irq/[0-9]*; do
  copy "$d/smp_affinity" "$d/smp_affinity_list" "$d/effective_affinity" \
    "$d/effective_affinity_list" "$d/node"
done
for d in /sys/kernel/irq/[0-9]*; do
  copy "$d/actions" "$d/chip_name" "$d/hwirq" "$d/name" "$d/type"
done
c=/sys/devices/system/cpu
copy $c/online $c/isolated $c/nohz_full
for d in $c/cpu[0-9]*; do
  copy "$d"/topology/physical_package_id "$d"/topology/core_id "$d"/topology/core_cpus_list \
    "$d"/topology/thread_siblings_list
  for i in "$d"/cache/index*; do copy "$i/level" "$i/type" "$i/size" "$i/shared_cpu_list"; done
done
# A device directory: its irq, MSI vectors, configuration space and driver (a dangling link
# named as the driver: readers take the name only).
device() {
  copy "$1/irq" "$1/msi_irqs"/*
  [ -r "$1/config" ] && mkdir -p "$out$1" && head -c 256 "$1/config" > "$out$1/config"
  if [ -L "$1/driver" ]; then
    mkdir -p "$out$1"
    ln -sfn "../../bus/drivers/$(basename "$(readlink "$1/driver")")" "$out$1/driver"
  fi
}
for d in /sys/bus/pci/devices/*; do
  real=$(readlink -f "$d")
  device "$real"
  mkdir -p "$out/sys/bus/pci/devices"
  ln -sfn "../../..${real#/sys}" "$out/sys/bus/pci/devices/${d##*/}"
done
for n in /sys/class/net/*; do
  dev=$(readlink -f "$n/device" 2>/dev/null) || continue
  [ -e "$n/device" ] || continue
  device "$dev"
  case $dev in */virtio*) device "$(dirname "$dev")" ;; esac
  mkdir -p "$out$dev" "$out/sys/class/net/${n##*/}"
  # sys/class/net/NAME/device -> ../../../devices/...
  ln -sfn "../../..${dev#/sys}" "$out/sys/class/net/${n##*/}/device"
done
mkdir -p "$here/corpus/sysfs_tree"
(cd "$here/.." && cargo run -q -p irqlab-fuzz -- pack "$out") > "$here/corpus/sysfs_tree/$name.tree"
echo "captured into $here/corpus/sysfs_tree/$name.tree"
