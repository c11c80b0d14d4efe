/*
 * nvtx.c: see nvtx.h. One file of about 1,000 lines: the strings, the tree
 * of ranges, the op table, the range stacks and the event queue are one
 * state under one mutex, and a push and its pop go through them all; the
 * PyTorch mode is apart (torch.c), as are emit_nvtx's names (aten.c).
 *
 * Threads. ranges_push/pop run on the application's threads: the range
 * stack is the thread's own, the tree of nodes, the string table, the op
 * table and the event queue are shared under one mutex, held for a hash
 * probe or two per push. The capture's decoder thread drains the queue
 * while it holds the session lock: it takes the mutex only to translate
 * string ids and swap the queue out, and writes with the mutex released.
 * Lock order: session lock, then this mutex; an application thread never
 * takes the session lock here.
 */
#define _GNU_SOURCE
#include "record/nvtx.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/grow.h"
#include "lib/hash.h"
#include "record/aten.h"
#include "record/capture.h"
#include "record/cost.h"
#include "record/nvtx_internal.h"

#define OPS_CAP (1u << 20)        /* ops registered at most (an op per execution per step) */
#define QUEUE_KICK (1u << 16)     /* queued events that wake the decoder thread */
#define QUEUE_MAX (1u << 20)      /* queued events past which new ones are lost */
#define NAME_BUF 1024             /* names longer than this are normalised on the heap */
#define MIRROR_DOMAIN "steptrace.mirror"
#define HELD_CAP (1u << 20)       /* step candidates held until the end */

struct node {
	uint32_t parent, name, domain;   /* string ids (domain: its name) */
	uint32_t path, kind, phase;      /* string ids */
	uint32_t mkind;                  /* a module's kind below its root module, 0 at the root */
	uint64_t flops, bytes;
	bool step;                       /* named like the step range */
	bool module;                     /* an nn.Module call (ranges_torch_module) */
	uint32_t gen, occ;               /* executions in step generation `gen` */
	uint32_t *ops;                   /* op of the k-th execution in a step */
	size_t n_ops, cap_ops;
};

struct open_se {
	uint64_t id, start, thread;
	uint32_t name, domain, depth;
};

struct nvtx_state R = { .lock = PTHREAD_MUTEX_INITIALIZER };

const char *const ranges_phase_names[] = {
	"", "data", "zero_grad", "forward", "backward", "optimizer", NULL,
};

static pthread_key_t tkey;
static pthread_once_t tkey_once = PTHREAD_ONCE_INIT;
static _Thread_local struct tstate *ts;

/* ---- strings ----------------------------------------------------------- */

/* Doubles an open-addressing table of the ids 1..n-1, placed by key(id). -1 when out of memory. */
static int table_grow(uint32_t **table, size_t *cap, size_t n, uint64_t (*key)(size_t id))
{
	size_t ncap = *cap ? *cap * 2 : 1024;
	uint32_t *h = calloc(ncap, sizeof(*h));

	if (!h)
		return -1;
	for (size_t id = 1; id < n; id++) {
		size_t j = key(id) & (ncap - 1);

		while (h[j])
			j = (j + 1) & (ncap - 1);
		h[j] = (uint32_t)id;
	}
	free(*table);
	*table = h;
	*cap = ncap;
	return 0;
}

static uint64_t str_key(size_t id)
{
	return hash_str(R.str[id]);
}

/* The id of s (0 for NULL or ""; 0 too when out of memory). */
uint32_t intern_locked(const char *s)
{
	size_t j;
	char *dup;

	if (!s || !*s)
		return 0;
	if ((R.n_str + 1) * 2 > R.str_hash_cap && table_grow(&R.str_hash, &R.str_hash_cap, R.n_str, str_key))
		return 0;
	j = hash_str(s) & (R.str_hash_cap - 1);
	while (R.str_hash[j]) {
		if (!strcmp(R.str[R.str_hash[j]], s))
			return R.str_hash[j];
		j = (j + 1) & (R.str_hash_cap - 1);
	}
	if (ALLOC_GROW(R.str, R.n_str + 1, R.cap_str) || !(dup = strdup(s)))
		return 0;
	R.str[R.n_str] = dup;
	R.str_hash[j] = (uint32_t)R.n_str;
	return (uint32_t)R.n_str++;
}

/* Our string id as the session's (interning it there once); the session lock is held. */
static uint32_t sess_id_locked(struct rec_session *s, uint32_t id)
{
	if (!id || id >= R.n_str)
		return 0;
	if (id >= R.cap_sess) {
		size_t cap = R.cap_sess ? R.cap_sess : 1024;
		uint32_t *p;

		while (cap <= id)
			cap *= 2;
		p = realloc(R.sess, cap * sizeof(*p));
		if (!p)
			return rec_session_intern_locked(s, R.str[id]);
		memset(p + R.cap_sess, 0, (cap - R.cap_sess) * sizeof(*p));
		R.sess = p;
		R.cap_sess = cap;
	}
	if (!R.sess[id])
		R.sess[id] = rec_session_intern_locked(s, R.str[id]);
	return R.sess[id];
}

