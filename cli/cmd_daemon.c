/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flashctl commands that talk to the running flashd over its Varlink
 * socket: status, install, cancel, overlay. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/stat.h>

#include "cleanup_json.h"
#include "cli.h"
#include "client.h"
#include "proto.h"
#include "source_http.h"
#include "paths.h"
#include "util.h"

const char *cli_socket_path(const char *opt, const char *dflt)
{
	const char *env = getenv("FLASHD_SOCKET");

	return opt ? opt : env && *env ? env : dflt ? dflt : paths_socket;
}

static int connect_daemon(struct cli_ctx *ctx, const char *sock, struct client **ret)
{
	int r = client_connect(sock, ret);

	if (r < 0)
		cli_error(ctx, "cannot reach flashd at %s: %s (is it running? 'systemctl start "
			  "flashd', or pass --socket / set FLASHD_SOCKET)", sock, strerror(-r));
	return r;
}

/* Exit code (cli_exit_code) and one message for a failed call. */
int cli_call_failed(struct cli_ctx *ctx, struct client *c, int r, const char *what)
{
	char buf[512];
	const char *name = client_error_name(c);

	if (!name)
		cli_error(ctx, "%s: %s", what, strerror(-r));
	else
		cli_error(ctx, "%s: %s", what, client_error_message(c, buf, sizeof(buf)));
	return cli_exit_code(name, r);
}

static const struct option sock_opts[] = {
	{ "socket", required_argument, NULL, 's' },
	{ NULL, 0, NULL, 0 },
};

/* Parse just --socket; returns the index of the first operand or -1. */
static int parse_sock(struct cli_ctx *ctx, int argc, char **argv, const char **sock)
{
	int c;

	while ((c = getopt_long(argc, argv, "s:", sock_opts, NULL)) >= 0) {
		if (c != 's')
			return -1;
		*sock = optarg;
	}
	return optind;
}

/* ---- status ---- */

static void print_time(const char *label, int64_t t)
{
	char buf[64];

	printf("%s%s", label, cli_time(buf, sizeof(buf), t, false));
}

static void print_slots(struct json_object *st)
{
	struct json_object *slots = json_get_object(st, "slots");

	printf("Slots:\n");
	for (size_t i = 0; slots && i < json_object_array_length(slots); i++) {
		struct json_object *s = json_object_array_get_idx(slots, i);
		int64_t prio = json_get_int(s, "priority");
		char pr[24] = "-";
		if (prio >= 0)
			snprintf(pr, sizeof(pr), "%" PRId64, prio + 1);
		printf("  %-2s %-12s %-11s version %-12s tries %" PRId64 "  boot order %s%s\n",
		       json_str(s, "name"), json_str(s, "partition"), json_str(s, "state"),
		       json_str(s, "version"), json_get_int(s, "tries_left"), pr,
		       json_get_bool(s, "booted") ? "  [booted]" : "");
		if (json_get_string(s, "health"))
			printf("     health check %s\n", json_str(s, "health"));
	}
}

static void print_flash(struct json_object *st)
{
	struct json_object *fl = json_get_object(st, "flash");
	char size[32];

	printf("Flash:\n");
	for (size_t i = 0; fl && i < json_object_array_length(fl); i++) {
		struct json_object *p = json_object_array_get_idx(fl, i);
		printf("  %-18s %-4s %10s  bad blocks %" PRId64, json_str(p, "name"), json_str(p, "type"),
		       util_format_size(json_get_int(p, "size"), size, sizeof(size)), json_get_int(p, "bad_blocks"));
		if (json_get_int(p, "ecc_corrected") >= 0)
			printf("  ECC corrected %" PRId64 " failed %" PRId64, json_get_int(p, "ecc_corrected"),
			       json_get_int(p, "ecc_failed"));
		printf("\n");
	}
}

/* Only an unreadable env, a malformed variable or a dead copy is worth a
 * line: they change what boots, and what a power cut can do. */
