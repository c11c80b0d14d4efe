/*
 * device.h: the header's device facts (SPEC.md, "Recording"): what the GPU
 * is, the CUDA, driver, CUPTI and cuBLAS versions, and its peak FLOP/s and
 * bandwidth, either measured here (a short cuBLAS calibration, run before
 * CUPTI is enabled and freed before the model runs) or from a datasheet.
 */
#ifndef STEPTRACE_RECORD_DEVICE_H
#define STEPTRACE_RECORD_DEVICE_H

#include "steptrace.pb-c.h"

struct device_facts {
	Steptrace__DeviceInfo info;   /* its strings point into the arrays below */
	char name[256];
	char driver[64];
	char note[512];
};

/* Reads the facts of CUDA device `device` (made current). -1 with an error line. */
int device_facts_read(int device, struct device_facts *f);

/*
 * Measures the peaks: an n^3 GEMM per precision (fp32, tf32, bf16) through
 * cuBLAS on random data and a large device-to-device copy, timed with
 * events. Everything it allocates is freed before it returns. -1 with a
 * warning line when it cannot run (the caller falls back to the datasheet).
 */
int device_calibrate(struct device_facts *f);

/*
 * The same facts through the driver API alone, for the injection library
 * in a program that brings its own CUDA runtime (record/device_info.c):
 * no runtime or cuBLAS version. -1 with an error line.
 */
int device_facts_read_driver(int device, struct device_facts *f);

/* The NVIDIA kernel module's version ("580.95.05") into out, "" when unknown. */
void device_driver_version(char *out, size_t len);

/* Datasheet peaks for known GPUs (H100 SXM, H200), PEAK_UNKNOWN otherwise. `why` opens the note (may be NULL). */
void device_datasheet(struct device_facts *f, const char *why);

#endif
