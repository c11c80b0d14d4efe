/*
 * nvtx.c: see nvtx.h.
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

#define MAX_DEPTH 256             /* per thread; deeper pushes are counted, not recorded */
#define OPS_CAP (1u << 20)        /* ops registered at most (an op per execution per step) */
#define QUEUE_KICK (1u << 16)     /* queued events that wake the decoder thread */
#define QUEUE_MAX (1u << 20)      /* queued events past which new ones are lost */
#define NAME_BUF 1024             /* names longer than this are normalised on the heap */
#define MIRROR_DOMAIN "steptrace.mirror"
#define TORCH_DOMAIN "steptrace.torch"
#define CALLS_CAP (1u << 20)      /* module calls kept per step for the backward's chains */
#define CALL_NONE UINT32_MAX
#define CHAIN_MAX 64              /* module nesting the backward copies */
#define HELD_CAP (1u << 20)       /* step candidates held until the end */

struct ranges_domain {
	uint32_t name;
	bool nccl;                       /* NCCL's: its ranges carry a communicator and a message size */
};

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

/* What a frame is, beyond an NVTX range of the program. */
enum frame_flag {
	FR_ELIDED = 1,       /* not written: its node, op and depth are its parent's */
	FR_STEP = 2,         /* a step of the PyTorch rule ("step", domain steptrace.torch) */
	FR_PHASE = 4,        /* a phase of the Python side */
	FR_PERSIST = 8,      /* ... at the top of a step: open until the next phase begins */
	FR_MODULE = 16,      /* an nn.Module call (call: its sequence numbers) */
	FR_SYNTH = 32,       /* a helper's copy of a forward module call, for the backward */
	FR_ENDED = 64,       /* a persistent phase whose call has returned */
};

struct frame {
	uint32_t node, op, name, domain_name;
	int32_t depth;                   /* written depth: a helper thread's sit under the lead's;
					  * an elided frame has its parent's */
	struct ranges_domain *domain;
	uint64_t start, epoch;
	uint32_t call;                   /* FR_MODULE, FR_SYNTH: index into R.calls, else CALL_NONE */
	uint8_t flags;                   /* enum frame_flag */
	uint8_t phase;                   /* FR_PHASE: enum ranges_phase */
	bool step;                       /* a step of --step-range */
	uint64_t comm, bytes;            /* NCCL's payload: communicator id, message size; 0 none */
};

/* A module call of the lead thread: the autograd sequence numbers its forward used. */
struct call {
	uint64_t begin, end;             /* [begin, end); end UINT64_MAX while open */
	uint32_t name, parent;           /* its range's name; the enclosing call, CALL_NONE */
};

/* A step found, not yet written: held until the end decides which rule gives the steps. */
struct held_step {
	uint64_t start, end, thread;
};

struct tstate {
	uint64_t thread;
	int depth, too_deep;
	bool adopted;                    /* a helper of the lead thread (R.adopted) */
	_Atomic uint64_t active;         /* R.epoch when it last pushed a root range or launched without one */
	struct frame f[MAX_DEPTH];
};

struct open_se {
	uint64_t id, start, thread;
	uint32_t name, domain, depth;
};

static struct {
	pthread_mutex_t lock;
	bool init, finished;
	uint32_t step_name, warmup;
	unsigned elem_bytes;

	char **str;                      /* id -> string; id 0 is "" */
	size_t n_str, cap_str;
	uint32_t *str_hash;              /* open addressing, slot -> id (0 empty) */
	size_t str_hash_cap;
	uint32_t *sess;                  /* id -> session string id, 0 not yet interned there */
	size_t cap_sess;
	const struct rec_session *sess_of;

	struct node *nodes;              /* index 0: the root (no range) */
	size_t n_nodes, cap_nodes;
	uint32_t *node_hash;
	size_t node_hash_cap;

	uint32_t *op_node;               /* op id i + 1 -> node */
	size_t n_ops, cap_ops, ops_written;
	bool ops_capped;

	uint32_t gen, n_steps, n_warmup, step_index;
	bool warmup_default;             /* no --warmup: PyTorch's steps flag their first */
	bool step_open;

