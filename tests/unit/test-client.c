/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Round trips over a real AF_UNIX socket: a proto server on sd-event in a
 * thread, the synchronous client (and raw sockets) in the test thread.
 * Covers GetInfo, GetInterfaceDescription, streaming replies, fd passing,
 * asynchronous replies, disconnect detection, pipelining, oversized
 * messages, peer-credential authorization and proto_listen(). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "cleanup_json.h"
#include "client.h"
#include "proto.h"
#include "proto_flashd.h"
#include "proto-test-helpers.h"
#include "testlib.h"

struct srv {
	char dir[64];
	char path[128];
	int listen_fd;
	int stop_fd;       /* eventfd: the test asks the loop to exit */
	int disconnect_fd; /* eventfd: the server saw a client leave mid-call */
	atomic_int disconnects;
	pthread_t thread;
	struct proto_call *held;
	int start_result;
};

static struct srv srv;

/* ---- server side (runs in the server thread) ---- */

static int m_rollback(struct proto_call *call, struct json_object *params, void *userdata)
{
	for (int i = 0; i < 3; i++) {
		_cleanup_json_ struct json_object *p = json_object_new_object();

		json_object_object_add(p, "percent", json_object_new_int(i * 33));
		proto_reply_more(call, p);
	}
	_cleanup_json_ struct json_object *r = json_object_new_object();
	json_object_object_add(r, "slot", json_object_new_string("A"));
	return proto_reply(call, r);
}

static int m_install(struct proto_call *call, struct json_object *params, void *userdata)
{
	_cleanup_json_ struct json_object *r = json_object_new_object();
	_cleanup_close_ int fd = -1;
	struct json_object *v;
	char buf[256];
	ssize_t n;

	if (!json_object_object_get_ex(params, "fd", &v) || !v)
		return proto_error_invalid_parameter(call, "fd");
	fd = proto_call_take_fd(call, json_object_get_int(v));
	if (fd < 0)
		return proto_error_invalid_parameter(call, "fd");
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	for (int i = 1; i <= 3; i++) {
		_cleanup_json_ struct json_object *p = json_object_new_object();

		json_object_object_add(p, "bytes_done", json_object_new_int(n * i / 3));
		json_object_object_add(p, "bytes_total", json_object_new_int(n));
		proto_reply_more(call, p);
	}
	json_object_object_add(r, "content", json_object_new_string(buf));
	json_object_object_add(r, "n_fds", json_object_new_int(proto_call_n_fds(call)));
	return proto_reply(call, r);
}

static void on_disconnect(struct proto_call *call, void *userdata)
{
	struct srv *s = userdata;

	atomic_fetch_add(&s->disconnects, 1);
	s->held = proto_call_unref(s->held);
	(void) eventfd_write(s->disconnect_fd, 1);
}

static int m_activate(struct proto_call *call, struct json_object *params, void *userdata)
{
	struct srv *s = userdata;

	s->held = proto_call_ref(call); /* never answered: waits for the client to leave */
	proto_call_set_disconnect_handler(call, on_disconnect, s);
	return 0;
}

static int m_set_env(struct proto_call *call, struct json_object *params, void *userdata)
{
	_cleanup_json_ struct json_object *p = json_object_new_object();
	struct json_object *name;

	json_object_object_get_ex(params, "name", &name);
	json_object_object_add(p, "name", json_object_get(name));
	json_object_object_add(p, "reason", json_object_new_string("protected"));
	return proto_error(call, PROTO_ERROR_ENV_REFUSED, p);
}

static int timer_reply(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct proto_call *call = userdata;
	_cleanup_json_ struct json_object *r = json_object_new_object();

	json_object_object_add(r, "booted", json_object_new_string("B"));
	proto_reply(call, r);
	proto_call_unref(call);
	sd_event_source_disable_unref(src);
	return 0;
}

static sd_event *server_event; /* the server thread's loop */

