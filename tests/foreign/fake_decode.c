/*
 * fake_decode.c: CUPTI's records of a kernel and its launch call (and of a
 * memset without timestamps, which is counted dropped), made up
 * and decoded into a session as the capture's decoder thread does
 * (record/activity.c), for test_torch.c. Apart from it because the
 * capture's internals and tests/lib/check.h both name a struct capture.
 */
#include <string.h>

#include "record/capture_internal.h"
#include "record/session.h"

void fake_kernel(struct rec_session *s, uint64_t t, const char *name);

void fake_kernel(struct rec_session *s, uint64_t t, const char *name)
{
	CUpti_ActivityKernel10 k;
	CUpti_ActivityMemset4 m;
	CUpti_ActivityAPI a;

	memset(&k, 0, sizeof(k));
	memset(&m, 0, sizeof(m));
	memset(&a, 0, sizeof(a));
	a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
	a.start = t;
	a.end = t + 5;
	a.correlationId = 7;
	a.threadId = 1;
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.name = name;   /* CUPTI's pointer: the same one each time a kernel's record comes */
	k.start = t + 10;
	k.end = t + 20;
	k.correlationId = 7;
	k.gridX = k.gridY = k.gridZ = k.blockX = k.blockY = k.blockZ = 1;
	rec_session_lock(s);
	cap.s = s;
	decode((const CUpti_Activity *)&a);
	decode((const CUpti_Activity *)&k);
	/* a memset whose timestamps CUPTI could not take: 0 and 0 */
	m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	m.bytes = 4096;
	m.correlationId = 8;
	decode((const CUpti_Activity *)&m);
	cap.s = NULL;
	rec_session_unlock(s);
}
