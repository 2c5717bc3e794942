#!/usr/bin/env python3
# tests/tools/pvekeys-gen.py - generate agent/pvekeys.c, the compiled-in table of PVE
# guest parameter names that templates are checked against, one table per
# schema: PVE 9.1 (for PVE 9.x), PVE 8.4 (for 4.x to 8.x) and PVE 3.4's
# openvz, a row shared by the versions where it is the same. Run by hand
# from the repository root when a schema changes:
#   python3 tests/tools/pvekeys-gen.py ../shared/pve-api/pve8-apidata.json \
#       ../shared/pve-api/pve9-apidata.json \
#       ../shared/pve-api/pve3-openvz-apidata.generated.json > agent/pvekeys.c
# The schema files are not part of this repository. test_tmpl.c checks the
# table against each of them whenever it is present.
import json
import re
import sys

# Index ranges the schema does not state in its descriptions: the MAX_*
# constants of qemu-server 8.4 / pve-container 5.3 (see ENDPOINTS.md), the
# same in qemu-server 9 / pve-container 6.
SRC_MAX = {
    ("qemu", "hostpci"): 15, ("qemu", "ipconfig"): 31, ("qemu", "net"): 31,
    ("qemu", "numa"): 7, ("qemu", "unused"): 255, ("qemu", "usb"): 13,
    ("qemu", "virtiofs"): 9,
    ("lxc", "dev"): 255, ("lxc", "mp"): 255, ("lxc", "net"): 31,
    ("lxc", "unused"): 255,
}
METHODS = {
    "qemu": ("/nodes/{node}/qemu", "/nodes/{node}/qemu/{vmid}/config"),
    "lxc": ("/nodes/{node}/lxc", "/nodes/{node}/lxc/{vmid}/config"),
    "openvz": ("/nodes/{node}/openvz", "/nodes/{node}/openvz/{vmid}/config"),
}


def walk(nodes):
    for n in nodes:
        yield n
        yield from walk(n.get("children", []))


def load(path):
    text = open(path, encoding="utf-8").read()
    m = re.match(r"\s*(?:const|var)\s+\w+\s*=\s*", text)
    if m:
        text = text[m.end():].rstrip().rstrip(";")
    return {n["path"]: n for n in walk(json.loads(text))}


# qemu disk buses whose drive property strings are listed (the options of
# ide[n], sata[n], scsi[n], virtio[n] in the config method's schema)
DRIVE_BUSES = ("ide", "sata", "scsi", "virtio")


# ---- value schemas ----------------------------------------------------------

def perl_to_ere(p):
    """Translate the Perl regexes of the schema into anchored POSIX extended
    regexes: (?: and (?^: become plain groups, \\d \\s \\w classes,
    {,N} becomes {0,N}; escaped characters inside brackets become literal
    (a '-' moves to the end)."""
    out, i, n = [], 0, len(p)
    while i < n:
        c = p[i]
        if p.startswith("(?^:", i):
            out.append("("); i += 4; continue
        if p.startswith("(?:", i):
            out.append("("); i += 3; continue
        if c == "\\" and i + 1 < n:
            d = p[i + 1]
            out.append({"d": "[0-9]", "s": "[[:space:]]", "w": "[[:alnum:]_]"}.get(
                d, d if d.isalnum() or d in "-_" else "\\" + d))
            i += 2; continue
        if c == "{" and p.startswith("{,", i):
            out.append("{0,"); i += 2; continue
        if c == "[":
            j, body, dash = i + 1, [], False
            if j < n and p[j] == "^":
                body.append("^"); j += 1
            while j < n and p[j] != "]":
                if p[j] == "\\" and j + 1 < n:
                    d = p[j + 1]
                    if d == "-":
                        dash = True
                    else:
                        body.append({"d": "0-9", "s": "[:space:]", "w": "[:alnum:]_"}.get(d, d))
                    j += 2; continue
                body.append(p[j]); j += 1
            out.append("[" + "".join(body) + ("-" if dash else "") + "]")
            i = j + 1; continue
        out.append(c); i += 1
    return "^(" + "".join(out) + ")$"


def cstr(v):
    if v is None:
        return "NULL"
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


DEFS = []      # C definitions, in order
SEEN = {}      # definition text -> its name


def define(prefix, ctype, body):
    key = (ctype, body)
    if key not in SEEN:
        name = "%s%d" % (prefix, len(SEEN))
        SEEN[key] = name
        DEFS.append("static const %s %s[] = %s;\n" % (ctype, name, body))
    return SEEN[key]


def formats_of(tree):
    """Property-string formats the schema names only ("pve-qm-ide"), by the
    dict of a parameter that spells them out."""
    named = {"pve-qm-ide": ("/nodes/{node}/qemu/{vmid}/config", "PUT", "ide[n]")}
    out = {}
    for fmt, (path, meth, param) in named.items():
        if path in tree:
            out[fmt] = tree[path]["info"][meth]["parameters"]["properties"][param]["format"]
    return out


