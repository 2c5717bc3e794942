#!/bin/sh
# layers.sh - the library's layers held against its includes (make
# check-layers, run by make test). agent/README.md's layer table is the
# one description: its rows from the top layer down, each naming its
# modules (`job.*`, `ssh_exec.c`, `wf_up.h`). Fails, naming file, line and
# both layers, when a file of agent/ includes a header of a layer above
# its own, or when a file of agent/ is in no row. A module is a file's
# name without .c/.h (and without _int: ssh_int.h is ssh's).
#
#   sh tests/tools/layers.sh [ROOT]     (ROOT: the tree, default .)
set -eu
root=${1:-.}
readme=agent/README.md
[ -r "$root/$readme" ] || { echo "layers.sh: $root/$readme: cannot read it" >&2; exit 2; }
cd "$root"
files=$(ls agent/*.c agent/*.h)
# shellcheck disable=SC2086 # one argument per file
awk -v readme="$readme" '
function module(path,   m) {
	m = path
	sub(/.*\//, "", m)
	sub(/\.[ch]$/, "", m)
	sub(/_int$/, "", m)
	return m
}
BEGIN {
	# the table: from its header row to the first line that is not a row
	while ((r = getline line < readme) > 0) {
		if (!intable) {
			if (line ~ /^\| layer \| modules \|/)
				intable = 1
			continue
		}
		if (line !~ /^\|/)
			break
		if (line ~ /^\|[-| ]*$/)
			continue
		n = split(line, cell, "|")
		rows++
		name[rows] = cell[2]
		gsub(/^ +| +$/, "", name[rows])
		mods = cell[3]
		while (match(mods, /`[a-z0-9_]+\.(\*|c|h)`/)) {
			m = substr(mods, RSTART + 1, RLENGTH - 2)
			sub(/\.(\*|c|h)$/, "", m)
			if (!(m in row))
				row[m] = rows
			mods = substr(mods, RSTART + RLENGTH)
		}
	}
	if (r < 0 || !rows) {
		printf "layers.sh: %s: no layer table (a row \"| layer | modules | owns |\")\n", readme
		bad = 1
		exit
	}
	for (i = 1; i < ARGC; i++)
		if (!(module(ARGV[i]) in row)) {
			printf "%s: in no layer of %s'"'"'s layer table\n", ARGV[i], readme
			bad = 1
		}
}
FNR == 1 {
	self = module(FILENAME)
}
/^#include "/ {
	inc = $2
	gsub(/"/, "", inc)
	m = module(inc)
	if (!(self in row))
		next
	if (!(m in row)) {
		printf "%s:%d: includes %s, which is in no layer of %s\n", FILENAME, FNR, inc, readme
		bad = 1
	} else if (row[m] < row[self]) {
		printf "%s:%d: includes %s (layer \"%s\"), above its own layer (\"%s\") in %s\n",
			FILENAME, FNR, inc, name[row[m]], name[row[self]], readme
		bad = 1
	}
}
END { exit bad }
' $files