	/*
	 * The lead thread: the one with the step range (else the first to
	 * push a range). Other threads (autograd's, which runs the backward
	 * pass) are its helpers: their root ranges are children of the lead's
	 * innermost range, their launches outside any range of theirs take the
	 * lead's op (capture_set_lead_op), and each lead range open while a
	 * helper worked is copied onto the helper's thread, in domain
	 * MIRROR_DOMAIN, so that NVTX projection puts the helper's kernels
	 * under it too ("train_step/backward").
	 */
	struct tstate *lead;
	uint32_t lead_node, mirror_domain;
	int32_t lead_depth;              /* depth a helper's root range is written at */
	_Atomic uint64_t epoch;          /* lead pushes so far */
	struct tstate **adopted;
	size_t n_adopted, cap_adopted;
	uint64_t open;                   /* ranges pushed and not popped, every thread */

	struct ranges_domain **domains;  /* every domain made: its name may be in queued events */
	size_t n_domains, cap_domains;

	struct open_se *se;
	size_t n_se, cap_se;
	uint64_t next_id;

	struct st_event *q;              /* string ids are ours until drained */
	size_t n_q, cap_q;
	struct st_event *spare;          /* the queue drained last, kept for reuse */
	size_t cap_spare;
	bool kicked;

	uint64_t ranges, unpaired, lost;

	/*
	 * PyTorch (ranges_torch_*). tsteps: its step rule gives the steps (no
	 * --step-range). A step frame is always open on the lead once the
	 * Python side has spoken; `opt_steps`: steps the optimizer ended (then
	 * held outermost-module steps are dropped); `held`: the steps of the
	 * outermost module calls before any optimizer step, or the capture
	 * ranges, written at the end if nothing else gave steps.
	 */
	int torch;                       /* enum ranges_torch_mode, 0 off */
	_Atomic bool torch_on;           /* torch != 0, read without the mutex */
	bool tsteps;
	uint64_t (*peek)(void);
	struct ranges_domain *tdom;
	uint32_t tdom_name, step_word;   /* string ids: "steptrace.torch", "step" */
	uint32_t phase_word[RANGES_PHASE_COUNT];
	uint64_t step_start;             /* the open step frame's start */
	uint32_t opt_steps;
	bool backward_since_clear;       /* a backward began since the module calls were cleared */
	_Atomic bool own_profiler;       /* the Python side's backward profiler is on: its ranges are not written */
	struct held_step *held;          /* outermost module calls before any optimizer step */
	size_t n_held, cap_held;
	struct call *calls;              /* this step's module calls, by begin */
	size_t n_calls, cap_calls;
	struct held_step *captures;      /* cudaProfilerStart/Stop ranges */
	size_t n_captures, cap_captures;
	uint64_t capture_open;           /* start of an open capture range + 1, 0 none */
	const char *steps_from;
} R = { .lock = PTHREAD_MUTEX_INITIALIZER };

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
static uint32_t intern_locked(const char *s)
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

static struct st_event *queue_locked(int kind, uint64_t start, uint64_t end)
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
static bool want_kick_locked(void)
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

static void range_event_locked(uint32_t name, uint32_t domain, uint64_t thread, uint32_t depth,
			       uint64_t start, uint64_t end)
{
	range_payload_event_locked(name, domain, thread, depth, start, end, 0, 0);
}