/* Answers 20 ms later, from a timer: an asynchronous reply. */
static int m_get_status_async(struct proto_call *call, struct json_object *params,
			      void *userdata)
{
	int r = sd_event_add_time_relative(server_event, NULL, CLOCK_MONOTONIC, 20 * 1000, 0,
					   timer_reply, proto_call_ref(call));

	if (r < 0) {
		proto_call_unref(call);
		return r;
	}
	return 0;
}

static int m_mark_good(struct proto_call *call, struct json_object *params, void *userdata)
{
	return proto_reply(call, NULL);
}

static const proto_method_fn handlers[_PROTO_FLASHD_METHOD_MAX] = {
	[PROTO_FLASHD_GET_STATUS] = m_get_status_async,
	[PROTO_FLASHD_INSTALL] = m_install,
	[PROTO_FLASHD_ACTIVATE] = m_activate,
	[PROTO_FLASHD_SET_ENV] = m_set_env,
	[PROTO_FLASHD_MARK_GOOD] = m_mark_good,
};

static int on_stop(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	return sd_event_exit(sd_event_source_get_event(src), 0);
}

static void *server_thread(void *arg)
{
	struct srv *s = arg;
	struct proto_server *server = NULL;
	sd_event_source *stop_src = NULL;
	sd_event *e = NULL;

	s->start_result = sd_event_new(&e);
	if (s->start_result < 0)
		return NULL;
	server_event = e;
	s->start_result = proto_server_new(e, s->listen_fd, test_methods, s, &server);
	/* the io.flashd methods that change state need rights: a test not run
	 * by root has them through its group */
	if (s->start_result >= 0 && geteuid() != 0)
		proto_server_set_auth_group(server, getegid());
	if (s->start_result >= 0)
		s->start_result = sd_event_add_io(e, &stop_src, s->stop_fd, EPOLLIN, on_stop, NULL);
	if (s->start_result >= 0)
		sd_event_loop(e);
	sd_event_source_disable_unref(stop_src);
	proto_server_free(server);
	s->held = proto_call_unref(s->held);
	sd_event_unref(e);
	return NULL;
}

static int setup(void **state)
{
	memset(&srv, 0, sizeof(srv));
	snprintf(srv.dir, sizeof(srv.dir), "/tmp/flashd-test-client.XXXXXX");
	if (!mkdtemp(srv.dir))
		return -1;
	chmod(srv.dir, 0755);
	snprintf(srv.path, sizeof(srv.path), "%s/run/flashd/io.flashd", srv.dir);
	if (proto_listen(srv.path, &srv.listen_fd) < 0)
		return -1;
	srv.stop_fd = eventfd(0, EFD_CLOEXEC);
	srv.disconnect_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (pthread_create(&srv.thread, NULL, server_thread, &srv) != 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void) eventfd_write(srv.stop_fd, 1);
	pthread_join(srv.thread, NULL);
	close(srv.stop_fd);
	close(srv.disconnect_fd);
	testlib_rm_rf(srv.dir);
	return 0;
}

static struct client *connect_client(void)
{
	struct client *c = NULL;

	assert_int_equal(client_connect(srv.path, &c), 0);
	client_set_timeout(c, 10 * 1000000ULL);
	return c;
}

/* ---- tests ---- */

TEST(test_get_info)
{
	_cleanup_client_ struct client *c = connect_client();
	_cleanup_json_ struct json_object *r = NULL;
	struct json_object *v;

	assert_int_equal(srv.start_result, 0);
	assert_int_equal(client_call_simple(c, "org.varlink.service.GetInfo", NULL, &r), 0);
	assert_true(json_object_object_get_ex(r, "vendor", &v));
	assert_string_equal(json_object_get_string(v), "flashd");
	assert_true(json_object_object_get_ex(r, "version", &v));
	assert_string_equal(json_object_get_string(v), PACKAGE_VERSION);
	assert_true(json_object_object_get_ex(r, "interfaces", &v));
	assert_int_equal(json_object_array_length(v), 3);
	assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 1)), "io.flashd");
	assert_null(client_error_name(c));
}

