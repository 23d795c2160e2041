/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flashctl history: the installs, newest first. Through the running
 * flashd (GetHistory, open to every user, as status is), else read from
 * the state dir (the same answer: proto_history()). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup_json.h"
#include "cli.h"
#include "client.h"
#include "conf.h"
#include "proto_slot.h"
#include "record.h"
#include "util.h"

struct history_args {
	const char *sock;
	const char *config;
	const char *state_dir;
	bool offline;
};

/* A string of the record made printable (a bundle, a server or a file
 * said it), or "-". */
static const char *shown(struct json_object *o, const char *k, char *buf, size_t len)
{
	const char *s = json_get_string(o, k);

	return s ? util_printable(s, buf, len) : "-";
}

static const char *size_or_dash(int64_t n, char *buf, size_t len)
{
	return n < 0 ? "-" : util_format_size((uint64_t)n, buf, len);
}

static const struct {
	const char *result, *word;
} result_words[] = {
	{ "success", "installed" }, { "failed", "FAILED" }, { "cancelled", "cancelled" },
};

static const char *result_word(const char *result)
{
	for (size_t i = 0; result && i < ELEMENTSOF(result_words); i++)
		if (!strcmp(result, result_words[i].result))
			return result_words[i].word;
	return "-";
}

static void print_entry(struct json_object *e)
{
	char when[32], ver[72], slot[72], src[512], fetched[32], written[32], s1[512], s2[512];

	cli_time(when, sizeof(when), json_get_int(e, "started"), true);
	printf("%-20s  %-12s %-4s %-9s %8s %8s %6" PRId64 " %5" PRId64 "s  %s\n", when,
	       shown(e, "version", ver, sizeof(ver)), shown(e, "slot", slot, sizeof(slot)),
	       result_word(json_get_string(e, "result")), size_or_dash(json_get_int(e, "bytes_fetched"), fetched,
							  sizeof(fetched)),
	       size_or_dash(json_get_int(e, "bytes"), written, sizeof(written)), json_get_int(e, "erases"),
	       json_get_int(e, "duration"), shown(e, "source", src, sizeof(src)));
	/* no running_version: the kept manifest did not verify */
	if (json_get_string(e, "downgrade"))
		printf("    DOWNGRADE from %s: %s\n", json_get_string(e, "running_version") ?
		       shown(e, "running_version", s1, sizeof(s1)) : "an unverified version",
		       shown(e, "downgrade", s2, sizeof(s2)));
	if (json_get_string(e, "reason"))
		printf("    %s: %s\n", shown(e, "error_name", s1, sizeof(s1)),
		       shown(e, "reason", s2, sizeof(s2)));
	if (json_get_string(e, "record_error"))
		printf("    RECORD NOT SAVED: %s\n", shown(e, "record_error", s1, sizeof(s1)));
	if (json_get_string(e, "history_reset"))
		printf("    HISTORY RESET: %s\n", shown(e, "history_reset", s1, sizeof(s1)));
}

static void print_history(struct json_object *h)
{
	struct json_object *installs;
	char why[1024];

	if (json_get_string(h, "error"))
		printf("HISTORY UNREADABLE: %s\n", shown(h, "error", why, sizeof(why)));
	if (!json_object_object_get_ex(h, "installs", &installs) ||
	    json_object_array_length(installs) == 0) {
		printf("No installs recorded.\n");
		return;
	}
	printf("%-20s  %-12s %-4s %-9s %8s %8s %6s %6s  %s\n", "STARTED (UTC)", "VERSION", "SLOT",
	       "RESULT", "FETCHED", "WRITTEN", "ERASES", "TIME", "SOURCE");
	for (size_t i = 0; i < json_object_array_length(installs); i++)
		print_entry(json_object_array_get_idx(installs, i));
}

static int parse(struct cli_ctx *ctx, int argc, char **argv, struct history_args *a)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "config", required_argument, NULL, 'c' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "offline", no_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "s:", opts, NULL)) >= 0) {
		switch (c) {
		case 's': a->sock = optarg; break;
		case 'c': a->config = optarg; break;
		case 'd': a->state_dir = optarg; a->offline = true; break;
		case 'o': a->offline = true; break;
		default: return CLI_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		cli_error(ctx, "history takes no operands");
		return CLI_EXIT_USAGE;
	}
	return CLI_EXIT_OK;
}

/* The state dir's history, when no daemon answers (or --offline). */
static int history_offline(struct cli_ctx *ctx, const struct history_args *a,
			   const struct conf *conf, struct json_object **ret)
{
	const char *dir = a->state_dir ? a->state_dir : conf->state_dir;
	int r = proto_history(dir, NULL, ret);

	if (!a->offline && !ctx->quiet && !ctx->json)
		cli_error(ctx, "no flashd answers: the history as %s has it", dir);
	if (r < 0) {
		cli_error(ctx, "history of %s: %s", dir, strerror(-r));
		return CLI_EXIT_FAIL;
	}
	return CLI_EXIT_OK;
}

static int history_cmd(struct cli_ctx *ctx, int argc, char **argv)
{
	struct history_args a = { 0 };
	_cleanup_(conf_freep) struct conf *conf = NULL;
	_cleanup_client_ struct client *c = NULL;
	_cleanup_json_ struct json_object *res = NULL;
	struct error err = {};
	int r = parse(ctx, argc, argv, &a);

	if (r)
		return r;
	if (conf_new(&conf) < 0)
		return CLI_EXIT_FAIL;
	/* an unreadable flashd.conf (a user without rights) matters offline
	 * only: the daemon at the default socket answers all the same */
	r = conf_load(conf, a.config ? a.config : CONF_DEFAULT_PATH, !a.config, &err);
	if (!a.offline && client_connect(cli_socket_path(a.sock, conf->socket), &c) >= 0) {
		r = client_call_simple(c, "io.flashd.GetHistory", NULL, &res);
		if (r < 0)
			return cli_call_failed(ctx, c, r, "history");
	} else if (r < 0) {
		cli_error(ctx, "%s", error_message(&err));
		return CLI_EXIT_INVALID;
	} else if ((r = history_offline(ctx, &a, conf, &res))) {
		return r;
	}
	if (ctx->json)
		cli_print_json(json_object_get(res));
	else if (!ctx->quiet)
		print_history(res);
	return CLI_EXIT_OK;
}

int cli_history(struct cli_ctx *ctx, int argc, char **argv)
{
	return history_cmd(ctx, argc, argv);
}
