/* report_html.c - the report (report.h) as one self-contained HTML page:
 * inline CSS and an inline SVG timeline (a row per node's job with its
 * phases, a row per guest with its moves), the tables behind it, no
 * script, no fonts or images from anywhere. Every text that came from the
 * store or from PVE is escaped; each bar has its text alternative in a
 * <title>, and a move's outcome is said by a symbol, a pattern and a word
 * besides its colour. */
#include "report_html.h"

#include "util.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* The timeline's geometry (SVG user units). */
#define W 1000.0
#define X0 230.0     /* the chart's left edge: labels before it */
#define X1 850.0     /* its right edge: outcome words after it */
#define ROW 24.0
#define TOP 34.0
#define LABEL_MAX 28 /* characters of a label before it is cut */

/* The page being written; oom: an append failed (the page is dropped). */
struct html {
	struct sbuf s;
	bool oom;
};

static void put(struct html *b, const char *s)
{
	b->oom |= sbuf_add(&b->s, s) < 0;
}

static void putch(struct html *b, char c)
{
	b->oom |= sbuf_addc(&b->s, c) < 0;
}

static void putf(struct html *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct html *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	b->oom |= sbuf_vaddf(&b->s, fmt, ap) < 0;
	va_end(ap);
}

static void esc(struct html *b, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': put(b, "&amp;"); break;
		case '<': put(b, "&lt;"); break;
		case '>': put(b, "&gt;"); break;
		case '"': put(b, "&quot;"); break;
		case '\'': put(b, "&#39;"); break;
		default:
			/* control characters (other than tab and newline) are not
			 * allowed in HTML text */
			if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n')
				putch(b, ' ');
			else
				putch(b, *s);
		}
	}
}

/* s cut to LABEL_MAX characters (UTF-8 sequences kept whole), escaped. */
static void esc_cut(struct html *b, const char *s)
{
	size_t chars = 0, i = 0;
	for (; s && s[i]; i++) {
		if (((unsigned char)s[i] & 0xC0) != 0x80 && ++chars > LABEL_MAX)
			break;
	}
	if (!s || !s[i]) {
		esc(b, s);
		return;
	}
	char *cut = strndup(s, i);
	b->oom |= !cut;
	esc(b, cut ? cut : "");
	free(cut);
	put(b, "\xe2\x80\xa6"); /* … */
}

/* A reason as text; a long one (a task's log) as its beginning with the
 * whole of it behind a <details> (no script needed). */
static void long_text(struct html *b, const char *s)
{
	if (!s || strlen(s) <= 160) {
		esc(b, s);
		return;
	}
	put(b, "<details><summary>");
	char *head = strndup(s, 120);
	b->oom |= !head;
	/* not inside a UTF-8 sequence */
	size_t n = head ? strlen(head) : 0;
	while (n && ((unsigned char)head[n - 1] & 0xC0) == 0x80)
		head[--n] = '\0';
	if (n && (unsigned char)head[n - 1] >= 0xC0)
		head[--n] = '\0';
	esc(b, head);
	free(head);
	put(b, "\xe2\x80\xa6</summary>");
	esc(b, s);
	put(b, "</details>");
}

static const char *symbol(enum report_kind k)
{
	switch (k) {
	case REPORT_MOVED: return "\xe2\x9c\x93";   /* ✓ */
	case REPORT_FAILED: return "\xe2\x9c\x97";  /* ✗ */
	case REPORT_REFUSED: return "\xe2\x8a\x98"; /* ⊘ */
	case REPORT_STAYED: return "\xe2\x80\x93";  /* – */
	case REPORT_PENDING: return "\xe2\x80\xa6"; /* … */
	}
	return "?";
}

static const char *title_of(const struct report *r)
{
	if (strcmp(r->kind, "window") == 0)
		return "Maintenance window drain";
	if (strcmp(r->kind, "drain") == 0)
		return "Drain";
	if (strcmp(r->kind, "undrain") == 0)
		return "Undrain";
	if (strcmp(r->kind, "rolling") == 0)
		return "Rolling maintenance";
	if (strcmp(r->kind, "migrate") == 0)
		return "Migration";
	return NULL;
}

