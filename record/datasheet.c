/*
 * datasheet.c: the device facts that need no CUDA runtime: the kernel
 * module's version and the datasheet peaks (device.h). Shared by the
 * built-in recorder and the injection library.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "record/device.h"

/* True for "580.95.05"-like tokens: digits and at least one dot. */
static bool is_version(const char *tok, size_t len)
{
	size_t i, dots = 0;

	if (len == 0 || tok[0] < '0' || tok[0] > '9')
		return false;
	for (i = 0; i < len; i++) {
		if (tok[i] == '.')
			dots++;
		else if (tok[i] < '0' || tok[i] > '9')
			return false;
	}
	return dots > 0;
}

/* The kernel module's version from "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build ...". */
void device_driver_version(char *out, size_t len)
{
	char line[512], *p;
	FILE *f = fopen("/proc/driver/nvidia/version", "r");

	out[0] = '\0';
	if (!f)
		return;
	if (fgets(line, sizeof(line), f)) {
		for (p = line; *p; ) {
			size_t n = strcspn(p, " \t\n");

			if (is_version(p, n)) {
				snprintf(out, len, "%.*s", (int)n, p);
				break;
			}
			p += n;
			p += strspn(p, " \t\n");
		}
	}
	fclose(f);
}


/* ---- datasheet ------------------------------------------------------- */

struct datasheet {
	const char *label;
	double fp32, tf32, bf16, fp16, bandwidth;   /* dense tensor-core rates */
};

static const struct datasheet h100_sxm = {
	"NVIDIA H100 SXM5 datasheet (dense)", 67e12, 494.7e12, 989.4e12, 989.4e12, 3.35e12 };
static const struct datasheet h200 = {
	"NVIDIA H200 SXM datasheet (dense)", 67e12, 494.7e12, 989.4e12, 989.4e12, 4.8e12 };

static const struct datasheet *datasheet_for(const char *name)
{
	if (strstr(name, "NVL") || strstr(name, "PCIe"))
		return NULL;   /* lower clocks and power: other figures */
	if (strstr(name, "H200"))
		return &h200;
	if (strstr(name, "H100") && (strstr(name, "HBM3") || strstr(name, "SXM")))
		return &h100_sxm;
	return NULL;
}

void device_datasheet(struct device_facts *f, const char *why)
{
	const struct datasheet *d = datasheet_for(f->name);
	const char *sep = why ? "; " : "";

	if (!why)
		why = "";
	if (!d) {
		f->info.peak_fp32_flops = f->info.peak_tf32_flops = 0;
		f->info.peak_bf16_flops = f->info.peak_fp16_flops = f->info.peak_bandwidth = 0;
		f->info.peak_source = STEPTRACE__PEAK_SOURCE__PEAK_UNKNOWN;
		snprintf(f->note, sizeof(f->note),
			 "%s%sno datasheet figures for '%s'; record without --no-calibrate to measure",
			 why, sep, f->name);
		return;
	}
	f->info.peak_fp32_flops = d->fp32;
	f->info.peak_tf32_flops = d->tf32;
	f->info.peak_bf16_flops = d->bf16;
	f->info.peak_fp16_flops = d->fp16;
	f->info.peak_bandwidth = d->bandwidth;
	f->info.peak_source = STEPTRACE__PEAK_SOURCE__PEAK_DATASHEET;
	snprintf(f->note, sizeof(f->note), "%s%s%s", why, sep, d->label);
}

