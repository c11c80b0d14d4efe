/*
 * test_payload.c: record/payload.c, NVTX's payload extension, without a GPU,
 * driven as NCCL drives it (src/include/nvtx.h and nvtx_payload_schemas.h
 * of NCCL 2.2x): schemas registered through the extension's slot, a
 * scoped range per API call in domain "NCCL" pushed with
 * nvtxDomainRangePushEx, a collective's payload (communicator, message
 * size, reduction) attached at the push, and ncclCommInitRankConfig's
 * range ended with nvtxRangePopPayload, its payload (communicator, ranks,
 * rank, device) attached at the pop.
 *
 * Read back: ncclCommInitRankConfig's range is closed where NCCL ended it
 * and carries the communicator, so the step after it is a root ("step", not
 * "ncclCommInitRankConfig/step") and nothing is left open; a collective's
 * size comes from the entry named "Message size [bytes]", at its offset or
 * where natural alignment puts it; ncclCommDestroy's payload, whose second
 * and third entries are the number of ranks and the rank, gives no size
 * (read by position they made 4,294,967,298 bytes on rank 1 of 2).
 */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <stdio.h>
#include <string.h>

#include "record/capture.h"
#include "record/nvtx.h"
#include "record/payload.h"
#include "record/session.h"
#include "tests/lib/check.h"
#include "trace/bundle.h"

#define SID(n) (NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + (n))
#define SID_INIT_RANK SID(0)
#define SID_DESTROY SID(2)
#define SID_ALLREDUCE SID(5)
#define SID_INIT_RANK_CONFIG SID(11)
#define SID_IMPLICIT SID(40)      /* a schema whose entries give no offsets */
#define COMM 0xC0FFEE1234ull

struct init_rank { uint64_t comm; int nranks, rank, dev; };
struct allreduce { uint64_t comm; size_t bytes; int op; };
struct implicit { uint64_t comm; int peer; size_t bytes; };

typedef uint64_t (*register_fn)(nvtxDomainHandle_t, const nvtxPayloadSchemaAttr_t *);
typedef int (*pop_fn)(nvtxDomainHandle_t, const nvtxPayloadData_t *, size_t);

static intptr_t slots[64];

static uint64_t schema(struct ranges_domain *d, uint64_t id, const nvtxPayloadSchemaEntry_t *e, size_t n)
{
	nvtxPayloadSchemaAttr_t a;

	memset(&a, 0, sizeof(a));
	a.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
		      NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID;
	a.type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC;
	a.entries = e;
	a.numEntries = n;
	a.schemaId = id;
	return ((register_fn)slots[NVTX3EXT_CBID_nvtxPayloadSchemaRegister])((nvtxDomainHandle_t)d, &a);
}

/* nvtxDomainRangePushEx of NCCL's, as record/inject.c's handler takes it. */
static void push(struct ranges_domain *d, const char *name, uint64_t id, const void *p, size_t size)
{
	nvtxPayloadData_t pd = { id, size, p };
	nvtxEventAttributes_t a;
	uint64_t comm, bytes;

	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = name;
	if (p) {
		a.payloadType = NVTX_PAYLOAD_TYPE_EXT;
		a.reserved0 = 1;
		a.payload.ullValue = (uint64_t)(uintptr_t)&pd;
	}
	payload_of_attributes(d, &a, &comm, &bytes);
	ranges_push_payload(d, name, 0, capture_now(), comm, bytes);
}

struct seen {
	char name[64], dom[32];
	uint64_t comm, bytes;
	uint32_t depth;
	int n;
};