static void print_env(struct json_object *st)
{
	struct json_object *env = json_get_object(st, "env"), *copies = env ? json_get_object(env, "copies") : NULL;
	struct json_object *bad = env ? json_get_object(env, "malformed") : NULL;

	for (size_t i = 0; bad && i < json_object_array_length(bad); i++) {
		struct json_object *b = json_object_array_get_idx(bad, i);
		printf("MALFORMED:    %s='%s': %s\n", json_str(b, "name"), json_str(b, "value"),
		       json_str(b, "effect"));
	}
	if (env && json_get_string(env, "dead_copy"))
		printf("U-Boot env:   copy %s DEAD (%s): its block is bad or fails to erase/program; "
		       "stores go to the other copy in place (a power cut during one can lose the "
		       "env), and U-Boot's saveenv fails (the boot script boots only slots recorded "
		       "good, docs/boot-contract.md): replace the env partition's block or move the "
		       "env\n", json_str(env, "dead_copy"), json_str(env, "device"));
	if (!env || json_get_bool(env, "readable"))
		return;
	printf("U-Boot env:   UNREADABLE (%s):", json_str(env, "device"));
	for (size_t i = 0; copies && i < json_object_array_length(copies); i++) {
		struct json_object *c = json_object_array_get_idx(copies, i);
		printf(" copy %zu %s%s%s", i + 1, json_str(c, "state"), json_get_string(c, "error") ? " " : "",
		       json_get_string(c, "error") ? json_str(c, "error") : "");
	}
	printf("\n              %s\n", json_str(env, "next_boot"));
}

/* Every layer flashd boot mounted; a fallback of any one must show. */
static void print_layers(struct json_object *ov, const char *indent)
{
	struct json_object *ls = json_get_object(ov, "layers");

	for (size_t i = 0; ls && i < json_object_array_length(ls); i++) {
		struct json_object *l = json_object_array_get_idx(ls, i);

		printf("%s%-8s %s", indent, json_str(l, "path"), json_str(l, "state"));
		if (json_get_string(l, "fstype"))
			printf(" (%s%s%s)", json_str(l, "fstype"), json_get_string(l, "partition") ? " on " : "",
			       json_get_string(l, "partition") ? json_str(l, "partition") : "");
		if (json_get_bool(l, "fallback"))
			printf(", FALLBACK: %s", json_get_string(l, "fallback_reason") ?
			       json_str(l, "fallback_reason") : "changes are lost at reboot");
		if (json_get_string(l, "generation_error"))
			printf(", generation: %s", json_str(l, "generation_error"));
		printf("\n");
	}
	if (json_get_bool(ov, "degraded"))
		printf("%sDEGRADED: a layer is not what the layout asks for (see above)\n", indent);
}

