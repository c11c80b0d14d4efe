/*
 * comm.c: the HTML report's Communication card: `steptrace comm`'s
 * tables (analyze/comm.h) for the page's run, and a bar per rank of its
 * communication per step, hidden under computation and exposed.
 */
#include "report/comm.h"

#include <stdio.h>
#include <stdlib.h>

#include "analyze/comm.h"
#include "lib/error.h"
#include "render/html.h"
#include "report/page.h"

#define BAR_H 22
#define LABEL_W 80

/* Per rank: a bar of hidden (green) then exposed (red) communication, ms per measured step. */
static void rank_bars(FILE *out, const struct replay_ranks *rs)
{
	struct comm_totals *t = calloc(rs->n, sizeof(*t));
	double max = 0, w = CHART_W - LABEL_W - 140;

	if (!t)
		return;
	for (size_t k = 0; k < rs->n; k++) {
		if (comm_totals(rs->rank[k], false, &t[k]) < 0) {
			free(t);
			return;
		}
		t[k].time_ns /= replay_step_divisor(rs->rank[k], false);
		t[k].hidden_ns /= replay_step_divisor(rs->rank[k], false);
		if ((double)t[k].time_ns > max)
			max = (double)t[k].time_ns;
	}
	if (max <= 0) {
		free(t);
		return;
	}
	fprintf(out, "<svg class=\"chart\" viewBox=\"0 0 %d %zu\" role=\"img\" aria-label=\"communication per "
		"rank\">\n", CHART_W, (rs->n + 1) * (BAR_H + 8));
	for (size_t k = 0; k < rs->n; k++) {
		double y = 4 + (double)k * (BAR_H + 8), hw = w * (double)t[k].hidden_ns / max;
		double ew = w * (double)(t[k].time_ns - t[k].hidden_ns) / max;

		fprintf(out, "<text x=\"0\" y=\"%.1f\" class=\"axis\">rank %u</text>\n", y + BAR_H * 0.7,
			(unsigned)replay_ranks_rank(rs, k));
		page_tip_rect(out, LABEL_W, y, hw, BAR_H, "#2e9e5b", "rank %u: %.3f ms hidden under computation",
			      (unsigned)replay_ranks_rank(rs, k), (double)t[k].hidden_ns / 1e6);
		page_tip_rect(out, LABEL_W + hw, y, ew, BAR_H, "#c0392b", "rank %u: %.3f ms exposed",
			      (unsigned)replay_ranks_rank(rs, k),
			      (double)(t[k].time_ns - t[k].hidden_ns) / 1e6);
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"axis\">%.3f ms</text>\n", LABEL_W + hw + ew + 6,
			y + BAR_H * 0.7, (double)t[k].time_ns / 1e6);
	}
	fprintf(out, "<text x=\"%d\" y=\"%zu\" class=\"axis\">communication per measured step: hidden "
		"(green) and exposed (red)</text>\n</svg>\n", LABEL_W, (rs->n + 1) * (BAR_H + 8) - 6);
	free(t);
}

int page_comm(FILE *out, const struct page_data *d)
{
	static const struct page_part parts[] = {
		{ "collectives", "Collectives per measured step and rank" },
		{ "ranks", "Communication and computation per rank" },
		{ "skew", "Arrival skew between ranks" },
	};
	struct page_alone alone;
	const struct replay_ranks *rs = page_ranks(d, &alone);
	struct report *r = report_new();
	char lead[768];
	int rc = -1;

	snprintf(lead, sizeof(lead),
		 "The collectives of %zu rank%s: per collective, time per measured step and rank, message "
		 "bytes, transfer time (last arrival to end), algorithm and bus bandwidth (nccl-tests' "
		 "definitions), and the share hidden under computation (Holistic Trace Analysis's "
		 "computation-communication overlap)%s.%s Reproduce: steptrace comm %s%s",
		 rs->n, rs->n > 1 ? "s" : "", rs->n > 1 ? "; the arrival skew between ranks" : "",
		 rs->n > 1 ? " The other cards show rank 0." : "", page_base_name(d->rp->path),
		 rs->n > 1 ? " ..." : "");
	page_section_begin(out, d, "comm", "Communication", lead);
	if (comm_run(rs, &(struct comm_opts){ 0 }, r) < 0)
		goto out;
	rank_bars(out, rs);
	/* the skew (last) with two ranks or more */
	if (page_titled_tables(out, d, r, "comm", parts, rs->n < 2 ? 2 : 3) < 0)
		goto out;
	page_section_end(out);
	rc = 0;
out:
	report_free(r);
	return rc;
}
