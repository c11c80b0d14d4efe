/*
 * device_info.c: device_facts_read_driver (device.h), the device facts of
 * the header through the driver API, for the injection library: a program
 * recorded with `steptrace record -- COMMAND` brings its own CUDA runtime,
 * and the library leaves it alone.
 */
#include <cuda.h>
#include <cupti.h>
#include <stdio.h>
#include <string.h>

#include "lib/error.h"
#include "record/device.h"

static uint32_t attribute(CUdevice dev, CUdevice_attribute a)
{
	int v = 0;

	return cuDeviceGetAttribute(&v, a, dev) == CUDA_SUCCESS && v > 0 ? (uint32_t)v : 0;
}

int device_facts_read_driver(int device, struct device_facts *f)
{
	CUdevice dev;
	size_t total = 0;
	int v = 0;
	uint32_t cupti = 0;

	memset(f, 0, sizeof(*f));
	steptrace__device_info__init(&f->info);
	if (cuDeviceGet(&dev, device) != CUDA_SUCCESS)
		return error("cannot read the facts of CUDA device %d", device);
	if (cuDeviceGetName(f->name, sizeof(f->name), dev) != CUDA_SUCCESS)
		snprintf(f->name, sizeof(f->name), "CUDA device %d", device);
	f->info.name = f->name;
	f->info.index = (uint32_t)device;
	f->info.sm_count = attribute(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
	f->info.cc_major = attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
	f->info.cc_minor = attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
	if (cuDeviceTotalMem(&total, dev) == CUDA_SUCCESS)
		f->info.memory_bytes = total;
	f->info.mem_bus_bits = attribute(dev, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
	f->info.l2_bytes = attribute(dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
	f->info.sm_clock_khz = attribute(dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
	f->info.mem_clock_khz = attribute(dev, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
	if (cuDriverGetVersion(&v) == CUDA_SUCCESS)
		f->info.cuda_driver_version = (uint32_t)v;
	if (cuptiGetVersion(&cupti) == CUPTI_SUCCESS)
		f->info.cupti_version = cupti;
	device_driver_version(f->driver, sizeof(f->driver));
	f->info.driver_version = f->driver;
	f->info.peak_source = STEPTRACE__PEAK_SOURCE__PEAK_UNKNOWN;
	f->info.peak_note = f->note;
	return 0;
}
