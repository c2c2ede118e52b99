/* SPDX-License-Identifier: GPL-2.0-only */
/* rerandd under lockdown: the [Stage]/[Paths] keys for Secure Boot, where a
 * locked-down machine's image comes from (pre-signed, signed here, or
 * blocked with the reason), the checks on a pre-signed file, the cache
 * pruning, the one `rerand load` command line, and what status and metrics
 * say.  Lockdown and SecureBoot come from fixture files. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lockdown.h"
#include "rerandd.h"
#include "test.h"

#define REL "6.1.0-57-cloud-amd64"

static char dir[256];

static const char *put(const char *name, const void *data, size_t len)
{
	static char p[8][512];
	static int next;
	char *path = p[next++ % 8];
	FILE *f;

	snprintf(path, 512, "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fwrite(data, 1, len, f) != len) {
		perror(path);
		exit(1);
	}
	fclose(f);
	return path;
}

static const char *put_text(const char *name, const char *text)
{
	return put(name, text, strlen(text));
}

static bool has_err(const struct rr_cfg_errs *e, const char *needle)
{
	for (unsigned i = 0; i < e->n; i++)
		if (strstr(e->msg[i], needle))
			return true;
	return false;
}

static void test_config(void)
{
	struct rr_cfg_errs *e = calloc(1, sizeof(*e));
	struct rr_config c;
	const char *p;

	config_defaults(&c);
	T_OK(!strcmp(c.lockdown_file, "/sys/kernel/security/lockdown") &&
	     !strcmp(c.secureboot_file, RR_SECUREBOOT_PATH) &&
	     !strcmp(c.signed_dir, "/var/lib/rerand/signed") && !*c.sign_key && !*c.sign_cert,
	     "defaults: the kernel's files, /var/lib/rerand/signed, no key on the machine");
	p = put_text("sb.conf", "[Stage]\nSignedImageDirectory=/srv/signed\nSignKey=/etc/rerand/db.key\n"
		"SignCert=/etc/rerand/db.crt\n[Paths]\nLockdown=/tmp/ld\nSecureBoot=/tmp/sb\n");
	T_OK(config_load(p, NULL, &c, e) == 0 && !strcmp(c.signed_dir, "/srv/signed") &&
	     !strcmp(c.sign_key, "/etc/rerand/db.key") && !strcmp(c.sign_cert, "/etc/rerand/db.crt") &&
	     !strcmp(c.lockdown_file, "/tmp/ld") && !strcmp(c.secureboot_file, "/tmp/sb"),
	     "every Secure Boot key is read (%u errors)", e->n);
	p = put_text("sb.conf", "[Stage]\nSignKey=pkcs11:token=db;object=key\nSignCert=/etc/db.crt\n");
	memset(e, 0, sizeof(*e));
	T_OK(config_load(p, NULL, &c, e) == 0 && !strcmp(c.sign_key, "pkcs11:token=db;object=key"),
	     "a PKCS#11 URI as SignKey= (%u errors)", e->n);
	p = put_text("sb.conf", "[Stage]\n"               /* 1 */
		"SignKey=/etc/db.key\n"              /* 2 */
		"SignedImageDirectory=signed\n"      /* 3 */
		"SignCert=db.crt\n");            /* 4 */
	memset(e, 0, sizeof(*e));
	int r = config_load(p, NULL, &c, e);
	for (unsigned i = 0; i < e->n; i++)
		printf("#   %s\n", e->msg[i]);
	T_OK(r < 0 && has_err(e, "sb.conf:3: SignedImageDirectory=signed: want an absolute path"),
	     "a relative SignedImageDirectory= at :3");
	T_OK(has_err(e, "sb.conf:4: SignCert=db.crt: want an absolute path"), "a relative SignCert= at :4");
	T_OK(has_err(e, "SignKey= and SignCert= go together"), "SignKey= without a usable SignCert=");
	p = put_text("sb.conf", "[Stage]\nSignKey=db.key\nSignCert=/etc/db.crt\n");
	memset(e, 0, sizeof(*e));
	T_OK(config_load(p, NULL, &c, e) < 0 && has_err(e, "SignKey=db.key: want an absolute path or a "
							   "pkcs11: URI"), "a relative SignKey= is refused");
	free(e);
}

