/*
 * inject.c: libsteptrace_inject.so, the recorder inside a program that
 * steptrace did not write (`steptrace record -o run.stb -- COMMAND`).
 *
 * CUDA loads it during cuInit through CUDA_INJECTION64_PATH and calls
 * InitializeInjection; NVTX loads it at the first NVTX call through
 * NVTX_INJECTION64_PATH and calls InitializeInjectionNvtx2, where it takes
 * over the NVTX functions of every domain (record/nvtx.c keeps the
 * ranges), and InitializeInjectionNvtxExtension for NVTX's payload
 * extension (record/payload.c: NCCL's payloads and its ranges ended
 * through it). Nothing else is exported but the Python side's calls. It uses the driver API and CUPTI
 * only: the program keeps its own CUDA runtime.
 *
 * The capture is the built-in recorder's (record/capture.c): it starts in
 * InitializeInjection; the bundle opens when the process creates its first
 * CUDA context (its device is known then), so a process that never does
 * writes none. It closes at exit (atexit), or, when a signal that ends the
 * process arrives (a crash, or SIGTERM/SIGHUP left at their default),
 * after flushing what CUPTI holds, with end reason "error" or
 * "interrupted", before the signal goes on; SIGKILL leaves the bundle
 * readable up to its last whole chunk. A 10 s alarm bounds that flush.
 *
 * Configuration, from the environment steptrace sets (record/launch.c):
 * STEPTRACE_OUTPUT (the -o path), STEPTRACE_CLAIMS (a directory where each
 * process claims its bundle name and reports what it wrote),
 * STEPTRACE_STEP_RANGE, STEPTRACE_WARMUP, STEPTRACE_API, STEPTRACE_CUPTI_SYNC, STEPTRACE_PRECISION,
 * STEPTRACE_COMMAND_LINE, STEPTRACE_PEAKS, STEPTRACE_MODULES_EVERY (module ranges
 * on every Nth step of a PyTorch program, record/torch.h), STEPTRACE_ARMED.
 *
 * Armed (`record --armed`, STEPTRACE_ARMED: the run's directory,
 * lib/armed.h): the capture starts with nothing traced, no bundle opens,
 * the NVTX entry points return at once and the Python side keeps only its
 * optimizer hook, which counts steps (or the NVTX step ranges do, with
 * --step-range) into the process's status file, published where its first
 * step ends (a process that never steps is not in the run). A trigger's request opens
 * a bundle at the boundary where its first step begins (run.T.rankR.stb,
 * record/naming.h), turns tracing on (capture_resume) and starts the
 * ranges afresh (ranges_session_begin); where its last step ends the
 * bundle closes as at exit (capture_pause, ranges_finish) and the process
 * goes quiet again.
 */
#define _GNU_SOURCE
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <cuda.h>
#include <cupti.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include "lib/armed.h"
#include "lib/error.h"
#include "record/capture.h"
#include "record/compiled.h"
#include "record/cost.h"
#include "record/device.h"
#include "record/naming.h"
#include "record/nvtx.h"
#include "record/payload.h"
#include "record/session.h"
#include "record/torch.h"
#include "trace/types.h"

#define EXPORT __attribute__((visibility("default")))
#define STEP_COUNTERS 4096
#define CRASH_FLUSH_SECONDS 10
#define MODULES_EVERY 10          /* module ranges on every Nth measured step by default (record/torch.h) */

static struct {
	pthread_once_t once;
	bool configured;          /* STEPTRACE_OUTPUT was set */
	bool capturing;           /* capture_start succeeded */
	bool opened, done;        /* the bundle is open; it was closed or aborted */
	pid_t pid;                /* the process recording (a fork's child is not) */
	uint64_t t0;              /* CUPTI ns of the first entry: the bundle's time base */
	const char *output, *claims, *step_range, *precision, *command_line, *peaks;
	enum capture_api api;
	bool cupti_sync;          /* STEPTRACE_CUPTI_SYNC: CUPTI's synchronisation records */
	int32_t warmup;           /* -1: not given */
	pthread_mutex_t open_lock;
	struct rec_session s;
	char path[4096];          /* this process's bundle */
	char claim[4096];         /* its claim file, "" without STEPTRACE_CLAIMS */
	struct st_param_group params[ST_PARAM_GROUPS_MAX];   /* steptrace_py_params, for the footer */
	_Atomic size_t n_params;

	/* armed (record --armed): see the top */
	const char *armed;        /* the run's directory; NULL when not armed */
	struct armed_status *status;   /* published at the first step boundary (arm) */
	bool arm_failed;          /* ... and that failed: not again */
	_Atomic bool idle;        /* armed and not recording: NVTX calls return at once */
	bool have_device;         /* a context was created: its device, for the bundle's header */
	uint32_t device;
	uint64_t seq, first, count;   /* the request armed_step keeps */
	uint64_t every, window;   /* record --every K --window N (STEPTRACE_ARMED_EVERY): 0 none */
	uint32_t step_reg;        /* --step-range's string id, for the NVTX steps counted while idle */
	uint32_t steps_written;   /* steps this recording has written (the NVTX steps' boundaries) */
	struct capture_totals ct0;    /* the capture's totals when this recording began */
	/*
	 * The program's steps while idle, for the next window's footer (1.11):
	 * the last ST_UNRECORDED_STEPS_MAX wall times, a ring; `last` the
	 * boundary the step now running began at (0: a step to leave out), and
	 * `skip` how many more to leave out (the recorder worked in them).
	 */
	uint64_t before[ST_UNRECORDED_STEPS_MAX];
	size_t n_before, before_head;
	uint64_t last;
	uint32_t skip;
	uint64_t idle_from;       /* since when the recorder's idle time accrues (cost_idle_take), 0: not yet */
} in = { .once = PTHREAD_ONCE_INIT, .open_lock = PTHREAD_MUTEX_INITIALIZER };

