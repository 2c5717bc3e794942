#!/bin/bash
# tests/lab/image.sh - builds the lab's real Linux guest images from Debian packages only
# (tests/README.md "Lab"): a Debian 12 root by mmdebstrap (minbase, generic kernel: it has e1000 and
# ata_piix), written into a partitioned raw disk without mounting (sfdisk on the file,
# mke2fs -d at each partition's offset), a real GRUB (grub-mkimage core.img at sector 1, the
# guest's own /boot/grub/grub.cfg), then booted once on IDE + e1000 under QEMU/TCG to build a
# MODULES=dep initramfs with the guest's own update-initramfs (it cannot be built in a chroot).
#
#   tests/lab/image.sh [--print-dir]
#
# Output, cached by the content hash of this script in $PVAGENT_LAB_CACHE (default
# /var/cache/pvagent-lab/HASH/): uuid.raw (fstab and root by UUID), devname.raw (fstab by
# /dev/sdaN), id_ed25519 (root's key in both), host_ed25519.pub (the guests' host key),
# facts.env (UUIDs, kernel version, MAC-free facts the tests assert), build.txt (time, size).
# Prints the image directory on its last line. A second run finds the cache and only prints.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${PVAGENT_LAB_CACHE:-/var/cache/pvagent-lab}
hash=$(sha256sum "$here/image.sh" | cut -c1-16)
out="$cache/$hash"

