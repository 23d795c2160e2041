/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The io.flashd IDL: what the binary carries is the source, its syntax, and
 * the one table (proto_flashd.c) against it: methods, parameters, input
 * structs, replies, errors. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "proto-fixture.h"
#include "testlib.h"

/* ---- the IDL ---- */

/* A small parser of the Varlink interface definition language (no varlink
 * tooling is packaged for Debian 12): checks the syntax and collects the
 * input parameters of each method. */
struct idl_field {
	char name[32];
	char type[32]; /* the outermost type word, e.g. "string", "[]", "Slot", "enum" */
	char elem[32]; /* of "[]" and "[string]": the element's type word */
	bool nullable;
};

#define IDL_MAX_FIELDS 32
struct idl_type {
	char name[32];
	struct idl_field fields[IDL_MAX_FIELDS];
	unsigned n_fields;
};

struct idl {
	const char *p;
	char err[160];
	struct idl_type types[16];
	unsigned n_types;
	bool was_enum; /* the last "(...)" parsed was an enum */
	char refs[64][32];
	unsigned n_refs;
	char errors[32][32];
	unsigned n_errors;
};

static void idl_skip(struct idl *x)
{
	for (;;) {
		while (isspace((unsigned char) *x->p))
			x->p++;
		if (*x->p != '#')
			return;
		while (*x->p && *x->p != '\n')
			x->p++;
	}
}

static bool idl_word(struct idl *x, char *buf, size_t len)
{
	size_t n = 0;

	idl_skip(x);
	while (isalnum((unsigned char) x->p[n]) || x->p[n] == '_' || x->p[n] == '.')
		n++;
	if (n == 0 || n >= len)
		return false;
	memcpy(buf, x->p, n);
	buf[n] = 0;
	x->p += n;
	return true;
}

static bool idl_tok(struct idl *x, const char *t)
{
	idl_skip(x);
	if (strncmp(x->p, t, strlen(t)))
		return false;
	x->p += strlen(t);
	return true;
}

static bool field_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!islower((unsigned char) s[0]) || s[n - 1] == '_')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(isalnum((unsigned char) s[i]) || s[i] == '_'))
			return false;
	return true;
}

static bool type_name_ok(const char *s)
{
	if (!isupper((unsigned char) s[0]))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char) *s))
			return false;
	return true;
}

static bool idl_struct(struct idl *x, struct idl_field *fields, unsigned *n_fields);

static bool idl_type(struct idl *x, struct idl_field *f)
{
	struct idl_field e = { 0 };
	bool map = false;
	char w[32];

	f->nullable = idl_tok(x, "?");
	if (idl_tok(x, "[]") || (map = idl_tok(x, "[string]"))) {
		snprintf(f->type, sizeof(f->type), "%s", map ? "[string]" : "[]");
		if (!idl_type(x, &e))
			return false;
		snprintf(f->elem, sizeof(f->elem), "%s", e.type);
		return true;
	}
	idl_skip(x);
	if (*x->p == '(') {
		if (!idl_struct(x, NULL, NULL))
			return false;
		snprintf(f->type, sizeof(f->type), "%s", x->was_enum ? "enum" : "()");
		return true;
	}
	if (!idl_word(x, w, sizeof(w))) {
		snprintf(x->err, sizeof(x->err), "type expected near \"%.20s\"", x->p);
		return false;
	}
	snprintf(f->type, sizeof(f->type), "%s", w);
	if (!strcmp(w, "bool") || !strcmp(w, "int") || !strcmp(w, "float") ||
	    !strcmp(w, "string") || !strcmp(w, "object"))
		return true;
	if (!type_name_ok(w)) {
		snprintf(x->err, sizeof(x->err), "bad type name \"%s\"", w);
		return false;
	}
	if (x->n_refs < ELEMENTSOF(x->refs))
		snprintf(x->refs[x->n_refs++], 32, "%s", w);
	return true;
}