static const char CSS[] =
	"*{box-sizing:border-box}"
	"body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;"
	"margin:1.5rem auto;max-width:72rem;padding:0 1rem;color:#1b1b1b;background:#fff;"
	"line-height:1.4}"
	"h1{font-size:1.5rem;margin:0 0 .3rem}h2{font-size:1.15rem;margin:1.6rem 0 .5rem;"
	"border-bottom:1px solid #ccc;padding-bottom:.2rem}"
	".job{color:#555;font-weight:normal;font-size:1rem}"
	".state{font-weight:600;padding:.1rem .4rem;border-radius:3px;border:1px solid}"
	".state-done{color:#0b5d1e;border-color:#0b5d1e}"
	".state-failed,.state-needs-attention{color:#9b1c1c;border-color:#9b1c1c}"
	".state-running,.state-queued,.state-interrupted{color:#7a4a00;border-color:#7a4a00}"
	"dl.summary{display:grid;grid-template-columns:repeat(auto-fill,minmax(11rem,1fr));"
	"gap:.4rem 1rem;margin:1rem 0}"
	"dl.summary div{border-left:3px solid #bbb;padding-left:.5rem}"
	"dt{font-size:.8rem;color:#555}dd{margin:0;font-size:1.1rem;font-weight:600}"
	"table{border-collapse:collapse;width:100%;font-size:.9rem}"
	"th,td{border:1px solid #ccc;padding:.25rem .45rem;text-align:left;vertical-align:top}"
	"th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}"
	"tr.kind-failed td.result{color:#9b1c1c;font-weight:600}"
	"tr.kind-moved td.result{color:#0b5d1e}"
	"tr.kind-refused td.result{color:#7a4a00;font-weight:600}"
	".timeline{width:100%;height:auto;border:1px solid #ddd}"
	".timeline text{font-size:12px;fill:#1b1b1b}"
	".timeline .axis text{fill:#555;font-size:11px}"
	".timeline .grid{stroke:#e4e4e4}"
	".timeline .lane-bg{fill:#f7f7f7}"
	".phase{fill:#8fb3d9;stroke:#2f5d8a}"
	".phase.phase-failed{fill:url(#hatch);stroke:#9b1c1c;stroke-width:2}"
	".phase.phase-running{fill:#f2d18b;stroke:#7a4a00}"
	".move-bar{stroke-width:1.5}"
	".move-bar.kind-moved{fill:#5aa469;stroke:#0b5d1e}"
	".move-bar.kind-failed{fill:url(#hatch);stroke:#9b1c1c;stroke-width:2}"
	".move-bar.kind-pending{fill:#f2d18b;stroke:#7a4a00}"
	".deadline{stroke:#7a4a00;stroke-width:2;stroke-dasharray:6 4}"
	".outcome.kind-failed{fill:#9b1c1c;font-weight:600}"
	".outcome.kind-refused{fill:#7a4a00;font-weight:600}"
	".legend{font-size:.85rem;color:#333}"
	".legend span{margin-right:1.2rem}"
	"ul.problems li{margin:.2rem 0}"
	"details{display:inline}details[open]{display:block;white-space:pre-wrap}"
	"summary{cursor:pointer}"
	"footer{margin-top:2rem;font-size:.8rem;color:#555}"
	"@media print{body{margin:0;max-width:none;font-size:10pt}"
	"section{break-inside:avoid}h2{break-after:avoid}"
	".timeline{border:none}}";

static double xof(const struct report *r, double t)
{
	double span = r->t1 - r->t0 > 0 ? r->t1 - r->t0 : 1;
	double x = X0 + (t - r->t0) / span * (X1 - X0);
	return x < X0 ? X0 : x > X1 ? X1 : x;
}

