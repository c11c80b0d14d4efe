/*
 * payload.c: see payload.h.
 *
 * Schemas are few (NCCL registers one per call it annotates, about 25) and
 * registered once each; a range with a payload looks its schema up under a
 * mutex, a short linear search.
 */
#define _GNU_SOURCE
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include "record/payload.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "record/capture.h"
#include "record/cost.h"

#define SCHEMAS_MAX 4096

/* Where a schema keeps the two values steptrace reads; off < 0: it has none. */
struct schema {
	const struct ranges_domain *domain;
	uint64_t id;
	int64_t comm_off, bytes_off;
	uint8_t comm_size, bytes_size;
};

static struct {
	pthread_mutex_t lock;
	struct schema *v;
	size_t n, cap;
	uint64_t next_dynamic;
} S = { .lock = PTHREAD_MUTEX_INITIALIZER, .next_dynamic = NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START };

/* Bytes of an entry of a fixed-size integer type; 0 for any other (strings, arrays, nested schemas). */
static unsigned entry_size(const nvtxPayloadSchemaEntry_t *e)
{
	if (e->flags & (NVTX_PAYLOAD_ENTRY_FLAG_POINTER | (7u << 4)))   /* a pointer, or an array */
		return 0;
	switch (e->type) {
	case NVTX_PAYLOAD_ENTRY_TYPE_CHAR: case NVTX_PAYLOAD_ENTRY_TYPE_UCHAR:
	case NVTX_PAYLOAD_ENTRY_TYPE_INT8: case NVTX_PAYLOAD_ENTRY_TYPE_UINT8:
		return 1;
	case NVTX_PAYLOAD_ENTRY_TYPE_SHORT: case NVTX_PAYLOAD_ENTRY_TYPE_USHORT:
	case NVTX_PAYLOAD_ENTRY_TYPE_INT16: case NVTX_PAYLOAD_ENTRY_TYPE_UINT16:
		return 2;
	case NVTX_PAYLOAD_ENTRY_TYPE_INT: case NVTX_PAYLOAD_ENTRY_TYPE_UINT:
	case NVTX_PAYLOAD_ENTRY_TYPE_INT32: case NVTX_PAYLOAD_ENTRY_TYPE_UINT32:
		return 4;
	case NVTX_PAYLOAD_ENTRY_TYPE_LONG: case NVTX_PAYLOAD_ENTRY_TYPE_ULONG:
		return sizeof(long);
	case NVTX_PAYLOAD_ENTRY_TYPE_LONGLONG: case NVTX_PAYLOAD_ENTRY_TYPE_ULONGLONG:
	case NVTX_PAYLOAD_ENTRY_TYPE_INT64: case NVTX_PAYLOAD_ENTRY_TYPE_UINT64:
		return 8;
	case NVTX_PAYLOAD_ENTRY_TYPE_SIZE: case NVTX_PAYLOAD_ENTRY_TYPE_ADDRESS:
		return sizeof(size_t);
	default:
		return 0;
	}
}

/* NCCL's names for the communicator and the message size ("NCCL communicator ID", "Message size [bytes]"). */
static bool names_comm(const char *name)
{
	return name && strcasestr(name, "communicator") && !strcasestr(name, "parent");
}

static bool names_bytes(const char *name)
{
	return name && strcasestr(name, "message size");
}

/*
 * Offsets of the entries steptrace reads. An entry's offset is given, or,
 * when 0 past the first entry, where natural alignment puts it after the
 * entries before (known only while their sizes are).
 */
static void schema_read(struct schema *sc, const nvtxPayloadSchemaEntry_t *e, size_t n)
{
	uint64_t at = 0;
	bool known = true;

	sc->comm_off = sc->bytes_off = -1;
	for (size_t i = 0; i < n && i < 1024; i++) {
		unsigned size = entry_size(&e[i]);
		uint64_t off = e[i].offset;

		if (!off && i > 0) {
			if (!known || !size)
				known = false;
			else
				off = (at + size - 1) / size * size;
		}
		if (off || i == 0 || known) {
			if (size && names_comm(e[i].name) && sc->comm_off < 0) {
				sc->comm_off = (int64_t)off;
				sc->comm_size = (uint8_t)size;
			} else if (size && names_bytes(e[i].name) && sc->bytes_off < 0) {
				sc->bytes_off = (int64_t)off;
				sc->bytes_size = (uint8_t)size;
			}
		}
		if (size)
			at = off + size;
		else
			known = false;
	}
}