/* A config whose kernel, command line and state live in dir. */
static void base_config(struct rr_config *c, const char *kernel)
{
	config_defaults(c);
	snprintf(c->kernel, sizeof(c->kernel), "%s", kernel);
	snprintf(c->initrd, sizeof(c->initrd), "none");
	snprintf(c->state_dir, sizeof(c->state_dir), "%s/state", dir);
	snprintf(c->signed_dir, sizeof(c->signed_dir), "%s/signed", dir);
	snprintf(c->lockdown_file, sizeof(c->lockdown_file), "%s/lockdown", dir);
	snprintf(c->secureboot_file, sizeof(c->secureboot_file), "%s/SecureBoot", dir);
	snprintf(c->cmdline, sizeof(c->cmdline), "root=/dev/vda1 console=ttyS0");
	c->cmdline_set = true;
	/* the unit test has no stage blob linked in: rerandd's `rerand image` path */
	if (getcwd(c->rerand_bin, sizeof(c->rerand_bin) - 16))
		strcat(c->rerand_bin, "/build/rerand");
	/* as root the builder runs as ImageUser=; a build host has no "rerand" */
	snprintf(c->image_user, sizeof(c->image_user), "nobody");
	mkdir(c->state_dir, 0700);
	mkdir(c->signed_dir, 0700);
}

static void set_state(const char *lockdown, int sb)
{
	uint8_t v[5] = { 6, 0, 0, 0, (uint8_t)sb };
	char p[512];

	snprintf(p, sizeof(p), "%s/lockdown", dir);
	unlink(p);
	if (lockdown)
		put("lockdown", lockdown, strlen(lockdown));
	snprintf(p, sizeof(p), "%s/SecureBoot", dir);
	unlink(p);
	if (sb >= 0)
		put("SecureBoot", v, 5);
}

