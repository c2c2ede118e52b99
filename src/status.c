/* SPDX-License-Identifier: GPL-2.0-only */
/* The status record the stage leaves as a setup_data node: reading it back
 * from sysfs, and describing it (it holds no address by design). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "jsonout.h"
#include "kernel.h"
#include "status.h"
#include "util.h"

int rr_status_parse(const void *data, size_t len, const char *name,
		    struct rerand_status *ret, struct rr_err *e)
{
	struct rerand_status st;
	size_t want;

	if (len < sizeof(st))
		return rr_errf(e, EINVAL, "%s: status record is %zu bytes, expected %zu", name, len,
			       sizeof(st));
	memcpy(&st, data, sizeof(st));
	if (memcmp(st.magic, RERAND_STATUS_MAGIC, 8))
		return rr_errf(e, EINVAL, "%s: status record has a bad magic", name);
	/* Version 1 (stages before the timing field was dropped) has the same
	 * fields plus stage_cycles at the end, which is ignored. */
	if (st.version == RERAND_STATUS_VERSION)
		want = sizeof(st);
	else if (st.version == 1)
		want = RERAND_STATUS_V1_SIZE;
	else
		return rr_errf(e, EINVAL, "%s: status record version %u is not supported", name,
			       st.version);
	if (st.size != want || len < want)
		return rr_errf(e, EINVAL, "%s: status record version %u claims %u bytes (%zu read), expected %zu",
			       name, st.version, st.size, len, want);
	if (st.result < RERAND_RES_RANDOMIZED || st.result > RERAND_RES_NO_SLOT)
		return rr_errf(e, EINVAL, "%s: status record has unknown result %u", name, st.result);
	*ret = st;
	return 0;
}

int rr_status_read(const char *dir, struct rerand_status *ret, struct rr_err *e)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int r = -ENOENT;

	if (!d) {
		if (errno == ENOENT)
			return rr_errf(e, ENOENT, "%s: no setup_data in this boot (not booted by rerand)", dir);
		return rr_errf(e, errno, "%s: cannot open: %s", dir, strerror(errno));
	}
	while ((de = readdir(d))) {
		char path[512];
		_cleanup_free_ char *type = NULL;
		_cleanup_free_ uint8_t *data = NULL;
		size_t n;
		unsigned long t;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/type", dir, de->d_name);
		if (rr_read_text(path, RR_SYSFS_MAX, &type, NULL) < 0)
			continue;
		t = strtoul(type, NULL, 0);
		if (t != RERAND_SETUP_TYPE)
			continue;
		/* the node's own data: ours is one record, anything larger is not */
		snprintf(path, sizeof(path), "%s/%s/data", dir, de->d_name);
		r = rr_read_file(path, RR_SYSFS_MAX, &data, &n, e);
		if (r < 0)
			break;
		r = rr_status_parse(data, n, path, ret, e);
		break;
	}
	closedir(d);
	if (r == -ENOENT)
		rr_errf(e, ENOENT, "%s: no rerand status record (this boot was not made by a rerand image)",
			dir);
	return r;
}

const char *rr_status_result_name(uint32_t result)
{
	switch (result) {
	case RERAND_RES_RANDOMIZED: return "randomized";
	case RERAND_RES_NOKASLR:    return "nokaslr";
	case RERAND_RES_NO_SLOT:    return "no-slot";
	default:                    return "unknown";
	}
}

const char *rr_status_word(const struct rerand_status *st)
{
	if (st->result != RERAND_RES_RANDOMIZED)
		return "not-randomized";
	return st->flags & RERAND_ST_WEAK ? "weak" : "randomized";
}

const char *rr_status_why(const struct rerand_status *st)
{
	return st->result == RERAND_RES_RANDOMIZED ? "" : rr_status_result_name(st->result);
}

void rr_status_sources(uint32_t mask, char *buf, size_t len)
{
	static const struct { uint32_t bit; const char *name; } names[] = {
		{ RERAND_SRC_SEED, "seed" }, { RERAND_SRC_KERNEL_SEED, "kernel-seed" },
		{ RERAND_SRC_RDSEED, "rdseed" },
		{ RERAND_SRC_RDRAND, "rdrand" }, { RERAND_SRC_RDTSC, "rdtsc" },
	};
	size_t used = 0;

	buf[0] = 0;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		if (!(mask & names[i].bit))
			continue;
		int n = snprintf(buf + used, len - used, "%s%s", used ? "+" : "", names[i].name);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
	if (!used)
		snprintf(buf, len, "none");
}

/* log2(n), 0 for 0, without libm: rerandd's one use of it would map all of
 * libm.so (316 kB of its idle RSS, issue 28).  n = 2^e * m with m in [1, 2);
 * ln m = 2 atanh(z) = 2 (z + z^3/3 + z^5/5 + ...), z = (m - 1)/(m + 1) < 1/3,
 * so 30 terms leave an error below 3^-60, far under a double's precision. */