/* "(a: T, b: U)" or an enum "(x, y, z)" or "()" */
static bool idl_struct(struct idl *x, struct idl_field *fields, unsigned *n_fields)
{
	unsigned n = 0;
	int is_enum = -1;

	if (!idl_tok(x, "(")) {
		snprintf(x->err, sizeof(x->err), "'(' expected near \"%.20s\"", x->p);
		return false;
	}
	if (idl_tok(x, ")"))
		goto done;
	for (;;) {
		struct idl_field f = { 0 };

		if (!idl_word(x, f.name, sizeof(f.name)) || !field_name_ok(f.name)) {
			snprintf(x->err, sizeof(x->err), "bad field name near \"%.20s\"", x->p);
			return false;
		}
		if (idl_tok(x, ":")) {
			if (is_enum == 1 || !idl_type(x, &f))
				return false;
			is_enum = 0;
		} else {
			if (is_enum == 0) {
				snprintf(x->err, sizeof(x->err), "':' expected after \"%s\"", f.name);
				return false;
			}
			is_enum = 1;
		}
		if (fields && n < IDL_MAX_FIELDS)
			fields[n] = f;
		n++;
		if (idl_tok(x, ")"))
			break;
		if (!idl_tok(x, ",")) {
			snprintf(x->err, sizeof(x->err), "',' or ')' expected near \"%.20s\"", x->p);
			return false;
		}
	}
done:
	x->was_enum = is_enum == 1;
	if (n_fields)
		*n_fields = n;
	return true;
}

struct idl_method {
	char name[32];
	struct idl_field in[IDL_MAX_FIELDS];
	unsigned n_in;
	struct idl_field out[IDL_MAX_FIELDS];
	unsigned n_out;
};

/* Parse text; fill methods. Returns false with x->err set on a syntax error. */
static bool idl_parse(struct idl *x, const char *text, const char *iface,
		      struct idl_method *out, unsigned *n_methods)
{
	char w[32], name[32];

	x->p = text;
	*n_methods = 0;
	if (!idl_word(x, w, sizeof(w)) || strcmp(w, "interface") || !idl_word(x, name, sizeof(name)) ||
	    strcmp(name, iface)) {
		snprintf(x->err, sizeof(x->err), "does not start with 'interface %s'", iface);
		return false;
	}
	for (;;) {
		idl_skip(x);
		if (!*x->p)
			break;
		if (!idl_word(x, w, sizeof(w)) || !idl_word(x, name, sizeof(name)) ||
		    !type_name_ok(name)) {
			snprintf(x->err, sizeof(x->err), "member expected near \"%.20s\"", x->p);
			return false;
		}
		if (!strcmp(w, "type")) {
			struct idl_type *t = &x->types[x->n_types++];

			snprintf(t->name, sizeof(t->name), "%s", name);
			if (!idl_struct(x, t->fields, &t->n_fields))
				return false;
		} else if (!strcmp(w, "method")) {
			struct idl_method *m = &out[(*n_methods)++];

			snprintf(m->name, sizeof(m->name), "%s", name);
			if (!idl_struct(x, m->in, &m->n_in) || !idl_tok(x, "->") ||
			    !idl_struct(x, m->out, &m->n_out)) {
				if (!x->err[0])
					snprintf(x->err, sizeof(x->err), "method %s: '->' expected", name);
				return false;
			}
		} else if (!strcmp(w, "error")) {
			if (x->n_errors < ELEMENTSOF(x->errors))
				snprintf(x->errors[x->n_errors++], 32, "%s", name);
			if (!idl_struct(x, NULL, NULL))
				return false;
		} else {
			snprintf(x->err, sizeof(x->err), "unknown keyword \"%s\"", w);
			return false;
		}
	}
	for (unsigned i = 0; i < x->n_refs; i++) {
		bool found = false;

		for (unsigned k = 0; k < x->n_types; k++)
			found |= !strcmp(x->refs[i], x->types[k].name);
		if (!found) {
			snprintf(x->err, sizeof(x->err), "type %s is used but not defined", x->refs[i]);
			return false;
		}
	}
	return true;
}

