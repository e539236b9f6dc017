// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_libs.h"
#include "yamltree.h"

static void node_clear(struct ynode *n)
{
	unsigned i;

	for (i = 0; i < n->nr_children; i++)
		node_clear(&n->children[i]);
	free(n->children);
	free(n->scalar);
	free(n->key);
}

void ytree_free(struct ynode *n)
{
	if (!n)
		return;
	node_clear(n);
	free(n);
}

static struct ynode *add_child(struct ynode *parent)
{
	struct ynode *c = realloc(parent->children, (parent->nr_children + 1) * sizeof(*c));

	if (!c)
		return NULL;
	parent->children = c;
	c = &c[parent->nr_children++];
	memset(c, 0, sizeof(*c));
	return c;
}

/* Parse one node whose first event is `ev` (consumed by the caller's yaml_event_delete). */
static int parse_node(yaml_parser_t *p, yaml_event_t *ev, struct ynode *n)
{
	yaml_event_t e;
	int err = 0;

	n->line = ev->start_mark.line + 1;
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		n->type = YNODE_SCALAR;
		n->scalar = strndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
		return n->scalar ? 0 : -ENOMEM;
	case YAML_ALIAS_EVENT:
		n->type = YNODE_SCALAR;
		n->scalar = strdup("");
		return n->scalar ? 0 : -ENOMEM;
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		n->type = ev->type == YAML_SEQUENCE_START_EVENT ? YNODE_SEQ : YNODE_MAP;
		for (;;) {
			char *key = NULL;
			struct ynode *c;

			if (!sym_yaml_parser_parse(p, &e))
				return -EINVAL;
			if (e.type == YAML_SEQUENCE_END_EVENT || e.type == YAML_MAPPING_END_EVENT) {
				sym_yaml_event_delete(&e);
				return 0;
			}
			if (n->type == YNODE_MAP) {
				if (e.type != YAML_SCALAR_EVENT) {
					sym_yaml_event_delete(&e);
					return -EINVAL;
				}
				key = strndup((const char *)e.data.scalar.value, e.data.scalar.length);
				sym_yaml_event_delete(&e);
				if (!key || !sym_yaml_parser_parse(p, &e)) {
					free(key);
					return key ? -EINVAL : -ENOMEM;
				}
			}
			c = add_child(n);
			if (!c) {
				free(key);
				sym_yaml_event_delete(&e);
				return -ENOMEM;
			}
			c->key = key;
			err = parse_node(p, &e, c);
			sym_yaml_event_delete(&e);
			if (err)
				return err;
		}
	default:
		return -EINVAL;
	}
}

struct ynode *ytree_load(const char *path)
{
	struct ynode *root = NULL;
	yaml_parser_t p;
	yaml_event_t e;
	FILE *f;
	int err = -EINVAL;

	if (lazylib_load(&lib_yaml))
		return NULL;
	f = fopen(path, "r");
	if (!f)
		return NULL;
	if (!sym_yaml_parser_initialize(&p)) {
		fclose(f);
		return NULL;
	}
	sym_yaml_parser_set_input_file(&p, f);
	root = calloc(1, sizeof(*root));
	if (!root)
		goto out;
	root->type = YNODE_MAP;	/* an empty document is an empty map */
	for (;;) {
		if (!sym_yaml_parser_parse(&p, &e))
			goto out;
		if (e.type == YAML_STREAM_END_EVENT || e.type == YAML_DOCUMENT_END_EVENT) {
			sym_yaml_event_delete(&e);
			err = 0;
			break;
		}
		if (e.type == YAML_MAPPING_START_EVENT || e.type == YAML_SEQUENCE_START_EVENT ||
		    e.type == YAML_SCALAR_EVENT) {
			err = parse_node(&p, &e, root);
			sym_yaml_event_delete(&e);
			if (err)
				goto out;
			continue;
		}
		sym_yaml_event_delete(&e);
	}
out:
	sym_yaml_parser_delete(&p);
	fclose(f);
	if (err) {
		ytree_free(root);
		return NULL;
	}
	return root;
}

const struct ynode *ytree_get(const struct ynode *n, const char *key)
{
	unsigned i;

	if (!n || n->type != YNODE_MAP)
		return NULL;
	for (i = 0; i < n->nr_children; i++)
		if (!strcmp(n->children[i].key, key))
			return &n->children[i];
	return NULL;
}

const struct ynode *ytree_item(const struct ynode *n, unsigned i)
{
	if (!n || n->type != YNODE_SEQ || i >= n->nr_children)
		return NULL;
	return &n->children[i];
}