def val_init(p, formats):
    """The C initializer of a struct pvekey_val for schema entry p."""
    typ = p.get("type", "string")
    fmt = p.get("format")
    if isinstance(fmt, str) and fmt in formats:
        fmt = formats[fmt]
    props, nprops, fname = "NULL", 0, None
    if isinstance(fmt, dict):
        entries = []
        for key in sorted(fmt):
            sp = fmt[key]
            entries.append("{%s, %s, %s, %d, %d, %s}" % (
                cstr(key), cstr(sp.get("alias")), cstr(sp.get("keyAlias")),
                1 if sp.get("default_key") else 0,
                1 if sp.get("optional") or sp.get("alias") else 0,
                val_init(sp, formats) if not sp.get("alias") else VAL_NONE))
        props = define("props_", "struct pvekey_prop", "{\n\t" + ",\n\t".join(entries) + ",\n}")
        nprops = len(entries)
    elif isinstance(fmt, str):
        fname = fmt
    enums = "NULL"
    if p.get("enum"):
        enums = define("enum_", "char *const", "{" + ", ".join(cstr(e) for e in p["enum"]) + ", NULL}")
    pat = perl_to_ere(p["pattern"]) if p.get("pattern") else None
    mn, mx = p.get("minimum"), p.get("maximum")
    return "{PVEKEY_T_%s, %s, %s, %s, %s, %s, %d, %d, %d, %d, %s, %d}" % (
        typ.upper(), cstr(fname), enums, cstr(pat),
        repr(float(mn)) if mn is not None else "0.0", repr(float(mx)) if mx is not None else "0.0",
        mn is not None, mx is not None, int(p.get("minLength", 0)), int(p.get("maxLength", 0)),
        props, nprops)


VAL_NONE = "{PVEKEY_T_STRING, NULL, NULL, NULL, 0.0, 0.0, 0, 0, 0, 0, NULL, 0}"


def emit_val(p, formats):
    return define("val_", "struct pvekey_val", "{" + val_init(p, formats) + "}")


# the version bits of a row (PVEKEY_PVE8 also covers PVE 3.4's openvz)
VERSIONS = (("PVEKEY_PVE9", 0), ("PVEKEY_PVE8", 1))


def rows_of(tree, kinds):
    """(kind, base, max_index, type, where, val) of each parameter."""
    rows = []
    for kind in kinds:
        create, config = METHODS[kind]
        keys = {}
        for path, methods, where in ((create, ("POST",), "PVEKEY_CREATE"),
                                     (config, ("PUT", "POST"), "PVEKEY_CONFIG")):
            info = tree[path]["info"]
            for meth in methods:
                if meth not in info:
                    continue
                props = info[meth]["parameters"]["properties"]
                for name, p in props.items():
                    k = keys.setdefault(name, {"where": set(), "type": p.get("type", "string")})
                    k["where"].add(where)
                    k["desc"] = p.get("description", "")
                    k["schema"] = p
        for name in sorted(keys):
            k = keys[name]
            base, maxi = name, -1
            if name.endswith("[n]"):
                base = name[:-3]
                m = re.search(r"\(n is 0 to (\d+)", k["desc"])
                maxi = SRC_MAX.get((kind, base), int(m.group(1)) if m else None)
                if maxi is None:
                    sys.exit("no index range for %s %s" % (kind, name))
            rows.append((kind, base, maxi, k["type"], " | ".join(sorted(k["where"])),
                         emit_val(k["schema"], formats_of(tree))))
    return rows


def drive_opts_of(tree):
    props = tree[METHODS["qemu"][1]]["info"]["PUT"]["parameters"]["properties"]
    return [(bus, opt) for bus in DRIVE_BUSES for opt in sorted(props[bus + "[n]"]["format"])]


def merge(per_version):
    """One list of (item, versions) from [(version bit, items)]: an item
    the same on several versions once, with their bits; in the order of
    the first version's list, then what only later ones have."""
    out, index = [], {}
    for bit, items in per_version:
        for it in items:
            if it in index:
                out[index[it]][1].append(bit)
            else:
                index[it] = len(out)
                out.append((it, [bit]))
    return out


