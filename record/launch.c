/* launch.c: see launch.h. */
#define _GNU_SOURCE
#include "record/launch.h"

#include <cuda_runtime.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/armed.h"
#include "lib/error.h"
#include "lib/grow.h"
#include "lib/human.h"
#include "record/device.h"

#define INJECT_LIBRARY "libsteptrace_inject.so"
#define ASYNC_BACKEND "backend:cudaMallocAsync"

const char *const launch_torch_alloc_names[] = {
	[LAUNCH_ALLOC_DEFAULT] = "default", [LAUNCH_ALLOC_ASYNC] = "async", NULL,
};

const char *const launch_torch_names[] = {
	[LAUNCH_TORCH_AUTO] = "auto", [LAUNCH_TORCH_OFF] = "off", [LAUNCH_TORCH_OPS] = "ops", NULL,
};

#define PYTHON_DIR "python"   /* beside libsteptrace_inject.so: sitecustomize.py, steptrace_torch.py */

/* PYTHONPATH with the Python side's folder first (malloc'd), NULL when it is not there (one warning). */
static char *python_path(const char *inject)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	const char *old = getenv("PYTHONPATH");
	char *s;

	snprintf(dir, sizeof(dir), "%s", inject);
	snprintf(path, sizeof(path), "%s/%s/sitecustomize.py", dirname(dir), PYTHON_DIR);
	if (access(path, R_OK)) {
		warning("cannot read '%s': %s; PyTorch programs are recorded without steps, phases and "
			"modules (--torch off)", path, strerror(errno));
		return NULL;
	}
	path[strlen(path) - strlen("/sitecustomize.py")] = '\0';
	if (asprintf(&s, "%s%s%s", path, old && *old ? ":" : "", old && *old ? old : "") < 0)
		return NULL;
	return s;
}

/* ---- what the command needs --------------------------------------------------- */

/* libsteptrace_inject.so beside the library this code is in, into path. */
static int inject_path(char *path, size_t len)
{
	Dl_info info;
	char dir[PATH_MAX];

	if (!dladdr((void *)launch_run, &info) || !info.dli_fname || info.dli_fname[0] != '/')
		return error("cannot find where libsteptrace_gpu.so is, to find %s", INJECT_LIBRARY);
	snprintf(dir, sizeof(dir), "%s", info.dli_fname);
	snprintf(path, len, "%s/%s", dirname(dir), INJECT_LIBRARY);
	if (access(path, R_OK))
		return error("cannot read '%s': %s (it is built with the GPU part)", path, strerror(errno));
	return 0;
}