TEST(test_get_interface_description)
{
	_cleanup_client_ struct client *c = connect_client();
	_cleanup_json_ struct json_object *r = NULL, *p = json_object_new_object();
	struct json_object *v;

	/* the "unix:" address form works too */
	client_free(c);
	{
		char addr[160];

		snprintf(addr, sizeof(addr), "unix:%s", srv.path);
		assert_int_equal(client_connect(addr, &c), 0);
	}
	json_object_object_add(p, "interface", json_object_new_string("io.flashd"));
	assert_int_equal(client_call_simple(c, "org.varlink.service.GetInterfaceDescription", p, &r), 0);
	assert_true(json_object_object_get_ex(r, "description", &v));
	{
		_cleanup_free_ char *idl = NULL;

		assert_int_equal(proto_flashd_description(&idl), 0);
		assert_string_equal(json_object_get_string(v), idl);
	}

	json_object_put(r);
	r = NULL;
	json_object_object_add(p, "interface", json_object_new_string("org.example.nope"));
	assert_int_equal(client_call_simple(c, "org.varlink.service.GetInterfaceDescription", p, &r),
			 -EOPNOTSUPP);
	assert_null(r);
	assert_string_equal(client_error_name(c), PROTO_ERROR_INTERFACE_NOT_FOUND);
}

struct collect {
	int n_continues;
	int n_final;
	int percent[8];
	char last_error[128];
};

static int collect_cb(struct client *c, struct json_object *params, const char *error,
		      bool continues, void *userdata)
{
	struct collect *col = userdata;
	struct json_object *v;

	if (error)
		snprintf(col->last_error, sizeof(col->last_error), "%s", error);
	if (continues) {
		if (col->n_continues < 8 && json_object_object_get_ex(params, "percent", &v))
			col->percent[col->n_continues] = json_object_get_int(v);
		col->n_continues++;
	} else {
		col->n_final++;
	}
	return 0;
}

TEST(test_streaming)
{
	_cleanup_client_ struct client *c = connect_client();
	struct collect col = { 0 };

	assert_int_equal(client_call(c, TEST_INTERFACE ".Stream", NULL, CLIENT_MORE, collect_cb, &col), 0);
	assert_int_equal(col.n_continues, 3);
	assert_int_equal(col.n_final, 1);
	assert_int_equal(col.percent[0], 0);
	assert_int_equal(col.percent[1], 33);
	assert_int_equal(col.percent[2], 66);

	/* without "more": ExpectedMore, and the connection stays usable */
	memset(&col, 0, sizeof(col));
	assert_int_equal(client_call(c, TEST_INTERFACE ".Stream", NULL, 0, collect_cb, &col), -EOPNOTSUPP);
	assert_string_equal(col.last_error, PROTO_ERROR_EXPECTED_MORE);
	assert_int_equal(col.n_final, 1);
	assert_int_equal(client_call(c, TEST_INTERFACE ".Stream", NULL, CLIENT_MORE, NULL, NULL), 0);
}

static int install_cb(struct client *c, struct json_object *params, const char *error,
		      bool continues, void *userdata)
{
	struct json_object **final = userdata, *v;

	if (continues) {
		assert_true(json_object_object_get_ex(params, "bytes_total", &v));
		assert_int_equal(json_object_get_int(v), 11);
	} else {
		*final = json_object_get(params);
	}
	return 0;
}