/* ---- the tree of ranges ------------------------------------------------ */

static uint64_t hash_node(uint32_t parent, uint32_t name, uint32_t domain)
{
	uint64_t h = ((uint64_t)parent << 32 | name) * 0x9E3779B97F4A7C15ull;

	return (h ^ (h >> 29) ^ (uint64_t)domain * 0xBF58476D1CE4E5B9ull) * 0x94D049BB133111EBull;
}

static uint64_t node_key(size_t id)
{
	const struct node *n = &R.nodes[id];

	return hash_node(n->parent, n->name, n->domain);
}

/* The text of name up to its first ", " (the op of an emit_nvtx name) into buf. */
static const char *op_part(const char *name, char *buf, size_t len)
{
	const char *comma = strstr(name, ", ");
	size_t n = comma ? (size_t)(comma - name) : strlen(name);

	if (n >= len)
		n = len - 1;
	memcpy(buf, name, n);
	buf[n] = '\0';
	return buf;
}

/*
 * A node's phase: a range named forward, backward or optimizer; else its
 * parent's; else backward for autograd's nodes (on autograd's own thread
 * they have no parent), optimizer for torch.optim's record_function
 * ranges ("Optimizer.step#AdamW.step"), forward inside a step.
 */
static uint32_t phase_of(const struct node *parent, const char *op, bool is_step)
{
	for (int i = 1; ranges_phase_names[i]; i++)
		if (!strcasecmp(op, ranges_phase_names[i]))
			return intern_locked(ranges_phase_names[i]);
	if (parent && parent->phase)
		return parent->phase;
	if (!strncmp(op, "autograd::engine::evaluate_function", 35) || strstr(op, "Backward"))
		return intern_locked("backward");
	if (!strncmp(op, "Optimizer.", 10))
		return intern_locked("optimizer");
	return R.step_name && R.step_open && !is_step ? intern_locked("forward") : 0;
}

/* name with each all-digit component between dots as "*": "transformer.h.3" -> "transformer.h.*". */
static void star_digits(const char *name, char *buf, size_t len)
{
	size_t n = 0;

	while (*name && n + 1 < len) {
		size_t k = strcspn(name, ".");

		if (k && strspn(name, "0123456789") >= k) {
			buf[n++] = '*';
		} else {
			size_t c = k < len - 1 - n ? k : len - 1 - n;

			memcpy(buf + n, name, c);
			n += c;
		}
		name += k;
		if (*name == '.' && n + 1 < len) {
			buf[n++] = '.';
			name++;
		} else if (*name == '.') {
			name++;
		}
	}
	buf[n] = '\0';
}

/*
 * A module's kind: its path below the root module with layer numbers as
 * "*" (for "transformer.h.3", then "attn": "transformer.h.*" + "/attn"),
 * so `summary --by op` sums a module over the layers; a root module's is
 * its own name (its class).
 */
static void module_describe(struct node *n, const struct node *parent)
{
	char star[256], buf[1024];

	star_digits(R.str[n->name], star, sizeof(star));
	if (!parent || !parent->module) {
		n->mkind = 0;
		n->kind = intern_locked(star);
		return;
	}
	if (parent->mkind)
		snprintf(buf, sizeof(buf), "%s/%s", R.str[parent->mkind], star);
	else
		snprintf(buf, sizeof(buf), "%s", star);
	n->mkind = intern_locked(buf);
	n->kind = n->mkind;
}

/* Path, kind, phase and cost of a new node. */
static void node_describe(struct node *n, const struct node *parent)
{
	const char *name = R.str[n->name];
	char op[128], buf[256];
	struct aten_call call;
	struct aten_cost cost = { 0 };

	if (parent) {
		const char *pp = R.str[parent->path];
		size_t len = strlen(pp) + strlen(name) + 2;
		char *path = malloc(len);

		if (path) {
			snprintf(path, len, "%s/%s", pp, name);
			n->path = intern_locked(path);
			free(path);
		}
	} else {
		n->path = n->name;
	}
	op_part(name, op, sizeof(op));
	n->phase = phase_of(parent, op, n->step);
	if (n->module) {
		module_describe(n, parent);
		return;
	}
	if (aten_parse(name, &call) == 0) {
		aten_cost(&call, R.elem_bytes, &cost);
		aten_call_release(&call);
	}
	if (cost.family != ATEN_OTHER) {
		snprintf(buf, sizeof(buf), "%s/%s", aten_family_name(cost.family), op);
		n->kind = intern_locked(buf);
	} else {
		n->kind = intern_locked(op);
	}
	n->flops = cost.flops;
	n->bytes = cost.bytes;
}