/* A bar from a to b (at least 3 units wide) in row y. */
static void bar(struct html *b, const struct report *r, double a, double e, double y,
		const char *cls)
{
	double xa = xof(r, a), xb = xof(r, e > 0 ? e : r->t1);
	double w = xb - xa < 3 ? 3 : xb - xa;
	put(b, "<rect class=\"");
	esc(b, cls); /* a state's name: from the daemon's answer too */
	putf(b, "\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"2\">", xa, y + 4,
	     w, ROW - 8);
}

static void axis(struct html *b, const struct report *r, double height)
{
	static const double steps[] = {1,   2,	  5,	10,   15,   30,	   60,	  120,
				       300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400};
	double span = r->t1 - r->t0, step = steps[0];
	for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
		step = steps[i];
		if (span / step <= 8)
			break;
	}
	put(b, "<g class=\"axis\" aria-hidden=\"true\">");
	char tb[24];
	double first = (double)(long long)(r->t0 / step) * step;
	if (first < r->t0)
		first += step;
	for (double t = first; t <= r->t1 + 1e-9; t += step) {
		double x = xof(r, t);
		putf(b, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>",
			  x, TOP - 6, x, height - 4);
		putf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>", x,
			  TOP - 12, report_clock(tb, sizeof tb, t, false));
	}
	put(b, "</g>");
}

static void lane_rows(struct html *b, const struct report *r, double *y)
{
	char t1[24], t2[24], d[24];
	for (size_t i = 0; i < r->n_lanes; i++, *y += ROW) {
		const struct report_lane *l = &r->lanes[i];
		putf(b, "<g class=\"lane-row\" data-job=\"%lld\">", l->job);
		putf(b, "<rect class=\"lane-bg\" x=\"0\" y=\"%.1f\" width=\"%.0f\" "
			     "height=\"%.1f\"/>", *y, W, ROW);
		putf(b, "<text x=\"6\" y=\"%.1f\">", *y + ROW - 7);
		esc_cut(b, l->node);
		put(b, " \xc2\xb7 ");
		esc(b, l->workflow);
		putf(b, " #%lld</text>", l->job);
		for (size_t k = 0; k < l->n_steps; k++) {
			const struct report_step *s = &l->steps[k];
			if (s->started <= 0)
				continue;
			char cls[64];
			snprintf(cls, sizeof cls, "phase phase-%s", s->state);
			put(b, "<g>");
			bar(b, r, s->started, s->ended, *y, cls);
			put(b, "<title>");
			esc(b, l->node);
			put(b, " ");
			esc(b, l->workflow);
			putf(b, " #%lld, step ", l->job);
			esc(b, s->name);
			put(b, ": ");
			esc(b, s->state);
			putf(b, ", %s to %s", report_clock(t1, sizeof t1, s->started, false),
				  report_clock(t2, sizeof t2, s->ended, false));
			if (s->ended >= s->started && s->ended > 0)
				putf(b, " (%s)", str_duration(d, sizeof d, s->ended - s->started));
			if (s->result || s->error) {
				put(b, ": ");
				esc(b, s->error ? s->error : s->result);
			}
			put(b, "</title></rect>");
			double w = xof(r, s->ended > 0 ? s->ended : r->t1) - xof(r, s->started);
			if (w > 8.0 * (double)strlen(s->name)) {
				putf(b, "<text x=\"%.1f\" y=\"%.1f\" aria-hidden=\"true\">",
					  xof(r, s->started) + 4, *y + ROW - 8);
				esc(b, s->name);
				put(b, "</text>");
			}
			put(b, "</g>");
		}
		put(b, "</g>");
	}
}