/* ---- configuration ------------------------------------------------------- */

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static void setup(void)
{
	struct ranges_config rc = { 0 };
	const char *warmup = env("STEPTRACE_WARMUP"), *api = env("STEPTRACE_API");
	const char *every = env("STEPTRACE_MODULES_EVERY");

	in.pid = getpid();
	in.t0 = capture_now();
	ranges_atfork();
	in.output = env("STEPTRACE_OUTPUT");
	if (!in.output) {
		warning("steptrace: libsteptrace_inject.so was loaded without STEPTRACE_OUTPUT; "
			"recording nothing (use steptrace record -o FILE -- COMMAND)");
		return;
	}
	in.claims = env("STEPTRACE_CLAIMS");
	in.step_range = env("STEPTRACE_STEP_RANGE");
	in.precision = env("STEPTRACE_PRECISION");
	in.command_line = env("STEPTRACE_COMMAND_LINE");
	in.peaks = env("STEPTRACE_PEAKS");
	in.warmup = warmup ? (int32_t)strtol(warmup, NULL, 10) : -1;
	in.cupti_sync = env("STEPTRACE_CUPTI_SYNC") != NULL;
	in.api = api && !strcmp(api, "all") ? CAPTURE_API_ALL
		 : api && !strcmp(api, "launches") ? CAPTURE_API_LAUNCHES : CAPTURE_API_WORK;
	rc.step_range = in.step_range;
	rc.warmup = in.warmup;
	rc.elem_bytes = in.precision && (!strcmp(in.precision, "bf16") || !strcmp(in.precision, "fp16")) ? 2 : 4;
	if (ranges_init(&rc)) {
		warning("steptrace: out of memory setting up the recorder; recording nothing");
		return;
	}
	ranges_torch_sample(every ? (uint32_t)strtoul(every, NULL, 10) : MODULES_EVERY);
	in.armed = env("STEPTRACE_ARMED");
	if (in.armed && env("STEPTRACE_ARMED_EVERY") &&
	    armed_parse_every(env("STEPTRACE_ARMED_EVERY"), &in.every, &in.window))
		warning("steptrace: STEPTRACE_ARMED_EVERY='%s' is not K:N; recording on triggers only",
			env("STEPTRACE_ARMED_EVERY"));
	if (in.armed) {   /* quiet from the first NVTX call, which may come before CUDA's */
		atomic_store(&in.idle, true);
		ranges_session_idle();
		if (in.step_range)
			in.step_reg = ranges_register(in.step_range);
	}
	in.configured = true;
}

/* ---- claims: which process writes which bundle ---------------------------- */

static const char *getenv_const(const char *name)
{
	return getenv(name);
}

/* Creates CLAIMS/id exclusively; 0, or -1 when another process has it. */
static int claim(const char *id)
{
	int fd;

	snprintf(in.claim, sizeof(in.claim), "%s/%s", in.claims, id);
	fd = open(in.claim, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		in.claim[0] = '\0';
		return -1;
	}
	close(fd);
	return 0;
}

/* Picks this process's bundle path: run.<rank>.stb, run.<rank>.<pid>.stb, or run.<pid>.stb. */
static int pick_path(void)
{
	const char *rank = naming_rank(getenv_const);
	char id[64];

	if (rank)
		snprintf(id, sizeof(id), "%s", rank);
	else
		snprintf(id, sizeof(id), "%d", (int)in.pid);
	if (in.claims && claim(id) && rank) {
		snprintf(id, sizeof(id), "%s.%d", rank, (int)in.pid);
		claim(id);
	}
	if (naming_bundle(in.path, sizeof(in.path), in.output, id))
		return error("steptrace: bundle name for '%s' is too long", in.output);
	return 0;
}

/*
 * The bundle of trigger seq (record --armed): run.SEQ.rankR.stb, or
 * run.SEQ.stb for a process without a rank (--every's window from step S:
 * run.sS.rankR.stb); with the pid added when another process of the run
 * claimed that name first.
 */
static int pick_trigger_path(uint64_t seq)
{
	const char *rank = naming_rank(getenv_const);
	char id[48] = "", cid[96], num[24];

	if (rank)
		snprintf(id, sizeof(id), "rank%s", rank);
	naming_trigger_number(num, sizeof(num), seq);
	snprintf(cid, sizeof(cid), "%s%s%s", num, *id ? "." : "", id);
	if (in.claims && claim(cid)) {
		size_t n = strlen(id);

		snprintf(id + n, sizeof(id) - n, "%s%d", n ? "." : "", (int)in.pid);
		snprintf(cid, sizeof(cid), "%s.%s", num, id);
		claim(cid);
	}
	if (naming_trigger_bundle(in.path, sizeof(in.path), in.output, seq, *id ? id : NULL))
		return error("steptrace: bundle name for '%s' is too long", in.output);
	return 0;
}

/* Appends "key value" lines to the claim file, for steptrace to report. */
static void claim_report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void claim_report(const char *fmt, ...)
{
	va_list ap;
	FILE *f;

	if (!in.claim[0] || !(f = fopen(in.claim, "a")))
		return;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

/* ---- the bundle -------------------------------------------------------------- */

/* "steptrace record ... -- python3 train.py [pid 4242, rank 1: python3 -u train.py --local-rank=1]" into buf. */
static void process_line(char *buf, size_t len)
{
	char args[2048] = "";
	const char *rank = naming_rank(getenv_const);
	size_t n = 0;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		ssize_t r = read(fd, args, sizeof(args) - 1);

		close(fd);
		n = r > 0 ? (size_t)r : 0;
		args[n] = '\0';
		for (size_t i = 0; i + 1 < n; i++)
			if (!args[i])
				args[i] = ' ';
	}
	snprintf(buf, len, "%s [pid %d%s%s: %s]", in.command_line ? in.command_line : "steptrace record",
		 (int)in.pid, rank ? ", rank " : "", rank ? rank : "", args);
}

