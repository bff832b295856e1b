// %globaltimer and %smid, defined once: the megakernel's trace, the non-fused trace build and the
// microbenchmarks must read the same clock and SM id to be compared.
#pragma once

__device__ __forceinline__ unsigned long long ms_globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned int ms_smid() {
    unsigned int s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}
