/* SPDX-License-Identifier: GPL-2.0-only */
/* The command tables' readers: getopt, usage, --help, bash completion. */
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cmdtab.h"

#define MAX_OPTS 32

const struct cli_cmd *cli_find(const char *name)
{
	for (unsigned i = 0; i < cli_nr_cmds; i++)
		if (!strcmp(cli_cmds[i]->name, name))
			return cli_cmds[i];
	return NULL;
}

static const struct cli_opt help_opt = {
	"help", 'h', no_argument, NULL, 'h', "this text", NULL
};

int cli_getopt(const struct cli_cmd *cmd, int argc, char **argv)
{
	static const struct cli_cmd *built;
	static struct option lo[MAX_OPTS + 2];
	static char so[3 * MAX_OPTS + 4];
	int c;

	if (built != cmd) {
		unsigned n = 0, s = 0;

		/* ':' first: a missing argument is told apart from an unknown
		 * option.  Operands and options mix (`image KERNEL -o IMAGE`). */
		so[s++] = ':';
		so[s++] = 'h';
		for (const struct cli_opt *o = cmd->opts; o && o->name && n < MAX_OPTS; o++, n++) {
			lo[n] = (struct option){ o->name, o->has_arg, NULL, o->val };
			if (o->short_name) {
				so[s++] = o->short_name;
				if (o->has_arg != no_argument)
					so[s++] = ':';
				if (o->has_arg == optional_argument)
					so[s++] = ':';
			}
		}
		lo[n++] = (struct option){ "help", no_argument, NULL, 'h' };
		lo[n] = (struct option){ 0 };
		so[s] = 0;
		built = cmd;
	}
	opterr = 0;
	c = getopt_long(argc, argv, so, lo, NULL);
	if (c == 'h') {
		cli_print_help(cmd, stdout);
		return CLI_HELP;
	}
	if (c == ':')
		{
		cli_usage_error(cmd, "%s needs an argument", argv[optind - 1]);
		return CLI_BAD;
	}
	if (c == '?') {
		if (optopt)
			cli_usage_error(cmd, "unknown option '-%c'", optopt);
		else
			cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
		return CLI_BAD;
	}
	return c;
}

static void opt_synopsis(const struct cli_opt *o, char *buf, size_t size)
{
	int n = 0;

	if (o->short_name)
		n = snprintf(buf, size, "-%c, ", o->short_name);
	else
		n = snprintf(buf, size, "    ");
	if (o->has_arg == required_argument)
		snprintf(buf + n, size - (size_t)n, "--%s %s", o->name, o->arg);
	else if (o->has_arg == optional_argument)
		snprintf(buf + n, size - (size_t)n, "--%s[=%s]", o->name, o->arg);
	else
		snprintf(buf + n, size - (size_t)n, "--%s", o->name);
}

void cli_print_usage(const struct cli_cmd *cmd, FILE *f)
{
	fprintf(f, "Usage: rerand %s%s%s%s\n", cmd->name, *cmd->synopsis ? " " : "", cmd->synopsis,
		cmd->opts && cmd->opts->name ? " [OPTIONS]" : "");
}

void cli_print_help(const struct cli_cmd *cmd, FILE *f)
{
	char buf[128];

	cli_print_usage(cmd, f);
	fprintf(f, "\n%s\n", cmd->summary);
	if (cmd->text)
		fprintf(f, "\n%s", cmd->text);
	fputs("\nOptions:\n", f);
	for (const struct cli_opt *o = cmd->opts; o && o->name; o++) {
		opt_synopsis(o, buf, sizeof(buf));
		if (strlen(buf) <= 24)
			fprintf(f, "  %-24s  %s\n", buf, o->help);
		else
			fprintf(f, "  %s\n  %-24s  %s\n", buf, "", o->help);
	}
	opt_synopsis(&help_opt, buf, sizeof(buf));
	fprintf(f, "  %-24s  %s\n", buf, help_opt.help);
	fputs("\nSee rerand(8).\n", f);
}

int cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rerand %s: ", cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	cli_print_usage(cmd, stderr);
	fprintf(stderr, "(rerand %s --help lists the options)\n", cmd->name);
	return EXIT_USAGE;
}

/* Offer COMPLETE for the current word: a file, a directory or words. */
static void bash_offer(FILE *f, const char *complete, const char *indent)
{
	if (!strcmp(complete, "@file"))
		fprintf(f, "%s_filedir\n", indent);
	else if (!strcmp(complete, "@dir"))
		fprintf(f, "%s_filedir -d\n", indent);
	else
		fprintf(f, "%sCOMPREPLY=($(compgen -W '%s' -- \"$cur\"))\n", indent, complete);
}

void cli_print_bash_completion(FILE *f)
{
	fputs("# bash completion for rerand(8); generated from its command tables by\n"
	      "# `rerand --bash-completion` at build time: do not edit.\n"
	      "_rerand()\n{\n"
	      "\tlocal cur prev words cword opts\n"
	      "\t_init_completion || return\n"
	      "\tif [[ $cword -eq 1 ]]; then\n"
	      "\t\tCOMPREPLY=($(compgen -W 'help --help --version", f);
	for (unsigned i = 0; i < cli_nr_cmds; i++)
		fprintf(f, " %s", cli_cmds[i]->name);
	fputs("' -- \"$cur\"))\n\t\treturn\n\tfi\n\tcase ${words[1]} in\n", f);
	fputs("\thelp)\n\t\t[[ $cword -eq 2 ]] && COMPREPLY=($(compgen -W '", f);
	for (unsigned i = 0; i < cli_nr_cmds; i++)
		fprintf(f, "%s%s", i ? " " : "", cli_cmds[i]->name);
	fputs("' -- \"$cur\"))\n\t\treturn\n\t\t;;\n", f);
	for (unsigned i = 0; i < cli_nr_cmds; i++) {
		const struct cli_cmd *c = cli_cmds[i];
		bool any = false;

		fprintf(f, "\t%s)\n\t\tcase $prev in\n", c->name);
		for (const struct cli_opt *o = c->opts; o && o->name; o++) {
			if (o->has_arg != required_argument)
				continue;
			fprintf(f, "\t\t--%s", o->name);
			if (o->short_name)
				fprintf(f, "|-%c", o->short_name);
			fputs(")\n", f);
			if (o->complete)
				bash_offer(f, o->complete, "\t\t\t");
			fputs("\t\t\treturn\n\t\t\t;;\n", f);
			any = true;
		}
		if (!any)
			fputs("\t\t*) ;;\n", f);
		fputs("\t\tesac\n\t\topts='--help", f);
		for (const struct cli_opt *o = c->opts; o && o->name; o++)
			fprintf(f, " --%s%s", o->name, o->has_arg == optional_argument ? "=" : "");
		fputs("'\n", f);
		fputs("\t\tif [[ $cur == -* ]]; then\n"
		      "\t\t\tCOMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
		      "\t\t\t[[ ${COMPREPLY-} == *= ]] && compopt -o nospace\n", f);
		if (c->operand_complete) {
			fputs("\t\telse\n", f);
			bash_offer(f, c->operand_complete, "\t\t\t");
		}
		fputs("\t\tfi\n\t\t;;\n", f);
	}
	fputs("\tesac\n}\ncomplete -F _rerand rerand\n", f);
}