/* What the binary carries, inflated, is the source file to the byte. */
TEST(test_idl_is_the_source)
{
	_cleanup_free_ char *src = NULL;
	size_t len;

	assert_int_equal(util_read_file(TOP_SRCDIR "/lib/varlink/io.flashd.varlink", 1 << 20,
					&src, &len), 0);
	assert_int_equal(strlen(flashd_idl()), len);
	assert_memory_equal(flashd_idl(), src, len);
}

TEST(test_idl_syntax)
{
	struct idl_method ms[32];
	unsigned n;
	struct idl x = { 0 };

	if (!idl_parse(&x, flashd_idl(), "io.flashd", ms, &n))
		fail_msg("io.flashd.varlink: %s", x.err);
	assert_int_equal(n, _PROTO_FLASHD_METHOD_MAX);
	memset(&x, 0, sizeof(x));
	if (!idl_parse(&x, proto_service_description, "org.varlink.service", ms, &n))
		fail_msg("org.varlink.service: %s", x.err);
	assert_int_equal(n, 2);

	/* the parser itself rejects what it should */
	memset(&x, 0, sizeof(x));
	assert_false(idl_parse(&x, "interface io.flashd\nmethod A(Bad: int) -> ()\n", "io.flashd", ms, &n));
	memset(&x, 0, sizeof(x));
	assert_false(idl_parse(&x, "interface io.flashd\nmethod A(x: Missing) -> ()\n", "io.flashd", ms, &n));
	memset(&x, 0, sizeof(x));
	assert_false(idl_parse(&x, "interface io.flashd\nmethod A(x: int)\n", "io.flashd", ms, &n));
	(void) state;
}

static const struct proto_method *table_method(const char *name)
{
	for (const struct proto_method *m = proto_flashd_methods; m->name; m++)
		if (!strcmp(m->name, name))
			return m;
	return NULL;
}

/* The size of the C type the dispatcher stores a parameter as. */
static size_t param_size(enum proto_type type)
{
	static const size_t sizes[_PROTO_TYPE_MAX] = {
		[PROTO_TYPE_BOOL] = sizeof(struct proto_bool),
		[PROTO_TYPE_INT] = sizeof(struct proto_int),
		[PROTO_TYPE_FLOAT] = sizeof(struct proto_float),
		[PROTO_TYPE_STRING] = sizeof(const char *),
		[PROTO_TYPE_OBJECT] = sizeof(struct json_object *),
		[PROTO_TYPE_ARRAY] = sizeof(struct json_object *),
	};
	return sizes[type];
}

/* A typed declaration: every field inside its struct, none overlapping
 * another. */
static void check_struct(const char *name, const char *what, const struct proto_param *t,
			 size_t size)
{
	for (unsigned k = 0; t[k].name; k++) {
		if (t[k].offset + param_size(t[k].type) > size)
			fail_msg("%s: %s field %s lies outside its struct", name, what, t[k].name);
		for (unsigned o = 0; o < k; o++)
			if (t[o].offset < t[k].offset + param_size(t[k].type) &&
			    t[k].offset < t[o].offset + param_size(t[o].type))
				fail_msg("%s: %s fields %s and %s overlap", name, what, t[o].name,
					 t[k].name);
	}
}

/* A method with parameters is filled into its input struct (input_size);
 * a method without takes no struct. A typed reply (reply_size) places its
 * fields in its reply struct. */
static void check_typed(const struct proto_method *m)
{
	const struct proto_param *t = m->params;

	if (!t || !t->name) {
		if (m->input_size)
			fail_msg("%s: no parameters but an input struct", m->name);
	} else if (!m->input_size) {
		fail_msg("%s: parameters without an input struct (typed dispatch)", m->name);
	} else {
		check_struct(m->name, "parameter", t, m->input_size);
	}
	if (m->reply_size)
		check_struct(m->name, "reply", m->reply, m->reply_size);
}

