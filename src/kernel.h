/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Readers for distro kernels: the bzImage header, its compressed payload
 * (every codec the kernel supports, decoded by the codec's own library), the
 * vmlinux ELF inside it (libelf) and the relocation table behind it.
 * Library code: no logging, no exit; errors come back as a negative errno and
 * a message in struct rr_err that names the file and the problem.
 */
#ifndef RERAND_KERNEL_H
#define RERAND_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

enum rr_kcodec {
	RR_KC_NONE = 0,       /* an uncompressed vmlinux given directly */
	RR_KC_GZIP,
	RR_KC_BZIP2,
	RR_KC_LZMA,
	RR_KC_XZ,
	RR_KC_LZO,
	RR_KC_LZ4,
	RR_KC_ZSTD,
	RR_KC_UNKNOWN,
};

const char *rr_kcodec_name(enum rr_kcodec c);
/* By magic bytes at the start of a payload. */
enum rr_kcodec rr_kcodec_detect(const uint8_t *p, size_t len);

/* The parts of a bzImage's setup header rerand needs. */
struct rr_bzimage {
	uint8_t  setup_sects;        /* as found (0 means 4) */
	uint16_t version;            /* boot protocol */
	uint8_t  loadflags;
	uint16_t xloadflags;
	uint8_t  relocatable;
	uint32_t kernel_alignment;
	uint32_t init_size;
	uint32_t cmdline_size;
	uint64_t pm_offset;          /* file offset of the protected-mode part */
	uint64_t payload_offset;     /* file offset of the compressed payload */
	uint64_t payload_length;
	uint32_t uncompressed_size;  /* last 4 bytes of the payload */
	char     kernel_version[128];/* the version string, "" if none */
};

/* Parse and check a bzImage header: "HdrS", boot flag, protocol >= 2.12,
 * XLF_KERNEL_64 (else "32-bit kernel"), payload inside the file. */
int rr_bzimage_parse(const uint8_t *buf, size_t len, const char *name,
		     struct rr_bzimage *ret, struct rr_err *e);

/* Decode a whole compressed payload with the codec's library.  The result
 * must be exactly `expected` bytes (the size the kernel appended) when
 * expected != 0; expected == 0 means unknown, at most 1 GiB, and an
 * expected size over 1 GiB is refused. *ret_out is malloc'd and owned by
 * the caller. */
int rr_decompress(enum rr_kcodec c, const uint8_t *in, size_t in_len, size_t expected,
		  uint8_t **ret_out, size_t *ret_len, const char *name, struct rr_err *e);

/* Told, while a payload of known size decodes, that buf[0, len) of `total`
 * bytes is final (buf does not move); called with len == total once the
 * payload decoded and checked, and with len == total == 0 right before buf
 * is freed on an error (stop reading it before returning).  Lets `rerand
 * image` compress what is decoded while the decoder goes on (src/lz4par.c). */
struct rr_dec_hook {
	void (*fn)(void *arg, const uint8_t *buf, size_t len, size_t total);
	void *arg;
};
#define RR_DEC_HOOK_STEP ((size_t)1 << 20)   /* output per decoder call with a hook */

/* rr_decompress with a progress hook (NULL: none).  The hook is used only
 * when `expected` is known, so that the output buffer never moves. */
int rr_decompress_hooked(enum rr_kcodec c, const uint8_t *in, size_t in_len, size_t expected,
			 const struct rr_dec_hook *hook, uint8_t **ret_out, size_t *ret_len,
			 const char *name, struct rr_err *e);

struct rr_elf_segment {
	uint64_t offset;
	uint64_t vaddr;
	uint64_t paddr;
	uint64_t filesz;
	uint64_t memsz;
	uint32_t flags;
};

#define RR_MAX_ELF_SEGMENTS 8

/* The vmlinux ELF, read with libelf. */
struct rr_vmlinux {
	uint64_t entry;              /* e_entry (a physical address for vmlinux) */
	uint64_t link_paddr;         /* lowest PT_LOAD p_paddr */
	uint64_t mem_size;           /* highest p_paddr + p_memsz - link_paddr */
	struct rr_elf_segment seg[RR_MAX_ELF_SEGMENTS]; /* PT_LOAD, by p_paddr */
	unsigned nr_seg;
	size_t   elf_end;            /* first byte after everything the ELF uses */
	bool     percpu_zero_vaddr;  /* a PT_LOAD with p_vaddr == 0 (<= 6.14 hint) */
};

/* Checks: 64-bit x86-64 executable ("32-bit kernel" otherwise), PT_LOADs
 * inside the file, non-overlapping, entry inside a loaded segment. */
int rr_elf_read(const uint8_t *buf, size_t len, const char *name,
		struct rr_vmlinux *ret, struct rr_err *e);

/* The PT_LOAD file ranges of a vmlinux of `total` bytes whose first len
 * bytes are decoded, for work that starts before the decoder is done; a
 * hint only (nothing is checked beyond bounds: rr_elf_read decides).
 * Returns how many (at most max), 0 if len does not hold the program
 * headers yet, negative if this is no 64-bit ELF or has no such range. */
int rr_elf_peek_loads(const uint8_t *buf, size_t len, size_t total,
		      uint64_t off[], uint64_t size[], unsigned max);

/* The relocation table, both layouts. Entries are the low 32 bits of link
 * virtual addresses, kept as found. */
struct rr_relocs {
	unsigned  layout;            /* 2 or 3 lists */
	uint32_t *reloc64;  size_t nr_reloc64;
	uint32_t *inverse32; size_t nr_inverse32;
	uint32_t *reloc32;  size_t nr_reloc32;
};

/* Parse `len` bytes that end exactly at the end of the table.  Refuses an
 * empty or all-zero table ("no relocation table (kernel built without
 * CONFIG_RANDOMIZE_BASE?)"), a terminator count other than 2 or 3, a length
 * not a multiple of 4, and any entry whose patched bytes fall outside
 * [link, link + k->mem_size). */
int rr_relocs_parse(const uint8_t *tab, size_t len, const struct rr_vmlinux *k,
		    const char *name, struct rr_relocs *ret, struct rr_err *e);
void rr_relocs_free(struct rr_relocs *r);

/* A kernel read from disk: bzImage (any codec) or vmlinux + relocs file. */
struct rr_kernel {
	bool      is_bzimage;
	bool      is_uki;            /* the bzImage is a UKI's .linux section */
	struct rr_bzimage bz;        /* when is_bzimage */
	enum rr_kcodec codec;
	size_t    file_size;
	uint8_t  *payload;           /* decoded vmlinux (+ table for bzImage), owned */
	size_t    payload_len;
	struct rr_vmlinux elf;       /* points into payload */
	struct rr_relocs relocs;
};

int rr_kernel_load(const char *path, const char *relocs_path,
		   struct rr_kernel *ret, struct rr_err *e);
/* Same, telling hook (may be NULL) how far a bzImage's payload decoded. */
int rr_kernel_load_hooked(const char *path, const char *relocs_path,
			  const struct rr_dec_hook *hook, struct rr_kernel *ret, struct rr_err *e);
/* Same, from memory (used by fuzzers and tests); name is used in messages. */
int rr_kernel_load_mem(const uint8_t *buf, size_t len, const char *name,
		       const uint8_t *relocs, size_t relocs_len, const char *relocs_name,
		       struct rr_kernel *ret, struct rr_err *e);
/* Same, from an open fd, which it closes (rerandd's unprivileged builder is
 * handed the kernel, never its path). */
int rr_kernel_load_fd(int fd, const char *name, const struct rr_dec_hook *hook,
		      struct rr_kernel *ret, struct rr_err *e);
void rr_kernel_free(struct rr_kernel *k);

/* Ask for transparent huge pages on the 2 MiB-aligned part of a large heap
 * buffer not yet written (src/fileio.c).  A 60 MiB decode into 4 KiB pages
 * takes ~15,000 page faults, which cost more than the decode itself on a
 * virtual machine.  A hint only: nothing fails if the kernel says no. */
void rr_mem_thp(void *p, size_t len);

/* Read a whole regular file of at most max bytes, to EOF (src/fileio.c). */
int rr_read_file(const char *path, size_t max, uint8_t **ret_buf, size_t *ret_len,
		 struct rr_err *e);
/* The same from an open fd, which it closes; path names it in messages. */
int rr_read_fd(int fd, const char *path, size_t max, uint8_t **ret_buf, size_t *ret_len,
	       struct rr_err *e);
/* The same as a NUL-terminated string (procfs, sysfs, small configs): the
 * text ends at its first NUL byte.  The one way tools and rerandd read a
 * whole text file. */
/* The limit for a sysfs attribute: its text fits a page, and stat() says
 * 4096 whatever it holds (procfs says 0), so a smaller max refuses them all. */
#define RR_SYSFS_MAX 4096
int rr_read_text(const char *path, size_t max, char **ret, struct rr_err *e);
/* The same two for name in the folder dfd (AT_FDCWD: the working folder),
 * never through a symbolic link at name's last part (-ELOOP), for files in
 * a folder of rerandd's own; name is the path in messages. */
int rr_read_file_at(int dfd, const char *name, size_t max, uint8_t **ret_buf, size_t *ret_len,
		    struct rr_err *e);
int rr_read_text_at(int dfd, const char *name, size_t max, char **ret, struct rr_err *e);

/* A path made in a fixed buffer, the one way: printf's fmt into out of len
 * bytes; 0, or -ENAMETOOLONG (out then "") when it does not fit, never a
 * shortened path, which could name another file. */
int rr_pathf(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "dir/name" into out, as rr_pathf. */
int rr_path_join(char *out, size_t len, const char *dir, const char *name);

struct stat;
/* "a FIFO", "a character device"...: what a non-regular file is, for messages. */
const char *rr_file_type_name(unsigned mode);
/* An input that another program opens by path (kexec's --initrd, sbsign's
 * key): stat it without opening it, refuse anything but a regular file (a
 * FIFO would hang the opener).  what names it: "initrd". */
int rr_check_input_file(const char *path, const char *what, struct stat *ret, struct rr_err *e);
/* An input rerand reads itself (the kernel whose key or digest it makes):
 * the same refusals, then opened without hanging on a FIFO swapped in after
 * the stat and checked again by fstat.  Returns the fd (its stat in *ret
 * when ret is set) or a negative errno with e set. */
int rr_open_input(const char *path, const char *what, struct stat *ret, struct rr_err *e);

#endif