TEST(test_fd_passing)
{
	_cleanup_client_ struct client *c = connect_client();
	_cleanup_json_ struct json_object *final = NULL, *p = json_object_new_object();
	char tmpl[] = "/tmp/flashd-bundle.XXXXXX";
	_cleanup_close_ int fd = mkstemp(tmpl);
	_cleanup_close_ int other = open("/dev/null", O_RDONLY | O_CLOEXEC);
	struct json_object *v;

	assert_true(fd >= 0);
	unlink(tmpl);
	assert_int_equal(write(fd, "bundle-data", 11), 11);
	/* two fds: the bundle is the second, named by index */
	assert_int_equal(client_push_fd(c, other), 0);
	assert_int_equal(client_push_fd(c, fd), 1);
	json_object_object_add(p, "fd", json_object_new_int(1));
	assert_int_equal(client_call(c, "io.flashd.Install", p, CLIENT_MORE, install_cb, &final), 0);
	assert_non_null(final);
	assert_true(json_object_object_get_ex(final, "content", &v));
	assert_string_equal(json_object_get_string(v), "bundle-data");
	assert_true(json_object_object_get_ex(final, "n_fds", &v));
	assert_int_equal(json_object_get_int(v), 2);

	/* fds are for one call only: the next has none */
	json_object_put(final);
	final = NULL;
	json_object_object_add(p, "fd", json_object_new_int(0));
	assert_int_equal(client_call(c, "io.flashd.Install", p, CLIENT_MORE, install_cb, &final),
			 -EINVAL);
	assert_string_equal(client_error_name(c), PROTO_ERROR_INVALID_PARAMETER);
}

TEST(test_error_reply)
{
	_cleanup_client_ struct client *c = connect_client();
	_cleanup_json_ struct json_object *p = json_object_new_object();
	char buf[256];

	json_object_object_add(p, "name", json_object_new_string("BOOT_ORDER"));
	assert_int_equal(client_call(c, "io.flashd.SetEnv", p, 0, NULL, NULL), -EPERM);
	assert_string_equal(client_error_name(c), PROTO_ERROR_ENV_REFUSED);
	client_error_message(c, buf, sizeof(buf));
	assert_string_equal(buf, "environment change refused (name: BOOT_ORDER, reason: protected)"
			    " [io.flashd.EnvRefused]");

	assert_int_equal(client_call(c, "io.flashd.Explode", NULL, 0, NULL, NULL), -EOPNOTSUPP);
	assert_string_equal(client_error_name(c), PROTO_ERROR_METHOD_NOT_FOUND);
	assert_string_equal(client_error_message(c, buf, sizeof(buf)),
			    "the daemon does not know this method (method: io.flashd.Explode)"
			    " [org.varlink.service.MethodNotFound]");
	/* a successful call clears the error */
	assert_int_equal(client_call(c, TEST_INTERFACE ".Stream", NULL, CLIENT_MORE, NULL, NULL), 0);
	assert_null(client_error_name(c));
}

TEST(test_async_reply_and_oneway)
{
	_cleanup_client_ struct client *c = connect_client();
	_cleanup_json_ struct json_object *r = NULL;
	struct json_object *v;

	assert_int_equal(client_call(c, "io.flashd.MarkGood", NULL, CLIENT_ONEWAY, NULL, NULL), 0);
	assert_int_equal(client_call_simple(c, "io.flashd.GetStatus", NULL, &r), 0);
	assert_true(json_object_object_get_ex(r, "booted", &v));
	assert_string_equal(json_object_get_string(v), "B");
}

TEST(test_disconnect_mid_call)
{
	struct client *c = connect_client();
	_cleanup_json_ struct json_object *p = json_object_new_object();
	struct pollfd pfd = { .fd = srv.disconnect_fd, .events = POLLIN };

	json_object_object_add(p, "slot", json_object_new_string("B"));
	client_set_timeout(c, 200 * 1000);
	assert_int_equal(client_call(c, "io.flashd.Activate", p, 0, NULL, NULL), -ETIMEDOUT);
	assert_int_equal(atomic_load(&srv.disconnects), 0);
	/* the connection is not reused after a timeout */
	assert_int_equal(client_call(c, "io.flashd.GetStatus", NULL, 0, NULL, NULL), -ENOTCONN);
	client_free(c);
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	assert_int_equal(atomic_load(&srv.disconnects), 1);
}

