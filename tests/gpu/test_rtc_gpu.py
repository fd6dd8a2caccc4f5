"""GPU tests of rtc: loading, launching, streams, cooperative launch, shared memory, occupancy.

Skipped as a whole when no CUDA device is usable. Device memory comes from numba.cuda (a hard
dependency of the project); torch and cupy interop tests skip when those are missing.
"""

from __future__ import annotations

import numpy as np
import pytest

import rtc

if not rtc.has_gpu():
    pytest.skip("no CUDA GPU available", allow_module_level=True)

pytestmark = pytest.mark.gpu

SRC = r"""
template <typename T>
__global__ void axpb(T* x, T a, T b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = a * x[i] + b;
}

// Each CTA publishes a value, arrives on a counter, waits for all CTAs of the grid, then sums
// every CTA's value. Only correct if all CTAs are co-resident (cooperative launch).
extern "C" __global__ void grid_sum(int* vals, unsigned int* arrived, long long* sums,
                                    int* timeouts) {
    if (threadIdx.x == 0) {
        const unsigned int nb = gridDim.x;
        vals[blockIdx.x] = blockIdx.x + 1;
        __threadfence();
        atomicAdd(arrived, 1u);
        const long long t0 = clock64();
        while (*((volatile unsigned int*)arrived) < nb) {
            if (clock64() - t0 > 4000000000LL) {  // ~2 s: report instead of hanging
                atomicAdd(timeouts, 1);
                break;
            }
        }
        __threadfence();
        long long s = 0;
        for (unsigned int i = 0; i < nb; ++i) s += ((volatile int*)vals)[i];
        sums[blockIdx.x] = s;
    }
}

extern "C" __global__ void reverse_smem(const float* in, float* out, int n) {
    extern __shared__ float buf[];
    for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = in[i];
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = buf[n - 1 - i];
}

extern "C" __global__ void args_probe(long long* out, int a, long long b, unsigned int c,
                                      float d, double e, unsigned char f) {
    out[0] = a;
    out[1] = b;
    out[2] = c;
    out[3] = (long long)(d * 1000.0f);
    out[4] = (long long)(e * 1000.0);
    out[5] = f;
}
"""
NAMES = ("axpb<float>", "axpb<double>", "grid_sum", "reverse_smem", "args_probe")


@pytest.fixture(scope="module")
def cuda():
    from numba import cuda as nb_cuda

    return nb_cuda


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    import os

    old = os.environ.get("NUMBA_NORMS_CACHE_DIR")
    os.environ["NUMBA_NORMS_CACHE_DIR"] = str(tmp_path_factory.mktemp("rtc-gpu-cache"))
    try:
        return rtc.compile(SRC, NAMES)  # arch of the current device
    finally:
        if old is None:
            os.environ.pop("NUMBA_NORMS_CACHE_DIR", None)
        else:
            os.environ["NUMBA_NORMS_CACHE_DIR"] = old


@pytest.fixture(scope="module")
def info():
    return rtc.device_info()


def ptr(arr) -> int:
    return int(arr.__cuda_array_interface__["data"][0])


def to_device(cuda, host: np.ndarray):
    d = cuda.to_device(host)
    # Pageable H2D copies may still be in flight; rtc launches go to other streams.
    cuda.synchronize()
    return d


def test_device_info(info):
    assert info is not None
    assert info.arch == f"sm_{info.cc[0]}{info.cc[1]}"
    assert info.sm_count > 0
    assert info.max_shared_per_block == 48 * 1024
    assert info.max_shared_per_block_optin >= info.max_shared_per_block
    assert info.max_threads_per_block >= 1024
    assert info.driver_version == rtc.driver_version()
    assert rtc.device_info(info.ordinal) is info
    assert rtc.device_info(10_000) is None


def test_default_arch_is_device_arch(mod, info):
    assert mod.arch == info.arch


def test_kernel_is_cached_and_has_attributes(mod):
    k = mod.kernel("axpb<float>")
    assert mod.kernel("axpb<float>") is k
    assert isinstance(k, rtc.Kernel)
    assert k.name == "axpb<float>"
    assert k.num_regs > 0
    assert k.max_threads_per_block >= 128
    assert k.local_bytes >= 0
    assert k.shared_bytes == 0
    assert mod.kernel("axpb<double>") is not k