/* The -o path made absolute (the command may change directory), its directory checked. */
static int output_path(const char *output, char *abs, size_t len)
{
	char dir[PATH_MAX], base[PATH_MAX], real[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", output);
	snprintf(base, sizeof(base), "%s", output);
	if (!*output || output[strlen(output) - 1] == '/')
		return error("output '%s' names a directory, not a bundle", output);
	if (!realpath(dirname(dir), real))
		return error("cannot write '%s': %s", output, strerror(errno));
	if (access(real, W_OK | X_OK))
		return error("cannot write '%s': %s", output, strerror(errno));
	if (snprintf(abs, len, "%s/%s", real, basename(base)) >= (int)len)
		return error("output path '%s' is too long", output);
	return 0;
}

/* "NAME;fp32;tf32;bf16;fp16;bandwidth" measured on device 0, for STEPTRACE_PEAKS. */
static int calibrate(char *out, size_t len)
{
	struct device_facts f;
	int rc = -1;

	fprintf(stderr, "record: measuring peak FLOP/s and bandwidth before starting the command\n");
	if (device_facts_read(0, &f) == 0 && device_calibrate(&f) == 0) {
		snprintf(out, len, "%s;%.6g;%.6g;%.6g;%.6g;%.6g", f.name, f.info.peak_fp32_flops,
			 f.info.peak_tf32_flops, f.info.peak_bf16_flops, f.info.peak_fp16_flops,
			 f.info.peak_bandwidth);
		rc = 0;
	}
	cudaDeviceReset();   /* the command gets the whole device */
	return rc;
}

/* PYTORCH_CUDA_ALLOC_CONF with the cudaMallocAsync backend added; NULL (one error line) when it names another. */
static char *alloc_conf(void)
{
	const char *old = getenv("PYTORCH_CUDA_ALLOC_CONF");
	char *s;

	if (!old || !*old)
		return strdup(ASYNC_BACKEND);
	if (strstr(old, ASYNC_BACKEND))
		return strdup(old);
	if (strstr(old, "backend")) {
		error("--torch-alloc async: PYTORCH_CUDA_ALLOC_CONF='%s' already names a backend", old);
		return NULL;
	}
	if (asprintf(&s, "%s,%s", old, ASYNC_BACKEND) < 0)
		return NULL;
	return s;
}

/* ---- the child ----------------------------------------------------------------- */

struct child_env {
	const char *name, *value;
};

/* In the child: the environment, then the command; on failure errno goes up `report` (close-on-exec). */
static void exec_child(const struct launch_opts *o, const struct child_env *env, size_t n, int report)
{
	int e;

	/* the recorder's own settings are ours alone: one not given is not inherited */
	for (size_t i = 0; i < n; i++)
		if (!env[i].value && !strncmp(env[i].name, "STEPTRACE_", 10))
			unsetenv(env[i].name);
	for (size_t i = 0; i < n; i++)
		if (env[i].value && setenv(env[i].name, env[i].value, 1)) {
			e = errno;
			error("cannot set %s: %s", env[i].name, strerror(e));
			goto fail;
		}
	execvp(o->argv[0], (char *const *)o->argv);
	e = errno;
	error("cannot run '%s': %s", o->argv[0], strerror(e));
fail:
	if (write(report, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(e == ENOENT ? 127 : 126);
}

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

static const int forwarded[] = { SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 };
static const int ignored[] = { SIGINT, SIGQUIT };
#define N_FORWARDED (sizeof(forwarded) / sizeof(forwarded[0]))
#define N_IGNORED (sizeof(ignored) / sizeof(ignored[0]))

struct saved_signals {
	struct sigaction fwd[N_FORWARDED], ign[N_IGNORED];
};

static void signals_take(struct saved_signals *saved)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = forward_signal;
	for (size_t i = 0; i < N_FORWARDED; i++)
		sigaction(forwarded[i], &sa, &saved->fwd[i]);
	sa.sa_handler = SIG_IGN;
	for (size_t i = 0; i < N_IGNORED; i++)
		sigaction(ignored[i], &sa, &saved->ign[i]);
}

static void signals_give_back(const struct saved_signals *saved)
{
	for (size_t i = 0; i < N_FORWARDED; i++)
		sigaction(forwarded[i], &saved->fwd[i], NULL);
	for (size_t i = 0; i < N_IGNORED; i++)
		sigaction(ignored[i], &saved->ign[i], NULL);
}

/* ---- what the processes wrote ----------------------------------------------------- */

struct bundle_claim {
	char id[64];
	char path[PATH_MAX];
	char writing[PATH_MAX];    /* the temporary the process wrote into, renamed onto path at its end */
	long long events, bytes, dropped, steps, warmup, ops, unattributed, open, unpaired, lost;
	int capped, signal;
	char end[32];              /* "" when the process never closed it */
	char steps_from[128];      /* how its steps were found */
};

static void claim_read(const char *file, struct bundle_claim *c)
{
	static const struct { const char *key; size_t off; } nums[] = {
#define NUM(k) { #k " %lld", offsetof(struct bundle_claim, k) }
		NUM(events), NUM(bytes), NUM(dropped), NUM(steps), NUM(warmup), NUM(ops),
		NUM(unattributed), NUM(open), NUM(unpaired), NUM(lost),
#undef NUM
	};
	char line[PATH_MAX + 64];
	FILE *f = fopen(file, "r");

	c->events = c->bytes = -1;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "bundle ", 7)) {
			snprintf(c->path, sizeof(c->path), "%.*s", (int)sizeof(c->path) - 1, line + 7);
			continue;
		}
		if (!strncmp(line, "writing ", 8)) {
			snprintf(c->writing, sizeof(c->writing), "%.*s", (int)sizeof(c->writing) - 1, line + 8);
			continue;
		}
		if (!strncmp(line, "steps_from ", 11)) {
			snprintf(c->steps_from, sizeof(c->steps_from), "%.*s", (int)sizeof(c->steps_from) - 1,
				 line + 11);
			continue;
		}
		if (!strncmp(line, "end ", 4)) {
			snprintf(c->end, sizeof(c->end), "%.*s", (int)sizeof(c->end) - 1, line + 4);
			continue;
		}
		if (sscanf(line, "capped %d", &c->capped) == 1 || sscanf(line, "signal %d", &c->signal) == 1)
			continue;
		for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
			if (sscanf(line, nums[i].key, (long long *)((char *)c + nums[i].off)) == 1)
				break;
	}
	fclose(f);
}