/* The table of the IDL type named w, NULL when w names none. */
static const struct proto_param *type_fields(const char *w)
{
	for (const struct proto_flashd_type *t = proto_flashd_types; t->name; t++)
		if (!strcmp(t->name, w))
			return t->fields;
	return NULL;
}

static enum proto_type type_of(const char *w)
{
	return !strcmp(w, "bool") ? PROTO_TYPE_BOOL : !strcmp(w, "int") ? PROTO_TYPE_INT :
	       !strcmp(w, "float") ? PROTO_TYPE_FLOAT :
	       !strcmp(w, "string") || !strcmp(w, "enum") ? PROTO_TYPE_STRING :
	       !strcmp(w, "[]") ? PROTO_TYPE_ARRAY : PROTO_TYPE_OBJECT;
}

/* What a field's value is looked into with: its named type's table (also
 * of an array's or a map's elements), a map's "*" entry of its element
 * type; nothing for a plain value. */
static void check_nested(const char *where, const struct idl_field *f, const struct proto_param *t)
{
	const char *w = f->elem[0] ? f->elem : f->type;
	const struct proto_param *want = type_fields(w);

	if (!strcmp(f->type, "[string]") && !want) {
		if (!t->fields || strcmp(t->fields[0].name, "*") || t->fields[1].name ||
		    t->fields[0].type != type_of(w) || !t->fields[0].required)
			fail_msg("%s: field %s is [string]%s: its fields must be one \"*\" of %s",
				 where, t->name, w, w);
		return;
	}
	if (t->fields != want)
		fail_msg("%s: field %s: the table %s the fields of %s", where, t->name,
			 t->fields ? "names other than" : "does not name", w);
}

/* A reply's or a type's fields: the table's are the IDL's, in order; a
 * named type or "[string]T" is an object, "[]T" an array, an enum a
 * string; required is the IDL's type without "?"; a nested type names
 * its type's table (check_nested()). */
static void check_fields(const char *where, const struct idl_field *fs, unsigned n,
			 const struct proto_param *t)
{
	unsigned k = 0;

	if (!t)
		fail_msg("%s: the table declares no fields", where);
	for (; t[k].name; k++) {
		const struct idl_field *f = &fs[k];

		if (k >= n)
			fail_msg("%s: the table has field %s, the IDL does not", where, t[k].name);
		if (strcmp(t[k].name, f->name) || t[k].type != type_of(f->type) ||
		    t[k].required == f->nullable)
			fail_msg("%s: field %u: table %s/%d/%s, IDL %s: %s%s", where, k, t[k].name,
				 t[k].type, t[k].required ? "required" : "optional", f->name,
				 f->nullable ? "?" : "", f->type);
		check_nested(where, f, &t[k]);
	}
	if (k != n)
		fail_msg("%s: the IDL has field %s, the table does not", where, fs[k].name);
}

/* One method: the table's parameters are the IDL's inputs, in order, with
 * the same type and the same optionality. */
static void check_params(const struct idl_method *im, const struct proto_param *t)
{
	static const char *const type_words[_PROTO_TYPE_MAX] = {
		[PROTO_TYPE_BOOL] = "bool", [PROTO_TYPE_INT] = "int",
		[PROTO_TYPE_FLOAT] = "float", [PROTO_TYPE_STRING] = "string",
		[PROTO_TYPE_OBJECT] = "object", [PROTO_TYPE_ARRAY] = "[]",
	};
	unsigned k = 0;

	for (; t && t[k].name; k++) {
		if (k >= im->n_in)
			fail_msg("%s: the table has parameter %s, the IDL does not", im->name,
				 t[k].name);
		if (strcmp(t[k].name, im->in[k].name) || strcmp(type_words[t[k].type], im->in[k].type) ||
		    t[k].required == im->in[k].nullable)
			fail_msg("%s: parameter %u: table %s/%s/%s, IDL %s: %s%s", im->name, k,
				 t[k].name, type_words[t[k].type], t[k].required ? "required" : "optional",
				 im->in[k].name, im->in[k].nullable ? "?" : "", im->in[k].type);
	}
	if (k != im->n_in)
		fail_msg("%s: the IDL has parameter %s, the table does not", im->name, im->in[k].name);
}

