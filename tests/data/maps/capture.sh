#!/bin/bash
# Re-capture the QEMU memory-map fixtures in this directory: boots a tiny
# busybox initramfs under TCG (SeaBIOS and OVMF, q35, 1/3/6 GiB) whose init
# prints /sys/firmware/memmap, /proc/iomem and dmesg's e820 lines on the
# serial console, then splits each log into NAME.memmap/, NAME.iomem, NAME.dmesg.
# Usage: tests/data/maps/capture.sh [KERNEL]   (needs qemu, busybox-static, cpio)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
kernel=${1:-/work/shared/kernels/vmlinuz-6.1.0-57-cloud-amd64}
ovmf_code=/usr/share/OVMF/OVMF_CODE_4M.fd
ovmf_vars=/usr/share/OVMF/OVMF_VARS_4M.fd
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkdir -p "$tmp/root/bin" "$tmp/root/proc" "$tmp/root/sys" "$tmp/root/dev"
cp "$(command -v busybox)" "$tmp/root/bin/busybox"
cat >"$tmp/root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
echo "@@BEGIN"
for d in /sys/firmware/memmap/*; do
	echo "@@MEMMAP $(basename $d) $(cat $d/start) $(cat $d/end) $(cat $d/type)"
done
echo "@@IOMEM-BEGIN"
cat /proc/iomem
echo "@@IOMEM-END"
echo "@@DMESG-BEGIN"
dmesg | grep -E 'e820|BIOS-provided|efi: |DMI:|Command line:'
echo "@@DMESG-END"
poweroff -f
EOF
chmod +x "$tmp/root/init"
(cd "$tmp/root" && find . | cpio -o -H newc 2>/dev/null | gzip >"$tmp/initrd.gz")

boot() {  # boot FW GIB
	local fw=$1 mem=$2 args
	args=(-accel tcg -machine q35 -m "${mem}G" -nographic -no-reboot -kernel "$kernel"
	      -initrd "$tmp/initrd.gz" -append "console=ttyS0 quiet loglevel=3 panic=-1")
	if [ "$fw" = ovmf ]; then
		cp "$ovmf_vars" "$tmp/vars-$mem.fd"
		args+=(-drive "if=pflash,format=raw,unit=0,readonly=on,file=$ovmf_code"
		       -drive "if=pflash,format=raw,unit=1,file=$tmp/vars-$mem.fd")
	fi
	timeout 600 qemu-system-x86_64 "${args[@]}" </dev/null | tr -d '\r' >"$tmp/$fw-$mem.log"
}

split_log() {  # split_log LOG NAME
	local log=$1 name=$here/$2
	grep -q '^@@DMESG-END' "$log" || { echo "capture: $log: incomplete" >&2; return 1; }
	rm -rf "$name.memmap"
	grep '^@@MEMMAP ' "$log" | while read -r _ n start end type; do
		mkdir -p "$name.memmap/$n"
		echo "$start" >"$name.memmap/$n/start"
		echo "$end" >"$name.memmap/$n/end"
		echo "$type" >"$name.memmap/$n/type"
	done
	sed -n '/^@@IOMEM-BEGIN/,/^@@IOMEM-END/p' "$log" | sed '1d;$d' >"$name.iomem"
	sed -n '/^@@DMESG-BEGIN/,/^@@DMESG-END/p' "$log" | sed '1d;$d' >"$name.dmesg"
}

for fw in seabios ovmf; do
	(for mem in 1 3 6; do boot "$fw" "$mem"; done) &
done
wait
for fw in seabios ovmf; do
	for mem in 1 3 6; do
		split_log "$tmp/$fw-$mem.log" "qemu-$fw-${mem}g"
	done
done
echo "capture: wrote $(ls -d "$here"/qemu-*.memmap | wc -l) maps to $here"