/* The node for (parent, name, domain), made on first sight (a module's when `module`); 0 when out of memory. */
static uint32_t node_get_locked(uint32_t parent, uint32_t name, uint32_t domain, bool module)
{
	struct node *n;
	size_t j;

	if ((R.n_nodes + 1) * 2 > R.node_hash_cap &&
	    table_grow(&R.node_hash, &R.node_hash_cap, R.n_nodes, node_key))
		return 0;
	j = hash_node(parent, name, domain) & (R.node_hash_cap - 1);
	while (R.node_hash[j]) {
		n = &R.nodes[R.node_hash[j]];
		if (n->parent == parent && n->name == name && n->domain == domain)
			return R.node_hash[j];
		j = (j + 1) & (R.node_hash_cap - 1);
	}
	if (ALLOC_GROW(R.nodes, R.n_nodes + 1, R.cap_nodes))
		return 0;
	n = &R.nodes[R.n_nodes];
	memset(n, 0, sizeof(*n));
	n->parent = parent;
	n->name = name;
	n->domain = domain;
	n->step = R.step_name && name == R.step_name;
	n->module = module;
	n->gen = UINT32_MAX;
	node_describe(n, parent ? &R.nodes[parent] : NULL);
	R.node_hash[j] = (uint32_t)R.n_nodes;
	return (uint32_t)R.n_nodes++;
}

/*
 * The op of the node's next execution in this step, registered on first
 * use. Outside the steps of a step range every execution shares the first
 * op: that work is not counted, and it would grow the table without end.
 */
static uint32_t op_next_locked(uint32_t id)
{
	struct node *n = &R.nodes[id];
	uint32_t k;

	if (n->gen != R.gen) {
		n->gen = R.gen;
		n->occ = 0;
	}
	k = R.step_name && !R.step_open ? 0 : n->occ++;
	if (k < n->n_ops)
		return n->ops[k];
	if (R.n_ops >= OPS_CAP || ALLOC_GROW(R.op_node, R.n_ops + 1, R.cap_ops) ||
	    ALLOC_GROW(n->ops, n->n_ops + 1, n->cap_ops)) {
		R.ops_capped = true;
		return n->n_ops ? n->ops[n->n_ops - 1] : 0;
	}
	R.op_node[R.n_ops++] = id;
	n->ops[n->n_ops++] = (uint32_t)R.n_ops;
	return (uint32_t)R.n_ops;
}

/* ---- the event queue ---------------------------------------------------- */

struct st_event *queue_locked(int kind, uint64_t start, uint64_t end)
{
	struct st_event *ev;

	if (R.finished || R.n_q >= QUEUE_MAX || ALLOC_GROW(R.q, R.n_q + 1, R.cap_q)) {
		R.lost++;
		return NULL;
	}
	ev = &R.q[R.n_q++];
	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->start = start;   /* CUPTI ns until drained */
	ev->end = end;
	return ev;
}

/* Wakes the decoder when the queue is long; with the mutex held. */
bool want_kick_locked(void)
{
	if (R.n_q < QUEUE_KICK || R.kicked)
		return false;
	R.kicked = true;
	return true;
}

/* A range of an NCCL call: its communicator and message size (0 when it has none). */
static void range_payload_event_locked(uint32_t name, uint32_t domain, uint64_t thread, uint32_t depth,
				       uint64_t start, uint64_t end, uint64_t comm, uint64_t bytes)
{
	struct st_event *ev = queue_locked(ST_RANGE, start, end);

	if (!ev)
		return;
	ev->range.name = name;
	ev->range.domain = domain;
	ev->range.thread = thread;
	ev->range.depth = depth;
	ev->range.comm = comm;
	ev->range.bytes = bytes;
	R.ranges++;
}

void range_event_locked(uint32_t name, uint32_t domain, uint64_t thread, uint32_t depth,
			uint64_t start, uint64_t end)
{
	range_payload_event_locked(name, domain, thread, depth, start, end, 0, 0);
}

static void step_event_locked(uint32_t index, uint64_t thread, uint64_t start, uint64_t end, bool phases_only)
{
	struct st_event *ev = queue_locked(ST_STEP, start, end);

	if (!ev)
		return;
	bool warm = index < ranges_warmup_locked();

	ev->step.index = index;
	ev->step.warmup = warm;
	ev->step.phases_only = phases_only;
	ev->step.thread = thread;
	R.n_steps++;
	R.n_warmup += warm;
}

