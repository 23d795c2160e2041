#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Check Varlink replies against the interface descriptions a service serves.

An independent Varlink IDL parser and type checker for the flashd tests: it
shares no code with the daemon (whose method table is tested against the
IDL by test-proto-idl), so it sees the protocol as any client does.

Usage:
  varlink-idl.py check IDL... --log REPLIES
  varlink-idl.py parse IDL...

IDL is a file holding either the interface text or a reply of
org.varlink.service.GetInterfaceDescription (as varlink-call.py prints it).
REPLIES has one JSON object a line, {"method": "io.flashd.Install",
"reply": {...}}, as varlink-call.py and flashctl's client write them when
FLASHD_TEST_REPLY_LOG names the file; "method" is null when the client
did not know it (varlink-call.py --raw).

Every reply is checked: its "parameters" against the method's output, or,
for an error, the error's name against the errors of its interface and
its parameters against the error's; field names (no unknown field, every
non-nullable field present), types (bool, int, float, string, object),
nullable ?T, arrays []T, maps [string]T, named and anonymous structs and
enums. Exit status: 0 every reply conforms, 1 violations (each printed),
2 usage or a description that does not parse.
"""
import json
import re
import sys

TOKEN = re.compile(r"\s+|#[^\n]*|->|\[\]|\[string\]|[A-Za-z_][A-Za-z0-9_.]*|[(),:?]")
BASIC = ("bool", "int", "float", "string", "object")


class IDLError(Exception):
    pass


def tokenize(text):
    pos, out = 0, []
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            line = text.count("\n", 0, pos) + 1
            raise IDLError(f"line {line}: unexpected {text[pos:pos + 20]!r}")
        tok = m.group(0)
        if not tok.isspace() and not tok.startswith("#"):
            out.append(tok)
        pos = m.end()
    return out


class Parser:
    """Recursive descent over the grammar of varlink.org's IDL."""

    def __init__(self, text):
        self.toks = tokenize(text)
        self.i = 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, want=None):
        tok = self.peek()
        if tok is None or (want is not None and tok != want):
            raise IDLError(f"expected {want or 'more'}, found {tok!r} (token {self.i})")
        self.i += 1
        return tok

    def name(self):
        tok = self.take()
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", tok):
            raise IDLError(f"expected a name, found {tok!r}")
        return tok

    def vtype(self):
        tok = self.peek()
        if tok == "?":
            self.take()
            return ("nullable", self.vtype())
        if tok == "[]":
            self.take()
            return ("array", self.vtype())
        if tok == "[string]":
            self.take()
            return ("map", self.vtype())
        if tok == "(":
            return self.struct_or_enum()
        tok = self.name()
        return ("basic", tok) if tok in BASIC else ("named", tok)

    def struct_or_enum(self):
        """( ) is an empty struct; (a, b) an enum; (a: T, ...) a struct."""
        self.take("(")
        if self.peek() == ")":
            self.take()
            return ("struct", {})
        first = self.name()
        if self.peek() != ":":
            values = [first]
            while self.peek() == ",":
                self.take()
                values.append(self.name())
            self.take(")")
            return ("enum", values)
        fields = {}
        name = first
        while True:
            self.take(":")
            if name in fields:
                raise IDLError(f"field {name} declared twice")
            fields[name] = self.vtype()
            if self.peek() != ",":
                break
            self.take()
            name = self.name()
        self.take(")")
        return ("struct", fields)

    def interface(self):
        self.take("interface")
        iface = {"name": self.take(), "types": {}, "methods": {}, "errors": {}}
        while self.peek() is not None:
            kw = self.take()
            if kw == "type":
                name = self.name()
                iface["types"][name] = self.struct_or_enum()
            elif kw == "method":
                name = self.name()
                inp = self.struct_or_enum()
                self.take("->")
                iface["methods"][name] = (inp, self.struct_or_enum())
            elif kw == "error":
                name = self.name()
                iface["errors"][name] = self.struct_or_enum()
            else:
                raise IDLError(f"expected type, method or error, found {kw!r}")
        for kind, t in list(iface["types"].items()):
            if t[0] not in ("struct", "enum"):
                raise IDLError(f"type {kind} is neither a struct nor an enum")
        return iface


def load_idl(path):
    with open(path) as f:
        text = f.read()
    try:
        reply = json.loads(text)
        text = reply["parameters"]["description"]
    except (ValueError, KeyError, TypeError):
        pass
    try:
        return Parser(text).interface()
    except IDLError as e:
        raise IDLError(f"{path}: {e}")


def describe(t):
    kind = t[0]
    if kind == "nullable":
        return "?" + describe(t[1])
    if kind == "array":
        return "[]" + describe(t[1])
    if kind == "map":
        return "[string]" + describe(t[1])
    if kind == "enum":
        return "(" + ", ".join(t[1]) + ")"
    if kind == "struct":
        return "(" + ", ".join(f"{k}: {describe(v)}" for k, v in t[1].items()) + ")"
    return t[1]


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


