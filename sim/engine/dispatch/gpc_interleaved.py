"""The first wave as measured on H200: lead SMs first, then TPC pairs
round robin across GPCs (smid 124-131, then 0,1,16,17,32,33,...).

After the first wave a freed slot takes the next block, as in hardware.
The spec's `sms_per_gpc` and `first_wave_lead_sms` describe the pattern.
"""
from megasim.engine.dispatch.base import FreeSlotFifo, policy


def first_wave_order(sm_count: int, sms_per_gpc: int, lead) -> list[int]:
    lead = [sm for sm in lead if sm < sm_count]
    rest = [sm for sm in range(sm_count) if sm not in set(lead)]
    gpcs = {}
    for sm in rest:
        gpcs.setdefault(sm // sms_per_gpc, []).append(sm)
    pairs = {g: [sms[i:i + 2] for i in range(0, len(sms), 2)] for g, sms in gpcs.items()}
    order = list(lead)
    for i in range(max(len(p) for p in pairs.values()) if pairs else 0):
        for g in sorted(pairs):
            if i < len(pairs[g]):
                order.extend(pairs[g][i])
    return order


@policy("gpc_interleaved")
class GpcInterleaved(FreeSlotFifo):
    def __init__(self, gpu, slots_per_sm, opts):
        wave = first_wave_order(gpu.sm_count, gpu.sms_per_gpc, gpu.first_wave_lead_sms)
        super().__init__([sm for _ in range(slots_per_sm) for sm in wave])