void ranges_drain_locked(struct rec_session *s)
{
	struct st_event *q, *ops = NULL;
	size_t n, cap, n_ops = 0;

	pthread_mutex_lock(&R.lock);
	if (R.sess_of != s) {
		if (R.sess)
			memset(R.sess, 0, R.cap_sess * sizeof(*R.sess));
		R.sess_of = s;
	}
	if (R.ops_written < R.n_ops) {
		ops = calloc(R.n_ops - R.ops_written, sizeof(*ops));
		for (; ops && R.ops_written < R.n_ops; R.ops_written++) {
			const struct node *nd = &R.nodes[R.op_node[R.ops_written]];
			struct st_event *ev = &ops[n_ops++];

			ev->kind = ST_OP;
			ev->op.id = (uint32_t)R.ops_written + 1;
			ev->op.name = sess_id_locked(s, nd->name);
			ev->op.path = sess_id_locked(s, nd->path);
			ev->op.kind = sess_id_locked(s, nd->kind);
			ev->op.phase = sess_id_locked(s, nd->phase);
			ev->op.flops = nd->flops;
			ev->op.bytes = nd->bytes;
		}
	}
	q = R.q;
	n = R.n_q;
	cap = R.cap_q;
	R.q = R.spare;               /* the last drained queue, its pages still mapped */
	R.cap_q = R.cap_spare;
	R.spare = NULL;
	R.n_q = 0;
	R.kicked = false;
	for (size_t i = 0; i < n; i++) {
		struct st_event *ev = &q[i];

		if (ev->kind == ST_RANGE) {
			ev->range.name = sess_id_locked(s, ev->range.name);
			ev->range.domain = sess_id_locked(s, ev->range.domain);
		}
		ev->start = rec_session_time(s, ev->start);
		ev->end = rec_session_time(s, ev->end);
	}
	pthread_mutex_unlock(&R.lock);

	for (size_t i = 0; i < n_ops; i++)
		rec_session_add_locked(s, &ops[i]);
	for (size_t i = 0; i < n; i++)
		rec_session_add_locked(s, &q[i]);
	free(ops);
	pthread_mutex_lock(&R.lock);
	if (!R.spare) {
		R.spare = q;
		R.cap_spare = cap;
		q = NULL;
	}
	pthread_mutex_unlock(&R.lock);
	free(q);
}

/* ---- configuration ------------------------------------------------------ */

int ranges_init(const struct ranges_config *c)
{
	int rc = 0;

	pthread_mutex_lock(&R.lock);
	if (!R.init) {
		R.init = true;
		R.n_str = 1;
		if (ALLOC_GROW(R.str, 1, R.cap_str)) {
			rc = -1;
		} else {
			R.str[0] = "";
			R.n_nodes = 1;   /* the root */
			if (ALLOC_GROW(R.nodes, 1, R.cap_nodes))
				rc = -1;
			else
				memset(&R.nodes[0], 0, sizeof(R.nodes[0]));
		}
		R.step_name = c->step_range && *c->step_range ? intern_locked(c->step_range) : 0;
		R.warmup = c->warmup >= 0 ? (uint32_t)c->warmup : 0;
		R.warmup_default = c->warmup < 0;
		R.elem_bytes = c->elem_bytes ? c->elem_bytes : 4;
		if (c->step_range && *c->step_range && !R.step_name)
			rc = -1;
		if (!R.step_name)
			capture_step_begin(0);   /* the run is step 0 */
	}
	pthread_mutex_unlock(&R.lock);
	return rc;
}

struct ranges_domain *ranges_domain_create(const char *name)
{
	struct ranges_domain *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->nccl = name && !strcmp(name, "NCCL");
	pthread_mutex_lock(&R.lock);
	d->name = intern_locked(name);
	if (ALLOC_GROW(R.domains, R.n_domains + 1, R.cap_domains)) {
		free(d);
		d = NULL;
	} else {
		R.domains[R.n_domains++] = d;
	}
	pthread_mutex_unlock(&R.lock);
	return d;
}

/* name without emit_nvtx's per-call fields into buf, or a malloc'd copy when longer; NULL when out of memory. */
static char *normalized(const char *name, char *buf, size_t len)
{
	size_t n = strlen(name);

	if (n >= len) {
		buf = malloc(n + 1);
		if (!buf)
			return NULL;
		len = n + 1;
	}
	aten_normalize(name, buf, len);
	return buf;
}

uint32_t ranges_register(const char *s)
{
	char buf[NAME_BUF], *norm = normalized(s ? s : "", buf, sizeof(buf));
	uint32_t id;

	if (!norm)
		return 0;
	pthread_mutex_lock(&R.lock);
	id = intern_locked(norm);
	pthread_mutex_unlock(&R.lock);
	if (norm != buf)
		free(norm);
	return id;
}