static void print_status(struct json_object *st)
{
	struct json_object *li = json_get_object(st, "last_install"), *ov = json_get_object(st, "overlay"), *pr;

	printf("Board:        %s (compatible %s)\n", json_str(st, "board"), json_str(st, "compatible"));
	printf("Layout:       %s\n", json_str(st, "layout"));
	printf("Booted slot:  %s%s%s\n", json_get_string(st, "booted") ? json_str(st, "booted") : "unknown",
	       json_get_bool(st, "on_trial") ? ", on trial (not yet marked good)" : "",
	       json_get_bool(st, "fell_back") ? ", FELL BACK (the bootloader skipped the primary slot)" : "");
	printf("Next boot:    %s%s%s\n", json_get_string(st, "next_boot") ? json_str(st, "next_boot") :
	       "none (BOOT_ORDER names no slot: the bootloader resets forever)",
	       json_get_bool(st, "next_after_reset") ? " (after the bootloader resets the counters)" : "",
	       json_get_bool(st, "switch_pending") ? " (not the booted slot: a reboot switches to it)" : "");
	if (json_get_string(st, "booted_unknown"))
		printf("BOOTED SLOT UNKNOWN: %s; no slot is written until it is known (installs "
		       "are refused)\n", json_str(st, "booted_unknown"));
	if (json_get_bool(st, "degraded"))
		printf("DEGRADED:     the next boot runs a slot that failed its health check: no "
		       "other verified slot can boot; install a new image\n");
	print_slots(st);
	if (json_get_string(st, "installing_elsewhere"))
		printf("Install:      the slot installing is being installed by another process: "
		       "%s\n", json_str(st, "installing_elsewhere"));
	print_env(st);
	if (li) {
		/* a worker that died early left no version (or slot) */
		printf("Last install: version %s into slot %s: %s",
		       json_get_string(li, "version") ? json_str(li, "version") : "unknown (the bundle was not read)",
		       json_get_string(li, "slot") ? json_str(li, "slot") : "unknown", json_str(li, "result"));
		print_time(", finished ", json_get_int(li, "finished"));
		/* no running_version: the kept manifest did not verify */
		if (json_get_string(li, "downgrade"))
			printf("\n              DOWNGRADE from version %s (%s)",
			       json_get_string(li, "running_version") ? json_str(li, "running_version") :
			       "unverified", json_str(li, "downgrade"));
		if (json_get_string(li, "reason"))
			printf("\n              %s", json_str(li, "reason"));
		if (json_get_string(li, "record_error"))
			printf("\n              RECORD NOT SAVED: %s", json_str(li, "record_error"));
		printf("\n");
	} else {
		printf("Last install: none\n");
	}
	printf("Overlay:      %s", json_str(ov, "state"));
	if (json_get_string(ov, "fstype"))
		printf(" (%s on %s)", json_str(ov, "fstype"), json_str(ov, "partition"));
	if (json_get_string(ov, "fstype") && !json_get_bool(ov, "rename_whiteout"))
		printf(", no RENAME_WHITEOUT: renaming files of the root image fails");
	if (!strcmp(json_str(ov, "state"), "reset_pending"))
		printf("\n              all local changes are erased at the next boot (take it "
		       "back: 'flashctl overlay reset --cancel')");
	printf("\n");
	print_layers(ov, "              ");
	print_flash(st);
	printf("Unsigned bundles: %s\n", json_get_bool(st, "allow_unsigned") ? "ACCEPTED (allow-unsigned=yes)" :
	       "refused");
	if (json_get_string(st, "operation")) {
		pr = json_get_object(st, "progress");
		printf("Operation:    %s", json_str(st, "operation"));
		if (pr)
			printf(" %" PRId64 "%% (%s)", json_get_int(pr, "percent"), json_str(pr, "step"));
		printf("\n");
	}
}

/* Every string of o made printable (util_printable), for the human
 * output: the daemon's replies carry what servers and bundles said (JSON
 * output escapes them itself). */
const char *cli_time(char *buf, size_t n, int64_t t, bool utc)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if ((int64_t)tt != t || !(utc ? gmtime_r(&tt, &tm) : localtime_r(&tt, &tm)) ||
	    !(utc ? strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm) :
		    strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm)))
		snprintf(buf, n, "-");
	return buf;
}

void cli_printable_json(struct json_object *o)
{
	char shown[1024];

	switch (json_object_get_type(o)) {
	case json_type_string:
		util_printable(json_object_get_string(o), shown, sizeof(shown));
		if (strcmp(shown, json_object_get_string(o)))
			json_object_set_string(o, shown);
		break;
	case json_type_object: {
		json_object_object_foreach(o, k, v) {
			(void)k;
			cli_printable_json(v);
		}
		break;
	}
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(o); i++)
			cli_printable_json(json_object_array_get_idx(o, i));
		break;
	default:
		break;
	}
}

/* A call without parameters: [--socket PATH], then the answer as JSON or
 * through print. what names the call in an error. */
static int simple_call(struct cli_ctx *ctx, int argc, char **argv, const char *method,
		       const char *what, void (*print)(struct json_object *))
{
	_cleanup_(client_freep) struct client *c = NULL;
	_cleanup_json_ struct json_object *res = NULL;
	const char *sock = NULL;
	int r, i = parse_sock(ctx, argc, argv, &sock);

	if (i < 0 || i != argc)
		return CLI_EXIT_USAGE;
	r = connect_daemon(ctx, cli_socket_path(sock, NULL), &c);
	if (r < 0)
		return cli_exit_code(NULL, r);
	r = client_call_simple(c, method, NULL, &res);
	if (r < 0)
		return cli_call_failed(ctx, c, r, what);
	if (ctx->json) {
		cli_print_json(json_object_get(res));
	} else {
		cli_printable_json(res);
		print(res);
	}
	return CLI_EXIT_OK;
}