/* STEPTRACE_PEAKS "NAME;fp32;tf32;bf16;fp16;bandwidth" measured by steptrace: used for that device only. */
static bool peaks_measured(struct device_facts *dev)
{
	double v[5];
	const char *p = in.peaks, *semi = p ? strchr(p, ';') : NULL;

	if (!semi || strncmp(p, dev->name, (size_t)(semi - p)) || dev->name[semi - p] ||
	    sscanf(semi + 1, "%lf;%lf;%lf;%lf;%lf", &v[0], &v[1], &v[2], &v[3], &v[4]) != 5)
		return false;
	dev->info.peak_fp32_flops = v[0];
	dev->info.peak_tf32_flops = v[1];
	dev->info.peak_bf16_flops = v[2];
	dev->info.peak_fp16_flops = v[3];
	dev->info.peak_bandwidth = v[4];
	dev->info.peak_source = STEPTRACE__PEAK_SOURCE__PEAK_MEASURED;
	snprintf(dev->note, sizeof(dev->note),
		 "measured by steptrace record --calibrate before starting the command (cuBLAS GEMMs, "
		 "device-to-device copy)");
	return true;
}

static int64_t unix_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Opens the bundle in.path (its header: device, command, rank) with time base in.t0; -1 when it cannot. */
static int bundle_open(uint32_t device)
{
	Steptrace__Header hdr = STEPTRACE__HEADER__INIT;
	Steptrace__RunConfig rc = STEPTRACE__RUN_CONFIG__INIT;
	struct device_facts dev;
	struct naming_identity job;
	char host[256] = "", line[4096];

	if (device_facts_read_driver((int)device, &dev)) {
		memset(&dev, 0, sizeof(dev));
		steptrace__device_info__init(&dev.info);
		dev.info.name = dev.name;
		dev.info.peak_note = dev.note;
		dev.info.driver_version = dev.driver;
	}
	if (!peaks_measured(&dev))
		device_datasheet(&dev, NULL);
	process_line(line, sizeof(line));
	gethostname(host, sizeof(host) - 1);
	hdr.command_line = line;
	hdr.hostname = host;
	hdr.created_unix_ns = unix_ns();
	if (in.precision) {
		/* what the program's matrix products run in, as steptrace record --precision said */
		rc.model = "program";
		rc.precision = (char *)in.precision;
		hdr.config = &rc;
	}
	if (naming_identity(getenv_const, &job)) {
		/* a rank of a torchrun, mpirun or srun job: its bundles join as one run */
		hdr.rank = job.rank;
		hdr.world_size = job.world_size;
		hdr.local_rank = job.local_rank;
		hdr.run_id = job.run_id;
	}
	hdr.device = &dev.info;
	hdr.clock = "cupti";
	hdr.api_calls = (char *)capture_api_rule(in.api);
	hdr.time_base_ns = in.t0;
	hdr.pid = (uint32_t)in.pid;
	if (rec_session_open(&in.s, in.path, &hdr)) {
		warning("steptrace: pid %d records nothing", (int)in.pid);
		return -1;
	}
	/* the writer fills a temporary beside in.path and renames it at the end; after a
	 * SIGKILL only steptrace can put it in place, so it is told the name */
	claim_report("bundle %s\nwriting %s\n", in.path, bundle_writer_file(in.s.w));
	in.opened = true;
	return 0;
}

static void open_bundle(uint32_t device)
{
	if (!pick_path() && !bundle_open(device))
		capture_attach(&in.s);
}

static void on_context(void *ctx, uint32_t device)
{
	pthread_mutex_lock(&in.open_lock);
	if (!in.have_device) {
		in.have_device = true;
		in.device = device;
	}
	if (!in.opened && !in.done && !in.armed && getpid() == in.pid)
		open_bundle(device);
	pthread_mutex_unlock(&in.open_lock);
}

/* Closes the capture and the bundle with `reason`; NULL: leave it without a footer. */
/* The bundle open is done: footer with `reason` (NULL: none), claim report. The capture has stopped or paused. */
static void close_bundle(const char *reason)
{
	struct capture_totals ct;
	struct ranges_totals rt;
	struct stat st;

	capture_totals(&ct);
	ranges_totals(&rt);
	rec_session_set_steps_from(&in.s, rt.steps_from);
	rec_session_set_param_groups(&in.s, in.params, in.n_params);
	if (reason)
		rec_session_close(&in.s, reason);
	else
		rec_session_abort(&in.s);
	in.opened = false;
	claim_report("events %" PRIu64 "\nbytes %lld\ndropped %" PRIu64 "\nsteps %" PRIu32
		     "\nwarmup %" PRIu32 "\nops %" PRIu32 "\nranges %" PRIu64 "\nunattributed %" PRIu64
		     "\nopen %" PRIu64 "\nunpaired %" PRIu64 "\nlost %" PRIu64 "\ncapped %d\nend %s\n"
		     "steps_from %s\n",
		     in.s.events, stat(in.path, &st) ? -1LL : (long long)st.st_size, ct.dropped - in.ct0.dropped,
		     rt.steps, rt.warmup, rt.ops, rt.ranges, ct.unattributed - in.ct0.unattributed, rt.open,
		     rt.unpaired, rt.lost, rt.ops_capped, reason ? reason : "aborted",
		     rt.steps_from ? rt.steps_from : "");
	if (!in.claims)
		fprintf(stderr, "steptrace: pid %d wrote '%s' (%" PRIu64 " events)\n", (int)in.pid,
			in.path, in.s.events);
}

static void finish(const char *reason)
{
	bool recording = in.armed && in.opened;
	struct ranges_totals rt;

	in.done = true;
	atomic_store(&in.idle, true);
	ranges_finish(in.t0, capture_now());
	capture_stop();
	if (in.opened && recording && (in.seq & ARMED_PERIODIC) && in.status &&
	    atomic_load(&in.status->steps) <= in.first) {
		/* an --every window whose first step never ended (the loop's last boundary began it) */
		rec_session_discard(&in.s);
		in.opened = false;
		if (in.claim[0])
			unlink(in.claim);
	} else if (in.opened) {
		ranges_totals(&rt);
		close_bundle(reason);
		if (recording && !(in.seq & ARMED_PERIODIC))   /* ended inside a triggered recording */
			armed_done(in.status, in.seq, ARMED_CUT, in.first, rt.steps, in.path);
	}
	if (in.status) {
		armed_unpublish(in.armed, in.status);
		in.status = NULL;
	}
}

