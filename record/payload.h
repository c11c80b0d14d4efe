/*
 * payload.h: NVTX's payload extension (nvtx3/nvToolsExtPayload.h) in the
 * injection library: the schemas programs register for the payloads of
 * their ranges, and the extension's range calls.
 *
 * NCCL (2.19 on) registers a schema per call and attaches a payload to its
 * ranges in domain "NCCL": the communicator and, for collectives and
 * send/receive, the message size. The payload is read by its schema's
 * entry names ("NCCL communicator ID", "Message size [bytes]"), never by
 * position: ncclCommDestroy's schema has the number of ranks and the rank
 * where a collective's has the size. NCCL also ends some of its ranges
 * through the extension (ncclCommInitRankConfig's, popped with
 * nvtxRangePopPayload to attach the new communicator): those calls reach
 * the recorder's range stacks here, so the range closes where NCCL ends it.
 */
#ifndef STEPTRACE_RECORD_PAYLOAD_H
#define STEPTRACE_RECORD_PAYLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "record/nvtx.h"

/*
 * Fills the function slots of NVTX's payload module (an
 * nvtxExtModuleInfo_t from InitializeInjectionNvtxExtension): 1 when it is
 * that module, 0 for any other (its functions stay no-ops).
 */
int payload_module_fill(void *module_info);

/*
 * The communicator id and message size that nvtxEventAttributes_t `attr`'s
 * extended payload gives in domain d, by its registered schema's entry
 * names; 0 for what it does not give (no payload, a schema not registered,
 * an entry it lacks).
 */
void payload_of_attributes(const struct ranges_domain *d, const void *attr, uint64_t *comm, uint64_t *bytes);

/*
 * An armed process (record --armed) passes the extension's ranges through
 * the same gate as the core's (record/inject.c): push and pop say whether
 * the recorder takes the range (and keep each thread's count of open
 * ranges), popped follows a pop it took, idle says that it records nothing
 * now. Without a gate every range is taken.
 */
struct payload_gate {
	bool (*push)(const char *name, uint32_t reg);
	bool (*pop)(void);
	void (*popped)(void);
	bool (*idle)(void);
};
void payload_set_gate(const struct payload_gate *gate);

#endif