static void test_plan(const char *kernel)
{
	struct rr_config c;
	struct rr_stage_plan p;
	struct rr_err e = { "" };
	char want[1024], rel[128];
	int r;

	base_config(&c, kernel);
	T_OK(stage_kernel_release(kernel, rel, sizeof(rel), &e) == 0 && !strcmp(rel, REL),
	     "the release comes from the kernel's own version string: %s", rel);

	set_state("[none] integrity confidentiality\n", 0);
	r = stage_plan(&c, NULL, &p, &e);
	snprintf(want, sizeof(want), "%s/images/%s.%s.img", c.state_dir, p.sha, stage_blob_sha());
	T_OK(r == 0 && !p.locked && p.source == RR_IMG_BUILT && !strcmp(p.image, want),
	     "not locked down: the unsigned image in the cache (%s)", r ? e.msg : stage_source_name(p.source));

	set_state("none [integrity] confidentiality\n", 1);
	r = stage_plan(&c, NULL, &p, &e);
	printf("#   %s\n", e.msg);
	snprintf(want, sizeof(want), "there is no signed image of %s for release " REL ": put one at "
		 "%s/" REL ".img (made with 'rerand image --sign-key KEY --sign-cert CERT' on a build "
		 "host), or set SignKey= and SignCert= in [Stage] (signing on this machine weakens "
		 "lockdown); see docs/secure-boot.md", kernel, c.signed_dir);
	T_OK(r == -ENOKEY && strstr(e.msg, "the kernel is locked down (lockdown: integrity, Secure Boot: on)") &&
	     strstr(e.msg, want), "locked down, nothing signed: blocked, and the reason says what to do");

	set_state(NULL, 1);
	r = stage_plan(&c, NULL, &p, &e);
	T_OK(r == -ENOKEY && strstr(e.msg, "(lockdown: unknown, Secure Boot: on)"),
	     "Secure Boot on without a lockdown file counts as locked down");

	set_state("none [integrity] confidentiality\n", 1);
	/* SignKey= that others can read, or that is not root's: refused at the
	 * plan, before anything is built, naming the file and what is wrong */
	snprintf(c.sign_key, sizeof(c.sign_key), "%s", put_text("db.key", "(a PEM key)\n"));
	snprintf(c.sign_cert, sizeof(c.sign_cert), "/etc/rerand/db.crt");
	chmod(c.sign_key, 0644);
	r = stage_plan(&c, NULL, &p, &e);
	T_OK(r == -EPERM && strstr(e.msg, c.sign_key) && strstr(e.msg, "mode 0644, readable by everyone"),
	     "a world-readable SignKey= is refused: %s", e.msg);
	chmod(c.sign_key, 0640);
	r = stage_plan(&c, NULL, &p, &e);
	T_OK(r == -EPERM && strstr(e.msg, c.sign_key) && strstr(e.msg, "mode 0640, readable by its group"),
	     "a group-readable SignKey= is refused: %s", e.msg);
	chmod(c.sign_key, 0600);
	if (geteuid() == 0) {
		r = chown(c.sign_key, 65534, 0) ? -errno : stage_plan(&c, NULL, &p, &e);
		T_OK(r == -EPERM && strstr(e.msg, c.sign_key) && strstr(e.msg, "owned by uid 65534, not root"),
		     "a SignKey= not owned by root is refused: %s", e.msg);
		if (chown(c.sign_key, 0, 0))
			perror(c.sign_key);
	} else {
		T_OK(1, "# SKIP a SignKey= not owned by root: the test is not root");
	}
	r = stage_plan(&c, NULL, &p, &e);
	snprintf(want, sizeof(want), "%s/images/%s.%s.signed.img", c.state_dir, p.sha, stage_blob_sha());
	T_OK(r == 0 && p.locked && p.source == RR_IMG_SIGNED_HERE && !strcmp(p.image, want),
	     "SignKey= set: signed here, cached apart as <sha>.<stage sha>.signed.img");
	snprintf(c.sign_key, sizeof(c.sign_key), "pkcs11:token=db;object=key");
	r = stage_plan(&c, NULL, &p, &e);
	T_OK(r == 0 && p.source == RR_IMG_SIGNED_HERE, "a pkcs11: SignKey= has no file to judge: signed here");
	snprintf(c.sign_key, sizeof(c.sign_key), "%s/db.key", dir);

	/* a pre-signed file wins over signing here */
	put("signed/" REL ".img", "not an image", 12);
	r = stage_plan(&c, NULL, &p, &e);
	snprintf(want, sizeof(want), "%s/" REL ".img", c.signed_dir);
	T_OK(r == 0 && p.source == RR_IMG_PRESIGNED && !strcmp(p.image, want),
	     "a pre-signed <release>.img wins over SignKey=");
	r = stage_build(&c, &p, &e);
	T_OK(r < 0 && strstr(e.msg, want) && access(want, F_OK) == 0,
	     "a pre-signed file that is no image: refused, and left alone (%s)", e.msg);

	/* an unsigned image in the pre-signed directory is refused, not loaded */
	struct rr_config plain;
	struct rr_stage_plan pp;
	base_config(&plain, kernel);
	set_state("[none] integrity confidentiality\n", 0);
	r = stage_plan(&plain, NULL, &pp, &e);
	if (r == 0)
		r = stage_build(&plain, &pp, &e);
	T_OK(r == 0 && !*pp.signer && access(pp.image, F_OK) == 0,
	     "not locked down: built into the cache, unsigned (%s)", r ? e.msg : pp.image);
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", pp.image, want);
	if (system(cmd) != 0)
		printf("# cp failed\n");
	set_state("none [integrity] confidentiality\n", 1);
	r = stage_plan(&c, NULL, &p, &e);
	if (r == 0)
		r = stage_build(&c, &p, &e);
	T_OK(r == -ENOKEY && strstr(e.msg, want) && strstr(e.msg, "not signed, and the kernel is locked down"),
	     "an unsigned image among the pre-signed ones is refused: %s", e.msg);

	/* pruning keeps both forms of the kept kernel's image */
	char a[1024], b[1024], o[1024], cp2[4200];
	snprintf(a, sizeof(a), "%s/images/%s.%s.img", plain.state_dir, pp.sha, stage_blob_sha());
	snprintf(b, sizeof(b), "%s/images/%s.%s.signed.img", plain.state_dir, pp.sha,
		 stage_blob_sha());
	snprintf(o, sizeof(o), "%s/images/%064d.%s.signed.img", plain.state_dir, 7, stage_blob_sha());
	snprintf(cp2, sizeof(cp2), "cp '%s' '%s' && cp '%s' '%s'", a, b, a, o);
	if (system(cp2) != 0)
		printf("# cp failed\n");
	stage_prune(&plain, pp.sha, NULL);
	T_OK(access(a, F_OK) == 0 && access(b, F_OK) == 0 && access(o, F_OK) < 0,
	     "pruning keeps <sha>.<stage>.img and .signed.img, removes other kernels' images");
}