/* The text alternative of one move. */
static void move_words(struct html *b, const struct report_move *m)
{
	char t1[24], t2[24], d[24];
	esc(b, m->name && *m->name ? m->name : "(no name)");
	putf(b, " (%d): %s", m->vmid, report_kind_name(m->kind));
	if (m->from || m->to) {
		put(b, ", ");
		esc(b, m->from ? m->from : "?");
		put(b, " to ");
		esc(b, m->to ? m->to : "nowhere");
	}
	if (m->method) {
		put(b, ", ");
		esc(b, m->method);
	}
	if (m->started > 0)
		putf(b, ", %s to %s", report_clock(t1, sizeof t1, m->started, false),
			  report_clock(t2, sizeof t2, m->ended, false));
	if (m->downtime_ms >= 0)
		putf(b, ", downtime %s", report_ms(d, sizeof d, m->downtime_ms));
	if (m->gap_ms >= 0)
		putf(b, ", clients saw a gap of %s", report_ms(d, sizeof d, m->gap_ms));
	if (m->why) {
		put(b, ": ");
		esc(b, m->why);
	}
}

static void guest_rows(struct html *b, const struct report *r, double *y)
{
	char d[24];
	for (size_t i = 0; i < r->n_guests; i++, *y += ROW) {
		const struct report_guest *g = &r->guests[i];
		putf(b, "<g class=\"guest-row%s\" data-vmid=\"%d\">", g->away ? " away" : "",
			  g->vmid);
		put(b, "<title>");
		esc(b, g->name && *g->name ? g->name : "(no name)");
		putf(b, " (%d): at ", g->vmid);
		esc(b, g->at ? g->at : "?");
		if (g->home) {
			put(b, g->away ? ", away from its home " : ", its home");
			if (g->away)
				esc(b, g->home);
		}
		/* what has no bar says itself here: a refusal's reason, a stay */
		for (size_t k = 0; k < r->n_moves; k++)
			if (r->moves[k].vmid == g->vmid && r->moves[k].started <= 0) {
				put(b, "; ");
				move_words(b, &r->moves[k]);
			}
		put(b, "</title>");
		putf(b, "<text x=\"6\" y=\"%.1f\">", *y + ROW - 7);
		esc_cut(b, g->name && *g->name ? g->name : "(no name)");
		putf(b, " (%d)</text>", g->vmid);
		/* its moves; the last one's outcome in words at the right */
		const struct report_move *last = NULL;
		for (size_t k = 0; k < r->n_moves; k++) {
			const struct report_move *m = &r->moves[k];
			if (m->vmid != g->vmid)
				continue;
			last = m;
			if (m->started <= 0)
				continue;
			char cls[48];
			snprintf(cls, sizeof cls, "move-bar kind-%s", report_kind_name(m->kind));
			put(b, "<g>");
			bar(b, r, m->started, m->ended, *y, cls);
			put(b, "<title>");
			move_words(b, m);
			put(b, "</title></rect>");
			/* after the bar, or before it when the bar ends at the edge
			 * or the guest's next bar starts too close */
			double xe = xof(r, m->ended > 0 ? m->ended : r->t1), limit = X1;
			for (size_t n = k + 1; n < r->n_moves && limit == X1; n++)
				if (r->moves[n].vmid == g->vmid && r->moves[n].started > 0)
					limit = xof(r, r->moves[n].started);
			bool after = xe + 70 < limit;
			putf(b, "<text class=\"bar-note\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" "
				"aria-hidden=\"true\">%s",
			     after ? xe + 4 : xof(r, m->started) - 4, *y + ROW - 7,
			     after ? "start" : "end", symbol(m->kind));
			if (m->downtime_ms >= 0)
				putf(b, " %s", report_ms(d, sizeof d, m->downtime_ms));
			put(b, "</text></g>");
		}
		if (last) {
			putf(b, "<text class=\"outcome kind-%s\" x=\"%.1f\" y=\"%.1f\">%s %s",
				  report_kind_name(last->kind), X1 + 8, *y + ROW - 7,
				  symbol(last->kind), report_kind_name(last->kind));
			if (g->away)
				put(b, ", away");
			put(b, "</text>");
		}
		put(b, "</g>");
	}
}

