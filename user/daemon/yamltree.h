/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A YAML document as a small tree with line numbers (libyaml's parser events). libcyaml
 * loads the typed configuration; this tree gives what its schemas cannot: the line of
 * any value (for errors found after loading) and free-form maps (labels).
 */
#ifndef PTBPF_DAEMON_YAMLTREE_H
#define PTBPF_DAEMON_YAMLTREE_H

enum ynode_type { YNODE_SCALAR, YNODE_MAP, YNODE_SEQ };

struct ynode {
	enum ynode_type type;
	int line;			/* 1-based */
	char *scalar;			/* YNODE_SCALAR */
	char *key;			/* in a map: this value's key */
	struct ynode *children;		/* map values (with key) or sequence items */
	unsigned nr_children;
};

/* Parse `path`; NULL on error (libcyaml reports syntax errors first, with the line). */
struct ynode *ytree_load(const char *path);
void ytree_free(struct ynode *n);
/* The value of `key` in map `n`, or NULL. */
const struct ynode *ytree_get(const struct ynode *n, const char *key);
/* Item `i` of sequence `n`, or NULL. */
const struct ynode *ytree_item(const struct ynode *n, unsigned i);

#endif /* PTBPF_DAEMON_YAMLTREE_H */
