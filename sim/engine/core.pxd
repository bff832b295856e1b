# Cython declarations for core.py (compiled where the package is built with Cython; core.py runs as is
# otherwise). Same float operations in the same order: only the Python objects around them go.
cimport cython
from libc.stdint cimport int8_t, int32_t, int64_t
from megasim.engine.neighbours cimport GemmNeighbours

ctypedef const int8_t ci8
ctypedef const int32_t ci32
ctypedef const int64_t ci64
ctypedef const double cf64

cdef int _NO_COUNTER, _GEMM

cdef class _Machine:
    cdef public object env, clock, call_later, gpu, graph, kernels, policy_name, policy_options
    cdef public object l2, l2_read, l2_write, blocks, policy, queue, dram_submit, l2_submit, fp_release
    cdef public const int32_t[:] waits, signals
    cdef public list remaining, dram_cost, spans, fp_submit
    cdef public dict waiters
    cdef public double wake_delay, push_delay, overhead, check_cost, interval, latency, looped, next_dispatch_at
    cdef public double pop_cycles, pop_interval, head_free
    cdef public const int64_t[:] order
    cdef public int32_t[:] sm
    cdef public unsigned char[:] pending, blocked
    cdef public const double[:] scale, written, moved, fp, floor, added
    cdef public const int8_t[:] op
    cdef public double[:] t_dispatch, t_start, t_ready, t_end, dram_bytes
    cdef public Py_ssize_t kernel_index, done_total, base, size, next, done_in_kernel, launched_blocks, threads, seed
    cdef public bint check, spins, pops

    @cython.locals(nxt=Py_ssize_t, size=Py_ssize_t, t=double, sm=int, b=Py_ssize_t, launched=Py_ssize_t,
                   delay=double)
    cpdef pump(self, double now)

    @cython.locals(t=double)
    cpdef double _pop(self, double at)

    @cython.locals(i=Py_ssize_t, j=Py_ssize_t, remaining=list, waits=ci32[:], pend=int, c=int, polled=int)
    cpdef start(self, double now, Py_ssize_t b)

    cpdef woken(self, double now, blocks)

    @cython.locals(dram=double)
    cpdef work(self, double now, Py_ssize_t b)

    @cython.locals(wait=double)
    cpdef jobs_done(self, double now, Py_ssize_t b)

    @cython.locals(task=Py_ssize_t, hold=double, c=int, left=int)
    cpdef finish(self, double now, Py_ssize_t b)

    cpdef _release(self, double now, Py_ssize_t b)

    @cython.locals(blocked="unsigned char[:]", left=int)
    cpdef _wake(self, double now, waiting)


cdef class _StretchedMachine(_Machine):
    cdef public const double[:] stretch
    cdef public double[:] busy_at_ready
    cdef public GemmNeighbours neighbours

    cpdef work(self, double now, Py_ssize_t b)

    @cython.locals(wait=double, ran=double, beside=double, sm=Py_ssize_t)
    cpdef jobs_done(self, double now, Py_ssize_t b)

    cpdef finish(self, double now, Py_ssize_t b)