/* ---- armed: a trigger's recording ------------------------------------------------- */

static void step_boundary(uint64_t t);
static void before_write(uint64_t t);
static int arm(void);

/*
 * What the NVTX entry points do around recordings. Each thread keeps a
 * stack of what its open ranges were pushed in: 0 while idle (1 for an
 * NVTX step range, whose pop ends a step), else the recording's number
 * (2 and up): a pop while recording goes to the recorder only for a range
 * pushed in that recording, so that a range open across a recording's
 * start is not an unpaired pop in its bundle.
 */
#define NV_DEPTH 256
static _Thread_local struct {
	int depth, steps_open;
	uint8_t tag[NV_DEPTH];
} nv;
static _Atomic uint8_t nv_recording = 2;   /* the tag of the recording now (2..255, wrapping) */

static bool idle(void)
{
	return atomic_load_explicit(&in.idle, memory_order_relaxed);
}

/* A push: true when the recorder is to have it. */
static bool nv_push(const char *name, uint32_t reg)
{
	bool rec = !idle();
	uint8_t tag = rec ? atomic_load_explicit(&nv_recording, memory_order_relaxed) : 0;

	if (!rec && in.step_reg && !nv.steps_open &&
	    (reg ? reg == in.step_reg : name && !strcmp(name, in.step_range))) {
		tag = 1;
		nv.steps_open++;
	}
	if (nv.depth < NV_DEPTH)
		nv.tag[nv.depth] = tag;
	nv.depth++;
	return rec;
}

/* A pop: true when the recorder is to have it; an idle step range's ends a step. */
static bool nv_pop(void)
{
	uint8_t cur = atomic_load_explicit(&nv_recording, memory_order_relaxed);
	uint8_t tag = nv.depth > NV_DEPTH ? cur : nv.depth > 0 ? nv.tag[nv.depth - 1] : 0;

	if (nv.depth > 0)
		nv.depth--;
	if (tag == 1) {
		nv.steps_open--;
		if (idle())
			step_boundary(capture_now());
	}
	return !idle() && tag == cur;
}


/* Step in.first begins at t: its bundle opens and tracing turns on. in.open_lock held. */
static void session_begin(uint64_t t)
{
	if (!in.have_device || pick_trigger_path(in.seq) || (in.t0 = t, bundle_open(in.device))) {
		if (!(in.seq & ARMED_PERIODIC))
			armed_done(in.status, in.seq, ARMED_FAILED, 0, 0, "");
		atomic_store(&in.status->state, ARMED_IDLE);
		return;
	}
	capture_totals(&in.ct0);
	in.steps_written = 0;
	before_write(t);
	{
		uint8_t next = (uint8_t)(atomic_load(&nv_recording) + 1);

		atomic_store(&nv_recording, next < 2 ? 2 : next);   /* ranges open before it stay out */
	}
	ranges_session_begin(t, (uint32_t)in.first);
	if (capture_resume(&in.s)) {
		ranges_session_idle();
		close_bundle(NULL);
		if (!(in.seq & ARMED_PERIODIC))
			armed_done(in.status, in.seq, ARMED_FAILED, 0, 0, "");
		atomic_store(&in.status->state, ARMED_IDLE);
		return;
	}
	atomic_store(&in.idle, false);
}

/* Step in.first + in.count - 1 ended: the bundle closes and the process goes quiet. in.open_lock held. */
static void session_end(void)
{
	struct ranges_totals rt;

	if (!in.opened)
		return;
	atomic_store(&in.idle, true);
	ranges_finish(in.t0, capture_now());
	capture_pause();
	ranges_totals(&rt);
	close_bundle("ok");
	if (!(in.seq & ARMED_PERIODIC))   /* --every's windows report through the claims only */
		armed_done(in.status, in.seq, ARMED_WRITTEN, in.first, rt.steps, in.path);
}

/* Unrecorded steps count again from the boundary after next, and `skip` steps more after it. */
static void before_reset(uint32_t skip)
{
	in.n_before = in.before_head = 0;
	in.last = 0;
	in.skip = skip;
	(void)cost_idle_take();   /* the recorder's time while idle counts from here */
	in.idle_from = capture_now();
}

/* An unrecorded step ended at t. */
static void before_push(uint64_t t)
{
	if (in.last && !in.skip && t > in.last) {
		in.before[(in.before_head + in.n_before) % ST_UNRECORDED_STEPS_MAX] = t - in.last;
		if (in.n_before < ST_UNRECORDED_STEPS_MAX)
			in.n_before++;
		else
			in.before_head = (in.before_head + 1) % ST_UNRECORDED_STEPS_MAX;
	} else if (in.last && in.skip) {
		in.skip--;
	}
	in.last = t;
}

/* The unrecorded steps so far into the window's footer, oldest first, and the recorder's time in them. */
static void before_write(uint64_t t)
{
	uint64_t v[ST_UNRECORDED_STEPS_MAX], idle = cost_idle_take();

	for (size_t i = 0; i < in.n_before; i++)
		v[i] = in.before[(in.before_head + i) % ST_UNRECORDED_STEPS_MAX];
	rec_session_set_unrecorded_steps(&in.s, v, in.n_before);
	if (in.idle_from && t > in.idle_from)
		rec_session_set_armed_cost(&in.s, idle, t - in.idle_from);
}