static int raw_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	strcpy(sa.sun_path, srv.path);
	assert_int_equal(connect(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
	return fd;
}

/* Read until n NUL-terminated messages or EOF; returns the bytes read. */
static size_t raw_read(int fd, char *buf, size_t len, int n)
{
	size_t got = 0;

	while (got < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t k;
		int nuls = 0;

		for (size_t i = 0; i < got; i++)
			nuls += buf[i] == 0;
		if (nuls >= n)
			break;
		assert_int_equal(poll(&p, 1, 5000), 1);
		k = read(fd, buf + got, len - got);
		assert_true(k >= 0);
		if (k == 0)
			break;
		got += k;
	}
	return got;
}

/* Two calls in one write; the first is answered asynchronously, yet the
 * replies come in call order. */
TEST(test_pipelined_raw)
{
	static const char calls[] = "{\"method\":\"io.flashd.GetStatus\"}\0"
				    "{\"method\":\"org.varlink.service.GetInfo\"}";
	_cleanup_close_ int fd = raw_connect();
	char buf[4096];
	size_t n;

	assert_int_equal(write(fd, calls, sizeof(calls)), (ssize_t) sizeof(calls));
	n = raw_read(fd, buf, sizeof(buf), 2);
	assert_true(n > 0 && buf[n - 1] == 0);
	assert_string_equal(buf, "{\"parameters\":{\"booted\":\"B\"}}");
	assert_non_null(strstr(buf + strlen(buf) + 1, "\"vendor\":\"flashd\""));
}

TEST(test_oversized_raw)
{
	_cleanup_close_ int fd = raw_connect();
	size_t len = PROTO_MAX_MESSAGE + 4096;
	_cleanup_free_ char *big = malloc(len);
	char buf[512];
	size_t n, sent = 0;

	assert_non_null(big);
	memset(big, 'a', len);
	while (sent < len) {
		ssize_t k = send(fd, big + sent, len - sent, MSG_NOSIGNAL);

		if (k < 0)
			break; /* the server may close before all is sent */
		sent += k;
	}
	n = raw_read(fd, buf, sizeof(buf), 1);
	assert_true(n > 0);
	assert_non_null(strstr(buf, "\"error\":\"io.flashd.ProtocolError\""));
	assert_non_null(strstr(buf, "longer than 1 MiB"));
	/* then the server closes the connection */
	n = raw_read(fd, buf, sizeof(buf), 1);
	assert_int_equal(n, 0);
}

/* SO_PEERCRED: an unprivileged process is refused state-changing methods
 * but may read. */
TEST(test_permission_denied)
{
	pid_t pid;
	int status;

	if (geteuid() != 0) {
		print_message("not root: cannot switch to an unprivileged user, skipped\n");
		skip();
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct client *c = NULL;
		int r;

		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(10);
		if (client_connect(srv.path, &c) < 0)
			_exit(11);
		r = client_call(c, "io.flashd.MarkGood", NULL, 0, NULL, NULL);
		if (r != -EACCES || strcmp(client_error_name(c), PROTO_ERROR_PERMISSION_DENIED))
			_exit(12);
		if (client_call(c, "org.varlink.service.GetInfo", NULL, 0, NULL, NULL) != 0)
			_exit(13);
		client_free(c);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* root is allowed */
	_cleanup_client_ struct client *c = connect_client();
	assert_int_equal(client_call(c, "io.flashd.MarkGood", NULL, 0, NULL, NULL), 0);
}

TEST(test_listen)
{
	char path[192], file[192];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd = -1, s;

	/* a live server at the path: refused */
	assert_int_equal(proto_listen(srv.path, &fd), -EADDRINUSE);
	assert_int_equal(fd, -1);
	assert_int_equal(stat(srv.path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0666);
	snprintf(path, sizeof(path), "%s/run/flashd", srv.dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0755);

	/* a stale socket (its server died): replaced */
	snprintf(path, sizeof(path), "%s/stale.sock", srv.dir);
	strcpy(sa.sun_path, path);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(s, (struct sockaddr *) &sa, sizeof(sa)), 0);
	close(s);
	assert_int_equal(proto_listen(path, &fd), 0);
	assert_true(fd >= 0);
	close(fd);

	/* not a socket: left alone */
	snprintf(file, sizeof(file), "%s/file", srv.dir);
	close(open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
	assert_int_equal(proto_listen(file, &fd), -EEXIST);
	assert_int_equal(proto_listen("relative/path", &fd), -EINVAL);

	/* nobody listens: the client says so */
	struct client *c = NULL;
	assert_int_equal(client_connect(path, &c), -ECONNREFUSED);
	snprintf(path, sizeof(path), "%s/none.sock", srv.dir);
	assert_int_equal(client_connect(path, &c), -ENOENT);
	assert_null(c);
}

/* Socket activation: the fd at SD_LISTEN_FDS_START, checked to be a
 * listening AF_UNIX stream socket. Run in a child: it rearranges fd 3. */
static int activated_child(int kind)
{
	int fd, r;

	if (kind == 0) {
		unsetenv("LISTEN_FDS");
		return proto_listen_activated(&fd) == 0 ? 0 : 20;
	}
	if (kind == 1) {
		char path[192];

		snprintf(path, sizeof(path), "%s/activated.sock", srv.dir);
		if (proto_listen(path, &fd) < 0 || dup2(fd, 3) != 3)
			return 21;
	} else {
		fd = open("/dev/null", O_RDONLY);
		if (fd < 0 || dup2(fd, 3) != 3)
			return 22;
	}
	{
		char pid[32];

		snprintf(pid, sizeof(pid), "%d", (int) getpid());
		setenv("LISTEN_PID", pid, 1);
		setenv("LISTEN_FDS", "1", 1);
	}
	fd = -1;
	r = proto_listen_activated(&fd);
	if (kind == 1)
		return r == 1 && fd == 3 && (fcntl(3, F_GETFL) & O_NONBLOCK) && !getenv("LISTEN_FDS") ? 0 : 23;
	return r == -EINVAL && fd == -1 ? 0 : 24;
}

TEST(test_listen_activated)
{
	for (int kind = 0; kind < 3; kind++) {
		pid_t pid = fork();
		int status;

		assert_true(pid >= 0);
		if (pid == 0)
			_exit(activated_child(kind));
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	(void) state;
}

TEST(test_error_to_errno)
{
	_cleanup_json_ struct json_object *p = json_object_new_object();

	assert_int_equal(client_error_to_errno(PROTO_ERROR_BUSY, NULL), -EBUSY);
	assert_int_equal(client_error_to_errno(PROTO_ERROR_PERMISSION_DENIED, NULL), -EACCES);
	assert_int_equal(client_error_to_errno(PROTO_ERROR_CANCELLED, NULL), -ECANCELED);
	assert_int_equal(client_error_to_errno("com.example.Weird", NULL), -EREMOTEIO);
	json_object_object_add(p, "errno", json_object_new_int(ENOSPC));
	assert_int_equal(client_error_to_errno(PROTO_ERROR_INTERNAL, p), -ENOSPC);
	(void) state;
}


/* m_install's final reply says what it read (content, n_fds): declared
 * here, since the dispatcher refuses a field the method does not declare. */
static const struct proto_param install_test_reply[] = {
	{ "bytes_done", PROTO_TYPE_INT, true, 0, NULL, false },
	{ "bytes_total", PROTO_TYPE_INT, true, 0, NULL, false },
	{ "content", PROTO_TYPE_STRING, true, 0, NULL, false },
	{ "n_fds", PROTO_TYPE_INT, true, 0, NULL, false },
	{ NULL },
};

static int group_setup(void **state)
{
	/* the io.flashd table with the handlers above, Stream = m_rollback */
	test_methods_bind(handlers, m_rollback);
	test_methods[PROTO_FLASHD_INSTALL].reply = install_test_reply;
	return setup(state);
}

TEST_GROUP(group_setup, teardown);