static void step_event_locked(uint32_t index, uint64_t thread, uint64_t start, uint64_t end)
{
	struct st_event *ev = queue_locked(ST_STEP, start, end);

	if (!ev)
		return;
	bool warm = index < (R.warmup_default && R.torch && !R.step_name ? 1 : R.warmup);

	ev->step.index = index;
	ev->step.warmup = warm;
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

static struct tstate *tstate(void)
{
	if (ts)
		return ts;
	ts = calloc(1, sizeof(*ts));
	if (!ts)
		return NULL;
	ts->thread = capture_thread_id();
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
static void current_op(const struct tstate *t)
{
	uint32_t op = t->depth ? t->f[t->depth - 1].op : 0;

	if (op)
		capture_op_begin(op);
	else
		capture_op_end();
}

/* Registers a helper thread of the lead; with the mutex held. */
static void adopt_locked(struct tstate *s)
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
static void parent_of_locked(const struct tstate *s, uint32_t *node, int32_t *depth)
{
	const struct frame *top = s->depth ? &s->f[s->depth - 1] : NULL;

	*node = top ? top->node : s == R.lead ? 0 : R.lead_node;
	*depth = top ? top->depth : s == R.lead ? -1 : R.lead_depth - 1;
}

/* Fills f's depth, node and op as a frame above `parent`/`pdepth`; with the mutex held. */
static void frame_place_locked(struct frame *f, uint32_t parent, int32_t pdepth, uint32_t parent_op)
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
static int push_locked(struct tstate *s, struct frame *f)
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
				R.step_index = R.n_steps;
				R.gen++;
				f->step = true;
				R.lead = s;   /* the training loop's thread leads */
				capture_step_begin(R.step_index);
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
static void pop_at_locked(struct tstate *s, int i, uint64_t t)
{
	struct frame f = s->f[i];

	memmove(&s->f[i], &s->f[i + 1], (size_t)(s->depth - i - 1) * sizeof(s->f[0]));
	s->depth--;
	if (!(f.flags & FR_ELIDED) && f.depth >= 0)
		range_payload_event_locked(f.name, f.domain_name, s->thread, (uint32_t)f.depth, f.start, t, f.comm,
					   f.bytes);
	if ((f.flags & FR_MODULE) && f.call < R.n_calls && R.peek)
		R.calls[f.call].end = R.peek();
	if (s == R.lead) {
		if (!(f.flags & FR_ELIDED))
			mirror_locked(&f, t);
		lead_top_locked(s);
	}
	if (f.step) {
		step_event_locked(R.step_index, s->thread, f.start, t);
		R.step_open = false;
		capture_step_end();
	}
	if (R.open)
		R.open--;
}

/* ---- the backward's module chains (PyTorch) --------------------------------------- */

/* The innermost module call whose sequence numbers hold seq, CALL_NONE if none. */
static uint32_t call_of_locked(uint64_t seq)
{
	size_t lo = 0, hi = R.n_calls;
	uint32_t c;

	while (lo < hi) {   /* the last call that began at or before seq */
		size_t mid = lo + (hi - lo) / 2;

		if (R.calls[mid].begin <= seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return CALL_NONE;
	for (c = (uint32_t)(lo - 1); c != CALL_NONE && seq >= R.calls[c].end; c = R.calls[c].parent)
		;
	return c;
}

/* Frames of s that are its copies of module calls: they are at the bottom of its stack. */
static int synth_count(const struct tstate *s)
{
	int k = 0;

	while (k < s->depth && (s->f[k].flags & FR_SYNTH))
		k++;
	return k;
}

/*
 * Moves helper s onto the module chain of forward sequence number seq at t:
 * its copies of the module calls that are not on that chain end when its
 * first open range of its own began (or t), the missing ones begin then,
 * and its open ranges move on top of them. Mutex held.
 */
static void chain_switch_locked(struct tstate *s, uint64_t seq, uint64_t t)
{
	uint32_t chain[CHAIN_MAX], c = call_of_locked(seq);
	struct frame real[8];
	int n = 0, k = synth_count(s), same = 0, n_real = s->depth - k;

	for (; c != CALL_NONE; c = R.calls[c].parent)
		if (n < CHAIN_MAX)
			chain[n++] = c;
	for (int i = 0; i < n / 2; i++) {   /* root first */
		uint32_t x = chain[i];

		chain[i] = chain[n - 1 - i];
		chain[n - 1 - i] = x;
	}
	while (same < k && same < n && s->f[same].call == chain[same])
		same++;
	if (same == k && same == n)
		return;
	if (n_real > (int)(sizeof(real) / sizeof(real[0])))
		return;   /* deep reentrant work: leave it where it is */
	if (n_real > 0)
		t = s->f[k].start;
	memcpy(real, &s->f[k], (size_t)n_real * sizeof(real[0]));
	s->depth = k;
	while (s->depth > same) {
		const struct frame *f = &s->f[s->depth - 1];

		range_event_locked(f->name, f->domain_name, s->thread, (uint32_t)f->depth, f->start, t);
		s->depth--;
		if (R.open)
			R.open--;
	}
	for (int i = same; i < n && s->depth < MAX_DEPTH; i++) {
		struct frame f = { .name = R.calls[chain[i]].name, .domain_name = R.tdom_name,
				   .domain = R.tdom, .start = t, .call = chain[i], .flags = FR_SYNTH };
		uint32_t parent;
		int32_t pdepth;

		parent_of_locked(s, &parent, &pdepth);
		frame_place_locked(&f, parent, pdepth, 0);
		s->f[s->depth++] = f;
		R.open++;
	}
	for (int i = 0; i < n_real && s->depth < MAX_DEPTH; i++) {
		struct frame f = real[i];
		const struct frame *top = s->depth ? &s->f[s->depth - 1] : NULL;
		uint32_t parent;
		int32_t pdepth;

		parent_of_locked(s, &parent, &pdepth);
		frame_place_locked(&f, parent, pdepth, top ? top->op : 0);
		s->f[s->depth++] = f;
	}
	adopt_locked(s);
	atomic_store_explicit(&s->active, atomic_load_explicit(&R.epoch, memory_order_relaxed),
			      memory_order_relaxed);
}

/* The backward ended at t: each helper's copies of module calls end (its own ranges stay). */
static void chains_close_locked(uint64_t t)
{
	for (size_t i = 0; i < R.n_adopted; i++) {
		struct tstate *h = R.adopted[i];
		int k = synth_count(h);

		if (h == R.lead || !k || h->depth != k)
			continue;
		while (h->depth > 0)
			pop_at_locked(h, h->depth - 1, t);
	}
}

/* Is a range with these tags one of the Python side's own profiler, not written? */
static bool elided_profiler_range_locked(const struct aten_tags *tags)
{
	return tags->profiled && R.torch == RANGES_TORCH_AUTO &&
	       atomic_load_explicit(&R.own_profiler, memory_order_relaxed);
}

/*
 * A profiler range pushed on a helper (autograd's thread): a node with
 * "seq = N" moves the helper to N's module chain, when nothing of the
 * helper's own is open but autograd's evaluate_function wrapper; under
 * the automatic mode the profiler's ranges are not written. Mutex held.
 */
static void torch_helper_range_locked(struct tstate *s, const struct aten_tags *tags, struct frame *f,
				      uint64_t t)
{
	int k, n_real;

	if (tags->seq >= 0 && R.n_calls) {
		k = synth_count(s);
		n_real = s->depth - k;
		if (n_real == 0 ||
		    (n_real == 1 && !strncmp(R.str[s->f[k].name], "autograd::engine::evaluate_function", 35)))
			chain_switch_locked(s, (uint64_t)tags->seq, t);
	}
	if (elided_profiler_range_locked(tags))
		f->flags |= FR_ELIDED;
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

/* ---- PyTorch: steps, phases, modules, tags ------------------------------------- */

void ranges_torch_attach(enum ranges_torch_mode mode, uint64_t (*peek)(void))
{
	struct ranges_domain *d = ranges_domain_create(TORCH_DOMAIN);
	struct tstate *s = tstate();

	pthread_mutex_lock(&R.lock);
	if (!R.torch && d && s) {
		R.torch = mode;
		atomic_store(&R.torch_on, true);
		R.peek = peek;
		R.tdom = d;
		R.tdom_name = d->name;
		R.step_word = intern_locked("step");
		for (int p = 1; p < RANGES_PHASE_COUNT; p++)
			R.phase_word[p] = intern_locked(ranges_phase_names[p]);
		R.tsteps = !R.step_name;
		if (R.tsteps)
			capture_step_end();   /* launches before the first step are outside it */
		R.lead = s;           /* the training loop's thread leads */
	}
	pthread_mutex_unlock(&R.lock);
}

/* Index of the innermost frame of s with all of `flags`, -1 if none. */
static int find_flags(const struct tstate *s, uint8_t flags)
{
	int i = s->depth - 1;

	while (i >= 0 && (s->f[i].flags & flags) != flags)
		i--;
	return i;
}

/* Pushes a frame of the domain steptrace.torch; with the mutex held. */
static struct frame *torch_push_locked(struct tstate *s, uint32_t name, uint8_t flags, uint64_t t)
{
	struct frame f = { .name = name, .domain_name = R.tdom_name, .domain = R.tdom, .start = t,
			   .call = CALL_NONE, .flags = flags };

	return push_locked(s, &f) ? NULL : &s->f[s->depth - 1];
}

/* The lead is in a step (the PyTorch rule): one begins at t if none is open. Mutex held. */
static void open_step_locked(struct tstate *s, uint64_t t)
{
	if (!R.tsteps || s != R.lead || R.finished || find_flags(s, FR_STEP) >= 0)
		return;
	R.gen++;
	R.step_open = true;
	R.step_start = t;
	capture_step_begin(R.n_steps + (uint32_t)R.n_held);
	torch_push_locked(s, R.step_word, FR_STEP, t);
}

/* Ends the lead's step frame and what of ours is above it at t; returns its start. Mutex held. */
static uint64_t close_step_locked(struct tstate *s, uint64_t t)
{
	int i = find_flags(s, FR_STEP);
	uint64_t start = R.step_start;

	if (i < 0)
		return t;
	for (int j = s->depth - 1; j >= i; j--)
		if (s->f[j].domain == R.tdom)
			pop_at_locked(s, j, t);
	R.step_open = false;
	capture_step_end();
	return start;
}

static void write_step_locked(uint64_t thread, uint64_t start, uint64_t end)
{
	step_event_locked(R.n_steps, thread, start, end);
}

static void hold_locked(struct held_step **v, size_t *n, size_t *cap, uint64_t thread, uint64_t start,
			uint64_t end)
{
	if (*n >= HELD_CAP || ALLOC_GROW(*v, *n + 1, *cap)) {
		R.lost++;
		return;
	}
	(*v)[(*n)++] = (struct held_step){ .start = start, .end = end, .thread = thread };
}

/* Is there a range named `word` open on s (the program's or ours)? */
static bool open_named(const struct tstate *s, uint32_t word)
{
	for (int i = s->depth - 1; i >= 0; i--)
		if (s->f[i].name == word && !(s->f[i].flags & FR_ELIDED))
			return true;
	return false;
}

void ranges_torch_phase(int phase, bool begin, uint64_t t)
{
	struct tstate *s = tstate();
	int i;

	if (!s || phase < 1 || phase >= RANGES_PHASE_COUNT)
		return;
	pthread_mutex_lock(&R.lock);
	if (!R.torch || R.finished) {
		pthread_mutex_unlock(&R.lock);
		return;
	}
	if (begin) {
		const struct frame *top;
		uint8_t flags = FR_PHASE;

		open_step_locked(s, t);
		if (phase == RANGES_PHASE_BACKWARD)
			R.backward_since_clear = true;
		if (phase == RANGES_PHASE_FORWARD && s == R.lead && !R.backward_since_clear)
			R.n_calls = 0;   /* forward after forward (inference): the older calls are not needed */
		top = s->depth ? &s->f[s->depth - 1] : NULL;
		if (top && (top->flags & FR_PERSIST)) {   /* the step's phase ends where the next begins */
			if (top->phase == RANGES_PHASE_BACKWARD)
				chains_close_locked(t);
			pop_at_locked(s, s->depth - 1, t);
			top = s->depth ? &s->f[s->depth - 1] : NULL;
		}
		if (open_named(s, R.phase_word[phase]))
			flags |= FR_ELIDED;          /* the program's own range says it already */
		else if (s == R.lead && (!top || (top->flags & FR_STEP)))
			flags |= FR_PERSIST;
		if (torch_push_locked(s, R.phase_word[phase], flags, t))
			s->f[s->depth - 1].phase = (uint8_t)phase;
	} else {
		for (i = s->depth - 1; i >= 0; i--)
			if ((s->f[i].flags & FR_PHASE) && s->f[i].phase == phase && !(s->f[i].flags & FR_ENDED))
				break;
		if (phase == RANGES_PHASE_BACKWARD)
			chains_close_locked(t);
		if (i >= 0 && (s->f[i].flags & FR_PERSIST)) {
			s->f[i].flags |= FR_ENDED;
			/* before any optimizer step, each outermost module call may be a step (inference) */
			if (phase == RANGES_PHASE_FORWARD && R.tsteps && !R.opt_steps && s == R.lead) {
				uint64_t start = close_step_locked(s, t);

				hold_locked(&R.held, &R.n_held, &R.cap_held, s->thread, start, t);
				open_step_locked(s, t);
			}
		} else if (i >= 0) {
			pop_at_locked(s, i, t);
		}
	}
	pthread_mutex_unlock(&R.lock);
	current_op(s);
}

void ranges_torch_profiler(bool on)
{
	pthread_mutex_lock(&R.lock);
	R.own_profiler = on;
	pthread_mutex_unlock(&R.lock);
}

void ranges_torch_module(uint32_t name, uint64_t t)
{
	struct tstate *s = tstate();
	struct frame *f;
	bool kick;

	if (!s)
		return;
	pthread_mutex_lock(&R.lock);
	if (!R.torch || R.finished || !name || name >= R.n_str) {
		pthread_mutex_unlock(&R.lock);
		return;
	}
	open_step_locked(s, t);
	f = torch_push_locked(s, name, FR_MODULE, t);
	if (f && s == R.lead && R.peek && R.n_calls < CALLS_CAP &&
	    !ALLOC_GROW(R.calls, R.n_calls + 1, R.cap_calls)) {
		uint32_t parent = CALL_NONE;
		int outer;

		for (outer = s->depth - 2; outer >= 0 && !(s->f[outer].flags & FR_MODULE); outer--)
			;
		if (outer >= 0)
			parent = s->f[outer].call;
		f->call = (uint32_t)R.n_calls;
		R.calls[R.n_calls++] = (struct call){ .begin = R.peek(), .end = UINT64_MAX, .name = name,
						      .parent = parent };
	}
	kick = want_kick_locked();
	pthread_mutex_unlock(&R.lock);
	current_op(s);
	if (kick)
		capture_kick();
}

void ranges_torch_module_end(uint64_t t)
{
	struct tstate *s = tstate();
	int i;

	if (!s)
		return;
	pthread_mutex_lock(&R.lock);
	i = R.torch ? find_flags(s, FR_MODULE) : -1;
	if (i >= 0 && !(s->f[i].flags & FR_SYNTH))
		pop_at_locked(s, i, t);
	pthread_mutex_unlock(&R.lock);
	current_op(s);
}

void ranges_torch_step(uint64_t t)
{
	struct tstate *s = tstate();

	if (!s)
		return;
	pthread_mutex_lock(&R.lock);
	if (R.torch && R.tsteps && !R.finished && s == R.lead && find_flags(s, FR_STEP) >= 0) {
		uint64_t start = close_step_locked(s, t);

		if (!R.opt_steps && R.n_held)   /* the first: the outermost module calls before it are in it */
			start = R.held[0].start;
		R.n_held = 0;
		R.n_calls = 0;   /* the backward's chains refer to this step's module calls only */
		R.backward_since_clear = false;
		R.opt_steps++;
		write_step_locked(s->thread, start, t);
		open_step_locked(s, t);
	}
	pthread_mutex_unlock(&R.lock);
	current_op(s);
}

void ranges_torch_tag(const uint64_t *pairs, size_t n, uint32_t category, uint32_t device, uint64_t t)
{
	bool kick;

	pthread_mutex_lock(&R.lock);
	for (size_t i = 0; R.torch && i < n; i++) {
		struct st_event *ev = queue_locked(ST_MEMTAG, t, t);

		if (!ev)
			break;
		ev->mem.address = pairs[2 * i];
		ev->mem.size = pairs[2 * i + 1];
		ev->mem.category = category;
		ev->mem.device = device;
		ev->mem.source = ST_SRC_DRIVER;
	}
	kick = want_kick_locked();
	pthread_mutex_unlock(&R.lock);
	if (kick)
		capture_kick();
}

/* ---- capture ranges -------------------------------------------------------------- */

void ranges_capture_range(bool start, uint64_t t)
{
	pthread_mutex_lock(&R.lock);
	if (!R.finished && R.init && !R.step_name) {
		if (start && !R.capture_open) {
			R.capture_open = t + 1;
		} else if (!start && R.capture_open) {
			hold_locked(&R.captures, &R.n_captures, &R.cap_captures, capture_thread_id(),
				    R.capture_open - 1, t);
			R.capture_open = 0;
		}
	}
	pthread_mutex_unlock(&R.lock);
}

/* Drops what of ours is still open on s at the end (a step not ended by an optimizer step, its phases). */
static void drop_torch_frames_locked(struct tstate *s)
{
	int n = 0;

	for (int i = 0; i < s->depth; i++) {
		if (s->f[i].domain == R.tdom) {
			if (R.open)
				R.open--;
			continue;
		}
		s->f[n++] = s->f[i];
	}
	s->depth = n;
}

static void write_held_locked(const struct held_step *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		write_step_locked(v[i].thread, v[i].start, v[i].end);
}

void ranges_finish(uint64_t t0, uint64_t t_end)
{
	static char from_range[256];

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
		} else if (R.opt_steps) {
			R.steps_from = "optimizer steps (PyTorch)";
		} else if (R.n_held) {
			write_held_locked(R.held, R.n_held);
			R.steps_from = "outermost module calls (PyTorch, no optimizer step)";
		} else if (R.n_captures) {
			R.torch = 0;   /* not PyTorch's rule: no warm-up unless --warmup says */
			write_held_locked(R.captures, R.n_captures);
			R.steps_from = "cudaProfilerStart/Stop";
		} else {
			R.warmup = 0;   /* the only step: analyses would leave everything out */
			step_event_locked(0, capture_thread_id(), t0, t_end);
			R.steps_from = "whole run";
		}
		capture_step_end();
	}
	R.finished = true;
	pthread_mutex_unlock(&R.lock);
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
