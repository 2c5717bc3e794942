/* report_html.h - a report (report.h) as one self-contained HTML page:
 * inline CSS and SVG, no script, nothing fetched from anywhere; printable,
 * each bar with a text alternative, every stored text escaped. */
#ifndef PVAGENT_REPORT_HTML_H
#define PVAGENT_REPORT_HTML_H

#include "report.h"

/* The page (malloc'd), or NULL when out of memory. */
char *report_html(const struct report *r);

#endif