static void test_load_argv(void)
{
	struct rr_config c;
	struct rr_stage_plan p = { .kernel = "/boot/vmlinuz-x", .initrd = "/boot/initrd.img-x",
				   .cmdline = "root=/dev/vda1 ro", .image = "/var/lib/rerand/images/a.img" };
	struct rr_load_argv a;
	char all[2048] = "";

	config_defaults(&c);
	snprintf(c.rerand_bin, sizeof(c.rerand_bin), "/usr/bin/rerand");
	snprintf(c.lockdown_file, sizeof(c.lockdown_file), "/tmp/fixture-ld");
	stage_load_argv(&c, &p, false, &a);
	for (int i = 0; a.argv[i]; i++)
		snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s%s", i ? " " : "", a.argv[i]);
	T_OK(!strcmp(all, "/usr/bin/rerand load /var/lib/rerand/images/a.img --initrd=/boot/initrd.img-x "
		     "--append=root=/dev/vda1 ro --kexec=kexec") &&
	     !strcmp(getenv("RERAND_LOCKDOWN_FILE"), "/tmp/fixture-ld") &&
	     !strcmp(getenv("RERAND_SECUREBOOT_FILE"), RR_SECUREBOOT_PATH),
	     "staging: '%s', and rerand load reads the [Paths] lockdown files", all);
	c.crash_file_syscall = c.crash_file_syscall_set = true;
	stage_load_argv(&c, &p, true, &a);
	all[0] = 0;
	for (int i = 0; a.argv[i]; i++)
		snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s%s", i ? " " : "", a.argv[i]);
	T_OK(!strcmp(all, "/usr/bin/rerand load /var/lib/rerand/images/a.img --crash "
		     "--initrd=/boot/initrd.img-x --append=root=/dev/vda1 ro --kexec=kexec --file-syscall"),
	     "crash kernel, [Crash] FileSyscall=yes: '%s'", all);
	p.initrd[0] = 0;
	c.file_syscall = true;
	stage_load_argv(&c, &p, false, &a);
	T_OK(!strcmp(a.argv[3], "--append=root=/dev/vda1 ro") && !strcmp(a.argv[5], "--file-syscall") &&
	     !a.argv[6], "no initrd, [Stage] FileSyscall=yes");
}