static void timeline(struct html *b, const struct report *r)
{
	double height = TOP + ROW * (double)(r->n_lanes + r->n_guests) + 14;
	putf(b, "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" "
		     "viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-labelledby=\"tl-title "
		     "tl-desc\">", W, height);
	putf(b, "<title id=\"tl-title\">Timeline of job %lld</title>", r->id);
	putf(b, "<desc id=\"tl-desc\">One row per node's job with its steps, then one "
		     "row per guest with its moves: %zu moved, %zu failed, %zu refused, %zu "
		     "stayed. Each bar's title says what it was.</desc>",
		  r->n_moved, r->n_failed, r->n_refused, r->n_stayed);
	put(b, "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" "
		    "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
		    "<rect width=\"6\" height=\"6\" fill=\"#f3c4c4\"/>"
		    "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#9b1c1c\" "
		    "stroke-width=\"3\"/></pattern></defs>");
	axis(b, r, height);
	double y = TOP;
	lane_rows(b, r, &y);
	guest_rows(b, r, &y);
	if (r->deadline > 0 && r->deadline >= r->t0 && r->deadline <= r->t1) {
		double x = xof(r, r->deadline);
		putf(b, "<g><line class=\"deadline\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
			     "y2=\"%.1f\"><title>the window closes</title></line>"
			     "<text x=\"%.1f\" y=\"%.1f\">window closes</text></g>",
			  x, TOP - 6, x, height - 4, x + 3, height - 2);
	}
	put(b, "</svg>");
	put(b, "<p class=\"legend\"><span>\xe2\x9c\x93 moved (solid green)</span>"
		    "<span>\xe2\x9c\x97 failed (hatched red)</span>"
		    "<span>\xe2\x8a\x98 refused, never started</span>"
		    "<span>\xe2\x80\x93 stays where it is</span>"
		    "<span>figures after a bar: PVE's measured downtime</span></p>");
}

static void summary_item(struct html *b, const char *term, const char *cls, const char *value)
{
	putf(b, "<div class=\"%s\"><dt>%s</dt><dd>", cls, term);
	esc(b, value);
	put(b, "</dd></div>");
}

static void summary(struct html *b, const struct report *r)
{
	char buf[48], n[24];
	put(b, "<dl class=\"summary\">");
	summary_item(b, "Started", "started", report_clock(buf, sizeof buf, r->started, true));
	summary_item(b, "Ended", "ended", report_clock(buf, sizeof buf, r->ended, true));
	if (r->started > 0 && r->ended >= r->started)
		summary_item(b, "Took", "took",
			     str_duration(buf, sizeof buf, r->ended - r->started));
	const struct {
		const char *term, *cls;
		size_t v;
	} counts[] = {{"Moved", "moved", r->n_moved},	  {"Failed", "failed", r->n_failed},
		      {"Refused", "refused", r->n_refused}, {"Stayed", "stayed", r->n_stayed},
		      {"Away from home at the end", "away", r->n_away}};
	for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
		snprintf(n, sizeof n, "%zu", counts[i].v);
		summary_item(b, counts[i].term, counts[i].cls, n);
	}
	if (r->n_pending) {
		snprintf(n, sizeof n, "%zu", r->n_pending);
		summary_item(b, "Not run", "pending", n);
	}
	summary_item(b, "Total downtime (PVE)", "downtime",
		     report_ms(buf, sizeof buf, r->downtime_ms));
	summary_item(b, "Longest gap clients saw", "gap",
		     report_ms(buf, sizeof buf, r->max_gap_ms));
	if (r->deadline > 0)
		summary_item(b, "Window closes", "deadline",
			     report_clock(buf, sizeof buf, r->deadline, true));
	put(b, "</dl>");
}

static void td(struct html *b, const char *cls, const char *text)
{
	if (cls)
		putf(b, "<td class=\"%s\">", cls);
	else
		put(b, "<td>");
	esc(b, text ? text : "-");
	put(b, "</td>");
}