def main():
    pve8, pve9, pve3 = load(sys.argv[1]), load(sys.argv[2]), load(sys.argv[3])
    kind_order = {k: i for i, k in enumerate(METHODS)}
    rows = merge([("PVEKEY_PVE9", rows_of(pve9, ("qemu", "lxc"))),
                  ("PVEKEY_PVE8", rows_of(pve8, ("qemu", "lxc")) + rows_of(pve3, ("openvz",)))])
    # by kind and name; of two rows for one name the 9.x one first (what a
    # lookup for an unknown version finds)
    rows.sort(key=lambda r: (kind_order[r[0][0]], r[0][1], "PVEKEY_PVE9" not in r[1]))
    drive_opts = merge([("PVEKEY_PVE9", drive_opts_of(pve9)), ("PVEKEY_PVE8", drive_opts_of(pve8))])
    out = sys.stdout
    out.write("""/* pvekeys.c - GENERATED by tests/tools/pvekeys-gen.py; do not edit by hand.
 * Parameter names of the PVE guest create and config methods, for checking
 * template [pve] keys without the schema at run time.
 * Each row holds on the versions of its mask: PVEKEY_PVE9 (the 9.1 schema,
 * for PVE 9.x), PVEKEY_PVE8 (the 8.4 schema for qemu and lxc, 3.4's for
 * openvz: every PVE before 9). Sources:
 *   pve9-apidata.json: proxmox/pve-docs api-viewer/apidata.js, commit
 *     e5010dcea566a205770572cfbc5fe0af220d5077 (pve-docs 9.1.3, PVE 9.1),
 *   pve8-apidata.json: proxmox/pve-docs api-viewer/apidata.js, commit
 *     ae1bf37ed06b2fab39c9fa28a0e6c18e6435b7de (pve-docs 8.4.2, PVE 8.4):
 *     POST /nodes/{node}/qemu, PUT+POST /nodes/{node}/qemu/{vmid}/config,
 *     POST /nodes/{node}/lxc, PUT /nodes/{node}/lxc/{vmid}/config
 *   pve3-openvz-apidata.generated.json (PVE 3.4, pve-manager 3.4-16):
 *     POST /nodes/{node}/openvz, PUT /nodes/{node}/openvz/{vmid}/config
 * Index ranges: "(n is 0 to N)" from the description, otherwise the MAX_*
 * constants of qemu-server 8.4 / pve-container 5.3 (the same in 9.x).
 * Drive options: the format of ide[n], sata[n], scsi[n] and virtio[n] of
 * the qemu config PUT, per version.
 * Value schemas (pvekey_val): type, minimum/maximum, enum, min/maxLength,
 * pattern (the schema's Perl regex as an anchored POSIX ERE), format name,
 * and for property strings each key with its own schema, alias, keyAlias,
 * default_key and optional flags. */
#include "pvekeys.h"

#include <string.h>

""")
    out.write("/* Value schemas: enums, property strings, values. */\n")
    for d in DEFS:
        out.write(d)
    out.write("""
const struct pvekey pvekeys[] = {
""")
    for (kind, base, maxi, typ, where, val), bits in rows:
        out.write('\t{PVEKEY_%s, "%s", %d, PVEKEY_T_%s, %s, %s, %s},\n'
                  % (kind.upper(), base, maxi, typ.upper(), where, val, " | ".join(bits)))
    out.write("""};

const size_t pvekeys_count = sizeof pvekeys / sizeof pvekeys[0];

/* Options of the qemu drive property strings per bus and version. */
static const struct {
	const char *bus, *opt;
	unsigned versions;
} drive_opts[] = {
""")
    for (bus, opt), bits in drive_opts:
        out.write('\t{"%s", "%s", %s},\n' % (bus, opt, " | ".join(bits)))
    out.write("""};

unsigned pvekey_versions(int major)
{
	return major <= 0 ? PVEKEY_PVE8 | PVEKEY_PVE9 : major >= 9 ? PVEKEY_PVE9 : PVEKEY_PVE8;
}

bool pvekey_drive_option(int major, const char *bus, const char *opt)
{
	unsigned v = pvekey_versions(major);
	for (size_t i = 0; i < sizeof drive_opts / sizeof drive_opts[0]; i++)
		if ((drive_opts[i].versions & v) && strcmp(drive_opts[i].bus, bus) == 0 &&
		    strcmp(drive_opts[i].opt, opt) == 0)
			return true;
	return false;
}

const struct pvekey *pvekey_lookup(enum pvekey_kind kind, const char *param)
{
	return pvekey_lookup_for(0, kind, param);
}

const struct pvekey *pvekey_lookup_for(int major, enum pvekey_kind kind, const char *param)
{
	unsigned want = pvekey_versions(major);
	for (size_t i = 0; i < pvekeys_count; i++) {
		const struct pvekey *k = &pvekeys[i];
		if (k->kind != kind || !(k->versions & want))
			continue;
		if (k->max_index < 0) {
			if (strcmp(k->name, param) == 0)
				return k;
			continue;
		}
		size_t n = strlen(k->name);
		if (strncmp(k->name, param, n) != 0)
			continue;
		const char *d = param + n;
		if (*d < '0' || *d > '9' || (d[0] == '0' && d[1]))
			continue;
		long v = 0;
		for (; *d >= '0' && *d <= '9' && v <= k->max_index; d++)
			v = v * 10 + (*d - '0');
		if (*d == '\\0' && v <= k->max_index)
			return k;
	}
	return NULL;
}
""")


main()