/* ---- the range stacks ---------------------------------------------------- */

/* A thread ends: it is no helper or lead any more. */
static void tstate_free(void *p)
{
	struct tstate *s = p;

	pthread_mutex_lock(&R.lock);
	for (size_t i = 0; i < R.n_adopted; i++)
		if (R.adopted[i] == s) {
			R.adopted[i] = R.adopted[--R.n_adopted];
			break;
		}
	if (R.lead == s) {
		R.lead = NULL;
		R.lead_node = 0;
		R.lead_depth = 0;
		capture_set_lead_op(0);
	}
	pthread_mutex_unlock(&R.lock);
	free(s);
}

static void tkey_make(void)
{
	pthread_key_create(&tkey, tstate_free);
}

/* Empties s's range stack, which belongs to an earlier session; mutex held. */
static void stack_reset_locked(struct tstate *s)
{
	s->depth = 0;
	s->too_deep = 0;
	s->sess_gen = R.sess_gen;
}

struct tstate *tstate(void)
{
	if (ts) {
		if (ts->sess_gen != atomic_load_explicit(&R.sess_gen, memory_order_relaxed)) {
			pthread_mutex_lock(&R.lock);
			stack_reset_locked(ts);
			pthread_mutex_unlock(&R.lock);
		}
		return ts;
	}
	ts = calloc(1, sizeof(*ts));
	if (!ts)
		return NULL;
	ts->thread = capture_thread_id();
	ts->sess_gen = atomic_load_explicit(&R.sess_gen, memory_order_relaxed);
	pthread_once(&tkey_once, tkey_make);
	pthread_setspecific(tkey, ts);
	return ts;
}

/* The string id of a message: the registered one, or `name` normalised and interned. */
static uint32_t message_id_locked(const char *name, uint32_t reg, const char *norm)
{
	if (reg)
		return reg < R.n_str ? reg : 0;
	return intern_locked(norm ? norm : name);
}

/* Hands the innermost open range's op to the launch callbacks. */
void current_op(const struct tstate *t)
{
	uint32_t op = t->depth ? t->f[t->depth - 1].op : 0;

	if (op)
		capture_op_begin(op);
	else
		capture_op_end();
}

/* Registers a helper thread of the lead; with the mutex held. */
void adopt_locked(struct tstate *s)
{
	if (s->adopted || ALLOC_GROW(R.adopted, R.n_adopted + 1, R.cap_adopted))
		return;
	R.adopted[R.n_adopted++] = s;
	s->adopted = true;
}

/* The lead's innermost range changed: its node, depth and op for the helpers. */
static void lead_top_locked(const struct tstate *s)
{
	const struct frame *top = s->depth ? &s->f[s->depth - 1] : NULL;

	R.lead_node = top ? top->node : 0;
	R.lead_depth = top ? top->depth + 1 : 0;
	capture_set_lead_op(top ? top->op : 0);
}

void ranges_stackless(void)
{
	struct tstate *s = tstate();

	if (!s || s == R.lead)
		return;
	if (!s->adopted) {
		pthread_mutex_lock(&R.lock);
		adopt_locked(s);
		pthread_mutex_unlock(&R.lock);
	}
	atomic_store_explicit(&s->active, atomic_load_explicit(&R.epoch, memory_order_relaxed),
			      memory_order_relaxed);
}

/* Where a new frame on s sits: its parent's node and depth (a helper's roots sit under the lead's top). */
void parent_of_locked(const struct tstate *s, uint32_t *node, int32_t *depth)
{
	const struct frame *top = s->depth ? &s->f[s->depth - 1] : NULL;

	*node = top ? top->node : s == R.lead ? 0 : R.lead_node;
	*depth = top ? top->depth : s == R.lead ? -1 : R.lead_depth - 1;
}

/* Fills f's depth, node and op as a frame above `parent`/`pdepth`; with the mutex held. */
void frame_place_locked(struct frame *f, uint32_t parent, int32_t pdepth, uint32_t parent_op)
{
	if (f->flags & FR_ELIDED) {
		f->depth = pdepth;
		f->node = parent;
		f->op = parent_op;
		return;
	}
	f->depth = pdepth + 1;
	f->node = node_get_locked(parent, f->name, f->domain_name, f->flags & (FR_MODULE | FR_SYNTH));
	f->op = f->node ? op_next_locked(f->node) : 0;
}

/*
 * Pushes f (name, domain, start and flags set) on s; with the mutex held.
 * A range named like --step-range opens a step. -1 when too deep.
 */