def test_frame_bytes_match_the_driver(info):
    """The cubin's frame sizes (what a build without a GPU decides by) are the driver's local
    memory a thread, for kernels with none, a local array and register spills."""
    from tests.test_rtc import FRAME_SRC

    names = ["keep<100>", "keep<300>", "many"]
    for options in ((), ("-maxrregcount=32",)):
        mod = rtc.compile(FRAME_SRC, names, arch=info.arch, options=options)
        sizes = {n: mod.frame_bytes(n) for n in names}
        assert sizes == {n: mod.kernel(n).local_bytes for n in names}
        assert sizes["keep<300>"] >= 1200
        assert (sizes["many"] > 0) == bool(options)


def test_launch_on_cuda_core_stream(cuda, mod):
    from cuda.core import Device

    n = 10_000
    host = np.arange(n, dtype=np.float32)
    d = to_device(cuda, host)
    dev = Device()
    dev.set_current()  # cuda.core refuses create_stream() before set_current()
    stream = dev.create_stream()
    k = mod.kernel("axpb<float>")
    rtc.launch(
        k,
        (n + 255) // 256,
        256,
        ptr(d),
        np.float32(2.0),
        np.float32(1.0),
        np.int32(n),
        stream=stream,
    )
    stream.sync()
    np.testing.assert_array_equal(d.copy_to_host(), 2.0 * host + 1.0)

    hd = np.linspace(0, 1, n)
    dd = to_device(cuda, hd)
    kd = mod.kernel("axpb<double>")
    rtc.launch(kd, ((n + 127) // 128, 1, 1), (128, 1, 1), ptr(dd), 3.0, -1.0, np.int32(n))
    cuda.synchronize()
    # The kernel may fuse the multiply-add (one rounding): allow an ulp.
    np.testing.assert_allclose(dd.copy_to_host(), 3.0 * hd - 1.0, atol=1e-15)


def test_launch_argument_sizes(cuda, mod):
    out = to_device(cuda, np.zeros(6, dtype=np.int64))
    k = mod.kernel("args_probe")
    rtc.launch(
        k,
        1,
        1,
        ptr(out),
        np.int32(-5),
        np.int64(1 << 40),
        np.uint32(4_000_000_000),
        np.float32(1.5),
        2.25,
        np.uint8(200),
    )
    cuda.synchronize()
    assert out.copy_to_host().tolist() == [-5, 1 << 40, 4_000_000_000, 1500, 2250, 200]


def test_stream_like_objects(cuda, mod):
    from cuda.core import LEGACY_DEFAULT_STREAM

    assert rtc.as_stream(None) is LEGACY_DEFAULT_STREAM
    assert rtc.as_stream(0) is LEGACY_DEFAULT_STREAM
    ns = cuda.stream()
    s1 = rtc.as_stream(ns)
    assert rtc.as_stream(ns) is s1
    handle = int(s1.handle)
    assert rtc.as_stream(handle) is s1
    assert rtc.as_stream(s1) is s1

    n = 4096
    host = np.ones(n, dtype=np.float32)
    d = to_device(cuda, host)
    k = mod.kernel("axpb<float>")
    for s in (ns, handle, s1):
        rtc.launch(
            k, n // 256, 256, ptr(d), np.float32(2.0), np.float32(0.0), np.int32(n), stream=s
        )
    ns.synchronize()
    np.testing.assert_array_equal(d.copy_to_host(), 8.0 * host)
    with pytest.raises(TypeError):
        rtc.as_stream(object())


def test_occupancy(mod, info):
    k = mod.kernel("reverse_smem")
    small = k.occupancy(256, 0)
    assert small >= 1
    assert k.occupancy(256, 0) == small
    big = k.occupancy(256, 100 * 1024)
    assert 1 <= big < small
    with pytest.raises(ValueError):
        k.set_max_dynamic_shared_memory(info.max_shared_per_block_optin + 4096)


def test_dynamic_shared_memory_above_48k(cuda, mod, info):
    nbytes = 100 * 1024
    if info.max_shared_per_block_optin < nbytes:
        pytest.skip("device cannot give 100 KiB of shared memory to a block")
    n = nbytes // 4
    host = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    d_in = to_device(cuda, host)
    d_out = to_device(cuda, np.zeros(n, dtype=np.float32))
    k = mod.kernel("reverse_smem")
    rtc.launch(k, 1, 512, ptr(d_in), ptr(d_out), np.int32(n), shared_mem=nbytes)
    cuda.synchronize()
    np.testing.assert_array_equal(d_out.copy_to_host(), host[::-1])
    assert k.max_dynamic_shared_memory >= nbytes
    k.set_max_dynamic_shared_memory(nbytes)  # idempotent


def test_cooperative_launch_grid_barrier(cuda, mod, info):
    if not info.cooperative_launch:
        pytest.skip("device does not support cooperative launch")
    k = mod.kernel("grid_sum")
    block = 128
    grid = info.sm_count * k.occupancy(block, 0)
    assert grid >= info.sm_count
    vals = to_device(cuda, np.zeros(grid, dtype=np.int32))
    arrived = to_device(cuda, np.zeros(1, dtype=np.uint32))
    sums = to_device(cuda, np.zeros(grid, dtype=np.int64))
    timeouts = to_device(cuda, np.zeros(1, dtype=np.int32))
    rtc.launch(k, grid, block, ptr(vals), ptr(arrived), ptr(sums), ptr(timeouts), cooperative=True)
    cuda.synchronize()
    assert timeouts.copy_to_host()[0] == 0
    assert arrived.copy_to_host()[0] == grid
    expected = grid * (grid + 1) // 2
    np.testing.assert_array_equal(sums.copy_to_host(), np.full(grid, expected, dtype=np.int64))
    # Asking for more CTAs than can be co-resident is refused instead of deadlocking.
    with pytest.raises(ValueError):
        rtc.launch(k, grid + 1, block, 0, 0, 0, 0, cooperative=True)


def test_torch_stream_ordering(mod):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    n = 1 << 20
    k = mod.kernel("axpb<float>")
    for as_handle in (False, True):
        x = torch.zeros(n, device="cuda", dtype=torch.float32)
        s = torch.cuda.Stream()
        torch.cuda.synchronize()
        with torch.cuda.stream(s):
            if hasattr(torch.cuda, "_sleep"):
                torch.cuda._sleep(50_000_000)  # keeps the stream busy: exposes misordering
            x.fill_(1.0)
        stream = s.cuda_stream if as_handle else s
        rtc.launch(
            k,
            n // 256,
            256,
            x.data_ptr(),
            np.float32(3.0),
            np.float32(1.0),
            np.int32(n),
            stream=stream,
        )
        s.synchronize()
        assert bool(torch.all(x == 4.0))


def test_cupy_stream(mod):
    cp = pytest.importorskip("cupy")
    n = 1 << 16
    x = cp.ones(n, dtype=cp.float32)
    cp.cuda.runtime.deviceSynchronize()
    s = cp.cuda.Stream(non_blocking=True)
    k = mod.kernel("axpb<float>")
    rtc.launch(
        k, n // 256, 256, x.data.ptr, np.float32(5.0), np.float32(0.0), np.int32(n), stream=s
    )
    s.synchronize()
    assert float(x.sum()) == 5.0 * n


def test_disk_cached_module_launches(cuda, tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_NORMS_CACHE_DIR", str(tmp_path))
    src = SRC + "\n// disk variant\n"
    rtc.compile(src, ["axpb<float>"])
    rtc.clear_cache(memory=True, disk=False)
    m = rtc.compile(src, ["axpb<float>"])
    assert rtc.last_origin() == "disk"
    n = 1024
    d = to_device(cuda, np.ones(n, dtype=np.float32))
    rtc.launch(
        m.kernel("axpb<float>"), n // 128, 128, ptr(d), np.float32(2), np.float32(1), np.int32(n)
    )
    cuda.synchronize()
    np.testing.assert_array_equal(d.copy_to_host(), np.full(n, 3.0, dtype=np.float32))


def test_wrong_arch_is_refused(mod, info):
    other = "sm_80" if info.cc[0] != 8 else "sm_90"
    m = rtc.compile(SRC, ["axpb<float>"], arch=other)
    with pytest.raises(RuntimeError, match="cannot run"):
        m.kernel("axpb<float>")


def test_launcher_in_a_thread_without_a_context(cuda, mod):
    """A launcher called from a thread that has no current context (a fresh thread whose first
    CUDA work this is) pushes its device's primary context for the launch and pops it: the
    thread has no context after, and the kernel ran on the device (rtc.on_device)."""
    import threading

    from cuda.bindings import driver

    n = 1000
    host = np.arange(n, dtype=np.float32)
    d = to_device(cuda, host)
    k = mod.kernel("axpb<float>")
    fire = rtc.Launcher(k, (n + 255) // 256, 256, "Pffi")
    seen = []

    def work() -> None:
        before = int(driver.cuCtxGetCurrent()[1])
        fire(0, ptr(d), 2.0, 1.0, n)
        seen.append((before, int(driver.cuCtxGetCurrent()[1])))

    t = threading.Thread(target=work)
    t.start()
    t.join()
    cuda.synchronize()
    assert seen == [(0, 0)]
    np.testing.assert_array_equal(d.copy_to_host(), 2.0 * host + 1.0)