/* The one io.flashd table (proto_flashd.c) and the IDL name the same
 * methods with the same parameters. */
TEST(test_idl_matches_table)
{
	struct idl_method ms[32];
	struct idl x = { 0 };
	unsigned n;

	assert_true(idl_parse(&x, flashd_idl(), "io.flashd", ms, &n));
	for (unsigned i = 0; i < n; i++) {
		const struct proto_method *m = table_method(ms[i].name);

		if (!m)
			fail_msg("IDL method %s is not in the io.flashd table", ms[i].name);
		check_params(&ms[i], m->params);
		check_typed(m);
		check_fields(ms[i].name, ms[i].out, ms[i].n_out, m->reply);
	}
	for (const struct proto_method *m = proto_flashd_methods; m->name; m++) {
		bool found = false;

		assert_string_equal(m->interface, PROTO_FLASHD_INTERFACE);
		assert_null(m->handler);
		for (unsigned i = 0; i < n; i++)
			found |= !strcmp(ms[i].name, m->name);
		if (!found)
			fail_msg("table method %s is not in the IDL", m->name);
	}
	assert_int_equal(n, _PROTO_FLASHD_METHOD_MAX);
	(void) state;
}

/* The errors of the table module are the IDL's, both ways. */
TEST(test_idl_errors)
{
	struct idl_method ms[32];
	struct idl x = { 0 };
	unsigned n, n_table = 0;

	assert_true(idl_parse(&x, flashd_idl(), "io.flashd", ms, &n));
	for (const char *const *e = proto_flashd_errors; *e; e++, n_table++) {
		bool found = false;

		if (strncmp(*e, "io.flashd.", 10))
			fail_msg("%s is not an io.flashd error", *e);
		for (unsigned i = 0; i < x.n_errors; i++)
			found |= !strcmp(x.errors[i], *e + 10);
		if (!found)
			fail_msg("io.flashd.varlink does not define %s", *e);
	}
	for (unsigned i = 0; i < x.n_errors; i++) {
		bool found = false;

		for (const char *const *e = proto_flashd_errors; *e; e++)
			found |= !strcmp(x.errors[i], *e + 10);
		if (!found)
			fail_msg("IDL error %s is not in proto_flashd_errors", x.errors[i]);
	}
	assert_int_equal(n_table, x.n_errors);
	(void) state;
}

/* Every IDL type has one table (proto_flashd_types), with its fields at
 * every depth, and the table has no type the IDL lacks. */
TEST(test_idl_types)
{
	struct idl_method ms[32];
	struct idl x = { 0 };
	unsigned n, n_table = 0;

	assert_true(idl_parse(&x, flashd_idl(), "io.flashd", ms, &n));
	for (unsigned i = 0; i < x.n_types; i++) {
		const struct idl_type *it = &x.types[i];

		if (!type_fields(it->name))
			fail_msg("IDL type %s has no table in proto_flashd_types", it->name);
		check_fields(it->name, it->fields, it->n_fields, type_fields(it->name));
	}
	for (const struct proto_flashd_type *t = proto_flashd_types; t->name; t++, n_table++) {
		bool found = false;

		if (t->size)
			check_struct(t->name, "type", t->fields, t->size);

		for (unsigned i = 0; i < x.n_types; i++)
			found |= !strcmp(x.types[i].name, t->name);
		if (!found)
			fail_msg("table type %s is not in the IDL", t->name);
	}
	assert_int_equal(n_table, x.n_types);
	(void) state;
}
