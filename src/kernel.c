/* SPDX-License-Identifier: GPL-2.0-only */
/* Loading a distro kernel: a bzImage (decode its payload, read the ELF and
 * the relocation table behind it) or a vmlinux plus its relocs file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "kernel.h"
#include "uki.h"

/* No kernel image, compressed or not, comes anywhere near this. */
#define RR_KERNEL_FILE_MAX ((size_t)1 << 30)

void rr_kernel_free(struct rr_kernel *k)
{
	if (!k)
		return;
	free(k->payload);
	rr_relocs_free(&k->relocs);
	memset(k, 0, sizeof(*k));
}

static bool looks_like_bzimage(const uint8_t *buf, size_t len)
{
	return len >= 0x206 && memcmp(buf + 0x202, "HdrS", 4) == 0;
}

static bool looks_like_elf(const uint8_t *buf, size_t len)
{
	return len >= 4 && memcmp(buf, "\x7f" "ELF", 4) == 0;
}

static int load_bzimage(const uint8_t *buf, size_t len, const char *name,
			const struct rr_dec_hook *hook, struct rr_kernel *k, struct rr_err *e)
{
	const uint8_t *pl;
	int r;

	r = rr_bzimage_parse(buf, len, name, &k->bz, e);
	if (r < 0)
		return r;
	pl = buf + k->bz.payload_offset;
	k->codec = rr_kcodec_detect(pl, k->bz.payload_length);
	if (k->codec == RR_KC_UNKNOWN)
		return rr_errf(e, ENOTSUP, "%s: payload compression not recognised (magic %02x %02x "
			       "%02x %02x)", name, pl[0], pl[1], pl[2], pl[3]);
	r = rr_decompress_hooked(k->codec, pl, k->bz.payload_length, k->bz.uncompressed_size,
				 hook, &k->payload, &k->payload_len, name, e);
	if (r < 0)
		return r;
	r = rr_elf_read(k->payload, k->payload_len, name, &k->elf, e);
	if (r < 0)
		return r;
	return rr_relocs_parse(k->payload + k->elf.elf_end, k->payload_len - k->elf.elf_end,
			       &k->elf, name, &k->relocs, e);
}

static int load_vmlinux(const uint8_t *buf, size_t len, const char *name,
			const uint8_t *relocs, size_t relocs_len, const char *relocs_name,
			struct rr_kernel *k, struct rr_err *e)
{
	int r;

	if (!relocs)
		return rr_errf(e, EINVAL, "%s: an uncompressed vmlinux needs --relocs FILE "
			       "(vmlinux.relocs from the build tree)", name);
	k->codec = RR_KC_NONE;
	k->payload = malloc(len);
	if (!k->payload)
		return rr_errf(e, ENOMEM, "%s: out of memory", name);
	rr_mem_thp(k->payload, len);
	memcpy(k->payload, buf, len);
	k->payload_len = len;
	r = rr_elf_read(k->payload, k->payload_len, name, &k->elf, e);
	if (r < 0)
		return r;
	return rr_relocs_parse(relocs, relocs_len, &k->elf,
			       relocs_name ? relocs_name : "relocations", &k->relocs, e);
}

static int kernel_load_mem(const uint8_t *buf, size_t len, const char *name,
			   const uint8_t *relocs, size_t relocs_len, const char *relocs_name,
			   const struct rr_dec_hook *hook, struct rr_kernel *ret, struct rr_err *e)
{
	struct rr_kernel k;
	int r;

	memset(&k, 0, sizeof(k));
	if (!name)
		name = "kernel";
	k.file_size = len;
	if (buf && looks_like_bzimage(buf, len)) {
		k.is_bzimage = true;
		if (relocs_name)
			return rr_errf(e, EINVAL, "%s: --relocs %s is only for an uncompressed vmlinux: "
				       "a bzImage carries its own relocation table", name, relocs_name);
		r = load_bzimage(buf, len, name, hook, &k, e);
	} else if (buf && looks_like_elf(buf, len)) {
		r = load_vmlinux(buf, len, name, relocs, relocs_len, relocs_name, &k, e);
	} else if (buf && rr_uki_probe(buf, len)) {
		/* A unified kernel image: the kernel is its .linux section. */
		struct rr_uki u;
		char sub[4096];

		r = rr_uki_parse(buf, len, name, &u, e);
		if (r == 0 && relocs_name)
			r = rr_errf(e, EINVAL, "%s: --relocs %s is only for an uncompressed vmlinux",
				    name, relocs_name);
		if (r == 0) {
			const struct rr_uki_section *l = &u.part[RR_UKI_LINUX];
			snprintf(sub, sizeof(sub), "%s (.linux)", name);
			if (!looks_like_bzimage(buf + l->offset, l->size))
				r = rr_errf(e, EINVAL, "%s: not a bzImage", sub);
			else
				r = load_bzimage(buf + l->offset, l->size, sub, hook, &k, e);
			k.is_bzimage = true;
			k.is_uki = true;
		}
	} else {
		r = rr_errf(e, EINVAL, "%s: not a kernel: neither a bzImage, an ELF vmlinux nor a "
			    "unified kernel image", name);
	}
	if (r < 0) {
		if (hook && hook->fn && k.payload && k.is_bzimage)
			hook->fn(hook->arg, k.payload, 0, 0);
		rr_kernel_free(&k);
		return r;
	}
	*ret = k;
	return 0;
}

int rr_kernel_load_mem(const uint8_t *buf, size_t len, const char *name,
		       const uint8_t *relocs, size_t relocs_len, const char *relocs_name,
		       struct rr_kernel *ret, struct rr_err *e)
{
	return kernel_load_mem(buf, len, name, relocs, relocs_len, relocs_name, NULL, ret, e);
}

int rr_kernel_load(const char *path, const char *relocs_path,
		   struct rr_kernel *ret, struct rr_err *e)
{
	return rr_kernel_load_hooked(path, relocs_path, NULL, ret, e);
}

int rr_kernel_load_hooked(const char *path, const char *relocs_path,
			  const struct rr_dec_hook *hook, struct rr_kernel *ret, struct rr_err *e)
{
	_cleanup_free_ uint8_t *buf = NULL, *rbuf = NULL;
	size_t len = 0, rlen = 0;
	int r;

	r = rr_read_file(path, RR_KERNEL_FILE_MAX, &buf, &len, e);
	if (r < 0)
		return r;
	if (relocs_path) {
		r = rr_read_file(relocs_path, RR_KERNEL_FILE_MAX, &rbuf, &rlen, e);
		if (r < 0)
			return r;
	}
	return kernel_load_mem(buf, len, path, rbuf, rlen, relocs_path, hook, ret, e);
}

int rr_kernel_load_fd(int fd, const char *name, const struct rr_dec_hook *hook,
		      struct rr_kernel *ret, struct rr_err *e)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;
	int r = rr_read_fd(fd, name, RR_KERNEL_FILE_MAX, &buf, &len, e);

	if (r < 0)
		return r;
	return kernel_load_mem(buf, len, name, NULL, 0, NULL, hook, ret, e);
}
