"""Timing on the device, the same way for every side (candidate kernels and baselines).

Two measures, both interleaved round by round across the sides:
- device time: the summed GPU durations of every kernel (and memset) one call
  launches, read from CUPTI through `torch.profiler`. A tiny marker kernel is launched
  before each call so the trace can be cut into calls; markers and L2 flushes are
  left out of the sums.
- call latency: CUDA events around back-to-back calls from Python, host overhead
  included: what a solver loop sees.
Warm: calls back to back. Cold: the L2 is flushed (a write over twice its size)
before each call. GPU only: imported inside the harness worker.
"""

from __future__ import annotations

from collections.abc import Callable

import cupy
import numpy as np

from sparserl.harness.results import TimeStats, Timing, TimingConfig

_MARKER_NAME = "sparserl_marker"
_FLUSH_NAME = "sparserl_flush_l2"
_HELPERS = cupy.RawModule(
    code=f"""
extern "C" __global__ void {_MARKER_NAME}() {{}}
extern "C" __global__ void {_FLUSH_NAME}(float4* buffer, long long n) {{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        buffer[i] = make_float4(0.f, 0.f, 0.f, 0.f);
}}
"""
)


class Timer:
    """Times zero-argument callables on the current device and stream."""

    def __init__(self):
        self._marker = _HELPERS.get_function(_MARKER_NAME)
        flush = _HELPERS.get_function(_FLUSH_NAME)
        l2_bytes = cupy.cuda.Device().attributes["L2CacheSize"]
        self._flush_buffer = cupy.empty(max(2 * l2_bytes, 1 << 24) // 16 * 4, dtype=cupy.float32)
        n4 = self._flush_buffer.size // 4
        self._flush = lambda: flush((1024,), (256,), (self._flush_buffer, np.int64(n4)))

    def measure(
        self, sides: dict[str, Callable[[], None]], config: TimingConfig
    ) -> dict[str, Timing]:
        """Device time and latency of each side, warm, and cold too when `config.cold`."""
        for call in sides.values():  # warm-up: module load, first-touch, clocks
            call()
        cupy.cuda.Device().synchronize()
        device_warm, per_call = self._device_times(sides, config, cold=False)
        latency_warm = self._latencies(sides, config, cold=False)
        timings = {
            name: Timing(
                device_warm=TimeStats.from_samples(device_warm[name]),
                latency_warm=TimeStats.from_samples(latency_warm[name]),
                kernels_per_call=per_call[name],
            )
            for name in sides
        }
        if config.cold:
            device_cold, _ = self._device_times(sides, config, cold=True)
            latency_cold = self._latencies(sides, config, cold=True)
            for name, timing in timings.items():
                timing.device_cold = TimeStats.from_samples(device_cold[name])
                timing.latency_cold = TimeStats.from_samples(latency_cold[name])
        return timings

    def _device_times(self, sides, config, cold):
        from torch.profiler import ProfilerActivity, profile

        order = []  # side name of each call, in launch order
        with profile(activities=[ProfilerActivity.CUDA]) as profiler:
            for _ in range(config.rounds):
                for name, call in sides.items():
                    for _ in range(config.calls_per_round):
                        self._marker((1,), (1,), ())
                        if cold:
                            self._flush()
                        call()
                        order.append(name)
            self._marker((1,), (1,), ())
            cupy.cuda.Device().synchronize()
        calls = _split_calls(_gpu_events(profiler))
        if len(calls) != len(order):
            raise RuntimeError(
                f"profiler trace has {len(calls)} calls between markers, expected {len(order)}"
            )
        samples = {name: [] for name in sides}
        kernels = dict.fromkeys(sides, 0)
        for name, events in zip(order, calls, strict=True):
            samples[name].append(sum(duration for _, duration in events) / 1000.0)
            kernels[name] = max(kernels[name], len(events))
        return samples, kernels

    def _latencies(self, sides, config, cold):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        samples = {name: [] for name in sides}
        for _ in range(config.rounds):
            for name, call in sides.items():
                if cold:  # one call per measurement, flush outside the events
                    for _ in range(config.calls_per_round):
                        self._flush()
                        start.record()
                        call()
                        end.record()
                        end.synchronize()
                        samples[name].append(cupy.cuda.get_elapsed_time(start, end) * 1000.0)
                    continue
                start.record()
                for _ in range(config.calls_per_round):
                    call()
                end.record()
                end.synchronize()
                elapsed_us = cupy.cuda.get_elapsed_time(start, end) * 1000.0
                samples[name].append(elapsed_us / config.calls_per_round)
        return samples


def _gpu_events(profiler) -> list[tuple[str, int, int]]:
    """(name, start_ns, duration_ns) of every GPU kernel and memset, in start order."""
    events = []
    for event in profiler.profiler.kineto_results.events():
        if event.device_type().name != "CUDA":
            continue
        events.append((event.name(), event.start_ns(), event.duration_ns()))
    return sorted(events, key=lambda event: event[1])


def _split_calls(events) -> list[list[tuple[str, int]]]:
    """Cut the event stream at marker kernels; drop flushes. Returns (name, duration_ns) lists."""
    calls, current = [], None
    for name, _, duration in events:
        if _MARKER_NAME in name:
            if current is not None:
                calls.append(current)
            current = []
        elif current is not None and _FLUSH_NAME not in name:
            current.append((name, duration))
    return calls


def copy_bandwidth_gbs(n_bytes: int = 1 << 30, repetitions: int = 10) -> float:
    """Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes written."""
    source = cupy.ones(n_bytes // 4, dtype=cupy.float32)
    target = cupy.empty_like(source)
    target[...] = source
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(repetitions):
        target[...] = source
    end.record()
    end.synchronize()
    seconds = cupy.cuda.get_elapsed_time(start, end) / 1000.0
    return 2 * n_bytes * repetitions / seconds / 1e9