static struct seen *find(struct seen *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return &v[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "test_payload.stb";
	struct ranges_config cfg = { .step_range = "step", .warmup = 0, .elem_bytes = 4 };
	Steptrace__Header hdr = STEPTRACE__HEADER__INIT;
	nvtxExtModuleSegment_t seg = { 0, 63, slots };
	nvtxExtModuleInfo_t info = { NVTX_VERSION, sizeof(info), NVTX_EXT_PAYLOAD_MODULEID, NVTX_EXT_PAYLOAD_COMPATID,
				     1, &seg, NULL, NULL };
	const nvtxPayloadSchemaEntry_t init_rank[] = {
		{ 0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", NULL, 0, 0, NULL, NULL },
		{ 0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "No. of ranks", NULL, 0, 8, NULL, NULL },
		{ 0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "Rank", NULL, 0, 12, NULL, NULL },
		{ 0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "CUDA device", NULL, 0, 16, NULL, NULL },
	};
	const nvtxPayloadSchemaEntry_t allreduce[] = {
		{ 0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", NULL, 0, 0, NULL, NULL },
		{ 0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "Message size [bytes]", NULL, 0, 8, NULL, NULL },
		{ 0, SID(24), "Reduction operation", NULL, 0, 16, NULL, NULL },
	};
	const nvtxPayloadSchemaEntry_t implicit[] = {
		{ 0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", NULL, 0, 0, NULL, NULL },
		{ 0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "Peer rank", NULL, 0, 0, NULL, NULL },
		{ 0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "Message size [bytes]", NULL, 0, 0, NULL, NULL },
	};
	struct init_rank ir = { COMM, 2, 1, 1 };
	struct allreduce ar = { COMM, 4096, 0 };
	struct implicit im = { COMM, 1, 8192 };
	nvtxPayloadData_t pop_pd = { SID_INIT_RANK_CONFIG, sizeof(ir), &ir };
	struct ranges_domain *nccl;
	struct ranges_totals tot;
	struct rec_session s;
	struct bundle_reader *r;
	struct seen ranges[16];
	size_t n_ranges = 0;
	bool op_step = false, op_under_init = false;
	struct st_event ev;

	memset(ranges, 0, sizeof(ranges));
	CHECK(ranges_init(&cfg) == 0);
	hdr.clock = "cupti";
	hdr.time_base_ns = capture_now() - 1000;
	CHECK(rec_session_open(&s, path, &hdr) == 0);
	CHECK(payload_module_fill(&info) == 1);
	info.moduleId = NVTX_EXT_PAYLOAD_MODULEID + 1;
	CHECK(payload_module_fill(&info) == 0, "a module other than the payload extension's was taken");
	CHECK(slots[NVTX3EXT_CBID_nvtxRangePopPayload] && slots[NVTX3EXT_CBID_nvtxPayloadSchemaRegister]);

	nccl = ranges_domain_create("NCCL");
	CHECK(schema(nccl, SID_INIT_RANK, init_rank, 4) == SID_INIT_RANK);
	CHECK(schema(nccl, SID_INIT_RANK_CONFIG, init_rank, 4) == SID_INIT_RANK_CONFIG);
	CHECK(schema(nccl, SID_DESTROY, init_rank, 4) == SID_DESTROY);
	CHECK(schema(nccl, SID_ALLREDUCE, allreduce, 3) == SID_ALLREDUCE);
	CHECK(schema(nccl, SID_IMPLICIT, implicit, 3) == SID_IMPLICIT);

	/* ncclCommInitRankConfig: pushed bare, a collective inside, popped with its payload */
	push(nccl, "ncclCommInitRankConfig", 0, NULL, 0);
	push(nccl, "ncclAllReduce", SID_ALLREDUCE, &ar, sizeof(ar));
	CHECK(ranges_pop(nccl, capture_now()) == 1);
	CHECK(((pop_fn)slots[NVTX3EXT_CBID_nvtxRangePopPayload])((nvtxDomainHandle_t)nccl, &pop_pd, 1) == 0);

	/* a step of the program after it, a collective of the implicit schema inside */
	CHECK(ranges_push(NULL, "step", 0, capture_now()) == 0, "the step is not a root: something is still open");
	push(nccl, "ncclAllGather", SID_IMPLICIT, &im, sizeof(im));
	ranges_pop(nccl, capture_now());
	ranges_pop(NULL, capture_now());

	/* ncclCommDestroy: its payload has no size */
	push(nccl, "ncclCommDestroy", SID_DESTROY, &ir, sizeof(ir));
	ranges_pop(nccl, capture_now());

	ranges_finish(hdr.time_base_ns, capture_now());
	rec_session_lock(&s);
	ranges_drain_locked(&s);
	rec_session_unlock(&s);
	CHECK(rec_session_close(&s, "ok") == 0);
	rec_session_release(&s);
	ranges_totals(&tot);
	CHECK_U64(tot.open, 0);
	CHECK_U64(tot.unpaired, 0);

	r = bundle_reader_open(path);
	CHECK(r != NULL);
	while (r && bundle_reader_next(r, &ev) == 1) {
		if (ev.kind == ST_RANGE && n_ranges < 16) {
			struct seen *x = &ranges[n_ranges++];

			snprintf(x->name, sizeof(x->name), "%s", bundle_reader_string(r, ev.range.name));
			snprintf(x->dom, sizeof(x->dom), "%s", bundle_reader_string(r, ev.range.domain));
			x->comm = ev.range.comm;
			x->bytes = ev.range.bytes;
			x->depth = ev.range.depth;
		} else if (ev.kind == ST_OP) {
			const char *p = bundle_reader_string(r, ev.op.path);

			op_step |= !strcmp(p, "step");
			op_under_init |= !strncmp(p, "ncclCommInitRankConfig/", 23) &&
					 strcmp(p, "ncclCommInitRankConfig/ncclAllReduce");
		}
	}
	if (r)
		bundle_reader_free(r);
	CHECK_U64(n_ranges, 5);
	CHECK(op_step, "no op of path 'step'");
	CHECK(!op_under_init, "an op after ncclCommInitRankConfig is on a path under it");

	struct seen *x = find(ranges, n_ranges, "ncclCommInitRankConfig");
	CHECK(x && x->depth == 0 && x->comm == COMM && x->bytes == 0 && !strcmp(x->dom, "NCCL"),
	      "ncclCommInitRankConfig: depth %u, comm %llx, bytes %llu", x ? x->depth : 99,
	      x ? (unsigned long long)x->comm : 0, x ? (unsigned long long)x->bytes : 0);
	x = find(ranges, n_ranges, "ncclAllReduce");
	CHECK(x && x->depth == 1 && x->comm == COMM && x->bytes == 4096, "ncclAllReduce: bytes %llu",
	      x ? (unsigned long long)x->bytes : 0);
	x = find(ranges, n_ranges, "step");
	CHECK(x && x->depth == 0, "step at depth %u", x ? x->depth : 99);
	x = find(ranges, n_ranges, "ncclAllGather");
	CHECK(x && x->depth == 1 && x->comm == COMM && x->bytes == 8192, "ncclAllGather (offsets implicit): bytes %llu",
	      x ? (unsigned long long)x->bytes : 0);
	x = find(ranges, n_ranges, "ncclCommDestroy");
	CHECK(x && x->comm == COMM && x->bytes == 0, "ncclCommDestroy: bytes %llu (no size in its schema)",
	      x ? (unsigned long long)x->bytes : 0);
	return check_done("test_payload");
}