/* A step ended at t and the next begins (the optimizer's, or an NVTX step range's). */
static void step_boundary(uint64_t t)
{
	int act;
	bool was_idle;

	if (!in.armed || !in.capturing || in.done || getpid() != in.pid)
		return;
	pthread_mutex_lock(&in.open_lock);
	if (!in.status) {   /* its first step ended: a training process; it joins the run now */
		if (!in.have_device || in.arm_failed || arm()) {
			in.arm_failed = in.arm_failed || in.have_device;
			pthread_mutex_unlock(&in.open_lock);
			return;
		}
		capture_measure_launch_cost();   /* once, at joining: a step no trigger records */
		before_reset(1);   /* ... nor counts as unrecorded (the push below starts the count) */
	}
	was_idle = idle();
	act = armed_step(in.status, &in.seq, &in.first, &in.count);
	if (!(act & ARMED_BEGIN) && in.every)
		act |= armed_periodic(in.status, in.every, in.window, &in.seq, &in.first, &in.count);
	if (was_idle)
		before_push(t);
	if (act & ARMED_END) {
		session_end();
		before_reset(1);   /* the bundle is written in the next step; leave the one after out too */
	}
	if (act & ARMED_BEGIN)
		session_begin(t);
	pthread_mutex_unlock(&in.open_lock);
}

/* After the recorder took a pop: the steps of an NVTX step range end there. */
static void nv_popped(void)
{
	struct ranges_totals rt;

	if (!in.step_reg || idle())
		return;
	ranges_totals(&rt);
	if (rt.steps != in.steps_written) {
		in.steps_written = rt.steps;
		step_boundary(capture_now());
	}
}

static void on_exit_flush(void)
{
	if (in.capturing && !in.done && getpid() == in.pid)
		finish("ok");
}

/* ---- signals ------------------------------------------------------------------- */

static const int end_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGHUP, SIGQUIT, SIGINT };
#define N_END_SIGNALS (sizeof(end_signals) / sizeof(end_signals[0]))
static struct sigaction old_actions[N_END_SIGNALS];

static int signal_slot(int sig)
{
	for (size_t i = 0; i < N_END_SIGNALS; i++)
		if (end_signals[i] == sig)
			return (int)i;
	return -1;
}

static void on_end_signal(int sig, siginfo_t *info, void *uc)
{
	static volatile sig_atomic_t busy;
	int slot = signal_slot(sig);
	const struct sigaction *old = slot >= 0 ? &old_actions[slot] : NULL;
	bool stop = sig == SIGTERM || sig == SIGHUP || sig == SIGINT || sig == SIGQUIT;

	if (!busy && in.capturing && !in.done && getpid() == in.pid) {
		busy = 1;
		alarm(CRASH_FLUSH_SECONDS);   /* a flush that hangs (a lock the crash held) still ends */
		claim_report("signal %d\n", sig);
		finish(stop ? "interrupted" : "error");
		alarm(0);
	}
	if (!old)
		return;
	sigaction(sig, old, NULL);
	if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction)
		old->sa_sigaction(sig, info, uc);
	else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN)
		old->sa_handler(sig);
	else
		raise(sig);
}

/* Crash signals always; the stopping ones only where the program left them at their default. */
static void signals_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_end_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < N_END_SIGNALS; i++) {
		int sig = end_signals[i];
		bool stop = sig == SIGTERM || sig == SIGHUP || sig == SIGINT || sig == SIGQUIT;

		if (sigaction(sig, NULL, &old_actions[i]))
			continue;
		if (old_actions[i].sa_handler == SIG_IGN)
			continue;
		if (stop && ((old_actions[i].sa_flags & SA_SIGINFO) ? old_actions[i].sa_sigaction != NULL
								     : old_actions[i].sa_handler != SIG_DFL))
			continue;
		sigaction(sig, &sa, NULL);
	}
}

static void on_fork_child(void)
{
	/* The child's CUDA is unusable and the bundle is the parent's: it records nothing. */
	capture_forget();
}

/* ---- CUDA's entry point --------------------------------------------------------- */

/*
 * Armed: the status file that steptrace trigger reads, published when the
 * process's first step ends (step_boundary) and it has a CUDA context: a
 * process that never steps (torchrun's launcher, a helper that touches
 * CUDA) is never in the run. -1: it cannot be triggered.
 */
static int arm(void)
{
	struct naming_identity job;
	const char *rank = naming_rank(getenv_const);
	bool several = naming_identity(getenv_const, &job);

	in.status = armed_publish(in.armed, in.pid, rank ? (int32_t)strtol(rank, NULL, 10) : -1,
				  several ? job.world_size : 1, in.output);
	if (!in.status) {
		warning("steptrace: pid %d cannot be armed; recording nothing", (int)in.pid);
		return -1;
	}
	return 0;
}

EXPORT int InitializeInjection(void)
{
	pthread_once(&in.once, setup);
	if (!in.configured || in.capturing || getpid() != in.pid)
		return 1;
	capture_set_hooks(on_context, ranges_drain_locked);
	capture_set_lead(ranges_stackless);
	capture_set_profiler_hook(ranges_capture_range);
	capture_set_before_launch(ranges_torch_launch);
	capture_lean(true, in.cupti_sync);
	capture_armed(in.armed != NULL);
	if (capture_start(NULL, STEP_COUNTERS, in.api)) {
		warning("steptrace: CUPTI capture could not start in pid %d; recording nothing",
			(int)in.pid);
		return 1;
	}
	if (!in.step_range)
		capture_step_begin(0);   /* the run is one step */
	in.capturing = true;
	atexit(on_exit_flush);
	pthread_atfork(NULL, NULL, on_fork_child);
	signals_install();
	return 1;
}

/* ---- the Python side's entry points (record/python/steptrace_torch.py, ctypes) ---- */

/*
 * 1 when this process records (its bundle is or will be open), after which
 * the other steptrace_py_* calls do their work; 0: the Python side removes
 * its hooks. mode: 1 automatic, 2 with aten ops (--torch ops). peek:
 * at::sequence_number::peek of the program's libtorch, or NULL.
 */
