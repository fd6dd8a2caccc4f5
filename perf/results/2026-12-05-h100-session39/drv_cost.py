# Per-call host cost of the driver calls a pooled-scratch fence could use (cuda.bindings).
import statistics
import time

import cupy
from cuda.bindings import driver as d

import rtc

rtc.launch._core() if hasattr(rtc.launch, "_core") else None
s = cupy.cuda.Stream(non_blocking=True)
h = s.ptr
err, ev = d.cuEventCreate(d.CUevent_flags.CU_EVENT_DISABLE_TIMING)
d.cuEventRecord(ev, h)
fence = rtc.StreamFence()
fence.record(h)
calls = {
    "cuStreamIsCapturing": lambda: d.cuStreamIsCapturing(h),
    "cuEventRecord": lambda: d.cuEventRecord(ev, h),
    "cuStreamWaitEvent": lambda: d.cuStreamWaitEvent(h, ev, 0),
    "cuStreamGetId": lambda: d.cuStreamGetId(h),
    "cuStreamGetId(per-thread)": lambda: d.cuStreamGetId(2),
    "cuCtxGetDevice": lambda: d.cuCtxGetDevice(),
    "rtc.stream_capturing": lambda: rtc.stream_capturing(h),
    "fence.wait_on+record": lambda: (fence.wait_on(h), fence.record(h)),
}
for k, f in calls.items():
    for _ in range(200):
        f()
    r = []
    for _ in range(15):
        t0 = time.perf_counter()
        for _ in range(500):
            f()
        r.append((time.perf_counter() - t0) / 500 * 1000000.0)
    s.synchronize()
    print(f"{statistics.median(r):6.2f} us (min {min(r):5.2f})  {k}")
print("ids", d.cuStreamGetId(h), d.cuStreamGetId(2), d.cuStreamGetId(1), d.cuStreamGetId(0))