say() { printf 'lab image: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

if [ -f "$out/build.txt" ]; then
	say "cached in $out ($(cat "$out/build.txt"))"
	echo "$out"
	exit 0
fi

for c in mmdebstrap mke2fs sfdisk debugfs grub-mkimage qemu-system-x86_64 ssh ssh-keygen python3; do
	command -v "$c" >/dev/null || die "$c is missing: make lab-deps installs it"
done
[ -f /usr/lib/grub/i386-pc/boot.img ] || die "/usr/lib/grub/i386-pc is missing (grub-pc-bin): make lab-deps"

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
if [ -f "$out/build.txt" ]; then
	say "cached in $out (built meanwhile by another run)"
	echo "$out"
	exit 0
fi

start=$(date +%s)
work=$(mktemp -d "$cache/build.XXXXXX")
qpid=
cleanup() {
	[ -n "$qpid" ] && kill "$qpid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

root_uuid=6a1f0c3e-7b2d-4c55-9e10-0b1ab0000001
srv_uuid=6a1f0c3e-7b2d-4c55-9e10-0b1ab0000002
root="$work/root"

# ---- the root tree ------------------------------------------------------------------------
ssh-keygen -q -t ed25519 -N '' -C pvagent-lab -f "$work/id_ed25519"
ssh-keygen -q -t ed25519 -N '' -C pvagent-lab-host -f "$work/host_ed25519"

say "mmdebstrap bookworm (minbase, linux-image-amd64, initramfs-tools, openssh-server, qemu-guest-agent)"
mmdebstrap --mode=root --variant=minbase \
	--include=linux-image-amd64,initramfs-tools,zstd,openssh-server,systemd-sysv,udev,kmod,dbus,iproute2,qemu-guest-agent \
	--aptopt='DPkg::Lock::Timeout "600"' \
	--customize-hook='rm -f "$1"/etc/ssh/ssh_host_*' \
	bookworm "$root" http://deb.debian.org/debian >"$work/mmdebstrap.log" 2>&1 ||
	{ tail -20 "$work/mmdebstrap.log" >&2; die "mmdebstrap failed"; }

kver=$(basename "$(ls -d "$root"/lib/modules/* | head -1)")
[ -f "$root/boot/vmlinuz-$kver" ] || die "no kernel in the root tree"

echo lab >"$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 lab\n' >"$root/etc/hosts"
cat >"$root/etc/fstab" <<EOF
# /etc/fstab: static file system information (pvagent lab image, by UUID)
UUID=$root_uuid / ext4 errors=remount-ro 0 1
UUID=$srv_uuid /srv ext4 defaults 0 2
EOF
mkdir -p "$root/etc/systemd/network" "$root/root/.ssh" "$root/srv"
cat >"$root/etc/systemd/network/50-lab.network" <<'EOF'
[Match]
Name=en* eth*

[Network]
DHCP=yes
EOF
ln -sf /lib/systemd/system/systemd-networkd.service \
	"$root/etc/systemd/system/multi-user.target.wants/systemd-networkd.service"
install -m 0600 "$work/id_ed25519.pub" "$root/root/.ssh/authorized_keys"
chmod 0700 "$root/root/.ssh"
install -m 0600 "$work/host_ed25519" "$root/etc/ssh/ssh_host_ed25519_key"
install -m 0644 "$work/host_ed25519.pub" "$root/etc/ssh/ssh_host_ed25519_key.pub"
printf 'HostKey /etc/ssh/ssh_host_ed25519_key\nPermitRootLogin prohibit-password\nUseDNS no\n' \
	>"$root/etc/ssh/sshd_config.d/lab.conf"
# the guest agent starts when its virtio-serial port appears (udev), nothing to enable
# serial console for the boot log the simulator keeps
ln -sf /lib/systemd/system/serial-getty@.service \
	"$root/etc/systemd/system/getty.target.wants/serial-getty@ttyS0.service"
cat >"$root/etc/default/grub" <<'EOF'
GRUB_DEFAULT=0
GRUB_TIMEOUT=0
GRUB_CMDLINE_LINUX_DEFAULT=""
GRUB_CMDLINE_LINUX="console=ttyS0"
EOF
mkdir -p "$root/boot/grub"
cat >"$root/boot/grub/grub.cfg" <<EOF
# written like update-grub would: root by UUID
serial --unit=0 --speed=115200
terminal_input serial console
terminal_output serial console
set timeout=0
set default=0
menuentry 'Debian GNU/Linux' {
	insmod part_msdos
	insmod ext2
	search --no-floppy --fs-uuid --set=root $root_uuid
	echo 'Loading Linux $kver ...'
	linux /boot/vmlinuz-$kver root=UUID=$root_uuid ro console=ttyS0
	echo 'Loading initial ramdisk ...'
	initrd /boot/initrd.img-$kver
}
EOF
echo 'pvagent lab /srv' >"$root/srv/lab-marker"
# /srv is its own file system: move its contents out of the root tree
mkdir -p "$work/srv"
mv "$root/srv/lab-marker" "$work/srv/"

# ---- the disk: MBR, root 1.5 GiB at sector 2048, /srv after it ------------------------------
disk="$work/uuid.raw"
truncate -s 2G "$disk"
sfdisk -q "$disk" <<'EOF'
label: dos
start=2048, size=3145728, type=83, bootable
start=3147776, type=83
EOF
mke2fs -q -F -t ext4 -b 4096 -U "$root_uuid" -L lab-root -d "$root" \
	-E offset=$((2048 * 512)) "$disk" $((3145728 / 8))
mke2fs -q -F -t ext4 -b 4096 -U "$srv_uuid" -L lab-srv -d "$work/srv" \
	-E offset=$((3147776 * 512)) "$disk" $((1046528 / 8))
rm -rf "$root"

grub-mkimage -O i386-pc -o "$work/core.img" -p '(hd0,msdos1)/boot/grub' \
	biosdisk part_msdos ext2 search search_fs_uuid normal linux gzio configfile serial terminal echo test
dd if=/usr/lib/grub/i386-pc/boot.img of="$disk" bs=440 count=1 conv=notrunc status=none
dd if="$work/core.img" of="$disk" bs=512 seek=1 conv=notrunc status=none

# ---- one boot on IDE + e1000: MODULES=dep initramfs built by the guest itself ---------------
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.4.1",0)); print(s.getsockname()[1])')
say "booting once on IDE (TCG) to build a MODULES=dep initramfs (hostfwd 127.0.4.1:$port)"
qemu-system-x86_64 -machine pc -accel tcg,tb-size=128 -m 512 -smp 1 -nographic \
	-drive file="$disk",format=raw,if=ide \
	-netdev user,id=n0,hostfwd=tcp:127.0.4.1:$port-:22 -device e1000,netdev=n0 \
	-serial file:"$work/console.log" -monitor none </dev/null >"$work/qemu.log" 2>&1 &
qpid=$!
sshopts=(-i "$work/id_ed25519" -p "$port" -o IdentitiesOnly=yes -o BatchMode=yes
	-o UserKnownHostsFile="$work/known_hosts" -o StrictHostKeyChecking=yes -o ConnectTimeout=5)
printf '[127.0.4.1]:%s %s\n' "$port" "$(cut -d' ' -f1,2 "$work/host_ed25519.pub")" >"$work/known_hosts"
boot0=$(date +%s)
until ssh "${sshopts[@]}" root@127.0.4.1 true 2>/dev/null; do
	kill -0 "$qpid" 2>/dev/null || { tail -30 "$work/console.log" >&2; die "QEMU exited during the first boot"; }
	[ $(($(date +%s) - boot0)) -lt 300 ] || { tail -30 "$work/console.log" >&2; die "no SSH after 300 s"; }
	sleep 2 # polling a real guest's sshd: there is nothing to wait on but the port
done
boot_ide=$(($(date +%s) - boot0))
say "SSH after ${boot_ide} s; update-initramfs with MODULES=dep"
ssh "${sshopts[@]}" root@127.0.4.1 \
	"sed -i 's/^MODULES=.*/MODULES=dep/' /etc/initramfs-tools/initramfs.conf && update-initramfs -u -k all >/dev/null && lsinitramfs /boot/initrd.img-$kver | grep -c '\.ko' && sync" \
	>"$work/dep-modules.txt"
ssh "${sshopts[@]}" root@127.0.4.1 'systemctl poweroff' || true
wait "$qpid" || true
qpid=

# ---- the device-name variant: same disk, fstab by /dev/sdaN -----------------------------------
cp --sparse=always "$disk" "$work/devname.raw"
cat >"$work/fstab.devname" <<'EOF'
# /etc/fstab: static file system information (pvagent lab image, by device name)
/dev/sda1 / ext4 errors=remount-ro 0 1
/dev/sda2 /srv ext4 defaults 0 2
EOF
debugfs -w -R 'rm /etc/fstab' "$work/devname.raw?offset=1048576" >/dev/null 2>&1
debugfs -w -R "write $work/fstab.devname /etc/fstab" "$work/devname.raw?offset=1048576" >/dev/null 2>&1
debugfs -R 'cat /etc/fstab' "$work/devname.raw?offset=1048576" 2>/dev/null | grep -q '^/dev/sda2 /srv' ||
	die "writing the device-name fstab failed"

mkdir -p "$out"
for f in uuid.raw devname.raw; do mv "$work/$f" "$out/$f"; done
install -m 0600 "$work/id_ed25519" "$out/id_ed25519"
install -m 0644 "$work/host_ed25519.pub" "$out/host_ed25519.pub"
cat >"$out/facts.env" <<EOF
LAB_KVER=$kver
LAB_ROOT_UUID=$root_uuid
LAB_SRV_UUID=$srv_uuid
LAB_DEP_MODULES=$(head -1 "$work/dep-modules.txt")
LAB_BOOT_IDE_S=$boot_ide
EOF
secs=$(($(date +%s) - start))
used=$(du -sm "$out/uuid.raw" | cut -f1)
echo "built in ${secs} s, ${used} MiB used of 2048 per image, kernel $kver, MODULES=dep initramfs with $(head -1 "$work/dep-modules.txt") modules, first boot to SSH on IDE ${boot_ide} s" \
	>"$out/build.txt"
say "$(cat "$out/build.txt")"
echo "$out"
