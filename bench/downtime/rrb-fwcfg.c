// SPDX-License-Identifier: GPL-2.0-only
/*
 * rrb-fwcfg NAME: write QEMU's fw_cfg file NAME (e.g. opt/rerand-bench/root)
 * to stdout.  The downtime guest with its root in RAM (bench/downtime.sh)
 * fetches its root archive this way to build the next boot's initrd: the
 * cloud kernels have the fw_cfg sysfs driver only as a module, and a disk
 * would bring asynchronous I/O into the measured reboot.  fw_cfg is read by
 * port I/O, which QEMU completes before the instruction retires, so it adds
 * nothing the host's load could change.  Static; needs CAP_SYS_RAWIO
 * (ioperm), and no lockdown.  Bench only.
 *
 * The x86 interface (QEMU's docs/specs/fw_cfg.rst): write a 16-bit key to
 * port 0x510, read its bytes from port 0x511.  Key 0x0019 is the file
 * directory: a big-endian u32 count, then per file a big-endian u32 size, a
 * big-endian u16 key, a u16 reserved and a 56-byte NUL-terminated name.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/io.h>

#define FW_CFG_PORT_SEL 0x510
#define FW_CFG_PORT_DATA 0x511
#define FW_CFG_SIGNATURE 0x0000
#define FW_CFG_FILE_DIR 0x0019

struct fw_cfg_file {
	uint32_t size;
	uint16_t select;
	uint16_t reserved;
	char name[56];
};

static void fw_read(void *buf, size_t len)
{
	insb(FW_CFG_PORT_DATA, buf, len);
}

int main(int argc, char **argv)
{
	struct fw_cfg_file f;
	uint32_t count, i;
	char sig[4];
	static unsigned char buf[1 << 16];

	if (argc != 2) {
		fprintf(stderr, "usage: rrb-fwcfg NAME\n");
		return 2;
	}
	if (ioperm(FW_CFG_PORT_SEL, 2, 1) != 0) {
		perror("rrb-fwcfg: ioperm(0x510)");
		return 1;
	}
	outw(FW_CFG_SIGNATURE, FW_CFG_PORT_SEL);
	fw_read(sig, sizeof(sig));
	if (memcmp(sig, "QEMU", 4) != 0) {
		fprintf(stderr, "rrb-fwcfg: no QEMU fw_cfg at port 0x510\n");
		return 1;
	}
	outw(FW_CFG_FILE_DIR, FW_CFG_PORT_SEL);
	fw_read(&count, sizeof(count));
	count = ntohl(count);
	for (i = 0; i < count; i++) {
		fw_read(&f, sizeof(f));
		f.name[sizeof(f.name) - 1] = 0;
		if (strcmp(f.name, argv[1]) == 0)
			break;
	}
	if (i == count) {
		fprintf(stderr, "rrb-fwcfg: %s: no such fw_cfg file\n", argv[1]);
		return 1;
	}
	outw(ntohs(f.select), FW_CFG_PORT_SEL);
	for (uint32_t left = ntohl(f.size); left;) {
		size_t n = left < sizeof(buf) ? left : sizeof(buf);

		fw_read(buf, n);
		if (fwrite(buf, 1, n, stdout) != n) {
			perror("rrb-fwcfg: write");
			return 1;
		}
		left -= (uint32_t)n;
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