int push_locked(struct tstate *s, struct frame *f)
{
	const struct frame *top = s->depth ? &s->f[s->depth - 1] : NULL;

	if (s->depth >= MAX_DEPTH) {
		s->too_deep++;
		R.lost++;
		return -1;
	}
	if (!R.lead)
		R.lead = s;
	if (!R.finished && R.init) {
		uint32_t parent;
		int32_t pdepth;

		parent_of_locked(s, &parent, &pdepth);
		if (!(f->flags & FR_ELIDED)) {
			uint32_t node = node_get_locked(parent, f->name, f->domain_name,
							f->flags & (FR_MODULE | FR_SYNTH));

			if (node && R.nodes[node].step && !R.step_open) {
				R.step_open = true;
				R.step_index = R.step_base + R.n_steps;
				R.gen++;
				f->step = true;
				R.lead = s;   /* the training loop's thread leads */
				capture_step_begin(R.step_index);
				if (R.step_index < ranges_warmup_locked())
					capture_measure_launch_cost();   /* once, in a warm-up step */
				parent_of_locked(s, &parent, &pdepth);
			}
		}
		frame_place_locked(f, parent, pdepth, top ? top->op : 0);
	}
	if (s == R.lead) {
		f->epoch = atomic_fetch_add_explicit(&R.epoch, 1, memory_order_relaxed) + 1;
	} else if (!top) {
		adopt_locked(s);
		atomic_store_explicit(&s->active, atomic_load_explicit(&R.epoch, memory_order_relaxed),
				      memory_order_relaxed);
	}
	s->f[s->depth++] = *f;
	if (s == R.lead)
		lead_top_locked(s);
	R.open++;
	return 0;
}

/* Copies a lead range that closed onto each helper that worked while it was open. */
static void mirror_locked(const struct frame *f, uint64_t end)
{
	for (size_t i = 0; i < R.n_adopted; i++) {
		struct tstate *h = R.adopted[i];

		if (h == R.lead || atomic_load_explicit(&h->active, memory_order_relaxed) < f->epoch)
			continue;
		if (!R.mirror_domain)
			R.mirror_domain = intern_locked(MIRROR_DOMAIN);
		range_event_locked(f->name, R.mirror_domain, h->thread, (uint32_t)f->depth, f->start, end);
	}
}

/*
 * Removes frame i of s, ending at t: written (unless elided), mirrored onto
 * the helpers when it is the lead's, a --step-range step closed, a module
 * call's sequence numbers closed. Frames above it stay. Mutex held.
 */
void pop_at_locked(struct tstate *s, int i, uint64_t t)
{
	struct frame f = s->f[i];

	memmove(&s->f[i], &s->f[i + 1], (size_t)(s->depth - i - 1) * sizeof(s->f[0]));
	s->depth--;
	if (!(f.flags & FR_ELIDED) && f.depth >= 0)
		range_payload_event_locked(f.name, f.domain_name, s->thread, (uint32_t)f.depth, f.start, t, f.comm,
					   f.bytes);
	if (f.flags & FR_MODULE)
		torch_call_end_locked(f.call);
	if (s == R.lead) {
		if (!(f.flags & FR_ELIDED))
			mirror_locked(&f, t);
		lead_top_locked(s);
	}
	if (f.step) {
		step_event_locked(R.step_index, s->thread, f.start, t, false);
		R.step_open = false;
		capture_step_end();
	}
	if (R.open)
		R.open--;
}

/* ---- NVTX ranges of the program ------------------------------------------------ */

bool ranges_domain_nccl(const struct ranges_domain *d)
{
	return d && d->nccl;
}

int ranges_push(struct ranges_domain *d, const char *name, uint32_t reg, uint64_t t)
{
	return ranges_push_payload(d, name, reg, t, 0, 0);
}

int ranges_push_payload(struct ranges_domain *d, const char *name, uint32_t reg, uint64_t t, uint64_t comm,
			uint64_t bytes)
{
	struct tstate *s = tstate();
	char buf[NAME_BUF], *norm = NULL;
	struct frame f = { .domain = d, .start = t, .call = CALL_NONE, .comm = comm, .bytes = bytes };
	struct aten_tags tags = { .seq = -1 };
	bool kick, helper;
	int rc;

	if (!s)
		return -1;
	if (s->depth >= MAX_DEPTH) {
		s->too_deep++;
		pthread_mutex_lock(&R.lock);
		R.lost++;
		pthread_mutex_unlock(&R.lock);
		return s->depth + s->too_deep - 1;
	}
	/* a helper's profiler range under the automatic mode is not written: no name needed */
	helper = name && atomic_load_explicit(&R.torch_on, memory_order_relaxed) && s != R.lead;
	if (helper)
		aten_tags(name, &tags);
	/* the profiler is turned off only once the backward has returned: no push races it */
	if (!reg && name && !(helper && elided_profiler_range_locked(&tags)))
		norm = normalized(name, buf, sizeof(buf));
	pthread_mutex_lock(&R.lock);
	if (norm || reg)
		f.name = message_id_locked(name, reg, norm);
	f.domain_name = d ? d->name : 0;
	if (helper && R.torch && s != R.lead && !R.finished)
		torch_helper_range_locked(s, &tags, &f, t);
	rc = push_locked(s, &f);
	kick = want_kick_locked();
	pthread_mutex_unlock(&R.lock);
	if (norm && norm != buf)
		free(norm);
	current_op(s);
	if (kick)
		capture_kick();
	return rc < 0 ? s->depth + s->too_deep - 1 : s->depth - 1;
}