static uint64_t schema_register(nvtxDomainHandle_t domain, const nvtxPayloadSchemaAttr_t *attr)
{
	uint64_t t0 = cost_ticks(), id = 0;
	struct schema sc = { .domain = (const struct ranges_domain *)domain };

	if (!attr)
		goto out;
	pthread_mutex_lock(&S.lock);
	id = (attr->fieldMask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID) ? attr->schemaId : S.next_dynamic++;
	sc.id = id;
	if ((attr->fieldMask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES) && attr->entries &&
	    (attr->fieldMask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES))
		schema_read(&sc, attr->entries, attr->numEntries);
	else
		sc.comm_off = sc.bytes_off = -1;
	if (S.n < SCHEMAS_MAX && !ALLOC_GROW(S.v, S.n + 1, S.cap))
		S.v[S.n++] = sc;
	pthread_mutex_unlock(&S.lock);
out:
	cost_end(COST_NVTX, t0, 0);
	return id;
}

/* An unsigned value of `size` bytes at `off` of a payload of `len` bytes; 0 when it lies outside. */
static uint64_t read_at(const void *p, size_t len, int64_t off, unsigned size)
{
	uint64_t v = 0;

	if (off < 0 || !size || (uint64_t)off + size > len)
		return 0;
	switch (size) {
	case 1: { uint8_t x; memcpy(&x, (const char *)p + off, 1); v = x; break; }
	case 2: { uint16_t x; memcpy(&x, (const char *)p + off, 2); v = x; break; }
	case 4: { uint32_t x; memcpy(&x, (const char *)p + off, 4); v = x; break; }
	default: memcpy(&v, (const char *)p + off, 8); break;
	}
	return v;
}

/* The communicator and size in payloads pd[0..n) of domain d. */
static void payloads_read(const struct ranges_domain *d, const nvtxPayloadData_t *pd, size_t n, uint64_t *comm,
			  uint64_t *bytes)
{
	*comm = *bytes = 0;
	if (!pd)
		return;
	pthread_mutex_lock(&S.lock);
	for (size_t i = 0; i < n && i < 64; i++) {
		if (!pd[i].payload || pd[i].size == SIZE_MAX)
			continue;
		for (size_t k = S.n; k-- > 0;) {
			const struct schema *sc = &S.v[k];

			if (sc->id != pd[i].schemaId || sc->domain != d)
				continue;
			if (!*comm)
				*comm = read_at(pd[i].payload, pd[i].size, sc->comm_off, sc->comm_size);
			if (!*bytes)
				*bytes = read_at(pd[i].payload, pd[i].size, sc->bytes_off, sc->bytes_size);
			break;
		}
	}
	pthread_mutex_unlock(&S.lock);
}

void payload_of_attributes(const struct ranges_domain *d, const void *attr, uint64_t *comm, uint64_t *bytes)
{
	const nvtxEventAttributes_t *a = attr;

	*comm = *bytes = 0;
	if (!a || a->size < offsetof(nvtxEventAttributes_t, payload) + sizeof(a->payload) ||
	    a->payloadType != NVTX_PAYLOAD_TYPE_EXT || a->reserved0 < 1 || !a->payload.ullValue)
		return;
	payloads_read(d, (const nvtxPayloadData_t *)(uintptr_t)a->payload.ullValue, (size_t)a->reserved0, comm,
		      bytes);
}

/* ---- the extension's calls ------------------------------------------------------ */

static const struct payload_gate *gate;

void payload_set_gate(const struct payload_gate *g)
{
	gate = g;
}

