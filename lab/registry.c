/* SPDX-License-Identifier: MIT */
/*
 * lab/registry.c - the algorithm table, generated from lab/registry.def.
 *
 * Each LAB_ALG line declares its ops object (`extern const struct lab_<opstype>_ops sym;` — an
 * incomplete struct type is enough to take its address) and becomes one lab_alg entry. LAB_MISSING
 * lines become entries with ops == NULL and the reason they are missing.
 */
#include <string.h>

#include "lab.h"

#define LAB_ALG(family, name, opstype, sym, desc) extern const struct lab_##opstype##_ops sym;
#define LAB_MISSING(family, name, desc, why)
#include "registry.def"
#undef LAB_ALG
#undef LAB_MISSING

const struct lab_alg lab_registry[] = {
#define LAB_ALG(family, name, opstype, sym, desc) { #family, #name, #opstype, &sym, desc, NULL },
#define LAB_MISSING(family, name, desc, why) { #family, #name, "lock", NULL, desc, why },
#include "registry.def"
#undef LAB_ALG
#undef LAB_MISSING
	{ NULL, NULL, NULL, NULL, NULL, NULL },
};

const size_t lab_registry_len = sizeof(lab_registry) / sizeof(lab_registry[0]) - 1;

static bool family_in(const char *families, const char *family)
{
	size_t n = strlen(family);
	const char *p = families;

	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == n && strncmp(p, family, n) == 0)
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

const struct lab_alg *lab_find(const char *families, const char *name)
{
	for (size_t i = 0; i < lab_registry_len; i++) {
		const struct lab_alg *a = &lab_registry[i];

		if (strcmp(a->name, name) == 0 && (!families || family_in(families, a->family)))
			return a;
	}
	return NULL;
}