EXPORT int steptrace_py_attach(int mode, void *peek)
{
	COST_SCOPE(COST_HOOK, 0);
	uint64_t (*fn)(void) = NULL;

	if (!in.configured || !in.capturing || in.done || getpid() != in.pid)
		return 0;
	*(void **)&fn = peek;
	ranges_torch_attach(mode == 2 ? RANGES_TORCH_OPS : RANGES_TORCH_AUTO, fn);
	return 1;
}

/* A name's id, for steptrace_py_module. */
EXPORT uint32_t steptrace_py_intern(const char *name)
{
	COST_SCOPE(COST_HOOK, 0);
	return name ? ranges_register(name) : 0;
}

/* A phase (1 data, 2 zero_grad, 3 forward, 4 backward, 5 optimizer) begins (begin 1) or ends. */
EXPORT void steptrace_py_phase(int phase, int begin)
{
	COST_SCOPE(COST_HOOK, 0);
	ranges_torch_phase(phase, begin != 0, capture_now());
}

EXPORT void steptrace_py_module(uint32_t name)
{
	COST_SCOPE(COST_HOOK, COST_MODULE);
	ranges_torch_module(name, capture_now());
}

EXPORT void steptrace_py_module_end(void)
{
	COST_SCOPE(COST_HOOK, 0);
	ranges_torch_module_end(capture_now());
}

/* The Python side's backward profiler is on (1) or off (record/torch.h). */
EXPORT void steptrace_py_profiler(int on)
{
	COST_SCOPE(COST_HOOK, 0);
	ranges_torch_profiler(on != 0);
}

/*
 * The primary optimizer's step ended: the next step begins. Returns what it
 * records (record/torch.h, enum ranges_torch_level): 2 phases and modules,
 * 1 phases only (module ranges on a sample of the steps), 0 nothing (an
 * armed process between triggers); the Python side installs its hooks to
 * match. An armed process counts the step (unless NVTX step ranges count
 * them) and begins or ends a trigger's recording here.
 */
EXPORT int steptrace_py_step(void)
{
	COST_SCOPE(COST_HOOK, COST_UNTIMED);   /* the optimizer hook's call, outside its reported time */
	uint64_t t = capture_now();

	if (!in.armed || !idle())
		ranges_torch_step(t);
	if (in.armed && !in.step_range)
		step_boundary(t);
	return ranges_torch_level();
}

/* What the step now running records, as steptrace_py_step returns it. */
EXPORT int steptrace_py_level(void)
{
	return ranges_torch_level();
}

/*
 * The backward's modules from autograd's current node (record/torch.h):
 * called from a prehook of a node whose sequence number is `want`, with
 * torch::autograd::get_current_node of the program's libtorch (NULL: the
 * one given before); returns where the node keeps that number, -1 nowhere.
 * steptrace_py_nodes(offset) then turns the chains on (0: off).
 */
EXPORT int steptrace_py_node_probe(void *get_current_node, uint64_t want)
{
	COST_SCOPE(COST_HOOK, 0);
	return ranges_torch_node_probe(get_current_node, want);
}

EXPORT void steptrace_py_nodes(int offset)
{
	COST_SCOPE(COST_HOOK, 0);
	ranges_torch_nodes(offset);
}

/* n (address, size) pairs of live blocks on `device` hold `category` (enum st_mem_category). */
EXPORT void steptrace_py_tag(const uint64_t *pairs, uint32_t n, int category, int device)
{
	COST_SCOPE(COST_HOOK, 0);
	if (pairs && category > 0 && category < ST_MEM_CATEGORY_COUNT && device >= 0)
		ranges_torch_tag(pairs, n, (uint32_t)category, (uint32_t)device, capture_now());
}

/*
 * The Python side's own host time, ns, on the calling thread since its
 * previous call: its hooks' time, the steptrace_py_* calls they made
 * included (the recorder measured those itself and takes them out). Called
 * once per step, before steptrace_py_step, so that it counts in the step
 * it was spent in (RecorderCost.python_ns).
 */
EXPORT void steptrace_py_cost(uint64_t ns)
{
	if (in.configured && !in.done && getpid() == in.pid)
		cost_python(ns);
}

/*
 * The optimizer's parameter groups, once (the first call wins): n groups
 * of 4 values each, groups[4i ..]: the tensors that require a gradient,
 * their elements, their bytes, and their dtype (enum st_dtype; 0 several
 * or another). Written in the footer (param_groups), which is what
 * `explain --what-if ranks=N` sizes the gradients by.
 */
EXPORT void steptrace_py_params(const uint64_t *groups, uint32_t n)
{
	uint64_t t0 = cost_ticks();
	size_t keep = n < ST_PARAM_GROUPS_MAX ? n : ST_PARAM_GROUPS_MAX;

	if (!groups || !n || atomic_load(&in.n_params))
		return;
	for (size_t i = 0; i < n; i++) {
		struct st_param_group *g = &in.params[i < keep ? i : keep - 1];
		const uint64_t *v = &groups[4 * i];

		g->tensors += v[0];
		g->elements += v[1];
		g->bytes += v[2];
		g->dtype = i < keep && v[3] <= ST_DT_U8 ? (uint32_t)v[3] : ST_DT_UNKNOWN;
	}
	atomic_store(&in.n_params, keep);
	cost_end(COST_HOOK, t0, COST_UNTIMED);
}

/*
 * The kernel calls of the compiled graph whose region is named `graph` (a
 * steptrace_py_intern id), with their modules: record/compiled.h has the
 * table's form. 1 when taken; 0: its kernels stay in the region.
 */
EXPORT int steptrace_py_kernel_modules(uint32_t graph, const char *table)
{
	COST_SCOPE(COST_HOOK, 0);
	return compiled_register(graph, table) == 0;
}

/* ---- NVTX's entry point and its functions ------------------------------------------ */

static uint64_t now(void)
{
	return capture_now();
}