static void moves_table(struct html *b, const struct report *r)
{
	char t1[24], t2[24], d1[24], d2[24], d3[24], vm[16];
	put(b, "<table class=\"moves\"><caption class=\"sr\">Each guest's moves</caption>"
		    "<thead><tr><th scope=\"col\">Guest</th><th scope=\"col\">VMID</th>"
		    "<th scope=\"col\">From</th><th scope=\"col\">To</th>"
		    "<th scope=\"col\">Method</th><th scope=\"col\">Start</th>"
		    "<th scope=\"col\">End</th><th scope=\"col\">Took</th>"
		    "<th scope=\"col\">Downtime (PVE)</th><th scope=\"col\">Gap clients saw</th>"
		    "<th scope=\"col\">Result</th></tr></thead><tbody>");
	for (size_t i = 0; i < r->n_moves; i++) {
		const struct report_move *m = &r->moves[i];
		putf(b, "<tr class=\"move kind-%s\" data-vmid=\"%d\">",
			  report_kind_name(m->kind), m->vmid);
		put(b, "<th scope=\"row\" class=\"name\">");
		esc(b, m->name && *m->name ? m->name : "(no name)");
		put(b, "</th>");
		snprintf(vm, sizeof vm, "%d", m->vmid);
		td(b, "num", vm);
		td(b, NULL, m->from);
		td(b, NULL, m->to);
		td(b, NULL, m->method);
		td(b, NULL, m->started > 0 ? report_clock(t1, sizeof t1, m->started, false) : NULL);
		td(b, NULL, m->ended > 0 ? report_clock(t2, sizeof t2, m->ended, false) : NULL);
		td(b, "num", m->started > 0 && m->ended >= m->started
				     ? str_duration(d1, sizeof d1, m->ended - m->started) : NULL);
		td(b, "num downtime", report_ms(d2, sizeof d2, m->downtime_ms));
		td(b, "num gap", report_ms(d3, sizeof d3, m->gap_ms));
		putf(b, "<td class=\"result\">%s %s", symbol(m->kind), report_kind_name(m->kind));
		if (m->status && strcmp(m->status, report_kind_name(m->kind)) != 0) {
			put(b, " (");
			esc(b, m->status);
			put(b, ")");
		}
		if (m->why) {
			put(b, ": ");
			long_text(b, m->why);
		}
		put(b, "</td></tr>");
	}
	put(b, "</tbody></table>");
}

static void problems(struct html *b, const struct report *r)
{
	if (!r->n_failed && !r->n_refused && !r->error)
		return;
	put(b, "<section aria-labelledby=\"problems\"><h2 id=\"problems\">Failures and "
		    "refusals</h2><ul class=\"problems\">");
	if (r->error) {
		put(b, "<li class=\"job-error\"><strong>The job: </strong>");
		esc(b, r->error);
		if (r->left) {
			put(b, " (left: ");
			esc(b, r->left);
			put(b, ")");
		}
		put(b, "</li>");
	}
	for (size_t i = 0; i < r->n_moves; i++) {
		const struct report_move *m = &r->moves[i];
		if (m->kind != REPORT_FAILED && m->kind != REPORT_REFUSED)
			continue;
		putf(b, "<li class=\"kind-%s\" data-vmid=\"%d\">%s <strong>",
			  report_kind_name(m->kind), m->vmid, symbol(m->kind));
		esc(b, m->name && *m->name ? m->name : "(no name)");
		putf(b, "</strong> (%d) %s: ", m->vmid, report_kind_name(m->kind));
		long_text(b, m->why ? m->why : m->status);
		put(b, "</li>");
	}
	put(b, "</ul></section>");
}

static void away(struct html *b, const struct report *r)
{
	put(b, "<section aria-labelledby=\"away\"><h2 id=\"away\">Away from home at the "
		    "end</h2>");
	if (!r->n_away) {
		put(b, "<p class=\"none\">Every guest is on its home node.</p></section>");
		return;
	}
	put(b, "<table class=\"away\"><thead><tr><th scope=\"col\">Guest</th>"
		    "<th scope=\"col\">VMID</th><th scope=\"col\">Home</th>"
		    "<th scope=\"col\">Now on</th></tr></thead><tbody>");
	char vm[16];
	for (size_t i = 0; i < r->n_guests; i++) {
		const struct report_guest *g = &r->guests[i];
		if (!g->away)
			continue;
		putf(b, "<tr data-vmid=\"%d\"><th scope=\"row\">", g->vmid);
		esc(b, g->name && *g->name ? g->name : "(no name)");
		put(b, "</th>");
		snprintf(vm, sizeof vm, "%d", g->vmid);
		td(b, "num", vm);
		td(b, NULL, g->home);
		td(b, NULL, g->at);
		put(b, "</tr>");
	}
	put(b, "</tbody></table></section>");
}