static int status_cmd(struct cli_ctx *ctx, int argc, char **argv)
{
	return simple_call(ctx, argc, argv, "io.flashd.GetStatus", "status", print_status);
}

/* ---- install ---- */

#define URL_FILE_MAX 8192

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	interrupted = 1;
}

struct install_ui {
	struct cli_ctx *ctx;
	const char *sock;
	bool tty;
	bool cancel_sent;
	bool written;         /* a progress report showed payload on flash */
	bool no_activate;
	char last_step[32];
	int last_percent;
};

static void send_cancel(struct install_ui *ui)
{
	_cleanup_(client_freep) struct client *c = NULL;
	_cleanup_json_ struct json_object *res = NULL;

	ui->cancel_sent = true;
	fprintf(stderr, "\nflashctl: cancelling the install...\n");
	if (client_connect(ui->sock, &c) >= 0)
		client_call_simple(c, "io.flashd.Cancel", NULL, &res);
}

static void draw_bar(struct install_ui *ui, struct json_object *p)
{
	int64_t pct = json_get_int(p, "percent");
	const char *step = json_str(p, "step");
	char done[32], total[32], dl[48] = "";
	int width = 30, fill = (int)(pct * width / 100);

	/* a URL: what crossed the network beside what went to flash */
	if (json_get_object(p, "bytes_downloaded")) {
		memcpy(dl, " downloaded ", 12);
		util_format_size(json_get_int(p, "bytes_downloaded") & ~1023LL, dl + 12, sizeof(dl) - 12);
	}
	if (ui->tty) {
		fprintf(stderr, "\r%-8s [%.*s%*s] %3" PRId64 "%%  %s / %s%s  %-8s", step, fill,
			"##############################", width - fill, "", pct,
			util_format_size(json_get_int(p, "bytes_done") & ~1023LL, done, sizeof(done)),
			util_format_size(json_get_int(p, "bytes_total") & ~1023LL, total, sizeof(total)), dl,
			json_str(p, "image"));
		fflush(stderr);
	} else if (strcmp(step, ui->last_step) || pct / 10 != ui->last_percent / 10) {
		fprintf(stderr, "%s %" PRId64 "%% slot %s%s%s%s\n", step, pct, json_str(p, "slot"),
			json_get_string(p, "image") ? " image " : "",
			json_get_string(p, "image") ? json_str(p, "image") : "", dl);
	}
	snprintf(ui->last_step, sizeof(ui->last_step), "%s", step);
	ui->last_percent = (int)pct;
}

static int install_reply(struct client *c, struct json_object *params, const char *error,
			 bool continues, void *userdata)
{
	struct install_ui *ui = userdata;

	if (interrupted && !ui->cancel_sent)
		send_cancel(ui);
	if (error)
		return 0;
	if (json_get_int(params, "bytes_done") > 0)
		ui->written = true;
	if (ui->ctx->json) {
		/* JSON lines: one per progress step, the result last */
		printf("%s\n", json_object_to_json_string_ext(params, JSON_C_TO_STRING_PLAIN |
							     JSON_C_TO_STRING_NOSLASHESCAPE));
		fflush(stdout);
		return 0;
	}
	if (ui->ctx->quiet)
		return 0;
	cli_printable_json(params);
	draw_bar(ui, params);
	if (!continues) {
		if (ui->tty)
			fputc('\n', stderr);
		if (ui->no_activate)
			printf("Installed version %s into slot %s, verified, not activated: "
			       "'flashctl slot activate %s' makes it boot next.\n",
			       json_str(params, "version"), json_str(params, "slot"), json_str(params, "slot"));
		else
			printf("Installed version %s into slot %s; it boots next (on trial until "
			       "marked good).\n", json_str(params, "version"), json_str(params, "slot"));
	}
	return 0;
}

/* A bundle is a regular file, or standard input ("-": a pipe is fine).
 * Anything else (a directory, a device, a FIFO) is refused here, before
 * the daemon is asked: nothing is written and the env stays as it is. */