/* A wide message as ASCII into buf ('?' for anything else). */
static const char *narrow(const wchar_t *w, char *buf, size_t len)
{
	size_t i = 0;

	for (; w && w[i] && i + 1 < len; i++)
		buf[i] = w[i] > 0 && w[i] < 128 ? (char)w[i] : '?';
	buf[i] = '\0';
	return buf;
}

/* The message of event attributes: text (ASCII or narrowed) or a registered id. */
static const char *message(const nvtxEventAttributes_t *a, uint32_t *reg, char *buf, size_t len)
{
	*reg = 0;
	if (!a || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof(a->message))
		return NULL;
	switch (a->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII:
		return a->message.ascii;
	case NVTX_MESSAGE_TYPE_UNICODE:
		return narrow(a->message.unicode, buf, len);
	case NVTX_MESSAGE_TYPE_REGISTERED:
		*reg = (uint32_t)(uintptr_t)a->message.registered;
		return NULL;
	default:
		return NULL;
	}
}

static int nvtx_push_a(const char *m)
{
	COST_SCOPE(COST_NVTX, COST_RANGE);
	if (in.armed && !nv_push(m, 0))
		return nv.depth - 1;
	return ranges_push(NULL, m, 0, now());
}

static int nvtx_push_w(const wchar_t *m)
{
	COST_SCOPE(COST_NVTX, COST_RANGE);
	char buf[1024];

	if (in.armed && !nv_push(narrow(m, buf, sizeof(buf)), 0))
		return nv.depth - 1;
	return ranges_push(NULL, narrow(m, buf, sizeof(buf)), 0, now());
}

static int nvtx_push_ex(const nvtxEventAttributes_t *a)
{
	COST_SCOPE(COST_NVTX, COST_RANGE);
	char buf[1024];
	uint32_t reg;
	const char *m = message(a, &reg, buf, sizeof(buf));

	if (in.armed && !nv_push(m, reg))
		return nv.depth - 1;
	return ranges_push(NULL, m, reg, now());
}

/* A pop of domain d, unless an armed process is quiet or the range began before its recording. */
static int pop_in(struct ranges_domain *d)
{
	int rc;

	if (in.armed && !nv_pop())
		return nv.depth;
	rc = ranges_pop(d, now());
	if (in.armed)
		nv_popped();
	return rc;
}

static int nvtx_pop(void)
{
	COST_SCOPE(COST_NVTX, 0);
	return pop_in(NULL);
}

static nvtxRangeId_t nvtx_start_a(const char *m)
{
	COST_SCOPE(COST_NVTX, COST_RANGE);
	if (in.armed && idle())
		return 0;
	return ranges_start(NULL, m, 0, now());
}

static nvtxRangeId_t nvtx_start_w(const wchar_t *m)
{
	COST_SCOPE(COST_NVTX, COST_RANGE);
	char buf[1024];

	if (in.armed && idle())
		return 0;
	return ranges_start(NULL, narrow(m, buf, sizeof(buf)), 0, now());
}

static nvtxRangeId_t nvtx_start_ex(const nvtxEventAttributes_t *a)
{
	COST_SCOPE(COST_NVTX, COST_RANGE);
	char buf[1024];
	uint32_t reg;
	const char *m;

	if (in.armed && idle())
		return 0;
	m = message(a, &reg, buf, sizeof(buf));
	return ranges_start(NULL, m, reg, now());
}

static void nvtx_end(nvtxRangeId_t id)
{
	COST_SCOPE(COST_NVTX, 0);
	if (in.armed && (idle() || !id))
		return;
	ranges_end(id, now());
}

static void nvtx_mark_a(const char *m)
{
	COST_SCOPE(COST_NVTX, COST_RANGE);
	if (in.armed && idle())
		return;
	ranges_mark(NULL, m, 0, now());
}

static void nvtx_mark_w(const wchar_t *m)
{
	COST_SCOPE(COST_NVTX, COST_RANGE);
	char buf[1024];

	if (in.armed && idle())
		return;
	ranges_mark(NULL, narrow(m, buf, sizeof(buf)), 0, now());
}

static void nvtx_mark_ex(const nvtxEventAttributes_t *a)
{
	COST_SCOPE(COST_NVTX, COST_RANGE);
	char buf[1024];
	uint32_t reg;
	const char *m;

	if (in.armed && idle())
		return;
	m = message(a, &reg, buf, sizeof(buf));
	ranges_mark(NULL, m, reg, now());
}

static nvtxDomainHandle_t nvtx_domain_create_a(const char *name)
{
	COST_SCOPE(COST_NVTX, 0);
	return (nvtxDomainHandle_t)ranges_domain_create(name);
}

static nvtxDomainHandle_t nvtx_domain_create_w(const wchar_t *name)
{
	COST_SCOPE(COST_NVTX, 0);
	char buf[1024];

	return (nvtxDomainHandle_t)ranges_domain_create(narrow(name, buf, sizeof(buf)));
}

static void nvtx_domain_destroy(nvtxDomainHandle_t d)
{
	/* kept: its name may still be in queued events */
}

static nvtxStringHandle_t nvtx_register_a(nvtxDomainHandle_t d, const char *s)
{
	COST_SCOPE(COST_NVTX, 0);
	return (nvtxStringHandle_t)(uintptr_t)ranges_register(s);
}

static nvtxStringHandle_t nvtx_register_w(nvtxDomainHandle_t d, const wchar_t *s)
{
	COST_SCOPE(COST_NVTX, 0);
	char buf[1024];

	return (nvtxStringHandle_t)(uintptr_t)ranges_register(narrow(s, buf, sizeof(buf)));
}

/* A range of the program's in domain d; NCCL's carry a payload (record/payload.h). */
static int nvtx_domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	COST_SCOPE(COST_NVTX, COST_RANGE);
	char buf[1024];
	uint32_t reg;
	uint64_t comm = 0, bytes = 0;
	const char *m = message(a, &reg, buf, sizeof(buf));

	if (in.armed && !nv_push(m, reg))
		return nv.depth - 1;
	if (ranges_domain_nccl((struct ranges_domain *)d))
		payload_of_attributes((struct ranges_domain *)d, a, &comm, &bytes);
	return ranges_push_payload((struct ranges_domain *)d, m, reg, now(), comm, bytes);
}