static void test_view(void)
{
	struct rr_config c;
	struct rr_stage_plan p = { .source = RR_IMG_PRESIGNED, .signer = "CN=Fleet \"db\" key",
				   .signature = "verified" };
	struct rr_view v;
	char *buf = malloc(65536);

	base_config(&c, "/nonexistent");
	set_state("none [integrity] confidentiality\n", 1);
	memset(&v, 0, sizeof(v));
	v.staged = true;
	stage_view_secure(&c, &p, &v);
	T_OK(!strcmp(v.secure_boot, "on") && !strcmp(v.lockdown, "integrity") && v.locked &&
	     !strcmp(v.image_source, "pre-signed") && !strcmp(v.signer, "CN=Fleet \"db\" key"),
	     "the view carries Secure Boot, lockdown and the signer");
	T_OK(control_format_text(&v, buf, 65536) > 0 &&
	     strstr(buf, "secure boot:       on, lockdown integrity (signed images only)\n") &&
	     strstr(buf, "staged image:      pre-signed, signed by \"CN=Fleet \"db\" key\" (signature "
		    "verified against its own certificate only: no TrustCert=)\n"),
	     "status text: secure boot and staged image lines");
	snprintf(p.anchor, sizeof(p.anchor), "CN=Fleet CA");
	stage_view_secure(&c, &p, &v);
	T_OK(control_format_text(&v, buf, 65536) > 0 &&
	     strstr(buf, "signed by \"CN=Fleet \"db\" key\" (signature verified, chains to "
		    "TrustCert='s \"CN=Fleet CA\")\n") &&
	     control_format_json(&v, buf, 65536) > 0 &&
	     strstr(buf, "\"signature_trust\":\"trusted\",\"trust_anchor\":\"CN=Fleet CA\""),
	     "with TrustCert=: status names the certificate it chains to, JSON signature_trust");
	p.anchor[0] = 0;
	stage_view_secure(&c, &p, &v);
	T_OK(control_format_json(&v, buf, 65536) > 0 &&
	     strstr(buf, "\"secure_boot\":\"on\",\"lockdown\":\"integrity\",\"locked_down\":true,"
		    "\"image_source\":\"pre-signed\",\"signer\":\"CN=Fleet \\\"db\\\" key\","
		    "\"signature\":\"verified\""),
	     "status json: secure_boot, lockdown, locked_down, image_source, signer, signature");
	T_OK(metrics_format(&v, buf, 65536) > 0 &&
	     strstr(buf, "rerand_secure_boot_info{state=\"on\"} 1\n") &&
	     strstr(buf, "rerand_lockdown_info{mode=\"integrity\"} 1\n") &&
	     strstr(buf, "rerand_locked_down 1\n") && strstr(buf, "rerand_staged_image_signed 1\n") &&
	     strstr(buf, "rerand_staged_image_info{source=\"pre-signed\",signer=\"CN=Fleet \\\"db\\\" key\"} 1\n"),
	     "metrics: Secure Boot, lockdown, signed, signer label escaped");
	/* a staged image whose signature does not verify (not locked down):
	 * no signer anywhere, the text says why there is none */
	struct rr_stage_plan bad = { .source = RR_IMG_BUILT, .signature = "bad" };
	stage_view_secure(&c, &bad, &v);
	T_OK(control_format_text(&v, buf, 65536) > 0 &&
	     strstr(buf, "staged image:      built, signature does not verify (signer not shown)\n") &&
	     control_format_json(&v, buf, 65536) > 0 &&
	     strstr(buf, "\"signer\":\"\",\"signature\":\"bad\"") &&
	     metrics_format(&v, buf, 65536) > 0 && strstr(buf, "rerand_staged_image_signed 0\n"),
	     "a signature that does not verify: status says so, JSON signature bad, no signer");
	set_state(NULL, -1);
	snprintf(c.secureboot_file, sizeof(c.secureboot_file), "/nonexistent/efivars/SecureBoot-x");
	stage_view_secure(&c, NULL, &v);
	v.staged = false;
	T_OK(!strcmp(v.secure_boot, "unsupported") && !strcmp(v.lockdown, "unknown") && !v.locked &&
	     !*v.signer && metrics_format(&v, buf, 65536) > 0 && strstr(buf, "rerand_locked_down 0\n") &&
	     !strstr(buf, "rerand_staged_image_info"),
	     "no EFI, no lockdown file: unsupported, unknown, not locked; no image info while unstaged");
	free(buf);
}

int main(void)
{
	const char *k = t_kernels_dir();
	char kernel[512], cmd[300];

	snprintf(dir, sizeof(dir), "/tmp/rerand-test-secure-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	test_config();
	test_load_argv();
	test_view();
	if (k) {
		snprintf(kernel, sizeof(kernel), "%s/vmlinuz-" REL, k);
		test_plan(kernel);
	} else {
		T_OK(1, "# SKIP plan and build: no test kernels (RERAND_KERNELS)");
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	return t_done();
}