BASIC_CHECK = {
    "bool": lambda v: isinstance(v, bool),
    "int": is_int,
    "float": lambda v: is_int(v) or isinstance(v, float),
    "string": lambda v: isinstance(v, str),
    "object": lambda v: isinstance(v, dict),
}


def check(iface, t, v, path, out):
    """Append to out one message per way v is not of type t."""
    kind = t[0]
    if kind == "nullable":
        if v is not None:
            check(iface, t[1], v, path, out)
        return
    if v is None:
        out.append(f"{path}: null, but {describe(t)} is not nullable")
    elif kind == "basic":
        if not BASIC_CHECK[t[1]](v):
            out.append(f"{path}: {json.dumps(v)[:60]} is not {t[1]}")
    elif kind == "named":
        if t[1] not in iface["types"]:
            out.append(f"{path}: type {t[1]} is not declared")
        else:
            check(iface, iface["types"][t[1]], v, path, out)
    elif kind == "array":
        if not isinstance(v, list):
            out.append(f"{path}: not an array ({describe(t)})")
        else:
            for i, e in enumerate(v):
                check(iface, t[1], e, f"{path}[{i}]", out)
    elif kind == "map":
        if not isinstance(v, dict):
            out.append(f"{path}: not a map ({describe(t)})")
        else:
            for k, e in v.items():
                check(iface, t[1], e, f"{path}[{k!r}]", out)
    elif kind == "enum":
        if v not in t[1]:
            out.append(f"{path}: {json.dumps(v)[:60]} is not one of {describe(t)}")
    else:
        check_struct(iface, t[1], v, path, out)


def check_struct(iface, fields, v, path, out):
    if not isinstance(v, dict):
        out.append(f"{path}: not an object")
        return
    for k in v:
        if k not in fields:
            out.append(f"{path}.{k}: not declared (declared: {', '.join(fields) or 'none'})")
    for k, t in fields.items():
        if k in v:
            check(iface, t, v[k], f"{path}.{k}", out)
        elif t[0] != "nullable":
            out.append(f"{path}.{k}: missing, but {describe(t)} is not nullable")


def split_name(qualified):
    iface, _, member = (qualified or "").rpartition(".")
    return iface, member


def check_reply(ifaces, method, reply):
    """The violations of one reply to a call of method (None: unknown)."""
    out = []
    if not isinstance(reply, dict):
        return ["the reply is not an object"]
    for k in reply:
        if k not in ("parameters", "continues", "error"):
            out.append(f"reply.{k}: not a Varlink reply key")
    if "continues" in reply and not isinstance(reply["continues"], bool):
        out.append("reply.continues: not bool")
    params = reply.get("parameters", {})
    error = reply.get("error")
    if error is not None:
        iname, ename = split_name(error) if isinstance(error, str) else ("", "")
        iface = ifaces.get(iname)
        if iface is None:
            out.append(f"error {error!r}: no interface {iname!r} was described")
        elif ename not in iface["errors"]:
            out.append(f"error {error}: not declared by {iname}")
        else:
            check_struct(iface, iface["errors"][ename][1], params, error, out)
        return out
    if method is None:
        return out
    iname, mname = split_name(method)
    iface = ifaces.get(iname)
    if iface is None or mname not in iface["methods"]:
        out.append(f"{method}: answered without an error, but it is not declared")
        return out
    check_struct(iface, iface["methods"][mname][1][1], params, f"{method} reply", out)
    return out


def cmd_check(idls, log):
    ifaces = {}
    for path in idls:
        iface = load_idl(path)
        ifaces[iface["name"]] = iface
    bad = total = 0
    seen = {}  # each distinct problem once, with its count and first line
    with open(log, errors="replace") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            total += 1
            try:
                entry = json.loads(line)
                problems = check_reply(ifaces, entry.get("method"), entry.get("reply"))
            except (ValueError, AttributeError) as e:
                problems = [f"not a log entry: {e}"]
                entry = {}
            if problems:
                bad += 1
            for p in problems:
                key = f"{entry.get('method')}: {p}"
                first, count = seen.get(key, (n, 0))
                seen[key] = (first, count + 1)
    for key, (first, count) in seen.items():
        times = f" ({count} replies)" if count > 1 else ""
        print(f"{log}:{first}: {key}{times}")
    print(f"varlink-idl: {total - bad} of {total} replies conform to "
          f"{', '.join(sorted(ifaces))}", file=sys.stderr)
    return 1 if bad else 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "parse":
        for path in argv[1:]:
            iface = load_idl(path)
            print(f"{iface['name']}: {len(iface['types'])} types, "
                  f"{len(iface['methods'])} methods, {len(iface['errors'])} errors")
        return 0
    if len(argv) >= 4 and argv[0] == "check" and argv[-2] == "--log":
        return cmd_check(argv[1:-2], argv[-1])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (IDLError, OSError) as e:
        print(f"varlink-idl: {e}", file=sys.stderr)
        sys.exit(2)