int ranges_pop(struct ranges_domain *d, uint64_t t)
{
	return ranges_pop_payload(d, t, 0, 0);
}

int ranges_pop_payload(struct ranges_domain *d, uint64_t t, uint64_t comm, uint64_t bytes)
{
	struct tstate *s = tstate();
	bool kick;
	int i;

	if (!s)
		return -1;
	if (s->too_deep) {
		s->too_deep--;
		return s->depth + s->too_deep;
	}
	pthread_mutex_lock(&R.lock);
	for (i = s->depth - 1; i >= 0 && (s->f[i].domain != d || (s->f[i].flags & FR_SYNTH)); i--)
		;
	if (i < 0) {
		R.unpaired++;
		pthread_mutex_unlock(&R.lock);
		return -1;
	}
	if (!s->f[i].comm)
		s->f[i].comm = comm;
	if (!s->f[i].bytes)
		s->f[i].bytes = bytes;
	pop_at_locked(s, i, t);
	kick = want_kick_locked();
	pthread_mutex_unlock(&R.lock);
	current_op(s);
	if (kick)
		capture_kick();
	return i;
}

uint64_t ranges_start(struct ranges_domain *d, const char *name, uint32_t reg, uint64_t t)
{
	struct tstate *s = tstate();
	char buf[NAME_BUF], *norm = NULL;
	uint64_t id = 0;

	if (!reg && name)
		norm = normalized(name, buf, sizeof(buf));
	pthread_mutex_lock(&R.lock);
	if (!ALLOC_GROW(R.se, R.n_se + 1, R.cap_se)) {
		struct open_se *o = &R.se[R.n_se++];

		o->id = id = ++R.next_id;
		o->name = message_id_locked(name, reg, norm);
		o->domain = d ? d->name : 0;
		o->depth = s ? (uint32_t)s->depth : 0;
		o->thread = s ? s->thread : capture_thread_id();
		o->start = t;
	} else {
		R.lost++;
	}
	pthread_mutex_unlock(&R.lock);
	if (norm && norm != buf)
		free(norm);
	return id;
}

void ranges_end(uint64_t id, uint64_t t)
{
	size_t i;

	pthread_mutex_lock(&R.lock);
	for (i = R.n_se; i > 0 && R.se[i - 1].id != id; i--)
		;
	if (i == 0) {
		R.unpaired++;
	} else {
		struct open_se o = R.se[i - 1];

		R.se[i - 1] = R.se[--R.n_se];
		range_event_locked(o.name, o.domain, o.thread, o.depth, o.start, t);
	}
	pthread_mutex_unlock(&R.lock);
}

void ranges_mark(struct ranges_domain *d, const char *name, uint32_t reg, uint64_t t)
{
	struct tstate *s = tstate();
	char buf[NAME_BUF], *norm = NULL;

	if (!reg && name)
		norm = normalized(name, buf, sizeof(buf));
	pthread_mutex_lock(&R.lock);
	range_event_locked(message_id_locked(name, reg, norm), d ? d->name : 0,
			   s ? s->thread : capture_thread_id(), s ? (uint32_t)s->depth : 0, t, t);
	pthread_mutex_unlock(&R.lock);
	if (norm && norm != buf)
		free(norm);
}

/* ---- steps written, or held until the end (capture ranges, PyTorch's in torch.c) ---- */

uint32_t ranges_warmup_locked(void)
{
	return R.warmup_default && R.torch && !R.step_name ? 1 : R.warmup;
}

void write_step_locked(uint64_t thread, uint64_t start, uint64_t end, bool phases_only)
{
	step_event_locked(R.step_base + R.n_steps, thread, start, end, phases_only);
}

void hold_locked(struct held_step **v, size_t *n, size_t *cap, uint64_t thread, uint64_t start,
		 uint64_t end)
{
	if (*n >= HELD_CAP || ALLOC_GROW(*v, *n + 1, *cap)) {
		R.lost++;
		return;
	}
	(*v)[(*n)++] = (struct held_step){ .start = start, .end = end, .thread = thread };
}