double rr_bits(uint64_t n)
{
	int e = 63 - __builtin_clzll(n | 1);
	double m, z, z2, sum = 0, p;

	if (!n)
		return 0;
	m = (double)n / (double)(1ull << e);
	z = (m - 1) / (m + 1);
	z2 = z * z;
	p = z;
	for (int k = 0; k < 30; k++) {
		sum += p / (2 * k + 1);
		p *= z2;
	}
	return e + 2 * sum / 0.69314718055994530942;   /* ln 2 */
}

void rr_bits_text(uint64_t n, char *buf, size_t len)
{
	snprintf(buf, len, "%.1f", rr_bits(n));
}

static double bits_of(uint64_t n)
{
	return rr_bits(n);
}

const char *rr_status_grade(uint32_t sources_used)
{
	if (sources_used & (RERAND_SRC_RDSEED | RERAND_SRC_RDRAND))
		return "hardware";
	if (sources_used & (RERAND_SRC_SEED | RERAND_SRC_KERNEL_SEED))
		return "seed";
	return "tsc-only";
}

struct json_object *rr_status_json(const struct rerand_status *st)
{
	struct json_object *o = json_object_new_object();
	char used[96], rejected[96], pb[16], vb[16], tb[16];
	double total = bits_of(st->phys_slots) + bits_of(st->virt_slots);

	if (!o)
		return NULL;
	rr_status_sources(st->sources_used, used, sizeof(used));
	rr_status_sources(st->sources_rejected, rejected, sizeof(rejected));
	rr_bits_text(st->phys_slots, pb, sizeof(pb));
	rr_bits_text(st->virt_slots, vb, sizeof(vb));
	snprintf(tb, sizeof(tb), "%.1f", total);
	rr_json_add_bool(o, "randomized", st->result == RERAND_RES_RANDOMIZED);
	rr_json_add_str(o, "result", rr_status_word(st));
	rr_json_add_str(o, "why", rr_status_why(st));
	rr_json_add_str(o, "sources", used);
	rr_json_add_str(o, "sources_rejected", rejected);
	rr_json_add_bool(o, "weak", st->flags & RERAND_ST_WEAK);
	rr_json_add_str(o, "entropy_grade", rr_status_grade(st->sources_used));
	rr_json_add_u64(o, "phys_slots", st->phys_slots);
	rr_json_add_u64(o, "virt_slots", st->virt_slots);
	rr_json_add_num_text(o, "phys_bits", bits_of(st->phys_slots), pb);
	rr_json_add_num_text(o, "virt_bits", bits_of(st->virt_slots), vb);
	rr_json_add_num_text(o, "total_bits", total, tb);
	rr_json_add_bool(o, "la57", st->flags & RERAND_ST_LA57);
	rr_json_add_bool(o, "efi_map", st->flags & RERAND_ST_EFI_MAP);
	rr_json_add_bool(o, "crash", st->flags & RERAND_ST_CRASH);
	rr_json_add_int(o, "ram_ranges", st->ram_ranges);
	rr_json_add_int(o, "avoided_ranges", st->avoided_ranges);
	rr_json_add_int(o, "image_version", st->image_version);
	rr_json_add_int(o, "record_version", st->version);
	return o;
}

void rr_status_print(FILE *f, const struct rerand_status *st, bool json)
{
	char used[96], rejected[96], pb[16], vb[16], tb[16];

	if (json) {
		_cleanup_json_ struct json_object *o = rr_status_json(st);

		if (o)
			fprintf(f, "%s\n", rr_json_line(o));
		return;
	}
	rr_status_sources(st->sources_used, used, sizeof(used));
	rr_status_sources(st->sources_rejected, rejected, sizeof(rejected));
	rr_bits_text(st->phys_slots, pb, sizeof(pb));
	rr_bits_text(st->virt_slots, vb, sizeof(vb));
	snprintf(tb, sizeof(tb), "%.1f", bits_of(st->phys_slots) + bits_of(st->virt_slots));
	const char *why = rr_status_why(st), *note = "";
	char why_text[32] = "";

	if (*why)
		snprintf(why_text, sizeof(why_text), " (%s)", why);
	else if (st->flags & RERAND_ST_WEAK)
		note = " (no source but RDTSC)";
	else if (!strcmp(rr_status_grade(st->sources_used), "seed"))
		note = " (seed grade: no RDRAND or RDSEED; the staging seed and RDTSC)";
	fprintf(f, "result:           %s%s%s\n", rr_status_word(st), why_text, note);
	fprintf(f, "entropy sources:  %s\n", used);
	if (st->sources_rejected)
		fprintf(f, "rejected sources: %s\n", rejected);
	fprintf(f, "physical slots:   %llu (%s bits)\n", (unsigned long long)st->phys_slots, pb);
	fprintf(f, "virtual slots:    %llu (%s bits)\n", (unsigned long long)st->virt_slots, vb);
	fprintf(f, "total:            %s bits\n", tb);
	fprintf(f, "memory map:       %s, %u RAM ranges, %u ranges avoided\n",
		st->flags & RERAND_ST_EFI_MAP ? "EFI" : "e820", st->ram_ranges, st->avoided_ranges);
	fprintf(f, "paging:           %s-level\n", st->flags & RERAND_ST_LA57 ? "5" : "4");
	fprintf(f, "crash kernel:     %s\n", st->flags & RERAND_ST_CRASH ? "yes" : "no");
}