/* Reads and removes the claims directory; the claims with a bundle, in *out. */
static size_t claims_collect(const char *dir, struct bundle_claim **out)
{
	struct bundle_claim *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d = opendir(dir);
	char file[PATH_MAX];

	*out = NULL;
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%.*s/%.*s", PATH_MAX / 2, dir, PATH_MAX / 4, de->d_name);
		if (!ALLOC_GROW(v, n + 1, cap)) {
			memset(&v[n], 0, sizeof(v[n]));
			snprintf(v[n].id, sizeof(v[n].id), "%.*s", (int)sizeof(v[n].id) - 1, de->d_name);
			claim_read(file, &v[n]);
			if (v[n].path[0])
				n++;
		}
		unlink(file);
	}
	closedir(d);
	rmdir(dir);
	*out = v;
	return n;
}

static void report_bundle(const struct bundle_claim *c, const char *path)
{
	char size[32];

	if (!c->end[0]) {
		fprintf(stderr, "record: '%s' (process %s) was not closed: the process was killed "
			"(SIGKILL?) or hung while flushing; it is readable up to its last whole chunk\n",
			path, c->id);
		return;
	}
	human_bytes(size, sizeof(size), (double)(c->bytes > 0 ? c->bytes : 0));
	fprintf(stderr, "record: '%s': %lld events, %s (%.1f bytes/event), %lld step%s (%lld warm-up)%s%s, "
		"%lld ops, %lld dropped records%s%s\n",
		path, c->events, size, c->events > 0 ? (double)c->bytes / (double)c->events : 0.0,
		c->steps, c->steps == 1 ? "" : "s", c->warmup, c->steps_from[0] ? " from " : "",
		c->steps_from, c->ops, c->dropped,
		strcmp(c->end, "ok") ? ", ended by " : "", strcmp(c->end, "ok") ? c->end : "");
	if (c->signal)
		fprintf(stderr, "record: process %s got signal %d (%s); its bundle holds what was recorded "
			"until then\n", c->id, c->signal, strsignal(c->signal));
	if (c->dropped)
		warning("*** CUPTI DROPPED %lld ACTIVITY RECORDS in '%s': THIS BUNDLE IS MISSING EVENTS ***",
			c->dropped, path);
	if (c->unattributed)
		warning("'%s': %lld kernels, copies or memsets were launched outside every NVTX range "
			"(they have no op)", path, c->unattributed);
	if (c->open || c->unpaired)
		warning("'%s': %lld NVTX ranges were still open at the end and %lld pops or ends had no "
			"push or start; they are not in the bundle", path, c->open, c->unpaired);
	if (c->lost)
		warning("'%s': %lld NVTX events were not recorded (nested deeper than 256, out of memory, "
			"or after the end)", path, c->lost);
	if (c->capped)
		warning("'%s': more than 1,048,576 op executions per step: later ones share ops, and "
			"`flops` undercounts them (use --step-range)", path);
}

static int cmp_claim(const void *a, const void *b)
{
	return strcmp(((const struct bundle_claim *)a)->path, ((const struct bundle_claim *)b)->path);
}

/* A bundle's path as the user named its directory in -o ("runs/run.3.stb", "run.3.stb"). */
static const char *shown(const struct launch_opts *o, const char *path, char *buf, size_t len)
{
	const char *slash = strrchr(o->output, '/'), *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (!slash)
		return base;
	snprintf(buf, len, "%.*s%s", (int)(slash - o->output + 1), o->output, base);
	return buf;
}