static void phases(struct html *b, const struct report *r)
{
	char t1[24], t2[24];
	put(b, "<section aria-labelledby=\"phases\"><h2 id=\"phases\">Phases per node</h2>"
		    "<table class=\"phases\"><thead><tr><th scope=\"col\">Node</th>"
		    "<th scope=\"col\">Job</th><th scope=\"col\">Step</th>"
		    "<th scope=\"col\">State</th><th scope=\"col\">Start</th>"
		    "<th scope=\"col\">End</th><th scope=\"col\">What it said</th></tr></thead>"
		    "<tbody>");
	for (size_t i = 0; i < r->n_lanes; i++) {
		const struct report_lane *l = &r->lanes[i];
		for (size_t k = 0; k < l->n_steps; k++) {
			const struct report_step *s = &l->steps[k];
			put(b, "<tr>");
			td(b, NULL, l->node);
			put(b, "<td>");
			esc(b, l->workflow);
			putf(b, " #%lld</td>", l->job);
			td(b, NULL, s->name);
			td(b, NULL, s->state);
			td(b, NULL, s->started > 0 ? report_clock(t1, sizeof t1, s->started, false)
						   : NULL);
			td(b, NULL,
			   s->ended > 0 ? report_clock(t2, sizeof t2, s->ended, false) : NULL);
			td(b, NULL, s->error ? s->error : s->result);
			put(b, "</tr>");
		}
	}
	put(b, "</tbody></table></section>");
}

char *report_html(const struct report *r)
{
	struct html page = {0}, *b = &page;
	const char *what = title_of(r);
	put(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
		    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
		    "<meta name=\"generator\" content=\"pvagent\"><title>pvagent report: ");
	esc(b, what ? what : r->workflow);
	put(b, " of ");
	esc(b, r->subject);
	putf(b, " (job %lld)</title><style>%s.sr{position:absolute;left:-9999px}</style>"
		     "</head>\n<body>\n<header><h1>", r->id, CSS);
	esc(b, what ? what : r->workflow);
	put(b, " of ");
	esc(b, r->subject);
	putf(b, " <span class=\"job\">job %lld</span></h1><p>State: <span class=\"state "
		     "state-", r->id);
	esc(b, r->state);
	put(b, "\">");
	esc(b, r->state);
	put(b, "</span>");
	if (r->error) {
		put(b, " \xe2\x80\x94 ");
		esc(b, r->error);
	}
	put(b, "</p>");
	summary(b, r);
	put(b, "</header>\n<main>\n<section aria-labelledby=\"timeline\"><h2 id=\"timeline\">"
		    "Timeline</h2>");
	if (r->t1 > r->t0)
		timeline(b, r);
	else
		put(b, "<p class=\"none\">Nothing ran: no times recorded.</p>");
	put(b, "</section>\n<section aria-labelledby=\"moves\"><h2 id=\"moves\">Moves</h2>");
	if (r->n_moves)
		moves_table(b, r);
	else
		put(b, "<p class=\"none\">No guest to move.</p>");
	put(b, "</section>\n");
	problems(b, r);
	away(b, r);
	phases(b, r);
	putf(b, "\n</main><footer>Written by pvagent from its job store: job %lld and its "
		"child jobs. Times are the local time of the machine that wrote it.</footer>\n"
		"</body></html>\n", r->id);
	if (b->oom) {
		sbuf_free(&b->s);
		return NULL;
	}
	return sbuf_steal(&b->s);
}
