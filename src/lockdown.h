/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the running kernel lets kexec load: its lockdown mode and the
 * firmware's Secure Boot state; where a staged image's seed comes from; and
 * how to recognise kexec-tools saying that the kernel refused a signature.
 * Library code: no logging, errors in struct rr_err naming the file.
 */
#ifndef RERAND_LOCKDOWN_H
#define RERAND_LOCKDOWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "err.h"

#define RR_LOCKDOWN_PATH   "/sys/kernel/security/lockdown"
/* EFI_GLOBAL_VARIABLE's SecureBoot: 4 attribute bytes, then 1 data byte. */
#define RR_SECUREBOOT_PATH "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
/* The boot_params the kernel was started with; its secure_boot byte is what
 * the EFI stub found (sysfs, so there without securityfs or efivarfs). */
#define RR_BOOT_PARAMS_PATH "/sys/kernel/boot_params/data"
#define RR_BP_SECURE_BOOT  0x1ec   /* struct boot_params.secure_boot */

enum rr_lockdown {
	RR_LD_ABSENT = 0,        /* no lockdown file: no securityfs or no lockdown LSM */
	RR_LD_NONE,
	RR_LD_INTEGRITY,
	RR_LD_CONFIDENTIALITY,
};

enum rr_secureboot {
	RR_SB_ABSENT = 0,        /* not booted by EFI (no firmware directory) */
	RR_SB_OFF,
	RR_SB_ON,
	RR_SB_UNKNOWN,           /* EFI, but no variable: efivarfs not mounted */
};

struct rr_lockdown_state {
	enum rr_lockdown   lockdown;
	enum rr_secureboot secureboot;
	/* kexec_load is refused: only signed images, through kexec_file_load.
	 * Integrity or confidentiality; or Secure Boot on with no lockdown file
	 * to say otherwise (the kernel may still enforce signatures). */
	bool locked;
};

/* "none [integrity] confidentiality": the bracketed word. */
int rr_lockdown_parse(const char *text, size_t len, const char *name, enum rr_lockdown *ret,
		      struct rr_err *e);
/* The efivarfs file: 4 attribute bytes and a data byte (1 = on, 0 = off). */
int rr_secureboot_parse(const uint8_t *buf, size_t len, const char *name,
			enum rr_secureboot *ret, struct rr_err *e);
/* Read both files (read to EOF: sysfs reports size 0).  A missing file is a
 * state, not an error; an unreadable or malformed one is.  A missing
 * SecureBoot variable means no EFI when the directory two levels up
 * (/sys/firmware/efi) is missing too, else unknown. */
int rr_lockdown_probe(const char *lockdown_path, const char *secureboot_path,
		      struct rr_lockdown_state *ret, struct rr_err *e);
/* boot_params' secure_boot byte (enum efi_secureboot_mode: 0 unset, 1 unknown,
 * 2 disabled, 3 enabled): OFF or ON, or -ENODATA when it says nothing. */
int rr_secureboot_from_boot_params(const uint8_t *buf, size_t len, const char *name,
				   enum rr_secureboot *ret, struct rr_err *e);
/* rr_lockdown_probe(), and where the SecureBoot variable cannot be read
 * (no efivarfs; no /sys/firmware/efi in a container) the secure_boot byte
 * of boot_params_path (NULL: not consulted).  A missing or unreadable
 * boot_params leaves the state as it was.  *ret_from_boot_params: the Secure
 * Boot state came from there. */
int rr_lockdown_probe_bp(const char *lockdown_path, const char *secureboot_path,
			 const char *boot_params_path, struct rr_lockdown_state *ret,
			 bool *ret_from_boot_params, struct rr_err *e);
/* "none", "integrity", "confidentiality"; "unknown" when absent. */
const char *rr_lockdown_name(enum rr_lockdown l);
/* "on", "off", "unknown"; "unsupported" when absent. */
const char *rr_secureboot_name(enum rr_secureboot s);

/* ---- the seed rule -------------------------------------------------------- */

/* Where the stage's per-load entropy (beyond RDSEED/RDRAND/RDTSC) comes from. */
enum rr_seed_source {
	RR_SEED_PATCH = 0,       /* rerand load writes it into the header, in memory */
	RR_SEED_KERNEL,          /* kexec_file_load adds SETUP_RNG_SEED (Linux >= 6.0) */
	RR_SEED_KEXEC_TOOLS,     /* kexec_load: kexec-tools >= 2.0.25 adds SETUP_RNG_SEED */
	RR_SEED_NONE,            /* signed, no one adds a node: CPU sources only */
};

struct rr_seed_in {
	bool file_syscall;       /* kexec_file_load */
	bool signed_image;       /* the file carries a signature: stage it unchanged */
	bool crng_ready;         /* getrandom(GRND_NONBLOCK) works: both adders need it */
	int  kernel[2];          /* running kernel major.minor; -1 unknown */
	int  kexec_tools[3];     /* kexec-tools version; -1 unknown */
};

enum rr_seed_source rr_seed_source(const struct rr_seed_in *in);
const char *rr_seed_source_name(enum rr_seed_source s);
/* "6.1.0-57-cloud-amd64" -> 6, 1.  -EINVAL when it does not start "N.N". */
int rr_parse_release(const char *s, int ret[2]);
/* `kexec --version` output, "kexec-tools 2.0.25" (any suffix). -EINVAL if not. */
int rr_parse_kexec_version(const char *s, int ret[3]);

/* ---- kexec-tools' word on a refused signature ----------------------------- */

/* The line of kexec-tools' stderr (out, NUL-terminated) that reports a
 * kexec_file_load failure of the kind a signature check gives (EKEYREJECTED,
 * ENOKEY, EPERM, EBADMSG, ELIBBAD, ENOPKG, EKEYEXPIRED, EKEYREVOKED), or the
 * kernel's "signature verification failed" line; *ret_len its length.  NULL
 * when there is none. */
const char *rr_kexec_sig_refusal(const char *out, size_t *ret_len);
/* kexec's verdict in out: the last line saying "failed" or "Cannot ", else
 * the last non-empty line; NULL when out is empty. */
const char *rr_last_line(const char *out, size_t *ret_len);

#endif