void write_held_locked(const struct held_step *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		write_step_locked(v[i].thread, v[i].start, v[i].end, false);
}

/* ---- capture ranges -------------------------------------------------------------- */

void ranges_capture_range(bool start, uint64_t t)
{
	pthread_mutex_lock(&R.lock);
	if (!R.finished && R.init && !R.step_name) {
		if (start && !R.capture_open) {
			R.capture_open = t + 1;
			cost_boundary();   /* a step candidate: the recorder's time is told apart at its edges */
		} else if (!start && R.capture_open) {
			hold_locked(&R.captures, &R.n_captures, &R.cap_captures, capture_thread_id(),
				    R.capture_open - 1, t);
			R.capture_open = 0;
			cost_boundary();
		}
	}
	pthread_mutex_unlock(&R.lock);
}

void ranges_finish(uint64_t t0, uint64_t t_end)
{
	static char from_range[256];
	const char *torch_from;

	pthread_mutex_lock(&R.lock);
	if (!R.finished && R.init) {
		if (R.torch) {
			if (R.lead)
				drop_torch_frames_locked(R.lead);
			for (size_t i = 0; i < R.n_adopted; i++)
				drop_torch_frames_locked(R.adopted[i]);
		}
		if (R.capture_open) {
			hold_locked(&R.captures, &R.n_captures, &R.cap_captures, capture_thread_id(),
				    R.capture_open - 1, t_end);
			R.capture_open = 0;
		}
		if (R.step_name) {
			snprintf(from_range, sizeof(from_range), "NVTX range '%s'", R.str[R.step_name]);
			R.steps_from = from_range;
		} else if ((torch_from = torch_steps_locked())) {
			R.steps_from = torch_from;
		} else if (R.n_captures) {
			R.torch = 0;   /* not PyTorch's rule: no warm-up unless --warmup says */
			write_held_locked(R.captures, R.n_captures);
			R.steps_from = "cudaProfilerStart/Stop";
		} else {
			R.warmup = 0;   /* the only step: analyses would leave everything out */
			step_event_locked(0, capture_thread_id(), t0, t_end, false);
			R.steps_from = "whole run";
		}
		capture_step_end();
	}
	R.finished = true;
	pthread_mutex_unlock(&R.lock);
}

/* ---- recording sessions (record --armed) ------------------------------------------ */

void ranges_session_idle(void)
{
	pthread_mutex_lock(&R.lock);
	R.finished = true;
	pthread_mutex_unlock(&R.lock);
}

void ranges_session_begin(uint64_t t, uint32_t first_index)
{
	struct tstate *me = tstate();

	pthread_mutex_lock(&R.lock);
	if (R.init) {
		atomic_fetch_add_explicit(&R.sess_gen, 1, memory_order_relaxed);
		if (me)
			stack_reset_locked(me);
		if (R.lead)
			stack_reset_locked(R.lead);
		for (size_t i = 0; i < R.n_adopted; i++)
			stack_reset_locked(R.adopted[i]);
		R.finished = false;
		R.n_steps = R.n_warmup = R.step_index = 0;
		R.step_base = first_index;
		R.step_open = false;
		R.gen++;
		R.warmup = 0;                /* the program is warm: a triggered bundle has no warm-up */
		R.warmup_default = false;
		R.ops_written = 0;           /* the new session has none of the ops yet */
		R.sess_of = NULL;            /* nor any of our strings */
		R.n_q = 0;
		R.kicked = false;
		R.open = R.n_se = 0;
		R.ranges = R.unpaired = R.lost = 0;
		R.n_captures = 0;
		R.capture_open = 0;
		R.steps_from = NULL;
		R.lead_node = 0;
		R.lead_depth = 0;
		capture_set_lead_op(0);
		if (R.torch)
			torch_session_begin_locked(t);
	}
	pthread_mutex_unlock(&R.lock);
	if (me)
		current_op(me);
}

static void fork_prepare(void)
{
	pthread_mutex_lock(&R.lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&R.lock);
}

static void fork_child(void)
{
	R.finished = true;   /* the child records nothing; the queue is the parent's */
	pthread_mutex_unlock(&R.lock);
}

void ranges_atfork(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void ranges_totals(struct ranges_totals *t)
{
	pthread_mutex_lock(&R.lock);
	t->ranges = R.ranges;
	t->steps = R.n_steps;
	t->warmup = R.n_warmup;
	t->ops = (uint32_t)R.n_ops;
	t->open = R.open + R.n_se;
	t->unpaired = R.unpaired;
	t->lost = R.lost;
	t->ops_capped = R.ops_capped;
	t->steps_from = R.steps_from;
	pthread_mutex_unlock(&R.lock);
}