static void report(const struct launch_opts *o, const char *output, struct bundle_claim *v, size_t n)
{
	char buf[PATH_MAX];

	if (n == 0 && o->armed) {
		fprintf(stderr, "record: the armed run ended without a trigger: no bundle written\n");
		return;
	}
	if (n == 0) {
		warning("no process of '%s' created a CUDA context: no bundle written", o->argv[0]);
		return;
	}
	/* a process killed before it closed its bundle left it under the writer's temporary name */
	for (size_t i = 0; i < n; i++)
		if (!v[i].end[0] && v[i].writing[0] && strcmp(v[i].writing, v[i].path) &&
		    access(v[i].writing, F_OK) == 0 && rename(v[i].writing, v[i].path))
			warning("cannot rename '%s' to '%s': %s", v[i].writing, v[i].path, strerror(errno));
	if (n == 1 && !o->armed && strcmp(v[0].path, output)) {
		if (rename(v[0].path, output))
			warning("cannot rename '%s' to '%s': %s", v[0].path, output, strerror(errno));
		else
			snprintf(v[0].path, sizeof(v[0].path), "%s", output);
	}
	qsort(v, n, sizeof(*v), cmp_claim);
	for (size_t i = 0; i < n; i++) {
		const char *name = shown(o, v[i].path, buf, sizeof(buf));

		report_bundle(&v[i], name);
		if (o->step_range && v[i].end[0] && v[i].steps == 0)
			warning("'%s': no NVTX range named '%s' closed: the bundle has no steps", name,
				o->step_range);
	}
}

/* ---- armed runs -------------------------------------------------------------------- */

/* Makes the run directory of an armed run (lib/armed.h), id: this process's pid, into dir. */
static int armed_make(char *dir, size_t len, char *id, size_t id_len)
{
	char base[PATH_MAX];

	snprintf(id, id_len, "%d", (int)getpid());
	if (armed_base(base, sizeof(base)) || armed_run_dir(dir, len, id))
		return -1;
	if (mkdir(base, 0700) && errno != EEXIST)
		return error("cannot make '%s': %s", base, strerror(errno));
	if (mkdir(dir, 0700) && errno != EEXIST)
		return error("cannot make '%s': %s", dir, strerror(errno));
	return 0;
}

/* Removes the run directory and what its processes left in it. */
static void armed_remove(const char *dir)
{
	struct dirent *de;
	char file[PATH_MAX];
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%.*s/%.*s", PATH_MAX / 2, dir, PATH_MAX / 4, de->d_name);
		unlink(file);
	}
	closedir(d);
	rmdir(dir);
}

/* ---- the run ----------------------------------------------------------------------- */