static int ext_push(nvtxDomainHandle_t domain, const nvtxPayloadData_t *pd, size_t n)
{
	uint64_t t0 = cost_ticks(), comm, bytes;
	struct ranges_domain *d = (struct ranges_domain *)domain;
	int depth;

	if (gate && !gate->push(NULL, 0)) {
		cost_end(COST_NVTX, t0, 0);
		return 0;
	}
	payloads_read(d, pd, n, &comm, &bytes);
	depth = ranges_push_payload(d, NULL, 0, capture_now(), comm, bytes);
	cost_end(COST_NVTX, t0, COST_RANGE);
	return depth;
}

static int ext_pop(nvtxDomainHandle_t domain, const nvtxPayloadData_t *pd, size_t n)
{
	uint64_t t0 = cost_ticks(), comm, bytes;
	struct ranges_domain *d = (struct ranges_domain *)domain;
	int depth;

	if (gate && !gate->pop()) {
		cost_end(COST_NVTX, t0, 0);
		return 0;
	}
	payloads_read(d, pd, n, &comm, &bytes);
	depth = ranges_pop_payload(d, capture_now(), comm, bytes);
	if (gate)
		gate->popped();
	cost_end(COST_NVTX, t0, 0);
	return depth;
}

static void ext_mark(nvtxDomainHandle_t domain, const nvtxPayloadData_t *pd, size_t n)
{
	uint64_t t0 = cost_ticks();

	if (!gate || !gate->idle())
		ranges_mark((struct ranges_domain *)domain, NULL, 0, capture_now());
	cost_end(COST_NVTX, t0, COST_RANGE);
}

static nvtxRangeId_t ext_start(nvtxDomainHandle_t domain, const nvtxPayloadData_t *pd, size_t n)
{
	uint64_t t0 = cost_ticks();
	nvtxRangeId_t id = gate && gate->idle() ? 0 :
		ranges_start((struct ranges_domain *)domain, NULL, 0, capture_now());

	cost_end(COST_NVTX, t0, COST_RANGE);
	return id;
}

static void ext_end(nvtxDomainHandle_t domain, nvtxRangeId_t id, const nvtxPayloadData_t *pd, size_t n)
{
	uint64_t t0 = cost_ticks();

	if (!gate || (id && !gate->idle()))
		ranges_end(id, capture_now());
	cost_end(COST_NVTX, t0, 0);
}

static uint64_t ext_enum_register(nvtxDomainHandle_t domain, const nvtxPayloadEnumAttr_t *attr)
{
	static _Atomic uint64_t next = NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START | (UINT64_C(1) << 62);

	/* an enum's values name a field's values; steptrace reads none */
	return attr && (attr->fieldMask & NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID) ? attr->schemaId : next++;
}

static uint8_t ext_domain_enabled(nvtxDomainHandle_t domain)
{
	return 1;
}

int payload_module_fill(void *module_info)
{
	static const struct { unsigned id; intptr_t fn; } slots[] = {
		{ NVTX3EXT_CBID_nvtxPayloadSchemaRegister, (intptr_t)schema_register },
		{ NVTX3EXT_CBID_nvtxPayloadEnumRegister, (intptr_t)ext_enum_register },
		{ NVTX3EXT_CBID_nvtxMarkPayload, (intptr_t)ext_mark },
		{ NVTX3EXT_CBID_nvtxRangePushPayload, (intptr_t)ext_push },
		{ NVTX3EXT_CBID_nvtxRangePopPayload, (intptr_t)ext_pop },
		{ NVTX3EXT_CBID_nvtxRangeStartPayload, (intptr_t)ext_start },
		{ NVTX3EXT_CBID_nvtxRangeEndPayload, (intptr_t)ext_end },
		{ NVTX3EXT_CBID_nvtxDomainIsEnabled, (intptr_t)ext_domain_enabled },
	};
	nvtxExtModuleInfo_t *m = module_info;

	if (!m || m->structSize < sizeof(*m) || m->moduleId != NVTX_EXT_PAYLOAD_MODULEID || m->segmentsCount < 1 ||
	    !m->segments || !m->segments[0].functionSlots)
		return 0;
	for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++)
		if (slots[i].id < m->segments[0].slotCount)
			m->segments[0].functionSlots[slots[i].id] = slots[i].fn;
	return 1;
}