static int open_bundle(struct cli_ctx *ctx, const char *file)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (!strcmp(file, "-")) {
		fd = dup(STDIN_FILENO);
		return fd < 0 ? -errno : TAKE_FD(fd);
	}
	fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		int r = -errno;
		cli_error(ctx, "cannot open bundle %s: %s", file, strerror(-r));
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		cli_error(ctx, "bundle %s is not a regular file (%s); give a bundle file, or - to "
			  "stream one from standard input. Nothing was installed, the env is "
			  "unchanged", file, S_ISDIR(st.st_mode) ? "a directory" :
			  S_ISFIFO(st.st_mode) ? "a FIFO" : "a device or socket");
		return -EINVAL;
	}
	if (fcntl(fd, F_SETFL, 0) < 0)
		return -errno;
	return TAKE_FD(fd);
}

/* --url-file FILE|-: the URL is the first line of FILE or of standard
 * input, so that a user:password@ or a token in its query stays out of
 * argv, which every local user reads in ps. */
static int read_url_file(struct cli_ctx *ctx, const char *path, char **ret)
{
	_cleanup_free_ char *buf = NULL;
	int r = util_read_file(strcmp(path, "-") ? path : "/dev/stdin", URL_FILE_MAX, &buf, NULL);

	if (r < 0) {
		cli_error(ctx, "cannot read the URL from %s: %s", path,
			  r == -EFBIG ? "more than 8 KiB" : strerror(-r));
		return r;
	}
	buf[strcspn(buf, "\r\n")] = '\0';
	*ret = TAKE_PTR(buf);
	return 0;
}

/* A URL given in argv with credentials or a query (a signed URL's token):
 * say where else it can come from. */
static void warn_url_secrets(struct cli_ctx *ctx, const char *url)
{
	const char *auth = strstr(url, "://") + 3;
	size_t len = strcspn(auth, "/?#");

	if (memchr(auth, '@', len) || strchr(auth + len, '?'))
		cli_error(ctx, "warning: every local user can read this URL's user:password@ or "
			  "query in the process list while flashctl runs; give the URL with "
			  "--url-file FILE (or - for standard input), or the credentials in "
			  "flashd.conf's netrc-file=");
}

static int install_cmd(struct cli_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "slot", required_argument, NULL, 'S' },
		{ "no-activate", no_argument, NULL, 'n' },
		{ "url-file", required_argument, NULL, 'u' },
		{ "allow-downgrade", no_argument, NULL, 'D' },
		{ NULL, 0, NULL, 0 },
	};
	_cleanup_free_ char *url = NULL;
	_cleanup_(source_http_url_done) struct source_http_url parsed = {};
	const char *url_file = NULL;
	bool is_url;
	_cleanup_(client_freep) struct client *c = NULL;
	_cleanup_json_ struct json_object *params = json_object_new_object();
	_cleanup_close_ int fd = -1;
	struct install_ui ui = { .ctx = ctx, .last_percent = -100 };
	struct sigaction sa = { .sa_handler = on_sigint };
	const char *sock = NULL, *file;
	struct error err = {};
	int opt, idx, r;

	while ((opt = getopt_long(argc, argv, "s:", opts, NULL)) >= 0) {
		switch (opt) {
		case 's': sock = optarg; break;
		case 'S': json_object_object_add(params, "slot", json_object_new_string(optarg)); break;
		case 'n':
			json_object_object_add(params, "activate", json_object_new_boolean(false));
			ui.no_activate = true;
			break;
		case 'u': url_file = optarg; break;
		case 'D':
			json_object_object_add(params, "allow_downgrade",
					       json_object_new_boolean(true));
			break;
		default: return CLI_EXIT_USAGE;
		}
	}
	if (optind + !url_file != argc) {
		cli_error(ctx, "install takes one bundle file, an http(s) URL, or - for standard "
			  "input; or --url-file FILE and nothing more");
		return CLI_EXIT_USAGE;
	}
	if (url_file && read_url_file(ctx, url_file, &url) < 0)
		return CLI_EXIT_USAGE;
	file = url ? url : argv[optind];
	is_url = source_http_is_url(file);
	if (url_file && !is_url) {
		cli_error(ctx, "%s does not hold a URL", url_file);
		return CLI_EXIT_USAGE;
	}
	if (!url && is_url)
		warn_url_secrets(ctx, file);
	if (is_url) {
		/* the daemon's worker downloads it, with the daemon's TLS settings */
		if (source_http_url_parse(file, &parsed, &err) < 0) {
			cli_error(ctx, "%s; nothing was installed, the env is unchanged",
				  error_message(&err));
			return CLI_EXIT_USAGE;
		}
		json_object_object_add(params, "url", json_object_new_string(parsed.url));
	} else {
		/* the daemon reads the bundle straight from this fd: no copy is made */
		fd = open_bundle(ctx, file);
		if (fd < 0)
			return fd == -EINVAL ? CLI_EXIT_INVALID : CLI_EXIT_FAIL;
	}
	ui.sock = cli_socket_path(sock, NULL);
	r = connect_daemon(ctx, ui.sock, &c);
	if (r < 0)
		return cli_exit_code(NULL, r);
	client_set_timeout(c, 0); /* progress keeps coming; a slow flash is no error */
	if (fd >= 0) {
		idx = client_push_fd(c, fd);
		if (idx < 0) {
			cli_error(ctx, "cannot pass the bundle: %s", strerror(-idx));
			return CLI_EXIT_FAIL;
		}
		json_object_object_add(params, "fd", json_object_new_int(idx));
	}
	ui.tty = isatty(STDERR_FILENO);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	r = client_call(c, "io.flashd.Install", params, CLIENT_MORE, install_reply, &ui);
	if (ui.tty && !ctx->json)
		fputc('\n', stderr);
	if (r == -ECANCELED) {
		/* progress comes about once per percent: without one that showed
		 * bytes on flash, writing may or may not have begun */
		if (ui.written)
			cli_error(ctx, "install cancelled: the target slot stays marked bad, the "
				  "booted slot is untouched");
		else
			cli_error(ctx, "install cancelled: the booted slot is untouched; the target "
				  "slot is left marked bad if writing had begun ('flashctl status' "
				  "shows it)");
		return CLI_EXIT_FAIL;
	}
	if (r < 0)
		return cli_call_failed(ctx, c, r, "install failed");
	return CLI_EXIT_OK;
}

