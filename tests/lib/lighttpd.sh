# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# lighttpd's configuration for the network tests (tests/lib/http.sh) and the
# network benchmark (bench/guest-net.sh): sourced by both, defines only.

# lighttpd_conf DIR PORT LOG_FORMAT MODULES: the base of a lighttpd.conf
# serving DIR/www on 127.0.0.1:PORT, its error and access logs in DIR
# (access log lines in LOG_FORMAT); MODULES as server.modules lists them.
# The caller appends its $SERVER["socket"] blocks.
lighttpd_conf() {
	cat <<CONF
server.modules = ($4)
server.document-root = "$1/www"
server.bind = "127.0.0.1"
server.port = $2
server.errorlog = "$1/lighttpd.err"
accesslog.filename = "$1/access.log"
accesslog.format = "$3"
mimetype.assign = ("" => "application/octet-stream")
CONF
}
