/* SPDX-License-Identifier: GPL-2.0-only */
/* One table per rerand command: the usage line, `--help`, getopt's option
 * array and the bash completion all come from it, so they cannot drift. */
#ifndef RERAND_CMDTAB_H
#define RERAND_CMDTAB_H

#include <stdio.h>

struct cli_opt {
	const char *name;       /* long name without "--"; NULL ends the table */
	char short_name;        /* 0: none */
	int has_arg;            /* no_argument, required_argument, optional_argument */
	const char *arg;        /* the argument's name in --help (has_arg only) */
	int val;                /* what cli_getopt() returns for it */
	const char *help;       /* one line */
	const char *complete;   /* bash: "@file", "@dir", or words to offer */
};

struct cli_cmd {
	const char *name;
	const char *synopsis;   /* operands and mandatory options, after the name */
	const char *summary;    /* one line */
	const char *text;       /* more of --help (exit codes, ...), or NULL */
	const struct cli_opt *opts;
	int (*fn)(int argc, char **argv);
	const char *operand_complete;  /* bash, for operands: "@file", words, NULL */
};

/* --json[=pretty|short] of the commands that print one object themselves
 * (inspect, verify, entropy); cli_json_mode() reads its argument. */
#define CLI_JSON_OPT { "json", 0, optional_argument, "pretty|short", 'j', \
		       "one JSON object (short, the default: one line; pretty: indented)", \
		       "pretty short" }

/* The getopt_long() return values cli_getopt() adds. */
#define CLI_HELP  (-2)  /* --help was given and printed: return 0 */
#define CLI_BAD   (-3)  /* a usage error was said: return EXIT_USAGE */

extern const struct cli_cmd *const cli_cmds[];
extern const unsigned cli_nr_cmds;

const struct cli_cmd *cli_find(const char *name);
/* getopt_long() over CMD's table, from argv[optind] (set optind = 1 first):
 * each option's val, -1 at the end, CLI_HELP or CLI_BAD. */
int cli_getopt(const struct cli_cmd *cmd, int argc, char **argv);
void cli_print_usage(const struct cli_cmd *cmd, FILE *f);
void cli_print_help(const struct cli_cmd *cmd, FILE *f);
/* Says "rerand CMD: WHAT" and the usage line on stderr; EXIT_USAGE. */
int cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The bash completion script, from every command's table. */
void cli_print_bash_completion(FILE *f);

#endif