static void print_cancel(struct json_object *res)
{
	printf(json_get_bool(res, "cancelled") ? "Install cancelled.\n" : "Nothing to cancel.\n");
}

static void print_overlay(struct json_object *res)
{
	struct json_object *ov = json_get_object(res, "overlay");

	printf("Overlay: %s\n", json_str(ov, "state"));
	if (json_get_string(ov, "fstype"))
		printf("  %s on %s\n", json_str(ov, "fstype"), json_str(ov, "partition"));
	if (!strcmp(json_str(ov, "state"), "reset_pending"))
		printf("  all local changes are erased at the next boot (take it back: "
		       "'flashctl overlay reset --cancel')\n");
	if (!strcmp(json_str(ov, "state"), "tmpfs"))
		printf("  WARNING: changes are kept in RAM only and lost at reboot\n");
	print_layers(ov, "  ");
}

static int cancel_cmd(struct cli_ctx *ctx, int argc, char **argv)
{
	return simple_call(ctx, argc, argv, "io.flashd.Cancel", "Cancel", print_cancel);
}

static int overlay_status_cmd(struct cli_ctx *ctx, int argc, char **argv)
{
	return simple_call(ctx, argc, argv, "io.flashd.OverlayStatus", "OverlayStatus", print_overlay);
}

int cli_status(struct cli_ctx *ctx, int argc, char **argv)
{
	return status_cmd(ctx, argc, argv);
}

int cli_install(struct cli_ctx *ctx, int argc, char **argv)
{
	return install_cmd(ctx, argc, argv);
}

int cli_cancel(struct cli_ctx *ctx, int argc, char **argv)
{
	return cancel_cmd(ctx, argc, argv);
}

const struct cli_cmd cli_overlay_cmds[] = {
	{ "status", "[--socket PATH]", "state of the writable overlay", overlay_status_cmd, NULL },
	{ "reset", "[--yes] [--cancel] [--socket PATH] " CLI_OVERLAY_RESET_USAGE,
	  "erase all local changes at the next boot (factory reset; asks on a terminal); "
	  "--cancel takes a pending reset back", cli_overlay_reset, NULL },
	{ NULL },
};