int launch_run(const struct launch_opts *o)
{
	char inject[PATH_MAX], output[PATH_MAX], claims[PATH_MAX], warmup[16], peaks[512] = "";
	char armed[PATH_MAX] = "", run_id[32] = "", every[16], windows[32];
	const char *tmp = getenv("TMPDIR");
	char *conf = NULL, *pypath = NULL;
	int torch_alloc = o->torch_alloc;
	struct saved_signals saved;
	struct bundle_claim *v = NULL;
	int status = 0, rc, exec_report[2], exec_errno = 0;
	ssize_t got;
	size_t n;
	pid_t pid;

	if (!o->argv || !o->argv[0])
		return error("no command to record");
	if (inject_path(inject, sizeof(inject)) || output_path(o->output, output, sizeof(output)))
		return -1;
	if (getenv("CUDA_INJECTION64_PATH") && *getenv("CUDA_INJECTION64_PATH"))
		return error("CUDA_INJECTION64_PATH is already set ('%s'): another tool is injected, and "
			     "CUPTI takes one", getenv("CUDA_INJECTION64_PATH"));
	if (torch_alloc < 0)   /* the program's own allocator: see launch.h */
		torch_alloc = LAUNCH_ALLOC_DEFAULT;
	if (torch_alloc == LAUNCH_ALLOC_ASYNC && !(conf = alloc_conf()))
		return -1;
	if (o->torch != LAUNCH_TORCH_OFF)
		pypath = python_path(inject);
	if (o->calibrate && calibrate(peaks, sizeof(peaks)))
		warning("calibration failed; the bundles take datasheet peaks");
	snprintf(claims, sizeof(claims), "%s/steptrace-record.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(claims)) {
		free(conf);
		free(pypath);
		return error("cannot make a directory in '%s': %s", tmp && *tmp ? tmp : "/tmp",
			     strerror(errno));
	}
	snprintf(warmup, sizeof(warmup), "%d", o->warmup);
	snprintf(every, sizeof(every), "%d", o->modules_every);
	snprintf(windows, sizeof(windows), "%d:%d", o->every, o->window > 0 ? o->window : LAUNCH_WINDOW);
	if (o->armed && armed_make(armed, sizeof(armed), run_id, sizeof(run_id))) {
		free(conf);
		free(pypath);
		rmdir(claims);
		return -1;
	}
	const struct child_env env[] = {
		{ "CUDA_INJECTION64_PATH", inject },
		{ "NVTX_INJECTION64_PATH", inject },
		{ "STEPTRACE_OUTPUT", output },
		{ "STEPTRACE_CLAIMS", claims },
		{ "STEPTRACE_STEP_RANGE", o->step_range },
		{ "STEPTRACE_WARMUP", o->warmup >= 0 ? warmup : NULL },
		{ "STEPTRACE_TORCH", pypath ? launch_torch_names[o->torch] : NULL },
		{ "PYTHONPATH", pypath },
		{ "STEPTRACE_API", capture_api_names[o->api] },
		{ "STEPTRACE_CUPTI_SYNC", o->cupti_sync ? "1" : NULL },
		{ "STEPTRACE_PRECISION", o->precision },
		{ "STEPTRACE_COMMAND_LINE", o->command_line },
		{ "STEPTRACE_PEAKS", peaks[0] ? peaks : NULL },
		{ "PYTORCH_CUDA_ALLOC_CONF", conf },
		{ "STEPTRACE_ARMED", armed[0] ? armed : NULL },
		{ "STEPTRACE_MODULES_EVERY", o->modules_every > 0 ? every : NULL },
		{ "STEPTRACE_ARMED_EVERY", armed[0] && o->every > 0 ? windows : NULL },
	};

	if (pipe2(exec_report, O_CLOEXEC)) {
		free(conf);
		free(pypath);
		rmdir(claims);
		if (armed[0])
			armed_remove(armed);
		return error("cannot start '%s': %s", o->argv[0], strerror(errno));
	}
	fflush(NULL);
	signals_take(&saved);
	pid = fork();
	if (pid == 0) {
		signals_give_back(&saved);
		close(exec_report[0]);
		exec_child(o, env, sizeof(env) / sizeof(env[0]), exec_report[1]);
	}
	free(conf);
	free(pypath);
	close(exec_report[1]);
	if (pid < 0) {
		signals_give_back(&saved);
		close(exec_report[0]);
		rmdir(claims);
		if (armed[0])
			armed_remove(armed);
		return error("cannot start '%s': %s", o->argv[0], strerror(errno));
	}
	child_pid = pid;
	if (armed[0] && o->every > 0)
		fprintf(stderr, "record: armed (run %s, command pid %d): steps %d to %lld, then every %d "
			"steps %d more, are recorded (and on `steptrace trigger --run %s`)\n", run_id,
			(int)pid, o->every, (long long)o->every + (o->window > 0 ? o->window : LAUNCH_WINDOW) - 1,
			o->every, o->window > 0 ? o->window : LAUNCH_WINDOW, run_id);
	else if (armed[0])
		fprintf(stderr, "record: armed (run %s, command pid %d): nothing is recorded until "
			"`steptrace trigger --run %s [--steps N]`\n", run_id, (int)pid, run_id);
	while ((got = read(exec_report[0], &exec_errno, sizeof(exec_errno))) < 0 && errno == EINTR)
		;
	close(exec_report[0]);
	while ((rc = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
		;
	child_pid = 0;
	signals_give_back(&saved);
	if (armed[0])
		armed_remove(armed);
	n = claims_collect(claims, &v);
	if (got <= 0)   /* the command ran: say what it wrote */
		report(o, output, v, n);
	free(v);
	if (rc < 0)
		return error("cannot wait for '%s': %s", o->argv[0], strerror(errno));
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);

		struct rlimit no_core = { 0, 0 };

		fflush(NULL);
		setrlimit(RLIMIT_CORE, &no_core);   /* the command's crash, not ours: no core of steptrace */
		signal(sig, SIG_DFL);
		raise(sig);
		return 128 + sig;   /* a signal that does not end a process by default */
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