static int nvtx_domain_pop(nvtxDomainHandle_t d)
{
	COST_SCOPE(COST_NVTX, 0);
	return pop_in((struct ranges_domain *)d);
}

static nvtxRangeId_t nvtx_domain_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	COST_SCOPE(COST_NVTX, COST_RANGE);
	char buf[1024];
	uint32_t reg;
	const char *m;

	if (in.armed && idle())
		return 0;
	m = message(a, &reg, buf, sizeof(buf));
	return ranges_start((struct ranges_domain *)d, m, reg, now());
}

static void nvtx_domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
	COST_SCOPE(COST_NVTX, 0);
	if (in.armed && (idle() || !id))
		return;
	ranges_end(id, now());
}

static void nvtx_domain_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	COST_SCOPE(COST_NVTX, COST_RANGE);
	char buf[1024];
	uint32_t reg;
	const char *m;

	if (in.armed && idle())
		return;
	m = message(a, &reg, buf, sizeof(buf));
	ranges_mark((struct ranges_domain *)d, m, reg, now());
}

static void nvtx_initialize(const void *reserved)
{
}

struct slot {
	unsigned id;
	NvtxFunctionPointer fn;
};

#define SLOT(id, fn) { (id), (NvtxFunctionPointer)(fn) }

static const struct slot core_slots[] = {
	SLOT(NVTX_CBID_CORE_MarkEx, nvtx_mark_ex),
	SLOT(NVTX_CBID_CORE_MarkA, nvtx_mark_a),
	SLOT(NVTX_CBID_CORE_MarkW, nvtx_mark_w),
	SLOT(NVTX_CBID_CORE_RangeStartEx, nvtx_start_ex),
	SLOT(NVTX_CBID_CORE_RangeStartA, nvtx_start_a),
	SLOT(NVTX_CBID_CORE_RangeStartW, nvtx_start_w),
	SLOT(NVTX_CBID_CORE_RangeEnd, nvtx_end),
	SLOT(NVTX_CBID_CORE_RangePushEx, nvtx_push_ex),
	SLOT(NVTX_CBID_CORE_RangePushA, nvtx_push_a),
	SLOT(NVTX_CBID_CORE_RangePushW, nvtx_push_w),
	SLOT(NVTX_CBID_CORE_RangePop, nvtx_pop),
};

static const struct slot core2_slots[] = {
	SLOT(NVTX_CBID_CORE2_DomainMarkEx, nvtx_domain_mark_ex),
	SLOT(NVTX_CBID_CORE2_DomainRangeStartEx, nvtx_domain_start_ex),
	SLOT(NVTX_CBID_CORE2_DomainRangeEnd, nvtx_domain_end),
	SLOT(NVTX_CBID_CORE2_DomainRangePushEx, nvtx_domain_push_ex),
	SLOT(NVTX_CBID_CORE2_DomainRangePop, nvtx_domain_pop),
	SLOT(NVTX_CBID_CORE2_DomainRegisterStringA, nvtx_register_a),
	SLOT(NVTX_CBID_CORE2_DomainRegisterStringW, nvtx_register_w),
	SLOT(NVTX_CBID_CORE2_DomainCreateA, nvtx_domain_create_a),
	SLOT(NVTX_CBID_CORE2_DomainCreateW, nvtx_domain_create_w),
	SLOT(NVTX_CBID_CORE2_DomainDestroy, nvtx_domain_destroy),
	SLOT(NVTX_CBID_CORE2_Initialize, nvtx_initialize),
};

static int fill(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module,
		const struct slot *slots, size_t n)
{
	NvtxFunctionTable table = NULL;
	unsigned int size = 0;

	if (!cb->GetModuleFunctionTable(module, &table, &size) || !table)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (slots[i].id < size && table[slots[i].id])
			*table[slots[i].id] = slots[i].fn;
	return 0;
}

/*
 * Called once by each copy of NVTX in the process (NVTX3 is header-only:
 * every library built with it has its own): fills that copy's function
 * tables. 0 leaves that copy's NVTX calls as no-ops.
 */
EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table)
{
	const NvtxExportTableCallbacks *cb;
	const NvtxExportTableVersionInfo *vi;

	pthread_once(&in.once, setup);
	if (!in.configured || getpid() != in.pid || !get_table)
		return 0;
	cb = get_table(NVTX_ETID_CALLBACKS);
	vi = get_table(NVTX_ETID_VERSIONINFO);
	if (!cb || cb->struct_size < sizeof(*cb) || !cb->GetModuleFunctionTable)
		return 0;
	if (vi && vi->struct_size >= sizeof(*vi) && vi->SetInjectionNvtxVersion)
		vi->SetInjectionNvtxVersion(NVTX_VERSION);
	if (fill(cb, NVTX_CB_MODULE_CORE, core_slots, sizeof(core_slots) / sizeof(core_slots[0])))
		return 0;
	fill(cb, NVTX_CB_MODULE_CORE2, core2_slots, sizeof(core2_slots) / sizeof(core2_slots[0]));
	return 1;
}

/* The payload extension's ranges through the armed process's gate, as the core's. */
static const struct payload_gate armed_gate = { nv_push, nv_pop, nv_popped, idle };

/*
 * Called by each copy of NVTX in the process for each of its extension
 * modules, at the first call of one: the payload extension's functions are
 * the recorder's (record/payload.c); 0 leaves any other module's no-ops.
 */
EXPORT int InitializeInjectionNvtxExtension(void *module_info)
{
	pthread_once(&in.once, setup);
	if (!in.configured || getpid() != in.pid)
		return 0;
	if (in.armed)
		payload_set_gate(&armed_gate);
	return payload_module_fill(module_info);
}
